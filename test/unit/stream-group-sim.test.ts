// A few seeds of the replicated-stream simulator (test/sim/streamsim.ts); `npm run sim --
// --stream --seeds N` runs many.
import { test } from "node:test";
import assert from "node:assert/strict";
import { runStreamSeed } from "../sim/streamsim.js";

for (const [seed, nodes, storage] of [
  [1, 3, "memory"],
  [2, 3, "file"],
  [3, 5, "file"],
] as const) {
  void test(`stream sim: seed ${seed}, ${nodes} replicas, ${storage} store`, async () => {
    const r = await runStreamSeed(seed, nodes, storage, 1500, 2500);
    assert.equal(r.violation, null, r.violation ?? "");
    assert.ok(r.acked > 100, `acked ${r.acked}`);
  });
}
