// Durable consumer state survives a SIGKILL of a tsnats child process: delivered, ack floor,
// pending acks, redelivery counts and num_pending are as they were, messages delivered but
// not acknowledged are delivered again (with their delivery count going on), acknowledged
// ones never are; a last_per_subject consumer resumes its first phase where it was.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { nanos } from "@nats-io/transport-node";
import { AckPolicy, DeliverPolicy, jetstream, jetstreamManager, type ConsumerInfo, type JetStreamClient, type JetStreamManager, type JsMsg } from "@nats-io/jetstream";
import { CrashableTsnats } from "../helpers/crash-child.js";
import { fetchN, seqs, until } from "../helpers/js-consumer.js";

let srv: CrashableTsnats;

async function boot(): Promise<{ jsm: JetStreamManager; js: JetStreamClient }> {
  const nc = await srv.boot();
  return { jsm: await jetstreamManager(nc), js: jetstream(nc) };
}

const sigkill = (): Promise<void> => srv.sigkill();

before(() => {
  srv = new CrashableTsnats("tsnats-e2e-conscrash-");
});

after(async () => {
  await srv.dispose();
});

/** The parts of consumer info that must survive a restart. */
function progress(ci: ConsumerInfo): Record<string, unknown> {
  return {
    delivered: [ci.delivered.consumer_seq, ci.delivered.stream_seq],
    ack_floor: [ci.ack_floor.consumer_seq, ci.ack_floor.stream_seq],
    num_ack_pending: ci.num_ack_pending,
    num_redelivered: ci.num_redelivered,
    num_pending: ci.num_pending,
  };
}

const ACK_WAIT_MS = 1_500;

void test("durable pull consumers: SIGKILL, restart, state intact, unacked redelivered, acked never", async () => {
  let { jsm, js } = await boot();
  await jsm.streams.add({ name: "CR", subjects: ["cr.>"] });
  for (let i = 1; i <= 20; i++) await js.publish(`cr.${i % 2 === 0 ? "even" : "odd"}`, `m${i}`);
  await jsm.consumers.add("CR", { durable_name: "D", ack_policy: AckPolicy.Explicit, ack_wait: nanos(ACK_WAIT_MS) });
  await jsm.consumers.add("CR", { durable_name: "ALL", ack_policy: AckPolicy.All, filter_subject: "cr.odd", ack_wait: nanos(ACK_WAIT_MS) });

  const d = await js.consumers.get("CR", "D");
  const first = await fetchN(d, 10);
  assert.deepEqual(seqs(first), [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
  // 9 is nak'ed and delivered a second time before the crash.
  first[8]!.nak();
  const nine = (await d.next({ expires: 2_000 }))!;
  assert.deepEqual([nine.seq, nine.info.deliveryCount], [9, 2]);
  // Acked: 1..5 and 8 (ackAck returns once the ack is on disk). Left pending: 6, 7, 9, 10.
  for (const i of [0, 1, 2, 3, 4, 7]) assert.equal(await first[i]!.ackAck(), true);

  const all = await js.consumers.get("CR", "ALL");
  const odd = await fetchN(all, 4);
  assert.deepEqual(seqs(odd), [1, 3, 5, 7]);
  assert.equal(await odd[1]!.ackAck(), true); // acks 1 and 3

  // last_per_subject, stopped inside its first phase: newest of each subject, then the rest.
  await jsm.streams.add({ name: "LPS", subjects: ["lp.>"] });
  for (const x of ["a", "b", "c", "b", "a", "d", "d"]) await js.publish(`lp.${x}`, x); // newest: c=3 b=4 a=5 d=7
  await jsm.consumers.add("LPS", { durable_name: "L", ack_policy: AckPolicy.Explicit, deliver_policy: DeliverPolicy.LastPerSubject, filter_subject: "lp.>" });
  const lp = await js.consumers.get("LPS", "L");
  const lp3 = (await lp.next({ expires: 2_000 }))!;
  assert.equal(lp3.seq, 3);
  assert.equal(await lp3.ackAck(), true);
  await js.publish("lp.e", "e"); // 8, after the consumer was made: delivered too
  const beforeL = progress(await lp.info());
  assert.equal(beforeL["num_pending"], 4);

  const beforeD = progress(await d.info());
  const beforeAll = progress(await all.info());
  assert.deepEqual(beforeD, {
    delivered: [11, 10],
    ack_floor: [5, 5],
    num_ack_pending: 4,
    num_redelivered: 1,
    num_pending: 10,
  });
  assert.deepEqual(beforeAll, { delivered: [4, 7], ack_floor: [2, 3], num_ack_pending: 2, num_redelivered: 0, num_pending: 6 });
  await sigkill();

  ({ jsm, js } = await boot());
  const d2 = await js.consumers.get("CR", "D");
  const all2 = await js.consumers.get("CR", "ALL");
  assert.deepEqual(progress(await d2.info()), beforeD, "D after SIGKILL");
  assert.deepEqual(progress(await all2.info()), beforeAll, "ALL after SIGKILL");
  assert.equal((await jsm.streams.info("CR")).state.messages, 20);
  const lp2 = await js.consumers.get("LPS", "L");
  assert.deepEqual(progress(await lp2.info()), beforeL, "L after SIGKILL");
  const lpRest = await fetchN(lp2, 4);
  assert.deepEqual(seqs(lpRest), [4, 5, 7, 8], "only the newest of each subject, then what came later");
  assert.equal(await lp2.next({ expires: 1_000 }), null);

  // Everything D still owes: the four pending (after ack_wait) and the ten never delivered.
  const got: JsMsg[] = await fetchN(d2, 14, 15_000);
  const bySeq = new Map(got.map((m) => [m.seq, m.info.deliveryCount]));
  assert.deepEqual(
    [...bySeq.keys()].sort((a, b) => a - b),
    [6, 7, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20],
  );
  assert.equal(got.length, 14, "no message twice");
  assert.deepEqual([bySeq.get(6), bySeq.get(7), bySeq.get(9), bySeq.get(10), bySeq.get(11)], [2, 2, 3, 2, 1]);
  for (const m of got) assert.equal(await m.ackAck(), true);
  // Acked before the crash and now: nothing more comes, even after another ack_wait.
  assert.equal(await d2.next({ expires: ACK_WAIT_MS + 1_000 }), null);
  assert.deepEqual(progress(await d2.info()), {
    delivered: [25, 20],
    ack_floor: [25, 20],
    num_ack_pending: 0,
    num_redelivered: 0,
    num_pending: 0,
  });

  // ALL: 5 and 7 come back, then the rest of the odd ones; 1 and 3 never.
  const rest = await fetchN(all2, 8, 15_000);
  assert.deepEqual(
    seqs(rest).sort((a, b) => a - b),
    [5, 7, 9, 11, 13, 15, 17, 19],
  );
  assert.equal(await rest.sort((a, b) => a.seq - b.seq)[7]!.ackAck(), true);
  const ci = await all2.info();
  assert.deepEqual([ci.ack_floor.stream_seq, ci.num_ack_pending, ci.num_pending], [19, 0, 0]);
});

void test("last_per_subject over 6,000 subjects, stopped inside its first phase: after SIGKILL the rest of that phase (built over turns at start) and then what came later", async () => {
  if (srv.child !== null) await sigkill(); // the test before leaves its server running
  const nc = await srv.boot();
  let jsm = await jetstreamManager(nc);
  let js = jetstream(nc);
  await jsm.streams.add({ name: "LPSK", subjects: ["lpk.>"] });
  const n = 6000;
  const half = 3000;
  // Round 0: every subject (1..6000); round 1: the first half again (6001..9000). The newest
  // of each: subjects half..n-1 at 3001..6000, subjects 0..half-1 at 6001..9000.
  for (let i = 0; i < n; i++) nc.publish(`lpk.${i}`, "r0");
  for (let i = 0; i < half; i++) nc.publish(`lpk.${i}`, "r1");
  await nc.flush();
  await until("9,000 stored", async () => (await jsm.streams.info("LPSK")).state.messages === n + half);
  await jsm.consumers.add("LPSK", { durable_name: "K", ack_policy: AckPolicy.All, max_ack_pending: 10_000, deliver_policy: DeliverPolicy.LastPerSubject, filter_subject: "lpk.>" });
  const k = await js.consumers.get("LPSK", "K");
  const first = await fetchN(k, 1000, 20_000);
  assert.deepEqual(seqs(first), Array.from({ length: 1000 }, (_, i) => half + 1 + i));
  assert.equal(await first[999]!.ackAck(), true);
  await js.publish("lpk.7", "after"); // 9001: after the consumer was made
  const before = progress(await k.info());
  assert.deepEqual(before, { delivered: [1000, 4000], ack_floor: [1000, 4000], num_ack_pending: 0, num_redelivered: 0, num_pending: 5001 });
  await sigkill();

  ({ jsm, js } = await boot());
  const k2 = await js.consumers.get("LPSK", "K");
  assert.deepEqual(progress(await k2.info()), before, "K after SIGKILL");
  const rest = await fetchN(k2, 5001, 30_000);
  assert.deepEqual(seqs(rest), [...Array.from({ length: 5000 }, (_, i) => 4001 + i), n + half + 1]);
  assert.equal(rest[5000]!.string(), "after");
  assert.equal(await k2.next({ expires: 1_000 }), null);
});
