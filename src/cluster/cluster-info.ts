// What the cluster shows: the client URLs it tells clients (connect_urls), /varz's cluster
// block and /routez's routes (src/monitor/misc.ts formats the times as nats-server).

import { listenerUrls } from "./urls.js";
import type { Peer } from "./pool.js";
import type { Route } from "./route.js";
import type { RoutezOptions } from "../server/routing.js";
import type { ClusterOptions, ServerOptions } from "../server/options.js";

/** What the monitoring view reads of the cluster. */
export interface InfoView {
  readonly serverOpts: ServerOptions;
  readonly opts: ClusterOptions;
  readonly name: string;
  readonly port: number;
  readonly tls: boolean;
  /** The pool size in effect (-1: no pool). */
  readonly poolSize: number;
  /** The client listener's and the websocket listener's bound ports (0: none). */
  readonly clientPort: number;
  readonly wsPort: number;
  readonly peers: ReadonlyMap<string, Peer>;
}

/** This server's client URLs as it announces them ("host:port"): client_advertise, else
 *  the listener's address (every non-loopback address for 0.0.0.0 / ::). */
export function ownClientUrls(v: InfoView): string[] {
  const o = v.serverOpts;
  return listenerUrls(o.clientAdvertise, o.host, v.clientPort);
}

/** This server's websocket URLs, the same way from the websocket block (none without a
 *  websocket listener). */
export function ownWsUrls(v: InfoView): string[] {
  const w = v.serverOpts.websocket;
  if (w === null || v.wsPort === 0) return [];
  return listenerUrls(w.advertise, w.host, v.wsPort);
}

/** What clients are told in connect_urls: every server's client URLs (for websocket
 *  clients, every server's websocket URLs, as nats-server). */
export function clientUrls(v: InfoView, websocket: boolean): string[] {
  if (v.opts.noAdvertise) return [];
  const out = websocket ? ownWsUrls(v) : ownClientUrls(v);
  for (const p of v.peers.values()) {
    if (p.lameDuck) continue;
    const theirs = websocket ? p.info.ws_connect_urls : p.info.connect_urls;
    for (const u of theirs ?? []) if (!out.includes(u)) out.push(u);
  }
  return out;
}

/** The route URLs for /varz cluster.urls: the configured routes, without credentials. */
export function configuredUrls(o: ClusterOptions): string[] {
  return o.routes.map((u) => {
    try {
      return new URL(u).host;
    } catch {
      return u;
    }
  });
}

export function varz(v: InfoView): Record<string, unknown> {
  const o = v.opts;
  const out: Record<string, unknown> = { name: v.name, addr: o.host, cluster_port: v.port, auth_timeout: o.authTimeoutMs / 1000 };
  const urls = configuredUrls(o);
  if (urls.length > 0) out["urls"] = urls;
  // nats-server shows the TLS timeout (2 s by default) with or without TLS.
  out["tls_timeout"] = (o.tls?.timeoutMs ?? 2000) / 1000;
  if (v.tls) {
    out["tls_required"] = true;
    out["tls_verify"] = true;
  }
  // As set, or in effect when pinned accounts chose the default (nats-server always shows
  // it, 3 by default; tsnats's default is no pool and shows nothing).
  if (o.poolSize !== 0 || v.poolSize > 0) out["pool_size"] = o.poolSize !== 0 ? o.poolSize : v.poolSize;
  return out;
}

function routeEntry(r: Route, pooled: boolean, subs: boolean): Record<string, unknown> {
  const e: Record<string, unknown> = {
    rid: r.rid,
    remote_id: r.remoteId,
    remote_name: r.remoteName,
    did_solicit: r.didSolicit,
    is_configured: r.explicit,
    ip: r.host,
    port: r.port,
    startMs: r.startMs,
    lastActivityMs: r.lastActivityMs,
    rttMs: r.rttMs,
    pending_size: r.pendingBytes(),
    in_msgs: r.inMsgs,
    out_msgs: r.outMsgs,
    in_bytes: r.inBytes,
    out_bytes: r.outBytes,
    subscriptions: r.remoteSubs.size,
  };
  // nats-server lists the subjects (a queue subscription by its subject too).
  if (subs) e["subscriptions_list"] = [...r.remoteSubs.values()].map((x) => x.subject);
  // A pinned route's account (nats-server's field); a pooled one's slot (tsnats's).
  if (r.account !== "") e["account"] = r.account;
  else if (pooled) e["tsnats_pool_idx"] = r.poolIdx;
  return e;
}

/** The routes for /routez, raw: every registered connection, pooled and pinned. */
export function routez(v: InfoView, opts: RoutezOptions): Record<string, unknown> {
  const routes: Record<string, unknown>[] = [];
  for (const p of v.peers.values()) for (const r of p.all()) routes.push(routeEntry(r, !p.noPool, opts.subs));
  routes.sort((a, b) => (a["rid"] as number) - (b["rid"] as number));
  return { num_routes: routes.length, routes };
}
