// Push consumers end to end: the `nats` 2.x client's js.subscribe (durable, queue group,
// ordered), @nats-io/jetstream 3.x push consumers (named and ordered), and a plain core
// subscription on a deliver_subject that sees the raw protocol: ack subjects, idle
// heartbeats, flow control requests and the stall they cause; rate_limit_bps.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { createInbox, nanos, type Msg } from "@nats-io/transport-node";
import { AckPolicy, type JsMsg } from "@nats-io/jetstream";
import * as nats2 from "nats";
import { bootJs, until, type JsEnv } from "../helpers/js-consumer.js";

let env: JsEnv;
let nc2: nats2.NatsConnection;
let js2: nats2.JetStreamClient;

before(async () => {
  env = await bootJs("jscons-push");
  nc2 = await nats2.connect({ servers: env.srv.url });
  js2 = nc2.jetstream();
});

after(async () => {
  await nc2.close();
  await env.close();
});

async function publish(subject: string, n: number, from = 1): Promise<void> {
  for (let i = 0; i < n; i++) await env.js.publish(subject, `m${from + i}`);
}

/** Reads a nats 2.x subscription in the background. */
function collect2(sub: nats2.JetStreamSubscription, ack = true): { msgs: nats2.JsMsg[]; done: Promise<void> } {
  const msgs: nats2.JsMsg[] = [];
  const done = (async () => {
    for await (const m of sub) {
      msgs.push(m);
      if (ack) m.ack();
    }
  })();
  return { msgs, done };
}

void test("nats 2.x durable push: delivery, acks, push_bound, unsubscribe keeps state, bind resumes", async () => {
  const { jsm } = env;
  await jsm.streams.add({ name: "PUSH", subjects: ["push.>"] });
  await publish("push.a", 5);
  const opts = nats2.consumerOpts();
  opts.durable("PD");
  opts.manualAck();
  opts.ackExplicit();
  opts.deliverTo(nats2.createInbox());
  const sub = await js2.subscribe("push.>", opts);
  const r = collect2(sub);
  await until("5 messages", () => r.msgs.length === 5);
  assert.deepEqual(
    r.msgs.map((m) => [m.seq, m.info.deliverySequence, m.string()]),
    [1, 2, 3, 4, 5].map((i) => [i, i, `m${i}`]),
  );
  await until("acks applied", async () => (await jsm.consumers.info("PUSH", "PD")).ack_floor.stream_seq === 5);
  let ci = await jsm.consumers.info("PUSH", "PD");
  assert.equal(ci.push_bound, true);
  assert.equal(ci.num_ack_pending, 0);
  assert.equal(ci.num_waiting, 0);
  assert.equal(typeof ci.config.deliver_subject, "string");

  sub.unsubscribe();
  await r.done;
  await until("push_bound cleared", async () => (await jsm.consumers.info("PUSH", "PD")).push_bound !== true);
  await publish("push.b", 3, 6);
  ci = await jsm.consumers.info("PUSH", "PD");
  assert.equal(ci.num_pending, 3, "nothing is delivered without a subscriber");
  assert.equal(ci.delivered.stream_seq, 5);

  const bopts = nats2.consumerOpts();
  bopts.bind("PUSH", "PD");
  bopts.manualAck();
  const again = await js2.subscribe("push.>", bopts);
  const r2 = collect2(again);
  await until("the other 3", () => r2.msgs.length === 3);
  assert.deepEqual(
    r2.msgs.map((m) => m.seq),
    [6, 7, 8],
  );
  again.unsubscribe();
  await r2.done;
  await jsm.streams.delete("PUSH");
});

void test("nats 2.x queue group: each message goes to one member of deliver_group", async () => {
  const { jsm } = env;
  await jsm.streams.add({ name: "QG", subjects: ["qg.>"] });
  const deliver = nats2.createInbox();
  const mk = (): nats2.ConsumerOptsBuilder => {
    const o = nats2.consumerOpts();
    o.durable("W");
    o.queue("workers");
    o.deliverTo(deliver);
    o.manualAck();
    o.ackExplicit();
    return o;
  };
  const s1 = await js2.subscribe("qg.>", mk());
  const s2 = await js2.subscribe("qg.>", mk());
  const a = collect2(s1);
  const b = collect2(s2);
  const ci = await jsm.consumers.info("QG", "W");
  assert.equal(ci.config.deliver_group, "workers");
  await publish("qg.x", 40);
  await until("40 messages between both", () => a.msgs.length + b.msgs.length >= 40);
  const all = [...a.msgs, ...b.msgs].map((m) => m.seq).sort((x, y) => x - y);
  assert.deepEqual(all, Array.from({ length: 40 }, (_, i) => i + 1), "each message exactly once");
  assert.ok(a.msgs.length > 0 && b.msgs.length > 0, `one member got nothing (${a.msgs.length}/${b.msgs.length})`);
  s1.unsubscribe();
  s2.unsubscribe();
  await Promise.all([a.done, b.done]);
  await jsm.streams.delete("QG");
});

void test("nats 2.x ordered push consumer reads the stream in order", async () => {
  const { jsm } = env;
  await jsm.streams.add({ name: "OP", subjects: ["op.>"] });
  await publish("op.x", 25);
  const o = nats2.consumerOpts();
  o.orderedConsumer();
  const sub = await js2.subscribe("op.>", o);
  const r = collect2(sub, false);
  await until("25 ordered", () => r.msgs.length === 25);
  assert.deepEqual(
    r.msgs.map((m) => m.seq),
    Array.from({ length: 25 }, (_, i) => i + 1),
  );
  const ci = (await sub.consumerInfo()) as nats2.ConsumerInfo;
  assert.equal(ci.config.ack_policy, "none");
  assert.equal(ci.config.flow_control, true);
  assert.ok((ci.config.idle_heartbeat ?? 0) > 0);
  sub.unsubscribe();
  await r.done;
  await jsm.streams.delete("OP");
});

void test("@nats-io/jetstream push consumers: named with acks, and ordered", async () => {
  const { jsm, js } = env;
  await jsm.streams.add({ name: "JP", subjects: ["jp.>"] });
  await publish("jp.x", 6);
  await jsm.consumers.add("JP", { durable_name: "N", ack_policy: AckPolicy.Explicit, deliver_subject: createInbox() });
  const pc = await js.consumers.getPushConsumer("JP", "N");
  const got: JsMsg[] = [];
  const it = await pc.consume();
  for await (const m of it) {
    got.push(m);
    m.ack();
    if (got.length === 6) break;
  }
  assert.deepEqual(
    got.map((m) => m.seq),
    [1, 2, 3, 4, 5, 6],
  );
  await until("acks applied", async () => (await jsm.consumers.info("JP", "N")).num_ack_pending === 0);

  const oc = await js.consumers.getPushConsumer("JP");
  const seen: number[] = [];
  const oit = await oc.consume();
  for await (const m of oit) {
    seen.push(m.seq);
    if (seen.length === 6) break;
  }
  assert.deepEqual(seen, [1, 2, 3, 4, 5, 6]);
  await jsm.streams.delete("JP");
});

void test("raw deliver_subject: ack subjects, acks by reply, idle heartbeats", async () => {
  const { jsm, nc } = env;
  await jsm.streams.add({ name: "RAW", subjects: ["raw.>"] });
  await publish("raw.x", 3);
  const inbox = createInbox();
  const msgs: Msg[] = [];
  const hbs: Msg[] = [];
  const sub = nc.subscribe(inbox, {
    callback: (_e, m) => {
      if (m.headers?.code === 100) hbs.push(m);
      else msgs.push(m);
    },
  });
  await jsm.consumers.add("RAW", { durable_name: "R", ack_policy: AckPolicy.Explicit, deliver_subject: inbox, idle_heartbeat: nanos(200) });
  await until("3 messages", () => msgs.length === 3);
  for (const [i, m] of msgs.entries()) {
    assert.equal(m.subject, "raw.x");
    const t = (m.reply ?? "").split(".");
    assert.equal(t.length, 9, m.reply);
    assert.deepEqual(t.slice(0, 7), ["$JS", "ACK", "RAW", "R", "1", String(i + 1), String(i + 1)]);
    assert.equal(t[8], String(2 - i), "pending after this one");
    m.respond(); // an empty reply is an ack
  }
  await until("an idle heartbeat", () => hbs.length > 0);
  const hb = hbs[0]!;
  assert.equal(hb.headers?.description, "Idle Heartbeat");
  assert.equal(hb.headers?.get("Nats-Last-Consumer"), "3");
  assert.equal(hb.headers?.get("Nats-Last-Stream"), "3");
  await until("acks applied", async () => (await jsm.consumers.info("RAW", "R")).ack_floor.stream_seq === 3);
  sub.unsubscribe();
  await jsm.streams.delete("RAW");
});

void test("raw flow control: delivery stalls until the FlowControl request is answered", async () => {
  const { jsm, js, nc } = env;
  await jsm.streams.add({ name: "FC", subjects: ["fc.>"] });
  const payload = new Uint8Array(64 * 1024);
  const total = 80; // 5 MiB, more than the first window
  for (let i = 0; i < total; i++) await js.publish("fc.x", payload);
  const inbox = createInbox();
  let data = 0;
  const fcs: Msg[] = [];
  let stalled = "";
  const sub = nc.subscribe(inbox, {
    callback: (_e, m) => {
      const code = m.headers?.code ?? 0;
      if (code !== 100) {
        data++;
        return;
      }
      if (m.headers?.description === "FlowControl Request") fcs.push(m);
      else stalled = m.headers?.get("Nats-Consumer-Stalled") ?? stalled;
    },
  });
  await jsm.consumers.add("FC", {
    durable_name: "F",
    ack_policy: AckPolicy.None,
    deliver_subject: inbox,
    flow_control: true,
    idle_heartbeat: nanos(200),
  });
  await until("a flow control request", () => fcs.length > 0);
  await until("a heartbeat naming the stalled flow control", () => stalled !== "");
  assert.equal(stalled, fcs[0]!.reply, "Nats-Consumer-Stalled is the pending flow control reply");
  assert.ok(data < total, `all ${total} delivered without a flow control reply`);
  // Answer every request as it comes: the rest flows.
  let answered = 0;
  await until(
    `all ${total} delivered (have ${data})`,
    () => {
      while (answered < fcs.length) fcs[answered++]!.respond();
      return data === total;
    },
    20_000,
  );
  sub.unsubscribe();
  await jsm.streams.delete("FC");
});

void test("rate_limit_bps paces a push consumer", async () => {
  const { jsm, js, nc } = env;
  await jsm.streams.add({ name: "RL", subjects: ["rl.>"], max_msg_size: 10_000 });
  const payload = new Uint8Array(8_000);
  for (let i = 0; i < 6; i++) await js.publish("rl.x", payload);
  const inbox = createInbox();
  const at: number[] = [];
  const sub = nc.subscribe(inbox, {
    callback: () => {
      at.push(performance.now());
    },
  });
  // 20 KB/s with a 10 KB bucket: 48 KB take about 2 s.
  await jsm.consumers.add("RL", { durable_name: "R", ack_policy: AckPolicy.None, deliver_subject: inbox, rate_limit_bps: 8 * 20_000 });
  await until("6 messages", () => at.length === 6, 15_000);
  // Only a lower bound: the server must not be faster than the limit.
  assert.ok(at[5]! - at[0]! >= 1_200, `6 messages in ${Math.round(at[5]! - at[0]!)} ms`);
  sub.unsubscribe();
  await jsm.streams.delete("RL");
});
