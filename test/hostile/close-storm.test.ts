// Hundreds of clients that close at once: the server reads all their EOFs in one read phase
// and used to let every socket go right there (Node ends and destroys a socket at its peer's
// EOF): 2,000 of them held the loop for 80 ms. The listener now allows half-open sockets and
// the acceptor closes the ended ones a slice per turn, so the loop turns in between.
//
// Asserted on the turns themselves, in process: a setImmediate ticker samples the number of
// open clients once per turn; no turn may close more than a slice, and the clients still all
// go. With Node's own close at EOF the first sampled drop is hundreds.

import { test } from "node:test";
import assert from "node:assert/strict";
import { startServer } from "../../src/index.js";
import { connected, type Sock } from "./harness.js";

const N = 600;
const SLICE = 64; // accept.ts PEER_ENDS_PER_TURN

void test(`${N} clients closing at once are let go a slice per turn, all of them`, { timeout: 60_000 }, async () => {
  const srv = await startServer({ port: 0, host: "127.0.0.1" });
  try {
    const socks: Sock[] = [];
    for (let i = 0; i < N; i += 100) socks.push(...(await Promise.all(Array.from({ length: 100 }, () => connected(srv.port)))));
    assert.equal(srv.server.clients.size, N);
    const sizes: number[] = [];
    let ticking = true;
    const tick = (): void => {
      sizes.push(srv.server.clients.size);
      if (ticking) setImmediate(tick);
    };
    setImmediate(tick);
    for (const s of socks) s.destroy();
    const end = Date.now() + 30_000;
    while (srv.server.clients.size > 0 && Date.now() < end) await new Promise((r) => setTimeout(r, 5));
    ticking = false;
    sizes.push(srv.server.clients.size); // the last turn's closes, if the ticker did not see them
    assert.equal(srv.server.clients.size, 0, "every client was closed");
    let maxDrop = 0;
    for (let i = 1; i < sizes.length; i++) maxDrop = Math.max(maxDrop, sizes[i - 1]! - sizes[i]!);
    assert.ok(maxDrop <= SLICE, `at most ${SLICE} clients closed in one turn (most: ${maxDrop})`);
    // A later client is served as usual.
    const c = await connected(srv.port);
    c.write("PING\r\n");
    assert.ok(await c.until((t) => t.includes("PONG\r\n"), 5000));
    c.destroy();
  } finally {
    await srv.close();
  }
});

void test("a client that sends PING and then EOF still gets its PONG (half-open peer)", async () => {
  const srv = await startServer({ port: 0, host: "127.0.0.1" });
  try {
    const c = await connected(srv.port);
    c.s.end("PING\r\n");
    assert.ok(await c.until((t) => t.includes("PONG\r\n"), 5000), c.text);
    const end = Date.now() + 5000;
    while (srv.server.clients.size > 0 && Date.now() < end) await new Promise((r) => setTimeout(r, 5));
    assert.equal(srv.server.clients.size, 0, "closed after its EOF");
    c.destroy();
  } finally {
    await srv.close();
  }
});
