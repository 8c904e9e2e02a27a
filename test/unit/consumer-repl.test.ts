// ConsumerRepl (src/jscluster/consumer-repl.ts): the ledger operations a leader's consumer
// reports, carried as CONSUMERS entries and applied on another replica (or restored from a
// snapshot taken part way and the later entries), give the same state as the leader's own
// ledger; AckSync replies wait for the entry that carries the ack.

import { test } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import { LedgerKind } from "../../src/contracts/jetstream.js";
import { ConsumerLedger, type LedgerOp } from "../../src/consumer/ledger.js";
import { ConsumerRepl, OP_CONSUMERS } from "../../src/jscluster/consumer-repl.js";
import type { ConsumerState } from "../../src/storage/types.js";
import type { Bus } from "../../src/contracts/bus.js";
import { Outbox } from "../../src/consumer/outbox.js";

/** A leader's replicator whose "Raft log" is an array; later() runs on turn(); commit()
 *  has the leader apply what it proposed (plain acks recorded while an entry is in flight
 *  wait for it: ConsumerRepl.flush). */
function leaderRig(): { repl: ConsumerRepl; log: Buffer[]; replies: string[]; turn(): void; commit(): void } {
  const log: Buffer[] = [];
  const replies: string[] = [];
  let queued: (() => void) | null = null;
  const repl = new ConsumerRepl({
    propose: (d) => {
      log.push(d);
      return log.length;
    },
    later: (fn) => {
      queued = fn;
    },
    publishReply: (r) => replies.push(r),
    clusterInfo: () => ({}),
    localInfo: () => ({}),
  });
  repl.setLeading(true);
  return {
    repl,
    log,
    replies,
    turn: () => {
      const f = queued;
      queued = null;
      f?.();
    },
    commit: () => {
      if (log.length > 0) repl.applied(log.length);
    },
  };
}

function follower(): ConsumerRepl {
  return new ConsumerRepl({ propose: () => 0, later: () => undefined, publishReply: () => undefined, clusterInfo: () => ({}), localInfo: () => ({}) });
}

function plain(s: ConsumerState | null): unknown {
  if (s === null) return null;
  return { delivered: s.delivered, ackFloor: s.ackFloor, pending: [...s.pending].sort((a, b) => a[0] - b[0]), redelivered: [...s.redelivered].sort((a, b) => a[0] - b[0]) };
}

/** Apply op to the live ledger and report it as ConsumerCore does. */
function report(repl: ConsumerRepl, live: ConsumerLedger, name: string, op: LedgerOp): void {
  live.apply(op);
  switch (op.op) {
    case "delivered":
      return repl.op(name, LedgerKind.Delivered, op.sseq, op.dseq, op.dc, op.ts);
    case "acked":
      return repl.op(name, LedgerKind.Acked, op.sseq, op.dseq, 0, 0);
    case "nak":
      return repl.op(name, LedgerKind.Nak, op.sseq, op.delay, 0, 0);
    case "expired":
      return repl.op(name, LedgerKind.Expired, op.sseq, 0, 0, 0);
    case "term":
      return repl.op(name, LedgerKind.Term, op.sseq, 0, 0, 0);
    case "progress":
      return repl.op(name, LedgerKind.Progress, op.sseq, op.ts, 0, 0);
    case "gone":
      return repl.op(name, LedgerKind.Gone, 0, 0, 0, 0, op.sseqs);
    case "skip":
      return repl.op(name, LedgerKind.Skip, op.sseq, 0, 0, 0);
    case "purged":
      return repl.op(name, LedgerKind.Purged, op.sseq, op.skip, 0, 0);
    case "reset":
      return repl.op(name, LedgerKind.Reset, op.sseq, op.dseq, 0, 0);
  }
}

type Step = { k: "commit" } | { k: "deliver" } | { k: "redeliver"; i: number } | { k: "ack"; i: number } | { k: "nak"; i: number; delay: number } | { k: "expire"; i: number } | { k: "term"; i: number } | { k: "progress"; i: number } | { k: "gone"; i: number } | { k: "purge"; n: number } | { k: "turn" } | { k: "snap" };

const stepArb: fc.Arbitrary<Step> = fc.oneof(
  { weight: 6, arbitrary: fc.constant({ k: "deliver" as const }) },
  { weight: 2, arbitrary: fc.record({ k: fc.constant("redeliver" as const), i: fc.nat(50) }) },
  { weight: 5, arbitrary: fc.record({ k: fc.constant("ack" as const), i: fc.nat(50) }) },
  { weight: 1, arbitrary: fc.record({ k: fc.constant("nak" as const), i: fc.nat(50), delay: fc.constantFrom(0, 5e9) }) },
  { weight: 1, arbitrary: fc.record({ k: fc.constant("expire" as const), i: fc.nat(50) }) },
  { weight: 1, arbitrary: fc.record({ k: fc.constant("term" as const), i: fc.nat(50) }) },
  { weight: 1, arbitrary: fc.record({ k: fc.constant("progress" as const), i: fc.nat(50) }) },
  { weight: 1, arbitrary: fc.record({ k: fc.constant("gone" as const), i: fc.nat(50) }) },
  { weight: 1, arbitrary: fc.record({ k: fc.constant("purge" as const), n: fc.nat(5) }) },
  { weight: 3, arbitrary: fc.constant({ k: "turn" as const }) },
  { weight: 2, arbitrary: fc.constant({ k: "commit" as const }) },
  { weight: 1, arbitrary: fc.constant({ k: "snap" as const }) },
);

void test("a follower applying the leader's CONSUMERS entries, and one restored from a snapshot part way, hold the leader's state (property)", () => {
  fc.assert(
    fc.property(fc.array(stepArb, { minLength: 1, maxLength: 120 }), fc.constantFrom("explicit", "all"), fc.constantFrom(0, 3), (steps, policy: "explicit" | "all", maxDeliver) => {
      const L = leaderRig();
      const live = new ConsumerLedger();
      live.configure(policy, maxDeliver, 0);
      L.repl.configure("c1", policy, maxDeliver, 0, "{\"durable_name\":\"c1\"}", 7);
      report(L.repl, live, "c1", { op: "reset", sseq: 0, dseq: 0 });
      const other = new ConsumerLedger(); // a second consumer in the same entries
      other.configure("explicit", 0, 0);
      L.repl.configure("c2", "explicit", 0, 0, "{}", 8);
      let sseq = 0;
      let snap: { data: Buffer; index: number } | null = null;
      const f = follower();
      let applied = 0;
      const applyAll = (): void => {
        for (; applied < L.log.length; applied++) f.apply(L.log[applied]!, applied + 1, false);
      };
      let t = 1;
      for (const s of steps) {
        t++;
        const pend = [...live.state.pending.keys()].sort((a, b) => a - b);
        const pick = (i: number): number | undefined => (pend.length === 0 ? undefined : pend[i % pend.length]);
        switch (s.k) {
          case "deliver": {
            sseq++;
            report(L.repl, live, "c1", { op: "delivered", sseq, dseq: live.deliveredConsumerSeq + 1, dc: 1, ts: t });
            report(L.repl, other, "c2", { op: "delivered", sseq, dseq: other.deliveredConsumerSeq + 1, dc: 1, ts: t });
            break;
          }
          case "redeliver": {
            const q = pick(s.i);
            if (q !== undefined) report(L.repl, live, "c1", { op: "delivered", sseq: q, dseq: live.deliveredConsumerSeq + 1, dc: live.deliveries(q) + 1, ts: t });
            break;
          }
          case "ack": {
            const q = pick(s.i);
            if (q !== undefined) report(L.repl, live, "c1", { op: "acked", sseq: q, dseq: live.state.pending.get(q)!.cseq });
            break;
          }
          case "nak": {
            const q = pick(s.i);
            if (q !== undefined) report(L.repl, live, "c1", { op: "nak", sseq: q, delay: s.delay });
            break;
          }
          case "expire": {
            const q = pick(s.i);
            if (q !== undefined) report(L.repl, live, "c1", { op: "expired", sseq: q });
            break;
          }
          case "term": {
            const q = pick(s.i);
            if (q !== undefined) report(L.repl, live, "c1", { op: "term", sseq: q });
            break;
          }
          case "progress": {
            const q = pick(s.i);
            if (q !== undefined) report(L.repl, live, "c1", { op: "progress", sseq: q, ts: t });
            break;
          }
          case "gone": {
            const q = pick(s.i);
            if (q !== undefined) report(L.repl, live, "c1", { op: "gone", sseqs: [q] });
            break;
          }
          case "purge":
            report(L.repl, live, "c1", { op: "purged", sseq: Math.max(1, sseq - s.n), skip: 0 });
            break;
          case "turn":
            L.turn();
            break;
          case "commit":
            L.commit();
            break;
          case "snap":
            L.turn();
            applyAll();
            snap = { data: f.encode(), index: applied };
            break;
        }
      }
      // Everything in flight commits; acks held behind it are proposed and commit too.
      for (let k = 0; k < 3; k++) {
        L.turn();
        L.commit();
      }
      applyAll();
      assert.deepEqual(plain(f.state("c1")), plain(live.state));
      assert.deepEqual(plain(f.state("c2")), plain(other.state));
      const cfgs = (r: ConsumerRepl): unknown => r.consumers().map((c) => [c.name, c.config, c.createdNs]).sort();
      assert.deepEqual(cfgs(f), [["c1", '{"durable_name":"c1"}', 7], ["c2", "{}", 8]]);
      if (snap !== null) {
        const g = follower();
        g.restore(snap.data);
        for (let i = snap.index; i < L.log.length; i++) g.apply(L.log[i]!, i + 1, false);
        assert.deepEqual(plain(g.state("c1")), plain(live.state));
        assert.deepEqual(plain(g.state("c2")), plain(other.state));
        assert.deepEqual(cfgs(g), cfgs(f));
      }
      for (const e of L.log) assert.equal(e[0], OP_CONSUMERS);
    }),
    { numRuns: 300 },
  );
});

void test("a deleted consumer leaves the copies; a replica that does not lead records nothing", () => {
  const L = leaderRig();
  L.repl.configure("gone", "explicit", 0, 0, "{}", 1);
  L.repl.op("gone", LedgerKind.Reset, 0, 0, 0, 0);
  L.turn();
  L.repl.removed("gone");
  L.turn();
  const f = follower();
  f.apply(L.log[0]!, 1, false);
  assert.notEqual(f.state("gone"), null);
  f.apply(L.log[1]!, 2, false);
  assert.equal(f.state("gone"), null);
  L.repl.setLeading(false);
  L.repl.op("x", LedgerKind.Reset, 0, 0, 0, 0);
  L.turn();
  assert.equal(L.log.length, 2);
});

void test("a last_per_subject end travels in the entry and in the snapshot; a snapshot written before the trailer restores with none", () => {
  const L = leaderRig();
  L.repl.configure("lps", "explicit", 0, 0, '{"deliver_policy":"last_per_subject"}', 1);
  L.repl.op("lps", LedgerKind.Reset, 41, 0, 0, 0);
  L.repl.lastPerSubject("lps", 4_200);
  L.repl.configure("plain", "explicit", 0, 0, "{}", 2);
  L.repl.op("plain", LedgerKind.Reset, 0, 0, 0, 0);
  L.turn();
  assert.equal(L.log.length, 1);
  const f = follower();
  f.apply(L.log[0]!, 1, false);
  const ends = (r: ConsumerRepl): Record<string, number> => Object.fromEntries(r.consumers().map((c) => [c.name, c.lpsEnd]));
  assert.deepEqual(ends(f), { lps: 4_200, plain: 0 });
  // A config change later (a pause, an update) keeps the end.
  L.repl.configure("lps", "explicit", 5, 0, '{"deliver_policy":"last_per_subject"}', 1);
  L.turn();
  f.apply(L.log[1]!, 2, false);
  assert.equal(ends(f)["lps"], 4_200);
  assert.equal(f.seeds().find((c) => c.name === "lps")?.lpsEnd, 4_200);

  const snap = f.encode();
  const g = follower();
  g.restore(snap);
  assert.deepEqual(ends(g), { lps: 4_200, plain: 0 });
  assert.deepEqual(plain(g.state("lps")), plain(f.state("lps")));

  // The same snapshot without its trailer (as written before lps ends were kept).
  const h = follower();
  h.restore(snap.subarray(0, snap.length - (8 + 2 + 3 + 8)));
  assert.deepEqual(ends(h), { lps: 0, plain: 0 });
  assert.deepEqual(plain(h.state("lps")), plain(f.state("lps")));

  // A replica that does not lead records none.
  L.repl.setLeading(false);
  L.repl.lastPerSubject("lps", 9);
  L.turn();
  assert.equal(L.log.length, 2);
});

void test("AckSync replies go out when the entry carrying the ack is applied, not before", () => {
  const L = leaderRig();
  L.repl.configure("c", "explicit", 0, 0, "{}", 1);
  L.repl.op("c", LedgerKind.Delivered, 1, 1, 1, 1);
  L.repl.op("c", LedgerKind.Acked, 1, 1, 0, 0);
  L.repl.replyAfterCommit("r1");
  L.turn();
  assert.deepEqual(L.replies, []);
  // An AckSync with nothing new to record waits for the last proposed entry.
  L.repl.replyAfterCommit("r2");
  assert.deepEqual(L.replies, []);
  L.repl.apply(L.log[0]!, 1, true);
  assert.deepEqual(L.replies, ["r1", "r2"]);
  // Everything proposed is applied: answered at once.
  L.repl.replyAfterCommit("r3");
  assert.deepEqual(L.replies, ["r1", "r2", "r3"]);
  // Leadership lost before the entry applied: no answer (the client retries its AckSync).
  L.repl.op("c", LedgerKind.Delivered, 2, 2, 1, 2);
  L.repl.replyAfterCommit("r4");
  L.turn();
  L.repl.setLeading(false);
  L.repl.apply(L.log[1]!, 2, false);
  assert.deepEqual(L.replies, ["r1", "r2", "r3"]);
});

void test("a batch whose propose fails while this replica still leads (a leadership transfer under way) is kept and goes with the next flush: no hole in the copies", () => {
  const log: Buffer[] = [];
  const replies: string[] = [];
  let refuse = true;
  let queued: (() => void) | null = null;
  const repl = new ConsumerRepl({
    propose: (d) => {
      if (refuse) throw new Error("leadership moving");
      log.push(d);
      return log.length;
    },
    later: (fn) => {
      queued = fn;
    },
    publishReply: (r) => replies.push(r),
    clusterInfo: () => ({}),
    localInfo: () => ({}),
  });
  const turn = (): void => {
    const f = queued;
    queued = null;
    f?.();
  };
  repl.setLeading(true);
  const live = new ConsumerLedger();
  live.configure("explicit", 0, 0);
  repl.configure("c1", "explicit", 0, 0, "{}", 1);
  report(repl, live, "c1", { op: "reset", sseq: 0, dseq: 0 });
  report(repl, live, "c1", { op: "delivered", sseq: 1, dseq: 1, dc: 1, ts: 5 });
  turn(); // refused: kept
  assert.equal(log.length, 0);
  refuse = false;
  report(repl, live, "c1", { op: "delivered", sseq: 2, dseq: 2, dc: 1, ts: 6 });
  repl.replyAfterCommit("sync-1");
  turn();
  assert.equal(log.length, 1, "one entry with both batches");
  const f = follower();
  f.apply(log[0]!, 1, false);
  assert.deepEqual(plain(f.state("c1")), plain(live.state), "the copy has delivery 1 too");
  repl.applied(1);
  assert.deepEqual(replies, ["sync-1"]);
  // Leadership lost with a kept batch: it is dropped.
  refuse = true;
  report(repl, live, "c1", { op: "acked", sseq: 1, dseq: 1 });
  turn();
  repl.setLeading(false);
  repl.setLeading(true);
  refuse = false;
  repl.flush();
  assert.equal(log.length, 1);
});

/** A bus that records what is published (the outbox's only use of it here). */
function recordingBus(): { bus: Bus; sent: string[] } {
  const sent: string[] = [];
  const bus = {
    publish: (subject: string, reply: string, _hdr: Buffer | null, data: Buffer) => sent.push(`${subject} ${reply} ${data.toString()}`),
  } as unknown as Bus;
  return { bus, sent };
}

void test("a replicated consumer's deliveries go out only once the entry carrying their delivered operation is applied; statuses queue behind them", () => {
  const L = leaderRig();
  const { bus, sent } = recordingBus();
  let resumed = 0;
  const ob = new Outbox(bus, L.repl, "$JS.ACK.S.c.", () => resumed++);
  L.repl.configure("c", "explicit", 0, 0, "{}", 1);
  // Nothing held: a status passes straight through.
  ob.publish("inbox.1", "", null, Buffer.from("408"));
  assert.deepEqual(sent, ["inbox.1  408"]);
  // Two deliveries of one turn, then the 404 of their request.
  L.repl.op("c", LedgerKind.Delivered, 1, 1, 1, 10);
  ob.deliver("inbox.2", "s.a", null, Buffer.from("m1"), 10, 1, 1, 1, 10, 1);
  L.repl.op("c", LedgerKind.Delivered, 2, 2, 1, 11);
  ob.deliver("inbox.2", "s.a", null, Buffer.from("m2"), 10, 1, 2, 2, 11, 0);
  ob.publish("inbox.2", "", null, Buffer.from("404"));
  assert.equal(ob.held, 3);
  L.turn();
  assert.equal(L.log.length, 1, "one entry for the turn");
  // A delivery of the next turn (another entry).
  L.repl.op("c", LedgerKind.Delivered, 3, 3, 1, 12);
  ob.deliver("inbox.2", "s.a", null, Buffer.from("m3"), 10, 1, 3, 3, 12, 0);
  L.turn();
  assert.equal(L.log.length, 2);
  assert.deepEqual(sent, ["inbox.1  408"], "nothing sent before the commit");
  L.repl.apply(L.log[0]!, 1, true);
  assert.deepEqual(sent.slice(1), ["inbox.2 $JS.ACK.S.c.1.1.1.10.1 m1", "inbox.2 $JS.ACK.S.c.1.2.2.11.0 m2", "inbox.2  404"]);
  assert.equal(ob.held, 1);
  L.repl.apply(L.log[1]!, 2, true);
  assert.deepEqual(sent.slice(4), ["inbox.2 $JS.ACK.S.c.1.3.3.12.0 m3"]);
  assert.equal(ob.held, 0);
  assert.equal(ob.released, 3);
  assert.equal(resumed, 0);
});

void test("deliveries held when leadership goes are never sent (the next leader redelivers), and a replica that does not lead sends none", () => {
  const L = leaderRig();
  const { bus, sent } = recordingBus();
  const ob = new Outbox(bus, L.repl, "$JS.ACK.S.c.", () => undefined);
  L.repl.configure("c", "explicit", 0, 0, "{}", 1);
  L.repl.op("c", LedgerKind.Delivered, 1, 1, 1, 10);
  ob.deliver("inbox", "s.a", null, Buffer.from("m1"), 10, 1, 1, 1, 10, 0);
  L.turn();
  // Proposed, then deposed before the entry applied here (a crash would do the same: the
  // message never left).
  L.repl.setLeading(false);
  assert.equal(ob.held, 0);
  L.repl.apply(L.log[0]!, 1, false);
  assert.deepEqual(sent, []);
  // Not leading: the operation is not taken and the delivery is not made.
  L.repl.op("c", LedgerKind.Delivered, 2, 2, 1, 11);
  ob.deliver("inbox", "s.a", null, Buffer.from("m2"), 10, 1, 2, 2, 11, 0);
  assert.equal(ob.held, 0);
  // Statuses pass through (the 409 Leadership Change of a stopping consumer).
  ob.publish("inbox", "", null, Buffer.from("409"));
  assert.deepEqual(sent, ["inbox  409"]);
  // Leading again: a new batch, held until it applies.
  L.repl.setLeading(true);
  L.repl.op("c", LedgerKind.Delivered, 2, 2, 1, 11);
  ob.deliver("inbox", "s.a", null, Buffer.from("m2"), 10, 1, 2, 2, 11, 0);
  L.turn();
  assert.deepEqual(sent, ["inbox  409"]);
  L.repl.apply(L.log[1]!, 2, true);
  assert.deepEqual(sent, ["inbox  409", "inbox $JS.ACK.S.c.1.2.2.11.0 m2"]);
});

void test("a consumer left over from an earlier term reports nothing: its operations, deliveries and AckSync replies are dropped once this replica leads again", () => {
  const L = leaderRig();
  const { bus, sent } = recordingBus();
  const old = L.repl.bind();
  const obOld = new Outbox(bus, old, "$JS.ACK.S.c.", () => undefined);
  L.repl.configure("c", "explicit", 0, 0, "{}", 1);
  L.turn();
  L.repl.apply(L.log[0]!, 1, true);
  // Leadership lost and won back before the old consumer was stopped.
  L.repl.setLeading(false);
  L.repl.setLeading(true);
  assert.equal(old.leading, false);
  old.op("c", LedgerKind.Acked, 1, 1, 0, 0);
  old.replyAfterCommit("sync-old");
  old.op("c", LedgerKind.Delivered, 2, 2, 1, 5);
  obOld.deliver("inbox", "s.a", null, Buffer.from("m2"), 10, 1, 2, 2, 5, 0);
  L.turn();
  assert.equal(L.log.length, 1, "nothing proposed for the stale consumer");
  assert.deepEqual(L.replies, []);
  assert.equal(obOld.held, 0);
  // The consumer made for this term reports as usual.
  const cur = L.repl.bind();
  const ob = new Outbox(bus, cur, "$JS.ACK.S.c.", () => undefined);
  assert.equal(cur.leading, true);
  cur.op("c", LedgerKind.Delivered, 2, 2, 1, 5);
  ob.deliver("inbox", "s.a", null, Buffer.from("m2"), 10, 1, 2, 2, 5, 0);
  L.turn();
  assert.equal(L.log.length, 2);
  L.repl.apply(L.log[1]!, 2, true);
  assert.deepEqual(sent, ["inbox $JS.ACK.S.c.1.2.2.5.0 m2"]);
});

void test("plain acks wait while an entry of the replicator is in flight; a delivery or an AckSync goes at once and takes them along", () => {
  const L = leaderRig();
  L.repl.configure("c", "explicit", 0, 0, "{}", 1);
  L.repl.op("c", LedgerKind.Delivered, 1, 1, 1, 10);
  L.turn();
  assert.equal(L.log.length, 1, "the delivery is proposed at once");
  L.repl.op("c", LedgerKind.Acked, 1, 1, 0, 0);
  L.turn();
  assert.equal(L.log.length, 1, "a plain ack waits for the entry in flight");
  L.repl.op("c", LedgerKind.Delivered, 2, 2, 1, 11);
  L.turn();
  assert.equal(L.log.length, 2, "a delivery does not wait, and carries the held ack");
  L.repl.op("c", LedgerKind.Acked, 2, 2, 0, 0);
  L.turn();
  assert.equal(L.log.length, 2);
  L.commit();
  L.turn();
  assert.equal(L.log.length, 3, "once the entries in flight applied, the held ack goes");
  L.repl.op("c", LedgerKind.Delivered, 3, 3, 1, 12);
  L.turn();
  L.repl.op("c", LedgerKind.Acked, 3, 3, 0, 0);
  L.repl.replyAfterCommit("sync-reply");
  L.turn();
  assert.equal(L.log.length, 5, "an AckSync's ack does not wait");
  const f = follower();
  for (let i = 0; i < L.log.length; i++) f.apply(L.log[i]!, i + 1, false);
  assert.deepEqual(plain(f.state("c")), { delivered: { consumerSeq: 3, streamSeq: 3 }, ackFloor: { consumerSeq: 3, streamSeq: 3 }, pending: [], redelivered: [] });
});
