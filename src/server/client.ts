// One client connection: the read loop feeds the parser; deliveries are encoded into one
// growable outbound buffer that the server flushes once per read (or per tick of the event
// loop), so a burst of messages becomes one socket write.

import { Parser, ProtoErrorKind, type ParserHandler } from "../protocol/parser.js";
import { isLiteral, isValidQueue, isValidSubject } from "../subjects/subject.js";
import { SplitMap } from "../subjects/splitmap.js";
import { authenticate, connectionTypeAllowed, newNonce, noAuthUserEntry, nonceRequired, permissionsOf } from "./auth.js";
import { InboundTrace } from "./trace-in.js";
import { ClientPermissions, goQuote, isGatewayReplySubject, isNrgSubject, isReservedReply, type Permissions } from "./permissions.js";
import { newSubscription, type Subscription, type SubOwner } from "./subscription.js";
import { mapCertUser } from "./tls.js";
import type { AckReply } from "../protocol/ackreply.js";
import type { Logger } from "../runtime/log.js";
import type { Clock } from "../runtime/clock.js";
import type { Scheduler } from "../runtime/sched.js";
import type { Sublist } from "../subjects/sublist.js";
import type { AuthorizationOptions, ServerOptions } from "./options.js";
import type { TlsSetup } from "./tls.js";
import { Conn, Origin, type ConnSocket, type OriginKind } from "./conn.js";

const PONG = Buffer.from("PONG\r\n");
const PING = Buffer.from("PING\r\n");
const OK = Buffer.from("+OK\r\n");
// nats-server sysGroup: the queue group of the server's own responders (JetStream direct get).
const SYS_GROUP = "_sys_";
// The outbound buffer: none until something is queued; the first one is small (an INFO, a
// PONG), doubled as deliveries need; a client that got nothing for a tick of the server's
// timer gives it back (releaseIdleBuffer), so an idle connection holds no outbound buffer.
const FIRST_OUT_BYTES = 1024;
// SUB and UNSUB a connection may send in one turn of the event loop before its parser
// yields until the next (Client.spendOp): a burst of 100k in one write otherwise ran ~300 ms
// without a break, as Node reads a socket up to 32 times in a row. 500 (~2.3 ms of SUBs):
// with 1,000 a bystander's PING p99 during 100k SUBs was 21-32 ms, with 500 13-18 ms, and
// the burst took no longer.
export const OPS_PER_TURN = 500;
// What one PUB to $JS.API. costs of that budget: a request is copied and queued (or, for a
// direct get, answered in place), several times a SUB's work, so a client writing thousands
// of API requests at once has its read yield every OPS_PER_TURN / API_OP_COST of them.
export const API_OP_COST = 2;
// Plain PUBs (and acks) are bounded by time instead: one costs ~50 ns with no interest and
// tens of microseconds when a stream stores it or thousands of subscribers get it. After each
// read, a connection that has spent READ_SLICE_MS in this turn stops reading until the next
// (the read was parsed whole: nothing to keep). Within a read, every PUB_CHECK_EVERY messages
// the parser asks (pubsRead): past PUB_SPLIT_MS the parser stops there and keeps the rest of
// the read (a copy), which only costly messages reach (a 64 KiB read of cheap ones is well
// under a millisecond). 5 / 8 ms rather than 2 / 4: each pause costs a turn with the socket
// stopped, and at 2 ms one fast publisher lost ~40% of its 1 KiB rate (2.0M instead of
// 3.3M msgs/s) and ~20% of pub -> sub; at 5 ms both are within noise of no bound.
export const READ_SLICE_MS = 5;
export const PUB_SPLIT_MS = 8;
// ... but not before this many reads in the turn: on a loaded machine a read can take
// READ_SLICE_MS of wall time by itself (the process was descheduled), and a pause and resume
// per 64 KiB read cost as much as handling it.
const READS_BEFORE_SLICE = 4;
// Work a connection's publishes may hand to internal handlers in one turn (Router.internalWork:
// one unit per message a stream stores, API request or ack taken, plus one per 4 KiB of it):
// past it, the parser stops after that message and the rest of the read waits for a later
// turn. Time alone bounded a flood to a stream at PUB_SPLIT_MS per read, but a turn holds
// several reads and the fsync rounds' PubAcks as well (10,000 PUBs to a file stream in one
// write kept a bystander's PING 10-28 ms on a warm server; nats-server 5-10 ms; now 4-6 ms).
// A unit costs ~1.5 us on a warm server, 512 of them ~0.8 ms (256 cost a fast publisher a
// third of its rate in turns; 1,024 gave no more rate and longer turns); code not yet
// optimised (a fresh server's first flood or first burst of API requests) costs ten to a
// hundred times that, so every WORK_CHECK_UNITS the turn's time is checked too, against
// WORK_SLICE_MS (every 64, a fresh server's first STREAM.INFO burst read 64 requests in
// 9-16 ms; every 16, at most 5-7 ms; a clock read per 16 units is well under 1% warm).
// WORK_SLICE_MS is 1, under the ~0.8 ms the unit cap takes warm, so it binds only cold code
// (2 before: with commit.ts's ACK_SLICE_MS also halved, a flood's bystander p99 6.3 -> 5.3 ms,
// median of six bench runs, publish rate within noise).
// Core publishes hand nothing to internal handlers and pay one compare each.
export const INTERNAL_WORK_PER_TURN = 512;
const WORK_CHECK_UNITS = 16;
const WORK_SLICE_MS = 1;
const NO_IDENTITIES: readonly string[] = Object.freeze([]);
const NO_SUBS = new SplitMap<Subscription>();
/** Deliveries to a subscription before its "<subject> <sid> " bytes are kept (deliverMsg):
 *  making them (Buffer.from) costs 0.9-1.3 us, and they save ~15 ns per delivery after. */
const WIRE_PREFIX_AFTER = 64;

/** What a Client needs of its transport (see ConnSocket). */
export type ClientConn = ConnSocket;

export const CloseReason = {
  ClientClosed: "Client Closed",
  ServerShutdown: "Server Shutdown",
  ProtocolViolation: "Protocol Violation",
  AuthViolation: "Authentication Failure",
  AuthTimeout: "Authentication Timeout",
  SlowConsumerPending: "Slow Consumer (Pending Bytes)",
  SlowConsumerDeadline: "Slow Consumer (Write Deadline)",
  StaleConnection: "Stale Connection",
  MaxPayload: "Maximum Message Payload Exceeded",
  MaxControlLine: "Maximum Control Line Exceeded",
  MaxConnections: "Maximum Connections Exceeded",
  ReadError: "Read Error",
  WriteError: "Write Error",
  LameDuck: "Lame Duck Mode",
  TlsHandshakeError: "TLS Handshake Failure",
} as const;
export type CloseReason = (typeof CloseReason)[keyof typeof CloseReason];

/** What a Client needs of the server (src/server/server.ts implements it). */
export interface ClientHost {
  readonly opts: ServerOptions;
  readonly log: Logger;
  readonly clock: Clock;
  readonly sched: Scheduler;
  readonly traceEnabled: boolean;
  readonly stats: { inMsgs: number; inBytes: number; outMsgs: number; outBytes: number; slowConsumers: number };
  readonly sublist: Sublist<Subscription>;
  /** Turns of the event loop in which some client spent its operation budget. */
  readonly turn: number;
  /** Units of work handed to internal handlers so far (never decreases). */
  readonly internalWork: number;
  nowMs(): number;
  armTurn(): void;
  authRequired(): boolean;
  authRequiredFor(c: Client): boolean;
  authFor(c: Client): AuthorizationOptions;
  noAuthUserFor(c: Client): string;
  tlsFor(c: Client): TlsSetup | null;
  infoJson(c: Client | null, ldm?: boolean, tlsRequired?: boolean): string;
  mappedSubject(subject: string): string | null;
  routeRange(from: Client | null, subject: string, reply: string, hdr: Buffer | null, buf: Buffer, start: number, end: number, shown: string, probe: boolean, ack: AckReply | null, queues: readonly string[] | null): void;
  routeAck(buf: Buffer, s0: number, s1: number, reply: string, pstart: number, pend: number): boolean;
  /** A subscription enters (+1) or leaves (-1) the index; routes hear of it. */
  updateSub(sub: Subscription, delta: 1 | -1): void;
  /** A closed connection's subscriptions (already marked closed) leave, in slices. */
  dropSubs(subs: Subscription[]): void;
  markDirty(c: Client): void;
  flushDirty(): void;
  clientClosed(c: Client): void;
}

export class Client extends Conn implements ParserHandler, SubOwner {
  /** Where messages it publishes come from (routeRange's one-hop rule). */
  readonly origin: OriginKind = Origin.Client;
  readonly parser: Parser;
  /** By sid; a connection that never subscribes shares one empty map (never written). Split
   *  past 4,096 (src/subjects/splitmap.ts): 100k SUBs in one write never rehash the whole
   *  table in one call. */
  subs: SplitMap<Subscription> = NO_SUBS;
  readonly startMs: number;
  readonly host: string;
  readonly port: number;

  // CONNECT options
  connected = false;
  verbose = false;
  pedantic = false;
  echo = true;
  headers = false;
  noResponders = false;
  name = "";
  lang = "";
  version = "";
  protocol = 0;
  user = "";
  /** TLS: the negotiated version ("1.3") and cipher suite (IANA name); "" for plaintext. */
  tlsVersion = "";
  tlsCipher = "";
  /** verify_and_map: the certificate's identities, in the order they are tried. */
  certIdentities: readonly string[] = NO_IDENTITIES;
  /** The nkey this client authenticated with ("" for other kinds of auth). */
  nkey = "";
  /** The challenge its INFO carried for nkey users to sign ("" when none was sent). */
  readonly nonce: string;
  /** null: no permissions, nothing is checked. */
  perms: ClientPermissions | null = null;
  /** perms with a publish allow or deny list (the one test on the PUB path). */
  private pubChecks = false;
  /** perms with allow_responses: deliveries with a reply grant it. */
  private tracksReplies = false;
  private firstPongSent = false;

  // stats
  inMsgs = 0;
  outMsgs = 0;
  inBytes = 0;
  outBytes = 0;
  lastActivityMs: number;
  lastInboundMs: number;
  pingsOut = 0;
  lastPingMs: number;
  rttMs = 0;
  private rttStartMs = 0;

  closeReason: CloseReason | "" = "";
  stopMs = 0;

  constructor(
    readonly cid: number,
    socket: ClientConn,
    private readonly server: ClientHost,
    /** "ws": a websocket client (src/server/websocket.ts), with the websocket authorization. */
    readonly kind: "client" | "ws" = "client",
  ) {
    super(socket, FIRST_OUT_BYTES);
    const now = server.nowMs();
    this.startMs = now;
    this.lastActivityMs = now;
    this.lastInboundMs = now;
    this.lastPingMs = now;
    // A dual-stack listener reports IPv4 peers as ::ffff:a.b.c.d.
    const ra = socket.remoteAddress ?? "";
    this.host = ra.startsWith("::ffff:") ? ra.slice(7) : ra;
    this.port = socket.remotePort ?? 0;
    const o = server.opts;
    this.parser = new Parser(this, {
      maxControlLineBytes: o.maxControlLineBytes,
      maxPayloadBytes: o.maxPayloadBytes,
    });
    this.nonce = nonceRequired(o.authorization) ? newNonce() : "";
    // Until CONNECT, the parser takes nothing but CONNECT (opBeforeConnect decides the rest).
    this.parser.awaitingConnect = server.authRequired();
  }

  // Per-turn operation budget (spendOp) and the yielded read (resumeRead).
  private turnOps = 0;
  private turnMark = -1;
  private turnStartMs = 0;
  private turnReads = 0;
  /** The server's internalWork at which this connection checks its turn's work (workSpent),
   *  and past which it yields. */
  private workLimit = 0;
  private workCap = 0;
  private readYielded = false;
  /** Messages of this client still being delivered a slice per turn (Router's fan-out):
   *  its reads wait for them, so that its later messages come after. */
  private fanoutHolds = 0;
  /** resumeRead for nextTurn, made on the first yield (most connections never yield). */
  private resumeBound: (() => void) | null = null;

  protected nowMs(): number {
    return this.server.nowMs();
  }

  protected scheduleFlush(): void {
    this.server.markDirty(this);
  }

  protected tracingOut(): boolean {
    return this.server.traceEnabled;
  }

  /** A read of an adopted plain socket (ChunkReader): parsed, then what it caused flushed. */
  onRead(chunk: Buffer): void {
    this.onData(chunk);
    this.server.flushDirty();
  }

  onData(chunk: Buffer): void {
    this.inBytesRaw += chunk.length;
    const now = this.server.nowMs();
    this.lastInboundMs = now;
    this.lastActivityMs = now;
    if (this.server.traceEnabled) this.traceIn(chunk);
    const t = this.server.turn;
    if (this.turnMark !== t) this.markTurn(t);
    this.parser.parse(chunk);
    if (this.parser.isYielded || (++this.turnReads >= READS_BEFORE_SLICE && this.server.clock.monoMs() - this.turnStartMs >= READ_SLICE_MS)) this.yieldRead();
  }

  /** One SUB or UNSUB (a JetStream API request costs API_OP_COST): past OPS_PER_TURN in
   *  this turn, the parser stops after it and the rest waits for a later turn, so other
   *  connections are served in between. */
  private spendOp(cost = 1): void {
    const t = this.server.turn;
    if (this.turnMark !== t) this.markTurn(t);
    if ((this.turnOps += cost) >= OPS_PER_TURN) this.parser.yieldTurn();
  }

  /** PUB_CHECK_EVERY messages were published (Parser): past PUB_SPLIT_MS of this turn, the
   *  parser stops after them, as in spendOp. */
  pubsRead(): void {
    const t = this.server.turn;
    if (this.turnMark !== t) this.markTurn(t);
    else if (this.server.clock.monoMs() - this.turnStartMs >= PUB_SPLIT_MS) this.parser.yieldTurn();
  }

  /** The first operation counted in turn t. */
  private markTurn(t: number): void {
    this.turnMark = t;
    this.turnOps = 0;
    this.turnReads = 0;
    this.turnStartMs = this.server.clock.monoMs();
    const w = this.server.internalWork;
    this.workLimit = w + WORK_CHECK_UNITS;
    this.workCap = w + INTERNAL_WORK_PER_TURN;
    this.server.armTurn();
  }

  /** Stop reading until a later turn (a yielded parser keeps what it has not parsed). */
  private yieldRead(): void {
    if (this.readYielded || this.closed) return;
    this.readYielded = true;
    this.socket.pause?.();
    this.server.sched.nextTurn((this.resumeBound ??= () => this.resumeRead()));
  }

  /** A message of this client is being delivered over several turns: the parser stops after
   *  it and reads wait until releaseReads. */
  holdReads(): void {
    this.fanoutHolds++;
    this.parser.yieldTurn();
  }

  releaseReads(): void {
    if (--this.fanoutHolds > 0 || !this.readYielded || this.closed) return;
    this.server.sched.nextTurn((this.resumeBound ??= () => this.resumeRead()));
  }

  private resumeRead(): void {
    // Held by a fan-out (releaseReads schedules this again), or already resumed.
    if (this.fanoutHolds > 0 || !this.readYielded) return;
    this.readYielded = false;
    if (this.closed) return;
    const t = this.server.turn;
    if (this.turnMark !== t) this.markTurn(t);
    const again = this.parser.resume();
    this.server.flushDirty();
    if (this.closed) return;
    if (again) {
      this.readYielded = true;
      this.server.sched.nextTurn(this.resumeBound!);
      return;
    }
    this.socket.resume?.();
  }
  inBytesRaw = 0;

  /** Trace only: cuts the reads into lines (made when tracing is on). */
  private inTrace: InboundTrace | null = null;

  private traceIn(chunk: Buffer): void {
    for (const shown of (this.inTrace ??= new InboundTrace()).lines(chunk)) {
      this.server.log.trace(`${this.label()} - <<- [${shown.length > 200 ? shown.slice(0, 200) + "..." : shown}]`);
    }
  }

  label(): string {
    return `${this.host}:${this.port} - ${this.kind === "ws" ? "wid" : "cid"}:${this.cid}`;
  }

  // ---- ParserHandler ----

  processConnect(json: string): void {
    let c: Record<string, unknown>;
    try {
      const v: unknown = JSON.parse(json);
      if (v === null || typeof v !== "object" || Array.isArray(v)) throw new Error("not an object");
      c = v as Record<string, unknown>;
    } catch {
      // nats-server closes on undecodable CONNECT JSON without an -ERR.
      this.server.log.debug(`${this.label()} - bad CONNECT JSON`);
      this.close(CloseReason.ProtocolViolation);
      return;
    }
    // nats-server pre-fills verbose and pedantic with true before decoding CONNECT.
    this.verbose = c["verbose"] === undefined ? true : c["verbose"] === true;
    this.pedantic = c["pedantic"] === undefined ? true : c["pedantic"] === true;
    this.echo = c["echo"] === undefined ? true : c["echo"] !== false;
    this.headers = c["headers"] === true;
    this.noResponders = c["no_responders"] === true;
    this.name = typeof c["name"] === "string" ? c["name"] : "";
    this.lang = typeof c["lang"] === "string" ? c["lang"] : "";
    this.version = typeof c["version"] === "string" ? c["version"] : "";
    this.protocol = typeof c["protocol"] === "number" ? c["protocol"] : 0;
    if (this.protocol < 0 || this.protocol > 1) {
      this.sendErr("invalid client protocol");
      this.close(CloseReason.ProtocolViolation);
      return;
    }
    if (this.noResponders && !this.headers) {
      this.sendErr("no responders requires headers support");
      this.close(CloseReason.ProtocolViolation);
      return;
    }
    if (c["account"] !== undefined || c["new_account"] !== undefined) {
      this.authFailed();
      return;
    }
    if (this.server.authRequiredFor(this)) {
      const a = this.server.authFor(this);
      // verify_and_map: the certificate names the user; the CONNECT credentials do not count.
      const t = this.server.tlsFor(this);
      const user = t !== null && t.opts.verifyAndMap ? mapCertUser(a.users, this.certIdentities) : authenticate(a, c, this.server.noAuthUserFor(this), this.nonce);
      if (user === null) {
        // nats-server names the nkey or the user, never what proved it.
        const who = typeof c["nkey"] === "string" && c["nkey"] !== "" ? `Nkey ${goQuote(c["nkey"])}` : `User ${goQuote(typeof c["user"] === "string" ? c["user"] : "")}`;
        this.server.log.error(`${this.label()} - authentication error - ${who}`);
        this.authFailed();
        return;
      }
      if (!connectionTypeAllowed(a, user, this.kind === "ws" ? "WEBSOCKET" : "STANDARD")) {
        this.server.log.error(`${this.label()} - authentication error - connection type not allowed for ${goQuote(user)}`);
        this.authFailed();
        return;
      }
      this.user = user;
      if (typeof c["nkey"] === "string" && c["nkey"] === user && user !== "") this.nkey = user;
      this.setPermissions(permissionsOf(a, user));
    }
    this.parser.headers = this.headers;
    this.parser.awaitingConnect = false;
    this.connected = true;
    if (this.verbose) this.queueRaw(OK);
  }

  private authFailed(): void {
    this.sendErr("Authorization Violation");
    this.close(CloseReason.AuthViolation);
  }

  /** The parser met an operation other than CONNECT first while auth is required: with a
   *  no_auth_user, nats-server logs the connection in as that user and goes on (telnet
   *  demos); otherwise 'Authorization Violation'. */
  opBeforeConnect(): boolean {
    const entry = noAuthUserEntry(this.server.opts.authorization, this.server.opts.noAuthUser);
    if (entry === null) return false;
    this.user = entry.user;
    this.setPermissions(entry.permissions);
    this.parser.awaitingConnect = false;
    this.connected = true;
    return true;
  }

  private requireConnect(): boolean {
    if (this.connected || !this.server.authRequiredFor(this)) return true;
    this.authFailed();
    return false;
  }

  processPub(subject: string, reply: string, hdr: Buffer | null, buf: Buffer, start: number, end: number): void {
    if (!this.requireConnect()) return;
    this.countIn(end - start + (hdr ? hdr.length : 0));
    // Pedantic clients are told about a non-literal subject; the message still flows.
    if (this.pedantic && !(isValidSubject(subject) && isLiteral(subject))) this.sendErr("Invalid Publish Subject");
    // Reserved subjects start with '_' or '$': two compares for every other publish.
    const reserved = mayBeReserved(subject);
    if (this.pubChecks || reserved || (reply.length > 0 && mayBeReserved(reply))) {
      if (this.publishRefused(subject, reply)) return;
    }
    if (this.verbose) this.queueRaw(OK);
    // Mappings (the JetStream domain's) only concern $ subjects; permissions were checked
    // on the subject as published, as nats-server does.
    if (reserved) {
      subject = this.server.mappedSubject(subject) ?? subject;
      if (subject.startsWith("$JS.API.")) this.spendOp(API_OP_COST);
    }
    this.server.routeRange(this, subject, reply, hdr, buf, start, end, subject, false, null, null);
    if (this.server.internalWork >= this.workLimit) this.workSpent();
  }

  /** A plain PUB whose subject buf[s0, s1) starts with "$JS.ACK." (see Server.routeAck); true
   *  when handled, false to take processPub's way (which then does every check). What the
   *  consumer takes is "$JS.ACK.<stream>.<consumer>." and five tokens of digits: a literal,
   *  valid subject, so the pedantic check and the reserved-subject rules have nothing to say;
   *  permissions and verbose +OK go the usual way. */
  processAckPub(buf: Buffer, s0: number, s1: number, reply: string, start: number, end: number): boolean {
    if (this.pubChecks || this.verbose || !this.connected) return false;
    if (reply.length > 0 && mayBeReserved(reply)) return false;
    if (!this.server.routeAck(buf, s0, s1, reply, start, end)) return false;
    this.countIn(end - start);
    if (this.server.internalWork >= this.workLimit) this.workSpent();
    return true;
  }

  /** WORK_CHECK_UNITS more were handed to internal handlers: the parser stops after this
   *  message once this turn's INTERNAL_WORK_PER_TURN or WORK_SLICE_MS is spent (a
   *  connection's first publish in a turn only starts the count). */
  private workSpent(): void {
    const t = this.server.turn;
    if (this.turnMark !== t) return this.markTurn(t);
    const w = this.server.internalWork;
    if (w >= this.workCap || this.server.clock.monoMs() - this.turnStartMs >= WORK_SLICE_MS) this.parser.yieldTurn();
    else this.workLimit = w + WORK_CHECK_UNITS;
  }

  /** One inbound message of size bytes, for this connection's and the server's counters. */
  private countIn(size: number): void {
    this.inMsgs++;
    this.inBytes += size;
    this.server.stats.inMsgs++;
    this.server.stats.inBytes += size;
  }

  processSub(subject: string, queue: string, sid: string): void {
    this.spendOp();
    if (!this.requireConnect()) return;
    if (!isValidSubject(subject) || (queue !== "" && !isValidQueue(queue))) {
      this.sendErr("Invalid Subject");
      return;
    }
    // nats-server order: permissions (and the reserved queue group), then the limit, then a
    // repeated sid.
    if ((queue !== "" && queue === SYS_GROUP) || (this.perms !== null && !this.perms.canSubscribe(subject, queue))) {
      this.subPermissionViolation(subject, queue, sid);
      return;
    }
    const maxSubs = this.server.opts.maxSubs;
    if (maxSubs > 0 && this.subs.size >= maxSubs) {
      this.server.log.error(`${this.label()} - maximum subscriptions exceeded`);
      this.sendErr("maximum subscriptions exceeded");
      return;
    }
    if (this.subs.has(sid)) {
      if (this.verbose) this.queueRaw(OK);
      return;
    }
    const sub = newSubscription(this, subject, queue, sid);
    if (this.perms !== null) sub.denyFilter = this.perms.filterFor(subject, queue);
    if (this.subs === NO_SUBS) this.subs = new SplitMap();
    this.subs.set(sid, sub);
    this.server.updateSub(sub, 1);
    if (this.verbose) this.queueRaw(OK);
  }

  processUnsub(sid: string, max: number): void {
    this.spendOp();
    if (!this.requireConnect()) return;
    const sub = this.subs.get(sid);
    if (sub) {
      if (max > 0 && sub.delivered < max) {
        sub.max = max;
      } else {
        this.removeSub(sub);
      }
    }
    if (this.verbose) this.queueRaw(OK);
  }

  processPing(): void {
    if (!this.requireConnect()) return;
    this.queueRaw(PONG);
    // nats-server 2.12: the first PONG after CONNECT is followed by an INFO with
    // connect_info and the bound account, for clients that take async INFO (protocol 1).
    if (!this.firstPongSent && this.connected) {
      this.firstPongSent = true;
      if (this.protocol >= 1) {
        const info = this.server.infoJson(this);
        this.queueString(`INFO ${info.slice(0, -1)},"connect_info":true,"remote_account":"$G"}\r\n`);
      }
    }
  }

  // ---- permissions ----

  /** Installs a user's permissions (CONNECT, config reload). */
  setPermissions(p: Permissions | null): void {
    this.perms = p === null ? null : new ClientPermissions(p);
    this.pubChecks = this.perms !== null && this.perms.checksPublish;
    this.tracksReplies = this.perms !== null && this.perms.replies !== null;
  }

  /** After a reload: new permissions, and subscriptions they no longer allow are removed
   *  with an -ERR naming the sid (nats-server processSubsOnConfigReload). */
  reloadPermissions(p: Permissions | null): void {
    this.setPermissions(p);
    const perms = this.perms;
    for (const sub of [...this.subs.values()]) {
      if (perms !== null && !perms.canSubscribe(sub.subject, sub.queue)) {
        this.removeSub(sub);
        const q = sub.queue !== "" ? ` using queue ${goQuote(sub.queue)}` : "";
        this.sendErr(`Permissions Violation for Subscription to ${goQuote(sub.subject)}${q} (sid ${goQuote(sub.sid)})`);
        this.server.log.info(`Removed sub ${goQuote(sub.subject)}${q} (sid ${goQuote(sub.sid)}) for ${this.user} - not authorized`);
        continue;
      }
      sub.denyFilter = perms !== null ? perms.filterFor(sub.subject, sub.queue) : null;
    }
  }

  /** The checks of nats-server processInboundClientMsg, in its order; true = dropped (the
   *  connection stays open). */
  private publishRefused(subject: string, reply: string): boolean {
    if (isGatewayReplySubject(subject)) return this.pubPermissionViolation(subject);
    if (this.pubChecks && !this.perms!.pubAllowed(subject, this.server.nowMs())) return this.pubPermissionViolation(subject);
    if (isNrgSubject(subject)) return this.pubPermissionViolation(subject);
    if (reply.length > 0 && isReservedReply(reply)) {
      this.sendErr(`Permissions Violation for Publish with Reply of ${goQuote(reply)}`);
      this.server.log.error(`${this.label()} - Publish Violation - Reply ${goQuote(reply)}`);
      return true;
    }
    return false;
  }

  private pubPermissionViolation(subject: string): true {
    this.sendErr(`Permissions Violation for Publish to ${goQuote(subject)}`);
    this.server.log.error(`${this.label()} - Publish Violation - Subject ${goQuote(subject)}`);
    return true;
  }

  private subPermissionViolation(subject: string, queue: string, sid: string): void {
    if (queue !== "") {
      this.sendErr(`Permissions Violation for Subscription to ${goQuote(subject)} using queue ${goQuote(queue)}`);
      this.server.log.error(`${this.label()} - Subscription Violation - Subject ${goQuote(subject)}, Queue: ${goQuote(queue)}, SID ${sid}`);
    } else {
      this.sendErr(`Permissions Violation for Subscription to ${goQuote(subject)}`);
      this.server.log.error(`${this.label()} - Subscription Violation - Subject ${goQuote(subject)}, SID ${sid}`);
    }
  }

  processPong(): void {
    this.pingsOut = 0;
    if (this.rttStartMs > 0) {
      this.rttMs = this.server.nowMs() - this.rttStartMs;
      this.rttStartMs = 0;
    }
  }

  protocolError(kind: ProtoErrorKind, detail: string): void {
    switch (kind) {
      case ProtoErrorKind.MaxControlLine:
        this.sendErr("maximum control line exceeded"); // nats-server's exact (lower-case) text
        this.close(CloseReason.MaxControlLine);
        return;
      case ProtoErrorKind.MaxPayload:
        this.sendErr("Maximum Payload Violation");
        this.close(CloseReason.MaxPayload);
        return;
      case ProtoErrorKind.NotConnected:
        this.server.log.error(`${this.label()} - authentication error - no CONNECT`);
        this.authFailed();
        return;
      case ProtoErrorKind.UnknownOp:
        if (!this.connected && this.server.authRequiredFor(this)) {
          this.authFailed();
          return;
        }
        this.sendErr("Unknown Protocol Operation");
        this.close(CloseReason.ProtocolViolation);
        return;
      case ProtoErrorKind.BadArgs:
      case ProtoErrorKind.HeadersNotNegotiated:
        // nats-server closes these without an -ERR.
        this.server.log.debug(`${this.label()} - ${detail}`);
        this.close(CloseReason.ProtocolViolation);
        return;
    }
  }

  // ---- delivery ----

  removeSub(sub: Subscription): void {
    if (sub.closed) return;
    sub.closed = true;
    this.subs.delete(sub.sid);
    this.server.updateSub(sub, -1);
  }

  deliverMsg(sub: Subscription, subject: string, reply: string, hdr: Buffer | null, buf: Buffer, start: number, end: number, ack: AckReply | null): void {
    if (this.closed || sub.closed) return;
    if (sub.max > 0 && sub.delivered >= sub.max) return;
    sub.delivered++;
    const useHdr = hdr !== null && this.headers;
    const hlen = useHdr ? hdr.length : 0;
    const plen = end - start;
    const total = hlen + plen;
    // Control line: "HMSG " subject " " sid " " reply " " hlen " " total "\r\n". Short ASCII
    // strings are copied with a charCodeAt loop: Buffer.write costs more in its JS/C++
    // wrappers than the copy itself.
    const sid = sub.sid;
    const rlen = ack !== null ? ack.length() : reply.length;
    const need = 24 + subject.length + sid.length + rlen + 2 * 12 + total;
    if (this.outLen + need > this.out.length) this.grow(need);
    const out = this.out;
    let p = this.outLen;
    if (useHdr) out[p++] = 72; // H
    out[p++] = 77; // M
    out[p++] = 83; // S
    out[p++] = 71; // G
    out[p++] = 32;
    // "<subject> <sid> " is the same for every message a literal subscription gets: kept as
    // bytes on the subscription (wireSubject is the subject they were made for), once it has
    // had enough messages to pay for them. Not before: a Buffer per subscription for 100k
    // subscriptions that each get a few messages (a fan-out, inboxes) was a third of the
    // first fan-out's time, and ~100 B each.
    if (subject === sub.wireSubject && sub.delivered > WIRE_PREFIX_AFTER) {
      sub.wireSubject = subject; // the caller's string object: the next compare is by identity
      let w = sub.wirePrefix;
      if (w === null) w = sub.wirePrefix = Buffer.from(`${subject} ${sid} `, "latin1");
      p = putBytes(out, p, w);
    } else {
      p = putLatin1(out, p, subject);
      out[p++] = 32;
      p = putLatin1(out, p, sid);
      out[p++] = 32;
    }
    if (ack !== null) {
      p = ack.writeTo(out, p);
      out[p++] = 32;
    } else if (reply.length > 0) {
      p = putLatin1(out, p, reply);
      out[p++] = 32;
    }
    if (useHdr) {
      p = putDecimal(out, p, hlen);
      out[p++] = 32;
    }
    p = putDecimal(out, p, total);
    out[p++] = 13;
    out[p++] = 10;
    if (useHdr) p = putBytes(out, p, hdr);
    p = putRange(out, p, buf, start, end);
    out[p++] = 13;
    out[p++] = 10;
    this.outLen = p;
    this.outMsgs++;
    this.outBytes += total;
    const st = this.server.stats;
    st.outMsgs++;
    st.outBytes += total;
    if (sub.max > 0 && sub.delivered >= sub.max) this.removeSub(sub);
    if (this.tracksReplies && rlen > 0) this.perms!.trackReply(ack !== null ? ack.toString() : reply, this.server.nowMs());
    if (!this.dirty) this.markDirty();
    if (p + this.socket.writableLength > this.server.opts.maxPendingBytes) this.slowConsumer(CloseReason.SlowConsumerPending);
  }

  sendErr(text: string): void {
    if (this.server.traceEnabled) this.server.log.trace(`${this.label()} - ->> [-ERR '${text}']`);
    this.queueString(`-ERR '${text}'\r\n`);
  }

  sendPing(): void {
    this.pingsOut++;
    this.lastPingMs = this.server.nowMs();
    if (this.rttStartMs === 0) this.rttStartMs = this.lastPingMs;
    this.queueRaw(PING);
  }

  protected traceOut(chunk: Buffer): void {
    const text = chunk.toString("latin1", 0, Math.min(chunk.length, 4096));
    for (const line of text.split("\r\n")) if (line.length > 0) this.server.log.trace(`${this.label()} - ->> [${line.length > 200 ? line.slice(0, 200) + "..." : line}]`);
  }

  slowConsumer(reason: CloseReason): void {
    if (this.closed) return;
    this.server.stats.slowConsumers++;
    this.server.log.warn(`${this.label()} - Slow Consumer Detected: ${reason === CloseReason.SlowConsumerPending ? "MaxPending of " + String(this.server.opts.maxPendingBytes) + " Exceeded" : "WriteDeadline of " + String(this.server.opts.writeDeadlineMs) + "ms Exceeded"}`);
    // nats-server closes without -ERR; tsnats still tries a best-effort -ERR so a client
    // that does read learns why (it bypasses the outbound bound on purpose).
    this.writeBypassing("-ERR 'Slow Consumer'\r\n");
    this.close(reason);
  }

  /** Close the connection and remove its subscriptions. Idempotent. */
  close(reason: CloseReason): void {
    if (this.closed) return;
    // Push out what is buffered (an -ERR, a PONG) before closing.
    this.writeRemaining();
    this.closed = true;
    this.closeReason = reason;
    this.stopMs = this.server.nowMs();
    this.parser.stop();
    // Nothing is delivered to a closed subscription; routes hear at once that the interest
    // is gone; they leave the index OPS_PER_TURN per turn (Server.dropSubs).
    const list = [...this.subs.values()];
    for (const sub of list) sub.closed = true;
    this.server.dropSubs(list);
    this.server.clientClosed(this);
    // Read nothing more (a peer that ignores the -ERR could push any amount), and let the
    // socket go once the last bytes are out: until then it counts against max_connections.
    this.release(this.server.clock);
  }

  infoFor(): string {
    return this.server.infoJson(this);
  }
}

/** Could the subject be reserved (isGatewayReplySubject, isNrgSubject, isReservedReply)? All start
 *  with '_' or '$'. */
function mayBeReserved(s: string): boolean {
  const c = s.charCodeAt(0);
  return c === 95 || c === 36;
}

// Strings on the wire here are subjects, sids and sizes: latin1, short.
function putLatin1(out: Buffer, p: number, s: string): number {
  const n = s.length;
  if (n > 64) return p + out.write(s, p, "latin1");
  for (let i = 0; i < n; i++) out[p + i] = s.charCodeAt(i);
  return p + n;
}

// v is a size: a non-negative integer below 2^31, so `| 0` truncates like Math.floor.
function putDecimal(out: Buffer, p: number, v: number): number {
  if (v < 10) {
    out[p] = 48 + v;
    return p + 1;
  }
  if (v < 100) {
    const t = (v / 10) | 0;
    out[p] = 48 + t;
    out[p + 1] = 48 + v - t * 10;
    return p + 2;
  }
  let digits = 3;
  for (let t = v; t >= 1000; t = (t / 10) | 0) digits++;
  let q = p + digits - 1;
  for (let t = v; q >= p; ) {
    const d = (t / 10) | 0;
    out[q--] = 48 + t - d * 10;
    t = d;
  }
  return p + digits;
}

// Small copies by hand: Buffer.copy's argument checks dominate for a few dozen bytes.
function putRange(out: Buffer, p: number, b: Buffer, start: number, end: number): number {
  const n = end - start;
  if (n <= 32) {
    for (let i = 0; i < n; i++) out[p + i] = b[start + i]!;
  } else {
    out.set(b.subarray(start, end), p);
  }
  return p + n;
}

function putBytes(out: Buffer, p: number, b: Buffer): number {
  const n = b.length;
  if (n <= 32) {
    for (let i = 0; i < n; i++) out[p + i] = b[i]!;
  } else {
    out.set(b, p);
  }
  return p + n;
}
