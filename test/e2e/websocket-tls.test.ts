// WebSocket over TLS (wss): the official client's wsconnect through a `websocket { tls {} }`
// listener, INFO's tls fields for websocket clients, client certificates (verify and
// verify_and_map), and a plain ws:// client refused by the TLS listener.

import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import tls from "node:tls";
import { WebSocket } from "ws";
import { wsconnect, type NatsConnection } from "@nats-io/nats-core";
import { startServer, type RunningServer, type OptionsPatch } from "../../src/index.js";
import { defaultTlsOptions, defaultWebSocketOptions, type TlsOptions } from "../../src/server/options.js";
import { makeCerts } from "../helpers/certs.js";

const certs = makeCerts();
const ca = readFileSync(certs.caCert);
const alice = certs.client("ws-alice", "/CN=alice", "email:alice@example.com");

/** nats.js takes the platform's WebSocket: this one trusts the test CA and may present a
 *  client certificate. */
function useWebSocket(client?: { cert: string; key: string }): void {
  const extra = client !== undefined ? { cert: readFileSync(client.cert), key: readFileSync(client.key) } : {};
  class TestWebSocket extends WebSocket {
    constructor(url: string, protocols?: string | string[]) {
      super(url, protocols, { ca, ...extra });
    }
  }
  (globalThis as { WebSocket?: unknown }).WebSocket = TestWebSocket;
}

function tlsOpts(extra: Partial<TlsOptions> = {}): TlsOptions {
  return { ...defaultTlsOptions(), certFile: certs.serverCert, keyFile: certs.serverKey, caFile: certs.caCert, ...extra };
}

async function withServer(wsTls: TlsOptions, extra: OptionsPatch, fn: (s: RunningServer, wsPort: number) => Promise<void>): Promise<void> {
  const s = await startServer({ host: "127.0.0.1", port: 0, websocket: { ...defaultWebSocketOptions(), host: "127.0.0.1", port: -1, noTls: false, tls: wsTls }, ...extra });
  try {
    await fn(s, s.server.wsPort);
  } finally {
    await s.close();
  }
}

async function roundTrip(nc: NatsConnection, subject = "wss.ok"): Promise<void> {
  const sub = nc.subscribe(subject, { max: 1 });
  await nc.flush();
  nc.publish(subject, "hello");
  for await (const m of sub) assert.equal(m.string(), "hello");
}

void test("wss: wsconnect over TLS; INFO says tls_required; a ws:// client is refused", async () => {
  await withServer(tlsOpts(), {}, async (_s, port) => {
    useWebSocket();
    const nc = await wsconnect({ servers: `wss://localhost:${port}`, maxReconnectAttempts: 0, reconnect: false });
    try {
      assert.equal(nc.info?.tls_required, true);
      await roundTrip(nc);
    } finally {
      await nc.close();
    }
    await assert.rejects(() => wsconnect({ servers: `ws://127.0.0.1:${port}`, maxReconnectAttempts: 0, reconnect: false, timeout: 3000 }));
  });
});

void test("wss with verify_and_map: the client certificate names the user", async () => {
  const users = [{ user: "alice@example.com", password: "", permissions: null }];
  await withServer(tlsOpts({ verifyAndMap: true }), { authorization: { users } }, async (_s, port) => {
    useWebSocket(alice);
    const nc = await wsconnect({ servers: `wss://localhost:${port}`, maxReconnectAttempts: 0, reconnect: false });
    try {
      await roundTrip(nc);
    } finally {
      await nc.close();
    }
    // Without a certificate the TLS handshake is refused.
    useWebSocket();
    await assert.rejects(() => wsconnect({ servers: `wss://localhost:${port}`, maxReconnectAttempts: 0, reconnect: false, timeout: 3000 }));
  });
});

void test("wss: a client whose TLS socket ends is closed at once (the plain ws listener is half-open, wss is not)", async () => {
  await withServer(tlsOpts(), {}, async (s, port) => {
    const sock = tls.connect({ host: "127.0.0.1", port, ca, servername: "localhost" });
    let got = "";
    sock.on("data", (d: Buffer) => (got += d.toString("latin1")));
    sock.on("error", () => undefined);
    await new Promise<void>((r) => sock.once("secureConnect", () => r()));
    sock.write("GET / HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n");
    const until = async (cond: () => boolean): Promise<boolean> => {
      const end = Date.now() + 5000;
      while (!cond() && Date.now() < end) await new Promise((r) => setTimeout(r, 5));
      return cond();
    };
    assert.ok(await until(() => got.includes("\r\n\r\n") && s.server.clients.size === 1), got);
    assert.match(got, /^HTTP\/1\.1 101 /);
    sock.end();
    assert.ok(await until(() => s.server.clients.size === 0), "the server closed the wss client after its EOF");
    sock.destroy();
  });
});
