// Hostile: one client writes tens of thousands of PUBs in one write. A connection's reads
// stop for the turn once it has spent READ_SLICE_MS in it over a few reads (and within one
// read, checked every PUB_CHECK_EVERY messages, past PUB_SPLIT_MS): other clients are served
// while the flood is still being handled. Before, a whole socket's worth of reads (up to 32 x 64 KiB in one
// turn) was handled in one go.
//
// Asserted by ordering, not timing: the bystander subscribes to the flood's subjects and
// sends PING when the first flood message reaches it. The server writes to one socket in
// order, so where the PONG falls among the flood's messages says how far the flood had got
// when the PING was read: before its last message, or the PING waited for all of it (before:
// 10,000 PUBs, some 220 KB, arrive together and were all handled in one turn, the PONG after
// the last of them).

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import net from "node:net";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { startHostile, connected, Replies, type Hostile } from "./harness.js";

const N = 10_000;

let srv: Hostile;
let dir = "";
before(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), "hard14b-pubflood-"));
  srv = await startHostile(["-js", "-sd", dir]);
  // A stream that stores the flood: each PUB is some microseconds of work, as for a
  // JetStream publisher that does not wait for acks.
  const c = await Replies.open(srv.port);
  c.pub("$JS.API.STREAM.CREATE.FLOOD", "_R.1", JSON.stringify({ name: "FLOOD", subjects: ["flood.>"], storage: "memory", max_msgs: 1000 }));
  const r = await c.json("_R.1");
  assert.equal(r["error"], undefined, JSON.stringify(r));
  c.close();
});
after(async () => {
  await srv.stop();
  rmSync(dir, { recursive: true, force: true });
});

/** Counts "MSG " frames of the flood and notes how many had come when the PONG came. */
class Watcher {
  msgs = 0;
  msgsAtPong = -1;
  private tail = "";
  private waiters: (() => void)[] = [];
  constructor(
    readonly s: net.Socket,
    onFirst: () => void,
  ) {
    s.on("data", (d: Buffer) => {
      const t = this.tail + d.toString("latin1");
      let i = 0;
      for (;;) {
        const m = t.indexOf("MSG flood.", i);
        const p = t.indexOf("PONG\r\n", i);
        if (m < 0 && p < 0) break;
        if (p >= 0 && (m < 0 || p < m)) {
          if (this.msgsAtPong < 0) this.msgsAtPong = this.msgs;
          i = p + 6;
        } else {
          if (this.msgs++ === 0) onFirst();
          i = m + 10;
        }
      }
      this.tail = t.slice(Math.max(i, t.length - 16));
      for (const w of this.waiters.splice(0)) w();
    });
  }
  async until(pred: () => boolean, ms: number): Promise<boolean> {
    const end = performance.now() + ms;
    while (!pred()) {
      const left = end - performance.now();
      if (left <= 0) return false;
      await new Promise<void>((r) => {
        const t = setTimeout(r, left);
        this.waiters.push(() => {
          clearTimeout(t);
          r();
        });
      });
    }
    return true;
  }
}

function flood(subject: (i: number) => string): Buffer {
  const parts: string[] = [];
  for (let i = 0; i < N; i++) parts.push(`PUB ${subject(i)} 5\r\nhello\r\n`);
  return Buffer.from(parts.join(""));
}

for (const kind of ["one subject", "distinct subjects"] as const) {
  void test(`${N} PUBs in one write (${kind}): a bystander's PING is answered before the flood is through`, { timeout: 60_000 }, async () => {
    const by = await connected(srv.port);
    const f = await connected(srv.port);
    try {
      by.write("SUB flood.> 1\r\nPING\r\n");
      assert.ok(await by.until((t) => t.includes("PONG\r\n"), 10_000));
      by.s.removeAllListeners("data");
      const w = new Watcher(by.s, () => by.write("PING\r\n"));
      f.write(flood(kind === "one subject" ? () => "flood.x" : (i) => `flood.${i}`));
      assert.ok(await w.until(() => w.msgs >= N && w.msgsAtPong >= 0, 30_000), `${w.msgs} of ${N} flood messages, PONG after ${w.msgsAtPong}`);
      assert.equal(w.msgs, N);
      assert.ok(w.msgsAtPong < N, `the PING waited for the whole flood (PONG after ${w.msgsAtPong} of ${N} messages)`);
      // The flooder's own session is intact: its PING comes back after everything.
      f.write("PING\r\n");
      assert.ok(await f.until((t) => t.includes("PONG\r\n"), 10_000));
    } finally {
      by.destroy();
      f.destroy();
    }
  });
}
