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
import { defaultWebSocketOptions } from "../../src/server/options.js";
import { WsRaw } from "../helpers/ws-raw.js";
import { connected, perTurnGrowth, type Sock } from "./harness.js";

const N = 600;
const SLICE = 64; // accept.ts PEER_ENDS_PER_TURN

/** Waits (30 s at most) until count() is 0; the most it dropped in one turn meanwhile. */
async function largestDropPerTurn(count: () => number): Promise<number> {
  const drop = perTurnGrowth(() => -count());
  const end = Date.now() + 30_000;
  while (count() > 0 && Date.now() < end) await new Promise((r) => setTimeout(r, 5));
  return drop.stop();
}

void test(`${N} clients closing at once are let go a slice per turn, all of them`, { timeout: 60_000 }, async () => {
  const srv = await startServer({ port: 0, host: "127.0.0.1" });
  try {
    const socks: Sock[] = [];
    for (let i = 0; i < N; i += 100) socks.push(...(await Promise.all(Array.from({ length: 100 }, () => connected(srv.port)))));
    assert.equal(srv.server.clients.size, N);
    for (const s of socks) s.destroy();
    const maxDrop = await largestDropPerTurn(() => srv.server.clients.size);
    assert.equal(srv.server.clients.size, 0, "every client was closed");
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

void test(`${N} WebSocket clients closing at once are let go a slice per turn, all of them`, { timeout: 60_000 }, async () => {
  const ws = { ...defaultWebSocketOptions(), host: "127.0.0.1", port: -1, noTls: true };
  const srv = await startServer({ port: 0, host: "127.0.0.1", websocket: ws });
  try {
    const port = srv.server.wsPort;
    const socks: WsRaw[] = [];
    for (let i = 0; i < N; i += 100) socks.push(...(await Promise.all(Array.from({ length: 100 }, () => WsRaw.open(port)))));
    const end0 = Date.now() + 10_000;
    while (srv.server.clients.size < N && Date.now() < end0) await new Promise((r) => setTimeout(r, 5));
    assert.equal(srv.server.clients.size, N);
    for (const s of socks) s.socket.destroy();
    const maxDrop = await largestDropPerTurn(() => srv.server.clients.size);
    assert.equal(srv.server.clients.size, 0, "every client was closed");
    assert.ok(maxDrop <= SLICE, `at most ${SLICE} clients closed in one turn (most: ${maxDrop})`);
    // A later WebSocket client is served as usual.
    const c = await WsRaw.open(port);
    c.proto("CONNECT {}\r\nPING\r\n");
    const t = Date.now() + 5000;
    while (!c.text.includes("PONG\r\n") && Date.now() < t) await new Promise((r) => setTimeout(r, 5));
    assert.ok(c.text.includes("PONG\r\n"), c.text);
    c.socket.destroy();
  } finally {
    await srv.close();
  }
});

void test("a WebSocket client that sends PING and then EOF still gets its PONG, and is closed", async () => {
  const ws = { ...defaultWebSocketOptions(), host: "127.0.0.1", port: -1, noTls: true };
  const srv = await startServer({ port: 0, host: "127.0.0.1", websocket: ws });
  try {
    const c = await WsRaw.open(srv.server.wsPort);
    c.proto("CONNECT {}\r\nPING\r\n");
    c.socket.end();
    const t = Date.now() + 5000;
    while ((!c.text.includes("PONG\r\n") || srv.server.clients.size > 0) && Date.now() < t) await new Promise((r) => setTimeout(r, 5));
    assert.ok(c.text.includes("PONG\r\n"), c.text);
    assert.equal(srv.server.clients.size, 0, "closed after its EOF");
    // And one that ends during its handshake goes too.
    const h = await WsRaw.connect(srv.server.wsPort);
    h.socket.end();
    const t2 = Date.now() + 5000;
    while (!h.closed && Date.now() < t2) await new Promise((r) => setTimeout(r, 5));
    assert.ok(h.closed, "a socket that ended before its upgrade was closed");
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
