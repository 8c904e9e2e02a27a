// The deterministic Raft simulator (test/sim/) over a few hundred seeds for CI; the long
// campaign is `npm run sim -- --seeds 10000`. A failing seed prints its replay command.
import { test } from "node:test";
import assert from "node:assert/strict";
import { runSeed } from "../sim/sim.js";

/** Seeds that once found a bug, kept as fixtures (default durations). */
const REGRESSIONS = [
  // A follower in Replicate whose whole inflight window was dropped was never sent to again
  // (fixed: a heartbeat response frees one slot).
  { seed: 3, nodes: 5 },
  // A flipped entry replaced by unsynced writes that a torn crash kept: the simulator took
  // the clean disk for a missed detection (a checker bug, fixed in sim.ts).
  { seed: 9827, nodes: 3 },
  // A node re-syncing after a bit flip (log reset to its snapshot) kept the leader counting
  // what it had acknowledged before; an entry committed that way was on one disk. Fixed: a
  // recovering node's heartbeat answers say its log was reset (RESET_FLAG), and only a commit
  // reported after the leader says it knows ends the re-sync.
  { seed: 5095, nodes: 3, resync: true },
  // Then the re-sync ended at the new leader's commit, short of an entry the node had helped
  // commit as the old leader (the new one held it, not yet committed): fixed, a re-sync holds
  // and sees committed everything up to the leader's last index when it said it knows.
  { seed: 8319, nodes: 3, resync: true },
];

function runMany(nodes: number, from: number, count: number): void {
  const failures: string[] = [];
  let acked = 0;
  let resyncs = 0;
  let reidentified = 0;
  for (let s = from; s < from + count; s++) {
    // Odd seeds: a node with a flipped bit starts blank and re-syncs (RaftHost) instead of failing.
    const resync = s % 2 === 1;
    // Seeds 2 mod 4: disks wiped in place; the node comes back under a new storage identity.
    const wipe = s % 4 === 2;
    const r = runSeed({ seed: s, nodes, faultMs: 1500, healMs: 1500, resync, wipe });
    acked += r.stats.acked;
    resyncs += r.stats.resyncs;
    reidentified += r.stats.reidentified;
    if (r.violation !== null) failures.push(`seed=${s} nodes=${nodes}: ${r.violation}\n  replay: npm run sim -- --seed ${s} --nodes ${nodes}${resync ? " --resync" : " --no-resync"}${wipe ? " --wipe" : " --no-wipe"} --fault-ms 1500 --heal-ms 1500 --verbose`);
  }
  assert.deepEqual(failures, []);
  assert.ok(resyncs > 0, "some seeds re-synced a corrupt node");
  assert.ok(reidentified > 0, "some seeds re-identified a wiped node");
  assert.ok(acked > count * 50, `the workload made progress (${acked} acked publishes)`);
}

void test("simulator: 100 seeds of 3 nodes with network, crash, pause and bit-flip faults", () => {
  runMany(3, 1, 100);
});

void test("simulator: 100 seeds of 5 nodes", () => {
  runMany(5, 1, 100);
});

void test("simulator: regression seeds", () => {
  for (const c of REGRESSIONS) {
    const r = runSeed(c);
    assert.equal(r.violation, null, `seed ${c.seed} nodes ${c.nodes}`);
  }
});

void test("simulator: 30 seeds with every message as a binary frame (codec.ts), half with the fast failover path", () => {
  for (let s = 1; s <= 30; s++) {
    const r = runSeed({ seed: 5000 + s, nodes: 3, faultMs: 1000, healMs: 1000, codec: true, fastFailover: s % 2 === 0 });
    assert.equal(r.violation, null, `seed ${5000 + s}`);
  }
});

void test("simulator: a seed replays exactly", () => {
  const a = runSeed({ seed: 42, nodes: 3, faultMs: 1000, healMs: 1000 });
  const b = runSeed({ seed: 42, nodes: 3, faultMs: 1000, healMs: 1000 });
  assert.deepEqual(a.stats, b.stats);
  assert.equal(a.atMs, b.atMs);
});

void test("simulator: 60 seeds with membership changes among the faults (a voter removed and added back)", () => {
  for (const nodes of [3, 5]) {
    let changes = 0;
    for (let s = 1; s <= 30; s++) {
      const r = runSeed({ seed: 7000 + s, nodes, faultMs: 1500, healMs: 1500, membership: true });
      changes += r.stats.confChanges;
      assert.equal(r.violation, null, `seed ${7000 + s} nodes ${nodes}: ${r.violation}\n  replay: npm run sim -- --membership --seed ${7000 + s} --nodes ${nodes} --fault-ms 1500 --heal-ms 1500 --verbose`);
    }
    assert.ok(changes > 10, `membership changes happened (${changes})`);
  }
});
