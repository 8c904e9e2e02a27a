// Single-server membership changes in the pure Raft core (Ongaro's thesis §4.1; CLUSTERING.md
// §3.7): a ConfChange entry takes effect when appended, one at a time, only after the leader
// committed an entry of its term; a conflicting suffix that held one undoes it; a removed
// leader hands over with TimeoutNow once its removal committed; snapshots carry the voters
// as of their index.
import { test } from "node:test";
import assert from "node:assert/strict";
import { MemNet, MemoryStorage } from "../sim/memnet.js";
import { EntryType, RaftError, Role } from "../../src/raft/types.js";

const enc = new TextEncoder();
const dec = new TextDecoder();
const normals = (net: MemNet, id: string): string[] =>
  net.applied(id).filter((e) => e.type === EntryType.Normal).map((e) => dec.decode(e.data));

function elect(net: MemNet, id = "n1"): void {
  net.node(id).campaign();
  net.settle();
  assert.equal(net.node(id).role, Role.Leader);
}

const sorted = (a: string[]): string[] => [...a].sort();

void test("membership: removing a dead follower lets two commit alone; adding a new server catches it up", () => {
  const net = new MemNet(["n1", "n2", "n3"]);
  elect(net);
  const n1 = net.node("n1");
  n1.propose(enc.encode("a"));
  net.settle();
  net.isolate("n3");
  const idx = n1.proposeConfChange(["n1", "n2"]);
  assert.ok(idx > 0);
  // Effective at append on the leader, before commit.
  assert.deepEqual(sorted(n1.voters), ["n1", "n2"]);
  assert.equal(n1.confPending, true);
  net.settle();
  assert.equal(n1.confPending, false);
  assert.deepEqual(sorted(net.node("n2").voters), ["n1", "n2"]);
  assert.ok(n1.log.committed >= idx, "committed by n1 and n2 alone");
  n1.propose(enc.encode("b"));
  net.settle();
  assert.deepEqual(normals(net, "n2"), ["a", "b"]);

  // A new server joins with the target configuration and an empty log.
  net.addNode("n4", ["n1", "n2", "n4"]);
  n1.proposeConfChange(["n1", "n2", "n4"]);
  net.settle();
  for (let i = 0; i < 5; i++) net.tickAll();
  n1.propose(enc.encode("c"));
  net.settle();
  assert.deepEqual(normals(net, "n4"), ["a", "b", "c"]);
  assert.deepEqual(sorted(net.node("n4").voters), ["n1", "n2", "n4"]);
  assert.deepEqual(
    n1.status().progress.map((p) => p.id).sort(),
    ["n1", "n2", "n4"],
    "the leader tracks exactly the voters",
  );
});

void test("membership: one change at a time, one server per change, and not before the term's first commit", () => {
  const net = new MemNet(["n1", "n2", "n3"]);
  elect(net);
  const n1 = net.node("n1");
  assert.throws(() => n1.proposeConfChange(["n1"]), (e: unknown) => e instanceof RaftError && e.code === "failed");
  assert.equal(n1.proposeConfChange(["n1", "n2", "n3"]), 0, "no change");
  net.isolate("n2");
  net.isolate("n3");
  n1.proposeConfChange(["n1", "n2"]);
  net.settle();
  assert.equal(n1.confPending, true, "not committed without a quorum");
  assert.throws(() => n1.proposeConfChange(["n1", "n2", "n4"]), (e: unknown) => e instanceof RaftError && e.code === "conf_pending");
  net.heal();
  for (let i = 0; i < 3; i++) net.tickAll();
  assert.equal(n1.confPending, false);

  // A fresh leader whose no-op has not committed yet refuses.
  const net2 = new MemNet(["n1", "n2", "n3"]);
  const a = net2.node("n1");
  net2.isolate("n1");
  a.campaign();
  net2.settle();
  assert.notEqual(a.role, Role.Leader);
  // Elect by hand: deliver votes but hold back the appends.
  net2.heal();
  const b = net2.node("n2");
  b.campaign();
  // Run the election round by round until n2 leads, then stop before its no-op commits.
  for (let r = 0; r < 20 && b.role !== Role.Leader; r++) {
    for (const id of net2.ids) for (const m of net2.drain(id)) net2.deliver(m);
  }
  assert.equal(b.role, Role.Leader);
  if (b.log.committed < b.log.lastIndex()) {
    assert.throws(() => b.proposeConfChange(["n1", "n2"]), (e: unknown) => e instanceof RaftError && e.code === "conf_pending");
  }
});

void test("membership: a leader that removes itself hands over with TimeoutNow once the removal commits", () => {
  const net = new MemNet(["n1", "n2", "n3"]);
  elect(net);
  const n1 = net.node("n1");
  n1.propose(enc.encode("a"));
  net.settle();
  const term = n1.term;
  n1.proposeConfChange(["n2", "n3"]);
  net.settle();
  // No ticks: the new leader was elected through TimeoutNow, not an election timeout.
  const leaders = net.leaders();
  assert.equal(leaders.length, 1);
  assert.notEqual(leaders[0], "n1");
  assert.equal(net.node(leaders[0]!).term, term + 1);
  assert.notEqual(n1.role, Role.Leader);
  // The removed server never campaigns again.
  net.isolate("n1");
  for (let i = 0; i < 40; i++) net.tickAll();
  assert.notEqual(n1.role, Role.Leader);
  net.node(leaders[0]!).propose(enc.encode("b"));
  net.settle();
  const other = leaders[0] === "n2" ? "n3" : "n2";
  assert.deepEqual(normals(net, other), ["a", "b"]);
});

void test("membership: an uncommitted change cut from the log by a new leader is undone", () => {
  const net = new MemNet(["n1", "n2", "n3"]);
  elect(net);
  const n1 = net.node("n1");
  net.settle();
  net.isolate("n1");
  n1.proposeConfChange(["n1", "n2"]);
  net.settle();
  assert.deepEqual(sorted(n1.voters), ["n1", "n2"]);
  // n2 and n3 elect n2 (n3 is still a voter for them).
  for (let i = 0; i < 60 && net.node("n2").role !== Role.Leader && net.node("n3").role !== Role.Leader; i++) net.tickAll();
  const lead = net.node("n2").role === Role.Leader ? net.node("n2") : net.node("n3");
  assert.equal(lead.role, Role.Leader);
  lead.propose(enc.encode("x"));
  net.settle();
  net.heal();
  for (let i = 0; i < 10; i++) net.tickAll();
  assert.deepEqual(sorted(n1.voters), ["n1", "n2", "n3"], "the conflicting membership entry was replaced");
  assert.deepEqual(normals(net, "n1"), ["x"]);
});

void test("membership: snapshots carry the voters as of their index; a restart takes them from the log", () => {
  const net = new MemNet(["n1", "n2", "n3"]);
  elect(net);
  const n1 = net.node("n1");
  n1.propose(enc.encode("a"));
  net.settle();
  const before = n1.log.applied;
  net.isolate("n3");
  n1.proposeConfChange(["n1", "n2"]);
  net.settle();
  assert.deepEqual(n1.votersAt(before), ["n1", "n2", "n3"]);
  assert.deepEqual(sorted(n1.votersAt(n1.log.lastIndex())), ["n1", "n2"]);
  // A restart rebuilds the voters from the membership entry in its log.
  const r2 = net.restart("n2");
  assert.deepEqual(sorted(r2.voters), ["n1", "n2"]);
  // Compacting past the change: the snapshot holds the new voters.
  n1.propose(enc.encode("b"));
  net.settle();
  n1.compact(n1.log.applied, new Uint8Array([1]));
  assert.deepEqual(sorted(n1.snapshot!.voters), ["n1", "n2"]);
  // A new server that installs the snapshot gets them (and then its own addition).
  net.addNode("n4", ["n1", "n2", "n4"]);
  n1.proposeConfChange(["n1", "n2", "n4"]);
  net.settle();
  for (let i = 0; i < 30 && n1.status().progress.find((p) => p.id === "n4")!.match < n1.log.lastIndex(); i++) net.tickAll();
  assert.ok(net.storage.get("n4")!.snapshot !== null, "n4 installed the snapshot");
  assert.deepEqual(sorted(net.node("n4").voters), ["n1", "n2", "n4"]);
  n1.propose(enc.encode("c"));
  net.settle();
  assert.deepEqual(normals(net, "n4"), ["c"]);
});

void test("membership: a group started by one server grows by snapshot; a new member that starts with the old voters never campaigns before it is added", () => {
  const net = new MemNet(["n1"]);
  elect(net);
  const n1 = net.node("n1");
  n1.propose(enc.encode("a"));
  net.settle();
  // The seed: the state so far is a snapshot, the log before it gone.
  n1.compact(n1.log.applied, new Uint8Array([7]));
  const n2 = net.addNode("n2", ["n1"]);
  net.isolate("n2");
  net.tickAll(100);
  assert.equal(n2.role, Role.Follower, "a server outside its voters does not campaign");
  assert.equal(n2.term, 0);
  net.heal();
  n1.proposeConfChange(["n1", "n2"]);
  net.settle();
  for (let i = 0; i < 30 && n1.status().progress.find((p) => p.id === "n2")!.match < n1.log.lastIndex(); i++) net.tickAll();
  assert.ok(net.storage.get("n2")!.snapshot !== null, "n2 got the seed snapshot, not the log");
  assert.deepEqual(sorted(n2.voters), ["n1", "n2"]);
  n1.propose(enc.encode("b"));
  net.settle();
  assert.deepEqual(normals(net, "n2"), ["b"]);
  assert.equal(n1.log.committed, n2.log.committed);
});

void test("membership: a follower whose log was wiped (same id) is probed back from nothing and catches up", () => {
  const net = new MemNet(["n1", "n2", "n3"]);
  elect(net);
  const n1 = net.node("n1");
  for (const s of ["a", "b", "c"]) n1.propose(enc.encode(s));
  net.settle();
  assert.equal(n1.status().progress.find((p) => p.id === "n3")!.match, n1.log.lastIndex());
  // n3's disk is wiped; it comes back under the same id with an empty log.
  net.storage.set("n3", new MemoryStorage());
  const n3 = net.restart("n3");
  assert.equal(n3.log.lastIndex(), 0);
  // Nothing new to send: the heartbeat answers say how far its log goes.
  for (let i = 0; i < 5; i++) net.tickAll();
  assert.deepEqual(normals(net, "n3"), ["a", "b", "c"]);
  n1.propose(enc.encode("d"));
  net.settle();
  assert.deepEqual(normals(net, "n3"), ["a", "b", "c", "d"]);
  assert.equal(n1.status().progress.find((p) => p.id === "n3")!.match, n1.log.lastIndex());
});

void test("membership: a learner is replicated to but never counted (commit, check-quorum, elections), and a promotion makes it a voter", () => {
  const net = new MemNet(["n1", "n2", "n3"]);
  elect(net);
  const n1 = net.node("n1");
  n1.propose(enc.encode("a"));
  net.settle();
  // n4 joins with the voters it knows of; the leader adds it as a learner.
  net.addNode("n4", ["n1", "n2", "n3"]);
  const idx = n1.proposeConfChange(["n1", "n2", "n3"], ["n4"]);
  assert.ok(idx > 0);
  net.settle();
  for (let i = 0; i < 3; i++) net.tickAll();
  const n4 = net.node("n4");
  assert.deepEqual(n4.learners, ["n4"], "the learner knows it is one");
  assert.deepEqual(sorted(n4.voters), ["n1", "n2", "n3"]);
  assert.deepEqual(normals(net, "n4"), ["a"], "replicated to");
  assert.deepEqual(n1.status().learners, ["n4"]);
  // With two voters gone, the leader and the learner are not a quorum: nothing commits,
  // and check-quorum deposes the leader (the learner's answers do not count).
  net.isolate("n2");
  net.isolate("n3");
  const before = n1.log.committed;
  n1.propose(enc.encode("b"));
  net.settle();
  assert.equal(n1.log.committed, before, "a learner's ack does not commit");
  assert.ok(n1.log.lastIndex() > before);
  for (let i = 0; i < 40; i++) net.tickAll();
  assert.notEqual(n1.role, Role.Leader, "check-quorum does not count the learner");
  // A learner never campaigns, not even when told to.
  n4.campaign();
  net.settle();
  assert.notEqual(n4.role, Role.Leader);
  assert.notEqual(n4.role, Role.Candidate);
  net.heal();
  for (let i = 0; i < 60 && net.leaders().length !== 1; i++) net.tickAll();
  assert.equal(net.leaders().length, 1);
  const l = net.node(net.leaders()[0]!);
  assert.notEqual(l.id, "n4");
  l.propose(enc.encode("c"));
  net.settle();
  // Promotion: one voter added (the learner), and one at a time as before.
  for (let i = 0; i < 3; i++) net.tickAll();
  l.proposeConfChange(["n1", "n2", "n3", "n4"], []);
  net.settle();
  for (let i = 0; i < 3; i++) net.tickAll();
  assert.deepEqual(sorted(n4.voters), ["n1", "n2", "n3", "n4"]);
  assert.deepEqual(n4.learners, []);
  assert.deepEqual(normals(net, "n4").filter((v) => v !== "b"), ["a", "c"]);
  assert.throws(() => l.proposeConfChange(["n1", "n2"], ["n3", "n4"]), (e: unknown) => e instanceof RaftError, "two voters out at once is refused");
});
