// A plain-data picture of the server at one instant. Every response builder takes one of
// these, so builders are pure functions that unit tests can feed by hand.

import os from "node:os";
import type { ClosedClientInfo, Server, ServerStats } from "../server/server.js";
import type { WebSocketOptions } from "../server/options.js";
import { SERVER_VERSION, PROTO_VERSION } from "../version.js";
import type { LoopLag } from "./looplag.js";

export interface SubSnap {
  subject: string;
  queue: string;
  sid: string;
  msgs: number;
  max: number;
  cid: number;
}

export interface ConnSnap {
  cid: number;
  ip: string;
  port: number;
  startMs: number;
  lastActivityMs: number;
  /** 0 while open. */
  stopMs: number;
  reason: string;
  rttMs: number;
  pendingBytes: number;
  inMsgs: number;
  outMsgs: number;
  inBytes: number;
  outBytes: number;
  numSubs: number;
  /** Empty for closed connections: the server does not keep their subscriptions. */
  subs: SubSnap[];
  name: string;
  lang: string;
  version: string;
  user: string;
  /** "" for plaintext connections. */
  tlsVersion: string;
  tlsCipher: string;
}

export interface SublistStats {
  num_subscriptions: number;
  num_cache: number;
  num_inserts: number;
  num_removes: number;
  num_matches: number;
  cache_hit_rate: number;
  max_fanout: number;
  avg_fanout: number;
}

/** The server's counters (ServerStats) and what the monitoring endpoints show beside them. */
export interface ServerSnap extends ServerStats {
  nowMs: number;
  serverId: string;
  serverName: string;
  version: string;
  proto: number;
  go: string;
  host: string;
  port: number;
  httpHost: string;
  httpPort: number;
  httpsPort: number;
  tlsRequired: boolean;
  tlsVerify: boolean;
  /** The client port's TLS handshake timeout (nats-server's default, 2 s, without TLS). */
  tlsTimeoutMs: number;
  /** The server certificate's expiry as node prints it; "" without TLS. */
  tlsCertNotAfter: string;
  authRequired: boolean;
  authTimeoutMs: number;
  maxConnections: number;
  maxSubs: number;
  pingIntervalMs: number;
  pingMax: number;
  maxControlLineBytes: number;
  maxPayloadBytes: number;
  maxPendingBytes: number;
  writeDeadlineMs: number;
  lameDuckDurationMs: number;
  startMs: number;
  configLoadMs: number;
  rssBytes: number;
  cores: number;
  cpuPercent: number;
  /** tsnats only: how late the event loop has been running (src/monitor/looplag.ts). */
  loopLag: LoopLag;
  open: ConnSnap[];
  closed: ConnSnap[];
  sublist: SublistStats;
  /** Every subscription in the index (clients and internal, cid 0 for internal). */
  allSubs: SubSnap[];
  httpReqStats: Record<string, number>;
  /** JetStream was asked for in the configuration. */
  jetstreamRequested: boolean;
  /** The running JetStream service's own jsz body, or null when it is not running. */
  jsz: Record<string, unknown> | null;
  jsConfig: { storeDir: string; maxMemoryBytes: number; maxStorageBytes: number; syncIntervalMs: number | "always"; domain: string };
  /** The websocket block when its listener runs, with the bound port. */
  websocket: (WebSocketOptions & { boundPort: number }) | null;
  /** The cluster block of /varz ({} without routes), and what clients are told. */
  clusterVarz: Record<string, unknown>;
  connectUrls: string[];
  tags: string[];
  numRoutes: number;
  /** /routez's body past the head, or null without a cluster. */
  routez: Record<string, unknown> | null;
}

export interface SnapshotNeeds {
  subs: boolean;
  /** /routez?subs=1 */
  routeSubs?: boolean;
  jszOpts: Record<string, unknown> | null;
}

export function ipOf(host: string): string {
  return host.startsWith("::ffff:") ? host.slice(7) : host;
}

/** What an open connection (a Client) and a closed one (its ClosedClientInfo) both have,
 *  with what only an open one knows or only a closed one has. */
function connSnap(
  c: Omit<ClosedClientInfo, "stopMs" | "reason">,
  lastActivityMs: number,
  stopMs: number,
  reason: string,
  pendingBytes: number,
  numSubs: number,
  subs: SubSnap[],
): ConnSnap {
  return {
    cid: c.cid,
    ip: ipOf(c.host),
    port: c.port,
    startMs: c.startMs,
    lastActivityMs,
    stopMs,
    reason,
    rttMs: c.rttMs,
    pendingBytes,
    inMsgs: c.inMsgs,
    outMsgs: c.outMsgs,
    inBytes: c.inBytes,
    outBytes: c.outBytes,
    numSubs,
    subs,
    name: c.name,
    lang: c.lang,
    version: c.version,
    user: c.user,
    tlsVersion: c.tlsVersion,
    tlsCipher: c.tlsCipher,
  };
}

export function snapshot(
  server: Server,
  needs: SnapshotNeeds,
  extra: { httpPort: number; httpsPort: number; cpuPercent: number; httpReqStats: Record<string, number>; loopLag: LoopLag },
): ServerSnap {
  const o = server.opts;
  const open: ConnSnap[] = [];
  for (const c of server.clients.values()) {
    const subs: SubSnap[] = [];
    if (needs.subs) {
      for (const s of c.subs.values()) subs.push({ subject: s.subject, queue: s.queue, sid: s.sid, msgs: s.delivered, max: s.max, cid: c.cid });
    }
    open.push(connSnap(c, c.lastActivityMs, 0, "", c.pendingBytes(), c.subs.size, subs));
  }
  // The closed record keeps no last activity; its stop time is the closest bound.
  const closed: ConnSnap[] = server.closedClients.map((c) => connSnap(c, c.stopMs, c.stopMs, c.reason, 0, 0, []));
  const allSubs: SubSnap[] = needs.subs
    ? server.sublist.all().map((s) => ({ subject: s.subject, queue: s.queue, sid: s.sid, msgs: s.delivered, max: s.max, cid: s.owner.cid }))
    : [];
  let jsz: Record<string, unknown> | null = null;
  if (server.jetstream && needs.jszOpts) {
    const body: unknown = server.jetstream.jsz(needs.jszOpts);
    jsz = body !== null && typeof body === "object" ? (body as Record<string, unknown>) : {};
  }
  const js = o.jetstream;
  return {
    nowMs: server.nowMs(),
    serverId: server.serverId,
    serverName: server.serverName,
    version: SERVER_VERSION,
    proto: PROTO_VERSION,
    go: `node${process.version}`,
    host: o.host,
    port: server.port,
    httpHost: o.httpHost,
    httpPort: extra.httpPort,
    httpsPort: extra.httpsPort,
    tlsRequired: server.tls !== null && !o.allowNonTls,
    tlsVerify: server.tls !== null && server.tls.opts.verify,
    tlsTimeoutMs: o.tls !== null ? o.tls.timeoutMs : 2000,
    tlsCertNotAfter: server.tls !== null ? server.tls.certNotAfter : "",
    authRequired: server.authRequired(),
    authTimeoutMs: o.authorization.timeoutMs,
    maxConnections: o.maxConnections,
    maxSubs: o.maxSubs,
    pingIntervalMs: o.pingIntervalMs,
    pingMax: o.pingMax,
    maxControlLineBytes: o.maxControlLineBytes,
    maxPayloadBytes: o.maxPayloadBytes,
    maxPendingBytes: o.maxPendingBytes,
    writeDeadlineMs: o.writeDeadlineMs,
    lameDuckDurationMs: o.lameDuckDurationMs,
    startMs: server.startMs,
    configLoadMs: server.configLoadMs,
    rssBytes: process.memoryUsage.rss(),
    cores: os.availableParallelism(),
    cpuPercent: extra.cpuPercent,
    loopLag: extra.loopLag,
    inMsgs: server.stats.inMsgs,
    outMsgs: server.stats.outMsgs,
    inBytes: server.stats.inBytes,
    outBytes: server.stats.outBytes,
    slowConsumers: server.stats.slowConsumers,
    totalConnections: server.stats.totalConnections,
    open,
    closed,
    sublist: server.sublist.stats(),
    allSubs,
    httpReqStats: { ...extra.httpReqStats },
    jetstreamRequested: js.enabled,
    jsz,
    websocket: o.websocket !== null && server.wsPort !== 0 ? { ...o.websocket, boundPort: server.wsPort } : null,
    clusterVarz: server.cluster !== null ? server.cluster.varz() : {},
    connectUrls: server.cluster !== null ? server.cluster.clientUrls() : [],
    tags: server.opts.serverTags,
    numRoutes: server.cluster !== null ? (server.cluster.routez({ subs: false })["num_routes"] as number) : 0,
    routez: server.cluster !== null ? server.cluster.routez({ subs: needs.routeSubs === true }) : null,
    jsConfig: {
      storeDir: js.storeDir,
      maxMemoryBytes: js.maxMemoryStoreBytes,
      maxStorageBytes: js.maxFileStoreBytes,
      syncIntervalMs: js.syncIntervalMs,
      domain: js.domain,
    },
  };
}
