// Hostile clients against a tsnats child process (issue 14): each case asserts the server's
// answer, a bound on its RSS growth (/proc) and a bound on a bystander's late PONGs (a count
// of missed deadlines, not a timing assertion).

import { test } from "node:test";
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { bystanderPings, connected, MB, missBudget, pump, Sock, startHostile, withBystander, type Hostile } from "./harness.js";

async function withServer(args: string[], config: string | undefined, fn: (h: Hostile) => Promise<void>): Promise<void> {
  const h = await startHostile(args, config);
  try {
    await fn(h);
  } finally {
    await h.stop();
  }
}

const AUTH = ["--user", "u", "--pass", "p"];
const CREDS = { user: "u", pass: "p" };

void test("connection flood: 1,500 sockets opened at once all get INFO and a PONG; RSS and the bystander stay bounded", async () => {
  await withServer(AUTH, undefined, async (h) => {
    const by = await connected(h.port, CREDS);
    const rss0 = h.rss();
    const N = 1500;
    const { value: socks, pings } = await withBystander(by, async () => {
      const socks = await Promise.all(Array.from({ length: N }, () => Sock.open(h.port)));
      const infos = await Promise.all(socks.map((s) => s.until((t) => t.startsWith("INFO ") && t.includes("\r\n"), 20_000)));
      assert.equal(infos.filter((x) => x).length, N, "every socket gets INFO");
      for (const s of socks) s.write(`CONNECT ${JSON.stringify({ verbose: false, ...CREDS })}\r\nPING\r\n`);
      const pongs = await Promise.all(socks.map((s) => s.until((t) => t.includes("PONG\r\n"), 20_000)));
      assert.equal(pongs.filter((x) => x).length, N, "every socket is answered");
      return socks;
    });
    const grown = h.rss() - rss0;
    for (const s of socks) s.destroy();
    const b = missBudget(pings);
    assert.ok(b.ok, b.text);
    // ~15 KB per idle connection today (nats-server ~30 KB); 64 KB each is the ceiling.
    assert.ok(grown < N * 64 * 1024, `RSS grew ${(grown / MB).toFixed(1)} MB for ${N} connections`);
    by.destroy();
  });
});

void test("unauthenticated PUB flood: 300 sockets each announce 1 MiB and push it; each is refused, nothing is buffered", async () => {
  await withServer(AUTH, undefined, async (h) => {
    const by = await connected(h.port, CREDS);
    const rss0 = h.rss();
    const N = 300;
    const payload = Buffer.concat([Buffer.from(`PUB x ${MB}\r\n`), Buffer.alloc(MB, 120), Buffer.from("\r\n")]);
    const { value: answers, pings } = await withBystander(by, async () => {
      const socks = await Promise.all(Array.from({ length: N }, () => Sock.open(h.port)));
      await Promise.all(socks.map((s) => s.until((t) => t.includes("\r\n"), 20_000)));
      // Each pushes its whole frame (the server stops reading at the first byte): in parallel.
      await Promise.all(socks.map((s) => pump(s.s, payload, payload.length)));
      const closed = await Promise.all(socks.map((s) => s.until(() => s.closed, 20_000)));
      const answers = socks.map((s) => s.text.slice(s.text.indexOf("\r\n") + 2));
      assert.equal(closed.filter((x) => x).length, N, "every socket is closed by the server");
      return answers;
    });
    // The -ERR, or nothing: the server closes with the pushed bytes unread, so its kernel
    // answers them with a reset, which can drop the -ERR before the peer reads it
    // (nats-server alike). Never anything else.
    const other = answers.filter((a) => a !== "-ERR 'Authorization Violation'\r\n" && a !== "");
    assert.deepEqual(other, [], "only refusals");
    assert.ok(answers.some((a) => a !== ""), "some refusals are read");
    const grown = h.rss() - rss0;
    const b = missBudget(pings);
    assert.ok(b.ok, b.text);
    // 300 MiB was sent: buffering any of it per connection would show.
    assert.ok(grown < 80 * MB, `RSS grew ${(grown / MB).toFixed(1)} MB`);
    by.destroy();
  });
});

void test("a subscriber that never reads is cut off as a slow consumer at max_pending; the server's memory stays bounded", async () => {
  await withServer([], "max_pending: 8MB\n", async (h) => {
    const by = await connected(h.port);
    const slow = await connected(h.port);
    slow.write("SUB slow.x 1\r\nPING\r\n");
    assert.ok(await slow.until((t) => t.includes("PONG\r\n"), 5000));
    slow.s.pause(); // reads nothing from now on
    const pub = await connected(h.port);
    const rss0 = h.rss();
    const frame = Buffer.from(`PUB slow.x 65536\r\n${"m".repeat(65536)}\r\n`);
    const chunk = Buffer.concat(Array.from({ length: 8 }, () => frame));
    const { pings } = await withBystander(by, async () => {
      // 200 MB at a reader that takes nothing: the server must drop it, not hold it.
      await pump(pub.s, chunk, 200 * MB);
      pub.write("PING\r\n");
      assert.ok(await pub.until((t) => t.includes("PONG\r\n"), 20_000), "the publisher is still served");
    });
    const grown = h.rss() - rss0;
    slow.s.resume();
    assert.ok(await slow.until(() => slow.closed, 10_000), "the slow consumer was closed");
    const b = missBudget(pings);
    assert.ok(b.ok, b.text);
    assert.ok(grown < 64 * MB, `RSS grew ${(grown / MB).toFixed(1)} MB (max_pending 8 MB)`);
    by.destroy();
    pub.destroy();
  });
});

void test("garbage bytes: 400 sockets send random bytes; each is refused or closed, the server stays up", async () => {
  await withServer([], undefined, async (h) => {
    const by = await connected(h.port);
    const rss0 = h.rss();
    const N = 400;
    const { pings } = await withBystander(by, async () => {
      for (let round = 0; round < 4; round++) {
        const socks = await Promise.all(Array.from({ length: N / 4 }, () => Sock.open(h.port)));
        for (const s of socks) s.write(randomBytes(1 + Math.floor(Math.random() * 8192)));
        // Every socket gets an answer or is closed; those whose bytes happened to parse (a
        // rare valid prefix) are closed by us after a while.
        await Promise.all(socks.map((s) => s.until((t) => t.includes("-ERR") || s.closed, 2000)));
        for (const s of socks) s.destroy();
      }
    });
    const grown = h.rss() - rss0;
    const b = missBudget(pings);
    assert.ok(b.ok, b.text);
    assert.ok(grown < 64 * MB, `RSS grew ${(grown / MB).toFixed(1)} MB`);
    // Still serving: a new connection works.
    const c = await connected(h.port);
    c.destroy();
    by.destroy();
  });
});

void test("a huge control line (16 MB without a line end) is refused at max_control_line, not buffered", async () => {
  await withServer([], undefined, async (h) => {
    const by = await connected(h.port);
    const rss0 = h.rss();
    const N = 20;
    const { value: texts, pings } = await withBystander(by, async () => {
      const socks = await Promise.all(Array.from({ length: N }, () => connected(h.port)));
      const junk = Buffer.alloc(64 * 1024, 97); // "aaaa...": one op name that never ends
      await Promise.all(socks.map((s) => pump(s.s, Buffer.concat([Buffer.from("SUB "), junk]), 16 * MB)));
      await Promise.all(socks.map((s) => s.until(() => s.closed, 10_000)));
      return socks.map((s) => s.text);
    });
    // The -ERR, or nothing (a reset: the server closed with bytes unread), never more.
    for (const t of texts) assert.ok(t === "-ERR 'maximum control line exceeded'\r\n" || t === "", JSON.stringify(t));
    // The server keeps a refused socket (paused) for a moment after its FIN, so the reset
    // comes after the peer has read the -ERR: most of the 20 read it, not just some.
    const read = texts.filter((t) => t !== "").length;
    assert.ok(read >= N / 2, `${read} of ${N} refusals are read`);
    const grown = h.rss() - rss0;
    const b = missBudget(pings);
    assert.ok(b.ok, b.text);
    assert.ok(grown < 64 * MB, `RSS grew ${(grown / MB).toFixed(1)} MB`);
    by.destroy();
  });
});

void test("after a flood of connections with garbage, the server's memory comes back (no connection left behind)", async () => {
  await withServer([], undefined, async (h) => {
    const by = await connected(h.port);
    // Warm up once, so that the baseline includes the runtime's one-time growth.
    const flood = async (): Promise<void> => {
      for (let round = 0; round < 5; round++) {
        const socks = await Promise.all(Array.from({ length: 200 }, () => Sock.open(h.port)));
        for (const s of socks) s.write(Buffer.concat([Buffer.from("SUB a 1\r\nPUB a 100000\r\n"), randomBytes(50_000)]));
        await new Promise((r) => setTimeout(r, 50));
        for (const s of socks) s.destroy();
      }
    };
    await flood();
    await new Promise((r) => setTimeout(r, 1500));
    const rss1 = h.rss();
    const p = bystanderPings(by);
    for (let i = 0; i < 3; i++) await flood();
    const pings = await p.stop();
    await new Promise((r) => setTimeout(r, 1500));
    const rss2 = h.rss();
    const b = missBudget(pings);
    assert.ok(b.ok, b.text);
    // Three more floods of the same size: RSS plateaus rather than grows with each.
    assert.ok(rss2 - rss1 < 48 * MB, `RSS ${(rss1 / MB).toFixed(0)} MB after one flood, ${(rss2 / MB).toFixed(0)} MB after four`);
    by.write("PING\r\n");
    assert.ok(await by.until((t) => t.includes("PONG"), 5000));
    by.destroy();
  });
});
