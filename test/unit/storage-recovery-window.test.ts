// Recovery scans a block without a usable summary through one reused 64 KiB window: these
// blocks are far larger than a window, so records cross window ends, damage sits windows
// away from the start, and one record is longer than a window.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readdirSync, readFileSync, rmSync, truncateSync, unlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openFileStreamStore } from "../../src/storage/index.js";
import { syncP, T0 } from "../helpers/storage-contract.js";

const N = 9000; // ~700 KB of records in one block
const BLOCK = 4 << 20;
const BIG_AT = 4321;
const BIG = Buffer.alloc(100 * 1024, 0x62);

function tmp(): { dir: string; done(): void } {
  const root = mkdtempSync(join(tmpdir(), "tsnats-recwin-"));
  return { dir: join(root, "s"), done: () => rmSync(root, { recursive: true, force: true }) };
}

function payload(i: number): Buffer {
  return i === BIG_AT ? BIG : Buffer.from(`message-${i}-`.padEnd(40 + (i % 7), "x"));
}

async function fill(dir: string): Promise<void> {
  const { store } = await openFileStreamStore({ dir, blockSizeBytes: BLOCK });
  for (let i = 1; i <= N; i++) store.storeMsg(`w.${i % 5}`, null, payload(i), T0 + i, 0);
  await syncP(store);
  await store.close();
}

function only(dir: string, ext: string): string {
  const names = readdirSync(dir).filter((n) => n.endsWith(ext));
  assert.equal(names.length, 1);
  return join(dir, names[0] as string);
}

function dropSummaries(dir: string): void {
  for (const n of readdirSync(dir)) if (n.endsWith(".sum")) unlinkSync(join(dir, n));
}

function checkAllBut(store: { loadMsg(seq: number): { data: Buffer; subject: string } | null }, last: number, lost: Set<number>): void {
  for (let i = 1; i <= last; i++) {
    const m = store.loadMsg(i);
    if (lost.has(i)) assert.equal(m, null, `seq ${i} should be dropped`);
    else {
      assert.ok(m !== null, `seq ${i} should survive`);
      assert.ok(m.data.equals(payload(i)), `seq ${i} data`);
      assert.equal(m.subject, `w.${i % 5}`);
    }
  }
}

void describe("file store recovery through a window (real disk)", () => {
  void it("indexes a large block without a summary exactly as from its summary", async () => {
    const t = tmp();
    try {
      await fill(t.dir);
      const a = await openFileStreamStore({ dir: t.dir, blockSizeBytes: BLOCK });
      const want = a.store.state();
      await a.store.close();
      dropSummaries(t.dir);
      const { store, report } = await openFileStreamStore({ dir: t.dir, blockSizeBytes: BLOCK });
      assert.deepEqual(report.dropped, []);
      assert.equal(report.msgs, N);
      assert.deepEqual(store.state(), want);
      checkAllBut(store, N, new Set());
      assert.equal(store.numPending(1, "w.3", false), N / 5);
      await store.close();
    } finally {
      t.done();
    }
  });

  void it("drops only the record with a flipped byte, many windows into the block", async () => {
    const t = tmp();
    try {
      await fill(t.dir);
      dropSummaries(t.dir);
      const blk = only(t.dir, ".blk");
      const bytes = readFileSync(blk);
      const at = bytes.indexOf("message-7000-");
      assert.ok(at > 3 * 64 * 1024);
      bytes[at + 3] = (bytes[at + 3] as number) ^ 0xff;
      writeFileSync(blk, bytes);
      const { store, report } = await openFileStreamStore({ dir: t.dir, blockSizeBytes: BLOCK });
      assert.equal(report.dropped.length, 1);
      assert.equal(report.dropped[0]?.reason, "checksum");
      assert.equal(report.dropped[0]?.afterSeq, 6999);
      checkAllBut(store, N, new Set([7000]));
      assert.equal(store.state().msgs, N - 1);
      await store.close();
    } finally {
      t.done();
    }
  });

  void it("truncates a torn tail found after many windows", async () => {
    const t = tmp();
    try {
      await fill(t.dir);
      const blk = only(t.dir, ".blk");
      const at = readFileSync(blk).indexOf(`message-${N}-`);
      truncateSync(blk, at + 5); // the summary is now stale too: the whole block is scanned
      const { store, report } = await openFileStreamStore({ dir: t.dir, blockSizeBytes: BLOCK });
      assert.equal(report.dropped.length, 1);
      assert.equal(report.dropped[0]?.reason, "torn-tail");
      assert.equal(report.dropped[0]?.afterSeq, N - 1);
      assert.ok(report.truncatedBytes > 0);
      assert.equal(store.state().lastSeq, N - 1);
      checkAllBut(store, N - 1, new Set());
      assert.equal(store.storeMsg("w.1", null, payload(N), T0 + N, 0), N);
      await syncP(store);
      await store.close();
      const again = await openFileStreamStore({ dir: t.dir, blockSizeBytes: BLOCK });
      assert.deepEqual(again.report.dropped, []);
      checkAllBut(again.store, N, new Set());
      await again.store.close();
    } finally {
      t.done();
    }
  });
});
