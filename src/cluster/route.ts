// One route connection to another server (nats-server route.go): the handshake (CONNECT from
// the soliciting side, INFO both ways), interest the peer announces (RS+/RS-), routed
// messages both ways (RMSG/HMSG) and the route's outbound buffer, flushed once per turn of
// the event loop. A route is one slot of a peer's pool, the one route of a no-pool peer, or
// pinned to one account (which its operations then leave out, pool.ts). The Cluster
// (cluster.ts) and its Registry (registry.ts) own the decisions: who is registered where,
// duplicates, gossip, reconnects.

import type net from "node:net";
import { RouteParser, type RouteParserHandler } from "./route-parser.js";
import { Conn, Origin, type OriginKind } from "../server/conn.js";
import type { Clock } from "../runtime/clock.js";
import type { Logger } from "../runtime/log.js";

/** The first outbound buffer of a route (routes carry bursts: no small start). */
const FIRST_OUT_BYTES = 32 * 1024;
const PING = Buffer.from("PING\r\n");
const PONG = Buffer.from("PONG\r\n");
/** Control lines on a route: INFO carries every client URL of the peer, so more than a
 *  client's 4 KiB. */
const ROUTE_MAX_CONTROL_LINE = 256 * 1024;
/** nats-server's hard maximum payload (MAX_PAYLOAD_MAX_SIZE): routes carry what the peer's
 *  clients may publish there. */
const ROUTE_MAX_PAYLOAD = 64 * 1024 * 1024;

/** The global account: the only one tsnats has. */
export const GLOBAL_ACCOUNT = "$G";
/** The system account on routes: tsnats carries only its own peer-to-peer frames in it
 *  (subjects under PEER_SUBJECT_PREFIX, see peer-transport.ts). */
export const SYSTEM_ACCOUNT = "$SYS";
/** Subjects of tsnats's own server-to-server frames, in the system account. */
export const PEER_SUBJECT_PREFIX = "$TSR.";

/** What a peer announced with RS+: an entry in the cluster's remote-interest index. */
export class RemoteSub {
  constructor(
    readonly route: Route,
    readonly subject: string,
    readonly queue: string,
    public weight: number,
  ) {}
}

/** The INFO fields a route uses (nats-server Info). */
export interface RouteInfo {
  server_id: string;
  server_name?: string;
  cluster?: string;
  cluster_dynamic?: boolean;
  host?: string;
  port?: number;
  ip?: string;
  headers?: boolean;
  connect_urls?: string[];
  ws_connect_urls?: string[];
  auth_required?: boolean;
  tls_required?: boolean;
  jetstream?: boolean;
  ldm?: boolean;
  route_pool_size?: number;
  route_pool_idx?: number;
  route_account?: string;
  /** tsnats only: the version of its peer protocol (frames in $SYS under $TSR.). */
  tsnats_peer?: number;
  [k: string]: unknown;
}

/** What a Route needs of its cluster (cluster.ts implements it). */
export interface RouteHost {
  readonly log: Logger;
  readonly clock: Clock;
  readonly traceEnabled: boolean;
  readonly maxPendingBytes: number;
  nowMs(): number;
  markDirty(r: Route): void;
  closeRoute(r: Route, reason: string, detail: string): void;
  processConnect(r: Route, json: string): void;
  processInfo(r: Route, info: RouteInfo): void;
  /** The peer answered a PING (a pooled route may then ask for the next connection). */
  routePong(r: Route): void;
  remoteSub(r: Route, acc: string, subject: string, queue: string, weight: number): void;
  remoteUnsub(r: Route, acc: string, subject: string, queue: string): void;
  /** fn runs on a later turn of the event loop. */
  nextTurn(fn: () => void): void;
  /** After a route's bytes were parsed outside its socket's read: flush what they made. */
  flushAfterRead(): void;
  inbound(r: Route, acc: string, subject: string, reply: string, queues: string[] | null, hdr: Buffer | null, buf: Buffer, start: number, end: number, size: number): void;
}

export class Route extends Conn implements RouteParserHandler {
  /** Routed messages it brings in follow the one-hop rule (Router.routeRange). */
  readonly origin: OriginKind = Origin.Route;
  /** Routes never ask for no-responders replies, and take their own messages back. */
  readonly noResponders = false;
  readonly echo = true;
  readonly parser: RouteParser;
  readonly startMs: number;
  host: string;
  port: number;

  /** The peer's CONNECT was accepted (accepted routes), or we sent ours (solicited ones). */
  connectDone: boolean;
  /** The peer's first INFO was processed. */
  infoReceived = false;
  /** Registered as the route to remoteId (not a duplicate, not pending). */
  registered = false;
  remoteId = "";
  remoteName = "";
  remoteInfo: RouteInfo | null = null;
  /** The peer said it is in lame duck mode (its client URLs are no longer announced). */
  lameDuck = false;
  /** The peer takes HMSG. */
  headers = false;
  /** Solicited: the URL we dialled (credentials included), and whether it is configured. */
  url: string;
  explicit: boolean;
  /** Close without reconnecting (a route to ourselves, a duplicate name, shutdown). */
  noReconnect = false;
  /** This route's URL should be retried when it closes even if implicit (nats-server
   *  route.retry: a duplicate we closed was solicited, so the pair may end up with none). */
  retry = false;
  /** The peer's interest, keyed "<subject>" or "<subject> <queue>". */
  readonly remoteSubs = new Map<string, RemoteSub>();
  /** The account this route is pinned to ("" : pooled or no-pool); its operations leave the
   *  account out. Set when dialled for it, or from the peer's first INFO. */
  account = "";
  /** Its slot in the peer's pool once registered; -1 before, and for a pinned route. */
  poolIdx = -1;
  /** A solicited pooled route sends its INFO only after the peer's (naming its slot). */
  infoDelayed = false;
  /** Dial the next pool connection when the peer answers our PING (nats-server
   *  startNewRoute: the peer accepted our credentials). */
  startNewRoute = false;

  // stats (routez)
  inMsgs = 0;
  outMsgs = 0;
  inBytes = 0;
  outBytes = 0;
  lastActivityMs: number;
  pingsOut = 0;
  lastPingMs: number;
  /** Round trip of the last PING (fractional ms); 0 before the first PONG. */
  rttMs = 0;
  private rttStartMs = 0;

  // outbound (the buffer and flush are Conn's)
  private lastSubject = "";
  private lastHdr = false;
  private lastPrefix: Buffer | null = null;
  closeReason = "";

  /** Scratch for Cluster.forward: the message epoch this route was last picked in, and the
   *  queue groups it was picked for. */
  pickEpoch = 0;
  pickPlain = false;
  pickQueues: string[] = [];

  constructor(
    readonly rid: number,
    socket: net.Socket,
    private readonly cluster: RouteHost,
    readonly didSolicit: boolean,
    url: string,
    explicit: boolean,
  ) {
    super(socket, FIRST_OUT_BYTES);
    const now = cluster.nowMs();
    this.startMs = now;
    this.lastActivityMs = now;
    this.lastPingMs = now;
    const ra = socket.remoteAddress ?? "";
    this.host = ra.startsWith("::ffff:") ? ra.slice(7) : ra;
    this.port = socket.remotePort ?? 0;
    this.url = url;
    this.explicit = explicit;
    this.connectDone = didSolicit;
    this.parser = new RouteParser(this, { maxControlLineBytes: ROUTE_MAX_CONTROL_LINE, maxPayloadBytes: ROUTE_MAX_PAYLOAD });
  }

  /** The connection id (routes and clients share the counter). */
  get cid(): number {
    return this.rid;
  }

  declare socket: net.Socket;

  protected nowMs(): number {
    return this.cluster.nowMs();
  }

  protected scheduleFlush(): void {
    this.cluster.markDirty(this);
  }

  // Route output is traced by queueString (control lines), not per flush.
  protected tracingOut(): boolean {
    return false;
  }

  protected traceOut(): void {}

  label(): string {
    return `${this.host}:${this.port} - rid:${this.rid}`;
  }

  onData(chunk: Buffer): void {
    if (this.closed) return;
    this.lastActivityMs = this.cluster.nowMs();
    if (this.cluster.traceEnabled) this.traceIn(chunk);
    this.parser.parse(chunk);
    if (this.parser.isYielded && !this.closed) this.socket.pause?.();
  }

  /** Fan-outs of this route's messages still being delivered (Router.fanoutLater). */
  private readHolds = 0;
  private readonly resumeBound = (): void => this.resumeRead();

  /** Whether reads wait for a fan-out of one of its messages to finish. */
  get readsHeld(): boolean {
    return this.readHolds > 0;
  }

  /** A message of this route is being delivered over several turns: the parser stops after
   *  it and the socket pauses until releaseReads, so that the route's later messages reach
   *  every local subscriber after this one. */
  holdReads(): void {
    this.readHolds++;
    this.parser.yieldTurn();
  }

  releaseReads(): void {
    if (--this.readHolds > 0 || this.closed) return;
    this.cluster.nextTurn(this.resumeBound);
  }

  private resumeRead(): void {
    if (this.readHolds > 0 || this.closed) return;
    const again = this.parser.resume();
    this.cluster.flushAfterRead();
    if (this.closed || again) return; // held again: that fan-out's release resumes
    if (!this.socket.destroyed) this.socket.resume?.();
  }

  private traceIn(chunk: Buffer): void {
    const text = chunk.toString("latin1", 0, Math.min(chunk.length, 4096));
    for (const line of text.split("\r\n")) if (line.length > 0) this.cluster.log.trace(`${this.label()} - <<- [${line.length > 200 ? line.slice(0, 200) + "..." : line}]`);
  }

  // ---- RouteParserHandler ----

  onInfo(json: string): void {
    let info: RouteInfo;
    try {
      const v: unknown = JSON.parse(json);
      if (v === null || typeof v !== "object" || Array.isArray(v) || typeof (v as RouteInfo).server_id !== "string") throw new Error("bad");
      info = v as RouteInfo;
    } catch {
      this.cluster.closeRoute(this, "Parse Error", "bad INFO JSON");
      return;
    }
    if (!this.connectDone) {
      this.cluster.closeRoute(this, "Protocol Violation", "INFO before CONNECT");
      return;
    }
    this.cluster.processInfo(this, info);
  }

  onConnect(json: string): void {
    if (this.didSolicit || this.connectDone) {
      // A second CONNECT, or one on a route we dialled: nats-server ignores neither.
      this.cluster.closeRoute(this, "Protocol Violation", "unexpected CONNECT");
      return;
    }
    this.cluster.processConnect(this, json);
  }

  onPing(): void {
    this.queueRaw(PONG);
  }

  onPong(): void {
    this.pingsOut = 0;
    if (this.rttStartMs > 0) {
      this.rttMs = this.cluster.clock.monoMs() - this.rttStartMs;
      this.rttStartMs = 0;
    }
    if (this.startNewRoute) {
      this.startNewRoute = false;
      this.cluster.routePong(this);
    }
  }

  /** Pin this route to account (its operations leave the account out from now on). */
  pin(account: string): void {
    this.account = account;
    this.parser.account = account;
  }

  onErr(text: string): void {
    this.cluster.log.error(`${this.label()} - Router Error ${text}`);
  }

  onSub(acc: string, subject: string, queue: string, weight: number): void {
    if (!this.connectDone) return this.cluster.closeRoute(this, "Protocol Violation", "RS+ before CONNECT");
    // Only a registered route's interest counts: a second connection to the same peer is
    // closed at its INFO, and must never make a message go out twice.
    if (!this.registered) return;
    this.cluster.remoteSub(this, acc, subject, queue, weight);
  }

  onUnsub(acc: string, subject: string, queue: string): void {
    if (!this.connectDone) return this.cluster.closeRoute(this, "Protocol Violation", "RS- before CONNECT");
    this.cluster.remoteUnsub(this, acc, subject, queue);
  }

  onMsg(acc: string, subject: string, reply: string, queues: string[] | null, hdr: Buffer | null, buf: Buffer, start: number, end: number): void {
    if (!this.connectDone) return this.cluster.closeRoute(this, "Protocol Violation", "RMSG before CONNECT");
    if (!this.registered) return;
    const size = end - start + (hdr !== null ? hdr.length : 0);
    this.inMsgs++;
    this.inBytes += size;
    this.cluster.inbound(this, acc, subject, reply, queues, hdr, buf, start, end, size);
  }

  onError(reason: string): void {
    this.cluster.closeRoute(this, "Protocol Violation", reason);
  }

  // ---- outbound ----

  /** RMSG/HMSG for subject, with queue groups to pick a member of (null: plain interest). */
  sendMsg(subject: string, reply: string, queues: readonly string[] | null, hdr: Buffer | null, buf: Buffer, start: number, end: number): void {
    if (this.closed) return;
    const useHdr = hdr !== null && this.headers;
    const hlen = useHdr ? hdr.length : 0;
    const plen = end - start;
    const total = hlen + plen;
    // "RMSG $G <subject> " as bytes, kept for the last subject (publishers repeat theirs); a
    // route pinned to the account leaves it out.
    let pre = this.lastPrefix;
    if (subject !== this.lastSubject || useHdr !== this.lastHdr || pre === null) {
      pre = this.lastPrefix = Buffer.from(`${useHdr ? "HMSG" : "RMSG"} ${this.account === "" ? "$G " : ""}${subject} `, "latin1");
      this.lastSubject = subject;
      this.lastHdr = useHdr;
    }
    let line = "";
    if (queues !== null && queues.length > 0) {
      line = reply.length > 0 ? `+ ${reply} ` : "| ";
      line += queues.join(" ") + " ";
    } else if (reply.length > 0) line = reply + " ";
    line += useHdr ? `${hlen} ${total}\r\n` : `${total}\r\n`;
    // Subjects are latin1 strings (the parsers decode bytes one to one): written back the same.
    const need = pre.length + line.length + total + 2;
    if (this.outLen + need > this.out.length) this.grow(need);
    const out = this.out;
    let p = this.outLen;
    p += pre.copy(out, p);
    p += out.write(line, p, "latin1");
    if (useHdr) p += hdr.copy(out, p);
    if (plen > 0) p += buf.copy(out, p, start, end);
    out[p++] = 13;
    out[p++] = 10;
    this.outLen = p;
    this.outMsgs++;
    this.outBytes += total;
    this.markDirty();
    if (p + this.socket.writableLength > this.cluster.maxPendingBytes) this.cluster.closeRoute(this, "Slow Consumer (Pending Bytes)", "slow route: pending bytes over max_pending");
  }

  /** One frame of the tsnats peer protocol: RMSG in the system account (subject under
   *  PEER_SUBJECT_PREFIX), payload as given. Only sent to peers that announced it. */
  sendSystem(subject: string, payload: Buffer): void {
    if (this.closed) return;
    const line = this.account === "" ? `RMSG ${SYSTEM_ACCOUNT} ${subject} ${payload.length}\r\n` : `RMSG ${subject} ${payload.length}\r\n`;
    const need = line.length + payload.length + 2;
    if (this.outLen + need > this.out.length) this.grow(need);
    const out = this.out;
    let p = this.outLen;
    p += out.write(line, p, "latin1");
    p += payload.copy(out, p);
    out[p++] = 13;
    out[p++] = 10;
    this.outLen = p;
    this.markDirty();
    if (p + this.socket.writableLength > this.cluster.maxPendingBytes) this.cluster.closeRoute(this, "Slow Consumer (Pending Bytes)", "slow route: pending bytes over max_pending");
  }

  /** sendSystem of the batch [u32 BE length][frame]... of frames[from, to) (size bytes in
   *  all), written straight into the outbound buffer (no batch buffer in between). */
  sendSystemFrames(subject: string, frames: readonly Uint8Array[], from: number, to: number, size: number): void {
    if (this.closed) return;
    const line = this.account === "" ? `RMSG ${SYSTEM_ACCOUNT} ${subject} ${size}\r\n` : `RMSG ${subject} ${size}\r\n`;
    const need = line.length + size + 2;
    if (this.outLen + need > this.out.length) this.grow(need);
    const out = this.out;
    let p = this.outLen;
    p += out.write(line, p, "latin1");
    for (let k = from; k < to; k++) {
      const f = frames[k]!;
      out.writeUInt32BE(f.length, p);
      out.set(f, p + 4);
      p += 4 + f.length;
    }
    out[p++] = 13;
    out[p++] = 10;
    this.outLen = p;
    this.markDirty();
    if (p + this.socket.writableLength > this.cluster.maxPendingBytes) this.cluster.closeRoute(this, "Slow Consumer (Pending Bytes)", "slow route: pending bytes over max_pending");
  }

  override queueString(s: string): void {
    if (this.cluster.traceEnabled) this.cluster.log.trace(`${this.label()} - ->> [${s.trimEnd().slice(0, 200)}]`);
    this.queueRaw(Buffer.from(s, "utf8"));
  }

  sendPing(): void {
    this.pingsOut++;
    this.lastPingMs = this.cluster.nowMs();
    if (this.rttStartMs === 0) this.rttStartMs = this.cluster.clock.monoMs();
    this.queueRaw(PING);
  }

  /** Close the socket after what is buffered (an -ERR) has gone out. */
  shut(): void {
    if (this.closed) return;
    this.closed = true;
    this.parser.stop();
    this.writeRemaining();
    this.release(this.cluster.clock);
  }
}
