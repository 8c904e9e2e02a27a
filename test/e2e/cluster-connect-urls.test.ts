// What clients are told about the rest of the cluster: TCP clients get every server's client
// URL (client_advertise when set), websocket clients every server's websocket URL (route INFO
// ws_connect_urls, as nats-server), each kept current by async INFO.

import { test } from "node:test";
import assert from "node:assert/strict";
import WebSocket from "ws";
import { wsconnect } from "@nats-io/nats-core";
import { connect } from "@nats-io/transport-node";
import { startServer, type RunningServer } from "../../src/index.js";
import { defaultClusterOptions, defaultWebSocketOptions } from "../../src/server/options.js";
import { until } from "../helpers/until.js";

(globalThis as { WebSocket?: unknown }).WebSocket = WebSocket;

function node(name: string, routes: string[], extra: { clientAdvertise?: string; wsAdvertise?: string } = {}): Promise<RunningServer> {
  return startServer({
    host: "127.0.0.1",
    port: 0,
    serverName: name,
    clientAdvertise: extra.clientAdvertise ?? "",
    websocket: { ...defaultWebSocketOptions(), host: "127.0.0.1", port: -1, noTls: true, advertise: extra.wsAdvertise ?? "" },
    cluster: { ...defaultClusterOptions(), name: "urls", host: "127.0.0.1", port: -1, routes },
  });
}

void test("connect_urls: websocket clients get websocket URLs, TCP clients client URLs, client_advertise replaces the address", async () => {
  const a = await node("a", []);
  const routePort = a.server.cluster!.port;
  let b: RunningServer | null = null;
  try {
    const tcp = await connect({ servers: a.url });
    const ws = await wsconnect({ servers: `ws://127.0.0.1:${a.server.wsPort}`, reconnect: false });
    try {
      const aTcp = `127.0.0.1:${a.port}`;
      const aWs = `127.0.0.1:${a.server.wsPort}`;
      assert.deepEqual(tcp.info?.connect_urls, [aTcp]);
      assert.deepEqual(ws.info?.connect_urls, [aWs]);
      b = await node("b", [`nats-route://127.0.0.1:${routePort}`], { clientAdvertise: "b.example.net:4333", wsAdvertise: "b.example.net" });
      const bWsPort = b.server.wsPort;
      await until("b announced to the TCP client", () => (tcp.info?.connect_urls ?? []).includes("b.example.net:4333"));
      await until("b announced to the websocket client", () => (ws.info?.connect_urls ?? []).includes(`b.example.net:${bWsPort}`));
      // Each kind hears only of its own listeners.
      assert.ok(!(tcp.info?.connect_urls ?? []).some((u) => u.endsWith(`:${bWsPort}`) || u === aWs), JSON.stringify(tcp.info?.connect_urls));
      assert.ok(!(ws.info?.connect_urls ?? []).some((u) => u === aTcp || u.endsWith(":4333")), JSON.stringify(ws.info?.connect_urls));
      // b's own clients: its advertised address first, then a's.
      const tcpB = await connect({ servers: b.url });
      assert.deepEqual(tcpB.info?.connect_urls, ["b.example.net:4333", aTcp]);
      await tcpB.close();
      await b.close();
      b = null;
      await until("b withdrawn from the websocket client", () => !(ws.info?.connect_urls ?? []).some((u) => u.startsWith("b.example.net")));
      await until("b withdrawn from the TCP client", () => !(tcp.info?.connect_urls ?? []).includes("b.example.net:4333"));
    } finally {
      await tcp.close();
      await ws.close();
    }
  } finally {
    if (b !== null) await b.close();
    await a.close();
  }
});
