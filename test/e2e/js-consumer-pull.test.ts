// Pull consumers end to end with @nats-io/jetstream 3.x against an in-process tsnats: fetch,
// next, consume, ordered consumers, every ack kind, backoff with max_deliver (and its
// advisory), max_ack_pending, filter_subjects, every deliver policy, replay original, ack
// sampling, consumer info counters, pause/resume and inactive ephemerals.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { nanos } from "@nats-io/transport-node";
import { AckPolicy, DeliverPolicy, ReplayPolicy, StorageType, type JsMsg } from "@nats-io/jetstream";
import { Advisories, bootJs, fetchN, pullOne, rejects, seqs, until, type JsEnv } from "../helpers/js-consumer.js";

let env: JsEnv;

before(async () => {
  env = await bootJs("jscons-pull");
});

after(async () => {
  await env.close();
});

async function publish(subjects: string[]): Promise<void> {
  for (let i = 0; i < subjects.length; i++) await env.js.publish(subjects[i]!, `m${i + 1}`);
}

void test("fetch, next and consume in order with explicit acks; info counters follow", async () => {
  const { jsm, js } = env;
  await jsm.streams.add({ name: "PULL", subjects: ["pull.>"] });
  await publish(Array.from({ length: 10 }, (_, i) => `pull.${i % 2 === 0 ? "a" : "b"}`));
  await jsm.consumers.add("PULL", { durable_name: "D", ack_policy: AckPolicy.Explicit });
  const c = await js.consumers.get("PULL", "D");
  let ci = await c.info();
  assert.deepEqual([ci.delivered.consumer_seq, ci.delivered.stream_seq], [0, 0]);
  assert.deepEqual([ci.ack_floor.consumer_seq, ci.ack_floor.stream_seq], [0, 0]);
  assert.equal(ci.num_pending, 10);
  assert.equal(ci.num_ack_pending, 0);
  assert.equal(ci.num_waiting, 0);

  const first = await fetchN(c, 3);
  assert.deepEqual(seqs(first), [1, 2, 3]);
  assert.deepEqual(
    first.map((m) => [m.info.deliverySequence, m.info.deliveryCount, m.info.pending, m.redelivered]),
    [
      [1, 1, 9, false],
      [2, 1, 8, false],
      [3, 1, 7, false],
    ],
  );
  assert.equal(first[0]!.string(), "m1");
  first[0]!.ack();
  assert.equal(await first[2]!.ackAck(), true);
  ci = await c.info();
  assert.deepEqual([ci.delivered.consumer_seq, ci.delivered.stream_seq], [3, 3]);
  assert.deepEqual([ci.ack_floor.consumer_seq, ci.ack_floor.stream_seq], [1, 1]);
  assert.equal(ci.num_ack_pending, 1);
  assert.equal(ci.num_pending, 7);
  assert.equal(ci.num_redelivered, 0);
  assert.equal(typeof ci.delivered.last_active, "string");
  assert.equal(typeof ci.ack_floor.last_active, "string");

  const n4 = await c.next({ expires: 2_000 });
  assert.equal(n4?.seq, 4);
  assert.equal(await n4.ackAck(), true);

  const got: number[] = [];
  const msgs = await c.consume({ max_messages: 4 });
  for await (const m of msgs) {
    got.push(m.seq);
    m.ack();
    if (got.length === 6) break;
  }
  assert.deepEqual(got, [5, 6, 7, 8, 9, 10]);
  ci = await c.info();
  assert.deepEqual([ci.delivered.consumer_seq, ci.delivered.stream_seq], [10, 10]);
  assert.equal(ci.num_pending, 0);
  // Message 2 is still unacknowledged: the floor stays below it.
  await until("acks of 5..10 applied", async () => (await c.info()).num_ack_pending === 1);
  ci = await c.info();
  assert.deepEqual([ci.ack_floor.consumer_seq, ci.ack_floor.stream_seq], [1, 1]);
  assert.equal(await first[1]!.ackAck(), true);
  ci = await c.info();
  assert.deepEqual([ci.ack_floor.consumer_seq, ci.ack_floor.stream_seq], [10, 10]);
  assert.equal(ci.num_ack_pending, 0);

  // An open request shows as num_waiting and is served by the next publish.
  const waiting = c.next({ expires: 5_000 });
  await until("one waiting request", async () => (await c.info()).num_waiting === 1);
  await js.publish("pull.a", "late");
  const late = await waiting;
  assert.equal(late?.seq, 11);
  assert.equal(late.string(), "late");
  late.ack();
  assert.equal((await c.info()).num_waiting, 0);
  await jsm.streams.delete("PULL");
});

void test("ordered consumer reads everything in order, filtered and unfiltered, and survives a deleted consumer", async () => {
  const { jsm, js } = env;
  await jsm.streams.add({ name: "ORD", subjects: ["ord.>"] });
  await publish(Array.from({ length: 20 }, (_, i) => `ord.${i % 3}`));
  const all = await js.consumers.get("ORD");
  const got: number[] = [];
  for await (const m of await all.consume()) {
    got.push(m.seq);
    if (got.length === 20) break;
  }
  assert.deepEqual(got, Array.from({ length: 20 }, (_, i) => i + 1));

  const filtered = await js.consumers.get("ORD", { filter_subjects: ["ord.1"] });
  const f: string[] = [];
  for await (const m of await filtered.fetch({ max_messages: 7, expires: 2_000 })) f.push(`${m.subject}:${m.seq}`);
  assert.deepEqual(f, [2, 5, 8, 11, 14, 17, 20].map((s) => `ord.1:${s}`));

  // Delete the server-side consumer under an ordered consume: the client notices (409
  // Consumer Deleted, then missed heartbeats), recreates it and carries on after the last
  // message it handed out.
  const oc = await js.consumers.get("ORD", { filter_subjects: ["ord.0"] });
  const it = await oc.consume({ expires: 2_000, idle_heartbeat: 500 });
  const seen: number[] = [];
  let deleted = false;
  const bound = setTimeout(() => it.stop(), 15_000);
  for await (const m of it) {
    seen.push(m.seq);
    if (!deleted) {
      deleted = true;
      const name = (await oc.info(true)).name;
      await jsm.consumers.delete("ORD", name);
      await js.publish("ord.0", "after");
    }
    if (seen.length === 8) break;
  }
  clearTimeout(bound);
  assert.deepEqual(seen, [1, 4, 7, 10, 13, 16, 19, 21]);
  await jsm.streams.delete("ORD");
});

void test("acks: nak now and with a delay, working extends ack_wait, term with reason, double ack confirmed", async () => {
  const { jsm, js, nc } = env;
  await jsm.streams.add({ name: "ACKS", subjects: ["acks.>"] });
  await publish(["acks.1", "acks.2", "acks.3", "acks.4"]);
  await jsm.consumers.add("ACKS", { durable_name: "A", ack_policy: AckPolicy.Explicit, ack_wait: nanos(800), max_ack_pending: 1 });
  const c = await js.consumers.get("ACKS", "A");
  const naks = new Advisories(nc, "$JS.EVENT.ADVISORY.CONSUMER.MSG_NAKED.ACKS.A");
  const terms = new Advisories(nc, "$JS.EVENT.ADVISORY.CONSUMER.MSG_TERMINATED.ACKS.A");

  // -NAK: delivered again at once, with the count going up.
  let m = (await c.next({ expires: 2_000 }))!;
  assert.equal(m.seq, 1);
  m.nak();
  m = (await c.next({ expires: 2_000 }))!;
  assert.deepEqual([m.seq, m.info.deliveryCount, m.redelivered], [1, 2, true]);
  assert.equal((await c.info()).num_redelivered, 1);
  const [nakAdv] = await naks.wait(1);
  assert.equal(nakAdv!.body["type"], "io.nats.jetstream.advisory.v1.nak");
  assert.equal(nakAdv!.body["stream_seq"], 1);
  // -NAK with a delay: not within 300 ms (max_ack_pending 1 also holds back message 2), then redelivered.
  m.nak(1_200);
  assert.deepEqual(await pullOne(nc, "ACKS", "A", { expiresMs: 300 }), { status: 408 });
  m = (await c.next({ expires: 5_000 }))!;
  assert.deepEqual([m.seq, m.info.deliveryCount], [1, 3]);
  assert.equal(await m.ackAck(), true);
  // A second +ACK of the same message (the client itself refuses to send one) is confirmed too.
  const again = await nc.request((m as JsMsg & { reply: string }).reply, "+ACK", { timeout: 2_000 });
  assert.equal(again.data.length, 0);

  // +WPI: each progress report restarts ack_wait (800 ms); no redelivery while working.
  m = (await c.next({ expires: 2_000 }))!;
  assert.equal(m.seq, 2);
  for (let i = 0; i < 5; i++) {
    m.working();
    assert.deepEqual(await pullOne(nc, "ACKS", "A", { expiresMs: 300 }), { status: 408 }, `redelivered while working (${i})`);
  }
  // Stop working: ack_wait runs out and it comes back.
  const back = (await c.next({ expires: 5_000 }))!;
  assert.deepEqual([back.seq, back.info.deliveryCount], [2, 2]);
  back.ack();

  // +TERM with a reason: never delivered again; the advisory carries the reason.
  m = (await c.next({ expires: 2_000 }))!;
  assert.equal(m.seq, 3);
  m.term("cannot parse");
  const [tAdv] = await terms.wait(1);
  assert.equal(tAdv!.body["type"], "io.nats.jetstream.advisory.v1.terminated");
  assert.equal(tAdv!.body["stream_seq"], 3);
  assert.equal(tAdv!.body["reason"], "cannot parse");
  m = (await c.next({ expires: 2_000 }))!;
  assert.equal(m.seq, 4);
  m.ack();
  await until("all acked", async () => (await c.info()).num_ack_pending === 0);
  const ci = await c.info();
  assert.deepEqual([ci.ack_floor.stream_seq, ci.delivered.stream_seq, ci.num_pending], [4, 4, 0]);
  naks.stop();
  terms.stop();
  await jsm.streams.delete("ACKS");
});

void test("backoff schedules redeliveries, max_deliver stops them and publishes MAX_DELIVERIES", async () => {
  const { jsm, js, nc } = env;
  await jsm.streams.add({ name: "BO", subjects: ["bo.>"] });
  await publish(["bo.x", "bo.y"]);
  const adv = new Advisories(nc, "$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.BO.B");
  const ci0 = await jsm.consumers.add("BO", {
    durable_name: "B",
    ack_policy: AckPolicy.Explicit,
    filter_subject: "bo.x",
    backoff: [nanos(200), nanos(500)],
    max_deliver: 3,
  });
  assert.equal(ci0.config.ack_wait, nanos(200), "ack_wait is the first backoff");
  assert.deepEqual(ci0.config.backoff, [nanos(200), nanos(500)]);
  const c = await js.consumers.get("BO", "B");
  const counts: number[] = [];
  for (let i = 0; i < 3; i++) {
    const m = await c.next({ expires: 3_000 });
    assert.ok(m !== null, `delivery ${i + 1}`);
    assert.equal(m.seq, 1);
    counts.push(m.info.deliveryCount);
  }
  assert.deepEqual(counts, [1, 2, 3]);
  // nats-server notices max_deliver only while serving a request: one is open meanwhile.
  assert.equal(await c.next({ expires: 1_500 }), null, "delivered past max_deliver");
  const [a] = await adv.wait(1);
  assert.equal(a!.body["type"], "io.nats.jetstream.advisory.v1.max_deliver");
  assert.equal(a!.body["stream"], "BO");
  assert.equal(a!.body["consumer"], "B");
  assert.equal(a!.body["stream_seq"], 1);
  assert.equal(a!.body["deliveries"], 3);
  const ci = await c.info();
  assert.equal(ci.num_ack_pending, 0);
  assert.equal(ci.num_pending, 0);
  adv.stop();
  await jsm.streams.delete("BO");
});

void test("max_ack_pending holds delivery back until acks free room", async () => {
  const { jsm, js, nc } = env;
  await jsm.streams.add({ name: "MAP", subjects: ["map.>"] });
  await publish(Array.from({ length: 6 }, () => "map.x"));
  await jsm.consumers.add("MAP", { durable_name: "M", ack_policy: AckPolicy.Explicit, max_ack_pending: 2 });
  const c = await js.consumers.get("MAP", "M");
  const a = await fetchN(c, 2);
  assert.deepEqual(seqs(a), [1, 2]);
  assert.deepEqual(await pullOne(nc, "MAP", "M", { expiresMs: 300 }), { status: 408 }, "a third message went out past max_ack_pending");
  let ci = await c.info();
  assert.equal(ci.num_ack_pending, 2);
  assert.equal(ci.num_pending, 4);
  // A waiting request is served as soon as one ack frees a slot.
  const next = c.next({ expires: 5_000 });
  await until("request waiting", async () => (await c.info()).num_waiting === 1);
  a[0]!.ack();
  assert.equal((await next)?.seq, 3);
  // no_wait does not mean "404 while max_ack_pending holds messages back": like nats-server,
  // the request waits for room (404 is for the end of the stream).
  const held = pullOne(nc, "MAP", "M", { no_wait: true });
  await until("no_wait request waiting", async () => (await c.info()).num_waiting === 1);
  a[1]!.ack();
  const h = await held;
  assert.ok("seq" in h && h.seq === 4, JSON.stringify(h));
  ci = await c.info();
  assert.equal(ci.num_ack_pending, 2);
  await jsm.streams.delete("MAP");
});

void test("filter_subjects: several filters, delivered in stream order, pending counts only matches", async () => {
  const { jsm, js } = env;
  await jsm.streams.add({ name: "FS", subjects: ["fs.>"] });
  await publish(["fs.a", "fs.b", "fs.c", "fs.a", "fs.c.d", "fs.b", "fs.e"]);
  const ci0 = await jsm.consumers.add("FS", { durable_name: "F", ack_policy: AckPolicy.Explicit, filter_subjects: ["fs.a", "fs.c.>"] });
  assert.deepEqual(ci0.config.filter_subjects, ["fs.a", "fs.c.>"]);
  assert.equal(ci0.num_pending, 3);
  const c = await js.consumers.get("FS", "F");
  const ms = await fetchN(c, 3);
  assert.deepEqual(
    ms.map((m) => `${m.subject}:${m.seq}`),
    ["fs.a:1", "fs.a:4", "fs.c.d:5"],
  );
  for (const m of ms) m.ack();
  await js.publish("fs.b", "no");
  await js.publish("fs.c.x", "yes");
  const m = await c.next({ expires: 2_000 });
  assert.equal(`${m?.subject}:${m?.seq}`, "fs.c.x:9");
  // Overlapping filters are refused.
  await rejects(jsm.consumers.add("FS", { durable_name: "BAD", ack_policy: AckPolicy.Explicit, filter_subjects: ["fs.*", "fs.a"] }), 10138);
  await jsm.streams.delete("FS");
});

void test("deliver policies: all, last, new, by_start_sequence, by_start_time, last_per_subject", async () => {
  const { jsm, js } = env;
  await jsm.streams.add({ name: "DP", subjects: ["dp.>"] });
  await publish(["dp.a", "dp.b", "dp.a"]);
  await new Promise((r) => setTimeout(r, 5)); // a distinct store time for message 4
  const m4 = await env.js.publish("dp.b", "m4");
  await publish(["dp.c"]);
  const t4 = (await jsm.streams.getMessage("DP", { seq: m4.seq }))!.timestamp;

  async function firstSeqs(cfg: Record<string, unknown>, n: number): Promise<{ seqs: number[]; pending: number }> {
    const ci = await jsm.consumers.add("DP", { ack_policy: AckPolicy.None, ...cfg });
    const c = await js.consumers.get("DP", ci.name);
    const ms: JsMsg[] = await fetchN(c, n, 3_000);
    await jsm.consumers.delete("DP", ci.name);
    return { seqs: seqs(ms), pending: ci.num_pending };
  }

  assert.deepEqual(await firstSeqs({ deliver_policy: DeliverPolicy.All }, 5), { seqs: [1, 2, 3, 4, 5], pending: 5 });
  assert.deepEqual(await firstSeqs({ deliver_policy: DeliverPolicy.Last }, 1), { seqs: [5], pending: 1 });
  assert.deepEqual(await firstSeqs({ deliver_policy: DeliverPolicy.Last, filter_subject: "dp.a" }, 1), { seqs: [3], pending: 1 });
  assert.deepEqual(await firstSeqs({ deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: 4 }, 2), { seqs: [4, 5], pending: 2 });
  assert.deepEqual(await firstSeqs({ deliver_policy: DeliverPolicy.StartTime, opt_start_time: t4 }, 2), { seqs: [4, 5], pending: 2 });
  assert.deepEqual(await firstSeqs({ deliver_policy: DeliverPolicy.LastPerSubject, filter_subjects: ["dp.a", "dp.b"] }, 2), {
    seqs: [3, 4],
    pending: 2,
  });
  assert.deepEqual(await firstSeqs({ deliver_policy: DeliverPolicy.LastPerSubject, filter_subject: "dp.>" }, 3), {
    seqs: [3, 4, 5],
    pending: 3,
  });

  // new: nothing of what is stored, only what comes after.
  const ci = await jsm.consumers.add("DP", { ack_policy: AckPolicy.None, deliver_policy: DeliverPolicy.New });
  assert.equal(ci.num_pending, 0);
  assert.equal(ci.delivered.stream_seq, 5);
  const c = await js.consumers.get("DP", ci.name);
  const p = c.next({ expires: 5_000 });
  await until("request waiting", async () => (await c.info()).num_waiting === 1);
  await js.publish("dp.z", "new");
  assert.equal((await p)?.seq, 6);

  // Start options that do not go with the policy are refused with 10094.
  await rejects(jsm.consumers.add("DP", { ack_policy: AckPolicy.None, deliver_policy: DeliverPolicy.All, opt_start_seq: 2 }), 10094);
  await rejects(jsm.consumers.add("DP", { ack_policy: AckPolicy.None, deliver_policy: DeliverPolicy.StartSequence }), 10094);
  await jsm.streams.delete("DP");
});

void test("last_per_subject over more subjects than one call builds (6,000): the same start, and two creates of one durable at once make one consumer", async () => {
  const { jsm, js, nc } = env;
  await jsm.streams.add({ name: "LPSBIG", subjects: ["lpb.>"], storage: StorageType.Memory });
  const n = 6000;
  for (let round = 0; round < 2; round++) {
    for (let i = 0; i < n; i++) nc.publish(`lpb.${i}`, `r${round}`);
    await nc.flush();
  }
  await until("12,000 stored", async () => (await jsm.streams.info("LPSBIG")).state.messages === 2 * n);
  // The newest of each subject is the second round: sequences n+1 .. 2n, in order.
  const ci = await jsm.consumers.add("LPSBIG", { ack_policy: AckPolicy.None, deliver_policy: DeliverPolicy.LastPerSubject, filter_subject: "lpb.>" });
  assert.equal(ci.num_pending, n);
  const got = await fetchN(await js.consumers.get("LPSBIG", ci.name), n, 20_000);
  assert.deepEqual(seqs(got), Array.from({ length: n }, (_, i) => n + 1 + i));
  assert.ok(got.every((m) => m.string() === "r1"));
  // Then what comes after, as any consumer.
  await js.publish("lpb.0", "after");
  const next = await fetchN(await js.consumers.get("LPSBIG", ci.name), 1, 5_000);
  assert.deepEqual(seqs(next), [2 * n + 1]);
  // Two creates of the same durable in one go: both answered with it, one consumer.
  const cfg = { durable_name: "TWICE", ack_policy: AckPolicy.Explicit, deliver_policy: DeliverPolicy.LastPerSubject, filter_subject: "lpb.>" };
  const [a, b] = await Promise.all([jsm.consumers.add("LPSBIG", cfg), jsm.consumers.add("LPSBIG", cfg)]);
  assert.equal(a.name, "TWICE");
  assert.equal(b.name, "TWICE");
  // One message per subject still (lpb.0's newest is the one published after).
  assert.equal(a.num_pending, n);
  assert.deepEqual(await collectNames(jsm, "LPSBIG"), [ci.name, "TWICE"].sort());
  await jsm.streams.delete("LPSBIG");
});

async function collectNames(jsm: JsEnv["jsm"], stream: string): Promise<string[]> {
  const names: string[] = [];
  for await (const x of jsm.consumers.list(stream)) names.push(x.name);
  return names.sort();
}

void test("replay_policy original spaces deliveries as the messages were stored", async () => {
  const { jsm, js } = env;
  await jsm.streams.add({ name: "RP", subjects: ["rp.>"] });
  await js.publish("rp.x", "1");
  await new Promise((r) => setTimeout(r, 600));
  await js.publish("rp.x", "2");
  await js.publish("rp.x", "3");
  await jsm.consumers.add("RP", { durable_name: "R", ack_policy: AckPolicy.None, replay_policy: ReplayPolicy.Original });
  const c = await js.consumers.get("RP", "R");
  const at: number[] = [];
  const got: number[] = [];
  for await (const m of await c.fetch({ max_messages: 3, expires: 5_000 })) {
    at.push(performance.now());
    got.push(m.seq);
  }
  assert.deepEqual(got, [1, 2, 3]);
  // Only a lower bound: the server must wait about as long as the publisher did (600 ms).
  assert.ok(at[1]! - at[0]! >= 400, `message 2 came ${Math.round(at[1]! - at[0]!)} ms after message 1`);
  await jsm.streams.delete("RP");
});

void test("sample_freq publishes ack metrics for that share of acks", async () => {
  const { jsm, js, nc } = env;
  await jsm.streams.add({ name: "SF", subjects: ["sf.>"] });
  await publish(Array.from({ length: 10 }, () => "sf.x"));
  const all = new Advisories(nc, "$JS.EVENT.METRIC.CONSUMER.ACK.SF.ALL");
  const half = new Advisories(nc, "$JS.EVENT.METRIC.CONSUMER.ACK.SF.HALF");
  await jsm.consumers.add("SF", { durable_name: "ALL", ack_policy: AckPolicy.Explicit, sample_freq: "100%" });
  await jsm.consumers.add("SF", { durable_name: "HALF", ack_policy: AckPolicy.Explicit, sample_freq: "50" });
  for (const name of ["ALL", "HALF"]) {
    const ms = await fetchN(await js.consumers.get("SF", name), 10);
    for (const m of ms) assert.equal(await m.ackAck(), true);
  }
  const got = await all.wait(10);
  const first = got[0]!.body;
  assert.equal(first["type"], "io.nats.jetstream.metric.v1.consumer_ack");
  assert.deepEqual([first["stream"], first["consumer"], first["stream_seq"], first["consumer_seq"], first["deliveries"]], ["SF", "ALL", 1, 1, 1]);
  assert.ok(typeof first["ack_time"] === "number" && first["ack_time"] > 0);
  // tsnats samples exactly every (100/freq)th ack (nats-server draws at random).
  await half.wait(5);
  await nc.flush();
  assert.equal(half.got.length, 5);
  all.stop();
  half.stop();
  await jsm.streams.delete("SF");
});

void test("ack policy all acknowledges everything below; none needs no acks", async () => {
  const { jsm, js } = env;
  await jsm.streams.add({ name: "AP", subjects: ["ap.>"] });
  await publish(Array.from({ length: 5 }, () => "ap.x"));
  await jsm.consumers.add("AP", { durable_name: "ALL", ack_policy: AckPolicy.All });
  const c = await js.consumers.get("AP", "ALL");
  const ms = await fetchN(c, 5);
  assert.equal(await ms[2]!.ackAck(), true);
  let ci = await c.info();
  assert.deepEqual([ci.ack_floor.consumer_seq, ci.ack_floor.stream_seq, ci.num_ack_pending], [3, 3, 2]);
  assert.equal(await ms[4]!.ackAck(), true);
  ci = await c.info();
  assert.deepEqual([ci.ack_floor.stream_seq, ci.num_ack_pending], [5, 0]);

  await jsm.consumers.add("AP", { durable_name: "NONE", ack_policy: AckPolicy.None });
  const n = await js.consumers.get("AP", "NONE");
  assert.equal((await fetchN(n, 5)).length, 5);
  ci = await n.info();
  assert.deepEqual([ci.ack_floor.stream_seq, ci.num_ack_pending, ci.num_pending], [5, 0, 0]);
  await jsm.streams.delete("AP");
});

void test("pause holds delivery until resume; info reports paused", async () => {
  const { jsm, js, nc } = env;
  await jsm.streams.add({ name: "PZ", subjects: ["pz.>"] });
  await publish(["pz.a", "pz.b"]);
  await jsm.consumers.add("PZ", { durable_name: "P", ack_policy: AckPolicy.Explicit });
  const until1h = new Date(Date.now() + 3_600_000);
  const r = await jsm.consumers.pause("PZ", "P", until1h);
  assert.equal(r.paused, true);
  const c = await js.consumers.get("PZ", "P");
  let ci = await c.info();
  assert.equal(ci.paused, true);
  assert.ok((ci.pause_remaining ?? 0) > 0);
  // A request is accepted but nothing is delivered while paused.
  const p = c.next({ expires: 5_000 });
  await until("request waiting", async () => (await c.info()).num_waiting === 1);
  assert.equal((await c.info()).delivered.stream_seq, 0);
  const rr = await jsm.consumers.resume("PZ", "P");
  assert.equal(rr.paused, false);
  assert.equal((await p)?.seq, 1);
  ci = await c.info();
  assert.notEqual(ci.paused, true);
  const m = await pullOne(nc, "PZ", "P", { no_wait: true });
  assert.ok("seq" in m && m.seq === 2, JSON.stringify(m));
  // A pause with a near deadline ends by itself.
  await js.publish("pz.c", "3");
  assert.equal((await jsm.consumers.pause("PZ", "P", new Date(Date.now() + 600))).paused, true);
  assert.equal((await c.info()).paused, true);
  assert.equal((await c.next({ expires: 5_000 }))?.seq, 3);
  assert.notEqual((await c.info()).paused, true);
  await jsm.streams.delete("PZ");
});

void test("an unused ephemeral goes after inactive_threshold; a used one stays", async () => {
  const { jsm, js, nc } = env;
  await jsm.streams.add({ name: "EPH", subjects: ["eph.>"] });
  const created = new Advisories(nc, "$JS.EVENT.ADVISORY.CONSUMER.CREATED.EPH.*");
  const deleted = new Advisories(nc, "$JS.EVENT.ADVISORY.CONSUMER.DELETED.EPH.*");
  await nc.flush();
  const idle = await jsm.consumers.add("EPH", { ack_policy: AckPolicy.Explicit, inactive_threshold: nanos(400) });
  const busy = await jsm.consumers.add("EPH", { ack_policy: AckPolicy.Explicit, inactive_threshold: nanos(400) });
  assert.equal(idle.config.durable_name, undefined);
  assert.equal(idle.config.inactive_threshold, nanos(400));
  const bc = await js.consumers.get("EPH", busy.name);
  const waiting = bc.next({ expires: 2_000 }); // an open request keeps it active
  await until("idle ephemeral removed", async () => {
    const names: string[] = [];
    for await (const n of jsm.consumers.list("EPH")) names.push(n.name);
    return !names.includes(idle.name);
  });
  await rejects(jsm.consumers.info("EPH", idle.name), 10014);
  assert.equal((await jsm.consumers.info("EPH", busy.name)).name, busy.name);
  assert.equal(await waiting, null);
  // Advisories: two created, then the idle one deleted, in nats-server's consumer_action JSON.
  const [c1, c2] = await created.wait(2);
  assert.deepEqual(
    [c1!.body["type"], c1!.body["stream"], c1!.body["action"], c1!.subject],
    ["io.nats.jetstream.advisory.v1.consumer_action", "EPH", "create", `$JS.EVENT.ADVISORY.CONSUMER.CREATED.EPH.${idle.name}`],
  );
  assert.equal(c2!.body["consumer"], busy.name);
  const [d1] = await deleted.wait(1);
  assert.deepEqual([d1!.body["consumer"], d1!.body["action"]], [idle.name, "delete"]);
  created.stop();
  deleted.stop();
  await jsm.streams.delete("EPH");
});
