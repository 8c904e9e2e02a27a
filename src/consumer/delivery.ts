// Delivery: the loop that picks the next message (queued redeliveries first, then new ones
// in stream order, the last-per-subject phase first when there is one) and sends it, to the
// deliver subject (push, with flow control, rate limit and replay timing) or to the open pull
// requests (fan-out in the waiting list's order, max_bytes, priority groups). Each message
// sent is a `delivered` operation on the ledger.
//
// Delivery is synchronous: ConsumerCore.kick() runs the loop until nothing more can go out,
// except when a receiver is backed up (then it stops and looks again shortly). On a
// replicated stream a message is sent once its `delivered` operation commits (outbox.ts);
// the loop pauses while the outbox is full and resumes when a commit empties it.

import type { TimerHandle } from "../runtime/clock.js";
import type { StoredMsg } from "../storage/types.js";
import { appendHeaders } from "../protocol/headers.js";
import { AckReply } from "../protocol/ackreply.js";
import { ackSubject } from "./ack.js";
import { isPush } from "./config.js";
import { EMPTY, type ConsumerCore } from "./core.js";
import type { GoneOp } from "./ledger.js";
import { pendingStatus, ST_FLOW_CONTROL, ST_NO_MESSAGES } from "./waiting.js";
import { TICK_MS } from "./wheel.js";

const FC_WINDOW_START_BYTES = 2 * 1024 * 1024;
const FC_WINDOW_MAX_BYTES = 32 * 1024 * 1024;

/** A candidate for the next delivery, chosen before committing to it (max_bytes). */
interface Pick {
  msg: StoredMsg;
  redelivery: boolean;
  dc: number;
}

export class Delivery {
  private readonly c: ConsumerCore;
  /** The reply subject of the delivery being made, as numbers (Bus.deliverAck). */
  private readonly ackReplyTail: AckReply;
  private readonly fcPrefix: string;
  /** The flow-control request awaiting its reply ("" = none); idle heartbeats carry it. */
  fcOutstanding = "";
  private fcSeq = 0;
  private fcBytes = 0;
  private fcBytesAtSend = 0;
  private fcWindow = FC_WINDOW_START_BYTES;
  // The last delivery found its receiver backed up: stop, and look again shortly (the
  // delivery loop is synchronous, so without this a large stream lands in one client's
  // outbound buffer at once and the client is closed as a slow consumer).
  private congested = false;
  /** The outbox holds as much as it may (replicated): stop until a commit resumes the loop. */
  private outboxFull = false;
  private congestionTimer: TimerHandle | null = null;
  // replay_policy original: until the consumer has caught up with what the stream held when
  // it started, each message waits as long after the previous delivery as it was stored
  // after the previous message (nats-server loopAndGatherMsgs).
  private replay: boolean;
  private readonly replayEndSeq: number;
  private replayLastTsNs = 0;
  private replayLastMs = 0;
  // rate_limit_bps (push): a token bucket of bytes, refilled at bps/8 per second, holding at
  // most the stream's max_msg_size (else the 1 MiB default payload), as nats-server sizes it.
  private rlTokens = 0;
  private rlLastMs = 0;
  private rlBurst = 0;
  // One clock reading per delivery loop (the loop is bounded by congestion, so it is fresh
  // to within a few ms): two clock calls per message were a visible share of delivery.
  private runNowNs = 0;
  private runMonoMs = 0;
  // pick()'s result, reused: the caller uses it before the next pick().
  private readonly picked: Pick = { msg: { seq: 0, subject: "", hdr: null, data: EMPTY, tsNs: 0 }, redelivery: false, dc: 1 };
  private readonly goneSeq: number[] = [0];
  private readonly goneOp: GoneOp = { op: "gone", sseqs: this.goneSeq };
  private readonly onCongestionTimer = (): void => {
    this.congestionTimer = null;
    this.c.kick();
  };

  constructor(c: ConsumerCore) {
    this.c = c;
    this.ackReplyTail = new AckReply(c.ackPrefix);
    this.fcPrefix = "$JS.FC." + c.stream.name + "." + c.name + ".";
    this.replay = c.cfg.replay_policy === "original";
    this.replayEndSeq = this.replay ? c.stream.store.state().lastSeq : 0;
  }

  /** The subjects flow-control replies come to ("$JS.FC.<stream>.<consumer>.*"). */
  get fcSubject(): string {
    return this.fcPrefix + "*";
  }

  start(): void {
    if (this.c.ledger.deliveredStreamSeq >= this.replayEndSeq) this.replay = false;
  }

  stop(): void {
    if (this.congestionTimer !== null) {
      this.c.env.clock.clearTimer(this.congestionTimer);
      this.congestionTimer = null;
    }
  }

  run(): void {
    const c = this.c;
    if (c.isPaused() || this.congestionTimer !== null) return;
    const clock = c.env.clock;
    this.congested = false;
    this.outboxFull = false;
    const ob = c.outbox;
    if (ob !== null) {
      if (ob.congested) {
        // What the last commit released found its receiver backed up: look again shortly.
        ob.congested = false;
        this.congestionTimer = clock.setTimer(this.onCongestionTimer, 1);
        return;
      }
      if (ob.full) {
        ob.stalled = true;
        return;
      }
    }
    this.runNowNs = clock.nowNs();
    this.runMonoMs = clock.monoMs();
    if (isPush(c.cfg)) this.runPush();
    else this.runPull();
    if (this.congested && !c.stopped) this.congestionTimer = clock.setTimer(this.onCongestionTimer, 1);
  }

  // ---------- push ----------

  private runPush(): void {
    const c = this.c;
    const to = c.cfg.deliver_subject;
    if (!c.deliverInterest()) return;
    let any = false;
    for (;;) {
      if (c.stopped) return;
      if (c.cfg.flow_control && this.fcOutstanding !== "" && this.fcBytes >= this.fcWindow) break;
      const p = this.pick();
      if (p === null || this.replayHold(p) || this.rateHold(p)) break;
      const size = this.deliver(p, to);
      if (this.rlBurst > 0) this.rlTokens -= size;
      any = true;
      c.lastPushMs = this.runMonoMs;
      if (c.cfg.flow_control) {
        this.fcBytes += size;
        if (this.fcOutstanding === "" && this.fcBytes >= this.fcWindow / 2) this.sendFlowControl();
      }
      if (this.congested || this.outboxFull) break;
    }
    if (any) c.persist();
  }

  private sendFlowControl(): void {
    this.fcOutstanding = this.fcPrefix + ++this.fcSeq;
    this.fcBytesAtSend = this.fcBytes;
    this.c.out.publish(this.c.cfg.deliver_subject, this.fcOutstanding, ST_FLOW_CONTROL, EMPTY);
  }

  readonly onFcMsg = (subject: string): void => {
    if (this.c.stopped || subject !== this.fcOutstanding) return;
    this.fcOutstanding = "";
    this.fcBytes = Math.max(0, this.fcBytes - this.fcBytesAtSend);
    this.fcWindow = Math.min(FC_WINDOW_MAX_BYTES, this.fcWindow * 2);
    this.c.kick();
  };

  /** replay_policy original: true (and a wake-up asked for) while p must still wait. */
  private replayHold(p: Pick): boolean {
    if (!this.replay) return false;
    if (this.replayLastTsNs === 0) return false;
    const delayMs = (p.msg.tsNs - this.replayLastTsNs) / 1e6;
    if (delayMs <= 1) return false;
    const due = this.replayLastMs + delayMs;
    const c = this.c;
    if (c.env.clock.monoMs() >= due) return false;
    c.timeHeld = true;
    c.env.ticker.wakeAt(c, due);
    return true;
  }

  /** rate_limit_bps: true (and a wake-up asked for) while the bucket lacks p's bytes. */
  private rateHold(p: Pick): boolean {
    const c = this.c;
    const bps = c.cfg.rate_limit_bps;
    if (bps <= 0) {
      this.rlBurst = 0;
      return false;
    }
    const now = c.env.clock.monoMs();
    const perMs = bps / 8 / 1000;
    if (this.rlBurst === 0) {
      const mms = c.stream.wireConfig()["max_msg_size"];
      this.rlBurst = typeof mms === "number" && mms > 0 ? mms : 1024 * 1024;
      this.rlTokens = this.rlBurst;
    } else {
      this.rlTokens = Math.min(this.rlBurst, this.rlTokens + (now - this.rlLastMs) * perMs);
    }
    this.rlLastMs = now;
    const m = p.msg;
    // A message bigger than the bucket goes once the bucket is full (never, in nats-server).
    const need = Math.min(this.rlBurst, m.subject.length + c.ackPrefix.length + 40 + (m.hdr?.length ?? 0) + m.data.length);
    if (this.rlTokens >= need) return false;
    c.timeHeld = true;
    c.env.ticker.wakeAt(c, now + (need - this.rlTokens) / perMs);
    return true;
  }

  private replayDelivered(m: StoredMsg): void {
    this.replayLastTsNs = m.tsNs;
    this.replayLastMs = this.c.env.clock.monoMs();
    if (this.c.ledger.deliveredStreamSeq >= this.replayEndSeq) this.replay = false;
  }

  // ---------- pull ----------

  private runPull(): void {
    const c = this.c;
    const bus = c.env.bus;
    const waiting = c.waiting;
    let any = false;
    let exhausted = false;
    while (waiting.length > 0 && !c.stopped) {
      let r = waiting.peek()!;
      if (!bus.hasInterest(r.reply)) {
        waiting.shift();
        continue;
      }
      const p = this.pick();
      if (p === null) {
        exhausted = true;
        break;
      }
      if (this.replayHold(p)) break;
      if (c.cfg.priority_policy !== "") {
        if (!this.selectByPriority()) break;
        r = waiting.peek()!;
      }
      if (r.maxBytes > 0) {
        const size = p.msg.subject.length + c.ackPrefix.length + 40 + (p.msg.hdr?.length ?? 0) + p.msg.data.length;
        if (size > r.maxBytes) {
          c.pins.dropped(r);
          waiting.shift();
          c.out.publish(r.reply, "", pendingStatus(409, "Message Size Exceeds MaxBytes", r.batch, r.maxBytes), EMPTY);
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
          c.out.publish(r.reply, "", pendingStatus(409, "Batch Completed", 0, r.maxBytes), EMPTY);
        }
      }
      if (r.batch <= 0) waiting.shift();
      else waiting.rotate();
      if (this.congested || this.outboxFull) break;
    }
    if (exhausted || waiting.length > 0) this.finishNoWait();
    if (any) c.persist();
  }

  /** overflow / pinned_client: bring the request that may take the next message to the
   *  head of the waiting list; false if none may now. */
  private selectByPriority(): boolean {
    const c = this.c;
    const cfg = c.cfg;
    const np = cfg.priority_policy === "overflow" ? c.numPending() : 0;
    return c.pins.select(cfg.priority_policy, cfg.priority_groups[0] ?? "", cfg.priority_timeout, c.waiting, c.env.bus, np, c.ledger.numAckPending, this.runMonoMs, this.runNowNs, c.out);
  }

  /** no_wait requests end with 404 No Messages once nothing more is available now: those
   *  without expires, and those with expires that got something (one with expires that got
   *  nothing waits for a message or its 408). nats-server 2.11.11 / 2.12.2 changed this;
   *  before, a partly served no_wait request ended with 408 Request Timeout and a no_wait
   *  request with expires waited for its expiry in every case. */
  private finishNoWait(): void {
    const c = this.c;
    if (c.waiting.length === 0) return;
    if (this.hasAvailable()) return;
    const out = c.out;
    c.waiting.sweep((r) => {
      if (!r.noWait || (r.expiresAtMs > 0 && r.delivered === 0)) return false;
      out.publish(r.reply, "", ST_NO_MESSAGES, EMPTY);
      return true;
    });
  }

  /** True when there is something to deliver, now or once acks make room under
   *  max_ack_pending: nats-server ends a no_wait request only at the end of the stream, and
   *  keeps one that max_ack_pending holds back waiting. */
  hasAvailable(): boolean {
    if (this.pick() !== null) return true;
    if (this.c.ledger.canDeliverNew()) return false;
    return this.c.numPending() > 0;
  }

  // ---------- picking and sending ----------

  /** The next message to deliver: redeliveries first, then new ones. Drops redelivery
   *  entries that are no longer pending or whose message is gone. */
  private pick(): Pick | null {
    const c = this.c;
    const ledger = c.ledger;
    const store = c.stream.store;
    for (let seq = ledger.nextRedelivery(); seq !== 0; seq = ledger.nextRedelivery()) {
      if (!ledger.isPending(seq) || c.wheel.has(seq)) {
        ledger.dropRedelivery();
        continue;
      }
      const m = store.loadMsg(seq);
      if (m === null) {
        ledger.dropRedelivery();
        this.goneSeq[0] = seq;
        c.commit(this.goneOp);
        c.persist();
        continue;
      }
      return this.pickedAs(m, true, ledger.deliveries(seq) + 1);
    }
    if (!ledger.canDeliverNew()) return null;
    const lps = c.lps;
    if (lps !== null) {
      while (lps.length > 0) {
        if (lps[0]! > c.stream.visibleSeq) return null;
        const m = store.loadMsg(lps[0]!);
        if (m !== null) return this.pickedAs(m, false, 1);
        lps.shift();
      }
      c.endLps();
    }
    const from = ledger.deliveredStreamSeq + 1;
    // Only up to the stream's visible (durable) sequence, whatever kicked this consumer.
    const last = Math.min(store.state().lastSeq, c.stream.visibleSeq);
    if (from > last) return null;
    let best: StoredMsg | null = null;
    const fl = c.filterList();
    for (let i = 0; i < fl.length; i++) {
      // Sent at once and not kept: views of the store's cache are fine (not when an outbox
      // holds the message until its delivery commits).
      const m = store.loadNextMsgTransient !== undefined && c.outbox === null ? store.loadNextMsgTransient(fl[i]!, from) : store.loadNextMsg(fl[i]!, from);
      if (m !== null && m.seq <= last && (best === null || m.seq < best.seq)) best = m;
    }
    if (best === null) {
      // Nothing matches up to the end: remember that so the next look starts later. The ack
      // floor stays (nats-server moves it only on acks and deliveries).
      if (c.filters.length > 0) c.skipTo(last);
      return null;
    }
    return this.pickedAs(best, false, 1);
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
    const c = this.c;
    const cfg = c.cfg;
    const m = p.msg;
    const seq = m.seq;
    const nowNs = this.runNowNs;
    const cseq = c.ledger.deliveredConsumerSeq + 1;
    if (!p.redelivery) {
      // Before the delivery: the last of the last-per-subject phase moves delivered to the
      // phase's end, which an ack-none floor then follows.
      const lps = c.lps;
      if (lps !== null && lps[0] === seq) {
        lps.shift();
        if (lps.length === 0) c.endLps();
        else if (c.numPendingCache > 0) c.numPendingCache--;
      } else if (c.numPendingCache > 0) c.numPendingCache--;
    }
    c.commitDelivered(seq, cseq, p.dc, nowNs);
    c.lastActiveNs = nowNs;
    const pending = c.numPending();
    const ackNone = cfg.ack_policy === "none";
    if (!ackNone) {
      const waitMs = c.ackWaitMs(p.dc);
      c.wheel.schedule(seq, this.runMonoMs + waitMs);
      // The tick looks 2 ticks ahead; only a wait shorter than that needs a wake-up now.
      if (waitMs < 2 * TICK_MS) c.wakeForDeadline(this.runMonoMs, 2 * TICK_MS);
    }
    let hdr = m.hdr;
    let data = m.data;
    if (cfg.headers_only) {
      hdr = appendHeaders(m.hdr, [["Nats-Msg-Size", String(m.data.length)]]);
      data = EMPTY;
    }
    if (c.pins.id !== "" && cfg.priority_policy === "pinned_client") hdr = c.pins.withPinHeader(hdr);
    const bus = c.env.bus;
    let replyLen: number;
    const ob = c.outbox;
    if (ob !== null) {
      const ar = this.ackReplyTail;
      ar.set(p.dc, seq, cseq, m.tsNs, pending);
      replyLen = ar.length();
      ob.deliver(to, m.subject, hdr, data, m.subject.length + replyLen + (hdr?.length ?? 0) + data.length, p.dc, seq, cseq, m.tsNs, pending);
      if (ob.full) {
        ob.stalled = true;
        this.outboxFull = true;
      }
    } else if (bus.deliverAck !== undefined) {
      const ar = this.ackReplyTail;
      ar.set(p.dc, seq, cseq, m.tsNs, pending);
      replyLen = ar.length();
      if (bus.deliverAck(to, m.subject, ar, hdr, data)) this.congested = true;
    } else {
      const reply = ackSubject(c.ackPrefix, p.dc, seq, cseq, m.tsNs, pending);
      replyLen = reply.length;
      if (bus.deliverAs !== undefined) {
        if (bus.deliverAs(to, m.subject, reply, hdr, data)) this.congested = true;
      } else bus.publish(to, reply, hdr, data);
    }
    if (this.replay) this.replayDelivered(m);
    if (ackNone) {
      c.ackActiveNs = nowNs;
      if (c.stream.retention() !== "limits") c.stream.onAck(seq, m.subject);
    }
    return m.subject.length + replyLen + (hdr?.length ?? 0) + data.length;
  }
}
