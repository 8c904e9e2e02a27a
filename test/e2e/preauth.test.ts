// Limits before auth. With auth required, nothing but CONNECT is taken before CONNECT: any
// other operation is refused with 'Authorization Violation' at its first byte, so no PUB
// payload is ever buffered for an unauthenticated peer; a CONNECT is bounded by
// max_control_line; a closed connection reads no more; max_connections refuses with INFO
// then -ERR.

import { test } from "node:test";
import assert from "node:assert/strict";
import net from "node:net";
import { readFileSync, existsSync } from "node:fs";
import { startServer, type RunningServer, type OptionsPatch } from "../../src/index.js";
import { RawClient } from "../helpers/core-raw.js";
import { startTsnatsChild } from "../helpers/core-child.js";
import { until } from "../helpers/until.js";

const AUTH: OptionsPatch = { authorization: { user: "a", password: "b" } };
const MB = 1024 * 1024;

async function withServer(opts: OptionsPatch, fn: (s: RunningServer) => Promise<void>): Promise<void> {
  const s = await startServer({ host: "127.0.0.1", port: 0, ...opts });
  try {
    await fn(s);
  } finally {
    await s.close();
  }
}

async function afterInfo(port: number): Promise<RawClient> {
  const c = await RawClient.connect(port);
  await c.waitForText("\r\n");
  c.clear();
  return c;
}

void test("auth required: PUB before CONNECT is refused at its control line, before any payload is sent", async () => {
  await withServer(AUTH, async (s) => {
    // Only the control line: the server answers without waiting for the 1 MB it announces.
    const c = await afterInfo(s.port);
    c.write(`PUB x ${MB}\r\n`);
    await c.waitClosed();
    assert.equal(c.text, "-ERR 'Authorization Violation'\r\n");
    // Not even the control line is needed: the first byte of an operation decides.
    for (const op of ["P", "HPUB x 1 1\r\n", "SUB x 1\r\n", "UNSUB 1\r\n", "MSG x 1 1\r\n", "+OK\r\n"]) {
      const d = await afterInfo(s.port);
      d.write(op);
      await d.waitClosed();
      assert.equal(d.text, "-ERR 'Authorization Violation'\r\n", JSON.stringify(op));
    }
    // A CONNECT that arrives in pieces is fine, and so is everything after it.
    const ok = await afterInfo(s.port);
    for (const piece of ["CONN", 'ECT {"verbose":false,"user":"a",', '"pass":"b"}\r', "\nSUB x 1\r\nPUB x 2\r\nhi\r\nPING\r\n"]) ok.write(piece);
    await ok.waitForText("PONG\r\n");
    assert.equal(ok.text, "MSG x 1 2\r\nhi\r\nPONG\r\n");
    ok.close();
  });
});

void test("without auth, operations before CONNECT are still accepted", async () => {
  await withServer({}, async (s) => {
    const c = await afterInfo(s.port);
    c.write("SUB x 1\r\nPUB x 2\r\nhi\r\nPING\r\n");
    await c.waitForText("PONG\r\n");
    assert.match(c.text, /MSG x 1 2\r\nhi\r\n/);
    c.close();
  });
});

void test("no_auth_user: an operation before CONNECT logs the connection in as that user (nats-server)", async () => {
  const users = [{ user: "anon", password: "x", permissions: null }];
  await withServer({ authorization: { users }, noAuthUser: "anon" }, async (s) => {
    const c = await afterInfo(s.port);
    c.write("SUB x 1\r\nPUB x 2\r\nhi\r\nPING\r\n");
    await c.waitForText("PONG\r\n");
    assert.match(c.text, /MSG x 1 2\r\nhi\r\n/);
    assert.equal([...s.server.clients.values()][0]?.user, "anon");
    c.close();
  });
});

void test("before CONNECT, a control line longer than max_control_line is refused; so is a CONNECT that never ends", async () => {
  await withServer({ ...AUTH, maxControlLineBytes: 256 }, async (s) => {
    const c = await afterInfo(s.port);
    c.write(`CONNECT {"name":"${"n".repeat(300)}"}\r\n`);
    await c.waitClosed();
    assert.equal(c.text, "-ERR 'maximum control line exceeded'\r\n");
    const d = await afterInfo(s.port);
    d.write("CONNECT {" + '"x":1,'.repeat(100)); // no line end: bounded all the same
    await d.waitClosed();
    assert.equal(d.text, "-ERR 'maximum control line exceeded'\r\n");
  });
});

void test("a client that never completes CONNECT is closed by the auth timeout", async () => {
  await withServer({ authorization: { user: "a", password: "b", timeoutMs: 200 } }, async (s) => {
    const c = await afterInfo(s.port);
    c.write('CONNECT {"user":"a",'); // a CONNECT started and never finished
    await c.waitClosed();
    assert.equal(c.text, "-ERR 'Authentication Timeout'\r\n");
  });
});

/** Writes `chunk` over and over, as fast as the socket takes it, until the connection fails
 *  or `capBytes` were handed to the kernel. Resolves with the bytes written. */
function flood(sock: net.Socket, chunk: Buffer, capBytes: number): Promise<number> {
  return new Promise((resolve) => {
    let done = false;
    const finish = (): void => {
      if (done) return;
      done = true;
      sock.destroy();
      resolve(sock.bytesWritten);
    };
    sock.on("error", finish);
    sock.on("close", finish);
    const pump = (): void => {
      while (!done) {
        if (sock.bytesWritten >= capBytes) return finish();
        if (!sock.write(chunk)) return void sock.once("drain", pump);
      }
    };
    pump();
  });
}

void test("a client that ignores the -ERR and keeps writing is cut off: the server stops reading at the close", async () => {
  // Without the pause, the server went on reading (and discarding) for a second after the
  // close, which on loopback lets a client push hundreds of MB; now the client can hand the
  // kernel no more than the socket buffers of both ends hold (a few MB) before the reset.
  await withServer(AUTH, async (s) => {
    // allowHalfOpen: the server's FIN does not end our writing (an attacker ignores it).
    const sock = net.connect({ port: s.port, host: "127.0.0.1", allowHalfOpen: true });
    await new Promise<void>((r) => sock.once("connect", () => r()));
    sock.resume(); // read (and drop) the INFO and the -ERR
    const written = await flood(sock, Buffer.alloc(MB, 0x41), 512 * MB);
    assert.ok(written < 64 * MB, `the client wrote ${written} bytes before the server cut it off`);
    await until("the connection is gone on the server", () => s.server.socketCount === 0);
  });
});

/** Peak resident set of a process (VmHWM), in bytes; null where /proc is absent. */
function peakRssBytes(pid: number): number | null {
  const f = `/proc/${pid}/status`;
  if (!existsSync(f)) return null;
  const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(f, "utf8"));
  return m ? Number(m[1]) * 1024 : null;
}

void test(
  "200 unauthenticated PUBs of 1 MB each do not grow the server's memory",
  { skip: existsSync("/proc/self/status") ? false : "needs /proc for the server's peak RSS" },
  async () => {
    // 200 sockets each announce a 1 MB PUB without CONNECT and send the payload straight
    // after (an attacker does not wait for the -ERR): 200 MB offered. A server that buffered
    // payloads before the auth check would peak near 200 MB above its baseline; one that
    // refuses at the first byte reads a few socket buffers at most. Measured on Linux: about
    // 5 MB with the refusal at the first byte, about 60 MB when payloads were buffered first
    // (less than 200 MB: the GC reclaims the buffers of connections already refused). The
    // bound (32 MB) leaves room for the 200 connections' own state and for GC timing. The
    // peak (VmHWM) catches transient buffers that a before/after sample could miss.
    const srv = await startTsnatsChild(["-a", "127.0.0.1", "-p", "-1", "--user", "a", "--pass", "b"]);
    try {
      const pid = srv.proc.pid!;
      // Baseline after one full connection cycle, so lazily built state is in it.
      const warm = await afterInfo(srv.port);
      warm.write("PUB x 1\r\n");
      await warm.waitClosed();
      const before = peakRssBytes(pid)!;
      const payload = Buffer.alloc(MB, 0x42);
      const runs: Promise<void>[] = [];
      for (let i = 0; i < 200; i++) {
        const sock = net.connect({ port: srv.port, host: "127.0.0.1", allowHalfOpen: true });
        sock.resume();
        sock.on("error", () => {
          /* the server's reset of a refused connection */
        });
        runs.push(
          new Promise<void>((r) => {
            sock.once("close", () => r());
            sock.once("connect", () => {
              sock.write(`PUB x ${MB}\r\n`);
              sock.write(payload);
              sock.end("\r\n");
            });
          }),
        );
      }
      await Promise.all(runs);
      const after = peakRssBytes(pid)!;
      const growth = after - before;
      assert.ok(growth < 32 * MB, `peak RSS grew by ${(growth / MB).toFixed(1)} MB for 200 MB offered`);
    } finally {
      await srv.stop();
    }
  },
);

void test("max_connections: the next client gets INFO, then -ERR 'maximum connections exceeded', then the close", async () => {
  await withServer({ maxConnections: 2 }, async (s) => {
    const a = await RawClient.connect(s.port);
    await a.handshake();
    const b = await RawClient.connect(s.port);
    await b.handshake();
    const c = await RawClient.connect(s.port);
    await c.waitClosed();
    assert.match(c.text, /^INFO \{.*\}\r\n-ERR 'maximum connections exceeded'\r\n$/);
    assert.equal(s.server.clients.size, 2);
    await a.ping();
    // Once one leaves, a newcomer fits again.
    a.close();
    await until("a's socket released", () => s.server.socketCount === 1);
    const d = await RawClient.connect(s.port);
    await d.handshake();
    b.close();
    d.close();
  });
});
