// PubAcks released after a sync: a slice of 1,024 per turn when the host gives a later turn,
// in order, and a batch's messages become visible to consumers only once its last PubAck is
// out (a publisher sees its ack before any consumer's copy). Before, every PubAck a sync
// covered went out in the sync's callback: 5,000 held the loop 18 ms.

import { test } from "node:test";
import assert from "node:assert/strict";
import { CommitQueue, type CommitHost } from "../../src/stream/commit.js";
import type { Bus } from "../../src/contracts/bus.js";
import type { StreamStore } from "../../src/storage/types.js";
import { nullLogger } from "../../src/runtime/log.js";

function rig(withTurns: boolean, clock: { monoMs(): number } | null = null): { q: CommitQueue; events: string[]; turns: (() => void)[]; syncs: ((e: Error | null) => void)[] } {
  const events: string[] = [];
  const turns: (() => void)[] = [];
  const syncs: ((e: Error | null) => void)[] = [];
  const store = { sync: (cb: (e: Error | null) => void) => syncs.push(cb) } as unknown as StreamStore;
  const host: CommitHost = {
    name: "S",
    store,
    notifyStored: (seq) => events.push(`visible ${seq}`),
    republishStored: () => undefined,
    syncFailed: () => events.push("failed"),
    ...(withTurns ? { nextTurn: (fn: () => void) => turns.push(fn) } : {}),
  };
  const bus = {
    publish: (subject: string, _r: string, _h: Buffer | null, payload: Buffer) => events.push(`${subject} ${payload.toString()}`),
  } as unknown as Bus;
  const q = new CommitQueue(host, bus, nullLogger, true, 0, clock);
  q.ackPrefix = Buffer.from('{"stream":"S","seq":');
  return { q, events, turns, syncs };
}

async function publishN(r: ReturnType<typeof rig>, n: number): Promise<void> {
  for (let seq = 1; seq <= n; seq++) {
    r.q.stored(seq, `s.${seq}`);
    r.q.applied(seq);
    r.q.queueAck(`_R.${seq}`, seq, false);
  }
  await Promise.resolve(); // the flush microtask asks for the sync
}

void test("a sync's 3,000 PubAcks go out 1,024 per turn, in order, then the messages become visible", async () => {
  const r = rig(true);
  await publishN(r, 3000);
  assert.equal(r.syncs.length, 1);
  r.syncs[0]!(null);
  const acks = (): string[] => r.events.filter((e) => e.startsWith("_R."));
  assert.equal(acks().length, 1024, "the first slice in the sync's callback");
  assert.ok(!r.events.some((e) => e.startsWith("visible")), "nothing visible before the batch's last PubAck");
  assert.equal(r.turns.length, 1);
  r.turns.shift()!();
  assert.equal(acks().length, 2048);
  r.turns.shift()!();
  assert.equal(acks().length, 3000);
  assert.equal(r.turns.length, 0, "done: no more turns asked for");
  assert.deepEqual(acks().slice(0, 2), ['_R.1 {"stream":"S","seq":1}', '_R.2 {"stream":"S","seq":2}']);
  assert.equal(acks()[2999], '_R.3000 {"stream":"S","seq":3000}');
  for (let i = 0; i < 3000; i++) assert.ok(acks()[i]!.startsWith(`_R.${i + 1} `), `ack ${i + 1} in order`);
  const firstVisible = r.events.findIndex((e) => e.startsWith("visible"));
  assert.equal(r.events.lastIndexOf('_R.3000 {"stream":"S","seq":3000}'), firstVisible - 1, "visible right after the last PubAck");
  assert.equal(r.events.filter((e) => e.startsWith("visible")).length, 3000);
});

void test("without a later turn (a test host), and on drain, every PubAck goes at once", async () => {
  const r = rig(false);
  await publishN(r, 3000);
  r.syncs[0]!(null);
  assert.equal(r.events.filter((e) => e.startsWith("_R.")).length, 3000);
  const s = rig(true);
  await publishN(s, 2000);
  const drained = s.q.drain();
  s.syncs.shift()!(null); // the batch in flight
  s.syncs.shift()?.(null); // drain's own sync
  await drained;
  assert.equal(s.events.filter((e) => e.startsWith("_R.")).length, 2000, "drain sends the rest without waiting for turns");
});

void test("a failed sync answers every PubAck of its batch with the error, a slice per turn", async () => {
  const r = rig(true);
  await publishN(r, 1500);
  r.syncs[0]!(new Error("disk gone"));
  assert.equal(r.events.filter((e) => e === "failed").length, 1);
  r.turns.shift()!();
  const errs = r.events.filter((e) => e.startsWith("_R.") && e.includes('"error"'));
  assert.equal(errs.length, 1500);
  assert.ok(!r.events.some((e) => e.startsWith("visible")), "nothing becomes visible after a failed sync");
});

void test("a turn's PubAcks stop after 1 ms too (the clock read every 64), and go on in order on the next turns", async () => {
  let now = 0;
  const r = rig(true, { monoMs: () => now++ }); // every read of the clock: 1 ms later
  await publishN(r, 1000);
  r.syncs[0]!(null);
  const acks = (): string[] => r.events.filter((e) => e.startsWith("_R."));
  // Read at the start (0), after 64 (1 ms: the slice is spent).
  assert.equal(acks().length, 64);
  assert.equal(r.turns.length, 1);
  let turns = 0;
  while (r.turns.length > 0) {
    r.turns.shift()!();
    turns++;
  }
  assert.equal(acks().length, 1000);
  assert.equal(turns, 15, "936 more, 64 a turn");
  for (let i = 0; i < 1000; i++) assert.ok(acks()[i]!.startsWith(`_R.${i + 1} `), `ack ${i + 1} in order`);
  assert.equal(r.events.filter((e) => e.startsWith("visible")).length, 1000);
});

void test("batches are reused across rounds and across streams (one shared pool): every PubAck carries its own seq and dup flag, whatever sizes came before", async () => {
  const a = rig(false);
  const b = rig(false);
  let seqA = 0;
  let seqB = 0;
  const want: { a: string[]; b: string[] } = { a: [], b: [] };
  // Rounds of varied sizes, above and below the room a batch keeps (4,096), interleaved
  // between the two queues so each takes batches the other used.
  for (const size of [5000, 3, 4096, 1, 700, 6000, 2, 64]) {
    for (const [r, side] of [[a, "a"], [b, "b"]] as const) {
      for (let k = 0; k < size; k++) {
        const seq = side === "a" ? ++seqA : ++seqB;
        const dup = seq % 7 === 0;
        r.q.stored(seq, `s.${seq}`);
        r.q.applied(seq);
        r.q.queueAck(`_${side}.${seq}`, seq, dup);
        want[side].push(`_${side}.${seq} {"stream":"S","seq":${seq}${dup ? ',"duplicate": true}' : "}"}`);
      }
      await Promise.resolve();
      r.syncs.shift()!(null);
    }
  }
  assert.deepEqual(a.events.filter((e) => e.startsWith("_a.")), want.a);
  assert.deepEqual(b.events.filter((e) => e.startsWith("_b.")), want.b);
});

void test("visibility across overlapping syncs: every message becomes visible once, in order, with its subject (the pending list moved to the front in place)", async () => {
  const seen: string[] = [];
  const syncs: ((e: Error | null) => void)[] = [];
  const store = { sync: (cb: (e: Error | null) => void) => syncs.push(cb) } as unknown as StreamStore;
  const host: CommitHost = { name: "S", store, notifyStored: (seq, subject) => seen.push(`${seq}:${subject}`), republishStored: () => undefined, syncFailed: () => undefined };
  const bus = { publish: () => undefined } as unknown as Bus;
  const q = new CommitQueue(host, bus, nullLogger, true, 0, null);
  q.ackPrefix = Buffer.from('{"stream":"S","seq":');
  let seq = 0;
  const store1 = async (n: number): Promise<void> => {
    for (let k = 0; k < n; k++) {
      seq++;
      q.stored(seq, `s.${seq % 13}`);
      q.applied(seq);
      q.queueAck(`_R.${seq}`, seq, false);
    }
    await Promise.resolve();
  };
  // Rounds: a big batch, then a small one while it syncs, so the first sync leaves a pending
  // rest behind a head past 1,024 (moved to the front), and so on.
  for (const [big, small] of [[3000, 500], [1500, 1400], [2, 1], [5000, 10]] as const) {
    await store1(big);
    await store1(small);
    while (syncs.length > 0) syncs.shift()!(null);
    await Promise.resolve();
    while (syncs.length > 0) syncs.shift()!(null);
  }
  const want = Array.from({ length: seq }, (_, i) => `${i + 1}:s.${(i + 1) % 13}`);
  assert.deepEqual(seen, want);
  assert.equal(q.visibleSeq, seq);
});
