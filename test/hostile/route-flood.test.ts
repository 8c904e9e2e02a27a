// A route peer that floods RMSGs: Node reads a busy socket up to 32 times (2 MiB) in a row,
// and every message of those reads was routed in that one go. A route's reads now stop for
// the turn after 4 reads and 2 ms (as a client's do), so the loop turns in between.
//
// In process: a setImmediate ticker samples the deliveries to a local subscriber once per
// turn; no turn may deliver half of a 2.2 MB flood (60,000 messages), and all of them arrive.

import { test } from "node:test";
import assert from "node:assert/strict";
import { startServer } from "../../src/index.js";
import { defaultClusterOptions } from "../../src/server/options.js";
import { RawClient } from "../helpers/core-raw.js";
import { connected, FanoutReceiver, perTurnGrowth } from "./harness.js";

const N = 60_000;

/** A raw route peer of cluster "w", past its handshake (CONNECT, INFO, PING answered). */
async function routePeer(port: number): Promise<RawClient> {
  const peer = await RawClient.connect(port);
  await peer.waitForText("INFO ");
  const info = { server_id: "NPEER", server_name: "peer", cluster: "w", headers: true, port: 1 };
  peer.write(`CONNECT ${JSON.stringify({ name: "NPEER", cluster: "w", headers: true, echo: true, verbose: false, pedantic: false })}\r\nINFO ${JSON.stringify(info)}\r\nPING\r\n`);
  await peer.waitForText("PONG");
  return peer;
}

void test(`a route peer's ${N} RMSGs in one write are routed over several turns, all of them`, { timeout: 60_000 }, async () => {
  const srv = await startServer({ port: 0, host: "127.0.0.1", serverName: "s", cluster: { ...defaultClusterOptions(), name: "w", host: "127.0.0.1", port: -1 } });
  try {
    const sub = await connected(srv.port);
    sub.write("SUB flood 1\r\nPING\r\n");
    assert.ok(await sub.until((t) => t.includes("PONG\r\n"), 10_000));
    const peer = await routePeer(srv.server.cluster!.port);
    await peer.waitForText("RS+ $G flood");
    const client = [...srv.server.clients.values()].find((c) => c.outMsgs >= 0 && c.subs.size === 1)!;
    assert.ok(client !== undefined, "the subscriber's connection");
    const base = client.outMsgs;
    const growth = perTurnGrowth(() => client.outMsgs - base);
    peer.write(Buffer.from("RMSG $G flood 16\r\n0123456789abcdef\r\n".repeat(N)));
    const end = Date.now() + 30_000;
    while (client.outMsgs - base < N && Date.now() < end) await new Promise((r) => setTimeout(r, 5));
    const most = growth.stop();
    assert.equal(client.outMsgs - base, N, "every routed message was delivered");
    assert.ok(most <= N / 2, `at most half the flood in one turn (most: ${most})`);
    peer.close();
    sub.destroy();
  } finally {
    await srv.close();
  }
});

const SUBS = 20_000;
const MSGS = 3;
const SLICE = 4096; // routing.ts FANOUT_SLICE

void test(`a route peer's RMSG to ${SUBS} local subscriptions is delivered a slice per turn, in order, the route's later messages after it`, { timeout: 60_000 }, async () => {
  const srv = await startServer({ port: 0, host: "127.0.0.1", serverName: "s", cluster: { ...defaultClusterOptions(), name: "w", host: "127.0.0.1", port: -1 } });
  try {
    const a = await connected(srv.port);
    const by = await connected(srv.port);
    // a counts, per sid, the messages in the order they come (m0, m1, m2 expected).
    const rx = new FanoutReceiver(a.s, "fan", SUBS);
    let atPong = -1;
    const subs: string[] = [];
    for (let i = 1; i <= SUBS; i++) subs.push(`SUB fan ${i}\r\n`);
    a.write(subs.join(""));
    const deadline = Date.now() + 20_000;
    while (srv.server.sublist.match("fan").psubs.length < SUBS && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    assert.equal(srv.server.sublist.match("fan").psubs.length, SUBS);

    const peer = await routePeer(srv.server.cluster!.port);
    await peer.waitForText("RS+ $G fan");

    const clients = [...srv.server.clients.values()];
    const growth = perTurnGrowth(() => clients.reduce((n, c) => n + c.outMsgs, 0));
    by.s.removeAllListeners("data");
    by.s.on("data", (d: string) => {
      if (d.includes("PONG") && atPong < 0) atPong = rx.got;
    });
    const msgs: string[] = [];
    for (let i = 0; i < MSGS; i++) msgs.push(`RMSG $G fan 2\r\nm${i}\r\n`);
    peer.write(msgs.join(""));
    // The bystander pings once the first deliveries arrived.
    while (rx.got === 0 && Date.now() < deadline) await new Promise((r) => setImmediate(r));
    by.write("PING\r\n");
    while (rx.got < SUBS * MSGS && Date.now() < deadline + 20_000) await new Promise((r) => setTimeout(r, 5));
    const most = growth.stop();
    assert.equal(rx.got, SUBS * MSGS, `${rx.got} of ${SUBS * MSGS} messages`);
    assert.equal(rx.outOfOrder, 0, "each subscription got m0, m1, m2 in order");
    assert.ok(most <= 2 * SLICE, `at most two slices delivered in one turn (most: ${most})`);
    assert.ok(atPong >= 0 && atPong < SUBS * MSGS, `the bystander's PONG came before the last delivery (at ${atPong})`);
    // The route is read again afterwards: a later RMSG and a PING are answered.
    peer.write("RMSG $G fan 2\r\nm9\r\nPING\r\n");
    const before = peer.text.split("PONG").length;
    const t2 = Date.now() + 10_000;
    while ((rx.got < SUBS * (MSGS + 1) || peer.text.split("PONG").length <= before) && Date.now() < t2) await new Promise((r) => setTimeout(r, 5));
    assert.equal(rx.got, SUBS * (MSGS + 1), "the later message reached every subscription");
    peer.close();
    a.destroy();
    by.destroy();
  } finally {
    await srv.close();
  }
});
