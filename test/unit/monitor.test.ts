import { test } from "node:test";
import assert from "node:assert/strict";
import { goDuration, rfc3339, uptime, parseGoBool } from "../../src/monitor/format.js";
import { buildConnz, parseConnzOptions, sortConns, SortOpt } from "../../src/monitor/connz.js";
import { buildSubsz, parseSubszOptions } from "../../src/monitor/subsz.js";
import { buildJsz } from "../../src/monitor/jsz.js";
import { buildVarz } from "../../src/monitor/varz.js";
import { defaultWebSocketOptions } from "../../src/server/options.js";
import { buildHealthz, parseHealthzOptions } from "../../src/monitor/healthz.js";
import { buildMetrics } from "../../src/monitor/metrics.js";
import { BadRequest } from "../../src/monitor/query.js";
import type { ConnSnap, ServerSnap, SubSnap } from "../../src/monitor/snapshot.js";

const T0 = Date.UTC(2026, 0, 1, 0, 0, 0);

function conn(cid: number, over: Partial<ConnSnap> = {}): ConnSnap {
  return {
    cid,
    ip: "127.0.0.1",
    port: 5000 + cid,
    startMs: T0 + cid * 1000,
    lastActivityMs: T0 + cid * 1000,
    stopMs: 0,
    reason: "",
    rttMs: 1.5,
    pendingBytes: 0,
    inMsgs: 0,
    outMsgs: 0,
    inBytes: 0,
    outBytes: 0,
    numSubs: 0,
    subs: [],
    name: "",
    lang: "nats.js",
    version: "3.0.0",
    user: "",
    tlsVersion: "",
    tlsCipher: "",
    ...over,
  };
}

function sub(cid: number, sid: string, subject: string, queue = ""): SubSnap {
  return { cid, sid, subject, queue, msgs: 0, max: 0 };
}

function snap(over: Partial<ServerSnap> = {}): ServerSnap {
  return {
    nowMs: T0 + 100_000,
    serverId: "NSERVER",
    serverName: "srv",
    version: "2.11.0",
    proto: 1,
    go: "nodev20",
    host: "127.0.0.1",
    port: 4222,
    httpHost: "127.0.0.1",
    httpPort: 8222,
    httpsPort: 0,
    tlsRequired: false,
    tlsVerify: false,
    tlsTimeoutMs: 2000,
    tlsCertNotAfter: "",
    authRequired: false,
    authTimeoutMs: 2000,
    maxConnections: 65536,
    maxSubs: 0,
    pingIntervalMs: 120_000,
    pingMax: 2,
    maxControlLineBytes: 4096,
    maxPayloadBytes: 1048576,
    maxPendingBytes: 67108864,
    writeDeadlineMs: 10_000,
    lameDuckDurationMs: 120_000,
    startMs: T0,
    configLoadMs: T0,
    rssBytes: 1000,
    cores: 2,
    cpuPercent: 1.5,
    loopLag: { window_ms: 45000, p50_ms: 0.25, p99_ms: 3.5, max_ms: 12, mean_ms: 0.4, max_ms_since_start: 80 },
    inMsgs: 10,
    outMsgs: 20,
    inBytes: 30,
    outBytes: 40,
    slowConsumers: 1,
    totalConnections: 7,
    open: [],
    closed: [],
    sublist: { num_subscriptions: 3, num_cache: 0, num_inserts: 3, num_removes: 0, num_matches: 0, cache_hit_rate: 0, max_fanout: 0, avg_fanout: 0 },
    allSubs: [],
    httpReqStats: { "/varz": 1 },
    jetstreamRequested: false,
    jsz: null,
    jsConfig: { storeDir: "/data", maxMemoryBytes: 1024, maxStorageBytes: 2048, syncIntervalMs: "always", domain: "" },
    websocket: null,
    clusterVarz: {},
    connectUrls: [],
    tags: [],
    numRoutes: 0,
    routez: null,
    ...over,
  };
}

const q = (s: string): URLSearchParams => new URLSearchParams(s);

void test("format: Go time and duration strings", () => {
  assert.equal(rfc3339(Date.UTC(2026, 11, 2, 18, 52, 51, 900)), "2026-12-02T18:52:51.9Z");
  assert.equal(rfc3339(Date.UTC(2026, 11, 2, 18, 52, 51, 0)), "2026-12-02T18:52:51Z");
  assert.equal(uptime(0), "0s");
  assert.equal(uptime(62_000), "1m2s");
  assert.equal(uptime(3_600_000), "1h0m0s");
  assert.equal(uptime((24 * 3600 + 61) * 1000), "1d0h1m1s");
  assert.equal(uptime((366 * 24 * 3600) * 1000), "1y1d0h0m0s");
  assert.equal(goDuration(0), "0s");
  assert.equal(goDuration(999), "999ns");
  assert.equal(goDuration(1_500), "1.5µs");
  assert.equal(goDuration(2_993_087), "2.993087ms");
  assert.equal(goDuration(1_500_000_000), "1.5s");
  assert.equal(goDuration(120_000_000_000), "2m0s");
  assert.equal(goDuration(3_723_000_000_000), "1h2m3s");
  assert.equal(parseGoBool("True"), true);
  assert.equal(parseGoBool("0"), false);
  assert.equal(parseGoBool("yes"), null);
});

void test("varz: nats-server field names and units", () => {
  const v = buildVarz(snap({ open: [conn(1), conn(2)] }));
  for (const k of [
    "server_id", "server_name", "version", "proto", "go", "host", "port", "max_connections", "ping_interval", "ping_max",
    "http_host", "http_port", "auth_required", "max_control_line", "max_payload", "max_pending", "write_deadline",
    "lame_duck_duration", "start", "now", "uptime", "mem", "cores", "cpu", "connections", "total_connections", "routes",
    "remotes", "leafnodes", "in_msgs", "out_msgs", "in_bytes", "out_bytes", "slow_consumers", "subscriptions",
    "http_req_stats", "config_load_time", "jetstream", "connect_urls", "leaf", "cluster", "gateway",
  ]) {
    assert.ok(k in v, `missing ${k}`);
  }
  assert.equal(v["ping_interval"], 120_000_000_000);
  assert.equal(v["write_deadline"], 10_000_000_000);
  assert.equal(v["uptime"], "1m40s");
  assert.equal(v["connections"], 2);
  assert.equal(v["total_connections"], 7);
  assert.equal(v["subscriptions"], 3);
  assert.deepEqual(v["jetstream"], {});
  assert.deepEqual(v["connect_urls"], []);
  // max_subscriptions is omitempty in nats-server: absent without a limit.
  assert.ok(!("max_subscriptions" in v));
  assert.equal(buildVarz(snap({ maxSubs: 10 }))["max_subscriptions"], 10);
  // tags: server_tags, omitted when there are none (omitempty).
  assert.equal("tags" in v, false);
  assert.deepEqual(buildVarz(snap({ tags: ["az:1", "ssd"] }))["tags"], ["az:1", "ssd"]);
  // tsnats only, under a name nats-server cannot collide with.
  assert.deepEqual(v["tsnats_event_loop_lag"], { window_ms: 45000, p50_ms: 0.25, p99_ms: 3.5, max_ms: 12, mean_ms: 0.4, max_ms_since_start: 80 });
});

void test("varz: the websocket block (nats-server WebsocketOptsVarz, omitempty)", () => {
  assert.deepEqual(buildVarz(snap())["websocket"], {});
  const websocket = {
    ...defaultWebSocketOptions(),
    port: -1,
    boundPort: 8443,
    noTls: true,
    sameOrigin: true,
    allowedOrigins: ["https://a.example"],
    compression: true,
    authorization: { user: "u", password: "p", token: "", users: [], timeoutMs: 1500, defaultPermissions: null },
  };
  assert.deepEqual(buildVarz(snap({ websocket }))["websocket"], {
    host: "0.0.0.0",
    port: 8443,
    handshake_timeout: 2_000_000_000,
    auth_timeout: 1.5,
    no_tls: true,
    same_origin: true,
    allowed_origins: ["https://a.example"],
    compression: true,
  });
});

void test("varz: jetstream section from the service's jsz body", () => {
  const v = buildVarz(snap({ jetstreamRequested: true, jsz: { memory: 5, storage: 6, api: { total: 3, errors: 1 }, config: { store_dir: "/x/jetstream" } } }));
  const js = v["jetstream"] as { config: Record<string, unknown>; stats: Record<string, unknown> };
  assert.equal(js.config["store_dir"], "/x/jetstream");
  assert.equal(js.config["max_memory"], 1024);
  assert.equal(js.config["sync_always"], true);
  assert.equal(js.stats["memory"], 5);
  assert.deepEqual(js.stats["api"], { total: 3, errors: 1 });
});

void test("connz: default paging, offset and limit", () => {
  const open = Array.from({ length: 5 }, (_, i) => conn(i + 1));
  const s = snap({ open });
  const all = buildConnz(s, parseConnzOptions(q("")));
  assert.equal(all["limit"], 1024);
  assert.equal(all["total"], 5);
  assert.equal(all["num_connections"], 5);
  const page = buildConnz(s, parseConnzOptions(q("offset=1&limit=2")));
  assert.equal(page["total"], 5);
  assert.equal(page["num_connections"], 2);
  assert.equal(page["offset"], 1);
  assert.equal(page["limit"], 2);
  assert.deepEqual((page["connections"] as { cid: number }[]).map((c) => c.cid), [2, 3]);
  const past = buildConnz(s, parseConnzOptions(q("offset=10")));
  assert.equal(past["num_connections"], 0);
  assert.deepEqual(past["connections"], []);
});

void test("connz: connection fields", () => {
  const c = conn(3, { name: "me", inMsgs: 4, subs: [sub(3, "1", "foo"), sub(3, "2", "bar", "q")], numSubs: 2, rttMs: 2.5 });
  const r = buildConnz(snap({ open: [c] }), parseConnzOptions(q("subs=detail")));
  const ci = (r["connections"] as Record<string, unknown>[])[0]!;
  assert.equal(ci["kind"], "Client");
  assert.equal(ci["type"], "nats");
  assert.equal(ci["ip"], "127.0.0.1");
  assert.equal(ci["rtt"], "2.5ms");
  assert.equal(ci["start"], "2026-01-01T00:00:03Z");
  assert.equal(ci["uptime"], "1m37s");
  assert.equal(ci["subscriptions"], 2);
  assert.equal(ci["name"], "me");
  assert.ok(!("stop" in ci) && !("reason" in ci));
  assert.deepEqual(ci["subscriptions_list_detail"], [
    { subject: "foo", sid: "1", msgs: 0, cid: 3 },
    { subject: "bar", qgroup: "q", sid: "2", msgs: 0, cid: 3 },
  ]);
  const list = buildConnz(snap({ open: [c] }), parseConnzOptions(q("subs=1")));
  assert.deepEqual((list["connections"] as Record<string, unknown>[])[0]!["subscriptions_list"], ["foo", "bar"]);
  const none = buildConnz(snap({ open: [c] }), parseConnzOptions(q("")));
  assert.ok(!("subscriptions_list" in (none["connections"] as Record<string, unknown>[])[0]!));
});

void test("connz: sort orders follow nats-server (cid/start/reason ascending, others descending)", () => {
  const a = conn(1, { outMsgs: 5, inBytes: 1, rttMs: 3 });
  const b = conn(2, { outMsgs: 9, inBytes: 7, rttMs: 1 });
  const c = conn(3, { outMsgs: 1, inBytes: 4, rttMs: 2 });
  const ids = (by: SortOpt): number[] => sortConns([b, c, a], by, T0 + 100_000).map((x) => x.cid);
  assert.deepEqual(ids(SortOpt.cid), [1, 2, 3]);
  assert.deepEqual(ids(SortOpt.start), [1, 2, 3]);
  assert.deepEqual(ids(SortOpt.msgs_to), [2, 1, 3]);
  assert.deepEqual(ids(SortOpt.bytes_from), [2, 3, 1]);
  assert.deepEqual(ids(SortOpt.rtt), [1, 3, 2]);
  assert.deepEqual(ids(SortOpt.uptime), [1, 2, 3]);
  assert.deepEqual(ids(SortOpt.last), [3, 2, 1]);
  assert.deepEqual(ids(SortOpt.idle), [1, 2, 3]);
  const r = buildConnz(snap({ open: [a, b, c] }), parseConnzOptions(q("sort=msgs_to&limit=1&offset=1")));
  assert.deepEqual((r["connections"] as { cid: number }[]).map((x) => x.cid), [1]);
});

void test("connz: bad options are 400s with nats-server texts", () => {
  assert.throws(() => parseConnzOptions(q("sort=bogus")), (e: unknown) => e instanceof BadRequest && e.message === "invalid sorting option: bogus");
  assert.throws(() => parseConnzOptions(q("sort=stop")), /sort by stop only valid on closed connections/);
  assert.throws(() => parseConnzOptions(q("sort=reason&state=open")), /only valid on closed/);
  assert.throws(() => parseConnzOptions(q("subs=maybe")), /Error decoding boolean for 'subs'/);
  assert.throws(() => parseConnzOptions(q("offset=x")), /Error decoding number for 'offset'/);
  assert.doesNotThrow(() => parseConnzOptions(q("sort=stop&state=closed")));
});

void test("connz: state, cid and auth", () => {
  const open = [conn(1, { user: "alice" }), conn(2)];
  const closed = [conn(3, { stopMs: T0 + 50_000, lastActivityMs: T0 + 50_000, reason: "Client Closed" })];
  const s = snap({ open, closed });
  const cl = buildConnz(s, parseConnzOptions(q("state=closed")));
  const ci = (cl["connections"] as Record<string, unknown>[])[0]!;
  assert.equal(cl["total"], 1);
  assert.equal(ci["reason"], "Client Closed");
  assert.equal(ci["stop"], "2026-01-01T00:00:50Z");
  assert.equal(ci["uptime"], "47s");
  assert.equal(buildConnz(s, parseConnzOptions(q("state=any")))["total"], 3);
  const one = buildConnz(s, parseConnzOptions(q("cid=3")));
  assert.equal(one["limit"], 1);
  assert.deepEqual((one["connections"] as { cid: number }[]).map((x) => x.cid), [3]);
  assert.equal(buildConnz(s, parseConnzOptions(q("cid=99")))["total"], 0);
  const auth = buildConnz(s, parseConnzOptions(q("auth=1")));
  assert.equal((auth["connections"] as Record<string, unknown>[])[0]!["authorized_user"], "alice");
  const noauth = buildConnz(s, parseConnzOptions(q("")));
  assert.ok(!("authorized_user" in (noauth["connections"] as Record<string, unknown>[])[0]!));
});

void test("subsz: stats, list with paging and test filter", () => {
  const allSubs = [sub(2, "1", "foo.>"), sub(1, "2", "bar", "q"), sub(1, "1", "foo.x"), sub(3, "1", "baz")];
  const s = snap({ allSubs });
  const plain = buildSubsz(s, parseSubszOptions(q("")));
  assert.equal(plain["num_subscriptions"], 3);
  assert.ok(!("subscriptions_list" in plain));
  const p1 = buildSubsz(s, parseSubszOptions(q("subs=1&limit=2")));
  assert.equal(p1["total"], 4);
  assert.equal(p1["limit"], 2);
  const l1 = p1["subscriptions_list"] as Record<string, unknown>[];
  assert.deepEqual(l1.map((x) => [x["cid"], x["sid"]]), [[1, "1"], [1, "2"]]);
  assert.equal(l1[1]!["qgroup"], "q");
  assert.equal(l1[0]!["account"], "$G");
  const p2 = buildSubsz(s, parseSubszOptions(q("subs=1&limit=2&offset=2")));
  assert.deepEqual((p2["subscriptions_list"] as Record<string, unknown>[]).map((x) => x["cid"]), [2, 3]);
  const t = buildSubsz(s, parseSubszOptions(q("subs=1&test=foo.x")));
  assert.deepEqual((t["subscriptions_list"] as Record<string, unknown>[]).map((x) => x["subject"]).sort(), ["foo.>", "foo.x"]);
  assert.throws(() => parseSubszOptions(q("test=foo.*")), /invalid test subject/);
});

void test("jsz: disabled shape, and defaults filled into the service's body", () => {
  const d = buildJsz(snap());
  assert.equal(d["disabled"], true);
  assert.deepEqual(d["config"], { max_memory: 0, max_storage: 0 });
  assert.deepEqual(d["api"], { total: 0, errors: 0 });
  for (const k of ["memory", "storage", "streams", "consumers", "messages", "bytes", "accounts"]) assert.equal(d[k], 0, k);

  const e = buildJsz(snap({ jetstreamRequested: true, jsz: { streams: 2, account_details: [{ name: "$G" }] } }));
  assert.ok(!("disabled" in e));
  assert.equal(e["server_id"], "NSERVER");
  assert.equal(Object.keys(e)[0], "server_id");
  assert.equal(e["streams"], 2);
  assert.equal(e["consumers"], 0);
  assert.equal(e["messages"], 0);
  assert.deepEqual(e["api"], { total: 0, errors: 0 });
  assert.equal((e["config"] as Record<string, unknown>)["store_dir"], "/data/jetstream");
  assert.deepEqual(e["account_details"], [{ name: "$G" }]);
});

void test("healthz: ok, JetStream requested but down, bad parameter", () => {
  const o = parseHealthzOptions(q("js-enabled-only=true"));
  assert.deepEqual(buildHealthz({ jetstreamRequested: false }, false, o), { httpStatus: 200, body: { status: "ok" } });
  assert.deepEqual(buildHealthz({ jetstreamRequested: true }, true, o), { httpStatus: 200, body: { status: "ok" } });
  // js-server-only checks the server alone (nats-server returns before any JetStream check).
  assert.deepEqual(buildHealthz({ jetstreamRequested: true }, false, parseHealthzOptions(q("js-server-only=1"))), { httpStatus: 200, body: { status: "ok" } });
  const down = buildHealthz({ jetstreamRequested: true }, false, parseHealthzOptions(q("")));
  assert.equal(down.httpStatus, 503);
  assert.deepEqual(down.body, { status: "unavailable", status_code: 503, error: "JetStream not enabled" });
  assert.throws(() => parseHealthzOptions(q("js-enabled-only=x")), /Error decoding boolean for 'js-enabled-only'/);
});

void test("healthz: the full check asks JetStream (a replica not current is 503 with nats-server's text); js-enabled-only does not", () => {
  const why = "JetStream stream '$G > S' is not current: stream catching up";
  assert.deepEqual(buildHealthz({ jetstreamRequested: true }, true, parseHealthzOptions(q("")), () => why), {
    httpStatus: 503,
    body: { status: "unavailable", status_code: 503, error: why },
  });
  assert.deepEqual(buildHealthz({ jetstreamRequested: true }, true, parseHealthzOptions(q("js-enabled-only=true")), () => why), { httpStatus: 200, body: { status: "ok" } });
  assert.deepEqual(buildHealthz({ jetstreamRequested: true }, true, parseHealthzOptions(q("")), () => ""), { httpStatus: 200, body: { status: "ok" } });
});

void test("metrics: Prometheus text format with HELP/TYPE and JetStream gauges when enabled", () => {
  const text = buildMetrics(snap({ open: [conn(1)] }));
  assert.match(text, /^# HELP gnatsd_varz_connections .+\n# TYPE gnatsd_varz_connections gauge\ngnatsd_varz_connections\{server_id="NSERVER"\} 1\n/);
  assert.match(text, /\n# TYPE gnatsd_varz_in_msgs counter\ngnatsd_varz_in_msgs\{server_id="NSERVER"\} 10\n/);
  assert.ok(!text.includes("gnatsd_jetstream_streams"));
  for (const l of text.split("\n")) if (l !== "") assert.match(l, /^(# (HELP|TYPE) \w+ .+|\w+\{server_id="[^"]*"\} -?[\d.e+]+)$/);
  const js = buildMetrics(snap({ jsz: { streams: 3, messages: 9, api: { total: 4, errors: 0 } } }));
  assert.match(js, /gnatsd_jetstream_streams\{server_id="NSERVER"\} 3\n/);
  assert.match(js, /gnatsd_jetstream_messages\{server_id="NSERVER"\} 9\n/);
  assert.match(js, /gnatsd_jetstream_api_total\{server_id="NSERVER"\} 4\n/);
  assert.match(text, /\n# TYPE tsnats_event_loop_lag_p99_seconds gauge\ntsnats_event_loop_lag_p99_seconds\{server_id="NSERVER"\} 0\.0035\n/);
  assert.match(text, /\ntsnats_event_loop_lag_max_seconds\{server_id="NSERVER"\} 0\.012\n/);
  assert.match(text, /\ntsnats_event_loop_lag_max_since_start_seconds\{server_id="NSERVER"\} 0\.08\n/);
});
