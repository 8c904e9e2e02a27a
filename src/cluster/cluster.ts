// Cluster routes (nats-server route.go): the route listener, the routes this server dials
// (configured, and implicit ones learned from gossiped INFO), and the two message paths:
// - forward(): a message published here (by a client or an internal publisher) goes to every
//   route with matching plain interest once, and each queue group picks one member among
//   the local members and the routes' weights (nats-server's weighted pick);
// - inbound(): a message that came over a route is delivered to local routable subscribers
//   only (the one-hop rule: a client's, or an internal one subscribed with cluster: true),
//   and to one local member of each queue group the RMSG names.
// Which connection is which peer's route (pool slots, pinned accounts, duplicates, gossip)
// is the Registry's (registry.ts); the handshake's messages are handshake.ts's; what /varz
// and /routez show, cluster-info.ts's.
//
// The Server (src/server/server.ts) loads this module lazily and talks to it through
// ClusterLike; this module sees the Server through ClusterHost.

import net from "node:net";
import tls from "node:tls";
import { randomBytes } from "node:crypto";
import { Sublist } from "../subjects/sublist.js";
import { Interest } from "./interest.js";
import { announcesUrls, redactUrl, urlKey } from "./urls.js";
import { Route, RemoteSub, GLOBAL_ACCOUNT, SYSTEM_ACCOUNT, PEER_SUBJECT_PREFIX, type RouteInfo } from "./route.js";
import { Registry } from "./registry.js";
import type { Peer } from "./pool.js";
import { PEER_PROTOCOL, connectJson, infoJson, processConnect } from "./handshake.js";
import { clientUrls, ownClientUrls, ownWsUrls, routez, varz } from "./cluster-info.js";
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
  /** The server's one routing path; a routed message (from a route) reaches local routable
   *  subscriptions only (clients', internal cluster: true ones), and one local member of
   *  each queue group in queues. */
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
/** A route's reads in one turn of the loop: past ROUTE_SLICE_READS reads and ROUTE_SLICE_MS
 *  of that turn, the socket pauses until the next turn. Node reads a busy socket up to 32
 *  times (2 MiB) in a row, and a peer flooding RMSGs had every one of them routed in that
 *  one go; a client's reads yield the same way (Client.onData). */
const ROUTE_SLICE_READS = 4;
const ROUTE_SLICE_MS = 2;
/** The pool size when `cluster { accounts }` pins accounts and pool_size is not set
 *  (nats-server's default); without either, tsnats speaks the 2.9 protocol. */
export const DEFAULT_POOL_SIZE = 3;
export { PEER_PROTOCOL };

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
  /** Each peer's route for the global account, by remote server id (Registry.carriers). */
  readonly routes = new Map<string, Route>();
  /** Every route connection, pending ones included. */
  readonly all = new Set<Route>();
  /** Our clients' interest and the peers' (interest.ts). */
  private readonly interest: Interest;
  /** The peers and their route connections (registry.ts). */
  readonly registry: Registry;
  /** Our pool size; -1: the 2.9 protocol (no pool). */
  readonly poolSize: number;
  private listener: net.Server | null = null;
  private boundPort = 0;
  private tlsSetup: TlsSetup | null = null;
  private dirty: Route[] = [];
  private flushScheduled = false;
  private readonly flushBound = (): void => this.flushRoutes();
  /** URLs (host:port, lower case) that turned out to be this server. */
  private readonly selfUrls = new Set<string>();
  /** URLs being dialled or waiting to be re-dialled ("<host:port> <account>"). */
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
    readonly opts: ClusterOptions,
  ) {
    this.log = host.log;
    this.perms = opts.permissions !== null ? new ClientPermissions(opts.permissions) : null;
    this.poolSize = opts.poolSize > 0 ? opts.poolSize : opts.poolSize === 0 && opts.accounts.length > 0 ? DEFAULT_POOL_SIZE : -1;
    this.interest = new Interest(this.routes, this.perms, host.log, host.random);
    this.registry = new Registry(this, this.interest, this.routes);
    this.dynamic = opts.name === "";
    this.name = opts.name !== "" ? opts.name : randomBytes(11).toString("base64url").toUpperCase().replace(/[^A-Z0-9]/g, "X");
  }

  /** At least one peer is connected. */
  get active(): boolean {
    return this.registry.peers.size > 0;
  }

  get peers(): ReadonlyMap<string, Peer> {
    return this.registry.peers;
  }

  get serverId(): string {
    return this.host.serverId;
  }

  get serverName(): string {
    return this.host.serverName;
  }

  get serverOpts(): ServerOptions {
    return this.host.opts;
  }

  get tls(): boolean {
    return this.tlsSetup !== null;
  }

  get clientPort(): number {
    return this.host.port;
  }

  get wsPort(): number {
    return this.host.wsPort;
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
    for (const u of o.routes) this.dial(u, true, 0, "");
    // Each configured route again for every pinned account (its dedicated route).
    for (const a of this.registry.pinnedAccounts) for (const u of o.routes) this.dial(u, true, 0, a);
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
      this.attach(raw, false, "", false, "");
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
      this.attach(ts, false, "", false, "");
    });
  }

  /** Connect to url (for account's pinned route, or "" a pooled / no-pool one): explicit
   *  routes are retried for ever, implicit ones connect_retries times. */
  dial(url: string, explicit: boolean, attempt: number, account: string): void {
    if (this.stopped) return;
    let u: URL;
    try {
      u = new URL(url);
    } catch {
      this.log.error(`Error parsing route URL ${JSON.stringify(redactUrl(url))}`);
      return;
    }
    const self = urlKey(u);
    if (this.selfUrls.has(self)) return;
    const key = `${self} ${account}`;
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
      this.later(backoff(attempt, this.host.random), () => this.dial(url, explicit, attempt + 1, account));
    };
    const onUp = (s: net.Socket): void => {
      if (settled) return;
      settled = true;
      this.dialing.delete(key);
      if (this.stopped) {
        s.destroy();
        return;
      }
      this.attach(s, true, url, explicit, account);
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

  private attach(s: net.Socket, didSolicit: boolean, url: string, explicit: boolean, account: string): void {
    s.setTimeout(0);
    s.setNoDelay(true);
    s.removeAllListeners("error");
    const r = new Route(this.host.allocCid(), s, this, didSolicit, url, explicit);
    this.all.add(r);
    this.log.info(`${r.label()} - Route connection created`);
    // This turn's reads of this route (sliceArmed: counting; cleared on the next turn).
    let sliceArmed = false;
    let sliceReads = 0;
    let sliceStartMs = 0;
    const disarm = (): void => {
      sliceArmed = false;
    };
    const resume = (): void => {
      // Not while a fan-out of one of its messages holds its reads (Route.releaseReads).
      if (!r.closed && !s.destroyed && !r.readsHeld) s.resume();
    };
    s.on("data", (chunk: Buffer) => {
      if (!sliceArmed) {
        sliceArmed = true;
        sliceReads = 0;
        sliceStartMs = this.host.clock.monoMs();
        this.host.sched.nextTurn(disarm);
      }
      r.onData(chunk);
      this.host.flushDirty();
      this.flushRoutes();
      if (++sliceReads >= ROUTE_SLICE_READS && this.host.clock.monoMs() - sliceStartMs >= ROUTE_SLICE_MS && !r.closed) {
        s.pause();
        this.host.sched.nextTurn(resume);
      }
    });
    s.on("error", (err) => {
      this.log.debug(`${r.label()} - Route connection error: ${err.message}`);
      this.closeRoute(r, "Read Error", "");
    });
    s.on("close", () => this.closeRoute(r, "Client Closed", ""));
    if (account !== "") r.pin(account);
    if (didSolicit) r.queueString(`CONNECT ${this.connectJson(url)}\r\n`);
    // A pooled route we dialled sends its INFO once the peer's has told which slot it takes.
    if (didSolicit && account === "" && this.poolSize > 0) r.infoDelayed = true;
    else r.queueString(this.infoLine(0, account));
    this.flushRoutes();
  }

  /** Close a route (idempotent): its interest goes, and a route we dialled is dialled again
   *  unless the peer is connected some other way (Registry.redials). */
  closeRoute(r: Route, reason: string, detail: string): void {
    if (r.closed) return;
    if (detail !== "") this.log.error(`${r.label()} - Route closed: ${detail}`);
    r.closeReason = reason;
    r.shut();
    this.all.delete(r);
    this.interest.dropRoute(r);
    const wasRegistered = r.registered;
    const gone = this.registry.unregister(r);
    if (wasRegistered) this.log.info(`${r.label()} - Router connection closed: ${reason}`);
    else this.log.debug(`${r.label()} - Router connection closed: ${reason}`);
    if (this.stopped) return;
    const accounts = this.registry.redials(r, gone);
    if (accounts.length === 0) return;
    const explicit = r.explicit;
    // nats-server waits DEFAULT_ROUTE_RECONNECT (1 s) before re-dialling a configured route,
    // and only the jitter for an implicit one.
    this.later(backoff(0, this.host.random) - RECONNECT_MIN_MS + (explicit ? ROUTE_RECONNECT_MS : 0), () => {
      for (const a of this.registry.redials(r, gone)) this.dial(r.url, explicit, 0, a);
    });
  }

  // ---- handshake (handshake.ts) and registration (registry.ts) ----

  connectJson(url: string): string {
    return connectJson(this, url);
  }

  infoJson(poolIdx = 0, account = ""): string {
    return infoJson(this, poolIdx, account);
  }

  infoLine(poolIdx: number, account: string): string {
    return `INFO ${infoJson(this, poolIdx, account)}\r\n`;
  }

  processConnect(r: Route, json: string): void {
    processConnect(this, r, json);
  }

  processInfo(r: Route, info: RouteInfo): void {
    this.registry.processInfo(r, info);
  }

  routePong(r: Route): void {
    this.registry.routePong(r);
  }

  /** A dynamic cluster name gives way to a configured one, or to a greater dynamic one
   *  (nats-server); then every other route goes. True when the names now agree. */
  adoptName(theirs: string, theirsDynamic: boolean, keep: Route): boolean {
    if (theirs === "" || !this.dynamic || (theirsDynamic && this.name >= theirs)) return false;
    this.name = theirs;
    if (!theirsDynamic) this.dynamic = false;
    for (const r of [...this.all]) if (r !== keep) this.closeRoute(r, "Cluster Name Conflict", "");
    return true;
  }

  markSelf(r: Route): void {
    if (!r.didSolicit) return;
    try {
      this.selfUrls.add(urlKey(new URL(r.url)));
    } catch {
      /* checked when dialled */
    }
  }

  peerUp(p: Peer): void {
    if (p.info.tsnats_peer === PEER_PROTOCOL && p.name !== "") this.peerListener?.peerUp(p.name);
    if (announcesUrls(p.info) && !this.opts.noAdvertise) this.host.clientUrlsChanged();
  }

  peerDown(p: Peer): void {
    if (p.info.tsnats_peer === PEER_PROTOCOL && p.name !== "") this.peerListener?.peerDown(p.name);
    if (announcesUrls(p.info) && !this.opts.noAdvertise) this.host.clientUrlsChanged();
  }

  clientUrlsChanged(): void {
    this.host.clientUrlsChanged();
  }

  // ---- interest (interest.ts) ----

  /** A routable subscription (a client's, or an internal cluster: true one) came (+1) or
   *  went (-1): RS+/RS- to every peer. */
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
    return this.interest.hasRemoteInterest(subject);
  }

  hasRemoteQueueInterest(subject: string, queue: string): boolean {
    return this.interest.hasRemoteQueueInterest(subject, queue);
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
    for (const p of this.registry.peers.values()) (p.anyPooled() ?? p.all()[0])?.queueString(line);
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
    // The one-hop rule is the router's: local routable subscribers only, never a route.
    this.host.routeRange(r, subject, reply, hdr, buf, start, end, shown, false, null, queues);
  }

  // ---- tsnats peers (frames of our own protocol, for Raft) ----

  /** Connected peers that speak the tsnats peer protocol, by server name. */
  peerNames(): string[] {
    const out: string[] = [];
    for (const p of this.registry.peers.values()) if (p.info.tsnats_peer === PEER_PROTOCOL && p.name !== "") out.push(p.name);
    return out;
  }

  /** Route peers connected now that run without JetStream (their INFO has no `jetstream`):
   *  a connection-only server in a JetStream cluster, which the meta group does not wait for. */
  nonJetStreamPeers(): string[] {
    const out: string[] = [];
    for (const p of this.registry.peers.values()) if (p.info.jetstream !== true) out.push(p.name !== "" ? p.name : p.info.server_id);
    return out;
  }

  /** Send one peer frame to the server named name (on its route for the system account);
   *  false if no route to it speaks the protocol. */
  sendPeer(name: string, subject: string, payload: Buffer): boolean {
    for (const p of this.registry.peers.values()) {
      if (p.name !== name || p.info.tsnats_peer !== PEER_PROTOCOL) continue;
      const r = this.registry.systemRoute(p);
      if (r === null) return false;
      r.sendSystem(subject, payload);
      return true;
    }
    return false;
  }

  /** Bytes waiting to leave on the route to peer `name` (its outbound buffer plus what its
   *  socket still holds); 0 with no route. */
  peerBacklog(name: string): number {
    for (const p of this.registry.peers.values()) {
      if (p.name !== name || p.info.tsnats_peer !== PEER_PROTOCOL) continue;
      return this.registry.systemRoute(p)?.pendingBytes() ?? 0;
    }
    return 0;
  }

  /** sendPeer of a batch of length-prefixed frames, written straight into the route's
   *  outbound buffer (RoutePeerTransport). */
  sendPeerFrames(name: string, subject: string, frames: readonly Uint8Array[], from: number, to: number, size: number): boolean {
    for (const p of this.registry.peers.values()) {
      if (p.name !== name || p.info.tsnats_peer !== PEER_PROTOCOL) continue;
      const r = this.registry.systemRoute(p);
      if (r === null) return false;
      r.sendSystemFrames(subject, frames, from, to, size);
      return true;
    }
    return false;
  }

  setPeerListener(l: PeerListener | null): void {
    this.peerListener = l;
  }

  // ---- output ----

  nextTurn(fn: () => void): void {
    this.host.sched.nextTurn(fn);
  }

  flushAfterRead(): void {
    this.host.flushDirty();
    this.flushRoutes();
  }

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

  // ---- clients and monitoring (cluster-info.ts) ----

  ownClientUrls(): string[] {
    return ownClientUrls(this);
  }

  ownWsUrls(): string[] {
    return ownWsUrls(this);
  }

  clientUrls(websocket = false): string[] {
    return clientUrls(this, websocket);
  }

  varz(): Record<string, unknown> {
    return varz(this);
  }

  routez(opts: RoutezOptions): Record<string, unknown> {
    return routez(this, opts);
  }
}

function backoff(attempt: number, random: Random): number {
  const base = Math.min(RECONNECT_MAX_MS, RECONNECT_MIN_MS * 2 ** Math.min(attempt, 8));
  return base + random.int(100);
}
