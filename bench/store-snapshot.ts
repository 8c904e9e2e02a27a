// Event-loop turns during a store snapshot and restore of a big file stream, in process:
//   node dist/bench/store-snapshot.js [msgs=200000] [payloadBytes=1024]
// Fills a file store, then, with a bystander timing every turn of the loop:
//   before: the synchronous codec driven a frame per turn (encodeStoreSnapshot; restore with
//           StoreSnapshotDecoder fed 1 MiB per turn), the finest slicing a caller could do;
//   after:  streamStoreSnapshot / StoreSnapshotRestorer (4 ms budget, zlib on the thread pool).
// Prints one JSON line per case: total ms and the longest turn.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { openFileStreamStore } from "../src/storage/index.js";
import { StoreSnapshotDecoder, StoreSnapshotReader, StoreSnapshotRestorer, encodeStoreSnapshot, streamStoreSnapshot } from "../src/storage/archive.js";

const N = Number(process.argv[2] ?? 200_000);
const PAYLOAD = Number(process.argv[3] ?? 1024);
const turn = (): Promise<void> => new Promise<void>((r) => setImmediate(r));
let extra: Record<string, number> = {};

/** The turns of the loop while fn runs: the longest, the 99.9th percentile, and how many took
 *  over 20 ms (the machine's other processes add their own stalls: see the idle case). */
async function timed(name: string, fn: () => Promise<unknown>): Promise<void> {
  extra = {};
  const gaps: number[] = [];
  let last = performance.now();
  let stop = false;
  const tick = (): void => {
    const now = performance.now();
    gaps.push(now - last);
    last = now;
    if (!stop) setImmediate(tick);
  };
  setImmediate(tick);
  const t0 = performance.now();
  await fn();
  const ms = performance.now() - t0;
  stop = true;
  await turn();
  gaps.sort((a, b) => a - b);
  const q = (f: number): number => +(gaps[Math.min(gaps.length - 1, Math.floor(gaps.length * f))] ?? 0).toFixed(1);
  console.log(
    JSON.stringify({
      case: name,
      msgs: N,
      payload: PAYLOAD,
      totalMs: Math.round(ms),
      turns: gaps.length,
      p999TurnMs: q(0.999),
      maxTurnMs: q(1),
      turnsOver20ms: gaps.filter((g) => g > 20).length,
      ...extra,
    }),
  );
}

async function main(): Promise<void> {
  const root = mkdtempSync(join(tmpdir(), "filestore-bench-snap-"));
  try {
    const { store: src } = await openFileStreamStore({ dir: join(root, "src") });
    // 64 different payloads of half noise (deflate's window is 32 KiB: one repeated payload
    // would compress to nothing)
    let x = 12345;
    const pool = Array.from({ length: 64 }, () => {
      const d = Buffer.alloc(PAYLOAD);
      for (let i = 0; i < d.length; i++) {
        x = (x * 1103515245 + 12345) & 0x7fffffff;
        d[i] = i % 2 === 0 ? x >>> 16 : 97;
      }
      return d;
    });
    for (let i = 0; i < N; i++) {
      src.storeMsg(`snap.${i % 50}`, null, pool[i % 64]!, 1e18 + i, 0);
      if (i % 20_000 === 19_999) await new Promise<void>((res) => src.sync(() => res()));
    }
    await new Promise<void>((res) => src.sync(() => res()));
    let archive: Buffer[] = [];
    // the noise floor: the longest turn of a loop with nothing to do (other processes share the CPU)
    await timed("idle loop (noise floor)", () => new Promise((r) => setTimeout(r, 1000)));
    await timed("snapshot before (sync codec, a frame per turn)", async () => {
      archive = [];
      for (const f of encodeStoreSnapshot(new StoreSnapshotReader(src))) {
        archive.push(f);
        await turn();
      }
    });
    await timed("snapshot after (streamStoreSnapshot)", async () => {
      archive = [];
      const r = await streamStoreSnapshot(new StoreSnapshotReader(src), (f) => {
        archive.push(f);
      });
      extra = { maxSliceMs: +r.maxSliceMs.toFixed(1) };
    });
    const bytes = Buffer.concat(archive);
    archive = [];
    const CHUNK = 1024 * 1024;
    const { store: d1 } = await openFileStreamStore({ dir: join(root, "d1") });
    await timed(`restore before (StoreSnapshotDecoder, 1 MiB per turn, ${Math.round(bytes.length / 1048576)} MiB archive)`, async () => {
      const dec = new StoreSnapshotDecoder(d1);
      for (let p = 0; p < bytes.length; p += CHUNK) {
        dec.push(bytes.subarray(p, p + CHUNK));
        await turn();
      }
      dec.end();
    });
    await d1.close();
    const { store: d2 } = await openFileStreamStore({ dir: join(root, "d2") });
    await timed("restore after (StoreSnapshotRestorer, 1 MiB pushes)", async () => {
      const r = new StoreSnapshotRestorer(d2);
      for (let p = 0; p < bytes.length; p += CHUNK) await r.push(bytes.subarray(p, p + CHUNK));
      r.end();
      extra = { maxSliceMs: +r.maxSliceMs.toFixed(1) };
    });
    if (d2.state().msgs !== N) throw new Error(`restored ${d2.state().msgs} of ${N}`);
    await d2.close();
    await src.close();
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

void main();
