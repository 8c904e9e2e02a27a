// Hostile: one client writes thousands of $JS.API.STREAM.INFO requests in one write. A plain
// request (no body) is answered from the stream's cached reply head without a promise per
// request, the queue yields after a slice of time or of reply bytes per turn, and another
// client is served in between.
//
// Asserted by ordering: the bystander also subscribes to the replies and sends PING when the
// first one reaches it; its PONG comes before the last reply (the server writes to its socket
// in order). And the fast reply is the reply dispatch builds: the same JSON, field for field
// and in order, as a request with a body ("{}") that takes the general way.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { startHostile, connected, Replies, type Hostile } from "./harness.js";

const N = 5000;

let srv: Hostile;
let dir = "";
before(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), "hard14b-infoburst-"));
  srv = await startHostile(["-js", "-sd", dir]);
  const c = await Replies.open(srv.port);
  const subjects = Array.from({ length: 100 }, (_, i) => `burst.${i}`);
  c.pub("$JS.API.STREAM.CREATE.BURST", "_R.1", JSON.stringify({ name: "BURST", subjects, storage: "memory" }));
  const r = await c.json("_R.1");
  assert.equal(r["error"], undefined, JSON.stringify(r));
  for (let i = 0; i < 10; i++) c.pub(`burst.${i}`, "", `m${i}`);
  c.close();
});
after(async () => {
  await srv.stop();
  rmSync(dir, { recursive: true, force: true });
});

void test("a STREAM.INFO without a body answers what one with a body does (the fast path's bytes)", async () => {
  const c = await Replies.open(srv.port);
  try {
    c.pub("$JS.API.STREAM.INFO.BURST", "_R.fast", "");
    c.pub("$JS.API.STREAM.INFO.BURST", "_R.slow", "{}");
    const fast = await c.reply("_R.fast");
    const slow = await c.reply("_R.slow");
    const strip = (s: string): string => s.replace(/"ts":"[^"]*"/, '"ts":""');
    assert.equal(strip(fast.body), strip(slow.body));
    // The fast reply's state part is cached while the stream is unchanged: every change a
    // plain reply shows (a message stored, one deleted, a consumer) makes it anew.
    const changes: [string, string, string][] = [
      ["burst.1", "", "more"],
      ["$JS.API.STREAM.MSG.DELETE.BURST", "_R.del", JSON.stringify({ seq: 3 })],
      ["$JS.API.CONSUMER.CREATE.BURST.C1", "_R.cc", JSON.stringify({ stream_name: "BURST", config: { name: "C1", ack_policy: "explicit" } })],
      ["$JS.API.CONSUMER.DELETE.BURST.C1", "_R.cd", ""],
    ];
    let prev = strip(fast.body);
    for (const [i, [subject, reply, body]] of changes.entries()) {
      c.pub(subject, reply, body);
      if (reply !== "") await c.reply(reply);
      c.pub("$JS.API.STREAM.INFO.BURST", `_R.fast${i}`, "");
      c.pub("$JS.API.STREAM.INFO.BURST", `_R.slow${i}`, "{}");
      const f = await c.reply(`_R.fast${i}`);
      const g = await c.reply(`_R.slow${i}`);
      assert.equal(strip(f.body), strip(g.body), `after ${subject}`);
      assert.notEqual(strip(f.body), prev, `after ${subject}: the reply changed`);
      prev = strip(f.body);
    }
    const after = JSON.parse((await c.reply("_R.fast1")).body) as { state: { messages: number; num_deleted: number } };
    assert.deepEqual([after.state.messages, after.state.num_deleted], [10, 1]);
    c.pub("$JS.API.STREAM.INFO.BURST", "_R.last", "");
    const last = JSON.parse((await c.reply("_R.last")).body) as { state: { consumer_count: number } };
    assert.equal(last.state.consumer_count, 0);
    const j = JSON.parse(fast.body) as { type: string; state: { messages: number }; config: { subjects: string[] }; cluster: { leader: string } };
    assert.equal(j.type, "io.nats.jetstream.api.v1.stream_info_response");
    assert.equal(j.state.messages, 10);
    assert.equal(j.config.subjects.length, 100);
    assert.equal(typeof j.cluster.leader, "string");
    // A stream that does not exist still gets its error (the general way).
    c.pub("$JS.API.STREAM.INFO.NOPE", "_R.none", "");
    const none = await c.json("_R.none");
    assert.equal((none["error"] as { err_code: number }).err_code, 10059);
  } finally {
    c.close();
  }
});

void test(`${N} STREAM.INFO in one write: a bystander's PING is answered before the last reply`, { timeout: 60_000 }, async () => {
  const by = await connected(srv.port);
  const f = await connected(srv.port);
  try {
    by.write("SUB _HI.* 1\r\nPING\r\n");
    assert.ok(await by.until((t) => t.includes("PONG\r\n"), 10_000));
    by.s.removeAllListeners("data");
    let replies = 0;
    let atPong = -1;
    let tail = "";
    let waiter: (() => void) | null = null;
    by.s.on("data", (d: string | Buffer) => {
      const t = tail + d.toString();
      let i = 0;
      for (;;) {
        const m = t.indexOf("MSG _HI.", i);
        const p = t.indexOf("PONG\r\n", i);
        if (m < 0 && p < 0) break;
        if (p >= 0 && (m < 0 || p < m)) {
          if (atPong < 0) atPong = replies;
          i = p + 6;
        } else {
          if (replies++ === 0) by.write("PING\r\n");
          i = m + 8;
        }
      }
      tail = t.slice(Math.max(i, t.length - 16));
      waiter?.();
    });
    f.s.on("data", () => undefined);
    const parts = ["SUB _HI.* 1\r\n"];
    for (let i = 0; i < N; i++) parts.push(`PUB $JS.API.STREAM.INFO.BURST _HI.${i} 0\r\n\r\n`);
    f.write(parts.join(""));
    const end = performance.now() + 45_000;
    while ((replies < N || atPong < 0) && performance.now() < end) {
      await new Promise<void>((r) => {
        waiter = r;
        setTimeout(r, 200);
      });
    }
    assert.equal(replies, N, `${replies} of ${N} replies`);
    assert.ok(atPong >= 0 && atPong < N, `the PING waited for every reply (PONG after ${atPong} of ${N})`);
  } finally {
    by.destroy();
    f.destroy();
  }
});

