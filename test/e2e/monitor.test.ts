// The monitoring endpoints over real HTTP, with official clients generating the state.

import { test, after, before } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { startServer, type RunningServer } from "../../src/index.js";

const WAIT_MS = 5000;

async function get(port: number, path: string): Promise<{ status: number; headers: Headers; text: string; json: () => Record<string, unknown> }> {
  const r = await fetch(`http://127.0.0.1:${port}${path}`);
  const text = await r.text();
  return { status: r.status, headers: r.headers, text, json: () => JSON.parse(text) as Record<string, unknown> };
}

/** Polls an endpoint until `ok` holds for its JSON; fails after WAIT_MS. */
async function until(port: number, path: string, ok: (j: Record<string, unknown>) => boolean): Promise<Record<string, unknown>> {
  const deadline = Date.now() + WAIT_MS;
  for (;;) {
    const j = (await get(port, path)).json();
    if (ok(j)) return j;
    if (Date.now() > deadline) throw new Error(`condition on ${path} not met: ${JSON.stringify(j).slice(0, 500)}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

function monPort(s: RunningServer): number {
  const m = s.server.monitor;
  assert.ok(m, "monitor started");
  return m.port;
}

let srv: RunningServer;
let mp: number;
const conns: NatsConnection[] = [];

before(async () => {
  srv = await startServer({ host: "127.0.0.1", port: 0, httpPort: -1, httpHost: "127.0.0.1" });
  mp = monPort(srv);
});

after(async () => {
  for (const nc of conns) if (!nc.isClosed()) await nc.close();
  await srv.close();
});

void test("varz counts connections, subscriptions and messages", async () => {
  const base = (await get(mp, "/varz")).json();
  assert.equal(base["version"], (await import("../../src/version.js")).SERVER_VERSION);
  assert.equal(base["port"], srv.port);
  assert.equal(base["http_port"], mp);
  const nc = await connect({ servers: srv.url, name: "varz-client" });
  conns.push(nc);
  nc.subscribe("v.a");
  nc.subscribe("v.b");
  nc.publish("v.a", "hello");
  await nc.flush();
  const v = await until(mp, "/varz", (j) => (j["in_msgs"] as number) >= (base["in_msgs"] as number) + 1 && (j["out_msgs"] as number) >= 1);
  assert.equal(v["connections"], (base["connections"] as number) + 1);
  assert.equal(v["total_connections"], (base["total_connections"] as number) + 1);
  assert.ok((v["subscriptions"] as number) >= (base["subscriptions"] as number) + 2);
  assert.ok((v["in_bytes"] as number) >= 5);
  assert.equal(typeof v["uptime"], "string");
  assert.deepEqual(v["jetstream"], {});
  assert.ok(((v["http_req_stats"] as Record<string, number>)["/varz"] ?? 0) >= 2);
  await nc.close();
});

void test("connz pages, sorts and lists subscriptions", async () => {
  const ncs: NatsConnection[] = [];
  for (let i = 0; i < 3; i++) {
    const nc = await connect({ servers: srv.url, name: `c${i}` });
    conns.push(nc);
    ncs.push(nc);
    for (let k = 0; k <= i; k++) nc.subscribe(`cz.${i}.${k}`);
    for (let k = 0; k <= i; k++) nc.publish("cz.none", "x");
    await nc.flush();
  }
  const named = (j: Record<string, unknown>): Record<string, unknown>[] =>
    (j["connections"] as Record<string, unknown>[]).filter((c) => typeof c["name"] === "string" && /^c\d$/.test(c["name"] as string));
  const all = await until(mp, "/connz?subs=1", (j) => named(j).length === 3 && named(j).every((c) => (c["subscriptions"] as number) > 0));
  const mine = named(all);
  assert.equal(mine.length, 3);
  const c2 = mine.find((c) => c["name"] === "c2")!;
  assert.equal(c2["kind"], "Client");
  assert.equal(c2["type"], "nats");
  assert.equal(c2["ip"], "127.0.0.1");
  assert.equal(c2["lang"], "nats.js");
  assert.equal(c2["subscriptions"], 3);
  assert.deepEqual([...(c2["subscriptions_list"] as string[])].sort(), ["cz.2.0", "cz.2.1", "cz.2.2"]);

  const total = all["total"] as number;
  const p = (await get(mp, "/connz?limit=1&offset=1")).json();
  assert.equal(p["limit"], 1);
  assert.equal(p["offset"], 1);
  assert.equal(p["total"], total);
  assert.equal(p["num_connections"], 1);

  const bySubs = (await get(mp, "/connz?sort=subs")).json();
  const counts = (bySubs["connections"] as Record<string, unknown>[]).map((c) => c["subscriptions"] as number);
  assert.deepEqual(counts, [...counts].sort((a, b) => b - a));
  const byCid = (await get(mp, "/connz?sort=cid")).json();
  const cids = (byCid["connections"] as Record<string, unknown>[]).map((c) => c["cid"] as number);
  assert.deepEqual(cids, [...cids].sort((a, b) => a - b));

  const detail = (await get(mp, `/connz?subs=detail&cid=${c2["cid"] as number}`)).json();
  const d = (detail["connections"] as Record<string, unknown>[])[0]!;
  const ds = d["subscriptions_list_detail"] as Record<string, unknown>[];
  assert.equal(ds.length, 3);
  assert.ok(ds.every((s) => s["cid"] === c2["cid"] && typeof s["sid"] === "string"));

  const bad = await get(mp, "/connz?sort=nope");
  assert.equal(bad.status, 400);
  assert.equal(bad.text, "invalid sorting option: nope");

  // Closing a client moves it to state=closed with a reason.
  const gone = ncs[0]!;
  const goneCid = mine.find((c) => c["name"] === "c0")!["cid"] as number;
  await gone.close();
  const closed = await until(mp, "/connz?state=closed", (j) => (j["connections"] as Record<string, unknown>[]).some((c) => c["cid"] === goneCid));
  const cc = (closed["connections"] as Record<string, unknown>[]).find((c) => c["cid"] === goneCid)!;
  assert.equal(typeof cc["reason"], "string");
  assert.equal(typeof cc["stop"], "string");
});

void test("subsz reports sublist stats and filters by test subject", async () => {
  const nc = await connect({ servers: srv.url });
  conns.push(nc);
  nc.subscribe("sz.*");
  nc.subscribe("sz.x", { queue: "workers" });
  nc.subscribe("other");
  await nc.flush();
  const s = await until(mp, "/subsz?subs=1&test=sz.x", (j) => (j["total"] as number) >= 2);
  for (const k of ["num_subscriptions", "num_cache", "num_inserts", "num_removes", "num_matches", "cache_hit_rate", "max_fanout", "avg_fanout"]) {
    assert.equal(typeof s[k], "number", k);
  }
  const list = s["subscriptions_list"] as Record<string, unknown>[];
  assert.deepEqual(list.map((x) => x["subject"]).sort(), ["sz.*", "sz.x"]);
  assert.equal(list.find((x) => x["subject"] === "sz.x")!["qgroup"], "workers");
  const alias = await get(mp, "/subscriptionsz");
  assert.equal(alias.status, 200);
  assert.ok((alias.json()["num_subscriptions"] as number) >= 3);
  const paged = (await get(mp, "/subsz?subs=1&limit=1")).json();
  assert.equal((paged["subscriptions_list"] as unknown[]).length, 1);
});

void test("healthz, CORS, content type, jsz disabled, routez, metrics, 404", async () => {
  const h = await get(mp, "/healthz");
  assert.equal(h.status, 200);
  assert.deepEqual(h.json(), { status: "ok" });
  assert.equal(h.headers.get("access-control-allow-origin"), "*");
  assert.equal(h.headers.get("content-type"), "application/json");
  assert.equal((await get(mp, "/healthz?js-enabled-only=true")).status, 200);
  assert.equal((await get(mp, "/healthz?js-enabled-only=bogus")).status, 400);

  const j = (await get(mp, "/jsz")).json();
  assert.equal(j["disabled"], true);
  assert.equal(j["server_id"], srv.server.serverId);
  assert.equal(j["streams"], 0);

  const r = (await get(mp, "/routez")).json();
  assert.equal(r["num_routes"], 0);
  assert.deepEqual(r["routes"], []);
  for (const p of ["/leafz", "/gatewayz", "/accountz", "/"]) assert.equal((await get(mp, p)).status, 200, p);

  const m = await get(mp, "/metrics");
  assert.equal(m.status, 200);
  assert.match(m.headers.get("content-type") ?? "", /^text\/plain; version=0\.0\.4/);
  assert.match(m.text, /\ngnatsd_varz_in_msgs\{server_id="[A-Z0-9]+"\} \d+\n/);

  assert.equal((await get(mp, "/nope")).status, 404);
});

// JetStream is loaded lazily from src/jetstream/service.js; skip when it is not built yet.
const serviceBuilt = existsSync(fileURLToPath(new URL("../../src/jetstream/service.js", import.meta.url)));

void test("jsz, varz and metrics with JetStream enabled", { skip: serviceBuilt ? false : "src/jetstream/service.js not built" }, async () => {
  const storeDir = mkdtempSync(join(tmpdir(), "tsnats-mon-js-"));
  const js = await startServer({ host: "127.0.0.1", port: 0, httpPort: -1, httpHost: "127.0.0.1", jetstream: { enabled: true, storeDir } });
  try {
    const p = monPort(js);
    const j = (await get(p, "/jsz")).json();
    assert.ok(!("disabled" in j));
    assert.equal(j["server_id"], js.server.serverId);
    assert.equal((j["config"] as Record<string, unknown>)["store_dir"], join(storeDir, "jetstream"));
    for (const k of ["memory", "storage", "streams", "consumers", "messages", "bytes"]) assert.equal(typeof j[k], "number", k);
    const api = j["api"] as Record<string, unknown>;
    assert.equal(typeof api["total"], "number");
    assert.equal(typeof api["errors"], "number");
    const v = (await get(p, "/varz")).json();
    const vjs = v["jetstream"] as Record<string, Record<string, unknown>>;
    assert.equal(vjs["config"]!["store_dir"], join(storeDir, "jetstream"));
    assert.equal(typeof vjs["stats"]!["memory"], "number");
    const h = await get(p, "/healthz?js-enabled-only=true");
    assert.equal(h.status, 200);
    assert.match((await get(p, "/metrics")).text, /\ngnatsd_jetstream_streams\{server_id="[A-Z0-9]+"\} 0\n/);
  } finally {
    await js.close();
    rmSync(storeDir, { recursive: true, force: true });
  }
});
