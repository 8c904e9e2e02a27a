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
import { connected } from "./harness.js";

const N = 60_000;

void test(`a route peer's ${N} RMSGs in one write are routed over several turns, all of them`, { timeout: 60_000 }, async () => {
  const srv = await startServer({ port: 0, host: "127.0.0.1", serverName: "s", cluster: { ...defaultClusterOptions(), name: "w", host: "127.0.0.1", port: -1 } });
  try {
    const sub = await connected(srv.port);
    sub.write("SUB flood 1\r\nPING\r\n");
    assert.ok(await sub.until((t) => t.includes("PONG\r\n"), 10_000));
    const peer = await RawClient.connect(srv.server.cluster!.port);
    await peer.waitForText("INFO ");
    const info = { server_id: "NPEER", server_name: "peer", cluster: "w", headers: true, port: 1 };
    peer.write(`CONNECT ${JSON.stringify({ name: "NPEER", cluster: "w", headers: true, echo: true, verbose: false, pedantic: false })}\r\nINFO ${JSON.stringify(info)}\r\nPING\r\n`);
    await peer.waitForText("PONG");
    await peer.waitForText("RS+ $G flood");
    const client = [...srv.server.clients.values()].find((c) => c.outMsgs >= 0 && c.subs.size === 1)!;
    assert.ok(client !== undefined, "the subscriber's connection");
    const base = client.outMsgs;
    const samples: number[] = [0];
    let ticking = true;
    const tick = (): void => {
      samples.push(client.outMsgs - base);
      if (ticking) setImmediate(tick);
    };
    setImmediate(tick);
    peer.write(Buffer.from("RMSG $G flood 16\r\n0123456789abcdef\r\n".repeat(N)));
    const end = Date.now() + 30_000;
    while (client.outMsgs - base < N && Date.now() < end) await new Promise((r) => setTimeout(r, 5));
    ticking = false;
    samples.push(client.outMsgs - base);
    assert.equal(client.outMsgs - base, N, "every routed message was delivered");
    let most = 0;
    for (let i = 1; i < samples.length; i++) most = Math.max(most, samples[i]! - samples[i - 1]!);
    assert.ok(most <= N / 2, `at most half the flood in one turn (most: ${most})`);
    peer.close();
    sub.destroy();
  } finally {
    await srv.close();
  }
});
