// Overlapping group-commit fsync rounds in the file store: a second round starts while the
// first is on the disk, no third one starts, and callbacks run in round order, each only once
// every earlier round is durable, whatever order the disk finishes them in.
import { test } from "node:test";
import assert from "node:assert/strict";
import { openFileStreamStore, type FileStreamStore } from "../../src/storage/index.js";
import { ManualClock } from "../../src/runtime/clock.js";
import { SimFs } from "../helpers/simfs.js";
import { T0 } from "../helpers/storage-contract.js";

/** A SimFs whose file fsyncs complete only when the test says so. */
class HeldFs extends SimFs {
  held: ((err: Error | null) => void)[] = [];
  hold = false;
  override fsync(fd: number, cb: (err: Error | null) => void): void {
    if (!this.hold) return super.fsync(fd, cb);
    super.fsync(fd, (err) => {
      this.held.push(() => cb(err));
    });
  }
  /** Finish the i-th held fsync (in the order they were issued). */
  finish(i: number): void {
    const f = this.held[i];
    assert.ok(f, `fsync ${i} held`);
    this.held[i] = () => assert.fail(`fsync ${i} finished twice`);
    f(null);
  }
}

const noLimits = { maxMsgs: -1, maxBytes: -1, maxAgeMs: 0, maxMsgsPerSubject: -1 };
const turn = (): Promise<void> => new Promise((r) => setImmediate(r));

async function until(cond: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 200 && !cond(); i++) await turn();
  assert.ok(cond(), what);
}

async function openHeld(): Promise<{ fs: HeldFs; store: FileStreamStore }> {
  const fs = new HeldFs();
  const { store } = await openFileStreamStore({ dir: "/js/s", fs, clock: new ManualClock(), limits: noLimits });
  // The first write creates the block file: let its directory fsync and the first round pass.
  store.storeMsg("a", null, Buffer.from("warm"), T0, 0);
  await new Promise<void>((res, rej) => store.sync((e) => (e ? rej(e) : res())));
  fs.hold = true;
  return { fs, store };
}

void test("two fsync rounds overlap, a third waits, and callbacks keep round order", async () => {
  const { fs, store } = await openHeld();
  const order: string[] = [];
  store.storeMsg("a", null, Buffer.from("m1"), T0 + 1, 0);
  store.sync(() => order.push("r1"));
  await until(() => fs.held.length === 1, "round 1 issued its fsync");
  store.storeMsg("a", null, Buffer.from("m2"), T0 + 2, 0);
  store.sync(() => order.push("r2"));
  await until(() => fs.held.length === 2, "round 2 issued its fsync while round 1 runs");
  store.storeMsg("a", null, Buffer.from("m3"), T0 + 3, 0);
  store.sync(() => order.push("r3"));
  for (let i = 0; i < 10; i++) await turn();
  assert.equal(fs.held.length, 2, "no third round while two run");
  // The disk finishes round 2 first: its callback waits for round 1.
  fs.finish(1);
  for (let i = 0; i < 5; i++) await turn();
  assert.deepEqual(order, []);
  assert.equal(fs.held.length, 2, "a slot freed out of order is not reused before round 1 ends");
  fs.finish(0);
  await until(() => order.length === 2, "rounds 1 and 2 answered");
  assert.deepEqual(order, ["r1", "r2"]);
  await until(() => fs.held.length === 3, "round 3 starts once a slot is free");
  fs.finish(2);
  await until(() => order.length === 3, "round 3 answered");
  assert.deepEqual(order, ["r1", "r2", "r3"]);
  fs.hold = false;
  await store.close();
});

void test("after a crash, what the answered rounds covered is there", async () => {
  const { fs, store } = await openHeld();
  let answered = 0;
  for (let i = 1; i <= 3; i++) {
    store.storeMsg("a", null, Buffer.from(`m${i}`), T0 + i, 0);
    store.sync(() => answered++);
    await turn();
  }
  await until(() => fs.held.length === 2, "two rounds in flight");
  fs.finish(0);
  await until(() => answered === 1, "round 1 answered");
  fs.crash(); // round 2 never completed: m2 and m3 may be gone, m1 must not be
  fs.hold = false;
  const { store: s2 } = await openFileStreamStore({ dir: "/js/s", fs, clock: new ManualClock(), limits: noLimits });
  assert.ok(s2.state().lastSeq >= 2, `warm-up and m1 survive (last seq ${s2.state().lastSeq})`);
  assert.equal(s2.loadMsg(2)?.data.toString(), "m1");
  await s2.close();
});
