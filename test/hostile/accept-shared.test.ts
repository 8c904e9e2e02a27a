// Accepting: what a connection costs beyond its objects. Every accepted socket shares one
// set of listener functions ('close', 'drain', 'error', 'end') with the others, found by the
// socket's client under a symbol, so an accept burst allocates no closure (and context) per
// connection for them; each connection still gets its own reads and its own close.

import { test } from "node:test";
import assert from "node:assert/strict";
import type net from "node:net";
import { startServer } from "../../src/index.js";
import { connected } from "./harness.js";

void test("accepted sockets share their listeners; reads and closes still reach their own client", async () => {
  const srv = await startServer({ port: 0, host: "127.0.0.1" });
  try {
    const a = await connected(srv.port);
    const b = await connected(srv.port);
    const clients = [...srv.server.clients.values()];
    assert.equal(clients.length, 2);
    const [sa, sb] = clients.map((c) => c.socket as net.Socket);
    for (const ev of ["close", "drain", "error", "end"] as const) {
      const la = sa!.listeners(ev);
      const lb = sb!.listeners(ev);
      // 'end' also has Node's own (net.Socket's onReadableStreamEnd), shared as well.
      assert.equal(la.length, ev === "end" ? 2 : 1, `our one '${ev}' listener`);
      assert.deepEqual(la, lb, `the '${ev}' listeners are shared`);
    }
    // Each socket's reads go to its own client.
    a.write("SUB x 1\r\nPING\r\n");
    b.write("PUB x 2\r\nhi\r\nPING\r\n");
    assert.ok(await a.until((t) => t.includes("MSG x 1 2\r\nhi\r\n"), 5000), a.text);
    assert.ok(await b.until((t) => t.includes("PONG\r\n"), 5000), b.text);
    assert.ok(!b.text.includes("MSG"), "b did not subscribe");
    // A close reaches the client of that socket only.
    const [ca, cb] = clients;
    a.destroy();
    for (let i = 0; i < 100 && !ca!.closed; i++) await new Promise((r) => setTimeout(r, 10));
    assert.equal(ca!.closed, true);
    assert.equal(cb!.closed, false);
    b.destroy();
  } finally {
    await srv.close();
  }
});
