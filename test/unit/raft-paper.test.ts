// The Raft paper's properties (Ongaro & Ousterhout 2014, §5; thesis §6, §9) against the pure
// core, on a synchronous in-memory network (test/sim/memnet.ts).
import { test } from "node:test";
import assert from "node:assert/strict";
import { MemNet } from "../sim/memnet.js";
import { RaftNode } from "../../src/raft/node.js";
import { SeededRandom } from "../../src/runtime/random.js";
import { EntryType, MsgType, Role, emptyMessage, type Message } from "../../src/raft/types.js";

const enc = new TextEncoder();
const dec = new TextDecoder();
const data = (s: string): Uint8Array => enc.encode(s);
const normals = (net: MemNet, id: string): string[] =>
  net.applied(id).filter((e) => e.type === EntryType.Normal).map((e) => dec.decode(e.data));

function electN1(net: MemNet): void {
  net.node("n1").campaign();
  net.settle();
  assert.equal(net.node("n1").role, Role.Leader);
}

void test("election: a campaign wins with a majority, pre-vote does not raise terms, followers learn the leader", () => {
  const net = new MemNet(["n1", "n2", "n3"]);
  electN1(net);
  for (const id of ["n1", "n2", "n3"]) {
    assert.equal(net.node(id).term, 1, `${id} term`);
    assert.equal(net.node(id).lead, "n1");
  }
  // The leader's no-op of its term committed everywhere.
  for (const id of ["n1", "n2", "n3"]) assert.equal(net.node(id).log.committed, 1);
});

void test("election by ticking: exactly one leader emerges, randomized timeouts", () => {
  for (let seed = 1; seed <= 20; seed++) {
    const net = new MemNet(["n1", "n2", "n3", "n4", "n5"], { seed });
    for (let i = 0; i < 60 && net.leaders().length === 0; i++) net.tickAll();
    assert.equal(net.leaders().length, 1, `seed ${seed}`);
  }
});

void test("election safety: a node votes at most once per term, also across a restart", () => {
  const net = new MemNet(["n1", "n2", "n3"], { preVote: false });
  const n3 = net.node("n3");
  const vote = (from: string): Message => {
    const m = emptyMessage(MsgType.Vote, from, "n3", 1);
    return m;
  };
  n3.step(vote("n1"));
  let out = net.drain("n3");
  assert.equal(out.length, 1);
  assert.equal(out[0]!.reject, false);
  n3.step(vote("n2"));
  out = net.drain("n3");
  assert.equal(out[0]!.reject, true, "second candidate of the same term refused");
  // The vote was persisted before the grant left; a restarted node remembers it.
  const again = net.restart("n3");
  again.step(vote("n2"));
  out = net.drain("n3");
  assert.equal(out[0]!.reject, true, "no second vote after restart");
  assert.equal(net.storage.get("n3")!.hardState.vote, "n1");
});

void test("election safety: two simultaneous candidates, at most one leader per term", () => {
  const net = new MemNet(["n1", "n2", "n3", "n4", "n5"], { preVote: false });
  net.node("n1").campaign();
  net.node("n2").campaign();
  net.settle();
  const byTerm = new Map<number, string[]>();
  for (const id of net.ids) {
    const n = net.node(id);
    if (n.role === Role.Leader) byTerm.set(n.term, [...(byTerm.get(n.term) ?? []), id]);
  }
  for (const [t, ls] of byTerm) assert.ok(ls.length <= 1, `term ${t} leaders ${ls.join(",")}`);
});

void test("a candidate whose log is behind cannot win (election restriction, §5.4.1)", () => {
  const net = new MemNet(["n1", "n2", "n3"]);
  electN1(net);
  net.isolate("n3");
  net.node("n1").propose(data("a"));
  net.settle();
  assert.equal(net.node("n1").log.committed, 2);
  net.heal();
  net.isolate("n1");
  // n3 (missing index 2) campaigns; n2 refuses, n3 stays not-leader.
  for (let i = 0; i < 5; i++) {
    net.node("n3").campaign();
    net.settle();
    assert.notEqual(net.node("n3").role, Role.Leader);
  }
  net.node("n2").campaign();
  net.settle();
  assert.equal(net.node("n2").role, Role.Leader, "n2 has the committed entry and wins");
  assert.deepEqual(normals(net, "n2"), ["a"]);
});

void test("log matching: a new leader overwrites a follower's uncommitted divergent tail", () => {
  const net = new MemNet(["n1", "n2", "n3"]);
  electN1(net);
  net.isolate("n1");
  // Proposals on the partitioned old leader never commit.
  net.node("n1").propose(data("lost-1"));
  net.node("n1").propose(data("lost-2"));
  net.settle();
  assert.equal(net.node("n1").log.lastIndex(), 3);
  // n2 and n3 wait out the old leader's lease, then elect one of them.
  for (let i = 0; i < 40 && !net.leaders().some((l) => l !== "n1"); i++) net.tickAll();
  const nl = net.leaders().find((l) => l !== "n1")!;
  assert.ok(nl !== undefined);
  net.node(nl).propose(data("kept"));
  net.settle();
  net.heal();
  net.tickAll(3);
  for (const id of net.ids) {
    assert.deepEqual(normals(net, id), ["kept"], id);
    const l = net.node(id).log;
    assert.equal(l.lastIndex(), net.node(nl).log.lastIndex());
    for (let i = 1; i <= l.lastIndex(); i++) assert.equal(l.term(i), net.node(nl).log.term(i), `${id}@${i}`);
  }
});

void test("figure 8: an old-term entry on a majority is not committed by counting; a current-term entry is", () => {
  // S1 leads term 2 and got index 2 to S2 only; S5 led term 3 with its own index 2 on no one.
  // S1 is now leader of term 4 (restored state), its no-op is index 3.
  const ids = ["s1", "s2", "s3", "s4", "s5"];
  const mk = (id: string, entries: Array<[number, number]>, term: number): RaftNode =>
    new RaftNode(
      { id, peers: ids, electionTicks: 10, heartbeatTicks: 1, random: new SeededRandom(1), preVote: false },
      {
        hardState: { term, vote: "", commit: 1 },
        snapshot: null,
        entries: entries.map(([t, i]) => ({ term: t, index: i, type: EntryType.Normal, data: new Uint8Array(0) })),
      },
    );
  const s1 = mk("s1", [[1, 1], [2, 2]], 3);
  s1.campaign();
  let rd = s1.ready();
  s1.advance(rd);
  for (const v of ["s2", "s3"]) {
    const m = emptyMessage(MsgType.VoteResp, v, "s1", 4);
    s1.step(m);
  }
  assert.equal(s1.role, Role.Leader);
  assert.equal(s1.term, 4);
  rd = s1.ready();
  s1.advance(rd); // the no-op (4, 3) is durable on s1
  // s2 and s3 acknowledge only index 2 (term 2): on a majority, yet not committed.
  for (const v of ["s2", "s3"]) {
    const m = emptyMessage(MsgType.AppResp, v, "s1", 4);
    m.index = 2;
    s1.step(m);
  }
  assert.equal(s1.log.committed, 1, "term-2 entry is not committed by counting replicas");
  // Once the term-4 no-op is on a majority, both commit.
  for (const v of ["s2", "s3"]) {
    const m = emptyMessage(MsgType.AppResp, v, "s1", 4);
    m.index = 3;
    s1.step(m);
  }
  assert.equal(s1.log.committed, 3);
  // And S5 (last term 3 at index 2) can no longer win a vote from s3 (last term 4).
  const s3 = mk("s3", [[1, 1], [2, 2], [4, 3]], 4);
  const v = emptyMessage(MsgType.Vote, "s5", "s3", 5);
  v.index = 2;
  v.logTerm = 3;
  s3.step(v);
  const resp = s3.ready().messages.find((m) => m.type === MsgType.VoteResp)!;
  assert.equal(resp.reject, true);
});

void test("the leader counts its own log only after it is durable (advance)", () => {
  const net = new MemNet(["n1", "n2", "n3"]);
  electN1(net);
  net.isolate("n3");
  const n1 = net.node("n1");
  n1.propose(data("x"));
  const rd = n1.ready(); // handed to the disk, not yet durable
  assert.equal(rd.entries.length, 1);
  for (const m of rd.messages) net.deliver(m);
  for (const m of net.drain("n2")) net.deliver(m);
  assert.equal(n1.log.committed, 1, "n2's ack alone is not a majority while n1's write is in flight");
  net.storage.get("n1")!.append(rd.entries);
  n1.advance(rd);
  assert.equal(n1.log.committed, 2);
});

void test("pre-vote: a node rejoining after a long partition does not disrupt the leader", () => {
  const net = new MemNet(["n1", "n2", "n3"]);
  electN1(net);
  net.isolate("n3");
  net.tickAll(100); // n3 keeps pre-campaigning, never raising its term
  assert.equal(net.node("n3").term, 1);
  net.heal();
  net.tickAll(20);
  assert.equal(net.node("n1").role, Role.Leader);
  assert.equal(net.node("n1").term, 1);
  assert.equal(net.node("n3").lead, "n1");
});

void test("without pre-vote the same rejoin deposes the leader (the hazard pre-vote removes)", () => {
  const net = new MemNet(["n1", "n2", "n3"], { preVote: false, checkQuorum: false });
  electN1(net);
  net.isolate("n3");
  net.tickAll(100);
  assert.ok(net.node("n3").term > 1);
  net.heal();
  net.tickAll(30);
  assert.ok(net.node("n1").term > 1, "terms were bumped by the rejoiner");
});

void test("stickiness: a follower that heard the leader recently ignores a higher-term vote request", () => {
  const net = new MemNet(["n1", "n2", "n3"], { preVote: false });
  electN1(net);
  const m = emptyMessage(MsgType.Vote, "n3", "n2", 5);
  m.index = 100;
  m.logTerm = 5;
  net.node("n2").step(m);
  assert.equal(net.node("n2").term, 1);
  assert.equal(net.drain("n2").length, 0);
});

void test("check-quorum: a leader cut off from a majority steps down within an election timeout", () => {
  const net = new MemNet(["n1", "n2", "n3"]);
  electN1(net);
  net.isolate("n1");
  net.tickAll(25);
  assert.notEqual(net.node("n1").role, Role.Leader);
  const ls = net.leaders();
  assert.equal(ls.length, 1);
  assert.notEqual(ls[0], "n1");
  assert.throws(() => net.node("n1").propose(data("no")), /not leader/);
});

void test("leader transfer: the target is caught up, gets TimeoutNow and wins at once", () => {
  const net = new MemNet(["n1", "n2", "n3"]);
  electN1(net);
  net.isolate("n3");
  net.node("n1").propose(data("a"));
  net.node("n1").propose(data("b"));
  net.settle();
  net.heal();
  net.node("n1").transferLeader("n3"); // n3 lags: it is caught up first
  net.settle();
  assert.equal(net.node("n3").role, Role.Leader);
  assert.equal(net.node("n1").role, Role.Follower);
  assert.equal(net.node("n3").term, 2);
  assert.ok(net.sent.some((m) => m.type === MsgType.TimeoutNow && m.to === "n3"));
  net.node("n3").propose(data("c"));
  net.settle();
  net.tickAll(2);
  for (const id of net.ids) assert.deepEqual(normals(net, id), ["a", "b", "c"], id);
});

void test("leader transfer requested on a follower is forwarded; proposals refused while transferring", () => {
  const net = new MemNet(["n1", "n2", "n3"]);
  electN1(net);
  net.isolate("n2");
  net.node("n1").propose(data("a"));
  net.settle();
  net.node("n1").transferLeader("n2"); // n2 unreachable: the transfer hangs
  assert.throws(() => net.node("n1").propose(data("b")), /leadership moving/);
  net.tickAll(12); // abandoned after one election timeout
  net.node("n1").propose(data("b"));
  net.heal();
  net.settle();
  net.node("n3").transferLeader("n2");
  net.settle();
  assert.equal(net.node("n2").role, Role.Leader);
});

void test("a failed node (checksum error) neither votes nor leads, and a failed leader steps down", () => {
  const net = new MemNet(["n1", "n2", "n3"]);
  electN1(net);
  net.node("n1").fail("crc mismatch in WAL");
  assert.equal(net.node("n1").role, Role.Follower);
  net.node("n1").campaign();
  net.settle();
  assert.notEqual(net.node("n1").role, Role.Leader);
  net.tickAll(30);
  const ls = net.leaders();
  assert.equal(ls.length, 1);
  assert.notEqual(ls[0], "n1");
  // It sent nothing since failing: no votes, no acks.
  const term = net.node(ls[0]!).term;
  assert.ok(term >= 2);
  assert.equal(net.node("n1").term, 1, "n1 ignores everything, even higher terms");
  // Two healthy nodes of three still commit.
  net.node(ls[0]!).propose(data("z"));
  net.tickAll(2);
  assert.deepEqual(normals(net, ls[0]!), ["z"]);
});

void test("ReadIndex: the leader confirms leadership with a heartbeat round; followers forward", () => {
  const net = new MemNet(["n1", "n2", "n3"]);
  electN1(net);
  net.node("n1").propose(data("a"));
  net.settle();
  net.node("n1").readIndex(data("r1"));
  net.settle();
  const rs = net.readStates.get("n1")!;
  assert.equal(rs.length, 1);
  assert.equal(rs[0]!.index, 2);
  net.node("n2").readIndex(data("r2"));
  net.settle();
  assert.equal(net.readStates.get("n2")![0]!.index, 2);
  // A leader that cannot reach a quorum never answers.
  net.isolate("n1");
  net.node("n1").readIndex(data("r3"));
  net.settle();
  assert.equal(net.readStates.get("n1")!.length, 1);
});

void test("snapshot: a follower behind the leader's compacted log catches up from the snapshot", () => {
  const net = new MemNet(["n1", "n2", "n3"]);
  electN1(net);
  net.isolate("n3");
  for (let i = 0; i < 10; i++) net.node("n1").propose(data(`m${i}`));
  net.settle();
  const n1 = net.node("n1");
  n1.compact(n1.log.applied, data("state@" + n1.log.applied));
  assert.equal(n1.log.firstIndex(), 12);
  net.heal();
  net.tickAll(3);
  const n3 = net.node("n3");
  assert.equal(n3.log.committed, 11);
  assert.equal(dec.decode(net.storage.get("n3")!.snapshot!.data), "state@11");
  n1.propose(data("after"));
  net.settle();
  net.tickAll(1);
  assert.deepEqual(normals(net, "n3"), ["after"]);
});

void test("restart: a node recovers term, vote, log and commit from storage and rejoins", () => {
  const net = new MemNet(["n1", "n2", "n3"]);
  electN1(net);
  net.node("n1").propose(data("a"));
  net.settle();
  net.tickAll(1);
  for (const id of net.ids) net.restart(id);
  net.tickAll(40);
  const ls = net.leaders();
  assert.equal(ls.length, 1);
  net.node(ls[0]!).propose(data("b"));
  net.settle();
  net.tickAll(1);
  for (const id of net.ids) assert.deepEqual(normals(net, id), ["a", "b"], id);
});

void test("fast failover: followers told the leader is gone campaign within a few ticks, past its lease", () => {
  const net = new MemNet(["n1", "n2", "n3"]);
  electN1(net);
  net.isolate("n1");
  net.node("n2").leaderLost(3);
  net.node("n3").leaderLost(3);
  let ticks = 0;
  while (!net.leaders().some((l) => l !== "n1") && ticks < 30) {
    net.tickAll();
    ticks++;
  }
  assert.ok(ticks <= 6, `new leader after ${ticks} ticks (the election timeout is 10-20)`);
});
