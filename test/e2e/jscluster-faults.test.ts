// Replicated streams under faults, multi-process (test/faults/): tsnats servers from config
// files, an R3 (R5) file stream, official-client publishers with Nats-Msg-Id and retries, and
// a nemesis on the stream's leader: SIGKILL (repeated), SIGSTOP/SIGCONT, its route links
// stalled on a loopback proxy mesh, and (root) a partition in network namespaces. After the
// heal every replica's store is read and judged by the queue checker: nothing acked lost, no
// message id stored twice, no sequence acked for two messages, every replica the same. A KV
// bucket with 3 replicas under leader kills is checked for linearizability.
//
// CI runs short nemesis phases; `npm run faults` runs the same scenarios for FAULTS_SECONDS
// (default 120) each, with more faults (every server SIGKILLed at once, pauses up to 10 s).

import { test } from "node:test";
import assert from "node:assert/strict";
import { runKvScenario, runStreamScenario, type StreamReport, type StreamScenario } from "../faults/scenarios.js";
import { netnsAvailable } from "../helpers/netns.js";
import { writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const LONG = process.env["FAULTS_SECONDS"] !== undefined;
const secs = (ci: number): number => (LONG ? Number(process.env["FAULTS_SECONDS"]) : ci);

function judge(r: StreamReport, diag: (s: string) => void): void {
  const q = r.queue;
  diag(`outcomes ${JSON.stringify(r.outcomes)}; stored ${r.stored}; acked ${q.acked}; recovered unknowns ${q.recovered}; failovers (kill -> next PubAck) ms ${JSON.stringify(r.failoversMs)}`);
  if (r.failed.length > 0) diag(`not acked: ${r.failed.slice(0, 10).join("; ")}`);
  const why = (): string => `\n${r.events.join("\n")}\n${JSON.stringify({ lost: q.lost.slice(0, 20), prefix: q.lostPrefix, middle: q.lostMiddle, postfix: q.lostPostfix, unexpected: q.unexpected.slice(0, 20), duplicated: [...q.duplicated].slice(0, 20), seqConflicts: r.seqConflicts.slice(0, 20), seqMismatches: r.seqMismatches.slice(0, 20), divergent: r.divergent, failedButStored: r.failedButStored.slice(0, 20) })}`;
  const bad = q.lost.length > 0 || q.unexpected.length > 0 || q.duplicated.size > 0 || r.seqConflicts.length > 0 || r.seqMismatches.length > 0 || r.divergent.length > 0 || r.failedButStored.length > 0 || r.perReplica.some((p) => !p.ok || p.duplicated.size > 0);
  if (bad) process.stderr.write(`${r.logs}\n`);
  assert.equal(q.lost.length, 0, `acked messages lost${why()}`);
  assert.equal(q.unexpected.length, 0, `unexpected messages${why()}`);
  assert.equal(q.duplicated.size, 0, `a message id stored twice${why()}`);
  assert.deepEqual(r.seqConflicts, [], `one sequence acked for two messages${why()}`);
  assert.deepEqual(r.seqMismatches, [], `acked sequence holds another message${why()}`);
  assert.deepEqual(r.divergent, [], `replicas differ${why()}`);
  assert.deepEqual(r.failedButStored, [], `refused publishes stored${why()}`);
  for (const p of r.perReplica) assert.ok(p.ok && p.duplicated.size === 0, `a replica lost or duplicated${why()}`);
  assert.ok(q.acked > 0);
}

const base: Omit<StreamScenario, "faults" | "seconds"> = { n: 3, replicas: 3, net: "mesh", faultMs: 2500, quietMs: 1000, writers: 4, vary: LONG };

void test("faults: R3 stream on 3 servers, leader SIGKILLed twice, SIGSTOPped, its route links stalled: nothing acked lost, replicas identical", async (t) => {
  const r = await runStreamScenario({ ...base, faults: LONG ? ["kill", "pause", "isolate", "kill", "killall"] : ["kill", "pause", "isolate"], seconds: secs(12), log: (s) => t.diagnostic(s) });
  judge(r, (s) => t.diagnostic(s));
});

void test("faults: R5 stream on 5 servers, the leader and another server SIGKILLed at once", async (t) => {
  const r = await runStreamScenario({ ...base, n: 5, replicas: 5, faults: LONG ? ["kill", "pause", "isolate", "killall"] : ["kill"], killAtOnce: 2, seconds: secs(4), log: (s) => t.diagnostic(s) });
  judge(r, (s) => t.diagnostic(s));
});

const noNetns = netnsAvailable();

void test("faults: R3 stream in network namespaces, the leader partitioned from the majority", { skip: noNetns ?? false }, async (t) => {
  const r = await runStreamScenario({ ...base, net: "netns", faults: LONG ? ["partition", "kill", "pause"] : ["partition"], faultMs: 4000, seconds: secs(4), log: (s) => t.diagnostic(s) });
  judge(r, (s) => t.diagnostic(s));
});

void test("faults: R3 stream on 4 servers, a member (a follower, then the leader) cut off and STREAM.PEER.REMOVE'd while cut off (the Jepsen scenario): nothing acked lost, the members identical", async (t) => {
  const r = await runStreamScenario({ ...base, n: 4, faults: ["peerremove"], faultMs: 2000, seconds: secs(5), log: (s) => t.diagnostic(s) });
  judge(r, (s) => t.diagnostic(s));
});

void test("faults: KV bucket with 3 replicas under leader SIGKILLs: put / CAS / leader get linearizable", async (t) => {
  const r = await runKvScenario({ n: 3, net: "mesh", faults: LONG ? ["kill", "pause", "killall"] : ["kill"], seconds: secs(4), faultMs: 2000, quietMs: 1000, clients: 4, keys: 3, seed: 17, log: (s) => t.diagnostic(s) });
  t.diagnostic(`kv ops ${r.ops}, unknown ${r.unknown}, checker steps ${r.result.steps}`);
  for (const e of r.errors.slice(0, 10)) t.diagnostic(e);
  if (!r.result.ok) {
    const f = join(tmpdir(), `tsnats-kv-history-${process.pid}.json`);
    writeFileSync(f, JSON.stringify({ events: r.events, ops: r.history, dropped: r.dropped }, (_k, v: unknown) => (v === Infinity ? "Infinity" : v)));
    assert.fail(`not linearizable (key ${r.result.badPart}, exhausted ${r.result.exhausted === true}); that key's history is in ${f}:\n${r.events.join("\n")}`);
  }
  assert.ok(r.ops > 20);
});
