// tsnats's peer channel over routes (src/cluster/peer-transport.ts): frames between tsnats
// servers by server name, batched per peer per job, never sent to a nats-server peer in a
// mixed cluster, and malformed batches dropped without harm.

import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect } from "@nats-io/transport-node";
import { startServer, type RunningServer } from "../../src/index.js";
import { defaultClusterOptions } from "../../src/server/options.js";
import { RoutePeerTransport, PEER_BATCH_SUBJECT, type PeerRoutes, type PeerHandler } from "../../src/cluster/peer-transport.js";
import { systemScheduler, ManualScheduler } from "../../src/runtime/sched.js";
import { findNatsServer, startNatsServerChild } from "../helpers/core-child.js";
import { until } from "../helpers/until.js";

class Recorder implements PeerHandler {
  readonly frames: Array<{ from: string; text: string }> = [];
  readonly up = new Set<string>();
  readonly down: string[] = [];
  frame(from: string, frame: Buffer): void {
    this.frames.push({ from, text: frame.toString() });
  }
  peerUp(name: string): void {
    this.up.add(name);
  }
  peerDown(name: string): void {
    this.up.delete(name);
    this.down.push(name);
  }
}

function node(name: string, routes: string[]): Promise<RunningServer> {
  return startServer({ host: "127.0.0.1", port: 0, serverName: name, cluster: { ...defaultClusterOptions(), name: "peers", host: "127.0.0.1", port: -1, routes } });
}

function routesOf(s: RunningServer): PeerRoutes {
  return s.server.cluster as unknown as PeerRoutes;
}

void test("peer frames: by server name, in order, one routed message per peer per job; peers come and go", async () => {
  const a = await node("a", []);
  const seed = `nats-route://127.0.0.1:${a.server.cluster!.port}`;
  const b = await node("b", [seed]);
  let c: RunningServer | null = await node("c", [seed]);
  const ra = new Recorder();
  const rb = new Recorder();
  const rc = new Recorder();
  const ta = new RoutePeerTransport(routesOf(a), systemScheduler, ra);
  const tb = new RoutePeerTransport(routesOf(b), systemScheduler, rb);
  const tc = new RoutePeerTransport(routesOf(c), systemScheduler, rc);
  try {
    await until("a full mesh of tsnats peers", () => ta.peers().length === 2 && tb.peers().length === 2 && tc.peers().length === 2);
    assert.deepEqual(ta.peers().sort(), ["b", "c"]);
    for (let i = 0; i < 100; i++) ta.send("b", Buffer.from(`ab${i}`));
    for (let i = 0; i < 50; i++) ta.send("c", Buffer.from(`ac${i}`));
    // A frame big enough to be cut into a batch of its own.
    ta.send("c", Buffer.alloc(1024 * 1024 + 10, 0x78));
    tb.send("a", Buffer.from("ba"));
    await until("b's frames", () => rb.frames.length === 100);
    await until("c's frames", () => rc.frames.length === 51);
    await until("a's frame", () => ra.frames.length === 1);
    assert.deepEqual(rb.frames.map((f) => f.text), Array.from({ length: 100 }, (_, i) => `ab${i}`));
    assert.ok(rb.frames.every((f) => f.from === "a"));
    assert.deepEqual(rc.frames.slice(0, 50).map((f) => f.text), Array.from({ length: 50 }, (_, i) => `ac${i}`));
    assert.equal(rc.frames[50]!.text.length, 1024 * 1024 + 10);
    assert.deepEqual(ra.frames, [{ from: "b", text: "ba" }]);
    // One job: one batch for b, two for c (the big frame went alone).
    assert.equal(ta.stats.batchesOut, 3);
    assert.equal(ta.stats.framesOut, 151);
    assert.equal(rb.frames.length, tb.stats.framesIn);
    // A frame for a server with no route is dropped and counted.
    ta.send("nobody", Buffer.from("x"));
    ta.flush();
    assert.equal(ta.stats.dropped, 1);
    // c goes: a and b hear it.
    await c.close();
    c = null;
    await until("c's route closed on a and b", () => ra.down.includes("c") && rb.down.includes("c"));
    assert.deepEqual(ta.peers(), ["b"]);
  } finally {
    ta.close();
    tb.close();
    tc.close();
    if (c !== null) await c.close();
    await b.close();
    await a.close();
  }
});

void test("peer frames: a malformed batch is dropped and counted, the frames before it are kept", () => {
  let listener: { frame(from: string, subject: string, payload: Buffer): void } | null = null;
  const fake: PeerRoutes = {
    peerNames: () => [],
    sendPeer: () => false,
    setPeerListener: (l) => (listener = l),
  };
  const rec = new Recorder();
  const sched = new ManualScheduler();
  const t = new RoutePeerTransport(fake, sched, rec);
  const good = Buffer.from([0, 0, 0, 2, 0x68, 0x69]);
  listener!.frame("p", PEER_BATCH_SUBJECT, Buffer.concat([good, Buffer.from([0, 0, 0, 9, 1])]));
  listener!.frame("p", PEER_BATCH_SUBJECT, Buffer.from([0, 0]));
  listener!.frame("p", "$TSR.unknown", good);
  listener!.frame("p", PEER_BATCH_SUBJECT, Buffer.from([0xff, 0xff, 0xff, 0xff]));
  assert.deepEqual(rec.frames, [{ from: "p", text: "hi" }]);
  assert.equal(t.stats.malformed, 4);
  // Sends wait for the job's end (here: the manual scheduler), then go as one batch each.
  t.send("q", Buffer.from("1"));
  t.send("q", Buffer.from("2"));
  assert.equal(t.stats.dropped, 0);
  sched.runUntilIdle();
  assert.equal(t.stats.dropped, 2);
});

void test("mixed cluster: a nats-server 2.9 peer is not a tsnats peer and gets no peer frames; the route and pub/sub carry on", { skip: findNatsServer() === null ? "nats-server is not on PATH" : false }, async () => {
  const dir = mkdtempSync(join(tmpdir(), "tsnats-peer-mixed-"));
  const a = await node("a", []);
  const conf = join(dir, "ns.conf");
  writeFileSync(conf, ["server_name: ns", "listen: 127.0.0.1:-1", "cluster {", "  name: peers", "  listen: 127.0.0.1:-1", `  routes: [ nats-route://127.0.0.1:${a.server.cluster!.port} ]`, "}", ""].join("\n"));
  const ns = await startNatsServerChild(["-c", conf]);
  const rec = new Recorder();
  const t = new RoutePeerTransport(routesOf(a), systemScheduler, rec);
  try {
    await until("the route to nats-server", () => (a.server.cluster as unknown as { routes: Map<string, unknown> }).routes.size === 1);
    assert.deepEqual(t.peers(), []);
    t.send("ns", Buffer.from("not for you"));
    t.flush();
    assert.equal(t.stats.dropped, 1);
    assert.equal(rec.up.size, 0);
    const sub = await connect({ servers: ns.url });
    const pub = await connect({ servers: a.url });
    try {
      const got = sub.subscribe("mixed.peer", { max: 1 });
      await sub.flush();
      await until("interest from nats-server", () => a.server.hasInterest("mixed.peer"));
      pub.publish("mixed.peer", "ok");
      for await (const m of got) assert.equal(m.string(), "ok");
    } finally {
      await sub.close();
      await pub.close();
    }
    assert.doesNotMatch(ns.log(), /\$TSR|Protocol|Error/i);
  } finally {
    t.close();
    await ns.stop();
    await a.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
