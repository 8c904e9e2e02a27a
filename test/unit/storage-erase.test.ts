// Deleting with erase (nats-server's default for STREAM.MSG.DELETE): the message's subject,
// headers and payload are gone from the block file itself, not only from the index; the
// stream recovers as before (from a scan, the summary no longer matching), and a crash at
// any point leaves the message deleted, never an empty message in its place.
import { test } from "node:test";
import assert from "node:assert/strict";
import { openFileStreamStore, type FileStreamStore } from "../../src/storage/index.js";
import { ManualClock } from "../../src/runtime/clock.js";
import { SimFs } from "../helpers/simfs.js";
import { T0 } from "../helpers/storage-contract.js";

const noLimits = { maxMsgs: -1, maxBytes: -1, maxAgeMs: 0, maxMsgsPerSubject: -1 };
const DIR = "/js/s/msgs";

async function open(fs: SimFs, blockSizeBytes?: number): Promise<FileStreamStore> {
  const opts = { dir: DIR, fs, clock: new ManualClock(), limits: noLimits, ...(blockSizeBytes ? { blockSizeBytes } : {}) };
  return (await openFileStreamStore(opts)).store;
}

function syncOf(store: FileStreamStore): Promise<Error | null> {
  return new Promise((res) => store.sync((e) => res(e)));
}

/** Every block file's bytes, as they would be read back from the disk. */
function diskBytes(fs: SimFs): Buffer {
  return Buffer.concat(
    fs
      .readdir(DIR)
      .filter((n) => n.endsWith(".blk"))
      .map((n) => fs.readFile(`${DIR}/${n}`) ?? Buffer.alloc(0)),
  );
}

const has = (hay: Buffer, s: string): boolean => hay.includes(Buffer.from(s));

async function fill(store: FileStreamStore, n: number): Promise<void> {
  for (let i = 1; i <= n; i++) {
    const hdr = Buffer.from(`NATS/1.0\r\nX-Secret-Hdr: hdr-${i}\r\n\r\n`);
    store.storeMsg(`orders.secret-${i}`, i % 2 === 0 ? hdr : null, Buffer.from(`SECRET-PAYLOAD-${i}-${"x".repeat(i * 13)}`), T0 + i, 0);
  }
  assert.equal(await syncOf(store), null);
}

void test("erase overwrites subject, headers and payload on disk; remove leaves them", async () => {
  for (const blockSizeBytes of [undefined, 512]) {
    const fs = new SimFs();
    let store = await open(fs, blockSizeBytes);
    await fill(store, 12);
    assert.equal(store.eraseMsg(4), true); // with headers, in a sealed block when blocks are small
    assert.equal(store.eraseMsg(12), true); // the newest message
    assert.equal(store.removeMsg(7), true);
    assert.equal(store.eraseMsg(4), false, "already gone");
    assert.equal(store.eraseMsg(99), false, "never there");
    assert.equal(await syncOf(store), null);
    const disk = diskBytes(fs);
    for (const gone of ["SECRET-PAYLOAD-4-", "orders.secret-4", "hdr-4", "SECRET-PAYLOAD-12-", "orders.secret-12", "hdr-12"]) {
      assert.ok(!has(disk, gone), `${gone} erased from the block files`);
    }
    assert.ok(has(disk, "SECRET-PAYLOAD-7-"), "a delete without erase leaves the bytes until compaction");
    for (const kept of [1, 2, 3, 5, 6, 8, 11]) assert.ok(has(disk, `SECRET-PAYLOAD-${kept}-`));
    assert.equal(store.loadMsg(4), null);
    assert.equal(store.loadMsg(5)?.data.toString(), `SECRET-PAYLOAD-5-${"x".repeat(65)}`);

    const expect = store.state();
    await store.close();
    const reopened = await openFileStreamStore({ dir: DIR, fs, clock: new ManualClock(), limits: noLimits, ...(blockSizeBytes ? { blockSizeBytes } : {}) });
    store = reopened.store;
    assert.deepEqual(reopened.report.dropped, [], "an erased record is a valid record, not damage");
    assert.deepEqual(store.state(), expect, "reopened: the same state");
    assert.equal(store.state().lastSeq, 12);
    assert.equal(store.loadMsg(12), null);
    assert.equal(store.loadMsg(4), null);
    assert.equal(store.loadMsg(6)?.hdr?.toString(), "NATS/1.0\r\nX-Secret-Hdr: hdr-6\r\n\r\n");
    assert.equal(store.subjectsState(">").has(""), false, "no empty-subject message from an erased record");
    await store.close();
  }
});

void test("a crash right after an erase: the message is gone either way, no empty message appears", async () => {
  for (let trial = 0; trial < 20; trial++) {
    const fs = new SimFs();
    let store = await open(fs, 600);
    await fill(store, 8);
    store.eraseMsg(3);
    store.eraseMsg(8);
    if (trial % 2 === 0) await syncOf(store); // the erase itself durable, or not yet
    let r = (trial * 7919) % 1000;
    fs.crash({ tear: true, random: () => ((r = (r * 16807) % 2147483647) % 1000) / 1000 });
    store = await open(fs, 600);
    assert.equal(store.loadMsg(3), null, `trial ${trial}: seq 3 deleted`);
    assert.equal(store.loadMsg(8), null, `trial ${trial}: seq 8 deleted`);
    assert.equal(store.state().msgs, 6, `trial ${trial}`);
    assert.equal(store.subjectsState(">").has(""), false, `trial ${trial}: no empty-subject message`);
    await store.close();
  }
});
