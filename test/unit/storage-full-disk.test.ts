// A file store on a disk that fills up, or whose fsync fails: the store stops (refuses new
// messages, fails the waiting sync callbacks), and closing it cuts the block files back to
// what was acknowledged, so that reopening finds every acknowledged message bit for bit and
// none of those whose publishers were told the store failed. With space again, it stores on.
import { test } from "node:test";
import assert from "node:assert/strict";
import { openFileConsumerStore, openFileStreamStore, type FileStreamStore } from "../../src/storage/index.js";
import { CONSUMER_RETRY_MS } from "../../src/storage/file/consumer.js";
import type { ConsumerPending, ConsumerState } from "../../src/storage/types.js";
import { ManualClock } from "../../src/runtime/clock.js";
import { SimFs } from "../helpers/simfs.js";
import { T0 } from "../helpers/storage-contract.js";

const noLimits = { maxMsgs: -1, maxBytes: -1, maxAgeMs: 0, maxMsgsPerSubject: -1 };
const DIR = "/js/s/msgs";

function syncOf(store: FileStreamStore): Promise<Error | null> {
  return new Promise((res) => store.sync((e) => res(e)));
}

function payload(i: number): Buffer {
  const b = Buffer.alloc(200 + (i % 7) * 31);
  for (let k = 0; k < b.length; k++) b[k] = (i * 31 + k * 7) & 0xff;
  return b;
}

async function open(fs: SimFs, blockSizeBytes?: number): Promise<FileStreamStore> {
  const opts = { dir: DIR, fs, clock: new ManualClock(), limits: noLimits, ...(blockSizeBytes ? { blockSizeBytes } : {}) };
  return (await openFileStreamStore(opts)).store;
}

/** Store messages one sync at a time until one fails; returns the acknowledged payloads. */
async function fillUntilFailure(store: FileStreamStore, from: number, perSync: number): Promise<{ acked: Map<number, Buffer>; err: Error }> {
  const acked = new Map<number, Buffer>();
  for (let i = from; i < from + 100_000; i += perSync) {
    const batch: [number, Buffer][] = [];
    try {
      for (let k = 0; k < perSync; k++) {
        const p = payload(i + k);
        batch.push([store.storeMsg(`s.${(i + k) % 5}`, null, p, T0 + i + k, 0), p]);
      }
    } catch (e) {
      const err = await syncOf(store); // what was written before the throw is failed too
      assert.ok(err !== null, "a sync after a failed write fails");
      return { acked, err: e as Error };
    }
    const err = await syncOf(store);
    if (err !== null) return { acked, err };
    for (const [seq, p] of batch) acked.set(seq, p);
  }
  throw new Error("the disk never filled");
}

function assertHolds(store: FileStreamStore, acked: Map<number, Buffer>): void {
  const st = store.state();
  assert.equal(st.msgs, acked.size, "exactly the acknowledged messages");
  const last = Math.max(0, ...acked.keys());
  assert.equal(st.lastSeq, last, "nothing past the last acknowledged message");
  for (const [seq, p] of acked) {
    const m = store.loadMsg(seq);
    assert.ok(m !== null, `seq ${seq} present`);
    assert.ok(m.data.equals(p), `seq ${seq} bit for bit`);
  }
}

void test("full disk: the store stops with ENOSPC; reopened it holds exactly what was acknowledged", async () => {
  for (const [perSync, blockSizeBytes] of [
    [1, undefined],
    [7, undefined],
    [13, 4096], // the disk fills while new blocks are being made
  ] as const) {
    const fs = new SimFs();
    let store = await open(fs, blockSizeBytes);
    // Room for the first blocks and then a few dozen more messages.
    fs.capacityBytes = fs.usedBytes() + 9_000 + perSync * 300;
    const { acked, err } = await fillUntilFailure(store, 1, perSync);
    assert.match(err.message, /no space left on device/);
    assert.ok(acked.size > 0, "some messages were acknowledged before the disk filled");
    assert.equal(store.failure()?.message, err.message);
    assert.throws(() => store.storeMsg("s.0", null, Buffer.from("x"), T0, 0), /no space left/);
    assert.match(String(await syncOf(store)), /no space left/);
    await store.close();

    // Still full: reopening works (it only reads and shrinks files).
    store = await open(fs, blockSizeBytes);
    assertHolds(store, acked);
    await store.close();

    // Space again: it stores on from the next sequence, and that survives a crash.
    fs.capacityBytes = Infinity;
    store = await open(fs, blockSizeBytes);
    const next = Math.max(...acked.keys()) + 1;
    const p = payload(999);
    assert.equal(store.storeMsg("s.new", null, p, T0 + 999, 0), next);
    assert.equal(await syncOf(store), null);
    acked.set(next, p);
    fs.crash();
    store = await open(fs, blockSizeBytes);
    assertHolds(store, acked);
    await store.close();
  }
});

void test("failed fsync: written but unacknowledged messages are cut off, not recovered", async () => {
  const fs = new SimFs();
  let store = await open(fs);
  const acked = new Map<number, Buffer>();
  for (let i = 1; i <= 20; i++) {
    const p = payload(i);
    acked.set(store.storeMsg("s.a", null, p, T0 + i, 0), p);
  }
  assert.equal(await syncOf(store), null);
  // These reach the file (the page cache, here the live inode) but their fsync fails.
  for (let i = 21; i <= 30; i++) store.storeMsg("s.a", null, payload(i), T0 + i, 0);
  fs.failNextFsync = Object.assign(new Error("EIO: i/o error, fdatasync"), { code: "EIO" });
  const err = await syncOf(store);
  assert.match(String(err), /EIO/);
  assert.match(String(store.failure()), /EIO/);
  await store.close();
  // No crash: without the cut, reopening would read the ten unacknowledged records back.
  store = await open(fs);
  assertHolds(store, acked);
  await store.close();
});

void test("sync_interval: a failed write keeps every message answered at write time", async () => {
  const fs = new SimFs();
  const clock = new ManualClock();
  let store = (await openFileStreamStore({ dir: DIR, fs, clock, limits: noLimits, syncIntervalMs: 60_000 })).store;
  const acked = new Map<number, Buffer>();
  for (let i = 1; i <= 10; i++) {
    const p = payload(i);
    acked.set(store.storeMsg("s.a", null, p, T0 + i, 0), p);
  }
  assert.equal(await syncOf(store), null, "answered after the write, before any fsync");
  fs.capacityBytes = fs.usedBytes() + 100; // the next write is cut short
  for (let i = 11; i <= 20; i++) store.storeMsg("s.a", null, payload(i), T0 + i, 0);
  assert.match(String(await syncOf(store)), /no space left/);
  await store.close();
  fs.capacityBytes = Infinity;
  store = (await openFileStreamStore({ dir: DIR, fs, clock, limits: noLimits, syncIntervalMs: 60_000 })).store;
  assertHolds(store, acked);
  await store.close();
});

// ---- consumer state on a full disk ----

function cstate(n: number): ConsumerState {
  const pending = new Map<number, ConsumerPending>();
  for (let s = n + 1; s <= n + 40; s++) pending.set(s, { cseq: s, tsNs: T0 + s });
  return { delivered: { consumerSeq: n + 40, streamSeq: n + 40 }, ackFloor: { consumerSeq: n, streamSeq: n }, pending, redelivered: new Map() };
}

void test("consumer state: a failed write is retried with the newest state once there is room", async () => {
  for (const slack of [0, 17]) {
    // slack 17: the failed write leaves part of a snapshot behind; the retry writes over it.
    const fs = new SimFs();
    const clock = new ManualClock();
    const c = await openFileConsumerStore({ dir: "/js/c", fs, clock });
    c.update(cstate(1));
    assert.equal(await new Promise((r) => c.sync(r)), null);
    fs.capacityBytes = fs.usedBytes() + slack;
    c.update(cstate(2));
    assert.match(String(await new Promise((r) => c.sync(r))), /no space left/, `slack ${slack}`);
    c.update(cstate(3));
    assert.match(String(await new Promise((r) => c.sync(r))), /no space left/, "still failing before the retry");
    fs.capacityBytes = Infinity;
    clock.advance(CONSUMER_RETRY_MS);
    assert.equal(await new Promise((r) => c.sync(r)), null, "the retry wrote the newest state");
    await c.close();
    const again = await openFileConsumerStore({ dir: "/js/c", fs, clock: new ManualClock() });
    assert.equal(again.load()?.ackFloor.streamSeq, 3, `slack ${slack}: the newest state is what recovery finds`);
    await again.close();
  }
});
