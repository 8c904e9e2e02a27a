// Consumer behaviours of newer nats-server (2.10–2.12) end to end over TCP: how pull
// requests end (409 Batch Completed, 408 Requests Pending, no_wait on a partial batch), the
// deliver_group interest of push consumers, purges against pending acks, TERM, max_deliver,
// consumer_limits on stream update and MSG.NEXT for a missing consumer.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { createInbox, headers, type Msg, type NatsConnection } from "@nats-io/transport-node";
import { AckPolicy } from "@nats-io/jetstream";
import { Advisories, bootJs, until, type JsEnv } from "../helpers/js-consumer.js";

let env: JsEnv;

before(async () => {
  env = await bootJs("jscons-gaps");
});

after(async () => {
  await env.close();
});

/** What one pull request received: "seq:<n>" per message, "<code> <description>" per status,
 *  plus the pending headers of the status that ended it. */
interface PullLog {
  items: string[];
  pendingMsgs: string | undefined;
  pendingBytes: string | undefined;
}

/** Sends one raw MSG.NEXT request and collects until a status other than 100 ends it, or
 *  (without max_bytes, where a 409 Batch Completed follows) until the batch is filled. */
async function rawPull(nc: NatsConnection, stream: string, consumer: string, body: Record<string, unknown>, boundMs = 10_000): Promise<PullLog> {
  const inbox = createInbox();
  const log: PullLog = { items: [], pendingMsgs: undefined, pendingBytes: undefined };
  let done = false;
  const sub = nc.subscribe(inbox, {
    callback: (_e, m: Msg) => {
      const h = m.headers;
      if (h !== undefined && h.code > 0 && (m.reply ?? "") === "") {
        if (h.code === 100) return;
        log.items.push(`${h.code} ${h.description}`);
        log.pendingMsgs = h.get("Nats-Pending-Messages") || undefined;
        log.pendingBytes = h.get("Nats-Pending-Bytes") || undefined;
        done = true;
        return;
      }
      log.items.push(`seq:${(m.reply ?? "").split(".")[5]}`);
      if (body["max_bytes"] === undefined && log.items.length === ((body["batch"] as number | undefined) ?? 1)) done = true;
    },
  });
  nc.publish(`$JS.API.CONSUMER.MSG.NEXT.${stream}.${consumer}`, JSON.stringify(body), { reply: inbox });
  try {
    await until(`pull ${JSON.stringify(body)} to end`, () => done, boundMs);
  } finally {
    sub.unsubscribe();
  }
  return log;
}

async function info(stream: string, name: string): Promise<Record<string, unknown>> {
  return (await env.jsm.consumers.info(stream, name)) as unknown as Record<string, unknown>;
}

void test("pull: 409 Batch Completed when a max_bytes request's batch is filled with bytes left", async () => {
  const { jsm, js, nc } = env;
  await jsm.streams.add({ name: "BC", subjects: ["bc.>"] });
  for (let i = 0; i < 3; i++) await js.publish("bc.x", "hello");
  await jsm.consumers.add("BC", { durable_name: "C", ack_policy: AckPolicy.Explicit });
  const a = await rawPull(nc, "BC", "C", { batch: 2, max_bytes: 100_000, expires: 5_000_000_000 });
  assert.deepEqual(a.items, ["seq:1", "seq:2", "409 Batch Completed"]);
  assert.equal(a.pendingMsgs, "0");
  // The bytes left: max_bytes minus what the two messages counted (subject + reply + payload).
  const left = Number(a.pendingBytes);
  assert.ok(left > 100_000 - 400 && left < 100_000 - 2 * 9, `pending bytes ${a.pendingBytes}`);
  // Without max_bytes, a fulfilled batch just ends (no status).
  const inbox = createInbox();
  const got: string[] = [];
  const sub = nc.subscribe(inbox, {
    callback: (_e, m) => {
      got.push(m.headers?.code ? `${m.headers.code}` : "msg");
    },
  });
  nc.publish("$JS.API.CONSUMER.MSG.NEXT.BC.C", JSON.stringify({ batch: 1, expires: 5_000_000_000 }), { reply: inbox });
  // A no_wait request on the same connection after it is the barrier.
  const b = await rawPull(nc, "BC", "C", { batch: 1, no_wait: true });
  assert.deepEqual(b.items, ["404 No Messages"]);
  await nc.flush();
  sub.unsubscribe();
  assert.deepEqual(got, ["msg"]);
});

void test("pull: no_wait on a partial batch ends with 404 (2.11.11+/2.12.2+); 408 Requests Pending", async () => {
  const { jsm, js, nc } = env;
  await jsm.streams.add({ name: "NW", subjects: ["nw.>"] });
  for (let i = 0; i < 2; i++) await js.publish("nw.x", "m");
  await jsm.consumers.add("NW", { durable_name: "C", ack_policy: AckPolicy.Explicit });
  // Two of five, then the end of the stream: 404 No Messages, not 408 Request Timeout.
  assert.deepEqual((await rawPull(nc, "NW", "C", { batch: 5, no_wait: true })).items, ["seq:1", "seq:2", "404 No Messages"]);
  // no_wait with expires: a partial batch ends at once too, with 404.
  await js.publish("nw.x", "m");
  assert.deepEqual((await rawPull(nc, "NW", "C", { batch: 5, no_wait: true, expires: 30_000_000_000 })).items, ["seq:3", "404 No Messages"]);

  // Requests Pending: open requests want more than there is; a no_wait request is refused.
  await jsm.consumers.add("NW", { durable_name: "MAP", ack_policy: AckPolicy.Explicit, max_ack_pending: 1 });
  const inbox = createInbox();
  const first: string[] = [];
  const sub = nc.subscribe(inbox, {
    callback: (_e, m) => {
      first.push(m.headers?.code ? `${m.headers.code}` : "msg");
    },
  });
  nc.publish("$JS.API.CONSUMER.MSG.NEXT.NW.MAP", JSON.stringify({ batch: 10, expires: 30_000_000_000 }), { reply: inbox });
  // It got one message (max_ack_pending 1) and waits for nine more; two remain in the stream.
  await until("the open request got one message", () => first.length === 1);
  await until("the open request is registered", async () => (await info("NW", "MAP"))["num_waiting"] === 1);
  const rp = await rawPull(nc, "NW", "MAP", { batch: 1, no_wait: true });
  assert.deepEqual(rp.items, ["408 Requests Pending"]);
  assert.equal(rp.pendingMsgs, undefined);
  sub.unsubscribe();
});

void test("push with deliver_group: only members of that queue group are interest (delivery and push_bound)", async () => {
  const { jsm, js, nc } = env;
  await jsm.streams.add({ name: "DG", subjects: ["dg.>"] });
  await jsm.consumers.add("DG", { durable_name: "Q", deliver_subject: "deliver.dg", deliver_group: "workers", ack_policy: AckPolicy.Explicit });
  // A plain subscriber and a member of another group on the deliver subject: not interest.
  const plain: number[] = [];
  const s1 = nc.subscribe("deliver.dg", {
    callback: (_e, m) => {
      if (m.reply?.startsWith("$JS.ACK.")) plain.push(Number(m.reply.split(".")[5]));
    },
  });
  const s2 = nc.subscribe("deliver.dg", { queue: "others", callback: () => {} });
  await nc.flush();
  await js.publish("dg.a", "1");
  let ci = await info("DG", "Q");
  assert.equal(ci["push_bound"], undefined);
  assert.equal((ci["delivered"] as { stream_seq: number }).stream_seq, 0);
  assert.equal(ci["num_pending"], 1);
  // A member of "workers" arrives: delivery starts (the plain subscriber sees it too, as core
  // routing gives every plain subscriber a copy) and push_bound is reported.
  const got: number[] = [];
  const s3 = nc.subscribe("deliver.dg", {
    queue: "workers",
    callback: (_e, m) => {
      got.push(Number((m.reply ?? "").split(".")[5]));
      m.respond();
    },
  });
  await nc.flush();
  await until("the group member got the message", () => got.length === 1);
  ci = await info("DG", "Q");
  assert.equal(ci["push_bound"], true);
  s3.unsubscribe();
  await nc.flush();
  await until("push_bound cleared", async () => (await info("DG", "Q"))["push_bound"] === undefined);
  s1.unsubscribe();
  s2.unsubscribe();
  assert.deepEqual(got, [1]);
  assert.deepEqual(plain, [1]);
});

void test("purge by subject drops the pending acks and redeliveries of purged messages", async () => {
  const { jsm, js, nc } = env;
  await jsm.streams.add({ name: "PG", subjects: ["pg.>"] });
  for (const s of ["pg.a", "pg.b", "pg.a", "pg.b"]) await js.publish(s, "x");
  await jsm.consumers.add("PG", { durable_name: "C", ack_policy: AckPolicy.Explicit, ack_wait: 60_000_000_000 });
  const got = await rawPull(nc, "PG", "C", { batch: 4, expires: 5_000_000_000 });
  assert.deepEqual(got.items, ["seq:1", "seq:2", "seq:3", "seq:4"]);
  assert.equal((await info("PG", "C"))["num_ack_pending"], 4);
  assert.equal((await jsm.streams.purge("PG", { filter: "pg.a" })).purged, 2);
  let ci = await info("PG", "C");
  assert.equal(ci["num_ack_pending"], 2);
  assert.deepEqual(ci["ack_floor"] !== undefined && (ci["ack_floor"] as { stream_seq: number }).stream_seq, 1);
  // NAK everything: only the two that are left come back.
  for (let seq = 1; seq <= 4; seq++) nc.publish(`$JS.ACK.PG.C.1.${seq}.${seq}.0.0`, "-NAK");
  await nc.flush();
  assert.deepEqual((await rawPull(nc, "PG", "C", { batch: 10, no_wait: true })).items, ["seq:2", "seq:4", "404 No Messages"]);
  ci = await info("PG", "C");
  assert.equal(ci["num_ack_pending"], 2);
  assert.equal(ci["num_redelivered"], 2);
  // A purge by sequence with a filter works the same way.
  await js.publish("pg.a", "y"); // seq 5
  assert.deepEqual((await rawPull(nc, "PG", "C", { batch: 1, no_wait: true })).items, ["seq:5"]);
  assert.equal((await info("PG", "C"))["num_ack_pending"], 3);
  assert.equal((await jsm.streams.purge("PG", { filter: "pg.b", seq: 5 })).purged, 2);
  ci = await info("PG", "C");
  assert.equal(ci["num_ack_pending"], 1);
  assert.equal(ci["num_redelivered"], 0);
  assert.deepEqual(ci["ack_floor"], { ...(ci["ack_floor"] as object), stream_seq: 4 });
});

void test("+TERM of a message that is not pending still sends MSG_TERMINATED; max_deliver keeps num_redelivered", async () => {
  const { jsm, js, nc } = env;
  await jsm.streams.add({ name: "TM", subjects: ["tm.>"] });
  await js.publish("tm.a", "x");
  await js.publish("tm.b", "y");
  await jsm.consumers.add("TM", { durable_name: "C", ack_policy: AckPolicy.Explicit, ack_wait: 60_000_000_000, max_deliver: 2 });
  const terms = new Advisories(nc, "$JS.EVENT.ADVISORY.CONSUMER.MSG_TERMINATED.TM.C");
  const maxd = new Advisories(nc, "$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.TM.C");
  await nc.flush();
  assert.deepEqual((await rawPull(nc, "TM", "C", { batch: 1, no_wait: true })).items, ["seq:1"]);
  await nc.request("$JS.ACK.TM.C.1.1.1.0.1", "+ACK");
  assert.equal((await info("TM", "C"))["num_ack_pending"], 0);
  await nc.request("$JS.ACK.TM.C.1.1.1.0.1", "+TERM done");
  const [t] = await terms.wait(1);
  assert.deepEqual(
    { ...t!.body, id: undefined, timestamp: undefined },
    { type: "io.nats.jetstream.advisory.v1.terminated", id: undefined, timestamp: undefined, stream: "TM", consumer: "C", consumer_seq: 1, stream_seq: 1, deliveries: 1, reason: "done" },
  );
  // max_deliver 2: delivered, NAKed, redelivered, NAKed -> out of pending, one advisory, and
  // num_redelivered still counts it (nats-server keeps its delivery count).
  assert.deepEqual((await rawPull(nc, "TM", "C", { batch: 1, no_wait: true })).items, ["seq:2"]);
  await nc.request("$JS.ACK.TM.C.1.2.2.0.0", "-NAK");
  assert.deepEqual((await rawPull(nc, "TM", "C", { batch: 1, no_wait: true })).items, ["seq:2"]);
  await nc.request("$JS.ACK.TM.C.2.2.3.0.0", "-NAK");
  const [m] = await maxd.wait(1);
  assert.equal(typeof m!.body["id"], "string");
  assert.equal(typeof m!.body["timestamp"], "string");
  assert.deepEqual(
    { ...m!.body, id: undefined, timestamp: undefined },
    { type: "io.nats.jetstream.advisory.v1.max_deliver", id: undefined, timestamp: undefined, stream: "TM", consumer: "C", stream_seq: 2, deliveries: 2 },
  );
  let ci = await info("TM", "C");
  assert.equal(ci["num_ack_pending"], 0);
  assert.equal(ci["num_redelivered"], 1);
  assert.deepEqual((await rawPull(nc, "TM", "C", { batch: 1, no_wait: true })).items, ["404 No Messages"]);
  // The count goes once the message leaves the stream.
  await jsm.streams.purge("TM");
  ci = await info("TM", "C");
  assert.equal(ci["num_redelivered"], 0);
  assert.equal(maxd.got.length, 1);
  terms.stop();
  maxd.stop();
});

void test("stream update tightening consumer_limits below an existing consumer is refused (10069)", async () => {
  const { jsm } = env;
  await jsm.streams.add({ name: "CL", subjects: ["cl.>"] });
  await jsm.consumers.add("CL", { durable_name: "A", ack_policy: AckPolicy.Explicit, max_ack_pending: 20 });
  await jsm.consumers.add("CL", { durable_name: "B", ack_policy: AckPolicy.Explicit, max_ack_pending: 200, inactive_threshold: 60_000_000_000 });
  const refused = async (limits: Record<string, number>, text: string): Promise<void> => {
    try {
      await jsm.streams.update("CL", { consumer_limits: limits });
    } catch (e) {
      const ae = (e as { apiError?: () => { code: number; err_code: number; description: string } }).apiError?.();
      assert.deepEqual(ae && { code: ae.code, err_code: ae.err_code, description: ae.description }, { code: 500, err_code: 10069, description: text });
      return;
    }
    assert.fail(`update to ${JSON.stringify(limits)} was accepted`);
  };
  await refused({ max_ack_pending: 100 }, "change to limits violates consumers: B");
  await refused({ max_ack_pending: 10 }, "change to limits violates consumers: A, B");
  await refused({ inactive_threshold: 30_000_000_000 }, "change to limits violates consumers: B");
  const si = await jsm.streams.update("CL", { consumer_limits: { max_ack_pending: 500, inactive_threshold: 120_000_000_000 } });
  assert.deepEqual(si.config.consumer_limits, { max_ack_pending: 500, inactive_threshold: 120_000_000_000 });
  // The same limits again are no change, so nothing is checked.
  await jsm.streams.update("CL", { consumer_limits: { max_ack_pending: 500, inactive_threshold: 120_000_000_000 } });
});

void test("MSG.NEXT: a missing consumer or stream gets no responders (2.11+); an existing one is served; deleted: 503 again", async () => {
  const { jsm, js, nc } = env;
  await jsm.streams.add({ name: "NX", subjects: ["nx.>"] });
  await js.publish("nx.a", "x");
  // nc.request sees the 503 as a no-responders error.
  const noResponders = async (subject: string): Promise<void> => {
    await assert.rejects(nc.request(subject, JSON.stringify({ batch: 1, no_wait: true }), { timeout: 5_000 }), (e: Error) => {
      assert.match(String((e as { code?: unknown }).code ?? e.message), /503|no responders/i);
      return true;
    });
  };
  await noResponders("$JS.API.CONSUMER.MSG.NEXT.NX.nope");
  await noResponders("$JS.API.CONSUMER.MSG.NEXT.NOSTREAM.nope");
  await jsm.consumers.add("NX", { durable_name: "C", ack_policy: AckPolicy.Explicit });
  assert.deepEqual((await rawPull(nc, "NX", "C", { batch: 1, no_wait: true })).items, ["seq:1"]);
  assert.deepEqual((await rawPull(nc, "NX", "C", { batch: 1, no_wait: true })).items, ["404 No Messages"]);
  // Too high an API level: 412 from the consumer, as before.
  const h = headers();
  h.set("Nats-Required-Api-Level", "99");
  const r = await nc.request("$JS.API.CONSUMER.MSG.NEXT.NX.C", JSON.stringify({ batch: 1, no_wait: true }), { timeout: 5_000, headers: h });
  assert.deepEqual([r.headers?.code, r.headers?.description], [412, "Required Api Level"]);
  await jsm.consumers.delete("NX", "C");
  await noResponders("$JS.API.CONSUMER.MSG.NEXT.NX.C");
});

void test("purge by subject: a consumer within the purged subject moves delivered and its ack floor past it; others keep theirs", async () => {
  const { jsm, js, nc } = env;
  await jsm.streams.add({ name: "SP", subjects: ["sp.>"] });
  for (const s of ["sp.a", "sp.b", "sp.a", "sp.b"]) await js.publish(s, "x");
  await jsm.consumers.add("SP", { durable_name: "A", ack_policy: AckPolicy.Explicit, filter_subject: "sp.a", ack_wait: 60_000_000_000 });
  await jsm.consumers.add("SP", { durable_name: "B", ack_policy: AckPolicy.Explicit, filter_subject: "sp.b" });
  assert.deepEqual((await rawPull(nc, "SP", "A", { batch: 2, expires: 5_000_000_000 })).items, ["seq:1", "seq:3"]);
  await jsm.streams.purge("SP", { filter: "sp.a" });
  const a = await info("SP", "A");
  assert.deepEqual([a["delivered"], a["ack_floor"], a["num_ack_pending"], a["num_pending"]].map((x) => (typeof x === "object" ? { ...(x as object), last_active: undefined } : x)), [
    { consumer_seq: 2, stream_seq: 4, last_active: undefined },
    { consumer_seq: 2, stream_seq: 4, last_active: undefined },
    0,
    0,
  ]);
  const b = await info("SP", "B");
  // (Its delivered stream sequence follows the stream's new first sequence, as after any purge.)
  assert.deepEqual([(b["delivered"] as { consumer_seq: number }).consumer_seq, b["num_pending"]], [0, 2]);
  // New messages on the purged subject still come.
  await js.publish("sp.a", "y");
  assert.deepEqual((await rawPull(nc, "SP", "A", { batch: 1, expires: 5_000_000_000 })).items, ["seq:5"]);
});
