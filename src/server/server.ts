// The server: accepts connections, owns the subscription index and routes messages.
// One coarse timer drives pings, auth timeouts and write deadlines for every client.

import net from "node:net";
import tls from "node:tls";
import { buildTls, peerIdentities, peerRejection, serverSocketOptions, tlsCipherName, tlsVersionName, type TlsSetup } from "./tls.js";
import { adoptAccepted, inReadBuffer, LISTEN_BACKLOG } from "../runtime/net.js";
import { randomBytes } from "node:crypto";
import { writeFileSync, unlinkSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { Sublist, type SublistResult } from "../subjects/sublist.js";
import { Client, CloseReason } from "./client.js";
import { newServerId } from "./serverid.js";
import { Subscription, type SubOwner } from "./subscription.js";
import { authRequired, permissionsOf, userStillExists } from "./auth.js";
import type { AckBytesHandler, Bus, InternalHandler, InternalSubscription } from "../contracts/bus.js";
import type { AckReply } from "../protocol/ackreply.js";
import type { Logger } from "../runtime/log.js";
import type { AuthorizationOptions, ClusterOptions, ServerOptions } from "./options.js";
import type { JetStreamDeps } from "../contracts/jetstream.js";
import { WsListener, validateWebSocketOptions, type WsConn } from "./websocket.js";
import { SERVER_VERSION, PROTO_VERSION, JS_API_LEVEL, TSNATS_VERSION } from "../version.js";
import { SystemClock, type Clock } from "../runtime/clock.js";

export interface ServerStats {
  inMsgs: number;
  outMsgs: number;
  inBytes: number;
  outBytes: number;
  slowConsumers: number;
  totalConnections: number;
}

/** What the server needs from its JetStream service (src/jetstream/service.ts). */
export interface JetStreamLike {
  start(): Promise<void>;
  stop(): Promise<void>;
  jsz(opts?: Record<string, unknown>): object;
  accountInfo(): object;
}

export interface RoutezOptions {
  subs: boolean;
}

/** What the server needs from its cluster routes (src/cluster/cluster.ts). */
export interface ClusterLike {
  /** At least one route is registered: publishes consult forward(). */
  readonly active: boolean;
  readonly name: string;
  readonly port: number;
  start(): Promise<void>;
  stop(): Promise<void>;
  /** After local plain delivery: queue groups cluster-wide and the copies to routes; the
   *  deliveries made. */
  forward(fromCid: number, noEcho: boolean, subject: string, reply: string, hdr: Buffer | null, buf: Buffer, start: number, end: number, shown: string, ack: AckReply | null, qsubs: SublistResult<Subscription>["qsubs"]): number;
  /** The largest outbound backlog among the local queue members the last forward() chose. */
  readonly lastQueueBacklog: number;
  /** A client subscription was added (+1) or removed (-1). */
  localInterest(sub: Subscription, delta: 1 | -1): void;
  hasRemoteInterest(subject: string): boolean;
  /** Hand what routes have buffered to their sockets. */
  flushRoutes(): void;
  /** This server enters lame duck mode: peers drop its client URLs. */
  lameDuck(): void;
  /** connect_urls for clients. */
  clientUrls(websocket?: boolean): string[];
  varz(): Record<string, unknown>;
  routez(opts: RoutezOptions): Record<string, unknown>;
}

/** The optional parts a server is built with (src/compose.ts wires them): each is made
 *  only when its options ask for it. */
export interface ServerParts {
  jetstream?: (deps: JetStreamDeps) => Promise<JetStreamLike>;
  cluster?: (server: Server, opts: ClusterOptions) => Promise<ClusterLike>;
  monitor?: (server: Server) => Promise<MonitorLike>;
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
const NO_RESPONDERS_HDR = "NATS/1.0 503\r\n";

/** JetStream deliveries pause (deliverAs returns true) past this many queued bytes. */
const DELIVER_BACKLOG_PAUSE_BYTES = 1024 * 1024;

/** A consumer's ack subscription that plain client acks may reach without routing. */
interface AckRoute {
  readonly prefix: string; // "$JS.ACK.<stream>.<consumer>."
  readonly key: Buffer; // the bytes of prefix after "$JS.ACK."
  readonly sub: Subscription;
  readonly onBytes: AckBytesHandler;
  gen: number; // sublist.gen when sole was decided
  sole: boolean; // sub is the only subscription any prefix... subject matches
}

const ACK_PFX_LEN = "$JS.ACK.".length;

class InternalOwner implements SubOwner {
  readonly cid = 0;
  readonly echo = true;
  constructor(
    private readonly handler: InternalHandler,
    private readonly borrow: boolean,
  ) {}
  deliverMsg(sub: Subscription, subject: string, reply: string, hdr: Buffer | null, buf: Buffer, start: number, end: number, ack: AckReply | null): void {
    if (sub.closed) return;
    sub.delivered++;
    if (ack !== null) reply = ack.toString();
    // A client's message lies in the shared read buffer, which the next read overwrites, and
    // internal handlers may keep what they get, unless they borrow (copy what they keep).
    if (!this.borrow && inReadBuffer(buf)) {
      this.handler(subject, reply, hdr === null ? null : Buffer.from(hdr), Buffer.from(buf.subarray(start, end)));
      return;
    }
    this.handler(subject, reply, hdr, start === 0 && end === buf.length ? buf : buf.subarray(start, end));
  }
  pendingBytes(): number {
    return 0;
  }
}

export class Server implements Bus {
  readonly sublist = new Sublist<Subscription>();
  readonly clients = new Map<number, Client>();
  readonly closedClients: ClosedClientInfo[] = [];
  readonly stats: ServerStats = { inMsgs: 0, outMsgs: 0, inBytes: 0, outBytes: 0, slowConsumers: 0, totalConnections: 0 };
  readonly serverId: string;
  readonly startMs: number;
  readonly clock: Clock;
  opts: ServerOptions;
  log: Logger;
  traceEnabled: boolean;
  jetstream: JetStreamLike | null = null;
  monitor: MonitorLike | null = null;
  /** Cluster routes; null without a cluster block. */
  cluster: ClusterLike | null = null;
  lameDuck = false;
  configLoadMs: number;
  /** TLS for the client port (and https monitoring); null = plaintext. Rebuilt on reload. */
  tls: TlsSetup | null = null;

  private listener: net.Server | null = null;
  private wsListener: WsListener | null = null;
  private nextCid = 1;
  private dirtyClients: Client[] = [];
  /** Accepted client sockets not yet closed (the listener no longer counts them). */
  private readonly liveSockets = new Set<net.Socket>();
  private socketsDrained: (() => void) | null = null;
  private flushScheduled = false;
  private tickTimer: NodeJS.Timeout | null = null;
  private boundPort = 0;
  private shuttingDown = false;
  private readonly portsFiles: string[] = [];
  private readonly flushBound = (): void => this.flushDirty();
  /** Turns of the event loop in which some client spent its operation budget
   *  (Client.spendOp): advanced on setImmediate, after the reads of the turn. */
  turn = 0;
  private turnArmed = false;
  private readonly nextTurnBound = (): void => {
    this.turnArmed = false;
    this.turn++;
  };
  private nuidPrefix = randomBytes(6).toString("hex");

  private readonly parts: ServerParts;

  constructor(opts: ServerOptions, log: Logger, clock: Clock = new SystemClock(), parts: ServerParts = {}) {
    this.parts = parts;
    this.opts = opts;
    this.log = log;
    this.clock = clock;
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
    return this.liveSockets.size;
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

    if (o.jetstream.enabled) await this.startJetStream();

    if (o.httpPort !== 0 || o.httpsPort !== 0) await this.startMonitor();

    if (o.websocket !== null && o.websocket.port !== 0) await this.startWebSocket();

    // Paused, so that accept() can move the handle into a socket with a shared read buffer.
    const listener = net.createServer({ noDelay: true, pauseOnConnect: true }, (s) => this.accept(s));
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
    this.tickTimer = setInterval(() => this.tick(), tickMs);
    this.tickTimer.unref();
  }

  private async startJetStream(): Promise<void> {
    const make = this.parts.jetstream;
    if (make === undefined) throw new Error("JetStream is enabled but not wired into this server (build it with src/compose.ts)");
    const js = await make({
      bus: this,
      clock: this.clock,
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
    try {
      await cl.start();
    } catch (err) {
      this.cluster = null;
      throw err;
    }
    if (this.opts.jetstream.enabled) this.log.warn("JetStream in a cluster: streams are not replicated yet; each server's JetStream is its own and answers only its own clients");
  }

  /** A connection id (clients and routes share the counter, as in nats-server). */
  allocCid(): number {
    return this.nextCid++;
  }

  /** A client subscription came (+1) or went (-1): routes hear about the interest. */
  subInterest(sub: Subscription, delta: 1 | -1): void {
    const cl = this.cluster;
    if (cl !== null) cl.localInterest(sub, delta);
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
    if (this.tickTimer) clearInterval(this.tickTimer);
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
    if (this.liveSockets.size > 0) await new Promise<void>((r) => (this.socketsDrained = r));
    this.socketsDrained = null;
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
    if (this.jetstream) {
      await this.jetstream.stop();
      this.jetstream = null;
    }
    for (const c of this.clients.values()) if (c.connected || !this.authRequired()) c.queueString(`INFO ${this.infoJson(c, true)}\r\n`);
    this.flushDirty();
    const dur = this.opts.lameDuckDurationMs;
    const grace = Math.min(this.opts.lameDuckGracePeriodMs, dur);
    await sleep(grace);
    const list = [...this.clients.values()];
    const spread = Math.max(0, dur - grace);
    const step = list.length > 0 ? spread / list.length : 0;
    for (const c of list) {
      c.close(CloseReason.LameDuck);
      if (step >= 1) await sleep(step);
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

  // ---- connections ----

  private accept(raw: net.Socket): void {
    if (this.shuttingDown || this.lameDuck) {
      raw.destroy();
      return;
    }
    // max_connections 0 in a config file arrives as -1: no limit. Sockets of closed clients
    // that are still being let go count too, so that refused peers cannot pile them up.
    const maxConns = this.opts.maxConnections;
    const overLimit = maxConns > 0 && this.liveSockets.size >= maxConns;
    // Over the limit on a TLS port: the refusal goes out in plaintext after INFO, before any
    // handshake, as nats-server checks the limit before TLS.
    if (this.tls !== null && !overLimit) {
      this.acceptTls(raw, this.tls);
      return;
    }
    let client: Client | null = null;
    const socket = adoptAccepted(raw, (chunk) => {
      if (client === null) return;
      client.onData(chunk);
      this.flushDirty();
    });
    const c = this.register(socket);
    client = c;
    this.wire(c, socket);
    c.queueString(`INFO ${this.infoJson(c)}\r\n`);
    if (overLimit) {
      // As nats-server: the INFO, then the error, then the close.
      this.log.error(`${c.label()} - maximum connections exceeded`);
      c.sendErr("maximum connections exceeded");
      c.close(CloseReason.MaxConnections);
      return;
    }
    this.flushDirty();
  }

  /** A new Client over socket, counted and tracked until its socket closes. */
  private register(socket: net.Socket): Client {
    socket.setNoDelay(true);
    const cid = this.nextCid++;
    const c = new Client(cid, socket, this);
    this.clients.set(cid, c);
    this.liveSockets.add(socket);
    this.stats.totalConnections++;
    this.log.debug(`${c.label()} - Client connection created`);
    socket.on("close", () => {
      this.liveSockets.delete(socket);
      c.close(CloseReason.ClientClosed);
      if (this.liveSockets.size === 0 && this.socketsDrained !== null) this.socketsDrained();
    });
    return c;
  }

  /** The write-side events of the socket a client talks over (the TLS socket once secure). */
  private wire(c: Client, s: net.Socket): void {
    s.on("drain", () => c.onDrain());
    s.on("error", (err) => {
      this.log.debug(`${c.label()} - Client connection error: ${err.message}`);
      c.close(CloseReason.ReadError);
    });
  }

  /**
   * A client on a TLS port, as nats-server's createClient does it:
   * - TLS required: INFO in plaintext (tls_required), then the client starts the handshake;
   * - allow_non_tls: INFO says tls_available, and the first byte tells (0x16: a handshake);
   * - handshake_first: the handshake first, INFO over TLS once secure; with a fallback delay,
   *   a client that sends nothing in that time gets the plaintext INFO instead.
   * A client that does not finish the handshake within tls.timeout is closed.
   */
  private acceptTls(raw: net.Socket, t: TlsSetup): void {
    const c = this.register(raw);
    // connection_rate_limit: new TLS connections per second, refused in plaintext before any
    // handshake work (nats-server's connRateCounter).
    if (t.opts.rateLimit > 0 && !this.tlsRateAllows(t.opts.rateLimit)) {
      raw.on("error", () => undefined);
      c.queueString(`INFO ${this.infoJson(c)}\r\n`);
      c.sendErr("Connection throttling is active. Please try again later.");
      c.close(CloseReason.MaxConnections);
      return;
    }
    raw.on("error", (err) => {
      this.log.debug(`${c.label()} - Client connection error: ${err.message}`);
      c.close(CloseReason.ReadError);
    });
    const o = this.opts;
    const deadline = setTimeout(() => {
      if (c.closed || c.tlsVersion !== "") return;
      this.log.error(`${c.label()} - TLS handshake timeout`);
      c.close(CloseReason.TlsHandshakeError);
      raw.destroy();
    }, t.opts.timeoutMs);
    deadline.unref();
    const sendInfo = (tlsRequired: boolean): void => {
      c.queueString(`INFO ${this.infoJson(c, false, tlsRequired)}\r\n`);
      this.flushDirty();
    };
    const plaintext = (first: Buffer | null): void => {
      clearTimeout(deadline);
      raw.on("data", (chunk: Buffer) => {
        c.onData(chunk);
        this.flushDirty();
      });
      if (first !== null) {
        c.onData(first);
        this.flushDirty();
      }
      raw.resume();
    };
    // After INFO (or before it, handshake first): wait for the first bytes and decide.
    const sniff = (): void => {
      raw.once("data", (first: Buffer) => {
        raw.pause();
        if (first[0] === 0x16) this.upgradeTls(c, raw, t, first, deadline, null);
        else plaintext(first);
      });
      raw.resume();
    };
    if (t.opts.handshakeFirst) {
      const fallback = t.opts.handshakeFirstFallbackMs;
      if (fallback <= 0) {
        this.upgradeTls(c, raw, t, null, deadline, () => sendInfo(true));
        return;
      }
      const timer = setTimeout(() => {
        raw.removeAllListeners("data");
        raw.pause();
        if (c.closed) return;
        // Nothing came: a client that waits for INFO, as before 2.10.
        sendInfo(!o.allowNonTls);
        if (o.allowNonTls) sniff();
        else this.upgradeTls(c, raw, t, null, deadline, null);
      }, fallback);
      raw.once("data", (first: Buffer) => {
        clearTimeout(timer);
        raw.pause();
        this.upgradeTls(c, raw, t, first, deadline, () => sendInfo(true));
      });
      raw.resume();
      return;
    }
    sendInfo(!o.allowNonTls);
    if (o.allowNonTls) sniff();
    else this.upgradeTls(c, raw, t, null, deadline, null);
  }

  private tlsRateWindowMs = 0;
  private tlsRateCount = 0;

  /** One more TLS connection in this second's window, if under limit per second. */
  private tlsRateAllows(limit: number): boolean {
    const now = this.nowMs();
    if (now - this.tlsRateWindowMs >= 1000) {
      this.tlsRateWindowMs = now;
      this.tlsRateCount = 0;
    }
    if (this.tlsRateCount >= limit) return false;
    this.tlsRateCount++;
    return true;
  }

  /** Server-side handshake over raw (first: bytes already read from it); then the client
   *  reads and writes through the TLS socket. */
  private upgradeTls(c: Client, raw: net.Socket, t: TlsSetup, first: Buffer | null, deadline: NodeJS.Timeout, onSecure: (() => void) | null): void {
    if (c.closed) return;
    if (first !== null) raw.unshift(first);
    const ts = new tls.TLSSocket(raw, serverSocketOptions(t));
    c.socket = ts;
    ts.on("error", (err) => {
      if (c.tlsVersion === "") this.log.error(`${c.label()} - TLS handshake error: ${err.message}`);
      else this.log.debug(`${c.label()} - Client connection error: ${err.message}`);
      c.close(c.tlsVersion === "" ? CloseReason.TlsHandshakeError : CloseReason.ReadError);
      raw.destroy();
    });
    ts.on("secure", () => {
      clearTimeout(deadline);
      if (c.closed) return;
      const bad = peerRejection(ts, t.opts, t.opts.verify);
      if (bad !== null) {
        this.log.error(`${c.label()} - TLS handshake error: ${bad}`);
        c.close(CloseReason.TlsHandshakeError);
        ts.destroy();
        return;
      }
      c.tlsVersion = tlsVersionName(ts);
      c.tlsCipher = tlsCipherName(ts);
      if (t.opts.verifyAndMap) c.certIdentities = peerIdentities(ts);
      this.log.debug(`${c.label()} - TLS handshake complete`);
      this.log.debug(`${c.label()} - TLS version ${c.tlsVersion}, cipher suite ${c.tlsCipher}`);
      ts.on("drain", () => c.onDrain());
      // One TCP read can hold several TLS records, each a 'data' event in the same turn:
      // the writes they cause are flushed once, on setImmediate (markDirty schedules it).
      ts.on("data", (chunk: Buffer) => c.onData(chunk));
      if (onSecure !== null) onSecure();
    });
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

  /** A websocket connection past its upgrade: a Client like accept()'s, talking through conn
   *  (which frames what it writes). null when refused. */
  /** The TLS a client came in over: the client port's, or the websocket listener's. */
  tlsFor(c: Client): TlsSetup | null {
    return c.kind === "ws" ? (this.wsListener?.tls ?? null) : this.tls;
  }

  acceptWebSocket(conn: WsConn): Client | null {
    if (this.shuttingDown || this.lameDuck) {
      conn.destroy();
      return null;
    }
    const maxConns = this.opts.maxConnections;
    if (maxConns > 0 && this.clients.size >= maxConns) {
      conn.refuse("-ERR 'maximum connections exceeded'\r\n", 1008, CloseReason.MaxConnections);
      this.log.warn("Maximum connections exceeded");
      return null;
    }
    const cid = this.nextCid++;
    const c = new Client(cid, conn, this, "ws");
    c.tlsVersion = conn.tlsVersion;
    c.tlsCipher = conn.tlsCipher;
    c.certIdentities = conn.certIdentities;
    this.clients.set(cid, c);
    const socket = conn.socket;
    this.liveSockets.add(socket);
    this.stats.totalConnections++;
    this.log.debug(`${c.label()} - Client connection created`);
    conn.on("drain", () => c.onDrain());
    conn.on("error", (err: Error) => {
      this.log.debug(`${c.label()} - Client connection error: ${err.message}`);
      c.close(CloseReason.ReadError);
    });
    conn.on("close", () => {
      this.liveSockets.delete(socket);
      c.close(CloseReason.ClientClosed);
      if (this.liveSockets.size === 0 && this.socketsDrained !== null) this.socketsDrained();
    });
    c.queueString(`INFO ${this.infoJson(c)}\r\n`);
    this.flushDirty();
    return c;
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
    // Routes hear that the closed client's subscriptions are gone.
    if (this.cluster !== null) for (const sub of c.subs.values()) this.cluster.localInterest(sub, -1);
    if (!this.clients.delete(c.cid)) return;
    this.log.debug(`${c.label()} - Client connection closed: ${c.closeReason}`);
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
    // As nats-server: with a no_auth_user, INFO does not ask for credentials (a client that
    // sends none is that user); auth is still enforced for those that do.
    const authReq = c !== null ? this.authRequiredFor(c) && this.noAuthUserFor(c) === "" : this.authRequired() && this.opts.noAuthUser === "";
    if (authReq) info["auth_required"] = true;
    // A websocket client is told about its own listener's TLS (nats-server sets both
    // tls_required and tls_available for wss).
    if (c !== null && c.kind === "ws") {
      if (this.wsListener?.tls) {
        info["tls_required"] = true;
        info["tls_available"] = true;
      }
    } else if (this.tls !== null) {
      const req = tlsRequired ?? (c !== null && c.tlsVersion !== "" ? true : !o.allowNonTls);
      if (req) info["tls_required"] = true;
      else info["tls_available"] = true;
      if (this.tls.opts.verify) info["tls_verify"] = true;
    }
    if (o.jetstream.enabled) {
      info["jetstream"] = true;
      info["api_lvl"] = JS_API_LEVEL;
    }
    if (o.jetstream.domain) info["domain"] = o.jetstream.domain;
    if (c) {
      info["client_id"] = c.cid;
      info["client_ip"] = c.host.startsWith("::ffff:") ? c.host.slice(7) : c.host;
      if (c.nonce !== "") info["nonce"] = c.nonce;
    }
    // Websocket clients are told the servers' websocket URLs (nats-server ws_connect_urls).
    info["connect_urls"] = this.cluster !== null ? this.cluster.clientUrls(c !== null && c.kind === "ws") : [];
    if (ldm) info["ldm"] = true;
    return JSON.stringify(info);
  }

  // ---- routing ----

  /** Largest outbound backlog among the receivers of the last probing route (deliverAs). */
  private routeBacklogBytes = 0;
  /** Subject mapping of client publishes (mapSubjects): "" none. */
  private mapPrefix = "";
  private mapFn: ((subject: string) => string | null) | null = null;

  /** Route one message to every matching subscription (one member per queue group).
   *  probe: record the receivers' largest outbound backlog in routeBacklogBytes. */
  route(from: Client | null, subject: string, reply: string, hdr: Buffer | null, payload: Buffer, shown = subject, probe = false): void {
    this.routeRange(from, subject, reply, hdr, payload, 0, payload.length, shown, probe, null);
  }

  /** route() with the payload as buf[start, end): client publishes hand in the read buffer,
   *  so no view is made per message. */
  routeRange(from: Client | null, subject: string, reply: string, hdr: Buffer | null, buf: Buffer, start: number, end: number, shown: string, probe: boolean, ack: AckReply | null): void {
    const r: SublistResult<Subscription> = this.sublist.match(subject);
    let delivered = 0;
    const noEcho = from !== null && !from.echo;
    const ps = r.psubs;
    for (let i = 0; i < ps.length; i++) {
      const sub = ps[i]!;
      // Closed (its client is being removed a slice per turn): no delivery, no interest.
      if (sub.closed || (noEcho && sub.owner === from)) continue;
      if (sub.denyFilter !== null && sub.denyFilter.denies(subject, "")) continue;
      sub.owner.deliverMsg(sub, shown, reply, hdr, buf, start, end, ack);
      delivered++;
      if (probe) this.probeBacklog(sub);
    }
    const qs = r.qsubs;
    // With routes, queue groups are picked cluster-wide and routes get their copies.
    const cl = this.cluster;
    if (cl !== null && cl.active) {
      delivered += cl.forward(from !== null ? from.cid : 0, noEcho, subject, reply, hdr, buf, start, end, shown, ack, qs);
      if (probe && cl.lastQueueBacklog > this.routeBacklogBytes) this.routeBacklogBytes = cl.lastQueueBacklog;
      if (delivered === 0 && reply.length > 0 && from !== null && from.noResponders) this.noResponders(from, subject, reply);
      return;
    }
    for (let g = 0; g < qs.length; g++) {
      const members = qs[g]!;
      const n = members.length;
      if (n === 0) continue;
      const first = n === 1 ? 0 : Math.floor(Math.random() * n);
      for (let k = 0; k < n; k++) {
        const sub = members[(first + k) % n]!;
        if (sub.closed || (noEcho && sub.owner === from)) continue;
        // A member whose subscribe deny covers the subject passes it to the next one.
        if (sub.denyFilter !== null && sub.denyFilter.denies(subject, sub.queue)) continue;
        sub.owner.deliverMsg(sub, shown, reply, hdr, buf, start, end, ack);
        delivered++;
        if (probe) this.probeBacklog(sub);
        break;
      }
    }
    if (delivered === 0 && reply.length > 0 && from !== null && from.noResponders) this.noResponders(from, subject, reply);
  }

  private probeBacklog(sub: Subscription): void {
    const b = sub.owner.pendingBytes();
    if (b > this.routeBacklogBytes) this.routeBacklogBytes = b;
  }

  private noResponders(from: Client, subject: string, reply: string): void {
    const r = this.sublist.match(reply);
    let target: Subscription | undefined;
    for (const s of r.psubs) if (s.owner === from) target = s;
    if (!target) for (const q of r.qsubs) for (const s of q) if (s.owner === from) target = s;
    if (!target) return;
    // nats-server 2.12 adds the original subject as Nats-Subject; older clients ignore it.
    const hdr = Buffer.from(`${NO_RESPONDERS_HDR}Nats-Subject: ${subject}\r\n\r\n`, "latin1");
    from.deliverMsg(target, reply, "", hdr, EMPTY, 0, 0, null);
  }

  markDirty(c: Client): void {
    this.dirtyClients.push(c);
    this.scheduleFlush();
  }

  flushDirty(): void {
    this.flushScheduled = false;
    // Routes that a client's read gave messages go out with the clients' writes, not a turn
    // later.
    if (this.cluster !== null) this.cluster.flushRoutes();
    const list = this.dirtyClients;
    if (list.length === 0) return;
    this.dirtyClients = [];
    for (let i = 0; i < list.length; i++) list[i]!.flush();
  }

  // ---- Bus (internal clients) ----

  private readonly ackRoutes = new Map<string, AckRoute>(); // by AckRoute.key as a string
  private lastAck: AckRoute | null = null;

  subscribeAck(prefix: string, handler: InternalHandler, onBytes: AckBytesHandler): InternalSubscription {
    const owner = new InternalOwner(handler, false);
    const subject = prefix + ">";
    const sub = new Subscription(owner, subject, "", "0");
    this.sublist.insert(sub);
    const keyStr = prefix.slice(ACK_PFX_LEN);
    const route: AckRoute = { prefix, key: Buffer.from(keyStr, "utf8"), sub, onBytes, gen: -1, sole: false };
    this.ackRoutes.set(keyStr, route);
    return {
      subject,
      unsubscribe: (): void => {
        if (sub.closed) return;
        sub.closed = true;
        this.sublist.remove(sub);
        if (this.ackRoutes.get(keyStr) === route) this.ackRoutes.delete(keyStr);
        if (this.lastAck === route) this.lastAck = null;
      },
    };
  }

  /** A client's plain PUB to buf[s0, s1), which starts with "$JS.ACK.", handed straight to
   *  the consumer when its ack subscription is the only one the subject can match (what
   *  routing would do, minus the subject string and the lookup). False: route it normally. */
  routeAck(buf: Buffer, s0: number, s1: number, reply: string, pstart: number, pend: number): boolean {
    const ks = s0 + ACK_PFX_LEN;
    let r = this.lastAck;
    if (r === null || !bytesAt(buf, ks, s1, r.key)) {
      const d1 = buf.indexOf(0x2e, ks);
      if (d1 < 0 || d1 >= s1) return false;
      const d2 = buf.indexOf(0x2e, d1 + 1);
      if (d2 < 0 || d2 >= s1) return false;
      r = this.ackRoutes.get(buf.toString("utf8", ks, d2 + 1)) ?? null;
      if (r === null) return false;
      this.lastAck = r;
    }
    const sl = this.sublist;
    if (r.gen !== sl.gen) {
      r.sole = sl.soleSubscriberUnder(r.prefix.slice(0, -1), r.sub);
      r.gen = sl.gen;
    }
    const start = ks + r.key.length;
    if (!r.sole || r.sub.closed || start >= s1) return false;
    if (!r.onBytes(buf, start, s1, reply, buf, pstart, pend)) return false;
    r.sub.delivered++;
    return true;
  }

  subscribe(subject: string, handler: InternalHandler, queue = "", borrow = false): InternalSubscription {
    const owner = new InternalOwner(handler, borrow);
    const sub = new Subscription(owner, subject, queue, "0");
    this.sublist.insert(sub);
    const list = this.sublist;
    return {
      subject,
      unsubscribe(): void {
        if (sub.closed) return;
        sub.closed = true;
        list.remove(sub);
      },
    };
  }

  publish(subject: string, reply: string, hdr: Buffer | null, payload: Buffer): void {
    this.publishRange(subject, reply, hdr, payload, 0, payload.length);
  }

  mapSubjects(prefix: string, map: ((subject: string) => string | null) | null): void {
    this.mapPrefix = map === null ? "" : prefix;
    this.mapFn = map;
  }

  /** The subject a client's publish to `subject` is routed as, or null to leave it. */
  mappedSubject(subject: string): string | null {
    if (this.mapFn === null || !subject.startsWith(this.mapPrefix)) return null;
    return this.mapFn(subject);
  }

  publishRange(subject: string, reply: string, hdr: Buffer | null, buf: Buffer, start: number, end: number): void {
    this.routeRange(null, subject, reply, hdr, buf, start, end, subject, false, null);
    this.scheduleFlush();
  }

  /** A client started spending its budget in this turn: move `turn` on after the reads. */
  armTurn(): void {
    if (this.turnArmed) return;
    this.turnArmed = true;
    setImmediate(this.nextTurnBound);
  }

  /** Flush dirty clients on the next turn (routing from outside a client's read). */
  private scheduleFlush(): void {
    if (!this.flushScheduled && this.dirtyClients.length > 0) {
      this.flushScheduled = true;
      setImmediate(this.flushBound);
    }
  }

  deliverAs(deliverSubject: string, msgSubject: string, reply: string, hdr: Buffer | null, payload: Buffer): boolean {
    return this.deliverVia(deliverSubject, msgSubject, reply, null, hdr, payload);
  }

  /** deliverAs with the reply subject given by ack (written by each client connection
   *  straight into its outbound buffer). */
  deliverAck(deliverSubject: string, msgSubject: string, ack: AckReply, hdr: Buffer | null, payload: Buffer): boolean {
    return this.deliverVia(deliverSubject, msgSubject, "", ack, hdr, payload);
  }

  private deliverVia(deliverSubject: string, msgSubject: string, reply: string, ack: AckReply | null, hdr: Buffer | null, payload: Buffer): boolean {
    this.routeBacklogBytes = 0;
    this.routeRange(null, deliverSubject, reply, hdr, payload, 0, payload.length, msgSubject, true, ack);
    this.scheduleFlush();
    // Well before the slow-consumer bound (a quarter of it at most), and small enough that
    // the outbound buffer stays a size the socket takes in one go.
    return this.routeBacklogBytes > Math.min(this.opts.maxPendingBytes / 4, DELIVER_BACKLOG_PAUSE_BYTES);
  }

  hasInterest(subject: string): boolean {
    const r = this.sublist.match(subject);
    // Subscriptions marked closed (still in the sublist for a few turns) do not count.
    for (const s of r.psubs) if (!s.closed) return true;
    for (const g of r.qsubs) for (const s of g) if (!s.closed) return true;
    return this.cluster !== null && this.cluster.hasRemoteInterest(subject);
  }

  hasQueueInterest(subject: string, queue: string): boolean {
    const qs = this.sublist.match(subject).qsubs;
    for (let g = 0; g < qs.length; g++) {
      const members = qs[g]!;
      for (let k = 0; k < members.length; k++) {
        const s = members[k]!;
        if (s.queue === queue && !s.closed) return true;
      }
    }
    return false;
  }

  /** A unique inbox prefix for internal requests. */
  newInbox(): string {
    return `_INBOX.${this.nuidPrefix}${randomBytes(6).toString("hex")}`;
  }

  // ---- the one timer ----

  private tick(): void {
    const now = this.nowMs();
    const o = this.opts;
    const authReq = this.authRequired();
    for (const c of this.clients.values()) {
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
  }
}

const EMPTY = Buffer.alloc(0);

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

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** Whether buf[at, end) starts with key. */
function bytesAt(buf: Buffer, at: number, end: number, key: Buffer): boolean {
  const n = key.length;
  if (at + n > end) return false;
  for (let i = 0; i < n; i++) if (buf[at + i] !== key[i]) return false;
  return true;
}
