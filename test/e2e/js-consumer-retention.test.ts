// What consumers do to their stream: interest retention (a message goes once every consumer
// whose filter matches has acknowledged it), workqueue retention (a message goes on its ack;
// consumers with overlapping filters are refused), and tsnats' dead-lettering of messages
// that reached max_deliver or were terminated.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { headers, nanos } from "@nats-io/transport-node";
import { AckPolicy, RetentionPolicy, type ConsumerConfig, type JsMsg } from "@nats-io/jetstream";
import { bootJs, fetchN, rejects, seqs, until, type JsEnv } from "../helpers/js-consumer.js";

let env: JsEnv;

before(async () => {
  env = await bootJs("jscons-ret");
});

after(async () => {
  await env.close();
});

async function stored(stream: string): Promise<number[]> {
  const out: number[] = [];
  const si = await env.jsm.streams.info(stream);
  for (let s = si.state.first_seq; s > 0 && s <= si.state.last_seq; s++) {
    const m = await env.jsm.streams.getMessage(stream, { seq: s }).catch(() => null);
    if (m !== null) out.push(m.seq);
  }
  return out;
}

async function one(stream: string, consumer: string): Promise<JsMsg> {
  const m = await (await env.js.consumers.get(stream, consumer)).next({ expires: 3_000 });
  assert.ok(m !== null, `${consumer}: no message`);
  return m;
}

void test("interest: kept until every consumer whose filter matches acked it; a deleted consumer releases its share", async () => {
  const { jsm, js } = env;
  await jsm.streams.add({ name: "INT", subjects: ["int.>"], retention: RetentionPolicy.Interest });
  // No consumer yet: nobody is interested, nothing is kept (the sequence still advances).
  const pa = await js.publish("int.a", "nobody");
  assert.equal(pa.seq, 1);
  let si = await jsm.streams.info("INT");
  assert.deepEqual([si.state.messages, si.state.last_seq], [0, 1]);

  await jsm.consumers.add("INT", { durable_name: "ALL", ack_policy: AckPolicy.Explicit });
  await jsm.consumers.add("INT", { durable_name: "A", ack_policy: AckPolicy.Explicit, filter_subject: "int.a" });
  await js.publish("int.a", "2"); // ALL and A
  await js.publish("int.b", "3"); // ALL only
  assert.deepEqual(await stored("INT"), [2, 3]);

  const all2 = await one("INT", "ALL");
  assert.equal(all2.seq, 2);
  assert.equal(await all2.ackAck(), true);
  assert.deepEqual(await stored("INT"), [2, 3], "A has not acked 2 yet");
  const all3 = await one("INT", "ALL");
  assert.equal(all3.seq, 3);
  all3.nak(); // a nak keeps it
  const again3 = await one("INT", "ALL");
  assert.deepEqual([again3.seq, again3.info.deliveryCount], [3, 2]);
  assert.deepEqual(await stored("INT"), [2, 3]);
  assert.equal(await again3.ackAck(), true);
  assert.deepEqual(await stored("INT"), [2], "3 was only ALL's");
  const a2 = await one("INT", "A");
  assert.equal(a2.seq, 2);
  assert.equal(await a2.ackAck(), true);
  assert.deepEqual(await stored("INT"), []);

  // Acked by A, never by ALL: deleting ALL lets it go.
  await js.publish("int.a", "4");
  const a4 = await one("INT", "A");
  assert.equal(await a4.ackAck(), true);
  assert.deepEqual(await stored("INT"), [4]);
  await jsm.consumers.delete("INT", "ALL");
  await until("message 4 released", async () => (await jsm.streams.info("INT")).state.messages === 0);
  si = await jsm.streams.info("INT");
  assert.equal(si.state.last_seq, 4);
  await jsm.streams.delete("INT");
});

void test("interest with ack_policy none: delivery is enough", async () => {
  const { jsm, js } = env;
  await jsm.streams.add({ name: "INTN", subjects: ["intn.>"], retention: RetentionPolicy.Interest });
  await jsm.consumers.add("INTN", { durable_name: "N", ack_policy: AckPolicy.None });
  await js.publish("intn.x", "1");
  await js.publish("intn.x", "2");
  assert.deepEqual(await stored("INTN"), [1, 2]);
  const ms = await fetchN(await js.consumers.get("INTN", "N"), 2);
  assert.deepEqual(seqs(ms), [1, 2]);
  await until("delivered messages removed", async () => (await jsm.streams.info("INTN")).state.messages === 0);
  await jsm.streams.delete("INTN");
});

void test("workqueue: a message goes on ack or term, stays on nak or no ack; overlapping consumers refused", async () => {
  const { jsm, js } = env;
  await jsm.streams.add({ name: "WQ", subjects: ["wq.>"], retention: RetentionPolicy.Workqueue });
  await jsm.consumers.add("WQ", { durable_name: "WA", ack_policy: AckPolicy.Explicit, filter_subject: "wq.a", ack_wait: nanos(30_000) });
  await jsm.consumers.add("WQ", { durable_name: "WB", ack_policy: AckPolicy.Explicit, filter_subject: "wq.b.>" });
  // Overlaps: refused with nats-server's codes.
  await rejects(jsm.consumers.add("WQ", { durable_name: "X1", ack_policy: AckPolicy.Explicit, filter_subject: "wq.*" }), 10100);
  await rejects(jsm.consumers.add("WQ", { durable_name: "X2", ack_policy: AckPolicy.Explicit, filter_subjects: ["wq.c", "wq.b.1"] }), 10100);
  await rejects(jsm.consumers.add("WQ", { durable_name: "X3", ack_policy: AckPolicy.Explicit }), 10099);
  await rejects(jsm.consumers.add("WQ", { durable_name: "X4", ack_policy: AckPolicy.None, filter_subject: "wq.c" }), 10084);
  await rejects(jsm.consumers.add("WQ", { durable_name: "X5", ack_policy: AckPolicy.All, filter_subject: "wq.c" }), 10098);
  // Not overlapping: fine. Re-creating an existing one with the same config is fine too.
  await jsm.consumers.add("WQ", { durable_name: "WC", ack_policy: AckPolicy.Explicit, filter_subject: "wq.c" });
  await jsm.consumers.add("WQ", { durable_name: "WA", ack_policy: AckPolicy.Explicit, filter_subject: "wq.a", ack_wait: nanos(30_000) });

  for (let i = 0; i < 4; i++) await js.publish("wq.a", `a${i}`); // 1..4
  await js.publish("wq.b.1", "b"); // 5
  const ms = await fetchN(await js.consumers.get("WQ", "WA"), 4);
  assert.deepEqual(seqs(ms), [1, 2, 3, 4]);
  assert.equal(await ms[0]!.ackAck(), true);
  ms[1]!.nak(60_000);
  ms[2]!.term("bad");
  // ms[3]: no ack at all.
  await until("1 and 3 removed", async () => (await jsm.streams.info("WQ")).state.messages === 3);
  assert.deepEqual(await stored("WQ"), [2, 4, 5]);
  const b = await one("WQ", "WB");
  assert.equal(b.seq, 5);
  assert.equal(await b.ackAck(), true);
  assert.deepEqual(await stored("WQ"), [2, 4]);

  // With WA gone, a new consumer on the same subjects is allowed and starts at what is left.
  await jsm.consumers.delete("WQ", "WA");
  await jsm.consumers.add("WQ", { durable_name: "WA2", ack_policy: AckPolicy.Explicit, filter_subject: "wq.>" }).then(
    () => assert.fail("wq.> overlaps WB and WC"),
    () => undefined,
  );
  await jsm.consumers.add("WQ", { durable_name: "WA2", ack_policy: AckPolicy.Explicit, filter_subject: "wq.a" });
  const left = await fetchN(await js.consumers.get("WQ", "WA2"), 2);
  assert.deepEqual(seqs(left), [2, 4]);
  for (const m of left) m.ack();
  await until("queue empty", async () => (await jsm.streams.info("WQ")).state.messages === 0);
  await jsm.streams.delete("WQ");
});

void test("dead-lettering: max_deliver and term republish the message with its origin to x_dead_letter_subject", async () => {
  const { jsm, js } = env;
  await jsm.streams.add({ name: "WORK", subjects: ["work.>"] });
  await jsm.streams.add({ name: "DLQ", subjects: ["dlq.>"] });
  const cfg = {
    durable_name: "JOBS",
    ack_policy: AckPolicy.Explicit,
    ack_wait: nanos(300),
    max_deliver: 2,
    x_dead_letter_subject: "dlq.jobs",
  } as Partial<ConsumerConfig>;
  const ci = await jsm.consumers.add("WORK", cfg);
  assert.equal((ci.config as Record<string, unknown>)["x_dead_letter_subject"], "dlq.jobs", "the field is kept in the config");
  // An invalid subject is refused.
  await rejects(jsm.consumers.add("WORK", { ...cfg, durable_name: "BAD", x_dead_letter_subject: "dlq.*" } as Partial<ConsumerConfig>), 10012);

  const h = headers();
  h.set("Trace-Id", "t-1");
  await js.publish("work.resize", "picture-1", { headers: h }); // 1: never acked
  await js.publish("work.resize", "picture-2"); // 2: terminated
  await js.publish("work.resize", "picture-3"); // 3: acked
  const c = await js.consumers.get("WORK", "JOBS");
  const seen: string[] = [];
  for (let i = 0; i < 6 && seen.length < 4; i++) {
    const m = await c.next({ expires: 2_000 });
    if (m === null) continue;
    seen.push(`${m.seq}/${m.info.deliveryCount}`);
    if (m.seq === 2) m.term("corrupt input");
    else if (m.seq === 3) m.ack();
  }
  assert.deepEqual(seen, ["1/1", "2/1", "3/1", "1/2"]);
  await until("two dead letters", async () => (await jsm.streams.info("DLQ")).state.messages === 2);

  const byOrigin = new Map<string, { data: string; h: Record<string, string> }>();
  for (const seq of [1, 2]) {
    const m = await jsm.streams.getMessage("DLQ", { seq });
    assert.ok(m !== null);
    assert.equal(m.subject, "dlq.jobs");
    const hh: Record<string, string> = {};
    for (const k of m.header.keys()) hh[k] = m.header.get(k);
    byOrigin.set(hh["X-Tsnats-DLQ-Sequence"] ?? "", { data: m.string(), h: hh });
  }
  const term = byOrigin.get("2");
  assert.ok(term !== undefined);
  assert.equal(term.data, "picture-2");
  assert.equal(term.h["X-Tsnats-DLQ-Stream"], "WORK");
  assert.equal(term.h["X-Tsnats-DLQ-Consumer"], "JOBS");
  assert.equal(term.h["X-Tsnats-DLQ-Subject"], "work.resize");
  assert.equal(term.h["X-Tsnats-DLQ-Deliveries"], "1");
  assert.equal(term.h["X-Tsnats-DLQ-Reason"], "term");
  assert.equal(term.h["X-Tsnats-DLQ-Term-Reason"], "corrupt input");
  const md = byOrigin.get("1");
  assert.ok(md !== undefined);
  assert.equal(md.data, "picture-1");
  assert.equal(md.h["X-Tsnats-DLQ-Reason"], "max_deliver");
  assert.equal(md.h["X-Tsnats-DLQ-Deliveries"], "2");
  assert.equal(md.h["Trace-Id"], "t-1", "the original headers travel along");
  assert.equal(md.h["X-Tsnats-DLQ-Term-Reason"], undefined);

  // The source consumer is done with both; nothing was dead-lettered twice.
  const info = await c.info();
  assert.deepEqual([info.num_ack_pending, info.num_pending, info.ack_floor.stream_seq], [0, 0, 3]);
  assert.equal(await c.next({ expires: 1_000 }), null);
  assert.equal((await jsm.streams.info("DLQ")).state.messages, 2);
  await jsm.streams.delete("WORK");
  await jsm.streams.delete("DLQ");
});
