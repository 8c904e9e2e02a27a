// One consumer: delivery (pull and push), pending set and ack floor, redelivery along
// ack_wait/backoff off the shared Ticker, max_deliver, max_ack_pending, flow control, idle
// heartbeats, inactivity, pause and the retention hooks its stream calls (ConsumerHook).
//
// Delivery is synchronous: kick() runs the loop until nothing more can go out. It is
// re-entrant safe (a delivery may route back into this consumer, e.g. a DLQ on the same
// stream): a nested kick() only marks the loop to run again.

import type { Bus, InternalSubscription } from "../contracts/bus.js";
import type { Clock, TimerHandle } from "../runtime/clock.js";
import type { Logger } from "../runtime/log.js";
import type { ConsumerHook, StreamHandle } from "../contracts/jetstream.js";
import type { ConsumerState, ConsumerStore, StoredMsg } from "../storage/types.js";
import { appendHeaders } from "../protocol/headers.js";
import { AckReply } from "../protocol/ackreply.js";
import { subjectIsSubsetMatch, subjectMatches } from "../subjects/subject.js";
import { rfc3339Ns } from "../stream/time.js";
import { ACK_PREFIX, AckKind, AckTail, ackSubject, parseAck, parseAckSubject } from "./ack.js";
import { consumerConfigToWire, filtersOf, isPush, type ConsumerConfig } from "./config.js";
import { RedeliveryWheel, TICK_MS, type Ticker, type Tickable } from "./wheel.js";
import {
  heartbeatStatus,
  parsePullRequest,
  pendingStatus,
  ST_CONSUMER_DELETED,
  ST_EXCEEDED_MAX_WAITING,
  ST_FLOW_CONTROL,
  ST_NO_MESSAGES,
  ST_PUSH_BASED,
  WaitingList,
  type PullRequest,
} from "./waiting.js";
import { statusHeaders } from "../protocol/headers.js";
import { deadLetter } from "./deadletter.js";
import { PinState, pullRejection } from "./priority.js";

const EMPTY = Buffer.alloc(0);
const FC_WINDOW_START_BYTES = 2 * 1024 * 1024;
const FC_WINDOW_MAX_BYTES = 32 * 1024 * 1024;
const ADV = "$JS.EVENT.ADVISORY.CONSUMER.";
const ADV_TYPE = "io.nats.jetstream.advisory.v1.";
const ST_REQUESTS_PENDING = statusHeaders(408, "Requests Pending");

export interface ConsumerEnv {
  bus: Bus;
  clock: Clock;
  log: Logger;
  ticker: Ticker;
  serverName: string;
  advisory(subject: string, body: Record<string, unknown>): void;
  /** The consumer removed itself (inactivity); the owner drops it from its registry. */
  onSelfDelete(c: Consumer): void;
  /** A fresh pin id for a pinned_client consumer (a NUID in nats-server). */
  newPinId(): string;
}

/** A candidate for the next delivery, chosen before committing to it (max_bytes). */
interface Pick {
  msg: StoredMsg;
  redelivery: boolean;
  dc: number;
}

export function emptyState(): ConsumerState {
  return {
    delivered: { consumerSeq: 0, streamSeq: 0 },
    ackFloor: { consumerSeq: 0, streamSeq: 0 },
    pending: new Map(),
    redelivered: new Map(),
  };
}

export class Consumer implements ConsumerHook, Tickable {
  readonly name: string;
  cfg: ConsumerConfig;
  readonly stream: StreamHandle;
  readonly createdNs: number;
  private readonly env: ConsumerEnv;
  private store: ConsumerStore | null;
  private readonly state: ConsumerState;
  private filters: string[];
  private lastActiveNs = 0;
  private ackActiveNs = 0;
  private readonly wheel = new RedeliveryWheel();
  private readonly rdq: number[] = [];
  private rdqHead = 0;
  private readonly waiting: WaitingList;
  private readonly pins: PinState;
  private lps: number[] | null = null;
  private lpsEnd = 0;
  private startSeq: number;
  private numPendingCache = -1;
  private readonly ackPrefix: string;
  /** The reply subject of the delivery being made, as numbers (Bus.deliverAck). */
  private readonly ackReplyTail: AckReply;
  private readonly fcPrefix: string;
  private subs: InternalSubscription[] = [];
  private delivering = false;
  private again = false;
  private stopped = false;
  private lastPushMs: number;
  private lastActivityMs: number;
  private fcOutstanding = "";
  private fcSeq = 0;
  private fcBytes = 0;
  private fcBytesAtSend = 0;
  private fcWindow = FC_WINDOW_START_BYTES;
  private readonly scratch: number[] = [];
  // Pending stream sequences in ascending order (deliveries only ever add larger ones);
  // acked entries are skipped lazily from the head. Finding the oldest pending through the
  // Map would walk V8's tombstones of every entry deleted since its last rehash.
  private readonly pendOrder: number[] = [];
  private pendHead = 0;
  // The last delivery found its receiver backed up: stop, and look again shortly (the
  // delivery loop is synchronous, so without this a large stream lands in one client's
  // outbound buffer at once and the client is closed as a slow consumer).
  private congested = false;
  // replay_policy original: until the consumer has caught up with what the stream held when
  // it started, each message waits as long after the previous delivery as it was stored
  // after the previous message (nats-server loopAndGatherMsgs).
  private replay: boolean;
  private readonly replayEndSeq: number;
  private replayLastTsNs = 0;
  private replayLastMs = 0;
  private timeHeld = false;
  // rate_limit_bps (push): a token bucket of bytes, refilled at bps/8 per second, holding at
  // most the stream's max_msg_size (else the 1 MiB default payload), as nats-server sizes it.
  private rlTokens = 0;
  private rlLastMs = 0;
  private rlBurst = 0;
  private sampleAcc = 0;
  // One clock reading per delivery loop (the loop is bounded by congestion, so it is fresh
  // to within a few ms): two clock calls per message were a visible share of delivery.
  private runNowNs = 0;
  private runMonoMs = 0;
  // pick()'s result, reused: the caller uses it before the next pick().
  private readonly picked: Pick = { msg: { seq: 0, subject: "", hdr: null, data: EMPTY, tsNs: 0 }, redelivery: false, dc: 1 };
  private congestionTimer: TimerHandle | null = null;
  private kickQueued = false;
  private readonly deferredKick = (): void => {
    this.kickQueued = false;
    this.kick();
  };
  private readonly onCongestionTimer = (): void => {
    this.congestionTimer = null;
    this.kick();
  };

  constructor(env: ConsumerEnv, stream: StreamHandle, cfg: ConsumerConfig, createdNs: number, store: ConsumerStore | null, recovered: ConsumerState | null) {
    this.env = env;
    this.stream = stream;
    this.cfg = cfg;
    this.name = cfg.name;
    this.createdNs = createdNs;
    this.store = store;
    this.filters = filtersOf(cfg);
    this.waiting = new WaitingList(cfg.max_waiting);
    this.waiting.prioritized = cfg.priority_policy === "prioritized";
    this.pins = new PinState(stream.name, cfg.name, env.newPinId, env.advisory);
    this.ackPrefix = ACK_PREFIX + stream.name + "." + cfg.name + ".";
    this.ackReplyTail = new AckReply(this.ackPrefix);
    this.fcPrefix = "$JS.FC." + stream.name + "." + cfg.name + ".";
    const now = env.clock.monoMs();
    this.lastPushMs = now;
    this.lastActivityMs = now;
    this.replay = cfg.replay_policy === "original";
    this.replayEndSeq = this.replay ? stream.store.state().lastSeq : 0;
    if (recovered !== null) {
      this.state = recovered;
      const ackWaitMs = this.ackWaitMs(1);
      for (const seq of recovered.pending.keys()) this.wheel.schedule(seq, now + ackWaitMs);
      for (const seq of recovered.pending.keys()) this.pendOrder.push(seq);
      this.pendOrder.sort((a, b) => a - b);
      this.startSeq = recovered.ackFloor.streamSeq + 1;
    } else {
      this.state = emptyState();
      this.initStart();
      this.startSeq = this.state.delivered.streamSeq + 1;
    }
  }

  /** Subscribe to acks and flow control; call once the consumer is registered. */
  start(): void {
    if (this.state.delivered.streamSeq >= this.replayEndSeq) this.replay = false;
    const bus = this.env.bus;
    // nats-server 2.11: an ack-none consumer has no ack subscription, so an ack sent as a
    // request gets "no responders" (2.9 answered it).
    if (this.cfg.ack_policy !== "none") {
      this.subs.push(bus.subscribeAck !== undefined ? bus.subscribeAck(this.ackPrefix, this.onAckMsg, this.onAckBytes) : bus.subscribe(this.ackPrefix + ">", this.onAckMsg));
    }
    if (isPush(this.cfg) && this.cfg.flow_control) this.subs.push(bus.subscribe(this.fcPrefix + "*", this.onFcMsg));
    this.persist();
    this.env.ticker.want(this);
    this.kick();
  }

  // ---------- start position ----------

  private initStart(): void {
    const store = this.stream.store;
    const st = store.state();
    const c = this.cfg;
    const d = this.state.delivered;
    const lastSeq = st.lastSeq;
    switch (c.deliver_policy) {
      case "all":
        d.streamSeq = st.firstSeq > 0 ? st.firstSeq - 1 : 0;
        break;
      case "new":
        d.streamSeq = lastSeq;
        break;
      case "last": {
        let best = 0;
        for (const f of this.filterList()) {
          const m = store.loadLastMsg(f);
          if (m !== null && m.seq > best) best = m.seq;
        }
        d.streamSeq = best > 0 ? best - 1 : lastSeq;
        break;
      }
      case "by_start_sequence":
        d.streamSeq = Math.max(0, c.opt_start_seq - 1);
        break;
      case "by_start_time":
        d.streamSeq = this.seqForTime(c.opt_start_time_ns) - 1;
        break;
      case "last_per_subject": {
        const seqs: number[] = [];
        for (const f of this.filterList()) {
          for (const ss of store.subjectsState(f).values()) seqs.push(ss.last);
        }
        seqs.sort((a, b) => a - b);
        this.lps = seqs;
        this.lpsEnd = lastSeq;
        d.streamSeq = seqs.length > 0 ? seqs[0]! - 1 : lastSeq;
        if (seqs.length === 0) this.lps = null;
        break;
      }
    }
    this.state.ackFloor.streamSeq = d.streamSeq;
  }

  /** First sequence whose store time is at or after tNs (binary search: times only grow). */
  private seqForTime(tNs: number): number {
    const store = this.stream.store;
    const st = store.state();
    let lo = Math.max(1, st.firstSeq);
    let hi = st.lastSeq + 1;
    while (lo < hi) {
      const mid = Math.floor((lo + hi) / 2);
      const m = store.loadNextMsg(">", mid);
      if (m === null || m.tsNs >= tNs) hi = mid;
      else lo = m.seq + 1 > mid ? Math.max(mid + 1, lo) : mid + 1;
    }
    return lo;
  }

  private filterList(): string[] {
    return this.filters.length === 0 ? [">"] : this.filters;
  }

  // ---------- ConsumerHook ----------

  filterMatches(subject: string): boolean {
    const f = this.filters;
    if (f.length === 0) return true;
    for (let i = 0; i < f.length; i++) if (subjectMatches(f[i]!, subject)) return true;
    return false;
  }

  needsMessage(seq: number, _subject: string): boolean {
    if (seq < this.startSeq) return false;
    if (seq > this.state.delivered.streamSeq) return true;
    if (this.lps !== null && this.lps.includes(seq)) return true;
    if (this.cfg.ack_policy === "none") return false;
    return this.state.pending.has(seq);
  }

  onStored(seq: number, subject: string): void {
    if (this.stopped) return;
    if (!this.filterMatches(subject)) return;
    // A message up to lpsEnd is already counted in lps (or never delivered): it may become
    // visible only after a last_per_subject consumer was created.
    if (this.numPendingCache >= 0 && seq > this.state.delivered.streamSeq && (this.lps === null || seq > this.lpsEnd)) this.numPendingCache++;
    this.kick();
  }

  onPurged(firstSeq: number): void {
    if (this.stopped) return;
    this.numPendingCache = -1;
    const s = this.state;
    let changed = false;
    for (let i = this.pendHead; i < this.pendOrder.length; i++) {
      const seq = this.pendOrder[i]!;
      if (seq >= firstSeq) break;
      if (!s.pending.has(seq)) continue;
      s.pending.delete(seq);
      s.redelivered.delete(seq);
      this.wheel.cancel(seq);
      changed = true;
    }
    if (s.redelivered.size > s.pending.size) {
      // Delivery counts kept past max_deliver (not pending any more).
      for (const seq of s.redelivered.keys()) {
        if (seq < firstSeq && !s.pending.has(seq)) {
          s.redelivered.delete(seq);
          changed = true;
        }
      }
    }
    if (s.delivered.streamSeq < firstSeq - 1) {
      s.delivered.streamSeq = firstSeq - 1;
      changed = true;
    }
    if (this.lps !== null) {
      this.lps = this.lps.filter((q) => q >= firstSeq);
      if (this.lps.length === 0) this.endLps();
    }
    if (changed) {
      this.updateFloor();
      this.persist();
    }
    this.kick();
  }

  /** A purge by subject (or subject and sequence) removed messages at or above the stream's
   *  first: pending acks, queued redeliveries and delivery counts of messages that are gone
   *  are dropped and the ack floor moves up (nats-server consumer.purge with a wider filter
   *  than the purge, which checks what is left of pending against the store). A consumer
   *  whose filters all lie within the purged subject also moves its delivered sequence up to
   *  just below the first message left on that subject (the stream's last + 1 if none), as
   *  nats-server purges it from there; nats-server does so when any one filter lies within. */
  onMessagesRemoved(subject = ""): void {
    if (this.stopped) return;
    this.numPendingCache = -1;
    const s = this.state;
    const store = this.stream.store;
    const gone: number[] = [];
    for (const seq of s.pending.keys()) if (store.loadMsg(seq) === null) gone.push(seq);
    for (const seq of s.redelivered.keys()) if (!s.pending.has(seq) && store.loadMsg(seq) === null) gone.push(seq);
    for (const seq of gone) this.removePending(seq);
    let moved = false;
    const f = this.filters;
    if (subject !== "" && f.length > 0 && this.lps === null && f.every((x) => subjectIsSubsetMatch(x, subject))) {
      const st = store.state();
      const next = store.loadNextMsg(subject, Math.max(1, st.firstSeq))?.seq ?? st.lastSeq + 1;
      if (s.delivered.streamSeq < next - 1) {
        s.delivered.streamSeq = next - 1;
        moved = true;
      }
    }
    if (gone.length === 0 && !moved) return;
    this.updateFloor();
    this.persist();
    this.kick();
  }

  /** Own a subscription made for this consumer (its MSG.NEXT subjects): it ends with stop(). */
  attach(sub: InternalSubscription): void {
    if (this.stopped) sub.unsubscribe();
    else this.subs.push(sub);
  }

  consumerLimits(): { max_ack_pending: number; inactive_threshold: number } {
    return { max_ack_pending: this.cfg.max_ack_pending, inactive_threshold: this.cfg.inactive_threshold };
  }

  async stop(deleteState: boolean): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    for (const s of this.subs) s.unsubscribe();
    this.subs = [];
    this.env.ticker.drop(this);
    if (this.congestionTimer !== null) {
      this.env.clock.clearTimer(this.congestionTimer);
      this.congestionTimer = null;
    }
    const bus = this.env.bus;
    for (const r of this.waiting.clear()) {
      if (deleteState) bus.publish(r.reply, "", ST_CONSUMER_DELETED, EMPTY);
      else bus.publish(r.reply, "", pendingStatus(409, "Server Shutdown", r.batch, r.maxBytes), EMPTY);
    }
    this.wheel.clear();
    this.pins.clear();
    const st = this.store;
    this.store = null;
    if (st !== null) {
      if (deleteState) await st.delete();
      else await st.close();
    }
  }

  get isStopped(): boolean {
    return this.stopped;
  }

  // ---------- config update ----------

  updateConfig(cfg: ConsumerConfig): void {
    const oldPush = this.cfg.deliver_subject;
    this.cfg = cfg;
    this.filters = filtersOf(cfg);
    this.waiting.prioritized = cfg.priority_policy === "prioritized";
    if (cfg.priority_policy !== "pinned_client") this.pins.clear();
    this.numPendingCache = -1;
    if (oldPush !== cfg.deliver_subject) this.lastActivityMs = this.env.clock.monoMs();
    this.env.ticker.want(this);
    this.kick();
  }

  // ---------- delivery ----------

  kick(): void {
    if (this.stopped) return;
    if (this.delivering) {
      this.again = true;
      return;
    }
    this.delivering = true;
    try {
      do {
        this.again = false;
        this.run();
      } while (this.again && !this.stopped);
    } finally {
      this.delivering = false;
    }
  }

  isPaused(): boolean {
    return this.cfg.pause_until_ns > 0 && this.cfg.pause_until_ns > this.env.clock.nowNs();
  }

  private run(): void {
    if (this.isPaused() || this.congestionTimer !== null) return;
    this.congested = false;
    this.runNowNs = this.env.clock.nowNs();
    this.runMonoMs = this.env.clock.monoMs();
    if (isPush(this.cfg)) this.runPush();
    else this.runPull();
    if (this.congested && !this.stopped) this.congestionTimer = this.env.clock.setTimer(this.onCongestionTimer, 1);
  }

  private runPush(): void {
    const to = this.cfg.deliver_subject;
    if (!this.deliverInterest()) return;
    let any = false;
    for (;;) {
      if (this.stopped) return;
      if (this.cfg.flow_control && this.fcOutstanding !== "" && this.fcBytes >= this.fcWindow) break;
      const p = this.pick();
      if (p === null || this.replayHold(p) || this.rateHold(p)) break;
      const size = this.deliver(p, to);
      if (this.rlBurst > 0) this.rlTokens -= size;
      any = true;
      this.lastPushMs = this.runMonoMs;
      if (this.cfg.flow_control) {
        this.fcBytes += size;
        if (this.fcOutstanding === "" && this.fcBytes >= this.fcWindow / 2) this.sendFlowControl();
      }
      if (this.congested) break;
    }
    if (any) this.persist();
  }

  /** A push consumer delivers (and is push_bound) while its deliver subject has interest;
   *  with deliver_group, only members of that queue group count (nats-server registers its
   *  interest notification for the subject and the group). */
  private deliverInterest(): boolean {
    const bus = this.env.bus;
    const g = this.cfg.deliver_group;
    if (g === "" || bus.hasQueueInterest === undefined) return bus.hasInterest(this.cfg.deliver_subject);
    return bus.hasQueueInterest(this.cfg.deliver_subject, g);
  }

  private sendFlowControl(): void {
    this.fcOutstanding = this.fcPrefix + ++this.fcSeq;
    this.fcBytesAtSend = this.fcBytes;
    this.env.bus.publish(this.cfg.deliver_subject, this.fcOutstanding, ST_FLOW_CONTROL, EMPTY);
  }

  private readonly onFcMsg = (subject: string): void => {
    if (this.stopped || subject !== this.fcOutstanding) return;
    this.fcOutstanding = "";
    this.fcBytes = Math.max(0, this.fcBytes - this.fcBytesAtSend);
    this.fcWindow = Math.min(FC_WINDOW_MAX_BYTES, this.fcWindow * 2);
    this.kick();
  };

  private runPull(): void {
    const bus = this.env.bus;
    let any = false;
    let exhausted = false;
    while (this.waiting.length > 0 && !this.stopped) {
      let r = this.waiting.peek()!;
      if (!bus.hasInterest(r.reply)) {
        this.waiting.shift();
        continue;
      }
      const p = this.pick();
      if (p === null) {
        exhausted = true;
        break;
      }
      if (this.replayHold(p)) break;
      if (this.cfg.priority_policy !== "") {
        if (!this.selectByPriority()) break;
        r = this.waiting.peek()!;
      }
      if (r.maxBytes > 0) {
        const size = p.msg.subject.length + this.ackPrefix.length + 40 + (p.msg.hdr?.length ?? 0) + p.msg.data.length;
        if (size > r.maxBytes) {
          this.pins.dropped(r);
          this.waiting.shift();
          bus.publish(r.reply, "", pendingStatus(409, "Message Size Exceeds MaxBytes", r.batch, r.maxBytes), EMPTY);
          continue;
        }
      }
      const size = this.deliver(p, r.reply);
      any = true;
      r.batch--;
      r.delivered++;
      r.lastMs = this.runMonoMs;
      if (r.maxBytes > 0) {
        // Bytes used up exactly: this was the request's last message (nats-server sets n = 1).
        r.maxBytes -= size;
        if (r.maxBytes <= 0) {
          r.maxBytes = 0;
          r.batch = 0;
        } else if (r.batch <= 0) {
          // nats-server 2.10+: a batch fulfilled with bytes to spare ends with 409 Batch
          // Completed (0 messages and the bytes left); only requests with max_bytes get it.
          bus.publish(r.reply, "", pendingStatus(409, "Batch Completed", 0, r.maxBytes), EMPTY);
        }
      }
      if (r.batch <= 0) this.waiting.shift();
      else this.waiting.rotate();
      if (this.congested) break;
    }
    if (exhausted || this.waiting.length > 0) this.finishNoWait();
    if (any) this.persist();
  }

  /** overflow / pinned_client: bring the request that may take the next message to the
   *  head of the waiting list; false if none may now. */
  private selectByPriority(): boolean {
    const c = this.cfg;
    const overflow = c.priority_policy === "overflow";
    const np = overflow ? (this.numPendingCache >= 0 ? this.numPendingCache : this.computeNumPending()) : 0;
    return this.pins.select(c.priority_policy, c.priority_groups[0] ?? "", c.priority_timeout, this.waiting, this.env.bus, np, this.state.pending.size, this.runMonoMs, this.runNowNs);
  }

  /** CONSUMER.UNPIN: drop the pin (and announce it); the next delivery picks a new one. */
  unpin(group: string): void {
    this.pins.unpin(group, "admin");
    this.kick();
  }

  /** replay_policy original: true (and a wake-up asked for) while p must still wait. */
  private replayHold(p: Pick): boolean {
    if (!this.replay) return false;
    if (this.replayLastTsNs === 0) return false;
    const delayMs = (p.msg.tsNs - this.replayLastTsNs) / 1e6;
    if (delayMs <= 1) return false;
    const due = this.replayLastMs + delayMs;
    if (this.env.clock.monoMs() >= due) return false;
    this.timeHeld = true;
    this.env.ticker.wakeAt(this, due);
    return true;
  }

  /** rate_limit_bps: true (and a wake-up asked for) while the bucket lacks p's bytes. */
  private rateHold(p: Pick): boolean {
    const bps = this.cfg.rate_limit_bps;
    if (bps <= 0) {
      this.rlBurst = 0;
      return false;
    }
    const now = this.env.clock.monoMs();
    const perMs = bps / 8 / 1000;
    if (this.rlBurst === 0) {
      const mms = this.stream.wireConfig()["max_msg_size"];
      this.rlBurst = typeof mms === "number" && mms > 0 ? mms : 1024 * 1024;
      this.rlTokens = this.rlBurst;
    } else {
      this.rlTokens = Math.min(this.rlBurst, this.rlTokens + (now - this.rlLastMs) * perMs);
    }
    this.rlLastMs = now;
    const m = p.msg;
    // A message bigger than the bucket goes once the bucket is full (never, in nats-server).
    const need = Math.min(this.rlBurst, m.subject.length + this.ackPrefix.length + 40 + (m.hdr?.length ?? 0) + m.data.length);
    if (this.rlTokens >= need) return false;
    this.timeHeld = true;
    this.env.ticker.wakeAt(this, now + (need - this.rlTokens) / perMs);
    return true;
  }

  private replayDelivered(m: StoredMsg): void {
    this.replayLastTsNs = m.tsNs;
    this.replayLastMs = this.env.clock.monoMs();
    if (this.state.delivered.streamSeq >= this.replayEndSeq) this.replay = false;
  }

  /** no_wait requests end with 404 No Messages once nothing more is available now: those
   *  without expires, and those with expires that got something (one with expires that got
   *  nothing waits for a message or its 408). nats-server 2.11.11 / 2.12.2 changed this;
   *  before, a partly served no_wait request ended with 408 Request Timeout and a no_wait
   *  request with expires waited for its expiry in every case. */
  private finishNoWait(): void {
    if (this.waiting.length === 0) return;
    if (this.hasAvailable()) return;
    const bus = this.env.bus;
    this.waiting.sweep((r) => {
      if (!r.noWait || (r.expiresAtMs > 0 && r.delivered === 0)) return false;
      bus.publish(r.reply, "", ST_NO_MESSAGES, EMPTY);
      return true;
    });
  }

  /** True when there is something to deliver, now or once acks make room under
   *  max_ack_pending: nats-server ends a no_wait request only at the end of the stream, and
   *  keeps one that max_ack_pending holds back waiting. */
  private hasAvailable(): boolean {
    if (this.pick() !== null) return true;
    if (this.canDeliverNew()) return false;
    return (this.numPendingCache >= 0 ? this.numPendingCache : this.computeNumPending()) > 0;
  }

  private canDeliverNew(): boolean {
    const c = this.cfg;
    if (c.ack_policy === "none" || c.max_ack_pending <= 0) return true;
    return this.state.pending.size < c.max_ack_pending;
  }

  /** The next message to deliver: redeliveries first, then new ones. Drops redelivery
   *  entries that are no longer pending or whose message is gone. */
  private pick(): Pick | null {
    const s = this.state;
    while (this.rdqHead < this.rdq.length) {
      const seq = this.rdq[this.rdqHead]!;
      if (!s.pending.has(seq) || this.wheel.has(seq)) {
        this.rdqHead++;
        this.compactRdq();
        continue;
      }
      const m = this.stream.store.loadMsg(seq);
      if (m === null) {
        this.rdqHead++;
        this.compactRdq();
        this.dropPending(seq);
        continue;
      }
      return this.pickedAs(m, true, (s.redelivered.get(seq) ?? 1) + 1);
    }
    if (!this.canDeliverNew()) return null;
    if (this.lps !== null) {
      while (this.lps.length > 0) {
        if (this.lps[0]! > this.stream.visibleSeq) return null;
        const m = this.stream.store.loadMsg(this.lps[0]!);
        if (m !== null) return this.pickedAs(m, false, 1);
        this.lps.shift();
      }
      this.endLps();
    }
    const from = s.delivered.streamSeq + 1;
    // Only up to the stream's visible (durable) sequence, whatever kicked this consumer.
    const last = Math.min(this.stream.store.state().lastSeq, this.stream.visibleSeq);
    if (from > last) return null;
    let best: StoredMsg | null = null;
    const fl = this.filterList();
    const store = this.stream.store;
    for (let i = 0; i < fl.length; i++) {
      // Sent at once and not kept: views of the store's cache are fine.
      const m = store.loadNextMsgTransient !== undefined ? store.loadNextMsgTransient(fl[i]!, from) : store.loadNextMsg(fl[i]!, from);
      if (m !== null && m.seq <= last && (best === null || m.seq < best.seq)) best = m;
    }
    if (best === null) {
      // Nothing matches up to the end: remember that so the next look starts later. The ack
      // floor stays (nats-server moves it only on acks and deliveries).
      if (s.delivered.streamSeq < last && this.filters.length > 0) s.delivered.streamSeq = last;
      return null;
    }
    return this.pickedAs(best, false, 1);
  }

  /** The stream's last sequence when a last_per_subject consumer was created (0 for other
   *  policies): recorded with the config so that recovery can resume the first phase. */
  lastPerSubjectEnd(): number {
    return this.cfg.deliver_policy === "last_per_subject" ? this.lpsEnd : 0;
  }

  /** After recovery: if the consumer had not got through the last-per-subject phase, rebuild
   *  what is left of it, the newest message of each subject in (delivered, endSeq]. A subject
   *  whose newest message at creation was already delivered has none in that range. */
  resumeLastPerSubject(endSeq: number): void {
    const d = this.state.delivered.streamSeq;
    this.lpsEnd = endSeq;
    if (this.cfg.deliver_policy !== "last_per_subject" || endSeq <= d) return;
    const last = new Map<string, number>();
    const store = this.stream.store;
    for (const f of this.filterList()) {
      for (let m = store.loadNextMsg(f, d + 1); m !== null && m.seq <= endSeq; m = store.loadNextMsg(f, m.seq + 1)) {
        last.set(m.subject, m.seq);
      }
    }
    const seqs = [...last.values()].sort((a, b) => a - b);
    this.lps = seqs.length > 0 ? seqs : null;
    if (this.lps === null) this.state.delivered.streamSeq = endSeq;
    this.numPendingCache = -1;
  }

  private endLps(): void {
    this.lps = null;
    if (this.state.delivered.streamSeq < this.lpsEnd) this.state.delivered.streamSeq = this.lpsEnd;
    this.numPendingCache = -1;
  }

  private compactRdq(): void {
    if (this.rdqHead > 1024 && this.rdqHead * 2 > this.rdq.length) {
      this.rdq.splice(0, this.rdqHead);
      this.rdqHead = 0;
    } else if (this.rdqHead === this.rdq.length) {
      this.rdq.length = 0;
      this.rdqHead = 0;
    }
  }

  private pickedAs(msg: StoredMsg, redelivery: boolean, dc: number): Pick {
    const p = this.picked;
    p.msg = msg;
    p.redelivery = redelivery;
    p.dc = dc;
    return p;
  }

  /** Send one message; returns its size as counted for max_bytes and flow control. */
  private deliver(p: Pick, to: string): number {
    const s = this.state;
    const m = p.msg;
    const seq = m.seq;
    const cseq = ++s.delivered.consumerSeq;
    if (p.redelivery) {
      this.rdqHead++;
      this.compactRdq();
      s.redelivered.set(seq, p.dc);
    } else {
      if (this.lps !== null && this.lps[0] === seq) {
        this.lps.shift();
        if (seq > s.delivered.streamSeq) s.delivered.streamSeq = seq;
        if (this.lps.length === 0) this.endLps();
        else if (this.numPendingCache > 0) this.numPendingCache--;
      } else {
        s.delivered.streamSeq = seq;
        if (this.numPendingCache > 0) this.numPendingCache--;
      }
    }
    const nowNs = this.runNowNs;
    this.lastActiveNs = nowNs;
    const pending = this.numPendingCache >= 0 ? this.numPendingCache : this.computeNumPending();
    const ackNone = this.cfg.ack_policy === "none";
    if (!ackNone) {
      // A first delivery is never pending yet: no lookup.
      const e = p.redelivery ? s.pending.get(seq) : undefined;
      if (e === undefined) {
        s.pending.set(seq, { cseq, tsNs: nowNs });
        this.pendOrder.push(seq);
      }
      else {
        e.cseq = cseq;
        e.tsNs = nowNs;
      }
      const waitMs = this.ackWaitMs(p.dc);
      this.wheel.schedule(seq, this.runMonoMs + waitMs);
      // The tick looks 2 ticks ahead; only a wait shorter than that needs a wake-up now.
      if (waitMs < 2 * TICK_MS) this.wakeForDeadline(this.runMonoMs, 2 * TICK_MS);
    }
    let hdr = m.hdr;
    let data = m.data;
    if (this.cfg.headers_only) {
      hdr = appendHeaders(m.hdr, [["Nats-Msg-Size", String(m.data.length)]]);
      data = EMPTY;
    }
    if (this.pins.id !== "" && this.cfg.priority_policy === "pinned_client") hdr = this.pins.withPinHeader(hdr);
    const bus = this.env.bus;
    let replyLen: number;
    if (bus.deliverAck !== undefined) {
      const ar = this.ackReplyTail;
      ar.set(p.dc, seq, cseq, m.tsNs, pending);
      replyLen = ar.length();
      if (bus.deliverAck(to, m.subject, ar, hdr, data)) this.congested = true;
    } else {
      const reply = ackSubject(this.ackPrefix, p.dc, seq, cseq, m.tsNs, pending);
      replyLen = reply.length;
      if (bus.deliverAs !== undefined) {
        if (bus.deliverAs(to, m.subject, reply, hdr, data)) this.congested = true;
      } else bus.publish(to, reply, hdr, data);
    }
    if (this.replay) this.replayDelivered(m);
    if (ackNone) {
      s.ackFloor.consumerSeq = cseq;
      s.ackFloor.streamSeq = s.delivered.streamSeq;
      this.ackActiveNs = nowNs;
      if (this.stream.retention() !== "limits") this.stream.onAck(seq, m.subject);
    }
    return m.subject.length + replyLen + (hdr?.length ?? 0) + data.length;
  }

  private ackWaitMs(dc: number): number {
    const b = this.cfg.backoff;
    if (b.length > 0) return b[Math.min(dc - 1, b.length - 1)]! / 1e6;
    const w = this.cfg.ack_wait;
    return w > 0 ? w / 1e6 : 30_000;
  }

  computeNumPending(): number {
    let n = 0;
    if (this.lps !== null) {
      n += this.lps.length;
      for (const f of this.filterList()) n += this.visiblePending(this.lpsEnd + 1, f);
    } else {
      const from = this.state.delivered.streamSeq + 1;
      for (const f of this.filterList()) n += this.visiblePending(from, f);
    }
    this.numPendingCache = n;
    return n;
  }

  /** Messages matching f from `from` up to the visible sequence: those after it are counted
   *  by onStored when they become visible. */
  private visiblePending(from: number, f: string): number {
    const store = this.stream.store;
    const vis = this.stream.visibleSeq;
    if (from > vis) return 0;
    const n = store.numPending(from, f, false);
    return n > 0 && vis < store.state().lastSeq ? n - store.numPending(vis + 1, f, false) : n;
  }

  // ---------- acks ----------

  /** The numbers of a v1 ack subject of this consumer ("<ackPrefix>dc.sseq.cseq.ts.pending"),
   *  read in place into ackNums; false for anything else (then parseAckSubject decides). */
  private parseOwnAck(subject: string): boolean {
    // Only our subscription (ackPrefix + ">") delivers here, so the prefix is there already.
    const pre = this.ackPrefix;
    if (subject.length <= pre.length) return false;
    const t = this.ackNums;
    t.begin();
    for (let i = pre.length; i < subject.length; i++) if (!t.step(subject.charCodeAt(i))) return false;
    return t.end();
  }

  private readonly ackNums = new AckTail();

  private readonly onAckMsg = (subject: string, reply: string, _hdr: Buffer | null, payload: Buffer): void => {
    if (this.stopped) return;
    let t: { dc: number; sseq: number; cseq: number } | null = this.ackNums;
    if (!this.parseOwnAck(subject)) t = parseAckSubject(subject);
    if (t === null) return;
    this.handleAck(t, reply, payload);
  };

  /** A client's ack straight from its read buffer (Bus.subscribeAck): buf[start, end) is the
   *  subject after ackPrefix. Only the five-number v1 form is taken here; anything else goes
   *  back to routing and reaches onAckMsg. */
  private readonly onAckBytes = (buf: Buffer, start: number, end: number, reply: string, pbuf: Buffer, pstart: number, pend: number): boolean => {
    const t = this.ackNums;
    t.begin();
    for (let i = start; i < end; i++) if (!t.step(buf[i]!)) return false;
    if (!t.end()) return false;
    if (this.stopped) return true;
    // The payload is read during the call only (parseAck copies what it keeps): a view will do.
    this.handleAck(t, reply, pstart === pend ? EMPTY : pbuf.subarray(pstart, pend));
    return true;
  };

  private handleAck(t: { dc: number; sseq: number; cseq: number }, reply: string, payload: Buffer): void {
    const a = parseAck(payload);
    if (a === null) return;
    this.lastActivityMs = this.env.clock.monoMs();
    switch (a.kind) {
      case AckKind.Ack:
        if (this.cfg.sample_freq !== "") this.sampleAck(t.sseq, t.cseq);
        this.ack(t.sseq, t.cseq);
        this.ackReply(reply, true);
        break;
      case AckKind.Nak:
        this.nak(t.sseq, t.cseq, a.delayNs);
        this.ackReply(reply, false);
        break;
      case AckKind.Progress:
        this.progress(t.sseq);
        this.ackReply(reply, false);
        break;
      case AckKind.Term:
        this.term(t.sseq, t.cseq, t.dc, a.arg);
        this.ackReply(reply, true);
        break;
      case AckKind.Next:
        if (this.cfg.sample_freq !== "") this.sampleAck(t.sseq, t.cseq);
        this.ack(t.sseq, t.cseq);
        if (reply !== "") this.pull(reply, Buffer.from(a.arg, "utf8"));
        break;
    }
  }

  /** sample_freq: an ack metric for that share of the acks of pending messages. Exactly
   *  every (100/freq)th ack rather than nats-server's random draw: the same share, and
   *  deterministic. */
  private sampleAck(seq: number, cseq: number): void {
    const p = this.state.pending.get(seq);
    if (p === undefined) return;
    const freq = Number.parseInt(this.cfg.sample_freq, 10);
    if (!(freq > 0)) return;
    this.sampleAcc += Math.min(freq, 100);
    if (this.sampleAcc < 100) return;
    this.sampleAcc -= 100;
    this.env.advisory(`$JS.EVENT.METRIC.CONSUMER.ACK.${this.stream.name}.${this.name}`, {
      type: "io.nats.jetstream.metric.v1.consumer_ack",
      stream: this.stream.name,
      consumer: this.name,
      consumer_seq: cseq,
      stream_seq: seq,
      ack_time: this.env.clock.nowNs() - p.tsNs,
      deliveries: this.state.redelivered.get(seq) ?? 1,
    });
  }

  private ackReply(reply: string, durable: boolean): void {
    if (reply === "") return;
    const bus = this.env.bus;
    const st = this.store;
    // No answer when the ack could not be made durable (a full disk): the client's ack
    // request times out and it can try again, rather than being told it is done.
    if (durable && st !== null) st.sync((err) => err === null && bus.publish(reply, "", null, EMPTY));
    else bus.publish(reply, "", null, EMPTY);
  }

  /** Explicit or cumulative ack of a stream sequence (cseq: the delivery the ack names);
   *  unknown sequences are ignored. */
  ack(seq: number, cseq: number): void {
    const s = this.state;
    const pol = this.cfg.ack_policy;
    if (pol === "none") return;
    const nowNs = this.env.clock.nowNs();
    if (pol === "all") {
      const f = s.ackFloor;
      if (seq <= f.streamSeq || cseq <= f.consumerSeq || seq > s.delivered.streamSeq || cseq > s.delivered.consumerSeq) return;
      const acked: number[] = [];
      for (let i = this.pendHead; i < this.pendOrder.length; i++) {
        const k = this.pendOrder[i]!;
        if (k > seq) break;
        if (s.pending.has(k)) acked.push(k);
      }
      for (const k of acked) this.removePending(k);
      // The floor is the acknowledged delivery itself (nats-server: adflr, asflr = dseq, sseq),
      // not the next pending one minus one.
      f.consumerSeq = cseq;
      f.streamSeq = seq;
      this.ackActiveNs = nowNs;
      this.persist();
      if (this.stream.retention() !== "limits") for (const k of acked) this.notifyAck(k);
      this.kickSoon();
      return;
    }
    if (!this.removePending(seq)) return;
    this.updateFloor();
    this.ackActiveNs = nowNs;
    this.persist();
    if (this.stream.retention() !== "limits") this.notifyAck(seq);
    this.kickSoon();
  }

  /** Deliver once the current batch of input is processed: the acks of one socket read
   *  free room for many messages, which one delivery loop then sends together. */
  private kickSoon(): void {
    if (this.kickQueued) return;
    this.kickQueued = true;
    queueMicrotask(this.deferredKick);
  }

  private notifyAck(seq: number): void {
    if (this.stream.retention() === "workqueue") {
      this.stream.onAck(seq, "");
      return;
    }
    const m = this.stream.store.loadMsg(seq);
    if (m !== null) this.stream.onAck(seq, m.subject);
  }

  /** Forget seq's pending entry, delivery count and deadline; false if it was not pending. */
  private removePending(seq: number): boolean {
    const s = this.state;
    const had = s.pending.delete(seq);
    if (s.redelivered.size > 0) s.redelivered.delete(seq);
    this.wheel.cancel(seq);
    return had;
  }

  /** A pending message left without an ack (its message is gone, or max_deliver). */
  private dropPending(seq: number): void {
    this.removePending(seq);
    this.updateFloor();
    this.persist();
  }

  /** The oldest pending stream sequence (pending must not be empty). */
  private firstPending(): number {
    const order = this.pendOrder;
    const pending = this.state.pending;
    let h = this.pendHead;
    while (h < order.length && !pending.has(order[h]!)) h++;
    if (h === order.length) {
      order.length = 0;
      h = 0;
    } else if (h > 4096 && h * 2 > order.length) {
      order.splice(0, h);
      h = 0;
    }
    this.pendHead = h;
    if (order.length === 0) {
      // Not tracked (cannot happen unless pending was filled from outside): rebuild.
      for (const k of pending.keys()) order.push(k);
      order.sort((a, b) => a - b);
    }
    return order[this.pendHead]!;
  }

  private updateFloor(): void {
    const s = this.state;
    const f = s.ackFloor;
    if (s.pending.size === 0) {
      f.consumerSeq = s.delivered.consumerSeq;
      f.streamSeq = s.delivered.streamSeq;
      return;
    }
    const firstSeq = this.firstPending();
    const first = s.pending.get(firstSeq)!;
    const sfl = firstSeq - 1;
    if (sfl > f.streamSeq) f.streamSeq = sfl;
    const cfl = first.cseq - 1;
    if (cfl > f.consumerSeq && cfl <= s.delivered.consumerSeq) f.consumerSeq = cfl;
  }

  private nak(seq: number, cseq: number, delayNs: number): void {
    const s = this.state;
    if (this.cfg.ack_policy === "none" || !s.pending.has(seq)) return;
    const dc = s.redelivered.get(seq) ?? 1;
    this.env.advisory(`${ADV}MSG_NAKED.${this.stream.name}.${this.name}`, {
      type: ADV_TYPE + "nak",
      stream: this.stream.name,
      consumer: this.name,
      consumer_seq: cseq,
      stream_seq: seq,
      deliveries: dc,
    });
    if (delayNs > 0) {
      const now = this.env.clock.monoMs();
      this.wheel.schedule(seq, now + delayNs / 1e6);
      this.env.ticker.want(this);
      this.wakeForDeadline(now, 2 * TICK_MS);
      return;
    }
    this.wheel.cancel(seq);
    this.dueForRedelivery(seq);
    this.kick();
  }

  private progress(seq: number): void {
    const s = this.state;
    const p = s.pending.get(seq);
    if (p === undefined) return;
    p.tsNs = this.env.clock.nowNs();
    const dc = s.redelivered.get(seq) ?? 1;
    const now = this.env.clock.monoMs();
    const waitMs = this.ackWaitMs(dc);
    this.wheel.schedule(seq, now + waitMs);
    if (waitMs < 2 * TICK_MS) this.wakeForDeadline(now, 2 * TICK_MS);
  }

  /** +TERM: like an ack, plus a MSG_TERMINATED advisory, which nats-server sends even when
   *  the message is no longer pending (then with the delivery count of the ack subject). */
  private term(seq: number, cseq: number, ackDc: number, reason: string): void {
    const s = this.state;
    if (this.cfg.ack_policy === "none") return;
    const pending = s.pending.has(seq);
    const dc = pending ? (s.redelivered.get(seq) ?? 1) : ackDc;
    const body: Record<string, unknown> = {
      type: ADV_TYPE + "terminated",
      stream: this.stream.name,
      consumer: this.name,
      consumer_seq: cseq,
      stream_seq: seq,
      deliveries: dc,
    };
    if (reason !== "") body["reason"] = reason;
    this.env.advisory(`${ADV}MSG_TERMINATED.${this.stream.name}.${this.name}`, body);
    if (!pending) {
      // An ack of a sequence that is not pending still forgets its delivery count.
      if (s.redelivered.delete(seq)) this.persist();
      return;
    }
    this.deadLetter(seq, dc, "term", reason);
    this.removePending(seq);
    this.updateFloor();
    this.persist();
    if (this.stream.retention() !== "limits") this.notifyAck(seq);
    this.kick();
  }

  /** Ack wait passed or NAK: queue for redelivery, or stop at max_deliver. */
  private dueForRedelivery(seq: number): void {
    const s = this.state;
    const dc = s.redelivered.get(seq) ?? 1;
    const md = this.cfg.max_deliver;
    if (md > 0 && dc >= md) {
      this.env.advisory(`${ADV}MAX_DELIVERIES.${this.stream.name}.${this.name}`, {
        type: ADV_TYPE + "max_deliver",
        stream: this.stream.name,
        consumer: this.name,
        stream_seq: seq,
        deliveries: dc,
      });
      this.deadLetter(seq, dc, "max_deliver", "");
      // Out of pending, but its delivery count stays (num_redelivered counts it) until the
      // message leaves the stream or is acked, as nats-server keeps rdc[seq] (even at
      // max_deliver 1, where the count is 1).
      this.removePending(seq);
      this.state.redelivered.set(seq, dc);
      this.updateFloor();
      this.persist();
      return;
    }
    this.rdq.push(seq);
  }

  private deadLetter(seq: number, dc: number, reason: "max_deliver" | "term", termReason: string): void {
    const subj = this.cfg.dead_letter_subject;
    if (subj === "") return;
    const m = this.stream.store.loadMsg(seq);
    if (m === null) return;
    deadLetter(this.env.bus, subj, this.stream.name, this.name, m, dc, reason, termReason);
  }

  // ---------- pull requests ----------

  /** A MSG.NEXT request (or +NXT). */
  pull(reply: string, payload: Buffer): void {
    const bus = this.env.bus;
    if (this.stopped) return;
    if (isPush(this.cfg)) {
      bus.publish(reply, "", ST_PUSH_BASED, EMPTY);
      return;
    }
    const p = parsePullRequest(payload);
    if (!p.ok) {
      bus.publish(reply, "", statusHeaders(400, "Bad Request - " + p.error), EMPTY);
      return;
    }
    const q = p.req;
    const c = this.cfg;
    if (c.max_batch > 0 && q.batch > c.max_batch) {
      bus.publish(reply, "", statusHeaders(409, `Exceeded MaxRequestBatch of ${c.max_batch}`), EMPTY);
      return;
    }
    if (c.max_expires > 0 && q.expiresNs > c.max_expires) {
      bus.publish(reply, "", statusHeaders(409, `Exceeded MaxRequestExpires of ${goDurationShort(c.max_expires)}`), EMPTY);
      return;
    }
    if (c.max_bytes > 0 && q.maxBytes > c.max_bytes) {
      bus.publish(reply, "", statusHeaders(409, `Exceeded MaxRequestMaxBytes of ${c.max_bytes}`), EMPTY);
      return;
    }
    if (q.hbMs > 0 && q.expiresNs > 0 && q.hbMs * 2 > q.expiresNs / 1e6) {
      bus.publish(reply, "", statusHeaders(400, "Bad Request - heartbeat value too large"), EMPTY);
      return;
    }
    const rejected = pullRejection(c.priority_policy, c.priority_groups, q.pg, this.pins.id);
    if (rejected !== null) {
      bus.publish(reply, "", rejected, EMPTY);
      return;
    }
    const now = this.env.clock.monoMs();
    this.lastActivityMs = now;
    this.pins.touch(q.pg, c.priority_timeout, now);
    if (q.noWait && q.expiresNs === 0 && !this.hasAvailable()) {
      bus.publish(reply, "", ST_NO_MESSAGES, EMPTY);
      return;
    }
    if (q.noWait && this.waiting.length > 0 && this.requestsPending(now)) {
      bus.publish(reply, "", ST_REQUESTS_PENDING, EMPTY);
      return;
    }
    if (this.waiting.isFull()) {
      this.sweepWaiting(now);
      if (this.waiting.isFull()) {
        if (q.hbMs === 0) bus.publish(reply, "", ST_EXCEEDED_MAX_WAITING, EMPTY);
        return;
      }
    }
    const r: PullRequest = {
      reply,
      batch: q.batch,
      maxBytes: q.maxBytes,
      expiresAtMs: q.expiresNs > 0 ? now + q.expiresNs / 1e6 : 0,
      noWait: q.noWait,
      hbMs: q.hbMs,
      lastMs: now,
      delivered: 0,
      pg: q.pg,
    };
    this.waiting.push(r);
    this.kick();
    if (this.waiting.length > 0) {
      // The coarse tick sends idle heartbeats and sweeps; wakeAt makes the 408 punctual.
      this.env.ticker.want(this);
      if (r.expiresAtMs > 0) this.env.ticker.wakeAt(this, r.expiresAtMs);
    } else if (this.pins.id !== "") this.env.ticker.want(this); // the pin's timeout
  }

  /** nats-server processNextMsgRequest: a no_wait request is refused with 408 Requests
   *  Pending when the open requests already want more messages than there are to deliver
   *  (new ones plus queued redeliveries). */
  private requestsPending(now: number): boolean {
    const avail = this.computeNumPending() + (this.rdq.length - this.rdqHead);
    if (avail === 0) return false;
    this.sweepWaiting(now);
    let wanted = 0;
    for (const r of this.waiting.all()) wanted += r.batch;
    return avail < wanted;
  }

  /** Ask the ticker to fire at the next redelivery deadline within horizonMs. */
  private wakeForDeadline(now: number, horizonMs: number): void {
    const at = this.wheel.nextDueMs(now, horizonMs);
    if (at !== Infinity) this.env.ticker.wakeAt(this, at);
  }

  /** Ask the ticker to fire when the earliest open request expires. */
  private wakeForExpiry(): void {
    let at = Infinity;
    for (const r of this.waiting.all()) if (r.expiresAtMs > 0 && r.expiresAtMs < at) at = r.expiresAtMs;
    if (at !== Infinity) this.env.ticker.wakeAt(this, at);
  }

  /** Drop expired requests (408) and those nobody listens to any more (silently). */
  private sweepWaiting(now: number): void {
    const bus = this.env.bus;
    this.waiting.sweep((r) => {
      if (r.expiresAtMs > 0 && now >= r.expiresAtMs) {
        bus.publish(r.reply, "", pendingStatus(408, "Request Timeout", r.batch, r.maxBytes), EMPTY);
        return true;
      }
      return !bus.hasInterest(r.reply);
    });
  }

  numWaiting(): number {
    this.sweepWaiting(this.env.clock.monoMs());
    return this.waiting.length;
  }

  // ---------- the tick ----------

  tick(now: number): boolean {
    if (this.stopped) return false;
    const bus = this.env.bus;
    // Redeliveries that are due.
    const due = this.scratch;
    due.length = 0;
    this.wheel.expire(now, due);
    let redeliver = false;
    for (const seq of due) {
      if (!this.state.pending.has(seq)) continue;
      this.dueForRedelivery(seq);
      redeliver = true;
    }
    due.length = 0;
    // Deadlines before the next coarse tick get a wake-up of their own (one timer still).
    this.wakeForDeadline(now, 2 * TICK_MS);
    const unpinned = this.pins.expire(this.cfg.priority_groups[0] ?? "", now);
    const push = isPush(this.cfg);
    if (!push && this.waiting.length > 0) {
      this.sweepWaiting(now);
      for (const r of this.waiting.all()) {
        if (r.hbMs > 0 && now - r.lastMs >= r.hbMs) {
          r.lastMs = now;
          bus.publish(r.reply, "", heartbeatStatus(this.state.delivered.consumerSeq, this.state.delivered.streamSeq, ""), EMPTY);
        }
      }
      this.wakeForExpiry();
    }
    let bound = false;
    if (push) {
      bound = this.deliverInterest();
      const hb = this.cfg.idle_heartbeat / 1e6;
      if (bound && hb > 0 && now - this.lastPushMs >= hb) {
        this.lastPushMs = now;
        bus.publish(
          this.cfg.deliver_subject,
          "",
          heartbeatStatus(this.state.delivered.consumerSeq, this.state.delivered.streamSeq, this.fcOutstanding),
          EMPTY,
        );
      }
    }
    // Inactivity: ephemerals (and durables with a threshold) go when nobody uses them.
    const it = this.cfg.inactive_threshold / 1e6;
    if (it > 0) {
      const active = push ? bound : this.waiting.length > 0;
      if (active) this.lastActivityMs = now;
      else if (now - this.lastActivityMs >= it) {
        this.env.onSelfDelete(this);
        return false;
      }
    }
    const held = this.timeHeld;
    this.timeHeld = false;
    if (redeliver || push || held || unpinned || this.cfg.pause_until_ns > 0) this.kick();
    return (
      !this.stopped &&
      (this.wheel.size > 0 || this.waiting.length > 0 || push || it > 0 || this.cfg.pause_until_ns > 0 || this.timeHeld || this.pins.id !== "")
    );
  }

  // ---------- pause ----------

  setPause(untilNs: number): void {
    this.cfg = { ...this.cfg, pause_until_ns: untilNs };
    this.env.ticker.want(this);
    this.kick();
  }

  // ---------- state and info ----------

  private persist(): void {
    if (this.store !== null) this.store.update(this.state);
  }

  /** The store's view for tests. */
  snapshot(): ConsumerState {
    return this.state;
  }

  /** A durable consumer's config and progress for a stream snapshot; null for ephemerals. */
  exportDurable(): { name: string; createdNs: number; config: Record<string, unknown>; state: ConsumerState } | null {
    if (this.cfg.durable_name === "") return null;
    return { name: this.name, createdNs: this.createdNs, config: consumerConfigToWire(this.cfg, false), state: this.state };
  }

  /** The consumer's store (file consumers); for a durability barrier. */
  storeOf(): ConsumerStore | null {
    return this.store;
  }

  info(type: string): Record<string, unknown> {
    const s = this.state;
    const nowNs = this.env.clock.nowNs();
    const delivered: Record<string, unknown> = { consumer_seq: s.delivered.consumerSeq, stream_seq: s.delivered.streamSeq };
    if (this.lastActiveNs > 0) delivered["last_active"] = rfc3339Ns(this.lastActiveNs);
    const ackFloor: Record<string, unknown> = { consumer_seq: s.ackFloor.consumerSeq, stream_seq: s.ackFloor.streamSeq };
    if (this.ackActiveNs > 0) ackFloor["last_active"] = rfc3339Ns(this.ackActiveNs);
    const out: Record<string, unknown> = {
      type,
      stream_name: this.stream.name,
      name: this.name,
      created: rfc3339Ns(this.createdNs),
      config: consumerConfigToWire(this.cfg, true),
      delivered,
      ack_floor: ackFloor,
      num_ack_pending: s.pending.size,
      num_redelivered: s.redelivered.size,
      num_waiting: isPush(this.cfg) ? 0 : this.numWaiting(),
      num_pending: this.computeNumPending(),
      cluster: { leader: this.env.serverName },
    };
    if (isPush(this.cfg) && this.deliverInterest()) out["push_bound"] = true;
    if (this.isPaused()) {
      out["paused"] = true;
      out["pause_remaining"] = this.cfg.pause_until_ns - nowNs;
    }
    out["ts"] = rfc3339Ns(nowNs);
    const pgs = this.pins.info(this.cfg.priority_groups, rfc3339Ns);
    if (pgs !== null) out["priority_groups"] = pgs;
    return out;
  }
}

/** Go's time.Duration String() for the common whole units. */
function goDurationShort(ns: number): string {
  if (ns % 1e9 === 0) {
    let s = ns / 1e9;
    const h = Math.floor(s / 3600);
    s -= h * 3600;
    const m = Math.floor(s / 60);
    s -= m * 60;
    return (h > 0 ? `${h}h` : "") + (h > 0 || m > 0 ? `${m}m` : "") + `${s}s`;
  }
  if (ns < 1e6) return `${ns / 1e3}µs`;
  if (ns < 1e9) return `${ns / 1e6}ms`;
  return `${ns / 1e9}s`;
}
