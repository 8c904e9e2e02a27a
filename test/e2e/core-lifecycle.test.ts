// Connection lifecycle: reconnect after a server restart on the same port, lame duck mode
// (in-process and SIGUSR2 to the CLI), server PINGs and stale connections.

import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect, type NatsConnection, type Status } from "@nats-io/transport-node";
import { startServer } from "../../src/index.js";
import { RawClient, waitUntil } from "../helpers/core-raw.js";
import { Collector, within } from "../helpers/core-wait.js";
import { startTsnatsChild } from "../helpers/core-child.js";

/** Records every status event of a connection. */
function watchStatus(nc: NatsConnection): Status[] {
  const seen: Status[] = [];
  void (async () => {
    for await (const s of nc.status()) seen.push(s);
  })();
  return seen;
}

void test("reconnect: the client comes back after the server restarts on the same port, subs resent", async () => {
  const first = await startTsnatsChild(["-a", "127.0.0.1", "-p", "-1"]);
  let second: Awaited<ReturnType<typeof startTsnatsChild>> | null = null;
  const nc = await connect({ servers: first.url, reconnectTimeWait: 100, maxReconnectAttempts: -1, reconnectJitter: 0 });
  try {
    const seen = watchStatus(nc);
    const col = new Collector(nc.subscribe("rc.x"));
    await nc.flush();
    nc.publish("rc.x", "before");
    await col.waitCount(1);
    await first.stop();
    await waitUntil(() => seen.some((s) => s.type === "disconnect"), "disconnect status");
    second = await startTsnatsChild(["-a", "127.0.0.1", "-p", String(first.port)]);
    await waitUntil(() => seen.some((s) => s.type === "reconnect"), "reconnect status", 10000);
    nc.publish("rc.x", "after");
    await col.waitCount(2);
    assert.deepEqual(col.strings(), ["before", "after"]);
  } finally {
    await nc.close();
    await first.stop();
    if (second) await second.stop();
  }
});

void test("lame duck (in-process): clients get an ldm INFO, then are disconnected; no new connections", async () => {
  const srv = await startServer({ host: "127.0.0.1", port: 0, lameDuckDurationMs: 400, lameDuckGracePeriodMs: 150 });
  const nc = await connect({ servers: srv.url, maxReconnectAttempts: 0, reconnect: false });
  const seen = watchStatus(nc);
  const raw = await RawClient.connect(srv.port);
  await raw.handshake();
  const done = srv.server.enterLameDuck();
  await raw.waitForText('"ldm":true');
  assert.match(raw.text, /\r\nINFO \{[^\r\n]*"ldm":true[^\r\n]*\}\r\n/);
  await waitUntil(() => seen.some((s) => s.type === "ldm"), "ldm status");
  await within(nc.closed(), "client closed by lame duck");
  await raw.waitClosed();
  await within(done, "lame duck finishes with shutdown");
  await assert.rejects(() => RawClient.connect(srv.port), /ECONNREFUSED/);
});

void test("lame duck (CLI): SIGUSR2 sends ldm INFO, closes clients and the process exits 0", async () => {
  const dir = mkdtempSync(join(tmpdir(), "tsnats-ldm-"));
  try {
    const conf = join(dir, "ldm.conf");
    writeFileSync(conf, "lame_duck_duration: 1s\nlame_duck_grace_period: 200ms\n");
    const child = await startTsnatsChild(["-a", "127.0.0.1", "-p", "-1", "-c", conf]);
    try {
      const nc = await connect({ servers: child.url, maxReconnectAttempts: 0, reconnect: false });
      const seen = watchStatus(nc);
      await nc.flush();
      child.proc.kill("SIGUSR2");
      await waitUntil(() => seen.some((s) => s.type === "ldm"), "ldm status");
      await within(nc.closed(), "client closed by lame duck", 10000);
      assert.equal(await within(child.exited, "process exit", 10000), 0);
    } finally {
      await child.stop();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

void test("pings: a raw client that never answers PING gets 'Stale Connection'; a real client stays", async () => {
  const srv = await startServer({ host: "127.0.0.1", port: 0, pingIntervalMs: 100, pingMax: 2 });
  try {
    const nc = await connect({ servers: srv.url });
    const mute = await RawClient.connect(srv.port);
    await mute.handshake();
    await mute.waitClosed();
    // Two unanswered PINGs, then the error (PING_MAX = 2).
    assert.match(mute.text, /PING\r\nPING\r\n-ERR 'Stale Connection'\r\n$/);
    // A client that answers with PONG is still connected after several intervals.
    const answering = await RawClient.connect(srv.port);
    await answering.handshake();
    for (let i = 0; i < 4; i++) {
      await answering.waitForCount("PING\r\n", i + 1);
      answering.write("PONG\r\n");
    }
    assert.equal(answering.closed, false);
    assert.equal(nc.isClosed(), false);
    await nc.flush();
    answering.close();
    await nc.close();
  } finally {
    await srv.close();
  }
});
