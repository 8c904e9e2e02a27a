// Hostile: a restart on a store with 1,200 file streams (each with a durable consumer).
// Recovery is chunked across turns of the event loop (the encryption check, each stream's
// block files and subjects, each consumer), and the monitor starts before it, as in
// nats-server: /healthz polled all through the start answers — 500 "failed to be ready for
// connections after 1ms: server" until the client port listens, then 200 — and its round
// trips are bounded as a count of missed deadlines, never one timing. Before: the monitor
// was not even listening until all of recovery had run in one synchronous stretch.

import { test } from "node:test";
import assert from "node:assert/strict";
import http from "node:http";
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { startTsnatsChild } from "../helpers/core-child.js";
import { connected, Replies } from "./harness.js";
import { freePort } from "../faults/rig.js";

const STREAMS = 1200;
const DEADLINE_MS = 100;
const POLL_MS = 5;

let replyN = 0;
async function request(c: Replies, subject: string, body: string): Promise<Record<string, unknown>> {
  const reply = `_R.${++replyN}`;
  c.pub(subject, reply, body);
  return c.json(reply);
}

function healthz(port: number): Promise<{ status: number; body: string }> {
  return new Promise((resolve) => {
    const r = http.get({ host: "127.0.0.1", port, path: "/healthz", timeout: 10_000 }, (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (d: string) => (body += d));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
    });
    // Not listening yet (connection refused): status 0.
    r.on("error", () => resolve({ status: 0, body: "" }));
    r.on("timeout", () => {
      r.destroy();
      resolve({ status: -1, body: "" });
    });
  });
}

/** One stream S0 with a durable consumer and a few messages made by a server, then copied
 *  as S1..S<n-1> (meta.json renamed, its own subjects). */
async function buildStore(dir: string, n: number): Promise<void> {
  const srv = await startTsnatsChild(["-a", "127.0.0.1", "-p", "-1", "-js", "-sd", dir]);
  try {
    const c = await Replies.open(srv.port);
    const stream = await request(c, "$JS.API.STREAM.CREATE.S0", JSON.stringify({ name: "S0", subjects: ["s0.>"], storage: "file" }));
    assert.equal(stream["error"], undefined, JSON.stringify(stream));
    const cons = await request(c, "$JS.API.CONSUMER.CREATE.S0.C", JSON.stringify({ stream_name: "S0", config: { durable_name: "C", ack_policy: "explicit" } }));
    assert.equal(cons["error"], undefined, JSON.stringify(cons));
    const p = await connected(srv.port);
    for (let i = 0; i < 10; i++) p.s.write(`PUB s0.x 5\r\nhello\r\n`);
    p.s.write("PING\r\n");
    assert.ok(await p.until((t) => t.includes("PONG"), 10_000));
    p.s.destroy();
    c.close();
  } finally {
    await srv.stop();
  }
  const streams = path.join(dir, "jetstream", "$G", "streams");
  const src = path.join(streams, "S0");
  const meta = JSON.parse(readFileSync(path.join(src, "meta.json"), "utf8")) as { config: { name: string; subjects: string[] } };
  for (let i = 1; i < n; i++) {
    const to = path.join(streams, `S${i}`);
    cpSync(src, to, { recursive: true });
    meta.config.name = `S${i}`;
    meta.config.subjects = [`s${i}.>`];
    writeFileSync(path.join(to, "meta.json"), JSON.stringify(meta));
  }
}

void test(`restart on ${STREAMS} streams: /healthz answers during recovery (500, then 200), its round trips stay bounded`, { timeout: 300_000 }, async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), "tsnats-hostile-recovery-"));
  try {
    await buildStore(dir, STREAMS);
    const mport = await freePort();
    let polling = true;
    const rtts: number[] = [];
    const seen = new Map<number, number>();
    let notReadyBody = "";
    const poller = (async () => {
      while (polling) {
        const t0 = performance.now();
        const r = await healthz(mport);
        const ms = performance.now() - t0;
        if (r.status !== 0) rtts.push(ms);
        seen.set(r.status, (seen.get(r.status) ?? 0) + 1);
        if (r.status === 500) notReadyBody = r.body;
        if (r.status === 200) return;
        await new Promise((res) => setTimeout(res, POLL_MS));
      }
    })();
    const srv = await startTsnatsChild(["-a", "127.0.0.1", "-p", "-1", "-m", String(mport), "-js", "-sd", dir], 240_000);
    try {
      await poller;
      polling = false;
      assert.match(srv.log(), new RegExp(`JetStream started: ${STREAMS} streams recovered`));
      // The monitor answered while recovery ran, with nats-server's not-ready error.
      assert.ok((seen.get(500) ?? 0) > 0, `no /healthz answer during recovery: ${JSON.stringify([...seen])}`);
      assert.deepEqual(JSON.parse(notReadyBody), {
        status: "error",
        status_code: 500,
        error: "failed to be ready for connections after 1ms: server",
      });
      assert.equal(seen.get(200), 1);
      // Bounded: each poll slot spent more than DEADLINE_MS overdue counts (one long stall
      // of the whole recovery would count hundreds). Generous for a shared 2-core machine.
      let missed = 0;
      for (const r of rtts) if (r > DEADLINE_MS) missed += Math.ceil((r - DEADLINE_MS) / POLL_MS);
      const worst = Math.max(...rtts);
      assert.ok(missed <= 100, `${missed} poll slots missed over ${rtts.length} answers (worst ${worst.toFixed(0)} ms)`);
      // The consumers came back too.
      const c = await Replies.open(srv.port);
      const info = await request(c, `$JS.API.CONSUMER.INFO.S${STREAMS - 1}.C`, "");
      assert.equal((info["num_pending"] as number | undefined) ?? -1, 10, JSON.stringify(info));
      c.close();
    } finally {
      polling = false;
      await srv.stop();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
