// Hostile and broken clients: the server answers with the right -ERR, closes only that
// client, keeps serving everyone else, and never crashes (it runs in this process, so an
// uncaught exception in a socket handler fails the file).

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { startServer, type RunningServer } from "../../src/index.js";
import { RawClient, waitUntil } from "../helpers/core-raw.js";
import { Collector } from "../helpers/core-wait.js";

const MAX_PENDING_BYTES = 256 * 1024;
let srv: RunningServer;
let healthy: NatsConnection;
let healthySub: Collector;
let healthyCount = 0;

/** The bystander still gets its messages. */
async function stillServing(): Promise<void> {
  healthyCount++;
  healthy.publish("bystander", String(healthyCount));
  await healthySub.waitCount(healthyCount);
}

before(async () => {
  srv = await startServer({ host: "127.0.0.1", port: 0, maxPendingBytes: MAX_PENDING_BYTES });
  healthy = await connect({ servers: srv.url });
  healthySub = new Collector(healthy.subscribe("bystander"));
  await healthy.flush();
});

after(async () => {
  await healthy.close();
  await srv.close();
});

/** Waits until the server has read `n` bytes from `c`, or has dropped it. */
async function serverRead(c: RawClient, n: number): Promise<void> {
  const port = c.socket.localPort;
  const find = () => [...srv.server.clients.values()].find((sc) => sc.port === port);
  await waitUntil(() => {
    const sc = find();
    return sc === undefined || sc.inBytesRaw >= n;
  }, `server read ${n} bytes`);
}

function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

void test("garbage bytes: -ERR 'Unknown Protocol Operation' and close", async () => {
  const c = await RawClient.connect(srv.port);
  await c.waitForText("\r\n");
  c.write(Buffer.from([0x00, 0xff, 0xfe, 0x13, 0x0d, 0x0a]));
  await c.waitClosed();
  assert.match(c.text, /-ERR 'Unknown Protocol Operation'\r\n$/);
  await stillServing();
});

void test("seeded random garbage from many connections never takes the server down", async () => {
  const rnd = prng(7);
  const clients: RawClient[] = [];
  for (let k = 0; k < 40; k++) {
    const c = await RawClient.connect(srv.port);
    const bytes = Buffer.alloc(64 + Math.floor(rnd() * 4096));
    for (let i = 0; i < bytes.length; i++) bytes[i] = Math.floor(rnd() * 256);
    // Half of them get past CONNECT first, so the garbage reaches the operation parser.
    const connectLine = k % 2 === 0 ? 'CONNECT {"verbose":false,"pedantic":false}\r\n' : "";
    c.write(connectLine);
    c.write(bytes);
    clients.push(c);
    await serverRead(c, connectLine.length + bytes.length);
  }
  // Each either got an -ERR and was closed, or is waiting for more of a frame.
  for (const c of clients) c.close();
  await stillServing();
});

void test("oversized control line: -ERR 'maximum control line exceeded' and close", async () => {
  const a = await RawClient.connect(srv.port);
  await a.handshake();
  a.write("SUB " + "x".repeat(10_000)); // never terminated
  await a.waitClosed();
  assert.match(a.text, /-ERR 'maximum control line exceeded'\r\n$/);
  // CONNECT counts too.
  const b = await RawClient.connect(srv.port);
  await b.waitForText("\r\n");
  b.write(`CONNECT {"name":"${"n".repeat(5000)}"}\r\n`);
  await b.waitClosed();
  assert.match(b.text, /-ERR 'maximum control line exceeded'\r\n$/);
  await stillServing();
});

void test("invalid subjects: -ERR 'Invalid Subject' and the connection stays", async () => {
  const c = await RawClient.connect(srv.port);
  await c.handshake();
  const bad = ["foo..bar", ".foo", "foo.", "a.>.b", ">.a", "."];
  bad.forEach((s, i) => c.write(`SUB ${s} ${i + 1}\r\n`));
  await c.ping();
  assert.equal(c.text.split("-ERR 'Invalid Subject'\r\n").length - 1, bad.length);
  // Still usable.
  c.write("SUB ok 99\r\nPUB ok 2\r\nhi\r\n");
  await c.ping();
  assert.match(c.text, /MSG ok 99 2\r\nhi\r\n/);
  c.close();
  await stillServing();
});

void test("half a frame, then a disconnect: nothing delivered, the client is cleaned up", async () => {
  const watcher = await RawClient.connect(srv.port);
  await watcher.handshake();
  watcher.write("SUB half.> 1\r\n");
  await watcher.ping();
  const before = srv.server.clients.size;
  const halves = ["PUB half.a 100\r\nabc", "PUB half.b", "HPUB half.c 12 20\r\nNATS/1.0\r\n", "SUB half.d", 'CONNECT {"verbose":'];
  for (const h of halves) {
    const c = await RawClient.connect(srv.port);
    if (!h.startsWith("CONNECT")) await c.handshake({ verbose: false, pedantic: false, headers: true });
    const sent = c.text.length > 0 ? Buffer.byteLength('CONNECT {"verbose":false,"pedantic":false,"headers":true}\r\nPING\r\n') : 0;
    c.write(h);
    await serverRead(c, sent + h.length);
    c.close();
  }
  await waitUntil(() => srv.server.clients.size === before, "half-frame clients removed");
  await watcher.ping();
  assert.doesNotMatch(watcher.text, /MSG half/);
  watcher.close();
  await stillServing();
});

void test("slow consumer: a client that never reads is closed; the publisher and other subscribers carry on", async () => {
  const slow = await RawClient.connect(srv.port, "127.0.0.1");
  await slow.handshake();
  slow.write("SUB flood 1\r\n");
  await slow.ping();
  slow.socket.pause(); // stops reading: the kernel buffers fill, then tsnats' outbound bound
  const slowCid = [...srv.server.clients.values()].at(-1)!.cid;
  const pub = await connect({ servers: srv.url });
  const reader = await connect({ servers: srv.url });
  const got = new Collector(reader.subscribe("flood"));
  await reader.flush();
  const slowBefore = srv.server.stats.slowConsumers;
  const payload = new Uint8Array(16 * 1024);
  let sent = 0;
  // Bounded: at most 4096 x 16 KiB = 64 MiB, far beyond socket buffers plus the bound.
  while (srv.server.clients.has(slowCid) && sent < 4096) {
    for (let i = 0; i < 64; i++) pub.publish("flood", payload);
    sent += 64;
    await pub.flush();
  }
  assert.equal(srv.server.clients.has(slowCid), false, "the non-reading client was closed");
  assert.ok(srv.server.stats.slowConsumers > slowBefore);
  const closed = srv.server.closedClients.find((c) => c.cid === slowCid);
  assert.equal(closed?.reason, "Slow Consumer (Pending Bytes)");
  await got.waitCount(sent, 20_000);
  assert.equal(got.msgs.length, sent);
  pub.publish("flood", "after");
  await got.waitCount(sent + 1);
  slow.close();
  await pub.close();
  await reader.close();
  await stillServing();
});

void test("thousands of connections opening and closing", async () => {
  const base = srv.server.clients.size;
  const TOTAL = 2000;
  const BATCH = 100;
  for (let b = 0; b < TOTAL / BATCH; b++) {
    await Promise.all(
      Array.from({ length: BATCH }, async (_, i) => {
        const c = await RawClient.connect(srv.port);
        if (i % 3 === 0) {
          c.close(); // gone before reading INFO
          return;
        }
        if (i % 3 === 1) await c.handshake();
        else c.write('CONNECT {"verbose":false}\r\nSUB x.' + String(i) + " 1\r\n");
        c.close();
      }),
    );
  }
  await waitUntil(() => srv.server.clients.size === base, `clients back to ${base}`, 10_000);
  // Their subscriptions went with them.
  assert.equal(srv.server.sublist.hasInterest("x.2"), false);
  assert.ok(srv.server.stats.totalConnections >= TOTAL);
  await stillServing();
});
