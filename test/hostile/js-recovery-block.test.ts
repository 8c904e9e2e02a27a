// Hostile: one big block file is recovered in slices. A paced open (what the server's start
// uses) gives the event loop back inside a block, not only between blocks: an 8 MiB block of
// small records was checked, checksummed and indexed in one synchronous step (50-140 ms in
// which no other client was served). Asserted by ordering: a loop turn queued when the open
// starts runs, and keeps running once per turn, while the store's one sealed block is being
// recovered; and the paced open rebuilds exactly what a synchronous open does, with the
// block's summary, without it (scanned) and with a torn tail.

import { test } from "node:test";
import assert from "node:assert/strict";
import { cpSync, mkdtempSync, readdirSync, rmSync, statSync, truncateSync, unlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { FileStreamStore } from "../../src/storage/file/stream.js";
import { NodeFs } from "../../src/runtime/fs.js";
import { SystemClock } from "../../src/runtime/clock.js";
import { openFileStreamStore } from "../../src/storage/index.js";
import { assertSameStore, syncP, T0 } from "../helpers/storage-contract.js";

const BLOCK = 8 * 1024 * 1024; // the default block size
const N = 120_000; // ~11 MiB of records: one full sealed block and a write block
const SUBJECTS = 500; // taking turns: the summary lists the messages one by one

function payload(i: number): Buffer {
  return Buffer.from(`m-${i}-`.padEnd(40 + (i % 13), "x"));
}

async function fill(dir: string): Promise<void> {
  const { store } = await openFileStreamStore({ dir, blockSizeBytes: BLOCK });
  for (let i = 1; i <= N; i++) {
    store.storeMsg(`rec.${i % SUBJECTS}`, null, payload(i), T0 + i, 0);
    if (i % 20_000 === 0) await syncP(store);
  }
  await syncP(store);
  await store.close();
}

function blocks(dir: string): string[] {
  return readdirSync(dir)
    .filter((n) => n.endsWith(".blk"))
    .sort((a, b) => Number.parseInt(a, 10) - Number.parseInt(b, 10))
    .map((n) => join(dir, n));
}

function dropSummaries(dir: string): void {
  for (const n of readdirSync(dir)) if (n.endsWith(".sum")) unlinkSync(join(dir, n));
}

/** Opens with openPaced, yielding to the loop after every step; counts the loop's turns
 *  that ran in between (a setImmediate chain started when the open starts). */
async function openPaced(dir: string): Promise<{ store: FileStreamStore; turns: number; steps: number; msgs: number }> {
  const store = new FileStreamStore({ dir, fs: new NodeFs(), clock: new SystemClock(), blockSizeBytes: BLOCK });
  let turns = 0;
  let running = true;
  const tick = (): void => {
    if (!running) return;
    turns++;
    setImmediate(tick);
  };
  setImmediate(tick);
  let steps = 0;
  const report = await store.openPaced(async () => {
    steps++;
    await new Promise((r) => setImmediate(r));
  });
  running = false;
  return { store, turns, steps, msgs: report.msgs };
}

async function openSync(dir: string): Promise<FileStreamStore> {
  const { store } = await openFileStreamStore({ dir, blockSizeBytes: BLOCK });
  return store;
}

for (const kind of ["summary", "scan", "torn tail"] as const) {
  void test(`one 8 MiB block recovered in slices (${kind}): other turns of the loop run during it, same index as one open()`, { timeout: 120_000 }, async () => {
    const root = mkdtempSync(join(tmpdir(), "hard14b-recblock-"));
    const dir = join(root, "s");
    try {
      await fill(dir);
      const files = blocks(dir);
      assert.ok(files.length >= 2, `${files.length} block files`);
      assert.ok(statSync(files[0]!).size > BLOCK - 4096, "the first block is full");
      if (kind === "scan") dropSummaries(dir);
      if (kind === "torn tail") {
        const last = files[files.length - 1]!;
        truncateSync(last, statSync(last).size - 7);
      }
      // The same bytes opened both ways (a store writes to its directory: one copy each).
      const refDir = join(root, "ref");
      cpSync(dir, refDir, { recursive: true });
      const ref = await openSync(refDir);
      const got = await openPaced(dir);
      try {
        // A block used to be one step: two blocks, a handful of turns. Now every phase of a
        // block is cut into bounded slices, and a turn of the loop runs after each.
        const perBlock = got.steps / files.length;
        assert.ok(perBlock >= 8, `${got.steps} steps for ${files.length} blocks`);
        assert.ok(got.turns >= got.steps / 2, `${got.turns} other turns ran during ${got.steps} steps`);
        assert.equal(got.msgs, kind === "torn tail" ? N - 1 : N);
        assertSameStore(ref, got.store, kind);
        // And it goes on as a store: the next message lands after the recovered ones.
        const next = got.store.state().lastSeq + 1;
        assert.equal(got.store.storeMsg("rec.x", null, payload(next), T0 + next, 0), next);
        await syncP(got.store);
      } finally {
        await got.store.close();
        await ref.close();
      }
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
}
