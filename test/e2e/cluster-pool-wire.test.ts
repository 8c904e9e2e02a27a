// The pooled route protocol on the wire, against a raw peer on the route port: a route
// pinned to $G leaves the account out both ways (RS+ from the peer makes a client's publish
// come back as "RMSG <subject> <size>"); a pooled route names it; protocol errors of
// nats-server 2.10 (an invalid pool index, an unknown pinned account, a pinned route to a
// server without pooling) close the route with nats-server's -ERR text.

import { test } from "node:test";
import assert from "node:assert/strict";
import { connect } from "@nats-io/transport-node";
import { startServer, type RunningServer } from "../../src/index.js";
import { defaultClusterOptions } from "../../src/server/options.js";
import { RawClient } from "../helpers/core-raw.js";
import { until } from "../helpers/until.js";

function server(poolSize: number, accounts: string[] = []): Promise<RunningServer> {
  return startServer({ host: "127.0.0.1", port: 0, serverName: "s", cluster: { ...defaultClusterOptions(), name: "w", host: "127.0.0.1", port: -1, poolSize, accounts } });
}

function peerInfo(extra: Record<string, unknown>): string {
  return `INFO ${JSON.stringify({ server_id: "NPEER", server_name: "peer", cluster: "w", headers: true, port: 1, ...extra })}\r\n`;
}

const CONNECT = `CONNECT ${JSON.stringify({ name: "NPEER", cluster: "w", headers: true, echo: true, verbose: false, pedantic: false })}\r\n`;

void test("pinned $G route: no account on the wire, either way", async () => {
  // Pinned here too: our interest in $G goes on the pinned route (not on a pool slot).
  const s = await server(3, ["$G"]);
  const peer = await RawClient.connect(s.server.cluster!.port);
  const nc = await connect({ servers: s.url });
  try {
    await peer.waitForText('"route_pool_size":3');
    peer.write(CONNECT + peerInfo({ route_pool_size: 3, route_account: "$G" }) + "RS+ wire.x\r\nPING\r\n");
    await peer.waitForText("PONG");
    const rz = s.server.cluster!.routez({ subs: true })["routes"] as { account?: string; subscriptions_list?: string[] }[];
    assert.equal(rz.length, 1);
    assert.equal(rz[0]!.account, "$G");
    assert.deepEqual(rz[0]!.subscriptions_list, ["wire.x"]);
    await until("interest from the pinned route", async () => {
      nc.publish("wire.x", "hi");
      await nc.flush();
      await new Promise((r) => setTimeout(r, 20));
      return peer.text.includes("RMSG wire.x 2\r\nhi\r\n");
    });
    // The other way: an RMSG without the account reaches the server's client.
    const got: string[] = [];
    nc.subscribe("wire.in", { callback: (_e, m) => void got.push(m.string()) });
    await nc.flush();
    await peer.waitForText("RS+ wire.in\r\n");
    peer.write("RMSG wire.in 3\r\nabc\r\n");
    await until("the routed message", () => got.length === 1);
    assert.deepEqual(got, ["abc"]);
  } finally {
    await nc.close();
    await s.close();
  }
});

void test("pooled route: the dialling peer's slot; the account named in each operation", async () => {
  const s = await server(3);
  const peer = await RawClient.connect(s.server.cluster!.port);
  const nc = await connect({ servers: s.url });
  try {
    peer.write(CONNECT + peerInfo({ route_pool_size: 3, route_pool_idx: 2 }) + "RS+ $G pool.x\r\nPING\r\n");
    await peer.waitForText("PONG");
    const rz = s.server.cluster!.routez({ subs: false })["routes"] as { tsnats_pool_idx?: number }[];
    assert.deepEqual(rz.map((r) => r.tsnats_pool_idx), [2]);
    await until("interest from the pooled route", async () => {
      nc.publish("pool.x", "hi");
      await nc.flush();
      await new Promise((r) => setTimeout(r, 20));
      return peer.text.includes("RMSG $G pool.x 2\r\nhi\r\n");
    });
  } finally {
    await nc.close();
    await s.close();
  }
});

void test("pooled protocol errors close the route with nats-server's text", async () => {
  const pooled = await server(3);
  const plain = await server(-1);
  try {
    const cases: [RunningServer, Record<string, unknown>, string][] = [
      [pooled, { route_pool_size: 3, route_pool_idx: 7 }, "Invalid route pool index: 7 - pool size is 3"],
      [pooled, { route_pool_size: 3, route_account: "ACME" }, 'No route for account "ACME"'],
      [plain, { route_pool_size: 3, route_account: "$G" }, 'Not possible to have a dedicated route for account "$G" between those servers'],
    ];
    for (const [s, extra, err] of cases) {
      const peer = await RawClient.connect(s.server.cluster!.port);
      peer.write(CONNECT + peerInfo(extra));
      await peer.waitForText(`-ERR '${err}'`);
      await peer.waitClosed();
      assert.equal(s.server.cluster!.routez({ subs: false })["num_routes"], 0);
    }
  } finally {
    await plain.close();
    await pooled.close();
  }
});
