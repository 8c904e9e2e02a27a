// /varz: general server information and counters (nats-server Varz).

import { rfc3339, uptime } from "./format.js";
import { jsConfigOf, jsStatsOf } from "./jsz.js";
import type { ServerSnap } from "./snapshot.js";

const NS_PER_MS = 1_000_000;

export function buildVarz(s: ServerSnap): Record<string, unknown> {
  const subs = s.sublist.num_subscriptions;
  const jetstream: Record<string, unknown> = s.jsz !== null ? { config: jsConfigOf(s), stats: jsStatsOf(s.jsz) } : {};
  return {
    server_id: s.serverId,
    server_name: s.serverName,
    version: s.version,
    proto: s.proto,
    go: s.go,
    host: s.host,
    port: s.port,
    auth_required: s.authRequired,
    // omitempty in nats-server.
    ...(s.tlsRequired ? { tls_required: true } : {}),
    ...(s.tlsVerify ? { tls_verify: true } : {}),
    max_connections: s.maxConnections,
    // omitempty in nats-server: only a configured limit is shown.
    ...(s.maxSubs > 0 ? { max_subscriptions: s.maxSubs } : {}),
    ping_interval: s.pingIntervalMs * NS_PER_MS,
    ping_max: s.pingMax,
    http_host: s.httpHost,
    http_port: s.httpPort,
    http_base_path: "",
    https_port: s.httpsPort,
    auth_timeout: s.authTimeoutMs / 1000,
    max_control_line: s.maxControlLineBytes,
    max_payload: s.maxPayloadBytes,
    max_pending: s.maxPendingBytes,
    connect_urls: s.connectUrls,
    // omitempty in nats-server.
    ...(s.tags.length > 0 ? { tags: s.tags } : {}),
    cluster: s.clusterVarz,
    gateway: {},
    leaf: {},
    mqtt: {},
    websocket: websocketVarz(s.websocket),
    jetstream,
    tls_timeout: s.tlsTimeoutMs / 1000,
    ...(s.tlsCertNotAfter !== "" ? { tls_cert_not_after: new Date(s.tlsCertNotAfter).toISOString().replace(".000Z", "Z") } : {}),
    write_deadline: s.writeDeadlineMs * NS_PER_MS,
    lame_duck_duration: s.lameDuckDurationMs * NS_PER_MS,
    start: rfc3339(s.startMs),
    now: rfc3339(s.nowMs),
    uptime: uptime(s.nowMs - s.startMs),
    mem: s.rssBytes,
    cores: s.cores,
    gomaxprocs: s.cores,
    cpu: s.cpuPercent,
    connections: s.open.length,
    total_connections: s.totalConnections,
    routes: s.numRoutes,
    remotes: 0,
    leafnodes: 0,
    in_msgs: s.inMsgs,
    out_msgs: s.outMsgs,
    in_bytes: s.inBytes,
    out_bytes: s.outBytes,
    slow_consumers: s.slowConsumers,
    slow_consumer_stats: { clients: s.slowConsumers, routes: 0, gateways: 0, leafs: 0 },
    subscriptions: subs,
    http_req_stats: s.httpReqStats,
    config_load_time: rfc3339(s.configLoadMs),
    // tsnats only (nats-server has no such field): how late the one event loop that serves
    // every client has been running; see src/monitor/looplag.ts and README "Monitoring".
    tsnats_event_loop_lag: { ...s.loopLag },
  };
}

/** nats-server WebsocketOptsVarz: every field omitempty; the port is the bound one. */
function websocketVarz(w: ServerSnap["websocket"]): Record<string, unknown> {
  if (w === null) return {};
  const out: Record<string, unknown> = { host: w.host, port: w.boundPort };
  if (w.advertise !== "") out["advertise"] = w.advertise;
  if (w.noAuthUser !== "") out["no_auth_user"] = w.noAuthUser;
  if (w.jwtCookie !== "") out["jwt_cookie"] = w.jwtCookie;
  if (w.handshakeTimeoutMs > 0) out["handshake_timeout"] = w.handshakeTimeoutMs * NS_PER_MS;
  if (w.authorization !== null && w.authorization.timeoutMs > 0) out["auth_timeout"] = w.authorization.timeoutMs / 1000;
  if (w.noTls) out["no_tls"] = true;
  if (w.tls !== null && w.tls.verifyAndMap) out["tls_map"] = true;
  if (w.tls !== null && w.tls.pinnedCerts.length > 0) out["tls_pinned_certs"] = [...w.tls.pinnedCerts];
  if (w.sameOrigin) out["same_origin"] = true;
  if (w.allowedOrigins.length > 0) out["allowed_origins"] = [...w.allowedOrigins];
  if (w.compression) out["compression"] = true;
  return out;
}
