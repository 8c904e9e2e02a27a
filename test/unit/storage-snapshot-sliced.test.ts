// Store snapshots sliced across event-loop turns (storage/archive.ts streamStoreSnapshot and
// StoreSnapshotRestorer): the same archive bytes as the synchronous encoder, the same store
// after a restore, and the work spread over many turns when the budget is small (counted with
// a clock that moves one ms per look, never timed).
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import {
  ArchiveError,
  StoreSnapshotDecoder,
  StoreSnapshotReader,
  StoreSnapshotRestorer,
  encodeStoreSnapshot,
  streamStoreSnapshot,
} from "../../src/storage/archive.js";
import { createMemoryStreamStore, openFileStreamStore } from "../../src/storage/index.js";
import { ManualClock } from "../../src/runtime/clock.js";
import type { StreamStore } from "../../src/storage/types.js";
import { SimFs } from "../helpers/simfs.js";
import { assertSameStore, syncP, T0 } from "../helpers/storage-contract.js";

const HDR = Buffer.from("NATS/1.0\r\nNats-TTL: 5s\r\n\r\n");

/** Monotonic time that moves 1 ms each time it is read: every budget check costs a "ms". */
class TickClock extends ManualClock {
  private ticks = 0;
  override monoMs(): number {
    return this.ticks++;
  }
}

function fill(s: StreamStore, n: number): void {
  s.skipMsgs(1, 3, T0);
  for (let i = 4; i <= n; i++) s.storeMsg(`k.${i % 7}`, i % 3 === 0 ? HDR : null, Buffer.alloc(i % 300, i), T0 + i * 1000, i % 11 === 0 ? 30 : 0);
  for (let q = 10; q < n; q += 17) s.removeMsg(q);
  s.skipMsgs(n + 1, 5, T0 + 9e9);
}

async function stream(src: StreamStore, opts: Parameters<typeof streamStoreSnapshot>[4] = {}) {
  const frames: Buffer[] = [];
  const r = await streamStoreSnapshot(new StoreSnapshotReader(src), (f) => {
    frames.push(f);
  }, undefined, undefined, opts);
  return { bytes: Buffer.concat(frames), ...r };
}

async function fileStore(fs: SimFs, dir: string): Promise<StreamStore> {
  return (await openFileStreamStore({ dir, fs, clock: new ManualClock(), blockSizeBytes: 4096 })).store;
}

void describe("store snapshots sliced across turns", () => {
  void it("stream and restore give the same store as the synchronous codec (memory and file)", async () => {
    const fs = new SimFs();
    for (const kind of ["memory", "file"] as const) {
      const src = kind === "memory" ? createMemoryStreamStore(null, null) : await fileStore(fs, "/src");
      fill(src, 3000);
      const sliced = await stream(src);
      assert.equal(sliced.msgs, src.state().msgs);
      assert.ok(sliced.frames >= 2, `frames: ${sliced.frames}`);
      // the synchronous decoder reads the sliced archive
      const viaSync = createMemoryStreamStore(null, null);
      const dec = new StoreSnapshotDecoder(viaSync);
      dec.push(sliced.bytes);
      dec.end();
      assertSameStore(src, viaSync, `${kind}: sliced archive, sync decoder`);
      // the restorer reads the synchronous archive, in odd chunks, into a file store
      const dst = await fileStore(fs, `/dst-${kind}`);
      const rest = new StoreSnapshotRestorer(dst);
      const syncBytes = Buffer.concat([...encodeStoreSnapshot(new StoreSnapshotReader(src))]);
      for (let p = 0; p < syncBytes.length; p += 7777) await rest.push(syncBytes.subarray(p, p + 7777));
      assert.equal(rest.end().lastSeq, 3005);
      assert.equal(rest.count, src.state().msgs);
      assertSameStore(src, dst, `${kind}: sync archive, restorer`);
      await syncP(dst);
      await dst.close();
      const again = await fileStore(fs, `/dst-${kind}`);
      assertSameStore(src, again, `${kind}: restored, reopened`);
      await again.close();
      await src.close();
    }
  });

  void it("a small budget spreads both directions over many turns, with the same result", async () => {
    const src = createMemoryStreamStore(null, null);
    fill(src, 4000);
    const wide = await stream(src);
    const narrow = await stream(src, { clock: new TickClock(), turnBudgetMs: 2 });
    assert.deepEqual(narrow.bytes, wide.bytes);
    // one look at the clock per 32 messages, two looks per budget: a turn per ~64 messages
    assert.ok(narrow.turns >= Math.floor(narrow.msgs / 64), `turns ${narrow.turns} for ${narrow.msgs} messages`);
    assert.ok(wide.turns <= wide.frames + 2 + Math.ceil(wide.msgs / 32), `turns ${wide.turns}`);
    const dst = createMemoryStreamStore(null, null);
    const rest = new StoreSnapshotRestorer(dst, { clock: new TickClock(), turnBudgetMs: 2 });
    await rest.push(narrow.bytes);
    rest.end();
    assert.ok(rest.turns >= Math.floor(narrow.msgs / 64), `restore turns ${rest.turns}`);
    assertSameStore(src, dst, "narrow budget");
  });

  void it("other work runs between the slices", async () => {
    const src = createMemoryStreamStore(null, null);
    fill(src, 3000);
    let ticks = 0;
    let running = true;
    const tick = (): void => {
      ticks++;
      if (running) setImmediate(tick);
    };
    setImmediate(tick);
    const r = await stream(src, { clock: new TickClock(), turnBudgetMs: 2 });
    running = false;
    assert.ok(ticks >= r.turns / 2, `a bystander ran ${ticks} times during ${r.turns} turns`);
  });

  void it("a truncated, corrupt or overlapping restore is refused", async () => {
    const src = createMemoryStreamStore(null, null);
    fill(src, 500);
    const { bytes } = await stream(src);
    const cut = new StoreSnapshotRestorer(createMemoryStreamStore(null, null));
    await cut.push(bytes.subarray(0, bytes.length - 5));
    assert.throws(() => cut.end(), /truncated/);
    const bad = Buffer.from(bytes);
    bad[bad.length - 3] = (bad[bad.length - 3] as number) ^ 0xff;
    await assert.rejects(new StoreSnapshotRestorer(createMemoryStreamStore(null, null)).push(bad), ArchiveError);
    await assert.rejects(new StoreSnapshotRestorer(createMemoryStreamStore(null, null)).push(Buffer.from("NOT A SNAPSHOT AT ALL")), /not a tsnats snapshot/);
    const twice = new StoreSnapshotRestorer(createMemoryStreamStore(null, null));
    const first = twice.push(bytes);
    await assert.rejects(twice.push(Buffer.alloc(0)), /previous push/);
    await first;
    twice.end();
    await assert.rejects(twice.push(bytes.subarray(8)), /after the end/);
  });
});
