// A consumer's progress as a pure state machine: what was delivered, what is pending an ack
// (with its consumer sequence, last delivery time and delivery count), the ack floor, and
// the queue of sequences due for redelivery. Every change is an operation value applied by
// apply(op), so that the same operations applied in the same order give the same state on
// any server (a replicated consumer will propose them through Raft and apply them on every
// replica). No clock, timer or I/O in here: times come inside the operations, ack deadlines
// live in the consumer's RedeliveryWheel, and side effects (advisories, dead letters,
// workqueue removal) are the caller's, after apply() says what happened.
//
// `state` is the ConsumerState the ConsumerStore persists (the store keeps a reference and
// encodes it at its next flush), so the on-disk format is the store's, unchanged.
//
// apply(op) is the same as calling the method of that name with the operation's fields; the
// consumer calls delivered() and acked() directly on its hot path (a delivery and an ack per
// message: no operation object, no dispatch), and builds values for the rest. Nothing here
// allocates per message but a delivery's pending entry.

import type { ConsumerPending, ConsumerState } from "../storage/types.js";

/** A message went out: to dseq, the consumer sequence it got; dc is its delivery count (1
 *  for a first delivery; more is a redelivery); ts its delivery time (wall ns). */
export interface DeliveredOp {
  op: "delivered";
  sseq: number;
  dseq: number;
  dc: number;
  ts: number;
}
/** An ack of sseq (explicit), or of everything up to sseq and its delivery dseq (ack all). */
export interface AckedOp {
  op: "acked";
  sseq: number;
  dseq: number;
}
/** -NAK: with delay 0 the message is due for redelivery now (or hits max_deliver); with a
 *  delay (ns) it stays pending and the caller schedules its deadline. */
export interface NakOp {
  op: "nak";
  sseq: number;
  delay: number;
}
/** The ack wait of sseq passed: due for redelivery, or max_deliver is reached. */
export interface ExpiredOp {
  op: "expired";
  sseq: number;
}
/** +TERM: no more deliveries of sseq (like an ack); when not pending, its count goes. */
export interface TermOp {
  op: "term";
  sseq: number;
}
/** +WPI: the pending entry's delivery time becomes ts (the ack wait restarts). */
export interface ProgressOp {
  op: "progress";
  sseq: number;
  ts: number;
}
/** These messages left the stream: their pending entries and delivery counts go. */
export interface GoneOp {
  op: "gone";
  sseqs: readonly number[];
}
/** Nothing to deliver up to sseq (no match, end of last-per-subject): delivered moves up to
 *  it; the ack floor stays (it moves only with acks and deliveries, as in nats-server). */
export interface SkipOp {
  op: "skip";
  sseq: number;
}
/** The stream was purged up to sseq (its first sequence left): everything below goes and
 *  delivered moves up to sseq - 1; then to `skip`, the end of a last-per-subject phase the
 *  purge ended (0 if none), before the ack floor follows. */
export interface PurgedOp {
  op: "purged";
  sseq: number;
  skip: number;
}
/** Start over at stream sequence sseq and consumer sequence dseq (both delivered and
 *  acked), with nothing pending: a new consumer's start position. */
export interface ResetOp {
  op: "reset";
  sseq: number;
  dseq: number;
}

export type LedgerOp = DeliveredOp | AckedOp | NakOp | ExpiredOp | TermOp | ProgressOp | GoneOp | SkipOp | PurgedOp | ResetOp;

/** What apply() did. */
export const Outcome = {
  /** Nothing (an unknown or stale sequence, or the ack policy ignores it). */
  None: 0,
  Changed: 1,
  /** nak/expired: queued for redelivery. */
  Queued: 2,
  /** nak/expired: max_deliver reached; no longer pending (its delivery count stays). */
  MaxDelivered: 3,
  /** nak with a delay: still pending; the caller sets the new deadline. */
  Deferred: 4,
} as const;
export type Outcome = (typeof Outcome)[keyof typeof Outcome];

export type LedgerAckPolicy = "none" | "all" | "explicit";

export function emptyState(): ConsumerState {
  return {
    delivered: { consumerSeq: 0, streamSeq: 0 },
    ackFloor: { consumerSeq: 0, streamSeq: 0 },
    pending: new Map(),
    redelivered: new Map(),
  };
}

export class ConsumerLedger {
  /** The persisted view (delivered, ack floor, pending, delivery counts above 1). */
  readonly state: ConsumerState;
  // Stream sequences whose pending entries the last operation removed: the first
  // removedCount of removedBuf (the array is reused, never shortened).
  private readonly removedBuf: number[] = [];
  private nRemoved = 0;
  private ackPolicy: LedgerAckPolicy = "explicit";
  private maxDeliver = 0;
  private maxAckPending = 0;
  // Pending stream sequences in ascending order (deliveries only ever add larger ones);
  // acked entries are skipped lazily from the head. Finding the oldest pending through the
  // Map would walk V8's tombstones of every entry deleted since its last rehash.
  private readonly pendOrder: number[] = [];
  private pendHead = 0;
  // Sequences due for redelivery, oldest first (nak and expired put them here, a redelivery
  // takes them off). Not persisted: after a restart every pending message gets a fresh ack
  // wait. Delivery drops entries that are no longer pending or have a new deadline
  // (dropRedelivery): bookkeeping of the queue, outside the persisted state.
  private readonly rdq: number[] = [];
  private rdqHead = 0;

  constructor(state: ConsumerState | null = null) {
    this.state = state ?? emptyState();
    for (const seq of this.state.pending.keys()) this.pendOrder.push(seq);
    this.pendOrder.sort((a, b) => a - b);
  }

  /** The config knobs the operations depend on (from the consumer's config). */
  configure(ackPolicy: LedgerAckPolicy, maxDeliver: number, maxAckPending: number): void {
    this.ackPolicy = ackPolicy;
    this.maxDeliver = maxDeliver;
    this.maxAckPending = maxAckPending;
  }

  apply(op: LedgerOp): Outcome {
    switch (op.op) {
      case "delivered":
        return this.delivered(op.sseq, op.dseq, op.dc, op.ts);
      case "acked":
        return this.acked(op.sseq, op.dseq);
      case "nak":
        return this.nak(op.sseq, op.delay);
      case "expired":
        return this.expired(op.sseq);
      case "term":
        return this.term(op.sseq);
      case "progress":
        return this.progress(op.sseq, op.ts);
      case "gone":
        return this.gone(op.sseqs);
      case "skip":
        return this.skip(op.sseq);
      case "purged":
        return this.purged(op.sseq, op.skip);
      case "reset":
        return this.reset(op.sseq, op.dseq);
    }
  }

  // ---------- reading ----------

  /** How many pending entries the last operation removed (their deadlines can go). */
  get removedCount(): number {
    return this.nRemoved;
  }

  /** The i-th sequence (ascending) the last operation removed from pending. */
  removedSeq(i: number): number {
    return this.removedBuf[i]!;
  }

  /** The sequences the last operation removed from pending, as a new array. */
  get removed(): number[] {
    return this.removedBuf.slice(0, this.nRemoved);
  }

  get deliveredStreamSeq(): number {
    return this.state.delivered.streamSeq;
  }

  get deliveredConsumerSeq(): number {
    return this.state.delivered.consumerSeq;
  }

  get numAckPending(): number {
    return this.state.pending.size;
  }

  get numRedelivered(): number {
    return this.state.redelivered.size;
  }

  isPending(sseq: number): boolean {
    return this.state.pending.has(sseq);
  }

  pendingEntry(sseq: number): Readonly<ConsumerPending> | undefined {
    return this.state.pending.get(sseq);
  }

  /** How often sseq was delivered (1 unless redelivered). */
  deliveries(sseq: number): number {
    return this.state.redelivered.get(sseq) ?? 1;
  }

  /** Whether a new message may go out: the ack policy keeps nothing pending, or fewer than
   *  max_ack_pending are (else the consumer waits for acks). */
  canDeliverNew(): boolean {
    return this.ackPolicy === "none" || this.maxAckPending <= 0 || this.state.pending.size < this.maxAckPending;
  }

  /** The oldest queued redelivery, or 0 when none is queued. */
  nextRedelivery(): number {
    return this.rdqHead < this.rdq.length ? this.rdq[this.rdqHead]! : 0;
  }

  /** Drop the oldest queued redelivery (it is no longer pending, or has a new deadline). */
  dropRedelivery(): void {
    if (this.rdqHead < this.rdq.length) this.rdqHead++;
    this.compactRdq();
  }

  get queuedRedeliveries(): number {
    return this.rdq.length - this.rdqHead;
  }

  // ---------- operations (see the *Op types) ----------

  delivered(sseq: number, dseq: number, dc: number, ts: number): Outcome {
    const s = this.state;
    this.nRemoved = 0;
    if (dseq > s.delivered.consumerSeq) s.delivered.consumerSeq = dseq;
    if (dc > 1) {
      if (this.rdqHead < this.rdq.length && this.rdq[this.rdqHead] === sseq) this.dropRedelivery();
      s.redelivered.set(sseq, dc);
    } else if (sseq > s.delivered.streamSeq) s.delivered.streamSeq = sseq;
    if (this.ackPolicy === "none") {
      s.ackFloor.consumerSeq = dseq;
      s.ackFloor.streamSeq = s.delivered.streamSeq;
      return Outcome.Changed;
    }
    // A first delivery is never pending yet: no lookup.
    const e = dc > 1 ? s.pending.get(sseq) : undefined;
    if (e === undefined) {
      s.pending.set(sseq, { cseq: dseq, tsNs: ts });
      this.track(sseq);
    } else {
      e.cseq = dseq;
      e.tsNs = ts;
    }
    return Outcome.Changed;
  }

  acked(sseq: number, dseq: number): Outcome {
    const s = this.state;
    this.nRemoved = 0;
    if (this.ackPolicy === "none") return Outcome.None;
    if (this.ackPolicy === "all") {
      const f = s.ackFloor;
      if (sseq <= f.streamSeq || dseq <= f.consumerSeq || sseq > s.delivered.streamSeq || dseq > s.delivered.consumerSeq) return Outcome.None;
      for (let i = this.pendHead; i < this.pendOrder.length; i++) {
        const k = this.pendOrder[i]!;
        if (k > sseq) break;
        if (s.pending.has(k)) this.noteRemoved(k);
      }
      for (let i = 0; i < this.nRemoved; i++) this.forget(this.removedBuf[i]!);
      // The floor is the acknowledged delivery itself (nats-server: adflr, asflr = dseq, sseq),
      // not the next pending one minus one.
      f.consumerSeq = dseq;
      f.streamSeq = sseq;
      return Outcome.Changed;
    }
    if (!this.forget(sseq)) return Outcome.None;
    this.noteRemoved(sseq);
    this.updateFloor();
    return Outcome.Changed;
  }

  nak(sseq: number, delay: number): Outcome {
    this.nRemoved = 0;
    if (this.ackPolicy === "none" || !this.state.pending.has(sseq)) return Outcome.None;
    return delay > 0 ? Outcome.Deferred : this.due(sseq);
  }

  expired(sseq: number): Outcome {
    this.nRemoved = 0;
    return this.state.pending.has(sseq) ? this.due(sseq) : Outcome.None;
  }

  progress(sseq: number, ts: number): Outcome {
    this.nRemoved = 0;
    const p = this.state.pending.get(sseq);
    if (p === undefined) return Outcome.None;
    p.tsNs = ts;
    return Outcome.Changed;
  }

  skip(sseq: number): Outcome {
    this.nRemoved = 0;
    if (sseq <= this.state.delivered.streamSeq) return Outcome.None;
    this.state.delivered.streamSeq = sseq;
    return Outcome.Changed;
  }

  /** Ack wait passed or NAK: queue for redelivery, or stop at max_deliver. */
  private due(sseq: number): Outcome {
    const s = this.state;
    const dc = s.redelivered.get(sseq) ?? 1;
    const md = this.maxDeliver;
    if (md > 0 && dc >= md) {
      // Out of pending, but its delivery count stays (num_redelivered counts it) until the
      // message leaves the stream or is acked, as nats-server keeps rdc[seq] (even at
      // max_deliver 1, where the count is 1).
      this.forget(sseq);
      s.redelivered.set(sseq, dc);
      this.noteRemoved(sseq);
      this.updateFloor();
      return Outcome.MaxDelivered;
    }
    this.rdq.push(sseq);
    return Outcome.Queued;
  }

  term(sseq: number): Outcome {
    this.nRemoved = 0;
    if (this.ackPolicy === "none") return Outcome.None;
    if (!this.state.pending.has(sseq)) {
      // An ack of a sequence that is not pending still forgets its delivery count.
      return this.state.redelivered.delete(sseq) ? Outcome.Changed : Outcome.None;
    }
    this.forget(sseq);
    this.noteRemoved(sseq);
    this.updateFloor();
    return Outcome.Changed;
  }

  gone(sseqs: readonly number[]): Outcome {
    const s = this.state;
    this.nRemoved = 0;
    let changed = false;
    for (let i = 0; i < sseqs.length; i++) {
      const sseq = sseqs[i]!;
      const had = s.pending.delete(sseq);
      if (s.redelivered.delete(sseq)) changed = true;
      if (had) {
        this.noteRemoved(sseq);
        changed = true;
      }
    }
    if (!changed) return Outcome.None;
    if (this.nRemoved > 1) this.sortRemoved();
    this.updateFloor();
    return Outcome.Changed;
  }

  purged(first: number, skip: number): Outcome {
    const s = this.state;
    this.nRemoved = 0;
    let changed = false;
    for (let i = this.pendHead; i < this.pendOrder.length; i++) {
      const seq = this.pendOrder[i]!;
      if (seq >= first) break;
      if (!s.pending.has(seq)) continue;
      s.pending.delete(seq);
      s.redelivered.delete(seq);
      this.noteRemoved(seq);
      changed = true;
    }
    if (s.redelivered.size > s.pending.size) {
      // Delivery counts kept past max_deliver (not pending any more).
      for (const seq of s.redelivered.keys()) {
        if (seq < first && !s.pending.has(seq)) {
          s.redelivered.delete(seq);
          changed = true;
        }
      }
    }
    if (s.delivered.streamSeq < first - 1) {
      s.delivered.streamSeq = first - 1;
      changed = true;
    }
    const skipped = s.delivered.streamSeq < skip;
    if (skipped) s.delivered.streamSeq = skip;
    if (!changed) return skipped ? Outcome.Changed : Outcome.None;
    this.updateFloor();
    return Outcome.Changed;
  }

  reset(sseq: number, dseq: number): Outcome {
    const s = this.state;
    this.nRemoved = 0;
    s.delivered.streamSeq = sseq;
    s.delivered.consumerSeq = dseq;
    s.ackFloor.streamSeq = sseq;
    s.ackFloor.consumerSeq = dseq;
    for (const k of s.pending.keys()) this.noteRemoved(k);
    this.sortRemoved();
    s.pending.clear();
    s.redelivered.clear();
    this.pendOrder.length = 0;
    this.pendHead = 0;
    this.rdq.length = 0;
    this.rdqHead = 0;
    return Outcome.Changed;
  }

  // ---------- internals ----------

  private noteRemoved(sseq: number): void {
    if (this.nRemoved < this.removedBuf.length) this.removedBuf[this.nRemoved] = sseq;
    else this.removedBuf.push(sseq);
    this.nRemoved++;
  }

  private sortRemoved(): void {
    const part = this.removedBuf.slice(0, this.nRemoved).sort((a, b) => a - b);
    for (let i = 0; i < part.length; i++) this.removedBuf[i] = part[i]!;
  }

  /** Forget sseq's pending entry and delivery count; false if it was not pending. */
  private forget(sseq: number): boolean {
    const s = this.state;
    const had = s.pending.delete(sseq);
    if (s.redelivered.size > 0) s.redelivered.delete(sseq);
    return had;
  }

  /** Add a new pending sequence to pendOrder, keeping it ascending. */
  private track(sseq: number): void {
    const order = this.pendOrder;
    const n = order.length;
    if (n === 0 || order[n - 1]! < sseq) {
      order.push(sseq);
      return;
    }
    // Not above every pending one (only an operation log from elsewhere can do this).
    let lo = this.pendHead;
    let hi = n;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (order[mid]! < sseq) lo = mid + 1;
      else hi = mid;
    }
    if (order[lo] !== sseq) order.splice(lo, 0, sseq);
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

  private compactRdq(): void {
    if (this.rdqHead > 1024 && this.rdqHead * 2 > this.rdq.length) {
      this.rdq.splice(0, this.rdqHead);
      this.rdqHead = 0;
    } else if (this.rdqHead === this.rdq.length) {
      this.rdq.length = 0;
      this.rdqHead = 0;
    }
  }
}
