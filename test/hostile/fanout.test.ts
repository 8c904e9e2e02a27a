// One client's message to very many subscriptions: delivered a slice of 4,096 per turn, the
// publisher's later messages held until it is done. Before, one PUB to 100k subscriptions
// was ~40 ms in one go, and ten in one write held the loop for 420 ms.
//
// In process: a setImmediate ticker samples the deliveries made so far once per turn; no
// turn may make more than two slices' worth. And nothing changes for the subscribers: every
// subscription gets every message, each in the order published, and a bystander is served
// before the last delivery.

import { test } from "node:test";
import assert from "node:assert/strict";
import { startServer } from "../../src/index.js";
import { connected, FanoutReceiver, perTurnGrowth } from "./harness.js";

const SUBS = 20_000;
const MSGS = 3;
const SLICE = 4096; // routing.ts FANOUT_SLICE

void test(`a PUB to ${SUBS} subscriptions is delivered a slice per turn, in order, to every one`, { timeout: 60_000 }, async () => {
  const srv = await startServer({ port: 0, host: "127.0.0.1" });
  try {
    const a = await connected(srv.port);
    const b = await connected(srv.port);
    const by = await connected(srv.port);
    // a counts, per sid, the messages in the order they come (m0, m1, m2 expected).
    const rx = new FanoutReceiver(a.s, "fan", SUBS);
    let atPong = -1;
    const subs: string[] = [];
    for (let i = 1; i <= SUBS; i++) subs.push(`SUB fan ${i}\r\n`);
    a.write(subs.join("") + "PING\r\n");
    const deadline = Date.now() + 20_000;
    while (srv.server.sublist.match("fan").psubs.length < SUBS && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    assert.equal(srv.server.sublist.match("fan").psubs.length, SUBS);

    const clients = [...srv.server.clients.values()];
    const growth = perTurnGrowth(() => clients.reduce((n, c) => n + c.outMsgs, 0));
    by.s.removeAllListeners("data");
    by.s.on("data", (d: string) => {
      if (d.includes("PONG") && atPong < 0) atPong = rx.got;
    });
    const pubs: string[] = [];
    for (let i = 0; i < MSGS; i++) pubs.push(`PUB fan 2\r\nm${i}\r\n`);
    b.write(pubs.join(""));
    // The bystander pings once the first deliveries arrived.
    while (rx.got === 0 && Date.now() < deadline) await new Promise((r) => setImmediate(r));
    by.write("PING\r\n");
    while (rx.got < SUBS * MSGS && Date.now() < deadline + 20_000) await new Promise((r) => setTimeout(r, 5));
    const most = growth.stop();
    assert.equal(rx.got, SUBS * MSGS, `${rx.got} of ${SUBS * MSGS} messages`);
    assert.equal(rx.outOfOrder, 0, "each subscription got m0, m1, m2 in order");
    assert.ok(most <= 2 * SLICE, `at most two slices delivered in one turn (most: ${most})`);
    assert.ok(atPong >= 0 && atPong < SUBS * MSGS, `the bystander's PONG came before the last delivery (at ${atPong})`);
    a.destroy();
    b.destroy();
    by.destroy();
  } finally {
    await srv.close();
  }
});
