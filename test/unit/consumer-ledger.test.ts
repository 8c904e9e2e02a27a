// The consumer ledger as a pure state machine: operation sequences give the expected state;
// the same operations on two ledgers give the same state; the ack floor stays right across
// out-of-order acks, naks, terms, max_deliver, purges and restarts.

import { test } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import { ConsumerLedger, Outcome, type LedgerAckPolicy, type LedgerOp } from "../../src/consumer/ledger.js";
import type { ConsumerState } from "../../src/storage/types.js";
import { ManualClock } from "../../src/runtime/clock.js";
import { ManualScheduler } from "../../src/runtime/sched.js";
import { MemoryStreamStore } from "../../src/storage/memory/stream.js";
import { decodeConsumerState, encodeConsumerState } from "../../src/storage/file/consumer.js";
import { Consumer } from "../../src/consumer/consumer.js";
import type { Bus } from "../../src/contracts/bus.js";
import { testConsumerConfig, testConsumerEnv, testStream } from "../helpers/consumer-rig.js";

const T = 1_700_000_000_000_000_000;

function ledger(policy: LedgerAckPolicy = "explicit", maxDeliver = 0, maxAckPending = 0): ConsumerLedger {
  const l = new ConsumerLedger();
  l.configure(policy, maxDeliver, maxAckPending);
  return l;
}

/** Deliver the next consumer sequence: sseq for the first time (dc 1) or again. */
function deliver(l: ConsumerLedger, sseq: number, dc = 1, ts = T): number {
  const dseq = l.deliveredConsumerSeq + 1;
  assert.equal(l.apply({ op: "delivered", sseq, dseq, dc, ts }), Outcome.Changed);
  return dseq;
}

function floor(l: ConsumerLedger): [number, number] {
  return [l.state.ackFloor.streamSeq, l.state.ackFloor.consumerSeq];
}

function plain(s: ConsumerState): unknown {
  return {
    delivered: { ...s.delivered },
    ackFloor: { ...s.ackFloor },
    pending: [...s.pending.entries()].map(([k, v]) => [k, v.cseq, v.tsNs]).sort((a, b) => a[0]! - b[0]!),
    redelivered: [...s.redelivered.entries()].sort((a, b) => a[0] - b[0]),
  };
}

void test("deliveries track pending with their consumer sequence and time", () => {
  const l = ledger();
  deliver(l, 3, 1, T + 1);
  deliver(l, 5, 1, T + 2);
  assert.deepEqual(l.state.delivered, { consumerSeq: 2, streamSeq: 5 });
  assert.deepEqual(floor(l), [0, 0]);
  assert.equal(l.numAckPending, 2);
  assert.deepEqual(l.pendingEntry(5), { cseq: 2, tsNs: T + 2 });
  assert.equal(l.deliveries(5), 1);
});

void test("out-of-order explicit acks move the floor only past the oldest pending", () => {
  const l = ledger();
  for (const s of [1, 2, 3, 4]) deliver(l, s);
  assert.equal(l.apply({ op: "acked", sseq: 3, dseq: 3 }), Outcome.Changed);
  assert.deepEqual(l.removed, [3]);
  assert.deepEqual(floor(l), [0, 0]);
  l.apply({ op: "acked", sseq: 1, dseq: 1 });
  assert.deepEqual(floor(l), [1, 1]);
  l.apply({ op: "acked", sseq: 2, dseq: 2 });
  assert.deepEqual(floor(l), [3, 3]);
  assert.equal(l.apply({ op: "acked", sseq: 2, dseq: 2 }), Outcome.None, "a second ack is ignored");
  l.apply({ op: "acked", sseq: 4, dseq: 4 });
  assert.deepEqual(floor(l), [4, 4]);
  assert.equal(l.numAckPending, 0);
});

void test("with nothing pending the floor is what was delivered (gaps of a filtered consumer)", () => {
  const l = ledger();
  deliver(l, 10);
  deliver(l, 20);
  l.apply({ op: "acked", sseq: 20, dseq: 2 });
  assert.deepEqual(floor(l), [9, 0]);
  l.apply({ op: "acked", sseq: 10, dseq: 1 });
  assert.deepEqual(floor(l), [20, 2]);
});

void test("ack all acknowledges everything up to the named delivery", () => {
  const l = ledger("all");
  for (const s of [1, 2, 3, 4, 5]) deliver(l, s);
  assert.equal(l.apply({ op: "acked", sseq: 3, dseq: 3 }), Outcome.Changed);
  assert.deepEqual(l.removed, [1, 2, 3]);
  assert.deepEqual(floor(l), [3, 3]);
  assert.equal(l.apply({ op: "acked", sseq: 2, dseq: 2 }), Outcome.None, "below the floor");
  assert.equal(l.apply({ op: "acked", sseq: 9, dseq: 9 }), Outcome.None, "not delivered yet");
  assert.deepEqual([...l.state.pending.keys()], [4, 5]);
});

void test("ack none: nothing pending, the floor follows deliveries, acks are ignored", () => {
  const l = ledger("none");
  deliver(l, 4);
  deliver(l, 7);
  assert.equal(l.numAckPending, 0);
  assert.deepEqual(floor(l), [7, 2]);
  assert.equal(l.apply({ op: "acked", sseq: 7, dseq: 2 }), Outcome.None);
  assert.equal(l.apply({ op: "nak", sseq: 7, delay: 0 }), Outcome.None);
  assert.equal(l.apply({ op: "term", sseq: 7 }), Outcome.None);
  assert.ok(l.canDeliverNew());
});

void test("nak queues a redelivery; the redelivery gets a new consumer sequence and count", () => {
  const l = ledger();
  deliver(l, 1);
  deliver(l, 2);
  assert.equal(l.apply({ op: "nak", sseq: 1, delay: 0 }), Outcome.Queued);
  assert.equal(l.nextRedelivery(), 1);
  assert.equal(l.queuedRedeliveries, 1);
  const d = deliver(l, 1, 2, T + 5);
  assert.equal(d, 3);
  assert.equal(l.nextRedelivery(), 0, "the redelivery left the queue");
  assert.equal(l.deliveries(1), 2);
  assert.equal(l.numRedelivered, 1);
  assert.deepEqual(l.pendingEntry(1), { cseq: 3, tsNs: T + 5 });
  assert.deepEqual(l.state.delivered, { consumerSeq: 3, streamSeq: 2 }, "a redelivery does not move the stream sequence");
  l.apply({ op: "acked", sseq: 2, dseq: 2 });
  // The oldest pending (stream 1) was last delivered as consumer 3: the consumer floor is 2.
  assert.deepEqual(floor(l), [0, 2]);
  l.apply({ op: "acked", sseq: 1, dseq: 3 });
  assert.deepEqual(floor(l), [2, 3]);
  assert.equal(l.numRedelivered, 0, "an ack forgets the count");
});

void test("a nak with a delay leaves the message pending; unknown sequences are ignored", () => {
  const l = ledger();
  deliver(l, 1);
  assert.equal(l.apply({ op: "nak", sseq: 1, delay: 5e9 }), Outcome.Deferred);
  assert.equal(l.queuedRedeliveries, 0);
  assert.ok(l.isPending(1));
  assert.equal(l.apply({ op: "nak", sseq: 9, delay: 0 }), Outcome.None);
  assert.equal(l.apply({ op: "expired", sseq: 9 }), Outcome.None);
  assert.equal(l.apply({ op: "progress", sseq: 9, ts: T }), Outcome.None);
});

void test("max_deliver: the message leaves pending, keeps its count, the floor moves", () => {
  const l = ledger("explicit", 2);
  deliver(l, 1);
  deliver(l, 2);
  assert.equal(l.apply({ op: "expired", sseq: 1 }), Outcome.Queued);
  deliver(l, 1, 2);
  assert.equal(l.apply({ op: "expired", sseq: 1 }), Outcome.MaxDelivered);
  assert.deepEqual(l.removed, [1]);
  assert.ok(!l.isPending(1));
  assert.equal(l.deliveries(1), 2, "num_redelivered still counts it");
  assert.deepEqual(floor(l), [1, 1], "the floor stops below the oldest pending (stream 2, consumer 2)");
  l.apply({ op: "acked", sseq: 2, dseq: 2 });
  assert.deepEqual(floor(l), [2, 3]);
  assert.equal(l.apply({ op: "term", sseq: 1 }), Outcome.Changed, "a term of a maxed message forgets its count");
  assert.equal(l.numRedelivered, 0);
});

void test("max_deliver 1: the first expiry ends it, with a count of 1", () => {
  const l = ledger("explicit", 1);
  deliver(l, 1);
  assert.equal(l.apply({ op: "nak", sseq: 1, delay: 0 }), Outcome.MaxDelivered);
  assert.equal(l.state.redelivered.get(1), 1);
  assert.deepEqual(floor(l), [1, 1]);
});

void test("term acts as an ack for the floor", () => {
  const l = ledger();
  for (const s of [1, 2, 3]) deliver(l, s);
  assert.equal(l.apply({ op: "term", sseq: 1 }), Outcome.Changed);
  assert.deepEqual(l.removed, [1]);
  assert.deepEqual(floor(l), [1, 1]);
  assert.equal(l.apply({ op: "term", sseq: 1 }), Outcome.None);
});

void test("progress restarts the pending entry's time", () => {
  const l = ledger();
  deliver(l, 1, 1, T);
  assert.equal(l.apply({ op: "progress", sseq: 1, ts: T + 99 }), Outcome.Changed);
  assert.equal(l.pendingEntry(1)!.tsNs, T + 99);
});

void test("max_ack_pending: new deliveries wait for acks", () => {
  const l = ledger("explicit", 0, 2);
  deliver(l, 1);
  assert.ok(l.canDeliverNew());
  deliver(l, 2);
  assert.ok(!l.canDeliverNew());
  l.apply({ op: "acked", sseq: 1, dseq: 1 });
  assert.ok(l.canDeliverNew());
});

void test("gone, skip, purged and reset", () => {
  const l = ledger("explicit", 1);
  for (const s of [1, 2, 3, 4, 5]) deliver(l, s);
  l.apply({ op: "expired", sseq: 5 }); // max_deliver: count kept, not pending
  assert.equal(l.apply({ op: "gone", sseqs: [2, 5, 42] }), Outcome.Changed);
  assert.deepEqual(l.removed, [2]);
  assert.equal(l.numRedelivered, 0);
  assert.deepEqual(floor(l), [0, 0]);
  assert.equal(l.apply({ op: "skip", sseq: 9 }), Outcome.Changed);
  assert.deepEqual(l.state.delivered, { consumerSeq: 5, streamSeq: 9 });
  assert.deepEqual(floor(l), [0, 0], "a skip leaves the floor");
  assert.equal(l.apply({ op: "skip", sseq: 8 }), Outcome.None);
  assert.equal(l.apply({ op: "purged", sseq: 4, skip: 0 }), Outcome.Changed);
  assert.deepEqual(l.removed, [1, 3]);
  assert.deepEqual(floor(l), [3, 3]);
  assert.equal(l.apply({ op: "purged", sseq: 20, skip: 25 }), Outcome.Changed);
  assert.deepEqual(l.state.delivered, { consumerSeq: 5, streamSeq: 25 });
  assert.deepEqual(floor(l), [25, 5]);
  deliver(l, 30);
  l.apply({ op: "nak", sseq: 30, delay: 0 });
  assert.equal(l.apply({ op: "reset", sseq: 100, dseq: 7 }), Outcome.Changed);
  assert.deepEqual(plain(l.state), plain({ delivered: { consumerSeq: 7, streamSeq: 100 }, ackFloor: { consumerSeq: 7, streamSeq: 100 }, pending: new Map(), redelivered: new Map() }));
  assert.equal(l.queuedRedeliveries, 0);
});

void test("a ledger recovered from its state goes on as the original", () => {
  const a = ledger();
  for (const s of [2, 4, 6, 8]) deliver(a, s);
  a.apply({ op: "acked", sseq: 4, dseq: 2 });
  const copy: ConsumerState = {
    delivered: { ...a.state.delivered },
    ackFloor: { ...a.state.ackFloor },
    pending: new Map([...a.state.pending].map(([k, v]) => [k, { ...v }])),
    redelivered: new Map(a.state.redelivered),
  };
  const b = new ConsumerLedger(copy);
  b.configure("explicit", 0, 0);
  for (const l of [a, b]) {
    l.apply({ op: "acked", sseq: 2, dseq: 1 });
    l.apply({ op: "acked", sseq: 6, dseq: 3 });
  }
  assert.deepEqual(plain(b.state), plain(a.state));
  assert.deepEqual(floor(b), [7, 3]);
});

// ---------- properties ----------

/** An intent turned into an operation against the ledger's current state, as a consumer
 *  would make it (so acks name pending messages, redeliveries come from the queue). */
type Intent = [kind: number, pick: number, arg: number];

function opFor(l: ConsumerLedger, [kind, pick, arg]: Intent, nextNew: { seq: number }, maxDeliver: number): LedgerOp {
  const pending = [...l.state.pending.keys()];
  const target = pending.length > 0 ? pending[pick % pending.length]! : pick + 1;
  const ts = T + arg;
  // Deliveries half the time, so that pending grows.
  if (kind < 8) {
    const q = l.nextRedelivery();
    // (A queued sequence already redelivered since waits in the consumer's wheel.)
    if (q !== 0 && l.isPending(q) && (maxDeliver === 0 || l.deliveries(q) < maxDeliver)) return { op: "delivered", sseq: q, dseq: l.deliveredConsumerSeq + 1, dc: l.deliveries(q) + 1, ts };
    nextNew.seq += 1 + (arg % 3); // filtered consumers skip sequences
    return { op: "delivered", sseq: nextNew.seq, dseq: l.deliveredConsumerSeq + 1, dc: 1, ts };
  }
  switch (kind) {
    case 8:
    case 9:
      return { op: "acked", sseq: target, dseq: l.pendingEntry(target)?.cseq ?? pick };
    case 10:
      return { op: "nak", sseq: target, delay: arg % 2 === 0 ? 0 : 1e9 };
    case 11:
      return { op: "expired", sseq: target };
    case 12:
      return { op: "term", sseq: target };
    case 13:
      return { op: "progress", sseq: target, ts };
    case 14:
      return { op: "gone", sseqs: [target] };
    case 15:
      nextNew.seq += arg % 5;
      return { op: "skip", sseq: nextNew.seq };
    default:
      return { op: "purged", sseq: Math.min(target, nextNew.seq + 1), skip: 0 };
  }
}

const intents = fc.array(fc.tuple(fc.integer({ min: 0, max: 16 }), fc.nat(1000), fc.nat(1000)), { maxLength: 200 });
const policies = fc.constantFrom<LedgerAckPolicy>("explicit", "all", "none");

void test("property: the same operations on two ledgers give the same state", () => {
  fc.assert(
    fc.property(intents, policies, fc.nat(4), (xs, policy, maxDeliver) => {
      const a = ledger(policy, maxDeliver, 0);
      const b = ledger(policy, maxDeliver, 0);
      const nextNew = { seq: 0 };
      const log: LedgerOp[] = [];
      for (const x of xs) {
        const op = opFor(a, x, nextNew, maxDeliver);
        log.push(structuredClone(op));
        const oa = a.apply(op);
        const ob = b.apply(structuredClone(op));
        assert.equal(oa, ob);
        assert.deepEqual(b.removed, a.removed);
      }
      assert.deepEqual(plain(b.state), plain(a.state));
      assert.equal(b.nextRedelivery(), a.nextRedelivery());
      assert.equal(b.queuedRedeliveries, a.queuedRedeliveries);
      // A third ledger replaying the log afterwards ends the same.
      const c = ledger(policy, maxDeliver, 0);
      for (const op of log) c.apply(op);
      assert.deepEqual(plain(c.state), plain(a.state));
    }),
    { numRuns: 300 },
  );
});

void test("property: the ack floor is right after every operation (explicit acks)", () => {
  fc.assert(
    fc.property(intents, fc.nat(4), (xs, maxDeliver) => {
      const l = ledger("explicit", maxDeliver, 0);
      const nextNew = { seq: 0 };
      for (const x of xs) {
        const before = floor(l);
        const op = opFor(l, x, nextNew, maxDeliver);
        const o = l.apply(op);
        const s = l.state;
        const f = s.ackFloor;
        const pend = [...s.pending.keys()];
        const minPending = pend.length > 0 ? Math.min(...pend) : Infinity;
        // Never past a pending message or what was delivered; never backwards (but reset).
        assert.ok(f.streamSeq < minPending, `floor ${f.streamSeq} reaches pending ${minPending}`);
        assert.ok(f.streamSeq <= s.delivered.streamSeq);
        assert.ok(f.consumerSeq <= s.delivered.consumerSeq);
        assert.ok(f.streamSeq >= before[0] && f.consumerSeq >= before[1], `floor went back ${before} -> ${floor(l)} on ${op.op}`);
        for (const [k, p] of s.pending) {
          assert.ok(k <= s.delivered.streamSeq);
          assert.ok(p.cseq <= s.delivered.consumerSeq);
        }
        // An operation that took messages out of pending settles the floor: right below the
        // oldest one left, or everything delivered when none is.
        const settles = (op.op === "acked" || op.op === "term" || op.op === "gone" || o === Outcome.MaxDelivered) && l.removed.length > 0;
        if (settles) {
          if (pend.length === 0) assert.deepEqual(floor(l), [s.delivered.streamSeq, s.delivered.consumerSeq]);
          else assert.equal(f.streamSeq, Math.max(before[0], minPending - 1));
        }
        // Delivery counts only for messages delivered more than once or stopped at max_deliver.
        for (const [k, dc] of s.redelivered) assert.ok(dc > 1 || (maxDeliver === 1 && !s.pending.has(k)));
        if (maxDeliver > 0) for (const dc of s.redelivered.values()) assert.ok(dc <= maxDeliver);
      }
    }),
    { numRuns: 300 },
  );
});

void test("property: ack all keeps nothing pending at or below the floor", () => {
  fc.assert(
    fc.property(intents, (xs) => {
      const l = ledger("all", 0, 0);
      const nextNew = { seq: 0 };
      for (const x of xs) {
        l.apply(opFor(l, x, nextNew, 0));
        for (const k of l.state.pending.keys()) assert.ok(k > l.state.ackFloor.streamSeq);
      }
    }),
    { numRuns: 200 },
  );
});

void test("property: the state the file store writes brings a ledger back that goes on the same", () => {
  fc.assert(
    fc.property(intents, intents, policies, fc.nat(4), (first, second, policy, maxDeliver) => {
      const a = ledger(policy, maxDeliver, 0);
      const nextNew = { seq: 0 };
      for (const x of first) a.apply(opFor(a, x, nextNew, maxDeliver));
      // What FileConsumerStore appends to o.log, and what recovery reads back.
      const b = new ConsumerLedger(decodeConsumerState(encodeConsumerState(a.state), 0));
      b.configure(policy, maxDeliver, 0);
      assert.deepEqual(plain(b.state), plain(a.state));
      for (const x of second) {
        const op = opFor(a, x, nextNew, maxDeliver);
        const copy = structuredClone(op);
        assert.equal(b.apply(copy), a.apply(op));
      }
      assert.deepEqual(plain(b.state), plain(a.state));
    }),
    { numRuns: 200 },
  );
});

// ---------- the consumer on the runtime seams ----------

void test("a consumer on a manual clock and scheduler: acks go through the ledger, the next delivery waits for the scheduler", async () => {
  const clock = new ManualClock();
  const sched = new ManualScheduler();
  const store = new MemoryStreamStore(null, null);
  for (let i = 0; i < 3; i++) store.storeMsg("r.a", null, Buffer.from("x"), clock.nowNs(), 0);
  const delivered: string[] = [];
  let onAck: ((subject: string, reply: string, hdr: Buffer | null, payload: Buffer) => void) | null = null;
  const bus: Bus = {
    subscribe: (subject, handler) => {
      if (subject.startsWith("$JS.ACK.")) onAck = handler;
      return { subject, unsubscribe: () => {} };
    },
    publish: (subject, reply) => {
      if (subject === "inbox" && reply.startsWith("$JS.ACK.")) delivered.push(reply);
    },
    hasInterest: () => true,
  };
  const stream = testStream(store);
  const cfg = testConsumerConfig({ durable_name: "C", ack_policy: "explicit", max_ack_pending: 1 });
  const env = testConsumerEnv(bus, clock, sched);
  const c = new Consumer(env, stream, cfg, clock.nowNs(), null, null);
  stream.addConsumer(c);
  c.start();
  c.pull("inbox", Buffer.from('{"batch":3}'));
  assert.equal(delivered.length, 1, "max_ack_pending 1 holds the rest back");
  assert.deepEqual([...c.snapshot().pending.keys()], [1]);
  onAck!(delivered[0]!, "", null, Buffer.alloc(0));
  assert.deepEqual(c.snapshot().ackFloor, { consumerSeq: 1, streamSeq: 1 });
  assert.equal(delivered.length, 1, "the delivery the ack allows is deferred to the scheduler");
  sched.runUntilIdle();
  assert.equal(delivered.length, 2);
  assert.equal(c.snapshot().delivered.streamSeq, 2);
  // Ack wait (30 s default) on the manual clock: a redelivery with count 2.
  clock.advance(31_000);
  sched.runUntilIdle();
  assert.equal(delivered.length, 3);
  assert.match(delivered[2]!, /^\$JS\.ACK\.R\.C\.2\.2\.3\./);
  assert.equal(c.snapshot().redelivered.get(2), 2);
  await c.stop(false);
  env.ticker.stop();
});
