// Core messaging with the official client (@nats-io/transport-node 3.x) against an
// in-process tsnats: pub/sub, wildcards, queue groups, request/reply, headers, no
// responders, drain, auto-unsubscribe, max payload, echo and verbose.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { connect, headers, errors, type NatsConnection } from "@nats-io/transport-node";
import { startServer, type RunningServer } from "../../src/index.js";
import { Collector, within } from "../helpers/core-wait.js";
import { RawClient } from "../helpers/core-raw.js";

let srv: RunningServer;
const conns: NatsConnection[] = [];

async function nc(opts: Parameters<typeof connect>[0] = {}): Promise<NatsConnection> {
  const c = await connect({ servers: srv.url, ...opts });
  conns.push(c);
  return c;
}

before(async () => {
  srv = await startServer({ host: "127.0.0.1", port: 0, maxPayloadBytes: 64 * 1024 });
});

after(async () => {
  for (const c of conns) if (!c.isClosed()) await c.close();
  await srv.close();
});

void test("pub/sub: literal, '*' and '>' subscriptions get the message's own subject", async () => {
  const a = await nc();
  const b = await nc();
  const lit = new Collector(a.subscribe("ps.one.x"));
  const star = new Collector(a.subscribe("ps.*.x"));
  const full = new Collector(b.subscribe("ps.>"));
  await a.flush();
  await b.flush();
  a.publish("ps.one.x", "1");
  a.publish("ps.two.x", "2");
  a.publish("ps.two.y.z", "3");
  a.publish("other", "4");
  await full.waitCount(3);
  await star.waitCount(2);
  await lit.waitCount(1);
  await a.flush();
  await b.flush();
  assert.deepEqual(lit.strings(), ["1"]);
  assert.deepEqual(star.subjects(), ["ps.one.x", "ps.two.x"]);
  assert.deepEqual(full.subjects(), ["ps.one.x", "ps.two.x", "ps.two.y.z"]);
  assert.deepEqual(full.strings(), ["1", "2", "3"]);
});

void test("queue groups: each message to exactly one member of each group, and to every plain sub", async () => {
  const a = await nc();
  const b = await nc();
  const pub = await nc();
  const g1 = [new Collector(a.subscribe("qg.work", { queue: "g1" })), new Collector(b.subscribe("qg.work", { queue: "g1" })), new Collector(b.subscribe("qg.*", { queue: "g1" }))];
  const g2 = [new Collector(a.subscribe("qg.>", { queue: "g2" })), new Collector(b.subscribe("qg.work", { queue: "g2" }))];
  const plain = [new Collector(a.subscribe("qg.work")), new Collector(b.subscribe("qg.work"))];
  await a.flush();
  await b.flush();
  const N = 200;
  for (let i = 0; i < N; i++) pub.publish("qg.work", String(i));
  await pub.flush();
  for (const p of plain) await p.waitCount(N);
  const total = (g: Collector[]): number => g.reduce((n, c) => n + c.msgs.length, 0);
  const deadline = Date.now() + 5000;
  while ((total(g1) < N || total(g2) < N) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
  // A round trip on each subscriber connection: anything extra would have arrived by now.
  await a.flush();
  await b.flush();
  for (const g of [g1, g2]) {
    const seen = g.flatMap((c) => c.strings()).sort((x, y) => Number(x) - Number(y));
    assert.deepEqual(seen, Array.from({ length: N }, (_, i) => String(i)), "every message exactly once per group");
  }
  // With 200 messages a member that never gets one is astronomically unlikely unless selection is broken.
  for (const c of [...g1, ...g2]) assert.ok(c.msgs.length > 0, "each member gets a share");
  for (const p of plain) assert.equal(p.msgs.length, N);
});

void test("request/reply through a responder, with the requester's inbox", async () => {
  const svc = await nc();
  const client = await nc();
  const sub = svc.subscribe("rr.echo", {
    callback: (_err, m) => {
      m.respond(`echo:${m.string()}`);
    },
  });
  await svc.flush();
  for (let i = 0; i < 5; i++) {
    const r = await client.request("rr.echo", `hi${i}`, { timeout: 5000 });
    assert.equal(r.string(), `echo:hi${i}`);
  }
  sub.unsubscribe();
});

void test("headers: HPUB/HMSG round trip; a non-header client gets MSG with the header block removed", async () => {
  const a = await nc();
  const got = new Collector(a.subscribe("hd.x"));
  const raw = await RawClient.connect(srv.port);
  await raw.handshake({ verbose: false, pedantic: false, headers: false });
  raw.write("SUB hd.x 1\r\n");
  await raw.ping();
  await a.flush();
  const h = headers();
  h.set("X-One", "1");
  h.append("X-Multi", "a");
  h.append("X-Multi", "b");
  a.publish("hd.x", "body", { headers: h });
  const [m] = await got.waitCount(1);
  assert.equal(m!.headers?.get("X-One"), "1");
  assert.deepEqual(m!.headers?.values("X-Multi"), ["a", "b"]);
  assert.equal(m!.string(), "body");
  await raw.waitForText("body\r\n");
  assert.match(raw.text, /MSG hd\.x 1 4\r\nbody\r\n/);
  assert.doesNotMatch(raw.text, /HMSG/);
  raw.close();
});

void test("no responders: a request nobody serves fails fast with 503", async () => {
  const c = await nc();
  await assert.rejects(
    () => c.request("nr.nobody", "x", { timeout: 5000 }),
    (err: unknown) => {
      assert.ok(err instanceof errors.RequestError, String(err));
      assert.equal(err.isNoResponders(), true);
      return true;
    },
  );
  // The wire form: HMSG on the requester's reply sid with a 503 status line.
  const raw = await RawClient.connect(srv.port);
  await raw.handshake({ verbose: false, pedantic: false, headers: true, no_responders: true });
  raw.write("SUB _INBOX.raw.* 7\r\nPUB nr.nobody _INBOX.raw.1 0\r\n\r\n");
  await raw.waitForText("\r\n\r\n\r\n");
  assert.match(raw.text, /HMSG _INBOX\.raw\.1 7 (\d+) \1\r\nNATS\/1\.0 503\r\n/);
  raw.close();
});

void test("drain: a draining subscription delivers what was published before, then ends", async () => {
  const sub = await nc();
  const pub = await nc();
  const s = sub.subscribe("dr.x");
  const col = new Collector(s);
  await sub.flush();
  for (let i = 0; i < 50; i++) pub.publish("dr.x", String(i));
  await pub.flush();
  await col.waitCount(50);
  await within(s.drain(), "sub drain");
  await within(col.done, "iterator end");
  assert.equal(col.msgs.length, 50);
  assert.equal(s.isClosed(), true);
  const c = await connect({ servers: srv.url });
  c.subscribe("dr.y");
  await within(c.drain(), "connection drain");
  assert.equal(c.isClosed(), true);
});

void test("auto-unsubscribe: max deliveries, then the server stops sending", async () => {
  const a = await nc();
  const pub = await nc();
  const s = a.subscribe("au.x", { max: 3 });
  const col = new Collector(s);
  const other = new Collector(a.subscribe("au.x"));
  await a.flush();
  for (let i = 0; i < 10; i++) pub.publish("au.x", String(i));
  await pub.flush();
  await other.waitCount(10);
  await within(col.done, "max reached ends the iterator");
  assert.deepEqual(col.strings(), ["0", "1", "2"]);
  // And on the wire: UNSUB <sid> <max> after some deliveries counts them.
  const raw = await RawClient.connect(srv.port);
  await raw.handshake();
  raw.write("SUB au.y 1\r\nPUB au.y 1\r\na\r\nUNSUB 1 2\r\nPUB au.y 1\r\nb\r\nPUB au.y 1\r\nc\r\n");
  await raw.ping();
  assert.equal(raw.text.split("MSG au.y 1").length - 1, 2);
  // Already at max: removed at once.
  raw.clear();
  raw.write("SUB au.z 2\r\nPUB au.z 1\r\na\r\nUNSUB 2 1\r\nPUB au.z 1\r\nb\r\n");
  await raw.ping();
  assert.equal(raw.text.split("MSG au.z 2").length - 1, 1);
  raw.close();
});

void test("max payload: the client refuses, a raw oversized PUB gets -ERR and is closed", async () => {
  const c = await nc();
  assert.equal(c.info?.max_payload, 64 * 1024);
  assert.throws(() => c.publish("mp.x", new Uint8Array(64 * 1024 + 1)), /payload|max/i);
  const ok = new Collector(c.subscribe("mp.x"));
  await c.flush();
  c.publish("mp.x", new Uint8Array(64 * 1024));
  await ok.waitCount(1);
  assert.equal(ok.msgs[0]!.data.length, 64 * 1024);

  const raw = await RawClient.connect(srv.port);
  await raw.handshake();
  raw.write(`PUB mp.x ${64 * 1024 + 1}\r\n`);
  await raw.waitClosed();
  assert.match(raw.text, /-ERR 'Maximum Payload Violation'\r\n$/);
  // The server keeps serving the others.
  await c.flush();
});

void test("echo off: a connection does not get its own messages; others do", async () => {
  const quiet = await nc({ noEcho: true });
  const other = await nc();
  const self = new Collector(quiet.subscribe("ec.x"));
  const seen = new Collector(other.subscribe("ec.x"));
  await quiet.flush();
  await other.flush();
  quiet.publish("ec.x", "from-quiet");
  other.publish("ec.x", "from-other");
  await seen.waitCount(2);
  await self.waitCount(1);
  await quiet.flush();
  assert.deepEqual(self.strings(), ["from-other"]);
});

void test("verbose: +OK after CONNECT, SUB, PUB and UNSUB; the client works in verbose mode", async () => {
  const raw = await RawClient.connect(srv.port);
  await raw.waitForText("\r\n");
  raw.clear();
  raw.write('CONNECT {"verbose":true,"pedantic":false}\r\nSUB vb.x 1\r\nPUB vb.x 2\r\nhi\r\nUNSUB 1\r\nPING\r\n');
  await raw.waitForText("PONG\r\n");
  assert.equal(raw.text, "+OK\r\n+OK\r\n+OK\r\nMSG vb.x 1 2\r\nhi\r\n+OK\r\nPONG\r\n");
  raw.close();
  const c = await nc({ verbose: true });
  const col = new Collector(c.subscribe("vb.y"));
  await c.flush();
  c.publish("vb.y", "v");
  await col.waitCount(1);
  assert.equal(col.msgs[0]!.string(), "v");
});

void test("the nats 2.x client: pub/sub, request/reply, headers", async () => {
  const nats2 = await import("nats");
  const c = await nats2.connect({ servers: srv.url });
  try {
    const sc = nats2.StringCodec();
    const got: string[] = [];
    const sub = c.subscribe("n2.*", {
      callback: (_e, m) => {
        got.push(`${m.subject}:${sc.decode(m.data)}:${m.headers?.get("K") ?? ""}`);
      },
    });
    c.subscribe("n2svc", { callback: (_e, m) => m.respond(sc.encode(`re:${sc.decode(m.data)}`)) });
    await c.flush();
    const h = nats2.headers();
    h.set("K", "v");
    c.publish("n2.a", sc.encode("1"), { headers: h });
    c.publish("n2.b", sc.encode("2"));
    const r = await c.request("n2svc", sc.encode("q"), { timeout: 5000 });
    assert.equal(sc.decode(r.data), "re:q");
    await c.flush();
    const deadline = Date.now() + 5000;
    while (got.length < 2 && Date.now() < deadline) await new Promise((res) => setTimeout(res, 10));
    assert.deepEqual(got, ["n2.a:1:v", "n2.b:2:"]);
    sub.unsubscribe();
    await assert.rejects(() => c.request("n2.none.here", sc.encode("x"), { timeout: 5000 }), /503|no responders/i);
  } finally {
    await c.close();
  }
});
