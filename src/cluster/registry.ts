// Which connections are the routes to each peer (nats-server route.go processRouteInfo,
// addRoute, removeRoute, processImplicitRoute, forwardNewRouteInfoToKnownServers): the first
// INFO registers a route in its peer's pool slot (the one the dialling side chose), as the
// peer's one route (no pool), or as the peer's route pinned to an account; duplicates close;
// the peers hear of a new server (gossip) and dial it; the route that carries the global
// account to each peer (`carriers`, what Interest announces on) follows the registrations.

import { Peer, poolIndex } from "./pool.js";
import { GLOBAL_ACCOUNT, SYSTEM_ACCOUNT, type Route, type RouteInfo } from "./route.js";
import { announcesUrls, joinHostPort, redactUrl, urlKey } from "./urls.js";
import type { Interest } from "./interest.js";
import type { ClusterOptions } from "../server/options.js";
import type { Logger } from "../runtime/log.js";

/** Accounts a route may be pinned to: tsnats has the global account, and carries its own
 *  peer frames in the system account. */
const KNOWN_ACCOUNTS: ReadonlySet<string> = new Set([GLOBAL_ACCOUNT, SYSTEM_ACCOUNT]);

/** What the registry needs of the cluster. */
export interface RegistryHost {
  readonly serverId: string;
  readonly serverName: string;
  readonly log: Logger;
  readonly opts: ClusterOptions;
  /** Our pool size; 0 or less: the 2.9 protocol. */
  readonly poolSize: number;
  readonly name: string;
  closeRoute(r: Route, reason: string, detail: string): void;
  dial(url: string, explicit: boolean, attempt: number, account: string): void;
  /** Our INFO line for a route (infoJson). */
  infoLine(poolIdx: number, account: string): string;
  /** The URL r was dialled with turned out to be this server. */
  markSelf(r: Route): void;
  adoptName(theirs: string, theirsDynamic: boolean, keep: Route): boolean;
  /** A peer's first route registered / its last one closed. */
  peerUp(p: Peer): void;
  peerDown(p: Peer): void;
  clientUrlsChanged(): void;
  flushRoutes(): void;
}

export class Registry {
  /** Peers by server id. */
  readonly peers = new Map<string, Peer>();
  /** Pinned accounts, in configuration order. */
  readonly pinnedAccounts: readonly string[];

  constructor(
    private readonly h: RegistryHost,
    private readonly interest: Interest,
    /** Each peer's route for the global account (its interest and messages), by server id:
     *  the map Interest announces on. */
    readonly carriers: Map<string, Route>,
  ) {
    this.pinnedAccounts = h.poolSize > 0 ? h.opts.accounts : [];
  }

  /** The connection that carries account's traffic to p (null while it is not up). */
  carrierFor(p: Peer, account: string): Route | null {
    return p.carrier(account, this.pinnedAccounts.includes(account), poolIndex(this.h.poolSize, account));
  }

  /** Recompute p's carrier of the global account; a new one hears all our interest. */
  private refreshCarrier(p: Peer): void {
    const c = this.carrierFor(p, GLOBAL_ACCOUNT);
    const old = this.carriers.get(p.id) ?? null;
    if (c === old) return;
    if (c === null) this.carriers.delete(p.id);
    else {
      this.carriers.set(p.id, c);
      this.interest.sendAllTo(c);
    }
  }

  // ---- INFO ----

  processInfo(r: Route, info: RouteInfo): void {
    const h = this.h;
    const id = info.server_id;
    if (id === h.serverId) {
      r.noReconnect = true;
      h.markSelf(r);
      h.log.debug(`${r.label()} - Detected route to self, ignoring ${redactUrl(r.url)}`);
      return h.closeRoute(r, "Duplicate Route", "");
    }
    if (info.cluster !== undefined && info.cluster !== "" && info.cluster !== h.name && !h.adoptName(info.cluster, info.cluster_dynamic === true, r)) {
      return h.closeRoute(r, "Cluster Name Conflict", `cluster name "${info.cluster}" does not match "${h.name}"`);
    }
    if (r.infoReceived) return this.asyncInfo(r, info);
    if (info.server_name !== undefined && info.server_name !== "" && info.server_name === h.serverName) {
      // Names must be unique in a cluster (JetStream needs it): no route, and no retries.
      r.noReconnect = true;
      h.log.error(`${r.label()} - Remote server has a duplicate name: "${info.server_name}"`);
      return h.closeRoute(r, "Duplicate Server Name", "");
    }
    r.infoReceived = true;
    r.remoteId = id;
    r.remoteName = info.server_name ?? "";
    r.remoteInfo = info;
    if (r.didSolicit) r.headers = info.headers === true;
    else r.headers = r.headers && info.headers === true;
    // Where the peer is reached: its advertised address, else the address it came from with
    // its route port (a listener on 0.0.0.0 names no host).
    if (info.ip === undefined || info.ip === "") info.ip = `nats-route://${joinHostPort(r.host, typeof info.port === "number" ? info.port : 0)}/`;
    if (r.url === "") r.url = info.ip;
    // A route we dialled for an account knows it; one dialled to us learns it here.
    let account = r.account;
    if (!r.didSolicit && typeof info.route_account === "string" && info.route_account !== "") account = info.route_account;
    const theirPool = typeof info.route_pool_size === "number" && Number.isInteger(info.route_pool_size) ? info.route_pool_size : 0;
    const theirIdx = typeof info.route_pool_idx === "number" ? info.route_pool_idx : 0;
    const pool = theirPool > 0 && h.poolSize > 0;
    // Servers with different pool sizes use the larger (nats-server 2.11).
    const slots = Math.max(h.poolSize, theirPool);
    let bad = "";
    if (!pool) {
      if (account !== "") {
        bad = `Not possible to have a dedicated route for account "${account}" between those servers`;
        r.noReconnect = true;
      }
    } else if (r.didSolicit) {
      if (theirIdx !== 0) bad = `Route pool index should not be set but is set to ${theirIdx}`;
    } else if (account === "" && (!Number.isInteger(theirIdx) || theirIdx < 0 || theirIdx >= slots)) {
      bad = `Invalid route pool index: ${theirIdx} - pool size is ${theirPool}`;
    }
    if (bad !== "") {
      r.queueString(`-ERR '${bad}'\r\n`);
      return h.closeRoute(r, "Protocol Violation", bad);
    }
    if (account !== "") this.registerPinned(r, info, account, slots);
    else this.registerPooled(r, info, pool, slots, theirIdx);
    h.flushRoutes();
  }

  /** An INFO after the first: gossip about another server, or the peer's lame duck mode. */
  private asyncInfo(r: Route, info: RouteInfo): void {
    const id = info.server_id;
    const p = this.peers.get(r.remoteId);
    if (r.remoteId !== "" && r.remoteId !== id) {
      this.implicitRoute(info, p === undefined || p.noPool);
      return;
    }
    if (info.ldm === true && p !== undefined && !p.lameDuck) {
      // The peer is in lame duck mode: our clients stop hearing of its URLs.
      p.lameDuck = true;
      r.lameDuck = true;
      if (announcesUrls(p.info) && !this.h.opts.noAdvertise) this.h.clientUrlsChanged();
    }
  }

  private registerPinned(r: Route, info: RouteInfo, account: string, slots: number): void {
    const h = this.h;
    if (!KNOWN_ACCOUNTS.has(account)) {
      r.noReconnect = true;
      r.queueString(`-ERR 'No route for account "${account}"'\r\n`);
      return h.closeRoute(r, "Protocol Violation", `no route for account "${account}"`);
    }
    if (!r.didSolicit) r.pin(account);
    let p = this.peers.get(info.server_id);
    const fresh = p === undefined;
    if (p === undefined) {
      p = new Peer(info.server_id, info, false, slots);
      this.peers.set(p.id, p);
    }
    const existing = p.pinned.get(account);
    if (existing !== undefined) return this.duplicate(existing, r, true);
    p.pinned.set(account, r);
    r.registered = true;
    h.log.debug(`${r.label()} - Registering remote route "${p.id}" for account "${account}"`);
    if (fresh) h.peerUp(p);
    let others = 0;
    for (const o of this.peers.values()) if (o !== p && o.pinned.has(account)) others++;
    if (others > 0) this.gossip(info, account);
    this.refreshCarrier(p);
  }

  private registerPooled(r: Route, info: RouteInfo, pool: boolean, slots: number, theirIdx: number): void {
    const h = this.h;
    let p = this.peers.get(info.server_id);
    const fresh = p === undefined;
    let idx = -1;
    let sz = 0;
    if (p === undefined) {
      p = new Peer(info.server_id, info, !pool, slots);
      this.peers.set(p.id, p);
      idx = pool && !r.didSolicit ? theirIdx : 0;
    } else if (pool && !p.noPool) {
      p.growTo(slots);
      if (!r.didSolicit) {
        idx = theirIdx;
        const ex = p.conns[idx];
        if (ex !== null && ex !== undefined) return this.duplicate(ex, r, false);
        // A pool we dialled: this one is retried like ours should it drop.
        const ours = p.conns.find((c) => c !== null && c.didSolicit);
        if (ours !== undefined && ours !== null) {
          r.url = ours.url;
          r.retry = true;
        }
      } else {
        for (const c of p.conns) {
          if (c === null || c.didSolicit) continue;
          c.url = r.url;
          c.retry = true;
        }
      }
      for (let i = 0; i < p.conns.length; i++) {
        if (idx === -1 && p.conns[i] === null) idx = i;
        else if (p.conns[i] !== null) sz++;
      }
    } else {
      // One route per peer (the 2.9 protocol): the first registered stays (nats-server
      // addRoute). If the duplicate was ours, the kept route takes over its URL, so that it
      // is re-dialled should it drop (the peer may keep the other connection and close this
      // one).
      const ex = p.conns[0] ?? p.anyPooled();
      if (ex !== null) return this.duplicate(ex, r, true);
      idx = 0;
    }
    if (idx < 0) {
      h.log.debug(`${r.label()} - Route pool size reached, closing extra connection to "${p.id}"`);
      r.noReconnect = true;
      return h.closeRoute(r, "Duplicate Route", "");
    }
    r.poolIdx = idx;
    p.conns[idx] = r;
    r.registered = true;
    sz++;
    if (r.infoDelayed) {
      // Our INFO, held until the peer's, names the slot this connection took.
      r.infoDelayed = false;
      r.queueString(h.infoLine(idx, ""));
    }
    h.log.debug(`${r.label()} - Registering remote route "${p.id}"${pool ? ` (pool index ${idx})` : ""}`);
    if (fresh) h.peerUp(p);
    else if (sz === 1 && p.pooled === 1 && announcesUrls(info) && !h.opts.noAdvertise) {
      // The first pooled route of a peer known only by a pinned one: its client URLs now.
      p.info = info;
      h.clientUrlsChanged();
    }
    // Tell the others about the new server (each then connects to it), once per server.
    if (!pool || sz === 1) this.gossip(info, "");
    this.refreshCarrier(p);
    // Fill the pool: the next connection once the peer answers a PING (it took our
    // credentials).
    if (pool && r.didSolicit && sz < p.conns.length) {
      r.startNewRoute = true;
      r.sendPing();
    }
  }

  /** r duplicates existing (both sides dialled each other): r closes, existing stays and is
   *  retried should it drop (nats-server handleDuplicateRoute). */
  private duplicate(existing: Route, r: Route, noReconnect: boolean): void {
    if (r.didSolicit) {
      if (existing.url === "" || !existing.didSolicit) existing.url = r.url;
      existing.explicit = existing.explicit || r.explicit;
    }
    existing.retry = true;
    r.noReconnect = noReconnect;
    this.h.log.debug(`${r.label()} - Detected duplicate remote route "${r.remoteId}"`);
    this.h.closeRoute(r, "Duplicate Route", "");
  }

  /** The peers hear of a new server (or of its route pinned to account) and dial it. */
  private gossip(info: RouteInfo, account: string): void {
    if (this.peers.size < 2) return;
    const fwd: Record<string, unknown> = { ...info };
    delete fwd["nonce"];
    delete fwd["route_pool_idx"];
    if (account !== "") fwd["route_account"] = account;
    else delete fwd["route_account"];
    const line = `INFO ${JSON.stringify(fwd)}\r\n`;
    for (const p of this.peers.values()) {
      if (p.id === info.server_id) continue;
      // A peer without pooling cannot take a pinned route.
      if (account !== "" && p.noPool) continue;
      const via = (account !== "" ? p.pinned.get(account) : undefined) ?? p.anyPooled() ?? p.pinned.values().next().value;
      via?.queueString(line);
    }
  }

  /** Gossip: the peer told us about another server (or its route pinned to an account),
   *  which we then dial unless we know it. viaNoPool: the teller speaks the 2.9 protocol,
   *  so it does not tell us of pinned routes: we dial ours too. */
  implicitRoute(info: RouteInfo, viaNoPool: boolean): void {
    const h = this.h;
    const id = info.server_id;
    if (id === h.serverId) return;
    const account = typeof info.route_account === "string" ? info.route_account : "";
    const p = this.peers.get(id);
    if (account !== "") {
      if (h.poolSize <= 0 || !this.pinnedAccounts.includes(account) || p?.pinned.has(account) === true) return;
    } else if (p !== undefined && p.pooled > 0) return;
    let url = typeof info.ip === "string" && info.ip !== "" ? info.ip : "";
    if (url === "" && typeof info.host === "string" && typeof info.port === "number") url = `nats-route://${joinHostPort(info.host, info.port)}/`;
    if (url === "") return;
    let u: URL;
    try {
      u = new URL(url);
    } catch {
      return;
    }
    // A configured route is dialled (and re-dialled) on its own.
    const hp = typeof info.host === "string" && typeof info.port === "number" ? joinHostPort(info.host, info.port).toLowerCase() : "";
    for (const c of h.opts.routes) {
      try {
        const cu = new URL(c);
        if (cu.host.toLowerCase() === hp || urlKey(cu) === urlKey(u)) return;
      } catch {
        /* validated at startup */
      }
    }
    if (info.auth_required === true && h.opts.user !== "") {
      u.username = encodeURIComponent(h.opts.user);
      u.password = encodeURIComponent(h.opts.password);
    }
    const target = u.toString();
    h.dial(target, false, 0, account);
    if (viaNoPool && account === "") for (const a of this.pinnedAccounts) h.dial(target, false, 0, a);
  }

  // ---- going ----

  /** r closed: out of its peer's slots. The peer when r was its last route (it is gone),
   *  else null. */
  unregister(r: Route): Peer | null {
    if (!r.registered) return null;
    r.registered = false;
    const p = this.peers.get(r.remoteId);
    if (p === undefined || !p.remove(r)) return null;
    this.refreshCarrier(p);
    if (p.size > 0) return null;
    this.peers.delete(p.id);
    this.h.peerDown(p);
    return p;
  }

  /** Whether a closed route r should be dialled again (it was ours, or a duplicate of ours
   *  that the peer may have kept) and to which accounts ("" the pool). */
  redials(r: Route, gone: Peer | null): string[] {
    if (r.noReconnect || r.url === "" || !(r.didSolicit || r.retry)) return [];
    const p = r.remoteId !== "" ? this.peers.get(r.remoteId) : undefined;
    if (p !== undefined) {
      // Still connected some other way?
      if (r.account !== "") return p.pinned.has(r.account) ? [] : [r.account];
      if (p.noPool || this.h.poolSize <= 0) return p.conns[0] !== null || p.anyPooled() !== null ? [] : [""];
      return p.pooled < p.conns.length ? [""] : [];
    }
    // The peer is gone. Its one no-pool route may come back as a pool, with pinned routes.
    if (gone !== null && gone.noPool && r.account === "") return ["", ...this.pinnedAccounts];
    return [r.account];
  }

  /** A pooled route's PING was answered: dial the next connection of its pool. */
  routePong(r: Route): void {
    const p = this.peers.get(r.remoteId);
    if (p === undefined || !r.registered || p.noPool || p.pooled >= p.conns.length) return;
    this.h.dial(r.url, r.explicit, 0, "");
  }

  /** The route of the peer named name for its frames in the system account: the pinned
   *  one, its slot, or (they name the account) any pooled route. */
  systemRoute(p: Peer): Route | null {
    return this.carrierFor(p, SYSTEM_ACCOUNT) ?? p.anyPooled();
  }
}
