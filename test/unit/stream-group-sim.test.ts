// A few seeds of the replicated-stream simulator (test/sim/streamsim.ts); `npm run sim --
// --stream --seeds N` runs many.
import { test } from "node:test";
import assert from "node:assert/strict";
import { runStreamSeed } from "../sim/streamsim.js";

for (const entry of [
  [1, 3, "memory"],
  [2, 3, "file"],
  [3, 5, "file"],
  // A replica restarted while a catch-up was filling its store, then trusted the half-filled
  // store and never applied a delete that came in the catch-up's final frame; fixed by the
  // catch-up mark (RaftHost.markCatchup). It also applies purges over several turns.
  [43, 5, "file"],
  // A group reopened in the middle of a catch-up took a DATA frame of the earlier catch-up
  // (request ids restarted at 1) and stored it out of place: a run of sequences deleted on
  // that replica only. Request ids now start at a random point. (3 s of faults, 4 s to heal.)
  [150, 3, "file", 3000, 4000],
] as const) {
  const [seed, nodes, storage] = entry;
  const [faultMs, healMs] = entry.length > 3 ? [entry[3], entry[4]] : [1500, 2500];
  void test(`stream sim: seed ${seed}, ${nodes} replicas, ${storage} store`, async () => {
    const r = await runStreamSeed(seed, nodes, storage, faultMs, healMs);
    assert.equal(r.violation, null, r.violation ?? "");
    assert.ok(r.acked > 100, `acked ${r.acked}`);
    if (seed === 43) assert.ok(r.pacedPurges > 0, "purges applied over several turns");
  });
}
