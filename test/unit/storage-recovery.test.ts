// Recovery of damaged block files on real disk: a torn tail is truncated, a flipped byte drops
// exactly the damaged record, and the report says what was dropped.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, truncateSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openFileStreamStore } from "../../src/storage/index.js";
import type { StoreLimits } from "../../src/storage/types.js";
import { syncP, T0 } from "../helpers/storage-contract.js";
import { until } from "../helpers/until.js";

const noLimits: StoreLimits = { maxMsgs: -1, maxBytes: -1, maxAgeMs: 0, maxMsgsPerSubject: -1 };

function tmp(): { dir: string; done(): void } {
  const root = mkdtempSync(join(tmpdir(), "tsnats-recovery-"));
  return { dir: join(root, "s"), done: () => rmSync(root, { recursive: true, force: true }) };
}

function blocks(dir: string): string[] {
  return readdirSync(dir)
    .filter((n) => n.endsWith(".blk"))
    .sort((a, b) => parseInt(a) - parseInt(b))
    .map((n) => join(dir, n));
}

async function fill(dir: string, n: number, blockSizeBytes: number): Promise<void> {
  const { store } = await openFileStreamStore({ dir, blockSizeBytes });
  for (let i = 1; i <= n; i++) store.storeMsg(`r.${i % 3}`, null, Buffer.from(`message-${i}-`.padEnd(40, "x")), T0 + i, 0);
  await syncP(store);
  await store.close();
}

function checkAllBut(store: { loadMsg(seq: number): { data: Buffer } | null }, n: number, lost: Set<number>): void {
  for (let i = 1; i <= n; i++) {
    const m = store.loadMsg(i);
    if (lost.has(i)) assert.equal(m, null, `seq ${i} should be dropped`);
    else assert.equal(m?.data.toString(), `message-${i}-`.padEnd(40, "x"), `seq ${i} should survive`);
  }
}

void describe("file store recovery (real disk)", () => {
  void it("truncates a torn tail and reports it", async () => {
    const t = tmp();
    try {
      await fill(t.dir, 20, 1 << 20);
      const [blk] = blocks(t.dir);
      assert.ok(blk);
      const at = readFileSync(blk).indexOf("message-20-");
      truncateSync(blk, at + 5); // the last message loses most of itself and its checksum
      const { store, report } = await openFileStreamStore({ dir: t.dir });
      assert.equal(report.dropped.length, 1);
      assert.equal(report.dropped[0]?.reason, "torn-tail");
      assert.equal(report.dropped[0]?.afterSeq, 19);
      assert.ok(report.truncatedBytes > 0);
      assert.equal(store.state().lastSeq, 19);
      checkAllBut(store, 20, new Set([20]));
      assert.equal(store.storeMsg("r.0", null, Buffer.from("new"), T0, 0), 20);
      await syncP(store);
      await store.close();
      const again = await openFileStreamStore({ dir: t.dir });
      assert.deepEqual(again.report.dropped, [], "the tail was cut, nothing left to drop");
      assert.equal(again.store.loadMsg(20)?.data.toString(), "new");
      await again.store.close();
    } finally {
      t.done();
    }
  });

  void it("drops a record with a flipped byte mid-block and keeps the rest", async () => {
    const t = tmp();
    try {
      await fill(t.dir, 30, 1 << 20);
      const [blk] = blocks(t.dir);
      assert.ok(blk);
      const buf = readFileSync(blk);
      const at = buf.indexOf("message-15-");
      assert.ok(at > 0);
      buf[at + 3] = (buf[at + 3] as number) ^ 0x20;
      writeFileSync(blk, buf);
      const { store, report } = await openFileStreamStore({ dir: t.dir });
      assert.equal(report.dropped.length, 1);
      assert.equal(report.dropped[0]?.reason, "checksum");
      assert.equal(report.dropped[0]?.afterSeq, 14);
      assert.equal(report.truncatedBytes, 0);
      const st = store.state();
      assert.equal(st.msgs, 29);
      assert.equal(st.lastSeq, 30);
      assert.deepEqual(store.deletedSeqs(), [15]);
      checkAllBut(store, 30, new Set([15]));
      await store.close();
    } finally {
      t.done();
    }
  });

  void it("resynchronises after a corrupted length field in an older block", async () => {
    const t = tmp();
    try {
      await fill(t.dir, 60, 1024);
      const files = blocks(t.dir);
      assert.ok(files.length >= 3, `expected several blocks, got ${files.length}`);
      const first = files[0] as string;
      const buf = readFileSync(first);
      // second record's length field: garbage
      const second = buf.readUInt32LE(0);
      buf.writeUInt32LE(0x00ffffff, second);
      writeFileSync(first, buf);
      const { store, report } = await openFileStreamStore({ dir: t.dir, blockSizeBytes: 1024 });
      assert.equal(report.dropped.length, 1);
      assert.equal(report.dropped[0]?.file, first);
      assert.equal(report.dropped[0]?.afterSeq, 1);
      checkAllBut(store, 60, new Set([2]));
      assert.equal(store.state().firstSeq, 1);
      await store.close();
    } finally {
      t.done();
    }
  });

  void it("reclaims blocks whose messages are all gone, and state survives", async () => {
    const t = tmp();
    try {
      const { store } = await openFileStreamStore({ dir: t.dir, blockSizeBytes: 2048, limits: { ...noLimits, maxMsgs: 10 } });
      for (let i = 1; i <= 500; i++) store.storeMsg("w", null, Buffer.alloc(50, i), T0 + i, 0);
      await syncP(store);
      await syncP(store);
      // dead blocks are unlinked off the event loop, one at a time, after the fsync that covers them
      await until("dead blocks unlinked", () => blocks(t.dir).length <= 3);
      await store.close();
      const { store: s2, report } = await openFileStreamStore({ dir: t.dir, blockSizeBytes: 2048, limits: { ...noLimits, maxMsgs: 10 } });
      assert.deepEqual(report.dropped, []);
      assert.equal(s2.state().msgs, 10);
      assert.equal(s2.state().firstSeq, 491);
      assert.equal(s2.state().lastSeq, 500);
      assert.ok(s2.loadMsg(491)?.data.equals(Buffer.alloc(50, 491 & 0xff)));
      await s2.close();
    } finally {
      t.done();
    }
  });

  void it("carries tombstones forward when the block holding them is reclaimed", async () => {
    const t = tmp();
    try {
      const opts = { dir: t.dir, blockSizeBytes: 512 };
      const { store } = await openFileStreamStore(opts);
      const put = (i: number) => store.storeMsg("t", null, Buffer.alloc(100, i), T0 + i, 0);
      for (let i = 1; i <= 3; i++) put(i); // block 1
      for (let i = 4; i <= 6; i++) put(i); // block 2
      store.removeMsg(2); // its tombstone lands in block 2
      await syncP(store);
      for (let i = 7; i <= 9; i++) put(i); // block 3
      for (let i = 4; i <= 6; i++) store.removeMsg(i); // block 2 is now dead and goes away
      await syncP(store);
      await syncP(store);
      await until("block 2 reclaimed", () => !blocks(t.dir).some((f) => f.endsWith("/2.blk")));
      await store.close();
      const { store: s2 } = await openFileStreamStore(opts);
      assert.equal(s2.loadMsg(2), null, "removed message stays removed");
      assert.deepEqual(s2.deletedSeqs(), [2, 4, 5, 6]);
      assert.ok(s2.loadMsg(3)?.data.equals(Buffer.alloc(100, 3)));
      await s2.close();
    } finally {
      t.done();
    }
  });

  void it("keeps tombstones of other blocks when compacting a block", async () => {
    const t = tmp();
    try {
      const opts = { dir: t.dir, blockSizeBytes: 512 };
      const { store } = await openFileStreamStore(opts);
      const put = (i: number) => store.storeMsg("t", null, Buffer.alloc(20, i), T0 + i, 0);
      let i = 1;
      while (store.blockCount() < 2) put(i++); // block 1 full, block 2 started
      const firstOfTwo = i - 1;
      store.removeMsg(2); // tombstone in block 2
      while (store.blockCount() < 3) put(i++); // block 2 sealed
      const lastOfTwo = i - 2;
      for (let q = firstOfTwo; q < lastOfTwo; q++) store.removeMsg(q); // block 2 mostly dead: compacted
      await syncP(store);
      await syncP(store);
      await store.close();
      const { store: s2 } = await openFileStreamStore(opts);
      assert.equal(s2.loadMsg(2), null, "removed message in block 1 stays removed");
      assert.ok(s2.loadMsg(lastOfTwo)?.data.equals(Buffer.alloc(20, lastOfTwo)));
      assert.ok(s2.loadMsg(3)?.data.equals(Buffer.alloc(20, 3)));
      await s2.close();
    } finally {
      t.done();
    }
  });

  void it("compacts mostly deleted blocks and keeps interior deletes across restart", async () => {
    const t = tmp();
    try {
      const { store } = await openFileStreamStore({ dir: t.dir, blockSizeBytes: 64 * 1024 });
      for (let i = 1; i <= 3000; i++) store.storeMsg(`k.${i % 10}`, null, Buffer.alloc(60, i), T0 + i, 0);
      await syncP(store);
      const before = blocks(t.dir).reduce((a, f) => a + statSync(f).size, 0);
      for (let i = 2; i <= 2900; i++) if (i % 10 !== 0) store.removeMsg(i);
      await syncP(store);
      await syncP(store);
      const after = blocks(t.dir).reduce((a, f) => a + statSync(f).size, 0);
      // sealed blocks are rewritten with their live tenth; the tombstones stay in the write block
      assert.ok(after < before * 0.6, `disk bytes ${before} -> ${after}`);
      const want = store.state();
      await store.close();
      const { store: s2, report } = await openFileStreamStore({ dir: t.dir, blockSizeBytes: 64 * 1024 });
      assert.deepEqual(report.dropped, []);
      assert.deepEqual(s2.state(), want);
      assert.ok(s2.loadMsg(1000)?.data.equals(Buffer.alloc(60, 1000 & 0xff)));
      assert.equal(s2.loadMsg(1001), null);
      assert.ok(s2.loadMsg(2950)?.data.equals(Buffer.alloc(60, 2950 & 0xff)));
      await s2.close();
    } finally {
      t.done();
    }
  });

  void it("answers sync right after the write in syncIntervalMs mode and persists on close", async () => {
    const t = tmp();
    try {
      const { store } = await openFileStreamStore({ dir: t.dir, syncIntervalMs: 50 });
      for (let i = 0; i < 100; i++) store.storeMsg("i", null, Buffer.from(`${i}`), T0, 0);
      await syncP(store);
      await store.close();
      const { store: s2 } = await openFileStreamStore({ dir: t.dir });
      assert.equal(s2.state().msgs, 100);
      await s2.close();
    } finally {
      t.done();
    }
  });
});
