// Cluster routes (nats-server route.go, the 2.9 no-pool protocol): the route listener, the
// routes this server solicits (configured, and implicit ones learned from gossiped INFO),
// which connection is *the* route to each peer, the interest each peer announced, and the
// two message paths:
// - forward(): a message published here (by a client or an internal publisher) goes to every
//   route with matching plain interest once, and each queue group picks one member among
//   the local members and the routes' weights (nats-server's weighted pick);
// - inbound(): a message that came over a route is delivered to local subscribers only (the
//   one-hop rule), and to one local member of each queue group the RMSG names.
// Internal subscriptions (JetStream) are neither announced nor reached by routed messages.
//
// The Server (src/server/server.ts) loads this module lazily and talks to it through
// ClusterLike; this module sees the Server through ClusterHost.

import net from "node:net";
import tls from "node:tls";
import { randomBytes } from "node:crypto";
import { Sublist } from "../subjects/sublist.js";
import { Interest } from "./interest.js";
import { announcesUrls, joinHostPort, listenerUrls, redactUrl, splitHostPort, subjectPermissionJson, urlKey } from "./urls.js";
import { Route, RemoteSub, GLOBAL_ACCOUNT, SYSTEM_ACCOUNT, PEER_SUBJECT_PREFIX, type RouteInfo } from "./route.js";
import { buildTls, peerRejection, pinnedOk, type TlsSetup } from "../server/tls.js";
import type { ClusterOptions, ServerOptions } from "../server/options.js";
import type { Logger } from "../runtime/log.js";
import type { Subscription } from "../server/subscription.js";
import type { AckReply } from "../protocol/ackreply.js";
import type { SublistResult } from "../subjects/sublist.js";
import type { ClusterLike, RoutezOptions, Sender } from "../server/routing.js";
import type { Clock, TimerHandle } from "../runtime/clock.js";
import type { Scheduler } from "../runtime/sched.js";
import type { Random } from "../runtime/random.js";
import { SERVER_VERSION } from "../version.js";
import { ClientPermissions } from "../server/permissions.js";

/** What the cluster needs of the server. */
export interface ClusterHost {
  readonly serverId: string;
  readonly serverName: string;
  readonly opts: ServerOptions;
  readonly log: Logger;
  readonly traceEnabled: boolean;
  readonly port: number;
  /** The websocket listener's bound port; 0 without one. */
  readonly wsPort: number;
  readonly stats: { inMsgs: number; inBytes: number };
  readonly clock: Clock;
  readonly sched: Scheduler;
  readonly random: Random;
  nowMs(): number;
  /** The server's one routing path; a routed message (from a route) reaches local client
   *  subscriptions only, and one local member of each queue group in queues. */
  routeRange(from: Sender | null, subject: string, reply: string, hdr: Buffer | null, buf: Buffer, start: number, end: number, shown: string, probe: boolean, ack: AckReply | null, queues: readonly string[] | null): void;
  allocCid(): number;
  flushDirty(): void;
  /** The cluster's client URLs changed: tell clients (async INFO). */
  clientUrlsChanged(): void;
}

/** nats-server DEFAULT_ROUTE_RECONNECT is 1 s; reconnects back off from RECONNECT_MIN_MS to
 *  RECONNECT_MAX_MS, with jitter so that two servers dialling each other do not keep
 *  colliding. */
const RECONNECT_MIN_MS = 250;
const RECONNECT_MAX_MS = 2000;
const DIAL_TIMEOUT_MS = 2000;
const ROUTE_RECONNECT_MS = 1000;
const FIRST_PING_MS = 1000;
const ROUTE_PROTO_V2 = 2;
/** The version of tsnats's peer protocol announced in route INFO (tsnats_peer). */
export const PEER_PROTOCOL = 1;

/** Receives tsnats peer frames (subject under $TSR., payload a view valid only during the
 *  call) and hears of peers whose route registered or closed. */
export interface PeerListener {
  frame(from: string, subject: string, payload: Buffer): void;
  peerUp(name: string): void;
  peerDown(name: string): void;
}

export class Cluster implements ClusterLike {
  name: string;
  dynamic: boolean;
  readonly log: Logger;
  /** Registered routes by remote server id. */
  readonly routes = new Map<string, Route>();
  /** Every route connection, pending ones included. */
  readonly all = new Set<Route>();
  /** Our clients' interest and the peers' (interest.ts). */
  private readonly interest: Interest;
  private listener: net.Server | null = null;
  private boundPort = 0;
  private tlsSetup: TlsSetup | null = null;
  private dirty: Route[] = [];
  private flushScheduled = false;
  private readonly flushBound = (): void => this.flushRoutes();
  /** URLs (host:port, lower case) that turned out to be this server. */
  private readonly selfUrls = new Set<string>();
  /** URLs being dialled or waiting to be re-dialled. */
  private readonly dialing = new Set<string>();
  private readonly timers = new Set<TimerHandle>();
  private tickTimer: TimerHandle | null = null;
  private stopped = false;
  /** Who hears tsnats peer frames and peers coming and going (peer-transport.ts). */
  private peerListener: PeerListener | null = null;
  /** Route permissions: import (what we announce) and export (what peers may announce). */
  private readonly perms: ClientPermissions | null;

  constructor(
    private readonly host: ClusterHost,
    private readonly opts: ClusterOptions,
  ) {
    this.log = host.log;
    this.perms = opts.permissions !== null ? new ClientPermissions(opts.permissions) : null;
    this.interest = new Interest(this.routes, this.perms, host.log, host.random);
    this.dynamic = opts.name === "";
    this.name = opts.name !== "" ? opts.name : randomBytes(11).toString("base64url").toUpperCase().replace(/[^A-Z0-9]/g, "X");
  }

  get active(): boolean {
    return this.routes.size > 0;
  }

  get traceEnabled(): boolean {
    return this.host.traceEnabled;
  }

  get maxPendingBytes(): number {
    return this.host.opts.maxPendingBytes;
  }

  get port(): number {
    return this.boundPort;
  }

  nowMs(): number {
    return this.host.nowMs();
  }

  get clock(): Clock {
    return this.host.clock;
  }

  // ---- lifecycle ----

  async start(): Promise<void> {
    const o = this.opts;
    if (o.tls !== null) this.tlsSetup = buildTls(o.tls);
    this.log.info(`Cluster name is ${this.name}`);
    if (this.dynamic) this.log.warn("Cluster name was dynamically generated, consider setting one");
    const l = net.createServer({ noDelay: true }, (s) => this.accept(s));
    this.listener = l;
    await new Promise<void>((resolve, reject) => {
      l.once("error", reject);
      const host = o.host === "0.0.0.0" ? "::" : o.host;
      l.listen({ host, port: o.port < 0 ? 0 : o.port, exclusive: true, ipv6Only: false }, () => {
        l.off("error", reject);
        resolve();
      });
    }).catch(async (err: Error & { code?: string }) => {
      if (o.host !== "0.0.0.0" || (err.code !== "EAFNOSUPPORT" && err.code !== "EADDRNOTAVAIL")) throw new Error(`Error listening on router port: ${o.port} - ${err.message}`);
      await new Promise<void>((resolve, reject) => {
        l.once("error", reject);
        l.listen({ host: "0.0.0.0", port: o.port < 0 ? 0 : o.port, exclusive: true }, () => resolve());
      });
    });
    l.on("error", (err) => this.log.error(`Route listener error: ${err.message}`));
    const addr = l.address();
    this.boundPort = typeof addr === "object" && addr !== null ? addr.port : o.port;
    this.log.info(`Listening for route connections on ${o.host}:${this.boundPort}`);
    if (this.tlsSetup !== null) this.log.info("TLS required for route connections");
    this.armTick();
    for (const u of o.routes) this.dial(u, true, 0);
  }

  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    if (this.tickTimer !== null) this.host.clock.clearTimer(this.tickTimer);
    this.tickTimer = null;
    for (const t of this.timers) this.host.clock.clearTimer(t);
    this.timers.clear();
    const l = this.listener;
    this.listener = null;
    for (const r of [...this.all]) this.closeRoute(r, "Server Shutdown", "");
    this.flushRoutes();
    if (l !== null) await new Promise<void>((r) => l.close(() => r()));
  }

  // ---- connections ----

  private accept(raw: net.Socket): void {
    if (this.stopped) {
      raw.destroy();
      return;
    }
    const t = this.tlsSetup;
    if (t === null) {
      this.attach(raw, false, "", false);
      return;
    }
    // Route TLS: the handshake first, and always mutual (nats-server requires and verifies
    // the peer's certificate on routes).
    const ts = new tls.TLSSocket(raw, { isServer: true, secureContext: t.context, requestCert: true, rejectUnauthorized: true });
    const deadline = this.host.clock.setTimer(() => ts.destroy(), t.opts.timeoutMs);
    ts.on("error", (err) => {
      this.log.error(`${raw.remoteAddress ?? "?"}:${raw.remotePort ?? 0} - TLS route handshake error: ${err.message}`);
      ts.destroy();
    });
    ts.once("secure", () => {
      this.host.clock.clearTimer(deadline);
      // Routes are always mutual TLS, as in nats-server.
      const bad = peerRejection(ts, t.opts, true);
      if (bad !== null) {
        this.log.error(`${raw.remoteAddress ?? "?"}:${raw.remotePort ?? 0} - TLS route handshake error: ${bad}`);
        ts.destroy();
        return;
      }
      this.attach(ts, false, "", false);
    });
  }

  /** Connect to url: explicit routes are retried for ever, implicit ones connect_retries
   *  times. */
  private dial(url: string, explicit: boolean, attempt: number): void {
    if (this.stopped) return;
    let u: URL;
    try {
      u = new URL(url);
    } catch {
      this.log.error(`Error parsing route URL ${JSON.stringify(redactUrl(url))}`);
      return;
    }
    const key = urlKey(u);
    if (this.selfUrls.has(key)) return;
    if (attempt === 0) {
      if (this.dialing.has(key)) return;
      this.dialing.add(key);
    }
    const host = u.hostname.replace(/^\[(.*)\]$/, "$1");
    const port = Number(u.port);
    this.log.debug(`Trying to connect to route on ${u.host}`);
    const t = this.tlsSetup;
    let sock: net.Socket;
    let settled = false;
    const onFail = (err: Error): void => {
      if (settled) return;
      settled = true;
      sock.destroy();
      const msg = `Error trying to connect to route (attempt ${attempt + 1}): ${err.message}`;
      if (attempt === 0 || attempt % 60 === 0) this.log.error(msg);
      else this.log.debug(msg);
      if (this.stopped || (!explicit && attempt >= this.opts.connectRetries)) {
        this.dialing.delete(key);
        return;
      }
      this.later(backoff(attempt, this.host.random), () => this.dial(url, explicit, attempt + 1));
    };
    const onUp = (s: net.Socket): void => {
      if (settled) return;
      settled = true;
      this.dialing.delete(key);
      if (this.stopped) {
        s.destroy();
        return;
      }
      this.attach(s, true, url, explicit);
    };
    if (t === null) {
      sock = net.connect({ host, port, noDelay: true });
      sock.once("connect", () => onUp(sock));
    } else {
      // The CA file verifies the peer, and its certificate must name the host dialled
      // (unless insecure).
      const co: tls.ConnectionOptions = { host, port, secureContext: t.context, rejectUnauthorized: !t.opts.insecure };
      if (net.isIP(host) === 0) co.servername = host;
      if (t.opts.insecure) co.checkServerIdentity = (): undefined => undefined;
      const ts = tls.connect(co);
      sock = ts;
      ts.once("secureConnect", () => {
        if (!pinnedOk(ts, t.opts.pinnedCerts)) return onFail(new Error("peer certificate is not pinned"));
        onUp(ts);
      });
    }
    sock.once("error", onFail);
    sock.setTimeout(DIAL_TIMEOUT_MS, () => onFail(new Error("i/o timeout")));
  }

  private later(ms: number, fn: () => void): void {
    const t = this.host.clock.setTimer(() => {
      this.timers.delete(t);
      fn();
    }, ms);
    this.timers.add(t);
  }

  /** The cluster's one timer (pings, handshakes that never finish), every second. */
  private armTick(): void {
    this.tickTimer = this.host.clock.setTimer(() => {
      this.tickTimer = null;
      if (this.stopped) return;
      this.tick();
      if (!this.stopped) this.armTick();
    }, 1000);
  }

  private attach(s: net.Socket, didSolicit: boolean, url: string, explicit: boolean): void {
    s.setTimeout(0);
    s.setNoDelay(true);
    s.removeAllListeners("error");
    const r = new Route(this.host.allocCid(), s, this, didSolicit, url, explicit);
    this.all.add(r);
    this.log.info(`${r.label()} - Route connection created`);
    s.on("data", (chunk: Buffer) => {
      r.onData(chunk);
      this.host.flushDirty();
      this.flushRoutes();
    });
    s.on("error", (err) => {
      this.log.debug(`${r.label()} - Route connection error: ${err.message}`);
      this.closeRoute(r, "Read Error", "");
    });
    s.on("close", () => this.closeRoute(r, "Client Closed", ""));
    if (didSolicit) r.queueString(`CONNECT ${this.connectJson(url)}\r\n`);
    r.queueString(`INFO ${this.infoJson()}\r\n`);
    this.flushRoutes();
  }

  /** Close a route (idempotent): its interest goes, and a solicited route is dialled again
   *  unless the peer is connected some other way. */
  closeRoute(r: Route, reason: string, detail: string): void {
    if (r.closed) return;
    if (detail !== "") this.log.error(`${r.label()} - Route closed: ${detail}`);
    r.closeReason = reason;
    r.shut();
    this.all.delete(r);
    this.interest.dropRoute(r);
    const wasRegistered = r.registered && this.routes.get(r.remoteId) === r;
    if (wasRegistered) {
      this.routes.delete(r.remoteId);
      r.registered = false;
      if (r.remoteInfo?.tsnats_peer === PEER_PROTOCOL && r.remoteName !== "") this.peerListener?.peerDown(r.remoteName);
      this.log.info(`${r.label()} - Router connection closed: ${reason}`);
      if (announcesUrls(r.remoteInfo) && !this.opts.noAdvertise) this.host.clientUrlsChanged();
    } else this.log.debug(`${r.label()} - Router connection closed: ${reason}`);
    if (this.stopped || r.noReconnect || r.url === "") return;
    if (!(r.didSolicit || r.retry)) return;
    if (r.remoteId !== "" && this.routes.has(r.remoteId)) return;
    const explicit = r.explicit;
    // nats-server waits DEFAULT_ROUTE_RECONNECT (1 s) before re-dialling a configured route,
    // and only the jitter for an implicit one.
    this.later(backoff(0, this.host.random) - RECONNECT_MIN_MS + (explicit ? ROUTE_RECONNECT_MS : 0), () => {
      if (r.remoteId !== "" && this.routes.has(r.remoteId)) return;
      this.dial(r.url, explicit, 0);
    });
  }

  // ---- handshake ----

  connectJson(url: string): string {
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
    c["tls_required"] = this.tlsSetup !== null;
    c["headers"] = true;
    c["name"] = this.host.serverId;
    c["cluster"] = this.name;
    c["dynamic"] = this.dynamic;
    c["lnoc"] = true;
    return JSON.stringify(c);
  }

  infoJson(): string {
    const o = this.opts;
    const h = this.host;
    const info: Record<string, unknown> = {
      server_id: h.serverId,
      server_name: h.serverName,
      version: SERVER_VERSION,
      proto: ROUTE_PROTO_V2,
      go: `node${process.version}`,
      host: o.host,
      port: this.boundPort,
      headers: true,
      max_payload: h.opts.maxPayloadBytes,
      cluster: this.name,
    };
    if (o.user !== "") info["auth_required"] = true;
    if (this.tlsSetup !== null) {
      info["tls_required"] = true;
      info["tls_verify"] = true;
    }
    if (this.dynamic) info["cluster_dynamic"] = true;
    if (o.advertise !== "") {
      const hp = splitHostPort(o.advertise, this.boundPort);
      info["host"] = hp.host;
      info["port"] = hp.port;
      info["ip"] = `nats-route://${joinHostPort(hp.host, hp.port)}/`;
    }
    if (!o.noAdvertise) {
      info["connect_urls"] = this.ownClientUrls();
      const ws = this.ownWsUrls();
      if (ws.length > 0) info["ws_connect_urls"] = ws;
    }
    if (h.opts.jetstream.enabled) info["jetstream"] = true;
    const p = o.permissions;
    if (p !== null) {
      if (p.publish !== null) info["import"] = subjectPermissionJson(p.publish);
      if (p.subscribe !== null) info["export"] = subjectPermissionJson(p.subscribe);
    }
    info["lnoc"] = true;
    info["tsnats_peer"] = PEER_PROTOCOL;
    return JSON.stringify(info);
  }

  processConnect(r: Route, json: string): void {
    let c: Record<string, unknown>;
    try {
      const v: unknown = JSON.parse(json);
      if (v === null || typeof v !== "object" || Array.isArray(v)) throw new Error("not an object");
      c = v as Record<string, unknown>;
    } catch {
      return this.closeRoute(r, "Protocol Violation", "bad CONNECT JSON");
    }
    // Clients send lang; routes do not (nats-server's way to tell them apart).
    if (typeof c["lang"] === "string" && c["lang"] !== "") {
      r.queueString("-ERR 'attempted to connect to route port'\r\n");
      r.noReconnect = true;
      return this.closeRoute(r, "Wrong Port", "a client connected to the route port");
    }
    if (typeof c["gateway"] === "string" && c["gateway"] !== "") {
      r.queueString(`-ERR 'Rejecting connection from gateway "${c["gateway"]}" on the Route port'\r\n`);
      return this.closeRoute(r, "Wrong Gateway", "a gateway connected to the route port");
    }
    const o = this.opts;
    if (o.user !== "" && (c["user"] !== o.user || c["pass"] !== o.password)) {
      r.queueString("-ERR 'Authorization Violation'\r\n");
      return this.closeRoute(r, "Authentication Failure", `authentication error - user ${JSON.stringify(typeof c["user"] === "string" ? c["user"] : "")}`);
    }
    const theirs = typeof c["cluster"] === "string" ? c["cluster"] : "";
    if (theirs !== this.name && !this.adoptName(theirs, c["dynamic"] === true, r)) {
      const txt = `Rejecting connection, cluster name "${theirs}" does not match "${this.name}"`;
      r.queueString(`-ERR '${txt}'\r\n`);
      return this.closeRoute(r, "Cluster Name Conflict", txt);
    }
    r.remoteId = typeof c["name"] === "string" ? c["name"] : "";
    r.headers = c["headers"] === true;
    r.connectDone = true;
  }

  /** A dynamic cluster name gives way to a configured one, or to a greater dynamic one
   *  (nats-server); then every other route goes. True when the names now agree. */
  private adoptName(theirs: string, theirsDynamic: boolean, keep: Route): boolean {
    if (theirs === "" || !this.dynamic || (theirsDynamic && this.name >= theirs)) return false;
    this.name = theirs;
    if (!theirsDynamic) this.dynamic = false;
    for (const r of [...this.all]) if (r !== keep) this.closeRoute(r, "Cluster Name Conflict", "");
    return true;
  }

  processInfo(r: Route, info: RouteInfo): void {
    const id = info.server_id;
    if (id === this.host.serverId) {
      r.noReconnect = true;
      if (r.didSolicit) {
        try {
          this.selfUrls.add(urlKey(new URL(r.url)));
        } catch {
          /* checked when dialled */
        }
      }
      this.log.debug(`${r.label()} - Detected route to self, ignoring ${redactUrl(r.url)}`);
      return this.closeRoute(r, "Duplicate Route", "");
    }
    if (info.cluster !== undefined && info.cluster !== "" && info.cluster !== this.name && !this.adoptName(info.cluster, info.cluster_dynamic === true, r)) {
      return this.closeRoute(r, "Cluster Name Conflict", `cluster name "${info.cluster}" does not match "${this.name}"`);
    }
    if (r.infoReceived) {
      // Gossip: the peer tells us about another server, which we then connect to.
      if (r.remoteId !== "" && r.remoteId !== id) this.implicitRoute(info);
      else if (info.ldm === true && r.remoteInfo !== null && !r.lameDuck) {
        // The peer is in lame duck mode: our clients stop hearing of its URLs.
        r.lameDuck = true;
        if (announcesUrls(r.remoteInfo) && !this.opts.noAdvertise) this.host.clientUrlsChanged();
      }
      return;
    }
    if (info.server_name !== undefined && info.server_name !== "" && info.server_name === this.host.serverName) {
      // Names must be unique in a cluster (JetStream needs it): no route, and no retries.
      r.noReconnect = true;
      this.log.error(`${r.label()} - Remote server has a duplicate name: "${info.server_name}"`);
      return this.closeRoute(r, "Duplicate Server Name", "");
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
    const existing = this.routes.get(id);
    if (existing !== undefined) {
      // Both sides dialled each other: the first registered stays (nats-server addRoute). If
      // the duplicate was ours, the kept route takes over its URL, so that it is re-dialled
      // should it drop (the peer may keep the other connection and close this one).
      if (r.didSolicit) {
        if (existing.url === "" || !existing.didSolicit) existing.url = r.url;
        existing.explicit = existing.explicit || r.explicit;
      }
      existing.retry = true;
      r.noReconnect = true;
      this.log.debug(`${r.label()} - Detected duplicate remote route "${id}"`);
      return this.closeRoute(r, "Duplicate Route", "");
    }
    this.routes.set(id, r);
    r.registered = true;
    if (info.tsnats_peer === PEER_PROTOCOL && r.remoteName !== "") this.peerListener?.peerUp(r.remoteName);
    this.log.debug(`${r.label()} - Registering remote route "${id}"`);
    this.interest.sendAllTo(r);
    if (this.routes.size > 1) {
      // Tell the others about the new server: each then connects to it.
      const fwd = { ...info };
      delete fwd["nonce"];
      const line = `INFO ${JSON.stringify(fwd)}\r\n`;
      for (const o of this.routes.values()) if (o !== r) o.queueString(line);
    }
    if (announcesUrls(info) && !this.opts.noAdvertise) this.host.clientUrlsChanged();
    this.flushRoutes();
  }

  private implicitRoute(info: RouteInfo): void {
    const id = info.server_id;
    if (id === this.host.serverId || this.routes.has(id)) return;
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
    for (const c of this.opts.routes) {
      try {
        const cu = new URL(c);
        if (cu.host.toLowerCase() === hp || urlKey(cu) === urlKey(u)) return;
      } catch {
        /* validated at startup */
      }
    }
    if (info.auth_required === true && this.opts.user !== "") {
      u.username = encodeURIComponent(this.opts.user);
      u.password = encodeURIComponent(this.opts.password);
    }
    this.dial(u.toString(), false, 0);
  }

  // ---- interest (interest.ts) ----

  /** A client subscription came (+1) or went (-1): RS+/RS- to every route. */
  localInterest(sub: Subscription, delta: 1 | -1): void {
    this.interest.localInterest(sub, delta);
  }

  remoteSub(r: Route, acc: string, subject: string, queue: string, weight: number): void {
    this.interest.remoteSub(r, acc, subject, queue, weight);
  }

  remoteUnsub(r: Route, acc: string, subject: string, queue: string): void {
    this.interest.remoteUnsub(r, acc, subject, queue);
  }

  hasRemoteInterest(subject: string): boolean {
    return this.routes.size > 0 && this.interest.hasRemoteInterest(subject);
  }

  get remoteGen(): number {
    return this.interest.remoteSl.gen;
  }

  /** A message published here, after its local plain subscribers (Interest.forward). */
  forward(fromCid: number, noEcho: boolean, subject: string, reply: string, hdr: Buffer | null, buf: Buffer, start: number, end: number, shown: string, ack: AckReply | null, qsubs: SublistResult<Subscription>["qsubs"]): number {
    return this.interest.forward(fromCid, noEcho, subject, reply, hdr, buf, start, end, shown, ack, qsubs);
  }

  get lastQueueBacklog(): number {
    return this.interest.lastQueueBacklog;
  }

  /** The peers' interest (routez). */
  get remoteSl(): Sublist<RemoteSub> {
    return this.interest.remoteSl;
  }

  lameDuck(): void {
    const info = JSON.parse(this.infoJson()) as Record<string, unknown>;
    info["ldm"] = true;
    const line = `INFO ${JSON.stringify(info)}\r\n`;
    for (const r of this.routes.values()) r.queueString(line);
    this.flushRoutes();
  }

  /** A message from a route: local subscribers only, never another route. */
  inbound(r: Route, acc: string, subject: string, reply: string, queues: string[] | null, hdr: Buffer | null, buf: Buffer, start: number, end: number, size: number): void {
    if (acc !== GLOBAL_ACCOUNT) {
      if (acc === SYSTEM_ACCOUNT && subject.startsWith(PEER_SUBJECT_PREFIX) && hdr === null) {
        // Our own peer protocol: only from a tsnats peer that announced it.
        if (r.remoteInfo?.tsnats_peer === PEER_PROTOCOL && this.peerListener !== null) this.peerListener.frame(r.remoteName, subject, buf.subarray(start, end));
        return;
      }
      this.log.debug(`${r.label()} - Unknown account "${acc}" for routed message on subject: "${subject}"`);
      return;
    }
    const st = this.host.stats;
    st.inMsgs++;
    st.inBytes += size;
    let shown = subject;
    // A JetStream delivery across a route: "<reply>@<subject shown>" (nats-server).
    if (reply.startsWith("$JS.ACK.")) {
      const at = reply.lastIndexOf("@");
      if (at > 0 && at < reply.length - 1) {
        shown = reply.slice(at + 1);
        reply = reply.slice(0, at);
      }
    }
    // The one-hop rule is the router's: local client subscribers only, never a route.
    this.host.routeRange(r, subject, reply, hdr, buf, start, end, shown, false, null, queues);
  }

  // ---- tsnats peers (frames of our own protocol, for Raft) ----

  /** Registered peers that speak the tsnats peer protocol, by server name. */
  peerNames(): string[] {
    const out: string[] = [];
    for (const r of this.routes.values()) if (r.remoteInfo?.tsnats_peer === PEER_PROTOCOL && r.remoteName !== "") out.push(r.remoteName);
    return out;
  }

  /** Send one peer frame to the server named name; false if no route to it speaks the protocol. */
  sendPeer(name: string, subject: string, payload: Buffer): boolean {
    for (const r of this.routes.values()) {
      if (r.remoteName !== name || r.remoteInfo?.tsnats_peer !== PEER_PROTOCOL) continue;
      r.sendSystem(subject, payload);
      return true;
    }
    return false;
  }

  setPeerListener(l: PeerListener | null): void {
    this.peerListener = l;
  }

  // ---- output ----

  markDirty(r: Route): void {
    this.dirty.push(r);
    if (!this.flushScheduled) {
      this.flushScheduled = true;
      this.host.sched.nextTurn(this.flushBound);
    }
  }

  flushRoutes(): void {
    this.flushScheduled = false;
    const list = this.dirty;
    if (list.length === 0) return;
    this.dirty = [];
    for (let i = 0; i < list.length; i++) list[i]!.flush();
  }

  // ---- timer: pings, handshakes that never finish ----

  private tick(): void {
    const now = this.nowMs();
    const o = this.host.opts;
    const handshakeMs = Math.max(this.opts.authTimeoutMs, 2000);
    for (const r of [...this.all]) {
      if (!r.connectDone && now - r.startMs > this.opts.authTimeoutMs) {
        r.queueString("-ERR 'Authentication Timeout'\r\n");
        this.closeRoute(r, "Authentication Timeout", "route sent no CONNECT in time");
        continue;
      }
      if (!r.registered) {
        if (!r.infoReceived && now - r.startMs > 2 * handshakeMs) this.closeRoute(r, "Protocol Violation", "route sent no INFO in time");
        continue;
      }
      // The first PING about a second after the route is up (nats-server's first ping
      // timer), so that /routez has an RTT early; then every ping_interval.
      const first = r.rttMs === 0 && r.pingsOut === 0 && now - r.startMs >= FIRST_PING_MS;
      if (first || now - r.lastPingMs >= o.pingIntervalMs) {
        if (r.pingsOut + 1 > o.pingMax) {
          this.closeRoute(r, "Stale Connection", "stale route connection");
          continue;
        }
        r.sendPing();
      }
    }
    this.flushRoutes();
  }

  // ---- clients and monitoring ----

  /** This server's client URLs as it announces them ("host:port"): client_advertise, else
   *  the listener's address (every non-loopback address for 0.0.0.0 / ::). */
  ownClientUrls(): string[] {
    const o = this.host.opts;
    return listenerUrls(o.clientAdvertise, o.host, this.host.port);
  }

  /** This server's websocket URLs, the same way from the websocket block (none without a
   *  websocket listener). */
  ownWsUrls(): string[] {
    const w = this.host.opts.websocket;
    const port = this.host.wsPort;
    if (w === null || port === 0) return [];
    return listenerUrls(w.advertise, w.host, port);
  }

  /** What clients are told in connect_urls: every server's client URLs (for websocket
   *  clients, every server's websocket URLs, as nats-server). */
  clientUrls(websocket = false): string[] {
    if (this.opts.noAdvertise) return [];
    const out = websocket ? this.ownWsUrls() : this.ownClientUrls();
    for (const r of this.routes.values()) {
      if (r.lameDuck) continue;
      const theirs = websocket ? r.remoteInfo?.ws_connect_urls : r.remoteInfo?.connect_urls;
      for (const u of theirs ?? []) if (!out.includes(u)) out.push(u);
    }
    return out;
  }

  /** The route URLs for /varz cluster.urls: the configured routes, without credentials. */
  configuredUrls(): string[] {
    return this.opts.routes.map((u) => {
      try {
        const x = new URL(u);
        return x.host;
      } catch {
        return u;
      }
    });
  }

  varz(): Record<string, unknown> {
    const v: Record<string, unknown> = { name: this.name, addr: this.opts.host, cluster_port: this.boundPort, auth_timeout: this.opts.authTimeoutMs / 1000 };
    const urls = this.configuredUrls();
    if (urls.length > 0) v["urls"] = urls;
    // nats-server shows the TLS timeout (2 s by default) with or without TLS.
    v["tls_timeout"] = (this.opts.tls?.timeoutMs ?? 2000) / 1000;
    if (this.tlsSetup !== null) {
      v["tls_required"] = true;
      v["tls_verify"] = true;
    }
    return v;
  }

  /** The routes for /routez, raw (src/monitor/misc.ts formats times as nats-server). */
  routez(opts: RoutezOptions): Record<string, unknown> {
    const routes: Record<string, unknown>[] = [];
    for (const r of this.routes.values()) {
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
      if (opts.subs) e["subscriptions_list"] = [...r.remoteSubs.values()].map((x) => x.subject);
      routes.push(e);
    }
    routes.sort((a, b) => (a["rid"] as number) - (b["rid"] as number));
    return { num_routes: routes.length, routes };
  }
}


function backoff(attempt: number, random: Random): number {
  const base = Math.min(RECONNECT_MAX_MS, RECONNECT_MIN_MS * 2 ** Math.min(attempt, 8));
  return base + random.int(100);
}
