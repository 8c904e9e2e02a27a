// allowed_connection_types: a user limited to WEBSOCKET cannot log in on the client port, one
// limited to STANDARD cannot log in over WebSocket, a user without the list can do both.

import { test } from "node:test";
import assert from "node:assert/strict";
import { WebSocket } from "ws";
import { connect } from "@nats-io/transport-node";
import { wsconnect } from "@nats-io/nats-core";
import { startServer } from "../../src/index.js";
import { defaultWebSocketOptions } from "../../src/server/options.js";

(globalThis as { WebSocket?: unknown }).WebSocket = WebSocket;

void test("allowed_connection_types limits users to the client port or to WebSocket", async () => {
  const users = [
    { user: "tcp", password: "p", permissions: null, connectionTypes: ["STANDARD"] },
    { user: "web", password: "p", permissions: null, connectionTypes: ["WEBSOCKET"] },
    { user: "any", password: "p", permissions: null },
  ];
  const s = await startServer({ host: "127.0.0.1", port: 0, authorization: { users }, websocket: { ...defaultWebSocketOptions(), host: "127.0.0.1", port: -1, noTls: true } });
  const tcpUrl = s.url;
  const wsUrl = `ws://127.0.0.1:${s.server.wsPort}`;
  const opts = { maxReconnectAttempts: 0, reconnect: false, timeout: 3000 };
  try {
    for (const [user, tcpOk, wsOk] of [["tcp", true, false], ["web", false, true], ["any", true, true]] as const) {
      const viaTcp = (): ReturnType<typeof connect> => connect({ servers: tcpUrl, user, pass: "p", ...opts });
      const viaWs = (): ReturnType<typeof wsconnect> => wsconnect({ servers: wsUrl, user, pass: "p", ...opts });
      if (tcpOk) await (await viaTcp()).close();
      else await assert.rejects(viaTcp, /Authorization/i, `${user} over TCP`);
      if (wsOk) await (await viaWs()).close();
      else await assert.rejects(viaWs, /Authorization/i, `${user} over WebSocket`);
    }
  } finally {
    await s.close();
  }
});
