// Loop blocking of a full STREAM.PURGE on a big file stream, in process:
//   node dist/bench/store-purge.js [msgs=1000000] [payloadBytes=16] [mode=all|keep|seq|subject] [paced|once]
// Stores N messages (ten subjects), syncs, then times the purge and the longest event-loop
// turn until the store is idle again (the unlinks of the dead block files run after the
// purge, paced across turns). `paced` (default) runs it as STREAM.PURGE does
// (beginPurge, steps of 1,024 sequences for at most 2 ms per turn); `once`: purge() in one
// call. Prints one JSON line.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { openFileStreamStore } from "../src/storage/index.js";

const N = Number(process.argv[2] ?? 1_000_000);
const PAYLOAD = Number(process.argv[3] ?? 16);
const MODE = process.argv[4] ?? "all";
const PACED = (process.argv[5] ?? "paced") === "paced";

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "filestore-bench-purge-"));
  try {
    const { store } = await openFileStreamStore({ dir });
    const data = Buffer.alloc(PAYLOAD, 120);
    const subjects = Array.from({ length: 10 }, (_, i) => `bench.purge.${i}`);
    const t0 = performance.now();
    for (let i = 0; i < N; i++) {
      store.storeMsg(subjects[i % 10]!, null, data, 1e18 + i, 0);
      if (i % 50_000 === 49_999) await new Promise<void>((res, rej) => store.sync((e) => (e ? rej(e) : res())));
    }
    await new Promise<void>((res, rej) => store.sync((e) => (e ? rej(e) : res())));
    const storeMs = performance.now() - t0;
    const blocksBefore = store.blockCount();
    // longest turn from the purge call until idle
    let maxTurn = 0;
    let last = performance.now();
    let stop = false;
    const tick = (): void => {
      const now = performance.now();
      if (now - last > maxTurn) maxTurn = now - last;
      last = now;
      if (!stop) setImmediate(tick);
    };
    setImmediate(tick);
    await new Promise((r) => setTimeout(r, 20));
    maxTurn = 0;
    const p0 = performance.now();
    const opts = MODE === "keep" ? { keep: 10 } : MODE === "seq" ? { seq: N - 9 } : MODE === "subject" ? { subject: "bench.purge.3" } : {};
    let removed = 0;
    let turns = 0;
    if (MODE === "none") removed = 0;
    else if (!PACED) removed = store.purge(opts);
    else {
      const job = store.beginPurge(opts);
      for (;;) {
        const t = performance.now();
        let done = job.done;
        while (!done && performance.now() - t < 2) done = job.step(1024);
        if (done) break;
        turns++;
        await new Promise((r) => setImmediate(r));
      }
      removed = job.purged;
    }
    const callMs = performance.now() - p0;
    last = performance.now();
    await new Promise<void>((res, rej) => store.sync((e) => (e ? rej(e) : res())));
    await new Promise((r) => setTimeout(r, 300));
    stop = true;
    const maxTurnAfterMs = maxTurn;
    const state = store.state();
    console.log(
      JSON.stringify({
        msgs: N,
        payload: PAYLOAD,
        mode: MODE,
        paced: PACED,
        turns,
        storeMs: Math.round(storeMs),
        blocksBefore,
        blocksAfter: store.blockCount(),
        removed,
        purgeMs: +callMs.toFixed(2),
        maxTurnAfterMs: +maxTurnAfterMs.toFixed(2),
        state: { msgs: state.msgs, first: state.firstSeq, last: state.lastSeq },
      }),
    );
    await store.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

void main();
