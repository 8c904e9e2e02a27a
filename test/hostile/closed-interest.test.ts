// Hostile: a client with 100,000 subscriptions goes away. Its subscriptions leave the
// Sublist 500 per turn (so the removal does not hold the loop), but they are marked closed
// at once: from the turn of the close they are no interest any more. A request to one of
// their subjects gets a no-responders 503 straight away, not after the ~100 turns of removal,
// and the server's hasInterest (JetStream's push consumers and advisories ask it) says no.

import { test } from "node:test";
import assert from "node:assert/strict";
import { startServer } from "../../src/index.js";
import { RawClient, waitUntil } from "../helpers/core-raw.js";

const SUBS = 100_000;

void test("closed subscriptions stop counting as interest at once, while they are still being removed", { timeout: 60_000 }, async () => {
  const srv = await startServer({ port: 0, host: "127.0.0.1" });
  const server = srv.server;
  const a = await RawClient.connect(server.port);
  const b = await RawClient.connect(server.port);
  try {
    await a.handshake();
    a.clear();
    const parts: string[] = [];
    for (let i = 0; i < SUBS; i++) parts.push(`SUB cs.${i} ${i + 1}\r\n`);
    a.write(parts.join("") + "PING\r\n");
    await a.waitForText("PONG\r\n", 30_000);
    assert.equal(server.hasInterest(`cs.${SUBS - 1}`), true);
    await b.handshake({ verbose: false, pedantic: false, headers: true, no_responders: true });
    b.write("SUB _INBOX.b.> 1\r\n");
    await b.ping();
    const before = server.sublist.size;
    assert.ok(before >= SUBS, `sublist holds ${before}`);

    const clientsBefore = server.clients.size;
    a.close();
    // Checked on the first turn the server has seen the close: the removal (500 per turn)
    // has barely started.
    await waitUntil(() => server.clients.size < clientsBefore, "the server to see the close", 10_000);
    const left = server.sublist.size;
    assert.ok(left > SUBS / 2, `removal should still be under way, ${left} left`);
    assert.equal(server.hasInterest(`cs.${SUBS - 1}`), false, "a closed subscription still counts as interest");
    assert.equal(server.hasInterest("cs.0"), false);

    // A request to their subjects: no responders, at once.
    b.clear();
    b.write(`PUB cs.${SUBS - 1} _INBOX.b.1 0\r\n\r\n`);
    const text = await b.waitForText("_INBOX.b.1", 10_000);
    assert.match(text, /HMSG _INBOX\.b\.1 1 \d+ \d+\r\nNATS\/1\.0 503/);

    // And the removal finishes.
    await waitUntil(() => server.sublist.size < before - SUBS + 10, "the subscriptions to be removed", 30_000);
  } finally {
    b.close();
    a.close();
    await srv.close();
  }
});
