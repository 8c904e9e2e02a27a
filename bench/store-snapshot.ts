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

/** Longest gap between two turns of the loop while fn runs. */
async function timed(name: string, fn: () => Promise<unknown>): Promise<void> {
  let maxTurn = 0;
  let turns = 0;
  let last = performance.now();
  let stop = false;
  const tick = (): void => {
    const now = performance.now();
    if (now - last > maxTurn) maxTurn = now - last;
    last = now;
    turns++;
    if (!stop) setImmediate(tick);
  };
  setImmediate(tick);
  const t0 = performance.now();
  await fn();
  const ms = performance.now() - t0;
  stop = true;
  await turn();
  console.log(JSON.stringify({ case: name, msgs: N, payload: PAYLOAD, totalMs: Math.round(ms), maxTurnMs: +maxTurn.toFixed(1), turns }));
}

async function main(): Promise<void> {
  const root = mkdtempSync(join(tmpdir(), "filestore-bench-snap-"));
  try {
    const { store: src } = await openFileStreamStore({ dir: join(root, "src") });
    const data = Buffer.alloc(PAYLOAD);
    for (let i = 0; i < data.length; i++) data[i] = (i * 7) & 0xff; // compressible, not trivially
    for (let i = 0; i < N; i++) {
      src.storeMsg(`snap.${i % 50}`, null, data, 1e18 + i, 0);
      if (i % 20_000 === 19_999) await new Promise<void>((res) => src.sync(() => res()));
    }
    await new Promise<void>((res) => src.sync(() => res()));
    let archive: Buffer[] = [];
    await timed("snapshot before (sync codec, a frame per turn)", async () => {
      archive = [];
      for (const f of encodeStoreSnapshot(new StoreSnapshotReader(src))) {
        archive.push(f);
        await turn();
      }
    });
    await timed("snapshot after (streamStoreSnapshot)", async () => {
      archive = [];
      await streamStoreSnapshot(new StoreSnapshotReader(src), (f) => {
        archive.push(f);
      });
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
    });
    if (d2.state().msgs !== N) throw new Error(`restored ${d2.state().msgs} of ${N}`);
    await d2.close();
    await src.close();
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

void main();
