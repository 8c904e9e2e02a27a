// The server: accepts connections, owns the subscription index and routes messages.
// One coarse timer drives pings, auth timeouts and write deadlines for every client.

import net from "node:net";
import { buildTls, type TlsSetup } from "./tls.js";
import { LISTEN_BACKLOG } from "../runtime/net.js";
import { writeFileSync, unlinkSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { Client, CloseReason, type ClientHost } from "./client.js";
import { newServerId } from "./serverid.js";
import { authRequired, permissionsOf, userStillExists } from "./auth.js";
import type { Logger } from "../runtime/log.js";
import type { AuthorizationOptions, ClusterOptions, ServerOptions } from "./options.js";
import type { JetStreamDeps } from "../contracts/jetstream.js";
import { WsListener, type WsConn } from "./websocket.js";
import { validateWebSocketOptions } from "./ws-upgrade.js";
import { SERVER_VERSION, PROTO_VERSION, JS_API_LEVEL, TSNATS_VERSION } from "../version.js";
import { SystemClock, type Clock, type TimerHandle } from "../runtime/clock.js";
import { systemScheduler, type Scheduler } from "../runtime/sched.js";
import { systemRandom, type Random } from "../runtime/random.js";
import type { Fs } from "../runtime/fs.js";
import { Router, type ClusterLike } from "./routing.js";
import { Acceptor } from "./accept.js";

export type { ClusterLike, RoutezOptions, ServerStats, Sender } from "./routing.js";


/** What the server needs from its JetStream service (src/jetstream/service.ts). */
export interface JetStreamLike {
  start(): Promise<void>;
  stop(): Promise<void>;
  jsz(opts?: Record<string, unknown>): object;
  accountInfo(): object;
  /** /healthz's JetStream check: "" when healthy, else nats-server's error text. */
  healthError?(): string;
  /** Clustered: hand the leadership of every Raft group this server leads to a caught-up
   *  peer and stop campaigning (lame duck, clean shutdown); resolves within boundMs. */
  transferLeaders?(boundMs: number): Promise<void>;
}


/** The optional parts a server is built with (src/compose.ts wires them): each is made
 *  only when its options ask for it. */
export interface ServerParts {
  jetstream?: (deps: JetStreamDeps) => Promise<JetStreamLike>;
  cluster?: (server: Server, opts: ClusterOptions) => Promise<ClusterLike>;
  monitor?: (server: Server) => Promise<MonitorLike>;
}

/** What a server is built with: its seams (real ones by default) and its optional parts. */
export interface ServerEnv {
  clock?: Clock;
  sched?: Scheduler;
  random?: Random;
  /** The disk JetStream stores to (compose.ts gives the real one). */
  fs?: Fs;
  parts?: ServerParts;
}

/** What the server needs from the monitoring HTTP listener (src/monitor/http.ts). */
export interface MonitorLike {
  readonly port: number;
  close(): Promise<void>;
  /** https monitoring: take new certificates (reload). */
  setTls?(t: TlsSetup): void;
}

export interface ClosedClientInfo {
  cid: number;
  host: string;
  port: number;
  startMs: number;
  stopMs: number;
  reason: string;
  name: string;
  lang: string;
  version: string;
  user: string;
  inMsgs: number;
  outMsgs: number;
  inBytes: number;
  outBytes: number;
  rttMs: number;
  tlsVersion: string;
  tlsCipher: string;
}

const MAX_CLOSED_CLIENTS = 10_000;
/** The tick (every 500 ms with the default auth timeout) looks at every client: at most this
 *  many per turn of the loop, and at most TICK_SLICE_MS of them (the clock read every 64),
 *  the rest on the next turns. In one piece it held the loop ~0.75 ms per 10,000 idle clients
 *  on a warm server (2,048 take ~0.15 ms), several times that on a fresh one. */
const TICK_PER_TURN = 2048;
const TICK_SLICE_MS = 1;
/** How long lame duck and shutdown wait for clustered JetStream leaders to hand over. */
const LEADER_HANDOFF_MS = 2000;

export class Server extends Router implements ClientHost {
  readonly clients = new Map<number, Client>();
  readonly closedClients: ClosedClientInfo[] = [];
  readonly serverId: string;
  readonly startMs: number;
  opts: ServerOptions;
  log: Logger;
  traceEnabled: boolean;
  jetstream: JetStreamLike | null = null;
  monitor: MonitorLike | null = null;
  lameDuck = false;
  configLoadMs: number;
  /** TLS for the client port (and https monitoring); null = plaintext. Rebuilt on reload. */
  tls: TlsSetup | null = null;

  private listener: net.Server | null = null;
  private wsListener: WsListener | null = null;
  private nextCid = 1;
  private readonly acceptor: Acceptor = new Acceptor(this);
  private tickTimer: TimerHandle | null = null;
  private tickMs = 1000;
  /** The tick's walk over the clients while it is under way (tick: a slice per turn). */
  private tickWalk: IterableIterator<Client> | null = null;
  private readonly tickStepBound = (): void => this.tickStep();
  private boundPort = 0;
  private shuttingDown = false;
  private readonly portsFiles: string[] = [];

  private readonly parts: ServerParts;
  /** The file system JetStream and the cluster's Raft log use (null: not wired). */
  readonly fs: Fs | null;

  constructor(opts: ServerOptions, log: Logger, env: ServerEnv = {}) {
    super(env.clock ?? new SystemClock(), env.sched ?? systemScheduler, env.random ?? systemRandom);
    const clock = this.clock;
    this.parts = env.parts ?? {};
    this.fs = env.fs ?? null;
    this.opts = opts;
    this.log = log;
    this.traceEnabled = opts.trace && log.traceEnabled;
    this.serverId = newServerId();
    this.startMs = clock.nowMs();
    this.configLoadMs = this.startMs;
  }

  get port(): number {
    return this.boundPort;
  }

  /** Client sockets not yet released, closed clients' lingering ones included (what
   *  max_connections counts). */
  get socketCount(): number {
    return this.acceptor.socketCount;
  }

  get serverName(): string {
    return this.opts.serverName || this.serverId;
  }

  nowMs(): number {
    return this.clock.nowMs();
  }

  authRequired(): boolean {
    return authRequired(this.opts.authorization);
  }

  // ---- lifecycle ----

  async start(): Promise<void> {
    const o = this.opts;
    this.log.info(`Starting tsnats-server`);
    this.log.info(`  Version:  ${TSNATS_VERSION} (nats-server protocol ${SERVER_VERSION})`);
    this.log.info(`  Node:     ${process.version}`);
    this.log.info(`  Name:     ${this.serverName}`);
    this.log.info(`  ID:       ${this.serverId}`);
    if (o.configFile) this.log.info(`Using configuration file: ${o.configFile}`);
    if (o.pidFile) writeFileSync(o.pidFile, String(process.pid));
    // Certificates are loaded before anything listens: TLS that does not work is a startup
    // error, never a plaintext server.
    if (o.tls !== null) this.tls = buildTls(o.tls);
    if (o.httpPort !== 0 && o.httpsPort !== 0) throw new Error(`can't specify both HTTP (${o.httpPort}) and HTTPs (${o.httpsPort}) ports`);
    if (o.httpsPort !== 0 && this.tls === null) throw new Error("TLS cert and key required for HTTPS");

    // The monitor first, as nats-server: /healthz answers (not ok) while JetStream recovers
    // its streams, which is chunked across turns of the loop.
    if (o.httpPort !== 0 || o.httpsPort !== 0) await this.startMonitor();

    if (o.jetstream.enabled) await this.startJetStream();

    if (o.websocket !== null && o.websocket.port !== 0) await this.startWebSocket();

    // Paused, so that accept() can move the handle into a socket with a shared read buffer.
    // Half-open allowed: Node does not end and destroy a socket at its peer's EOF within the
    // read; the acceptor lets such sockets go a slice per turn (Acceptor.peerEnded).
    const listener = net.createServer({ noDelay: true, pauseOnConnect: true, allowHalfOpen: true }, (s) => this.acceptor.accept(s));
    this.listener = listener;
    const port = o.port < 0 ? 0 : o.port;
    await listenAny(listener, o.host, port);
    listener.on("error", (err) => this.log.error(`Client listener error: ${err.message}`));
    const addr = listener.address();
    this.boundPort = typeof addr === "object" && addr ? addr.port : port;
    this.log.info(`Listening for client connections on ${o.host}:${this.boundPort}`);
    if (this.tls !== null) {
      this.log.info("TLS required for client connections");
      if (o.allowNonTls) this.log.warn("Clients that are not using TLS are allowed to connect (allow_non_tls)");
    }
    if (o.cluster !== null) await this.startCluster();
    this.writePortsFile();
    this.log.info("Server is ready");
    const wsAuthMs = o.websocket?.authorization?.timeoutMs || o.authorization.timeoutMs;
    const tickMs = Math.max(20, Math.min(1000, Math.floor(o.pingIntervalMs / 4), Math.floor(o.authorization.timeoutMs / 4), Math.floor(wsAuthMs / 4)));
    this.armTick(tickMs);
  }

  private async startJetStream(): Promise<void> {
    const make = this.parts.jetstream;
    if (make === undefined || this.fs === null) throw new Error("JetStream is enabled but not wired into this server (build it with src/compose.ts)");
    const js = await make({
      bus: this,
      clock: this.clock,
      sched: this.sched,
      fs: this.fs,
      log: this.log,
      opts: this.opts.jetstream,
      serverId: this.serverId,
      serverName: this.serverName,
      maxPayloadBytes: this.opts.maxPayloadBytes,
    });
    this.log.info("Starting JetStream");
    await js.start();
    this.jetstream = js;
  }

  // ---- cluster routes (src/cluster/) ----

  private async startCluster(): Promise<void> {
    const c = this.opts.cluster!;
    if (c.port === 0) {
      // nats-server: solicited routes require cluster capabilities.
      if (c.routes.length > 0) throw new Error("solicited routes require cluster capabilities, e.g. --cluster (cluster { listen })");
      return;
    }
    const make = this.parts.cluster;
    if (make === undefined) throw new Error("a cluster block is configured but routes are not wired into this server (build it with src/compose.ts)");
    const cl = await make(this, c);
    // Clients may have come in since the client port opened: their interest counts too, and
    // so does every subscription made while the route listener starts.
    this.cluster = cl;
    for (const client of this.clients.values()) for (const sub of client.subs.values()) cl.localInterest(sub, 1);
    for (const sub of this.routableInternal) cl.localInterest(sub, 1);
    try {
      await cl.start();
    } catch (err) {
      this.cluster = null;
      throw err;
    }
  }

  /** nats-server readyForConnections: the listeners configured and not (yet) up, by its
   *  names ("server", "route", "websocket"); empty once every one listens. */
  notListening(): string[] {
    const o = this.opts;
    const out: string[] = [];
    if (this.listener === null) out.push("server");
    if (o.cluster !== null && o.cluster.port !== 0 && this.cluster === null) out.push("route");
    if (o.websocket !== null && o.websocket.port !== 0 && this.wsPort === 0) out.push("websocket");
    return out;
  }

  /** A connection id (clients and routes share the counter, as in nats-server). */
  allocCid(): number {
    return this.nextCid++;
  }

  /** A server joined or left the cluster: clients that take async INFO (protocol 1) get
   *  the new connect_urls. */
  clientUrlsChanged(): void {
    if (this.shuttingDown) return;
    for (const c of this.clients.values()) if (c.connected && c.protocol >= 1 && !c.closed) c.queueString(`INFO ${this.infoJson(c, this.lameDuck)}\r\n`);
    this.flushDirty();
  }

  private async startMonitor(): Promise<void> {
    const make = this.parts.monitor;
    if (make === undefined) throw new Error("monitoring is configured but not wired into this server (build it with src/compose.ts)");
    try {
      this.monitor = await make(this);
      this.log.info(`Starting ${this.opts.httpsPort !== 0 ? "https" : "http"} monitor on ${this.opts.httpHost}:${this.monitor.port}`);
    } catch (err) {
      this.log.error(`Could not start monitoring: ${(err as Error).message}`);
      throw err;
    }
  }

  private writePortsFile(): void {
    const dir = this.opts.portsFileDir;
    if (!dir) return;
    const host = this.opts.host === "0.0.0.0" || this.opts.host === "::" ? "127.0.0.1" : this.opts.host;
    const ports: Record<string, string[]> = { nats: [`${this.tls !== null && !this.opts.allowNonTls ? "tls" : "nats"}://${host}:${this.boundPort}`] };
    if (this.monitor) ports["monitoring"] = [`${this.opts.httpsPort !== 0 ? "https" : "http"}://${host}:${this.monitor.port}`];
    const cl = this.opts.cluster;
    if (this.cluster !== null && cl !== null) {
      const ch = cl.host === "0.0.0.0" || cl.host === "::" ? "127.0.0.1" : cl.host;
      ports["cluster"] = [`nats://${ch}:${this.cluster.port}`];
    }
    const w = this.opts.websocket;
    if (w !== null && this.wsPort !== 0) {
      const wh = w.host === "0.0.0.0" || w.host === "::" ? "127.0.0.1" : w.host;
      ports["websocket"] = [`${this.wsListener?.tls ? "wss" : "ws"}://${wh}:${this.wsPort}`];
    }
    const body = JSON.stringify(ports);
    mkdirSync(dir, { recursive: true });
    // nats-server names the file after its executable; launchers look for "nats-server_<pid>".
    for (const name of ["tsnats-server", "nats-server"]) {
      const file = join(dir, `${name}_${process.pid}.ports`);
      writeFileSync(file, body);
      this.portsFiles.push(file);
    }
  }

  async shutdown(): Promise<void> {
    if (this.shuttingDown) return;
    this.shuttingDown = true;
    // Clustered JetStream: leadership moves to caught-up peers while the routes are still up,
    // so a graceful restart costs the others no election timeout.
    if (this.jetstream?.transferLeaders !== undefined && this.cluster !== null) await this.jetstream.transferLeaders(LEADER_HANDOFF_MS);
    if (this.tickTimer !== null) this.clock.clearTimer(this.tickTimer);
    this.tickTimer = null;
    const l = this.listener;
    this.listener = null;
    const closed = l ? new Promise<void>((r) => l.close(() => r())) : Promise.resolve();
    this.stopWebSocket();
    for (const c of [...this.clients.values()]) c.close(CloseReason.ServerShutdown);
    this.flushDirty();
    if (this.cluster !== null) {
      await this.cluster.stop();
      this.cluster = null;
    }
    if (this.jetstream) {
      await this.jetstream.stop();
      this.jetstream = null;
    }
    if (this.monitor) {
      await this.monitor.close();
      this.monitor = null;
    }
    for (const c of this.clients.values()) c.socket.destroy();
    await closed;
    // The listener does not count adopted sockets: wait for their ends (each bounded by the
    // destroy timer in Client.close).
    await this.acceptor.drained();
    for (const f of this.portsFiles) {
      try {
        unlinkSync(f);
      } catch {
        /* already gone */
      }
    }
    if (this.opts.pidFile) {
      try {
        unlinkSync(this.opts.pidFile);
      } catch {
        /* already gone */
      }
    }
    this.log.info("Server Exiting..");
  }

  /** Lame duck mode (ADR-5): stop accepting, tell clients, then close them spread out. */
  async enterLameDuck(): Promise<void> {
    if (this.lameDuck) return;
    this.lameDuck = true;
    this.log.info("Entering lame duck mode, stop accepting new clients");
    const l = this.listener;
    this.listener = null;
    // close() stops accepting at once, but its callback waits for every open connection
    // to end; awaiting it here would hang until the clients left on their own.
    if (l) l.close();
    this.stopWebSocket();
    // Other servers stop telling their clients about this one (INFO ldm over the routes).
    if (this.cluster !== null) this.cluster.lameDuck();
    // Leaders hand over before JetStream stops (nats-server transferRaftLeaders).
    if (this.jetstream?.transferLeaders !== undefined && this.cluster !== null) await this.jetstream.transferLeaders(LEADER_HANDOFF_MS);
    if (this.jetstream) {
      await this.jetstream.stop();
      this.jetstream = null;
    }
    for (const c of this.clients.values()) if (c.connected || !this.authRequired()) c.queueString(`INFO ${this.infoJson(c, true)}\r\n`);
    this.flushDirty();
    const dur = this.opts.lameDuckDurationMs;
    const grace = Math.min(this.opts.lameDuckGracePeriodMs, dur);
    await this.sleep(grace);
    const list = [...this.clients.values()];
    const spread = Math.max(0, dur - grace);
    const step = list.length > 0 ? spread / list.length : 0;
    for (const c of list) {
      c.close(CloseReason.LameDuck);
      if (step >= 1) await this.sleep(step);
    }
    await this.shutdown();
  }

  /** Apply a reloaded configuration (SIGHUP). Listen address changes need a restart. */
  reload(next: ServerOptions): void {
    const prev = this.opts;
    if (next.port !== prev.port && next.port > 0 && prev.port > 0) this.log.warn("Config reload: port change requires a restart; ignored");
    // TLS: new certificates (and settings) for new connections. Turning TLS on or off needs a
    // restart, as in nats-server; a block that does not load keeps the old context.
    if ((next.tls === null) !== (prev.tls === null)) throw new Error("config reload: enabling or disabling TLS requires a restart");
    const nextTls = next.tls !== null ? buildTls(next.tls) : null;
    // wss keeps its block as started (changes need a restart) but reads its files again.
    const ws = this.wsListener;
    const nextWsTls = ws !== null && ws.tls !== null && prev.websocket?.tls ? buildTls(prev.websocket.tls) : null;
    this.tls = nextTls;
    if (ws !== null && nextWsTls !== null) ws.tls = nextWsTls;
    if (nextTls !== null && this.monitor?.setTls) this.monitor.setTls(nextTls);
    // nats-server refuses to reload websocket changes: the block stays as started.
    if (JSON.stringify(next.websocket) !== JSON.stringify(prev.websocket)) this.log.warn("Config reload: websocket changes require a restart; ignored");
    if (JSON.stringify(next.cluster) !== JSON.stringify(prev.cluster)) this.log.warn("Config reload: cluster changes require a restart; ignored");
    this.opts = { ...next, port: prev.port, host: prev.host, jetstream: prev.jetstream, httpPort: prev.httpPort, websocket: prev.websocket, cluster: prev.cluster };
    this.traceEnabled = this.opts.trace && this.log.traceEnabled;
    this.configLoadMs = this.nowMs();
    // Clients that no longer authenticate under the new rules are disconnected.
    const authReq = this.authRequired();
    for (const c of this.clients.values()) if (!c.connected) c.parser.awaitingConnect = authReq;
    if (authReq) {
      for (const c of [...this.clients.values()]) {
        if (!c.connected) continue;
        if (!this.stillAuthorized(c)) {
          c.sendErr("Authorization Violation");
          c.close(CloseReason.AuthViolation);
          continue;
        }
        // nats-server re-registers the user: new permissions, disallowed subs removed.
        c.reloadPermissions(permissionsOf(this.authFor(c), c.user));
      }
    } else {
      for (const c of this.clients.values()) if (c.perms !== null) c.reloadPermissions(null);
    }
    this.flushDirty();
    this.log.info("Reloaded server configuration");
  }

  private stillAuthorized(c: Client): boolean {
    const a = this.authFor(c);
    if (a.users.length > 0) return userStillExists(a, c.user, c.nkey !== "");
    if (a.user !== "") return c.user === a.user;
    return true;
  }

  // ---- connections (accept.ts) ----

  /** Not shutting down, not in lame duck mode: new connections are taken. */
  get accepting(): boolean {
    return !this.shuttingDown && !this.lameDuck;
  }

  /** A websocket connection past its upgrade: a Client like accept()'s, talking through conn
   *  (which frames what it writes). null when refused. */
  acceptWebSocket(conn: WsConn): Client | null {
    return this.acceptor.acceptWebSocket(conn);
  }

  // ---- websocket clients (src/server/websocket.ts) ----

  private async startWebSocket(): Promise<void> {
    const bad = validateWebSocketOptions(this.opts);
    if (bad !== null) throw new Error(bad);
    this.wsListener = await WsListener.start(this, this.opts.websocket!);
  }

  private stopWebSocket(): void {
    const w = this.wsListener;
    this.wsListener = null;
    if (w) w.close();
  }

  /** The bound websocket port; 0 when there is no websocket listener. */
  get wsPort(): number {
    return this.wsListener?.port ?? 0;
  }

  /** The TLS a client came in over: the client port's, or the websocket listener's. */
  tlsFor(c: Client): TlsSetup | null {
    return c.kind === "ws" ? (this.wsListener?.tls ?? null) : this.tls;
  }

  private wsAuthOf: ServerOptions | null = null;
  private wsAuth: AuthorizationOptions | null = null;
  private wsNoAuthUser = "";
  private wsAuthOverride = false;

  /** nats-server wsConfigAuth: a websocket block with a user, a token or a no_auth_user
   *  overrides the server's user, password, token and no_auth_user for websocket clients
   *  (the users list stays the server's); its auth timeout applies in any case. */
  private wsAuthFresh(): void {
    const o = this.opts;
    if (this.wsAuthOf === o) return;
    this.wsAuthOf = o;
    const w = o.websocket;
    const wa = w?.authorization ?? null;
    this.wsAuthOverride = w !== null && ((wa !== null && (wa.user !== "" || wa.token !== "")) || w.noAuthUser !== "");
    const timeoutMs = wa !== null && wa.timeoutMs > 0 ? wa.timeoutMs : o.authorization.timeoutMs;
    this.wsAuth = this.wsAuthOverride
      ? { ...o.authorization, user: wa?.user ?? "", password: wa?.password ?? "", token: wa?.token ?? "", timeoutMs }
      : { ...o.authorization, timeoutMs };
    this.wsNoAuthUser = this.wsAuthOverride ? w!.noAuthUser : o.noAuthUser;
  }

  /** The authorization a client is held to. */
  authFor(c: Client): AuthorizationOptions {
    if (c.kind !== "ws") return this.opts.authorization;
    this.wsAuthFresh();
    return this.wsAuth!;
  }

  noAuthUserFor(c: Client): string {
    if (c.kind !== "ws") return this.opts.noAuthUser;
    this.wsAuthFresh();
    return this.wsNoAuthUser;
  }

  authRequiredFor(c: Client): boolean {
    if (c.kind !== "ws") return this.authRequired();
    this.wsAuthFresh();
    return this.wsAuthOverride || this.authRequired();
  }

  clientClosed(c: Client): void {
    if (!this.clients.delete(c.cid)) return;
    // Guarded: a mass disconnect would build thousands of these strings for nothing.
    if (this.log.debugEnabled) this.log.debug(`${c.label()} - Client connection closed: ${c.closeReason}`);
    this.closedClients.push({
      cid: c.cid,
      host: c.host,
      port: c.port,
      startMs: c.startMs,
      stopMs: c.stopMs,
      reason: c.closeReason,
      name: c.name,
      lang: c.lang,
      version: c.version,
      user: c.user,
      inMsgs: c.inMsgs,
      outMsgs: c.outMsgs,
      inBytes: c.inBytes,
      outBytes: c.outBytes,
      rttMs: c.rttMs,
      tlsVersion: c.tlsVersion,
      tlsCipher: c.tlsCipher,
    });
    if (this.closedClients.length > MAX_CLOSED_CLIENTS) this.closedClients.shift();
  }

  /** tlsRequired: what this connection's INFO says (allow_non_tls says tls_available; a TLS
   *  first client is told tls_required). Undefined: from the options. */
  infoJson(c: Client | null, ldm = false, tlsRequired?: boolean): string {
    const o = this.opts;
    // As nats-server: with a no_auth_user, INFO does not ask for credentials (a client that
    // sends none is that user); auth is still enforced for those that do.
    const authReq = c !== null ? this.authRequiredFor(c) && this.noAuthUserFor(c) === "" : this.authRequired() && this.opts.noAuthUser === "";
    // A websocket client is told about its own listener's TLS (nats-server sets both
    // tls_required and tls_available for wss).
    let tlsMode = 0; // 0 none, 1 required, 2 available, 3 required + available (wss)
    if (c !== null && c.kind === "ws") {
      if (this.wsListener?.tls) tlsMode = 3;
    } else if (this.tls !== null) {
      const req = tlsRequired ?? (c !== null && c.tlsVersion !== "" ? true : !o.allowNonTls);
      tlsMode = req ? 1 : 2;
    }
    // Everything before the client's own fields depends on these only: built once per
    // combination (a burst of connections otherwise built the same JSON thousands of times).
    const key = `${authReq ? 1 : 0}${tlsMode}${this.boundPort}`;
    let cache = this.infoHeads;
    if (cache === null || cache.opts !== o || cache.tls !== this.tls) {
      cache = this.infoHeads = { opts: o, tls: this.tls, heads: new Map() };
    }
    let head = cache.heads.get(key);
    if (head === undefined) {
      const info: Record<string, unknown> = {
        server_id: this.serverId,
        server_name: this.serverName,
        version: SERVER_VERSION,
        proto: PROTO_VERSION,
        go: `node${process.version}`,
        host: o.host,
        port: this.boundPort,
        headers: true,
        max_payload: o.maxPayloadBytes,
      };
      if (authReq) info["auth_required"] = true;
      if (tlsMode === 1 || tlsMode === 3) info["tls_required"] = true;
      if (tlsMode === 2 || tlsMode === 3) info["tls_available"] = true;
      if (tlsMode === 1 || tlsMode === 2) {
        if (this.tls?.opts.verify === true) info["tls_verify"] = true;
      }
      if (o.jetstream.enabled) {
        info["jetstream"] = true;
        info["api_lvl"] = JS_API_LEVEL;
      }
      if (o.jetstream.domain) info["domain"] = o.jetstream.domain;
      head = JSON.stringify(info).slice(0, -1);
      cache.heads.set(key, head);
    }
    let out = head;
    if (c) {
      out += `,"client_id":${c.cid},"client_ip":${JSON.stringify(c.host.startsWith("::ffff:") ? c.host.slice(7) : c.host)}`;
      if (c.nonce !== "") out += `,"nonce":${JSON.stringify(c.nonce)}`;
    }
    // Websocket clients are told the servers' websocket URLs (nats-server ws_connect_urls).
    out += `,"connect_urls":${this.cluster !== null ? JSON.stringify(this.cluster.clientUrls(c !== null && c.kind === "ws")) : "[]"}`;
    if (ldm) out += `,"ldm":true`;
    return out + "}";
  }
  private infoHeads: { opts: ServerOptions; tls: TlsSetup | null; heads: Map<string, string> } | null = null;

  // ---- the one timer ----

  private armTick(ms: number): void {
    this.tickMs = ms;
    this.tickTimer = this.clock.setTimer(() => {
      this.tickTimer = null;
      if (this.shuttingDown) return;
      this.tickWalk = this.clients.values();
      this.tickStep();
    }, ms);
  }

  /** One slice of the tick's walk; the timer is armed again once the walk is done. */
  private tickStep(): void {
    if (this.shuttingDown) {
      this.tickWalk = null;
      return;
    }
    if (this.tick()) {
      this.tickWalk = null;
      this.armTick(this.tickMs);
    } else {
      this.sched.nextTurn(this.tickStepBound);
    }
  }

  /** Lame duck's pauses: kept alive (the process waits for them). */
  private sleep(ms: number): Promise<void> {
    return new Promise((r) => this.clock.setTimer(r, ms, true));
  }

  /** Looks at the next clients of the walk (auth timeouts, write deadlines, pings, idle
   *  buffers): TICK_PER_TURN of them and at most TICK_SLICE_MS. true when the walk is done.
   *  A Map's iterator is live: clients that leave meanwhile are skipped, new ones are seen. */
  private tick(): boolean {
    const walk = this.tickWalk;
    if (walk === null) return true;
    const now = this.nowMs();
    const o = this.opts;
    const authReq = this.authRequired();
    const t0 = this.clock.monoMs();
    let n = 0;
    let done = false;
    for (;;) {
      if (n > 0 && (n >= TICK_PER_TURN || ((n & 63) === 0 && this.clock.monoMs() - t0 >= TICK_SLICE_MS))) break;
      const next = walk.next();
      if (next.done === true) {
        done = true;
        break;
      }
      n++;
      const c = next.value;
      if (c.closed) continue;
      c.releaseIdleBuffer();
      if (!c.connected) {
        if (c.kind === "ws" ? this.authRequiredFor(c) && now - c.startMs > this.authFor(c).timeoutMs : authReq && now - c.startMs > o.authorization.timeoutMs) {
          c.sendErr("Authentication Timeout");
          c.close(CloseReason.AuthTimeout);
        }
        continue;
      }
      if (c.writeBlockedSinceMs > 0 && now - c.writeBlockedSinceMs > o.writeDeadlineMs) {
        c.slowConsumer(CloseReason.SlowConsumerDeadline);
        continue;
      }
      if (now - c.lastPingMs >= o.pingIntervalMs) {
        if (c.pingsOut === 0 && now - c.lastInboundMs < o.pingIntervalMs) {
          c.lastPingMs = now;
          continue;
        }
        if (c.pingsOut + 1 > o.pingMax) {
          c.sendErr("Stale Connection");
          c.close(CloseReason.StaleConnection);
          continue;
        }
        c.sendPing();
      }
    }
    this.flushDirty();
    return done;
  }
}


/**
 * Listen on host:port. "0.0.0.0" means every address, as in nats-server (Go listens on both
 * IPv4 and IPv6 for it): node's "::" is dual-stack, so a client that resolves localhost to
 * ::1 connects too; where IPv6 is unavailable it falls back to IPv4 only.
 */
export async function listenAny(l: net.Server, host: string, port: number): Promise<void> {
  const attempt = (h: string): Promise<void> =>
    new Promise<void>((resolve, reject) => {
      l.once("error", reject);
      l.listen({ host: h, port, exclusive: true, ipv6Only: false, backlog: LISTEN_BACKLOG }, () => {
        l.off("error", reject);
        resolve();
      });
    });
  if (host !== "0.0.0.0") return attempt(host);
  try {
    await attempt("::");
  } catch (err) {
    const code = (err as { code?: string }).code;
    if (code !== "EAFNOSUPPORT" && code !== "EADDRNOTAVAIL") throw err;
    await attempt("0.0.0.0");
  }
}


