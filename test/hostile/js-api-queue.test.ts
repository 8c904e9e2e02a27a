// Hostile: a burst of JetStream API requests. The queue holds at most request_queue_limit
// (nats-server JSDefaultRequestQueueLimit); reaching it drops what is queued without a reply
// and publishes $JS.EVENT.ADVISORY.API.LIMIT_REACHED, as nats-server does, and the server
// answers the next request. Below the limit every request is answered, in order, while a
// bystander's PINGs stay fast (the queue yields to the loop between slices).

import { test } from "node:test";
import assert from "node:assert/strict";
import net from "node:net";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startServer } from "../../src/index.js";
import { RawClient } from "../helpers/core-raw.js";
import { missedSlots, startBystander, summary } from "../helpers/bystander.js";
import { orderedReplies } from "./harness.js";

async function boot(limit?: number, infoLimit?: number) {
  const dir = mkdtempSync(join(tmpdir(), "tsnats-hostile-api-"));
  const srv = await startServer({
    port: 0,
    host: "127.0.0.1",
    jetstream: {
      enabled: true,
      storeDir: dir,
      ...(limit !== undefined ? { requestQueueLimit: limit } : {}),
      ...(infoLimit !== undefined ? { infoQueueLimit: infoLimit } : {}),
    },
  });
  return {
    srv,
    close: async () => {
      await srv.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

function requests(n: number, subject: string, body = ""): string {
  const parts: string[] = [];
  for (let i = 0; i < n; i++) parts.push(`PUB ${subject} _R.${i} ${Buffer.byteLength(body)}\r\n${body}\r\n`);
  return parts.join("");
}

/** Waits (5 s bound) until every one of `n` STREAM.INFO requests is answered or counted as
 *  dropped in an advisory; returns [answered, dropped]. */
async function answeredOrDropped(c: RawClient, n: number): Promise<[number, number]> {
  const counts = (): [number, number] => {
    let d = 0;
    for (const m of c.text.matchAll(/"dropped":(\d+)/g)) d += Number(m[1]);
    return [c.text.split("stream_info_response").length - 1, d];
  };
  for (let waited = 0; counts()[0] + counts()[1] < n && waited < 5000; waited += 20) await new Promise((r) => setTimeout(r, 20));
  return counts();
}

/** Handshake, subscribe to the replies (and the limit advisory), create memory stream S. */
async function withStreamS(c: RawClient): Promise<void> {
  await c.handshake();
  c.write("SUB $JS.EVENT.ADVISORY.API.LIMIT_REACHED 9\r\nSUB _R.* 1\r\n");
  c.write(requests(1, "$JS.API.STREAM.CREATE.S", JSON.stringify({ name: "S", subjects: ["s.>"], storage: "memory" })));
  await c.waitForText("stream_create_response");
  c.clear();
}

void test("over request_queue_limit: queued requests dropped unanswered, advisory, then service goes on", { timeout: 30000 }, async () => {
  const env = await boot(50);
  const c = await RawClient.connect(env.srv.server.port);
  try {
    await c.handshake();
    c.write("SUB $JS.EVENT.ADVISORY.API.LIMIT_REACHED 9\r\nSUB _R.* 1\r\n");
    c.write(requests(1, "$JS.API.STREAM.CREATE.S", JSON.stringify({ name: "S", subjects: ["s.>"], storage: "memory" })));
    await c.waitForText('"type":"io.nats.jetstream.api.v1.stream_create_response"');
    c.clear();
    // 200 requests in one write: the queue reaches 50 while they are parsed.
    c.write(requests(200, "$JS.API.STREAM.INFO.S") + "PING\r\n");
    const text = await c.waitFor((t) => t.includes("api_limit_reached") && t.includes("PONG"), "the limit advisory");
    const adv = /MSG \$JS\.EVENT\.ADVISORY\.API\.LIMIT_REACHED 9 \d+\r\n(\{[^\r]*\})/.exec(text);
    assert.ok(adv, text.slice(0, 500));
    const body = JSON.parse(adv[1]!) as Record<string, unknown>;
    assert.equal(body["type"], "io.nats.jetstream.advisory.v1.api_limit_reached");
    assert.equal(body["dropped"], 50);
    for (const k of ["id", "timestamp", "server"]) assert.equal(typeof body[k], "string", k);
    // Let whatever was not dropped be answered: every request is either answered or counted
    // in an advisory (all 200 were parsed in one read, before the queue ran: 4 x 50).
    const [replies, dropped] = await answeredOrDropped(c, 200);
    assert.equal(replies + dropped, 200, `${replies} replies, ${dropped} dropped`);
    assert.ok(dropped >= 50);
    // The service goes on.
    c.clear();
    c.write(requests(1, "$JS.API.STREAM.INFO.S"));
    await c.waitForText("stream_info_response");
  } finally {
    c.close();
    await env.close();
  }
});

void test("below the limit: 5000 API requests in one write are all answered in order, bystander PINGs stay fast", { timeout: 60000 }, async () => {
  const env = await boot();
  const c = await RawClient.connect(env.srv.server.port);
  // The server runs in this process: the bystander measures the same loop.
  const by = await startBystander(env.srv.server.port, 200);
  try {
    await withStreamS(c);
    // Plain sockets for the flood so that the reply bytes do not pile up in a string.
    const flood = new net.Socket();
    const all = orderedReplies(flood, "_R", 5000, 30000);
    await new Promise<void>((r) => flood.connect(env.srv.server.port, "127.0.0.1", r));
    flood.write('CONNECT {"verbose":false,"pedantic":false}\r\nSUB _R.* 1\r\n' + requests(5000, "$JS.API.STREAM.INFO.S"));
    const order = await all;
    flood.destroy();
    assert.ok(order, "replies out of order");
    const rtts = await by.done;
    const missed = missedSlots(rtts, 50);
    assert.ok(missed <= 20, `${missed} slots missed (${summary(rtts)})`);
  } finally {
    by.close();
    c.close();
    await env.close();
  }
});

void test("info requests have their own queue: worked after the others, dropped at info_queue_limit without touching the others", { timeout: 30000 }, async () => {
  const env = await boot(undefined, 50);
  const c = await RawClient.connect(env.srv.server.port);
  try {
    await withStreamS(c);
    // 40 infos then a create, in one write: the create (the other queue) is answered first.
    const create = JSON.stringify({ name: "T", subjects: ["t.>"], storage: "memory" });
    c.write(requests(40, "$JS.API.STREAM.INFO.S") + `PUB $JS.API.STREAM.CREATE.T _R.create ${create.length}\r\n${create}\r\n`);
    let text = await c.waitForCount("stream_info_response", 40);
    const firstInfo = text.indexOf("stream_info_response");
    const created = text.indexOf("stream_create_response");
    assert.ok(created >= 0 && created < firstInfo, "the create waited behind info requests");
    // 200 infos and a create in one write, info_queue_limit 50: infos are dropped (advisory),
    // the create is not.
    c.clear();
    const create2 = JSON.stringify({ name: "U", subjects: ["u.>"], storage: "memory" });
    c.write(requests(200, "$JS.API.STREAM.INFO.S") + `PUB $JS.API.STREAM.CREATE.U _R.create2 ${create2.length}\r\n${create2}\r\nPING\r\n`);
    text = await c.waitFor((t) => t.includes("api_limit_reached") && t.includes("stream_create_response") && t.includes("PONG"), "the advisory and the create");
    const [replies, dropped] = await answeredOrDropped(c, 200);
    text = c.text;
    assert.equal(replies + dropped, 200, `${replies} replies, ${dropped} dropped`);
    assert.ok(dropped >= 50);
    assert.match(text, /"did_create":true/);
  } finally {
    c.close();
    await env.close();
  }
});

void test("a burst of API requests in one write is read over many turns (the reader yields as for SUBs)", { timeout: 30000 }, async () => {
  const env = await boot();
  const c = await RawClient.connect(env.srv.server.port);
  try {
    await withStreamS(c);
    // 5,000 requests without replies (nothing to write back), then PING: all parsed in the
    // reads of one turn, the turn counter would move once or twice; each request costs
    // API_OP_COST of the OPS_PER_TURN budget, so the read yields every 250 requests.
    const turn0 = env.srv.server.turn;
    const parts: string[] = [];
    for (let i = 0; i < 5000; i++) parts.push("PUB $JS.API.STREAM.INFO.S 0\r\n\r\n");
    c.write(parts.join("") + "PING\r\n");
    await c.waitForText("PONG");
    const turns = env.srv.server.turn - turn0;
    assert.ok(turns >= 15, `the burst was read in ${turns} turns`);
  } finally {
    c.close();
    await env.close();
  }
});
