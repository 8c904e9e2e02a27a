// WebSocket clients (src/server/websocket.ts): the official client over wsconnect (pub/sub,
// request, auth, permissions, max_payload, compression) and raw sockets for the upgrade
// (replies 101/400/403/405, origins, handshake_timeout) and the framing (masking, fragments,
// text frames, ping/pong, close codes, oversize), after nats-server's server/websocket.go.

import { test } from "node:test";
import assert from "node:assert/strict";
import zlib from "node:zlib";
import fc from "fast-check";
import { WebSocket } from "ws";
import { wsconnect, headers, type NatsConnection } from "@nats-io/nats-core";
import { startServer, type RunningServer, type OptionsPatch } from "../../src/index.js";
import { defaultWebSocketOptions, type WebSocketOptions } from "../../src/server/options.js";
import { Collector } from "../helpers/core-wait.js";
import { until } from "../helpers/until.js";
import { WsRaw, frame } from "../helpers/ws-raw.js";

// nats.js takes the WebSocket of the platform: Node 20 has none, the ws package stands in.
(globalThis as { WebSocket?: unknown }).WebSocket = WebSocket;

async function withWs(ws: Partial<WebSocketOptions>, opts: OptionsPatch, fn: (s: RunningServer, wsPort: number) => Promise<void>): Promise<void> {
  const s = await startServer({ host: "127.0.0.1", port: 0, ...opts, websocket: { ...defaultWebSocketOptions(), host: "127.0.0.1", port: -1, noTls: true, ...ws } });
  try {
    await fn(s, s.server.wsPort);
  } finally {
    await s.close();
  }
}

function wsc(port: number, opts: Parameters<typeof wsconnect>[0] = {}): Promise<NatsConnection> {
  return wsconnect({ servers: `ws://127.0.0.1:${port}`, maxReconnectAttempts: 0, reconnect: false, ...opts });
}

async function roundTrip(nc: NatsConnection, subject = "ws.ok"): Promise<void> {
  const col = new Collector(nc.subscribe(subject));
  await nc.flush();
  nc.publish(subject, "x");
  await col.waitCount(1);
}

void test("wsconnect: pub/sub, queue groups, request/reply, headers and large payloads", async () => {
  await withWs({}, {}, async (s, port) => {
    assert.ok(port > 0);
    const nc = await wsc(port);
    const tcp = await (await import("@nats-io/transport-node")).connect({ servers: s.url });
    try {
      const col = new Collector(nc.subscribe("ws.>"));
      nc.subscribe("svc", {
        callback: (_e, m) => {
          m.respond(`re:${m.string()}`);
        },
      });
      await nc.flush();
      // Messages cross between websocket and TCP clients.
      tcp.publish("ws.a", "from tcp");
      const h = headers();
      h.set("X-Test", "1");
      nc.publish("ws.b", "from ws", { headers: h });
      const big = new Uint8Array(512 * 1024).map((_, i) => i & 0xff);
      nc.publish("ws.c", big);
      await col.waitCount(3);
      const got = new Map(col.msgs.map((m) => [m.subject, m]));
      assert.equal(got.get("ws.a")!.string(), "from tcp");
      assert.equal(got.get("ws.b")!.headers?.get("X-Test"), "1");
      assert.deepEqual(got.get("ws.c")!.data, big);
      assert.equal((await tcp.request("svc", "q1")).string(), "re:q1");
      assert.equal((await nc.request("svc", "q2")).string(), "re:q2");
      // Many small messages: one frame per flush carries many MSGs.
      const many = new Collector(tcp.subscribe("burst"));
      const mine = new Collector(nc.subscribe("burst"));
      await nc.flush();
      await tcp.flush();
      for (let i = 0; i < 2000; i++) nc.publish("burst", String(i));
      await many.waitCount(2000);
      await mine.waitCount(2000);
      assert.deepEqual(
        mine.msgs.map((m) => m.string()),
        Array.from({ length: 2000 }, (_, i) => String(i)),
      );
    } finally {
      await nc.close();
      await tcp.close();
    }
  });
});

void test("auth: websocket.authorization overrides the server's for websocket clients only", async () => {
  const wsAuth = { user: "wu", password: "wp", token: "", users: [], timeoutMs: 0, defaultPermissions: null };
  await withWs({ authorization: wsAuth }, { authorization: { token: "tcp-token" } }, async (s, port) => {
    const nc = await wsc(port, { user: "wu", pass: "wp" });
    await roundTrip(nc);
    await nc.close();
    await assert.rejects(() => wsc(port, { token: "tcp-token" }), /Authorization Violation/i);
    await assert.rejects(() => wsc(port, { user: "wu", pass: "bad" }), /Authorization Violation/i);
    // The TCP port keeps the server's.
    const { connect } = await import("@nats-io/transport-node");
    const tcp = await connect({ servers: s.url, token: "tcp-token" });
    await tcp.close();
    await assert.rejects(() => connect({ servers: s.url, user: "wu", pass: "wp", reconnect: false }), /Authorization Violation/i);
  });
  // An override on a server without auth makes websocket clients authenticate.
  await withWs({ authorization: { ...wsAuth, user: "", password: "", token: "wtok" } }, {}, async (_s, port) => {
    await assert.rejects(() => wsc(port), /Authorization Violation/i);
    const nc = await wsc(port, { token: "wtok" });
    await roundTrip(nc);
    await nc.close();
  });
});

void test("auth: without an override the server's users, permissions and no_auth_user apply", async () => {
  const users = [
    { user: "full", password: "pf", permissions: null },
    { user: "ro", password: "pr", permissions: { publish: { allow: ["ok.>"], deny: [] }, subscribe: { allow: ["ok.>"], deny: [] }, response: null } },
  ];
  await withWs({}, { authorization: { users } }, async (_s, port) => {
    await assert.rejects(() => wsc(port), /Authorization Violation/i);
    const full = await wsc(port, { user: "full", pass: "pf" });
    const ro = await wsc(port, { user: "ro", pass: "pr" });
    try {
      const col = new Collector(full.subscribe(">"));
      await full.flush();
      const errs: string[] = [];
      void (async () => {
        for await (const st of ro.status()) if (st.type === "error") errs.push(String(st.error));
      })();
      ro.publish("ok.1", "a");
      ro.publish("no.1", "b");
      ro.subscribe("no.>");
      await ro.flush();
      await col.waitCount(1);
      await until("permission violations", () => errs.filter((e) => /Permissions Violation/.test(e)).length >= 2);
      assert.deepEqual(col.msgs.map((m) => m.subject), ["ok.1"]);
    } finally {
      await full.close();
      await ro.close();
    }
  });
  // websocket.no_auth_user names one of the server's users (and is itself an override).
  await withWs({ noAuthUser: "ro" }, { authorization: { users } }, async (_s, port) => {
    const nc = await wsc(port);
    await roundTrip(nc, "ok.x");
    await nc.close();
  });
});

void test("auth timeout: websocket.authorization.timeout, an -ERR and close 1008", async () => {
  const wsAuth = { user: "wu", password: "wp", token: "", users: [], timeoutMs: 200, defaultPermissions: null };
  await withWs({ authorization: wsAuth }, {}, async (_s, port) => {
    const c = await WsRaw.open(port);
    await c.waitText(/"auth_required":true/);
    await c.waitText(/-ERR 'Authentication Timeout'\r\n/);
    assert.deepEqual(await c.waitCloseFrame(), { status: 1008, reason: "Authentication Timeout" });
    await c.waitClosed();
  });
});

void test("max_payload: a larger PUB gets -ERR 'Maximum Payload Violation' and close 1009", async () => {
  await withWs({}, { maxPayloadBytes: 1024 }, async (_s, port) => {
    const nc = await wsc(port);
    assert.equal(nc.info?.max_payload, 1024);
    await nc.close();
    const c = await WsRaw.open(port);
    await c.handshakeNats();
    c.proto(`PUB big 2000\r\n${"x".repeat(2000)}\r\n`);
    await c.waitText(/-ERR 'Maximum Payload Violation'\r\n/);
    assert.deepEqual(await c.waitCloseFrame(), { status: 1009, reason: "Maximum Message Payload Exceeded" });
    await c.waitClosed();
  });
});

void test("max_connections counts websocket clients: -ERR and close 1008", async () => {
  await withWs({}, { maxConnections: 1 }, async (_s, port) => {
    const a = await WsRaw.open(port);
    await a.handshakeNats();
    const b = await WsRaw.open(port);
    await b.waitText(/-ERR 'maximum connections exceeded'\r\n/);
    assert.deepEqual(await b.waitCloseFrame(), { status: 1008, reason: "Maximum Connections Exceeded" });
    await b.waitClosed();
    a.close();
  });
});

void test("upgrade: 101 with the RFC 6455 accept key, INFO first; 400/405 for bad requests", async () => {
  await withWs({}, {}, async (_s, port) => {
    const c = await WsRaw.open(port);
    assert.match(c.response, /\r\nSec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK\+xOo=\r\n/);
    assert.match(c.response, /\r\nUpgrade: websocket\r\n/i);
    assert.doesNotMatch(c.response, /Sec-WebSocket-Extensions/i);
    await c.waitText(/^INFO \{.*"max_payload":1048576.*\}\r\n$/);
    assert.equal(c.frames[0]!.op, 2); // binary
    c.close();

    const cases: [Record<string, string>, string, number][] = [
      [{}, "POST", 405],
      [{ Upgrade: "" }, "GET", 400],
      [{ Upgrade: "h2c" }, "GET", 400],
      [{ Connection: "keep-alive" }, "GET", 400],
      [{ "Sec-WebSocket-Key": "" }, "GET", 400],
      [{ "Sec-WebSocket-Version": "8" }, "GET", 400],
      [{ Host: "" }, "GET", 400],
    ];
    for (const [h, method, status] of cases) {
      const r = await WsRaw.connect(port);
      r.sendUpgrade(h, method);
      await r.waitResponse();
      assert.match(r.response, new RegExp(`^HTTP/1\\.1 ${status} `), JSON.stringify(h));
      assert.match(r.response, /\r\nSec-Websocket-Version: 13\r\n/);
      await r.waitClosed();
    }
    // Token lists and case: "keep-alive, Upgrade" and "WebSocket" are fine.
    const ok = await WsRaw.open(port, { Connection: "keep-alive, Upgrade", Upgrade: "WebSocket" });
    await ok.handshakeNats();
    ok.close();
    // Bytes after the request, before the 101: nats-server refuses them.
    const early = await WsRaw.connect(port);
    early.sendUpgrade();
    early.write(frame(2, "PING\r\n"));
    await early.waitResponse();
    await early.waitClosed();
    assert.match(early.response, /^HTTP\/1\.1 (400|101) /);
  });
});

void test("origins: same_origin and allowed_origins refuse with 403; no Origin header is allowed", async () => {
  await withWs({ sameOrigin: true }, {}, async (_s, port) => {
    (await WsRaw.open(port, { Origin: "http://127.0.0.1" })).close();
    (await WsRaw.open(port, {})).close();
    const r = await WsRaw.open(port, { Origin: "http://evil.example" }, 403);
    assert.match(r.response, /\r\n\r\nForbidden\n$/);
    await r.waitClosed();
    (await WsRaw.open(port, { Origin: "http://127.0.0.1:81" }, 403)).close();
  });
  await withWs({ allowedOrigins: ["https://app.example", "http://other.example:8080"] }, {}, async (_s, port) => {
    (await WsRaw.open(port, { Origin: "https://app.example" })).close();
    (await WsRaw.open(port, { Origin: "https://app.example:443" })).close();
    (await WsRaw.open(port, { Origin: "http://other.example:8080" })).close();
    (await WsRaw.open(port, { Origin: "http://app.example" }, 403)).close(); // scheme differs
    (await WsRaw.open(port, { Origin: "http://other.example" }, 403)).close(); // port differs
    (await WsRaw.open(port, { Origin: "https://nope.example" }, 403)).close();
    const nc = await wsc(port); // no Origin header from the ws package
    await nc.close();
  });
});

void test("handshake_timeout: a connection that never completes its upgrade is closed", async () => {
  await withWs({ handshakeTimeoutMs: 150 }, {}, async (_s, port) => {
    const silent = await WsRaw.connect(port);
    const partial = await WsRaw.connect(port);
    partial.write("GET / HTTP/1.1\r\nHost: x\r\n");
    await silent.waitClosed();
    await partial.waitClosed();
    // A completed upgrade is not affected.
    const c = await WsRaw.open(port);
    await c.handshakeNats();
    await new Promise((r) => setTimeout(r, 300)); // past the handshake timeout: still open
    c.proto("PING\r\n");
    await c.waitText(/PONG\r\nPONG\r\n/);
    c.close();
  });
});

void test("framing: unmasked client frames are refused with close 1002", async () => {
  await withWs({}, {}, async (_s, port) => {
    const c = await WsRaw.open(port);
    await c.waitText(/^INFO/);
    c.send(2, "PING\r\n", { mask: false });
    assert.deepEqual(await c.waitCloseFrame(), { status: 1002, reason: "mask bit missing" });
    await c.waitClosed();
  });
});

void test("framing: fragments, split headers, text frames and interleaved pings all reach the parser", async () => {
  await withWs({}, {}, async (_s, port) => {
    const c = await WsRaw.open(port);
    await c.handshakeNats('{"verbose":false}');
    c.proto("SUB frag 1\r\n");
    // One PUB in three fragments (text first frame: nats-server takes text like binary),
    // with a ping between them; then every byte of a frame in its own write.
    c.send(1, "PUB frag 5\r\nhe", { fin: false });
    c.send(9, "ping-data");
    c.send(0, "ll", { fin: false });
    c.send(0, "o\r\n");
    const f = frame(2, "PUB frag 3\r\nabc\r\nPING\r\n");
    for (const b of f) c.write(Buffer.from([b]));
    await c.waitText(/MSG frag 1 5\r\nhello\r\nMSG frag 1 3\r\nabc\r\nPONG\r\n/);
    const pong = c.frames.find((x) => x.op === 10);
    assert.equal(pong?.payload.toString(), "ping-data");
    // A large frame (64-bit length) and an empty one.
    const big = "y".repeat(70_000);
    c.send(2, `PUB frag ${big.length}\r\n${big}\r\n`);
    c.send(2, "");
    c.proto("PING\r\n");
    await until("the large message", () => c.text.endsWith(`MSG frag 1 70000\r\n${big}\r\nPONG\r\n`));
    c.close();
  });
});

void test("framing: protocol errors close with 1002 and nats-server's reason", async () => {
  const bad: [string, Buffer[], string][] = [
    ["continuation without a first frame", [frame(0, "x")], "invalid continuation frame"],
    ["new message inside a fragmented one", [frame(2, "PI", { fin: false }), frame(2, "NG\r\n")], "new message started before final frame for previous message was received"],
    ["control frame over 125 bytes", [frame(9, "p".repeat(126))], "control frame length bigger than maximum allowed of 125 bytes"],
    ["fragmented control frame", [frame(9, "p", { fin: false })], "control frame does not have final bit set"],
    ["unknown opcode", [frame(3, "x")], "unknown opcode 3"],
    ["compressed frame without negotiation", [frame(2, "x", { rsv1: true })], "compressed frame without negotiated compression"],
  ];
  await withWs({}, {}, async (_s, port) => {
    for (const [what, frames, reason] of bad) {
      const c = await WsRaw.open(port);
      await c.waitText(/^INFO/);
      for (const f of frames) c.write(f);
      assert.deepEqual(await c.waitCloseFrame(), { status: 1002, reason }, what);
      await c.waitClosed();
    }
    // A 64-bit length with the top bit set.
    const c = await WsRaw.open(port);
    await c.waitText(/^INFO/);
    c.write(Buffer.from([0x82, 0xff, 0x80, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4]));
    assert.equal((await c.waitCloseFrame()).status, 1002);
    await c.waitClosed();
  });
});

void test("close handshake: the client's status is echoed after pending data; server closes send 1001/1002", async () => {
  await withWs({}, {}, async (s, port) => {
    const c = await WsRaw.open(port);
    await c.handshakeNats();
    const body = Buffer.concat([Buffer.from([0x03, 0xe8]), Buffer.from("bye")]);
    c.proto("PING\r\n");
    c.send(8, body);
    assert.deepEqual(await c.waitCloseFrame(), { status: 1000, reason: "bye" });
    assert.match(c.text, /PONG\r\nPONG\r\n$/); // the PONG went out before the close
    await c.waitClosed();
    await until("the closed connection", () => s.server.closedClients.some((x) => x.reason === "Client Closed"));

    const e = await WsRaw.open(port);
    await e.waitText(/^INFO/);
    e.send(8, Buffer.from([0x03, 0xe8, 0xff, 0xfe]));
    assert.deepEqual(await e.waitCloseFrame(), { status: 1007, reason: "invalid utf8 body in close frame" });

    const n = await WsRaw.open(port);
    await n.waitText(/^INFO/);
    n.send(8, "");
    assert.equal((await n.waitCloseFrame()).status, 1005); // as nats-server: no status given

    const p = await WsRaw.open(port);
    await p.handshakeNats();
    p.proto("BOGUS\r\n");
    await p.waitText(/-ERR 'Unknown Protocol Operation'\r\n/);
    assert.deepEqual(await p.waitCloseFrame(), { status: 1002, reason: "Protocol Violation" });

    const last = await WsRaw.open(port);
    await last.handshakeNats();
    await s.close();
    assert.deepEqual(await last.waitCloseFrame(), { status: 1001, reason: "Server Shutdown" });
    await last.waitClosed();
  });
});

function deflated(s: string): Buffer {
  const z = zlib.deflateRawSync(Buffer.from(s), { finishFlush: zlib.constants.Z_SYNC_FLUSH });
  return frame(2, z.subarray(0, z.length - 4), { rsv1: true });
}

void test("compression: permessage-deflate when configured and offered, both ways", async () => {
  const offer = { "Sec-WebSocket-Extensions": "permessage-deflate; client_max_window_bits" };
  await withWs({ compression: true }, {}, async (_s, port) => {
    const c = await WsRaw.open(port, offer);
    assert.match(c.response, /\r\nSec-WebSocket-Extensions: permessage-deflate; server_no_context_takeover; client_no_context_takeover\r\n/);
    await c.handshakeNats('{"verbose":false}');
    c.proto("SUB z 1\r\n");
    const payload = "compressible ".repeat(500);
    // Compressed, then uncompressed.
    c.write(deflated(`PUB z ${payload.length}\r\n${payload}\r\n`));
    c.proto("PUB z 2\r\nok\r\nPING\r\n");
    await until("both messages", () => c.text.endsWith(`MSG z 1 ${payload.length}\r\n${payload}\r\nMSG z 1 2\r\nok\r\nPONG\r\n`));
    // Larger server writes came compressed, small ones not.
    assert.ok(c.frames.some((f) => f.rsv1 && f.op === 2));
    assert.ok(c.frames.some((f) => !f.rsv1 && f.op === 2));
    // A fragmented compressed message (RSV1 on the first frame only).
    const z = zlib.deflateRawSync(Buffer.from("PUB z 3\r\nfrg\r\n"), { finishFlush: zlib.constants.Z_SYNC_FLUSH }).subarray(0, -4);
    c.write(frame(2, z.subarray(0, 5), { rsv1: true, fin: false }));
    c.write(frame(0, z.subarray(5)));
    await c.waitText(/MSG z 1 3\r\nfrg\r\n$/);
    // Garbage in a compressed frame is a protocol error.
    c.write(frame(2, Buffer.from([0xff, 0xff, 0xff]), { rsv1: true }));
    assert.equal((await c.waitCloseFrame()).status, 1002);
    c.close();
    // Not offered: not used.
    const plain = await WsRaw.open(port);
    assert.doesNotMatch(plain.response, /Sec-WebSocket-Extensions/i);
    plain.close();
    // The official client over the ws package (which offers it) works with large messages.
    const nc = await wsc(port);
    const col = new Collector(nc.subscribe("big"));
    const big = new Uint8Array(300_000).fill(7);
    await nc.flush();
    nc.publish("big", big);
    await col.waitCount(1);
    assert.deepEqual(col.msgs[0]!.data, big);
    await nc.close();
  });
  // Offered, but not configured: not used.
  await withWs({ compression: false }, {}, async (_s, port) => {
    const c = await WsRaw.open(port, offer);
    assert.doesNotMatch(c.response, /Sec-WebSocket-Extensions/i);
    c.close();
  });
});

void test("start: websocket without no_tls, with tls or jwt_cookie is refused", async () => {
  const ws = { ...defaultWebSocketOptions(), host: "127.0.0.1", port: -1 };
  await assert.rejects(() => startServer({ host: "127.0.0.1", port: 0, websocket: ws }), /websocket requires TLS configuration/);
  await assert.rejects(() => startServer({ host: "127.0.0.1", port: 0, websocket: { ...ws, noTls: true, jwtCookie: "jwt" } }), /jwt_cookie/);
  await assert.rejects(() => startServer({ host: "127.0.0.1", port: 0, websocket: { ...ws, noTls: true, noAuthUser: "x" } }), /no_auth_user/);
  await assert.rejects(
    () => startServer({ host: "127.0.0.1", port: 0, authorization: { users: [{ user: "a", password: "b", permissions: null }] }, websocket: { ...ws, noTls: true, authorization: { user: "u", password: "p", token: "", users: [], timeoutMs: 0, defaultPermissions: null } } }),
    /websocket authentication username not compatible with presence of users\/nkeys/,
  );
});

void test("/varz shows the websocket block with the bound port", async () => {
  await withWs({ compression: true, sameOrigin: true }, { httpPort: -1, httpHost: "127.0.0.1" }, async (s, port) => {
    const res = await fetch(`http://127.0.0.1:${s.server.monitor!.port}/varz`);
    const v = (await res.json()) as { websocket: Record<string, unknown> };
    assert.deepEqual(v.websocket, { host: "127.0.0.1", port, handshake_timeout: 2_000_000_000, no_tls: true, same_origin: true, compression: true });
  });
});

void test("fuzz: random frames and bytes after the upgrade; the server stays up and cleans up", async () => {
  await withWs({ compression: true }, { maxPayloadBytes: 4096 }, async (s, port) => {
    const frameArb = fc.record({
      op: fc.constantFrom(0, 1, 2, 3, 8, 9, 10, 15),
      fin: fc.boolean(),
      mask: fc.boolean(),
      rsv1: fc.boolean(),
      payload: fc.oneof(fc.uint8Array({ maxLength: 300 }), fc.constantFrom("PING\r\n", "PUB a 3\r\nabc\r\n", "SUB > 1\r\n", "CONNECT {}\r\n", "PUB a 9999\r\n").map((x) => Buffer.from(x))),
    });
    const input = fc.oneof(
      fc.array(frameArb, { minLength: 1, maxLength: 8 }).map((fs) => Buffer.concat(fs.map((f) => frame(f.op, Buffer.from(f.payload), f)))),
      fc.uint8Array({ minLength: 1, maxLength: 600 }).map((b) => Buffer.from(b)),
    );
    await fc.assert(
      fc.asyncProperty(input, fc.boolean(), async (bytes, deflate) => {
        const c = await WsRaw.open(port, deflate ? { "Sec-WebSocket-Extensions": "permessage-deflate" } : {});
        await c.waitText(/^INFO/);
        c.write(bytes);
        c.write(frame(9, "probe"));
        // Our end after the bytes: the server reads them all, then closes (if it has not
        // refused a frame already).
        c.socket.end();
        await c.waitClosed();
        // Whatever came back is well-formed frames: a refusal is a close frame with a code.
        const close = c.frames.find((f) => f.op === 8);
        if (close) assert.ok(close.payload.length >= 2);
      }),
      { numRuns: 60 },
    );
    await until("every fuzzed connection gone", () => s.server.clients.size === 0);
    const nc = await wsc(port);
    await roundTrip(nc);
    await nc.close();
  });
});
