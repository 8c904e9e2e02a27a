// Acks of one consumer: the ack subject read in place (from a client's read buffer, or as a
// routed message), the payload (+ACK, -NAK with a delay, +WPI, +TERM with a reason, +NXT)
// turned into ledger operations, and their effects after the ledger applied them: deadlines,
// advisories, dead letters, the retention of workqueue and interest streams, the ack reply
// once the state is durable, and the delivery that the freed room allows.

import { AckKind, AckTail, parseAck, parseAckSubject } from "./ack.js";
import { ADV, ADV_TYPE, EMPTY, type ConsumerCore } from "./core.js";
import { deadLetter } from "./deadletter.js";
import { Outcome, type ExpiredOp, type NakOp, type ProgressOp, type TermOp } from "./ledger.js";
import type { PullRequests } from "./pull.js";
import { TICK_MS } from "./wheel.js";

interface AckNumbers {
  dc: number;
  sseq: number;
  cseq: number;
}

export class AckHandler {
  private readonly ackNums = new AckTail();
  private sampleAcc = 0;
  private readonly nakOp: NakOp = { op: "nak", sseq: 0, delay: 0 };
  private readonly expiredOp: ExpiredOp = { op: "expired", sseq: 0 };
  private readonly termOp: TermOp = { op: "term", sseq: 0 };
  private readonly progressOp: ProgressOp = { op: "progress", sseq: 0, ts: 0 };

  constructor(
    private readonly c: ConsumerCore,
    private readonly pulls: PullRequests,
  ) {}

  /** The numbers of a v1 ack subject of this consumer ("<ackPrefix>dc.sseq.cseq.ts.pending"),
   *  read in place into ackNums; false for anything else (then parseAckSubject decides). */
  private parseOwnAck(subject: string): boolean {
    // Only our subscription (ackPrefix + ">") delivers here, so the prefix is there already.
    const pre = this.c.ackPrefix;
    if (subject.length <= pre.length) return false;
    const t = this.ackNums;
    t.begin();
    for (let i = pre.length; i < subject.length; i++) if (!t.step(subject.charCodeAt(i))) return false;
    return t.end();
  }

  readonly onAckMsg = (subject: string, reply: string, _hdr: Buffer | null, payload: Buffer): void => {
    if (this.c.stopped) return;
    let t: AckNumbers | null = this.ackNums;
    if (!this.parseOwnAck(subject)) t = parseAckSubject(subject);
    if (t === null) return;
    this.handle(t, reply, payload);
  };

  /** A client's ack straight from its read buffer (Bus.subscribeAck): buf[start, end) is the
   *  subject after ackPrefix. Only the five-number v1 form is taken here; anything else goes
   *  back to routing and reaches onAckMsg. */
  readonly onAckBytes = (buf: Buffer, start: number, end: number, reply: string, pbuf: Buffer, pstart: number, pend: number): boolean => {
    const t = this.ackNums;
    t.begin();
    for (let i = start; i < end; i++) if (!t.step(buf[i]!)) return false;
    if (!t.end()) return false;
    if (this.c.stopped) return true;
    // The payload is read during the call only (parseAck copies what it keeps): a view will do.
    this.handle(t, reply, pstart === pend ? EMPTY : pbuf.subarray(pstart, pend));
    return true;
  };

  private handle(t: AckNumbers, reply: string, payload: Buffer): void {
    const a = parseAck(payload);
    if (a === null) return;
    const c = this.c;
    c.lastActivityMs = c.env.clock.monoMs();
    // An ack or term of a sequence past what this consumer has delivered: a delivery that a
    // former leader of a replicated consumer made and did not commit (this leader will
    // deliver it again). Not ours to settle, and not confirmed to an AckSync: the client must
    // not take it as acknowledged (nats-server: processAckMsg returns false for sseq >= the
    // next sequence to deliver, and no ack reply is sent).
    if ((a.kind === AckKind.Ack || a.kind === AckKind.Term || a.kind === AckKind.Next) && t.sseq > c.ledger.deliveredStreamSeq) {
      if (a.kind === AckKind.Next && reply !== "") this.pulls.pull(reply, Buffer.from(a.arg, "utf8"));
      return;
    }
    switch (a.kind) {
      case AckKind.Ack:
        if (c.cfg.sample_freq !== "") this.sampleAck(t.sseq, t.cseq);
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
        if (c.cfg.sample_freq !== "") this.sampleAck(t.sseq, t.cseq);
        this.ack(t.sseq, t.cseq);
        if (reply !== "") this.pulls.pull(reply, Buffer.from(a.arg, "utf8"));
        break;
    }
  }

  /** sample_freq: an ack metric for that share of the acks of pending messages. Exactly
   *  every (100/freq)th ack rather than nats-server's random draw: the same share, and
   *  deterministic. */
  private sampleAck(seq: number, cseq: number): void {
    const c = this.c;
    const p = c.ledger.pendingEntry(seq);
    if (p === undefined) return;
    const freq = Number.parseInt(c.cfg.sample_freq, 10);
    if (!(freq > 0)) return;
    this.sampleAcc += Math.min(freq, 100);
    if (this.sampleAcc < 100) return;
    this.sampleAcc -= 100;
    c.env.advisory(`$JS.EVENT.METRIC.CONSUMER.ACK.${c.stream.name}.${c.name}`, {
      type: "io.nats.jetstream.metric.v1.consumer_ack",
      stream: c.stream.name,
      consumer: c.name,
      consumer_seq: cseq,
      stream_seq: seq,
      ack_time: c.env.clock.nowNs() - p.tsNs,
      deliveries: c.ledger.deliveries(seq),
    });
  }

  private ackReply(reply: string, durable: boolean): void {
    if (reply === "") return;
    const bus = this.c.env.bus;
    // A replicated consumer answers once its operations so far are committed (quorum fsync).
    if (this.c.repl !== null) return this.c.repl.replyAfterCommit(reply);
    const st = this.c.store;
    // No answer when the ack could not be made durable (a full disk): the client's ack
    // request times out and it can try again, rather than being told it is done.
    if (durable && st !== null) st.sync((err) => err === null && bus.publish(reply, "", null, EMPTY));
    else bus.publish(reply, "", null, EMPTY);
  }

  /** Explicit or cumulative ack of a stream sequence (cseq: the delivery the ack names);
   *  unknown sequences are ignored. */
  ack(seq: number, cseq: number): void {
    const c = this.c;
    if (c.commitAcked(seq, cseq) === Outcome.None) return;
    c.ackActiveNs = c.env.clock.nowNs();
    c.persist();
    if (c.stream.retention() !== "limits") {
      // (removed is a copy: the stream's removal may come back here and apply more.)
      if (c.cfg.ack_policy === "all") for (const k of c.ledger.removed) this.notifyAck(k);
      else this.notifyAck(seq);
    }
    c.kickSoon();
  }

  private nak(seq: number, cseq: number, delayNs: number): void {
    const c = this.c;
    if (c.cfg.ack_policy === "none" || !c.ledger.isPending(seq)) return;
    const dc = c.ledger.deliveries(seq);
    c.env.advisory(`${ADV}MSG_NAKED.${c.stream.name}.${c.name}`, {
      type: ADV_TYPE + "nak",
      stream: c.stream.name,
      consumer: c.name,
      consumer_seq: cseq,
      stream_seq: seq,
      deliveries: dc,
    });
    const op = this.nakOp;
    op.sseq = seq;
    op.delay = delayNs;
    if (delayNs > 0) {
      c.commit(op);
      const now = c.env.clock.monoMs();
      c.wheel.schedule(seq, now + delayNs / 1e6);
      c.env.ticker.want(c);
      c.wakeForDeadline(now, 2 * TICK_MS);
      return;
    }
    c.wheel.cancel(seq);
    this.afterDue(seq, dc, c.commit(op));
    c.kick();
  }

  /** The ack wait of seq passed (from the tick): queue it for redelivery, or max_deliver.
   *  False when it is no longer pending. */
  expired(seq: number): boolean {
    const c = this.c;
    if (!c.ledger.isPending(seq)) return false;
    const dc = c.ledger.deliveries(seq);
    const op = this.expiredOp;
    op.sseq = seq;
    this.afterDue(seq, dc, c.commit(op));
    return true;
  }

  /** After a nak or an expired ack wait: at max_deliver, the advisory and the dead letter. */
  private afterDue(seq: number, dc: number, o: Outcome): void {
    if (o !== Outcome.MaxDelivered) return;
    const c = this.c;
    c.env.advisory(`${ADV}MAX_DELIVERIES.${c.stream.name}.${c.name}`, {
      type: ADV_TYPE + "max_deliver",
      stream: c.stream.name,
      consumer: c.name,
      stream_seq: seq,
      deliveries: dc,
    });
    this.deadLetter(seq, dc, "max_deliver", "");
    c.persist();
  }

  private progress(seq: number): void {
    const c = this.c;
    const op = this.progressOp;
    op.sseq = seq;
    op.ts = c.env.clock.nowNs();
    if (c.commit(op) === Outcome.None) return;
    const now = c.env.clock.monoMs();
    const waitMs = c.ackWaitMs(c.ledger.deliveries(seq));
    c.wheel.schedule(seq, now + waitMs);
    if (waitMs < 2 * TICK_MS) c.wakeForDeadline(now, 2 * TICK_MS);
  }

  /** +TERM: like an ack, plus a MSG_TERMINATED advisory, which nats-server sends even when
   *  the message is no longer pending (then with the delivery count of the ack subject). */
  private term(seq: number, cseq: number, ackDc: number, reason: string): void {
    const c = this.c;
    if (c.cfg.ack_policy === "none") return;
    const pending = c.ledger.isPending(seq);
    const dc = pending ? c.ledger.deliveries(seq) : ackDc;
    const body: Record<string, unknown> = {
      type: ADV_TYPE + "terminated",
      stream: c.stream.name,
      consumer: c.name,
      consumer_seq: cseq,
      stream_seq: seq,
      deliveries: dc,
    };
    if (reason !== "") body["reason"] = reason;
    c.env.advisory(`${ADV}MSG_TERMINATED.${c.stream.name}.${c.name}`, body);
    const op = this.termOp;
    op.sseq = seq;
    const o = c.commit(op);
    if (!pending) {
      if (o !== Outcome.None) c.persist();
      return;
    }
    this.deadLetter(seq, dc, "term", reason);
    c.persist();
    if (c.stream.retention() !== "limits") this.notifyAck(seq);
    c.kick();
  }

  private deadLetter(seq: number, dc: number, reason: "max_deliver" | "term", termReason: string): void {
    const c = this.c;
    const subj = c.cfg.dead_letter_subject;
    if (subj === "") return;
    const m = c.stream.store.loadMsg(seq);
    if (m === null) return;
    deadLetter(c.env.bus, subj, c.stream.name, c.name, m, dc, reason, termReason);
  }

  private notifyAck(seq: number): void {
    const stream = this.c.stream;
    if (stream.retention() === "workqueue") {
      stream.onAck(seq, "");
      return;
    }
    const m = stream.store.loadMsg(seq);
    if (m !== null) stream.onAck(seq, m.subject);
  }
}
