// Consumers under bad input: broken create requests, unknown streams and consumers, acks for
// sequences nobody delivered or for consumers that are gone, and storms of pull requests
// with tiny expiries. The server runs in this process, so a throw in a handler fails the
// file; after each scenario a bystander proves the server still serves everyone else.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect, createInbox, type NatsConnection, type Msg } from "@nats-io/transport-node";
import { jetstream, jetstreamManager, AckPolicy, type JetStreamManager } from "@nats-io/jetstream";
import { startServer, type RunningServer } from "../../src/index.js";
import { until } from "../helpers/until.js";

const WAIT_MS = 15_000;
let srv: RunningServer;
let nc: NatsConnection;
let bystander: NatsConnection;
let jsm: JetStreamManager;
let storeDir: string;
let bystanderSeq = 0;

before(async () => {
  storeDir = mkdtempSync(join(tmpdir(), "tsnats-con-bad-"));
  srv = await startServer({ port: 0, host: "127.0.0.1", jetstream: { enabled: true, storeDir } });
  nc = await connect({ servers: srv.url });
  bystander = await connect({ servers: srv.url });
  jsm = await jetstreamManager(nc);
  await jsm.streams.add({ name: "B", subjects: ["b.>"] });
  await jsm.streams.add({ name: "BY", subjects: ["by.>"] });
  await jsm.consumers.add("BY", { durable_name: "by", ack_policy: AckPolicy.Explicit });
});

after(async () => {
  await nc.close();
  await bystander.close();
  await srv.close();
  rmSync(storeDir, { recursive: true, force: true });
});

const waitFor = (cond: () => boolean | Promise<boolean>, what: string, ms = WAIT_MS): Promise<void> => until(what, cond, ms);

/** Another client publishes to a stream and consumes the message with an explicit ack. */
async function stillServing(): Promise<void> {
  const js = jetstream(bystander);
  bystanderSeq++;
  await js.publish("by.x", `m${bystanderSeq}`);
  const c = await js.consumers.get("BY", "by");
  const m = await c.next({ expires: 5000 });
  assert.ok(m !== null, "bystander got its message");
  assert.equal(m.string(), `m${bystanderSeq}`);
  await m.ackAck();
  const r = await bystander.request("$JS.API.INFO", "", { timeout: 5000 });
  assert.equal((JSON.parse(r.string()) as { type: string }).type, "io.nats.jetstream.api.v1.account_info_response");
}

async function api(subject: string, body: string | Uint8Array): Promise<Record<string, unknown>> {
  const m = await nc.request(subject, body, { timeout: 5000 });
  return JSON.parse(m.string()) as Record<string, unknown>;
}

function errCode(r: Record<string, unknown>): number {
  return (r["error"] as { err_code?: number } | undefined)?.err_code ?? 0;
}

/** A raw pull (MSG.NEXT on a core inbox): the messages with their ack reply subjects. */
async function rawFetch(stream: string, consumer: string, batch: number): Promise<Msg[]> {
  const inbox = createInbox();
  const out: Msg[] = [];
  let status = false;
  const sub = nc.subscribe(inbox, {
    callback: (_e, m) => {
      if (m.headers !== undefined && m.headers.code !== 0) status = true;
      else out.push(m);
    },
  });
  nc.publish(`$JS.API.CONSUMER.MSG.NEXT.${stream}.${consumer}`, JSON.stringify({ batch, expires: 2_000_000_000 }), { reply: inbox });
  await waitFor(() => out.length === batch || status, `${batch} messages from ${stream} > ${consumer}`);
  sub.unsubscribe();
  return out;
}

async function info(stream: string, name: string): Promise<Record<string, unknown>> {
  const r = await api(`$JS.API.CONSUMER.INFO.${stream}.${name}`, "");
  assert.equal(errCode(r), 0, JSON.stringify(r));
  return r;
}

void test("broken consumer create requests get JSON errors, nothing is created", async () => {
  const cases: [string, string, number][] = [
    ["{bad", "B", 10025],
    ["", "B", 10025],
    ["[]", "B", 10025],
    ["123", "B", 10025],
    ['"x"', "B", 10025],
    ['{"stream_name":"B","config":7}', "B", 10025],
    ['{"stream_name":"B","config":{"durable_name":5}}', "B", 10025],
    ['{"stream_name":"B","config":{"ack_wait":"1s"}}', "B", 10025],
    ['{"stream_name":"B","config":{"ack_policy":"explicit","backoff":"1s"}}', "B", 10025],
    ['{"stream_name":"B","config":{"filter_subjects":"b.x"}}', "B", 10025],
    ['{"stream_name":"B","config":{"metadata":{"a":1}}}', "B", 10025],
    ['{"stream_name":"B","config":{"opt_start_time":"yesterday","deliver_policy":"by_start_time"}}', "B", 10025],
    ['{"stream_name":"B","config":{"deliver_policy":17}}', "B", 10025],
    ['{"stream_name":"B","config":{"max_deliver":1.5}}', "B", 10025],
    ['{"stream_name":7,"config":{}}', "B", 10025],
    ['{"stream_name":"OTHER","config":{}}', "B", 10056],
    // Deeply nested and large: decoded or refused, never a crash.
    [`{"stream_name":"B","config":{"metadata":{"k":"${"v".repeat(200_000)}"}}}`, "B", 10135],
    [`{"stream_name":"B","config":${"[".repeat(5000)}${"]".repeat(5000)}}`, "B", 10025],
  ];
  for (const [body, stream, code] of cases) {
    const r = await api(`$JS.API.CONSUMER.CREATE.${stream}.BAD`, body);
    assert.equal(errCode(r), code, `${body.slice(0, 80)} -> ${JSON.stringify(r).slice(0, 200)}`);
    assert.equal(r["type"], "io.nats.jetstream.api.v1.consumer_create_response");
  }
  // Binary garbage.
  const junk = new Uint8Array(4096);
  for (let i = 0; i < junk.length; i++) junk[i] = (i * 131 + 7) & 0xff;
  assert.equal(errCode(await api("$JS.API.CONSUMER.CREATE.B.BAD", junk)), 10025);
  const names = await api("$JS.API.CONSUMER.NAMES.B", "");
  assert.deepEqual(names["consumers"], []);
  await stillServing();
});

void test("unknown streams and consumers: 10059 / 10014 on every consumer API", async () => {
  const cfg = JSON.stringify({ stream_name: "NOPE", config: { durable_name: "c" } });
  assert.equal(errCode(await api("$JS.API.CONSUMER.CREATE.NOPE.c", cfg)), 10059);
  assert.equal(errCode(await api("$JS.API.CONSUMER.DURABLE.CREATE.NOPE.c", cfg)), 10059);
  assert.equal(errCode(await api("$JS.API.CONSUMER.CREATE.NOPE", JSON.stringify({ stream_name: "NOPE", config: {} }))), 10059);
  for (const op of ["INFO", "DELETE"]) {
    assert.equal(errCode(await api(`$JS.API.CONSUMER.${op}.NOPE.c`, "")), 10059, op);
    assert.equal(errCode(await api(`$JS.API.CONSUMER.${op}.B.nope`, "")), 10014, op);
  }
  assert.equal(errCode(await api("$JS.API.CONSUMER.PAUSE.B.nope", JSON.stringify({ pause_until: new Date(Date.now() + 60_000).toISOString() }))), 10014);
  for (const op of ["NAMES", "LIST"]) {
    assert.equal(errCode(await api(`$JS.API.CONSUMER.${op}.NOPE`, "")), 10059, op);
    assert.equal(errCode(await api(`$JS.API.CONSUMER.${op}.B`, "{nope")), 10025, op);
  }
  // MSG.NEXT for a consumer or stream that does not exist: nothing subscribes it, so this
  // client (no_responders on, as nats.js connects) gets a 503 with the subject, as from
  // nats-server 2.11 on (2.9/2.10 stayed silent).
  const inbox = createInbox();
  const got: Msg[] = [];
  const sub = nc.subscribe(inbox, {
    callback: (_e, m) => {
      got.push(m);
    },
  });
  const subjects = ["$JS.API.CONSUMER.MSG.NEXT.B.nope", "$JS.API.CONSUMER.MSG.NEXT.NOPE.nope", "$JS.API.CONSUMER.MSG.NEXT.B"];
  for (const s of subjects) nc.publish(s, JSON.stringify({ batch: 1, no_wait: true }), { reply: inbox });
  await nc.flush();
  await stillServing();
  assert.deepEqual(
    got.map((m) => [m.headers?.code, m.headers?.get("Nats-Subject"), m.data.length]),
    subjects.map((s) => [503, s, 0]),
  );
  sub.unsubscribe();
});

void test("acks for unknown sequences, malformed ack subjects and deleted consumers change nothing", async () => {
  await jsm.consumers.add("B", { durable_name: "acks", ack_policy: AckPolicy.Explicit, ack_wait: 60_000_000_000 });
  const js = jetstream(nc);
  for (let i = 1; i <= 3; i++) await js.publish(`b.${i}`, `v${i}`);
  const msgs = (await rawFetch("B", "acks", 2)).map((m) => m.reply ?? "");
  assert.equal(msgs.length, 2);
  const before = await info("B", "acks");
  assert.equal(before["num_ack_pending"], 2);

  const bogus = [
    "$JS.ACK.B.acks.1.999.999.0.0", // a sequence past the stream
    "$JS.ACK.B.acks.1.3.3.0.0", // in the stream, never delivered
    "$JS.ACK.B.acks.1.0.0.0.0",
    "$JS.ACK.B.acks.x.y.z.0.0",
    "$JS.ACK.B.acks.1.1",
    "$JS.ACK.B.acks.1.-1.-1.0.0",
    "$JS.ACK.B.acks.99999999999999999999.18446744073709551616.1.0.0",
    "$JS.ACK.B.acks",
    "$JS.ACK.B.other.1.1.1.0.0",
    "$JS.ACK.NOPE.acks.1.1.1.0.0",
    "$JS.ACK.B.acks.1.1.1.0.0.extra.tokens.here.and.more",
  ];
  const payloads = ["+ACK", "-NAK", '-NAK {"delay": -5}', '-NAK {"delay": "x"}', "+WPI", "+TERM", "+TERM reason", "+NXT", '+NXT {"batch":-1}', "", "+ACKX", "\u0000\u0001"];
  for (const s of bogus) for (const p of payloads) nc.publish(s, p);
  // With a reply (the ack-ack form) too; whatever the answer, the call must not hang the server.
  for (const s of bogus.slice(0, 3)) {
    await nc.request(s, "+ACK", { timeout: 1000 }).catch(() => null);
  }
  await nc.flush();
  const after1 = await info("B", "acks");
  assert.equal(after1["num_ack_pending"], 2);
  assert.deepEqual(after1["ack_floor"], before["ack_floor"]);
  assert.deepEqual(after1["delivered"], before["delivered"]);
  assert.equal(after1["num_redelivered"], 0);

  // The real acks still work afterwards.
  for (const r of msgs) await nc.request(r, "+ACK", { timeout: 5000 });
  const after2 = await info("B", "acks");
  assert.equal(after2["num_ack_pending"], 0);
  assert.equal((after2["ack_floor"] as { stream_seq: number }).stream_seq, 2);

  // Deleted consumer: acks (thousands) and pulls on its subjects go nowhere.
  const [m3] = await rawFetch("B", "acks", 1);
  assert.ok(m3 !== undefined);
  await jsm.consumers.delete("B", "acks");
  for (let i = 0; i < 5000; i++) nc.publish(m3.reply ?? "", i % 2 === 0 ? "+ACK" : "-NAK");
  for (const p of payloads) nc.publish(m3.reply ?? "", p);
  await nc.flush();
  await assert.rejects(() => nc.request(m3.reply ?? "", "+ACK", { timeout: 1000 }));
  // Recreated under the same name: a fresh consumer, untouched by the old acks.
  await jsm.consumers.add("B", { durable_name: "acks", ack_policy: AckPolicy.Explicit });
  const fresh = await info("B", "acks");
  assert.equal(fresh["num_ack_pending"], 0);
  assert.equal(fresh["num_pending"], 3);
  await jsm.consumers.delete("B", "acks");
  await stillServing();
});

void test("bad pull request bodies get 400s or sane defaults", async () => {
  await jsm.consumers.add("B", { durable_name: "pullbad", ack_policy: AckPolicy.Explicit, filter_subject: "b.none" });
  const inbox = createInbox();
  const got: Msg[] = [];
  const sub = nc.subscribe(`${inbox}.*`, {
    callback: (_e, m) => {
      got.push(m);
    },
  });
  const bodies = [
    "{nope",
    '{"batch":"1"}',
    '{"batch":1.5}',
    '{"no_wait":"yes"}',
    '{"expires":"1s"}',
    '{"idle_heartbeat":[]}',
    "[]",
    "null",
    '{"batch":-5,"no_wait":true}',
    '{"batch":1e15,"no_wait":true}',
    '{"batch":1,"max_bytes":-1,"no_wait":true}',
    '{"batch":1,"expires":-1,"no_wait":true}',
    "\u0000\u00ff",
  ];
  bodies.forEach((b, i) => nc.publish("$JS.API.CONSUMER.MSG.NEXT.B.pullbad", b, { reply: `${inbox}.${i}` }));
  await nc.flush();
  // Every request ends with exactly one status; a 200-less request never hangs around.
  await waitFor(() => new Set(got.map((m) => m.subject)).size === bodies.length, `a status for each of ${bodies.length} bad bodies`);
  for (const m of got) {
    const code = m.headers?.code ?? 0;
    assert.ok([400, 404, 408, 409].includes(code), `${m.subject}: ${code} ${m.headers?.description}`);
  }
  await waitFor(async () => (await info("B", "pullbad"))["num_waiting"] === 0, "no waiting requests");
  sub.unsubscribe();
  await jsm.consumers.delete("B", "pullbad");
  await stillServing();
});

/** Counts the terminal statuses per reply subject of a pull storm. */
class StormInbox {
  readonly prefix = createInbox();
  readonly byReply = new Map<string, number>();
  readonly codes = new Map<string, number>();
  msgs = 0;
  constructor(conn: NatsConnection) {
    conn.subscribe(`${this.prefix}.*`, {
      callback: (_e, m) => {
        const h = m.headers;
        if (h !== undefined && h.code === 100) return; // heartbeats do not end a request
        if (h === undefined || h.code === 0) {
          this.msgs++;
          return;
        }
        this.byReply.set(m.subject, (this.byReply.get(m.subject) ?? 0) + 1);
        const k = `${h.code} ${h.description}`;
        this.codes.set(k, (this.codes.get(k) ?? 0) + 1);
      },
    });
  }
}

void test("5000 pull requests with tiny expires: each ends once, the waiting list stays bounded and drains", async () => {
  const MAX_WAITING = 64;
  const N = 5000;
  await jsm.consumers.add("B", { durable_name: "storm", ack_policy: AckPolicy.Explicit, filter_subject: "b.storm", max_waiting: MAX_WAITING });
  const storm = await connect({ servers: srv.url });
  try {
    const inbox = new StormInbox(storm);
    await storm.flush();
    let maxSeen = 0;
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        const n = (await info("B", "storm"))["num_waiting"] as number;
        if (n > maxSeen) maxSeen = n;
      }
    })();
    // 1 ms to 5 ms expiries, a few with heartbeats (too large for them: 400) and no_wait.
    const bodyFor = (i: number): Record<string, unknown> => {
      const body: Record<string, unknown> = { batch: 1 + (i % 10), expires: 1_000_000 * (1 + (i % 5)) };
      if (i % 97 === 0) body["no_wait"] = true;
      if (i % 101 === 0) body["idle_heartbeat"] = 2_000_000;
      return body;
    };
    for (let i = 0; i < N; i++) {
      const body = bodyFor(i);
      storm.publish("$JS.API.CONSUMER.MSG.NEXT.B.storm", JSON.stringify(body), { reply: `${inbox.prefix}.${i}` });
      if (i % 500 === 499) await storm.flush();
    }
    await storm.flush();
    // The other clients are served in the middle of it.
    await stillServing();
    // Every request ends with one status, except that one with idle_heartbeat turned away by
    // a full waiting list gets none (nats-server: the client waits for missing heartbeats
    // rather than re-requesting in a hot loop).
    const ended = (i: number): boolean => inbox.byReply.has(`${inbox.prefix}.${i}`);
    const mustEnd: number[] = [];
    for (let i = 0; i < N; i++) if (bodyFor(i)["idle_heartbeat"] === undefined) mustEnd.push(i);
    await waitFor(() => mustEnd.every(ended), `a status for each of ${mustEnd.length} requests`).catch((e: Error) => {
      const missing = mustEnd.filter((i) => !ended(i)).slice(0, 20).map((i) => `${i}: ${JSON.stringify(bodyFor(i))}`);
      throw new Error(`${e.message}; have ${inbox.byReply.size}, none for ${missing.join(", ")}`);
    });
    sampling = false;
    await sampler;
    for (const [reply, n] of inbox.byReply) assert.equal(n, 1, `${reply} got ${n} terminal statuses`);
    for (const k of inbox.codes.keys()) {
      assert.match(k, /^(408 Request Timeout|409 Exceeded MaxWaiting|404 No Messages|400 Bad Request - heartbeat value too large)$/, k);
    }
    assert.ok(maxSeen <= MAX_WAITING, `num_waiting ${maxSeen} > max_waiting ${MAX_WAITING}`);
    assert.equal(inbox.msgs, 0);
    await waitFor(async () => (await info("B", "storm"))["num_waiting"] === 0, "num_waiting back to 0");

    // Long expiries fill the list exactly: max_waiting wait, the rest get 409 at once.
    const long = new StormInbox(storm);
    await storm.flush();
    for (let i = 0; i < 2000; i++) {
      storm.publish("$JS.API.CONSUMER.MSG.NEXT.B.storm", JSON.stringify({ batch: 1, expires: 60_000_000_000 }), { reply: `${long.prefix}.${i}` });
    }
    await storm.flush();
    await waitFor(() => long.byReply.size === 2000 - MAX_WAITING, "409 for every request beyond max_waiting");
    assert.deepEqual([...long.codes.entries()], [["409 Exceeded MaxWaiting", 2000 - MAX_WAITING]]);
    assert.equal((await info("B", "storm"))["num_waiting"], MAX_WAITING);
    // A message for the storm consumer goes to the oldest waiting request.
    await jetstream(nc).publish("b.storm", "one");
    await waitFor(() => long.msgs === 1, "the message reaches a waiting request");
  } finally {
    // The requester goes away: its waiting requests have no interest any more and are dropped.
    await storm.close();
  }
  await waitFor(async () => (await info("B", "storm"))["num_waiting"] === 0, "requests of a closed connection dropped");
  await stillServing();
  await jsm.consumers.delete("B", "storm");
});

void test("pull requests racing a consumer delete end with 409 Consumer Deleted, none left behind", async () => {
  await jsm.consumers.add("B", { durable_name: "racing", ack_policy: AckPolicy.Explicit, filter_subject: "b.none" });
  const inbox = new StormInbox(nc);
  await nc.flush();
  for (let i = 0; i < 300; i++) {
    nc.publish("$JS.API.CONSUMER.MSG.NEXT.B.racing", JSON.stringify({ batch: 5, expires: 30_000_000_000 }), { reply: `${inbox.prefix}.${i}` });
  }
  await nc.flush();
  await waitFor(async () => (await info("B", "racing"))["num_waiting"] === 300, "300 waiting");
  await jsm.consumers.delete("B", "racing");
  await waitFor(() => inbox.byReply.size === 300, "a status for each waiting request");
  assert.deepEqual([...inbox.codes.entries()], [["409 Consumer Deleted", 300]]);
  await stillServing();
});

void test("a stream larger than max_pending pushed or pulled at once: the client is paced, not cut off", async () => {
  const dir = mkdtempSync(join(tmpdir(), "tsnats-con-pace-"));
  const MAX_PENDING = 1024 * 1024;
  const small = await startServer({ port: 0, host: "127.0.0.1", maxPendingBytes: MAX_PENDING, jetstream: { enabled: true, storeDir: dir } });
  const c = await connect({ servers: small.url });
  try {
    const m = await jetstreamManager(c);
    await m.streams.add({ name: "PACE", subjects: ["pace"] });
    const N = 8000; // 8 MiB of payload: eight times the slow-consumer bound
    const js = jetstream(c);
    const payload = new Uint8Array(1024);
    const acks: Promise<unknown>[] = [];
    for (let i = 0; i < N; i++) {
      acks.push(js.publish("pace", payload));
      if (acks.length === 256) await Promise.all(acks.splice(0));
    }
    await Promise.all(acks);
    let closed: unknown = null;
    void c.closed().then((e) => {
      closed = e ?? "closed";
    });
    // Push, ack none: everything queued at once without pacing.
    let pushed = 0;
    c.subscribe("pace.deliver", {
      callback: () => {
        pushed++;
      },
    });
    await c.flush();
    await m.consumers.add("PACE", { durable_name: "push", deliver_subject: "pace.deliver", ack_policy: AckPolicy.None });
    await waitFor(() => pushed === N || closed !== null, `${N} pushed messages`);
    assert.equal(closed, null, "the subscriber was closed");
    assert.equal(pushed, N);
    // Pull, one request for everything.
    await m.consumers.add("PACE", { durable_name: "pull", ack_policy: AckPolicy.None });
    const inbox = createInbox();
    let pulled = 0;
    c.subscribe(inbox, {
      callback: (_e, msg) => {
        if (msg.headers === undefined || msg.headers.code === 0) pulled++;
      },
    });
    c.publish("$JS.API.CONSUMER.MSG.NEXT.PACE.pull", JSON.stringify({ batch: N, expires: 30_000_000_000 }), { reply: inbox });
    await waitFor(() => pulled === N || closed !== null, `${N} pulled messages`);
    assert.equal(closed, null, "the puller was closed");
    assert.equal(pulled, N);
  } finally {
    await c.close();
    await small.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
