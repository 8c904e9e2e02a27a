// Routing: the subscription index and the one path every message takes to its
// subscribers (Router.routeRange), whoever sent it: a client, a route (the one-hop rule: a
// routed message reaches local routable subscriptions only, never another route, and the
// queue groups its RMSG names), or an internal publisher (JetStream). Subscriptions enter and
// leave the index only through updateSub/dropSubs, which also tell the cluster about the
// routable ones (routes announce RS+/RS-): every client's, and internal ones subscribed with
// `cluster: true`. The Bus that JetStream talks to is implemented here. Server (server.ts)
// extends Router.

import { randomBytes } from "node:crypto";
import { Sublist, type SublistResult } from "../subjects/sublist.js";
import { newSubscription, type Subscription, type SubOwner } from "./subscription.js";
import type { AckBytesHandler, Bus, BusSubscribeOptions, InternalHandler, InternalSubscription } from "../contracts/bus.js";
import type { AckReply } from "../protocol/ackreply.js";
import { inReadBuffer } from "../runtime/net.js";
import type { Clock } from "../runtime/clock.js";
import type { Scheduler } from "../runtime/sched.js";
import type { Random } from "../runtime/random.js";
import type { ServerOptions } from "./options.js";
import type { Client } from "./client.js";
import { Origin, type OriginKind } from "./conn.js";

export interface ServerStats {
  inMsgs: number;
  outMsgs: number;
  inBytes: number;
  outBytes: number;
  slowConsumers: number;
  totalConnections: number;
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
  /** A routable subscription (a client's, or an internal one with cluster: true) was added
   *  (+1) or removed (-1). */
  localInterest(sub: Subscription, delta: 1 | -1): void;
  hasRemoteInterest(subject: string): boolean;
  /** A peer announced a member of queue group `queue` matching subject. */
  hasRemoteQueueInterest(subject: string, queue: string): boolean;
  /** Moves whenever the peers' interest changes (the ack fast path rechecks on a move). */
  readonly remoteGen: number;
  /** Hand what routes have buffered to their sockets. */
  flushRoutes(): void;
  /** This server enters lame duck mode: peers drop its client URLs. */
  lameDuck(): void;
  /** connect_urls for clients. */
  clientUrls(websocket?: boolean): string[];
  varz(): Record<string, unknown>;
  routez(opts: RoutezOptions): Record<string, unknown>;
}

/** Who routed a message (routeRange): a client or a route; null for an internal publisher. */
export interface Sender {
  readonly origin: OriginKind;
  readonly cid: number;
  readonly echo: boolean;
  readonly noResponders: boolean;
}

/** A connection whose reads a fan-out can hold (a client, a route): its messages after the
 *  one being delivered wait until releaseReads. */
export interface HeldSender extends Sender {
  holdReads(): void;
  releaseReads(): void;
}

const NO_RESPONDERS_HDR = "NATS/1.0 503\r\n";

/** JetStream deliveries pause (deliverAs returns true) past this many queued bytes. */
const DELIVER_BACKLOG_PAUSE_BYTES = 1024 * 1024;

/** A consumer's ack subscription that plain client acks may reach without routing. */
interface AckRoute {
  readonly prefix: string; // "$JS.ACK.<stream>.<consumer>."
  readonly key: Buffer; // the bytes of prefix after "$JS.ACK."
  readonly sub: Subscription;
  readonly onBytes: AckBytesHandler;
  /** A subject of an ack's depth under prefix, to ask the routes' interest about. */
  readonly probe: string;
  gen: number; // sublist.gen when sole was decided
  rgen: number; // the cluster's remoteGen then (-1: no cluster)
  sole: boolean; // sub is the only subscription any prefix... subject matches, here and on routes
}

const ACK_PFX_LEN = "$JS.ACK.".length;

/** A client's message to more plain subscriptions than this is delivered to this many per
 *  turn (FanoutRest), its publisher's reads held meanwhile: one PUB to 100k subscriptions
 *  was ~40 ms in one go, ten of them in one write held the loop 420 ms. */
const FANOUT_SLICE = 4096;

/** The rest of one client message's plain subscriptions, delivered a slice per turn. */
interface FanoutRest {
  readonly from: HeldSender;
  /** It came over a route: only routable subscriptions take it. */
  readonly fromRoute: boolean;
  readonly subs: Subscription[];
  next: number;
  readonly subject: string;
  readonly shown: string;
  readonly reply: string;
  readonly hdr: Buffer | null;
  readonly payload: Buffer;
  /** The publisher's connection when it asked for no echo; -1: none. */
  readonly noEchoCid: number;
}

/** Where internal deliveries are counted (Router.internalWork). */
interface WorkMeter {
  internalWork: number;
}

/** A message handed to an internal handler counts one unit of internalWork, plus one per
 *  this many bytes of it (4 KiB): a file stream stores a small message in ~1.5 us on a warm
 *  server, and 8 KiB ones cost about three times a small one, publish to PubAck. */
const WORK_UNIT_BYTES_LOG2 = 12;

class InternalOwner implements SubOwner {
  readonly cid = 0;
  readonly echo = true;
  constructor(
    private readonly handler: InternalHandler,
    private readonly borrow: boolean,
    private readonly meter: WorkMeter,
  ) {}
  deliverMsg(sub: Subscription, subject: string, reply: string, hdr: Buffer | null, buf: Buffer, start: number, end: number, ack: AckReply | null): void {
    if (sub.closed) return;
    sub.delivered++;
    this.meter.internalWork += 1 + ((end - start) >>> WORK_UNIT_BYTES_LOG2);
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

export abstract class Router implements Bus {
  /** Internal subscriptions made with `cluster: true`, for the cluster to announce when it
   *  starts after them (the clustered $JS.API is subscribed while the cluster is made). */
  protected readonly routableInternal = new Set<Subscription>();
  readonly sublist = new Sublist<Subscription>();
  readonly stats: ServerStats = { inMsgs: 0, outMsgs: 0, inBytes: 0, outBytes: 0, slowConsumers: 0, totalConnections: 0 };
  /** Cluster routes; null without a cluster block. */
  cluster: ClusterLike | null = null;
  abstract opts: ServerOptions;
  private dirtyClients: Client[] = [];
  private flushScheduled = false;
  private readonly flushBound = (): void => this.flushDirty();
  /** Turns of the event loop in which some client spent its operation budget
   *  (Client.spendOp): advanced on the next turn, after the reads of the turn. */
  turn = 0;
  /** Units of work handed to internal handlers (JetStream: a stream storing a message, an
   *  API request, a consumer's ack), counted by InternalOwner and routeAck, only ever
   *  increasing: a client compares it with the limit it took at the start of its turn
   *  (Client.workLimit), so a flood of publishes to a stream yields its read. */
  internalWork = 0;
  private turnArmed = false;
  private readonly nextTurnBound = (): void => {
    this.turnArmed = false;
    this.turn++;
  };
  private readonly nuidPrefix = randomBytes(6).toString("hex");

  constructor(
    readonly clock: Clock,
    readonly sched: Scheduler,
    readonly random: Random,
  ) {}

  // ---- subscriptions: the one place they change ----

  /** A subscription enters (+1) or leaves (-1) the index. Routes hear of a routable one
   *  (RS+ / RS-): a client's, or an internal one subscribed with `cluster: true`. */
  updateSub(sub: Subscription, delta: 1 | -1): void {
    if (delta > 0) this.sublist.insert(sub);
    else this.sublist.remove(sub);
    if (sub.routable && sub.owner.cid === 0) {
      if (delta > 0) this.routableInternal.add(sub);
      else this.routableInternal.delete(sub);
    }
    const cl = this.cluster;
    if (cl !== null && sub.routable) cl.localInterest(sub, delta);
  }

  /** A closed connection's subscriptions (already marked closed, so nothing reaches them):
   *  routes hear at once that the interest is gone; the index lets them go OPS_PER_TURN per
   *  turn (a connection with 100k subscriptions took ~70 ms in one go). */
  dropSubs(subs: Subscription[]): void {
    const cl = this.cluster;
    if (cl !== null) for (let i = 0; i < subs.length; i++) if (subs[i]!.routable) cl.localInterest(subs[i]!, -1);
    this.unindex(subs, 0);
  }

  private unindex(list: Subscription[], from: number): void {
    const end = Math.min(list.length, from + DROP_PER_TURN);
    for (let i = from; i < end; i++) this.sublist.remove(list[i]!);
    if (end < list.length) this.sched.nextTurn(() => this.unindex(list, end));
  }

  // ---- routing ----

  /** Largest outbound backlog among the receivers of the last probing route (deliverAs). */
  private routeBacklogBytes = 0;
  /** Subject mapping of client publishes (mapSubjects): "" none. */
  private mapPrefix = "";
  private mapFn: ((subject: string) => string | null) | null = null;

  /** Route one message to every matching subscription (one member per queue group).
   *  probe: record the receivers' largest outbound backlog in routeBacklogBytes. */
  route(from: Sender | null, subject: string, reply: string, hdr: Buffer | null, payload: Buffer, shown = subject, probe = false): void {
    this.routeRange(from, subject, reply, hdr, payload, 0, payload.length, shown, probe, null, null);
  }

  /**
   * route() with the payload as buf[start, end): client publishes hand in the read buffer,
   * so no view is made per message. from: the client or route it came from, null for an
   * internal publisher. A message from a route follows the one-hop rule: local routable
   * subscriptions only (a client's, or an internal `cluster: true` one; never another
   * route), and of the queue groups
   * only those named in queues (the RMSG's), one local member each. Otherwise, with routes,
   * queue groups are picked cluster-wide and routes get their copies (Cluster.forward).
   */
  routeRange(from: Sender | null, subject: string, reply: string, hdr: Buffer | null, buf: Buffer, start: number, end: number, shown: string, probe: boolean, ack: AckReply | null, queues: readonly string[] | null): void {
    const r: SublistResult<Subscription> = this.sublist.match(subject);
    let delivered = 0;
    const noEcho = from !== null && !from.echo;
    const fromRoute = from !== null && from.origin === Origin.Route;
    const ps = r.psubs;
    let n = ps.length;
    // A client's or a route's message to very many subscriptions: the first slice now, the
    // rest on later turns (queue groups and routes get theirs now, below).
    const sliced = n > FANOUT_SLICE && from !== null && from.origin !== Origin.Internal && ack === null;
    if (sliced) n = FANOUT_SLICE;
    const noEchoCid = noEcho ? from.cid : -1;
    delivered += this.deliverPlain(ps, 0, n, noEchoCid, fromRoute, subject, shown, reply, hdr, buf, start, end, ack, probe);
    if (sliced) this.fanoutLater(from as HeldSender, fromRoute, ps, subject, shown, reply, hdr, buf.subarray(start, end), noEchoCid);
    const qs = r.qsubs;
    if (fromRoute) {
      if (queues !== null) this.deliverNamedQueues(qs, queues, subject, shown, reply, hdr, buf, start, end);
      return;
    }
    const cl = this.cluster;
    if (cl !== null && cl.active) {
      delivered += cl.forward(from !== null ? from.cid : 0, noEcho, subject, reply, hdr, buf, start, end, shown, ack, qs);
      if (probe && cl.lastQueueBacklog > this.routeBacklogBytes) this.routeBacklogBytes = cl.lastQueueBacklog;
      if (delivered === 0 && reply.length > 0 && from !== null && from.noResponders) this.noResponders(from as Client, subject, reply);
      return;
    }
    for (let g = 0; g < qs.length; g++) {
      const members = qs[g]!;
      const n = members.length;
      if (n === 0) continue;
      const first = n === 1 ? 0 : this.random.int(n);
      for (let k = 0; k < n; k++) {
        const sub = members[(first + k) % n]!;
        if (sub.closed || (noEcho && sub.owner.cid === from.cid)) continue;
        // A member whose subscribe deny covers the subject passes it to the next one.
        if (sub.denyFilter !== null && sub.denyFilter.denies(subject, sub.queue)) continue;
        sub.owner.deliverMsg(sub, shown, reply, hdr, buf, start, end, ack);
        delivered++;
        if (probe) this.probeBacklog(sub);
        break;
      }
    }
    // Only clients ask for no-responders replies (a route's noResponders is false).
    if (delivered === 0 && reply.length > 0 && from !== null && from.noResponders) this.noResponders(from as Client, subject, reply);
  }

  /** Delivers to the plain subscriptions ps[from, to) that take the message; how many did.
   *  noEchoCid: the publisher's connection when it asked for no echo (-1: none); fromRoute:
   *  only subscriptions announced over routes take it. */
  private deliverPlain(ps: readonly Subscription[], from: number, to: number, noEchoCid: number, fromRoute: boolean, subject: string, shown: string, reply: string, hdr: Buffer | null, buf: Buffer, start: number, end: number, ack: AckReply | null, probe: boolean): number {
    let delivered = 0;
    for (let i = from; i < to; i++) {
      const sub = ps[i]!;
      // Closed (its client is being removed a slice per turn): no delivery, no interest.
      if (sub.closed || sub.owner.cid === noEchoCid) continue;
      // Subscriptions not announced over routes (internal ones without `cluster`) take
      // nothing from them.
      if (fromRoute && !sub.routable) continue;
      if (sub.denyFilter !== null && sub.denyFilter.denies(subject, "")) continue;
      sub.owner.deliverMsg(sub, shown, reply, hdr, buf, start, end, ack);
      delivered++;
      if (probe) this.probeBacklog(sub);
    }
    return delivered;
  }

  /** A routed message's queue groups: one local routable member of each group it names. */
  private deliverNamedQueues(qs: SublistResult<Subscription>["qsubs"], queues: readonly string[], subject: string, shown: string, reply: string, hdr: Buffer | null, buf: Buffer, start: number, end: number): void {
    for (let g = 0; g < qs.length; g++) {
      const members = qs[g]!;
      const n = members.length;
      if (n === 0 || !queues.includes(members[0]!.queue)) continue;
      const first = n === 1 ? 0 : this.random.int(n);
      for (let k = 0; k < n; k++) {
        const sub = members[(first + k) % n]!;
        if (sub.closed || !sub.routable) continue;
        if (sub.denyFilter !== null && sub.denyFilter.denies(subject, sub.queue)) continue;
        sub.owner.deliverMsg(sub, shown, reply, hdr, buf, start, end, null);
        break;
      }
    }
  }

  /** Messages whose plain subscriptions past the first FANOUT_SLICE are still to be
   *  delivered, oldest first; fanoutHead: the next to work on. */
  private fanouts: FanoutRest[] = [];
  private fanoutHead = 0;
  private fanoutScheduled = false;
  private readonly fanoutBound = (): void => this.fanoutTurn();

  /** Queue the rest of a client's or route's message fan-out (ps past FANOUT_SLICE), with
   *  copies of what the read buffer holds; its publisher reads nothing more until it is done,
   *  so that its later messages reach every subscriber after this one. */
  private fanoutLater(from: HeldSender, fromRoute: boolean, ps: readonly Subscription[], subject: string, shown: string, reply: string, hdr: Buffer | null, payload: Buffer, noEchoCid: number): void {
    this.fanouts.push({
      from,
      fromRoute,
      subs: ps.slice(FANOUT_SLICE),
      next: 0,
      subject,
      shown,
      reply,
      hdr: hdr === null ? null : Buffer.from(hdr),
      payload: Buffer.from(payload),
      noEchoCid,
    });
    from.holdReads();
    if (!this.fanoutScheduled) {
      this.fanoutScheduled = true;
      this.sched.nextTurn(this.fanoutBound);
    }
  }

  /** FANOUT_SLICE deliveries of the queued fan-outs, in order. */
  private fanoutTurn(): void {
    this.fanoutScheduled = false;
    let budget = FANOUT_SLICE;
    const q = this.fanouts;
    while (this.fanoutHead < q.length && budget > 0) {
      const f = q[this.fanoutHead]!;
      const end = Math.min(f.subs.length, f.next + budget);
      budget -= end - f.next;
      const body = f.payload;
      this.deliverPlain(f.subs, f.next, end, f.noEchoCid, f.fromRoute, f.subject, f.shown, f.reply, f.hdr, body, 0, body.length, null, false);
      f.next = end;
      if (end < f.subs.length) break;
      q[this.fanoutHead++] = undefined as unknown as FanoutRest;
      f.from.releaseReads();
    }
    if (this.fanoutHead < q.length) {
      this.fanoutScheduled = true;
      this.sched.nextTurn(this.fanoutBound);
    } else {
      this.fanouts = [];
      this.fanoutHead = 0;
    }
    this.flushDirty();
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

  subscribeAck(prefix: string, handler: InternalHandler, onBytes: AckBytesHandler, opts?: BusSubscribeOptions): InternalSubscription {
    const owner = new InternalOwner(handler, false, this);
    const subject = prefix + ">";
    const sub = newSubscription(owner, subject, "", "0", opts?.cluster === true);
    this.updateSub(sub, 1);
    const keyStr = prefix.slice(ACK_PFX_LEN);
    const route: AckRoute = { prefix, key: Buffer.from(keyStr, "utf8"), sub, onBytes, probe: prefix + "1.1.1.1.1", gen: -1, rgen: -1, sole: false };
    this.ackRoutes.set(keyStr, route);
    return this.internalSub(subject, sub, () => {
      if (this.ackRoutes.get(keyStr) === route) this.ackRoutes.delete(keyStr);
      if (this.lastAck === route) this.lastAck = null;
    });
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
    const cl = this.cluster;
    const rgen = cl === null ? -1 : cl.remoteGen;
    if (r.gen !== sl.gen || r.rgen !== rgen) {
      // Routing would also send the ack to any route with interest in it (a client on
      // another server subscribed to "$JS.ACK.>" or ">"): then no shortcut.
      r.sole = sl.soleSubscriberUnder(r.prefix.slice(0, -1), r.sub) && (cl === null || !cl.hasRemoteInterest(r.probe));
      r.gen = sl.gen;
      r.rgen = rgen;
    }
    const start = ks + r.key.length;
    if (!r.sole || r.sub.closed || start >= s1) return false;
    if (!r.onBytes(buf, start, s1, reply, buf, pstart, pend)) return false;
    r.sub.delivered++;
    this.internalWork++;
    return true;
  }

  subscribe(subject: string, handler: InternalHandler, queue = "", borrow = false, opts?: BusSubscribeOptions): InternalSubscription {
    const owner = new InternalOwner(handler, borrow, this);
    const sub = newSubscription(owner, subject, queue, "0", opts?.cluster === true);
    sub.preferLocal = opts?.preferLocal === true && queue !== "";
    this.updateSub(sub, 1);
    return this.internalSub(subject, sub, null);
  }

  /** The handle of an internal subscription: unsubscribe() takes it out once (and runs
   *  after, if given). */
  private internalSub(subject: string, sub: Subscription, after: (() => void) | null): InternalSubscription {
    return {
      subject,
      unsubscribe: (): void => {
        if (sub.closed) return;
        sub.closed = true;
        this.updateSub(sub, -1);
        after?.();
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
    this.routeRange(null, subject, reply, hdr, buf, start, end, subject, false, null, null);
    this.scheduleFlush();
  }

  /** A client started spending its budget in this turn: move `turn` on after the reads. */
  armTurn(): void {
    if (this.turnArmed) return;
    this.turnArmed = true;
    this.sched.nextTurn(this.nextTurnBound);
  }

  /** Flush dirty clients on the next turn (routing from outside a client's read). */
  private scheduleFlush(): void {
    if (!this.flushScheduled && this.dirtyClients.length > 0) {
      this.flushScheduled = true;
      this.sched.nextTurn(this.flushBound);
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
    this.routeRange(null, deliverSubject, reply, hdr, payload, 0, payload.length, msgSubject, true, ack, null);
    this.scheduleFlush();
    // Well before the slow-consumer bound (a quarter of it at most), and small enough that
    // the outbound buffer stays a size the socket takes in one go.
    return this.routeBacklogBytes > Math.min(this.opts.maxPendingBytes / 4, DELIVER_BACKLOG_PAUSE_BYTES);
  }

  hasInterest(subject: string): boolean {
    const r = this.sublist.match(subject);
    // Subscriptions marked closed (a big client is removed a slice per turn) do not count.
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
    // A member on another server counts too (a push consumer's deliver group in a cluster).
    return this.cluster !== null && this.cluster.hasRemoteQueueInterest(subject, queue);
  }

  /** A unique inbox prefix for internal requests. */
  newInbox(): string {
    return `_INBOX.${this.nuidPrefix}${randomBytes(6).toString("hex")}`;
  }
}

const EMPTY = Buffer.alloc(0);
/** Subscriptions of a closed connection removed from the index per turn (as Client's
 *  OPS_PER_TURN). */
const DROP_PER_TURN = 500;

/** Whether buf[at, end) starts with key. */
function bytesAt(buf: Buffer, at: number, end: number, key: Buffer): boolean {
  const n = key.length;
  if (at + n > end) return false;
  for (let i = 0; i < n; i++) if (buf[at + i] !== key[i]) return false;
  return true;
}

