// The route handshake's messages (nats-server route.go sendRouteConnect, routeInfo,
// processRouteConnect): our CONNECT when we dial, our INFO (with the pool size, the slot and
// the pinned account when pooling is on), and the checks on a peer's CONNECT.

import { joinHostPort, splitHostPort, subjectPermissionJson } from "./urls.js";
import type { Route } from "./route.js";
import type { ClusterOptions, ServerOptions } from "../server/options.js";
import { SERVER_VERSION } from "../version.js";

const ROUTE_PROTO_V2 = 2;
/** The version of tsnats's peer protocol announced in route INFO (tsnats_peer). */
export const PEER_PROTOCOL = 1;

/** What the handshake reads of the cluster. */
export interface HandshakeView {
  readonly serverId: string;
  readonly serverName: string;
  readonly serverOpts: ServerOptions;
  readonly opts: ClusterOptions;
  /** Our pool size; 0 or less: the 2.9 protocol (no route_pool_size). */
  readonly poolSize: number;
  readonly name: string;
  readonly dynamic: boolean;
  readonly tls: boolean;
  readonly port: number;
  ownClientUrls(): string[];
  ownWsUrls(): string[];
  closeRoute(r: Route, reason: string, detail: string): void;
  /** A dynamic cluster name gives way (true when the names now agree). */
  adoptName(theirs: string, theirsDynamic: boolean, keep: Route): boolean;
}

/** Our CONNECT on a route we dialled: credentials from its URL. */
export function connectJson(v: HandshakeView, url: string): string {
  let user = "";
  let pass = "";
  try {
    const u = new URL(url);
    user = decodeURIComponent(u.username);
    pass = decodeURIComponent(u.password);
  } catch {
    /* checked when dialled */
  }
  const c: Record<string, unknown> = { echo: true, verbose: false, pedantic: false };
  if (user !== "") c["user"] = user;
  if (pass !== "") c["pass"] = pass;
  c["tls_required"] = v.tls;
  c["headers"] = true;
  c["name"] = v.serverId;
  c["cluster"] = v.name;
  c["dynamic"] = v.dynamic;
  c["lnoc"] = true;
  return JSON.stringify(c);
}

/** Our route INFO. poolIdx: the slot a dialled pooled route took (omitted when 0, as
 *  nats-server); account: the account a dialled route is pinned to (first INFO only). */
export function infoJson(v: HandshakeView, poolIdx = 0, account = ""): string {
  const o = v.opts;
  const info: Record<string, unknown> = {
    server_id: v.serverId,
    server_name: v.serverName,
    version: SERVER_VERSION,
    proto: ROUTE_PROTO_V2,
    go: `node${process.version}`,
    host: o.host,
    port: v.port,
    headers: true,
    max_payload: v.serverOpts.maxPayloadBytes,
    cluster: v.name,
  };
  if (o.user !== "") info["auth_required"] = true;
  if (v.tls) {
    info["tls_required"] = true;
    info["tls_verify"] = true;
  }
  if (v.dynamic) info["cluster_dynamic"] = true;
  if (o.advertise !== "") {
    const hp = splitHostPort(o.advertise, v.port);
    info["host"] = hp.host;
    info["port"] = hp.port;
    info["ip"] = `nats-route://${joinHostPort(hp.host, hp.port)}/`;
  }
  if (!o.noAdvertise) {
    info["connect_urls"] = v.ownClientUrls();
    const ws = v.ownWsUrls();
    if (ws.length > 0) info["ws_connect_urls"] = ws;
  }
  if (v.serverOpts.jetstream.enabled) info["jetstream"] = true;
  const p = o.permissions;
  if (p !== null) {
    if (p.publish !== null) info["import"] = subjectPermissionJson(p.publish);
    if (p.subscribe !== null) info["export"] = subjectPermissionJson(p.subscribe);
  }
  info["lnoc"] = true;
  if (v.poolSize > 0) {
    info["route_pool_size"] = v.poolSize;
    if (poolIdx > 0) info["route_pool_idx"] = poolIdx;
    if (account !== "") info["route_account"] = account;
  }
  info["tsnats_peer"] = PEER_PROTOCOL;
  return JSON.stringify(info);
}

/** A peer's CONNECT on a route it dialled to us. */
export function processConnect(v: HandshakeView, r: Route, json: string): void {
  let c: Record<string, unknown>;
  try {
    const x: unknown = JSON.parse(json);
    if (x === null || typeof x !== "object" || Array.isArray(x)) throw new Error("not an object");
    c = x as Record<string, unknown>;
  } catch {
    return v.closeRoute(r, "Protocol Violation", "bad CONNECT JSON");
  }
  // Clients send lang; routes do not (nats-server's way to tell them apart).
  if (typeof c["lang"] === "string" && c["lang"] !== "") {
    r.queueString("-ERR 'attempted to connect to route port'\r\n");
    r.noReconnect = true;
    return v.closeRoute(r, "Wrong Port", "a client connected to the route port");
  }
  if (typeof c["gateway"] === "string" && c["gateway"] !== "") {
    r.queueString(`-ERR 'Rejecting connection from gateway "${c["gateway"]}" on the Route port'\r\n`);
    return v.closeRoute(r, "Wrong Gateway", "a gateway connected to the route port");
  }
  const o = v.opts;
  if (o.user !== "" && (c["user"] !== o.user || c["pass"] !== o.password)) {
    r.queueString("-ERR 'Authorization Violation'\r\n");
    return v.closeRoute(r, "Authentication Failure", `authentication error - user ${JSON.stringify(typeof c["user"] === "string" ? c["user"] : "")}`);
  }
  const theirs = typeof c["cluster"] === "string" ? c["cluster"] : "";
  if (theirs !== v.name && !v.adoptName(theirs, c["dynamic"] === true, r)) {
    const txt = `Rejecting connection, cluster name "${theirs}" does not match "${v.name}"`;
    r.queueString(`-ERR '${txt}'\r\n`);
    return v.closeRoute(r, "Cluster Name Conflict", txt);
  }
  r.remoteId = typeof c["name"] === "string" ? c["name"] : "";
  r.headers = c["headers"] === true;
  r.connectDone = true;
}
