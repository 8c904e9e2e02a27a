// After an entry is applied: PubAcks answered together when one store.sync() completes (group
// commit: every publish parsed in one turn shares an fsync), and visibility (what consumers
// and republish may see). A file stream that fsyncs before its PubAcks shows a message to
// consumers only once that fsync completed (after its PubAck), so no consumer sees a message
// a crash would lose; memory and sync_interval streams show it at store.

import type { Bus } from "../contracts/bus.js";
import type { Logger } from "../runtime/log.js";
import type { StreamStore } from "../storage/types.js";
import { jsErr } from "../contracts/errors.js";
import type { Clock } from "../runtime/clock.js";

/** Decimal digits of the largest sequence (2^53). */
const MAX_SEQ_DIGITS = 16;
const ACK_DUP_TAIL = Buffer.from(',"duplicate": true}');

/** What the commit stage needs from its stream. */
export interface CommitHost {
  readonly name: string;
  readonly store: StreamStore;
  /** A message became visible: tell the consumers. */
  notifyStored(seq: number, subject: string): void;
  /** A republish deferred until visible: seq is visible now (prevSeq: the one before it on its subject). */
  republishStored(seq: number, prevSeq: number): void;
  /** A sync failed (the PubAcks waiting on it were answered with the error). */
  syncFailed(err: Error): void;
  /** fn on a later turn of the loop; absent: every synced PubAck is sent at once. */
  nextTurn?(fn: () => void): void;
}

/** PubAcks sent per turn after syncs complete: one fsync round can cover thousands of
 *  publishes (all parsed while the previous fsync ran), and sending all their PubAcks in the
 *  sync's callback held the loop 18 ms for 5,000. */
const ACKS_PER_TURN = 1024;
/** ... and at most ACK_SLICE_MS of them, the clock read every ACK_CHECK_EVERY: on a fresh
 *  server (code not optimised yet) 1,024 PubAcks, each routed to its reply subject, took
 *  8-16 ms in one turn during a flood of 10,000 publishes to a file stream. Warm, 1,024 take
 *  well under 1 ms, so the count bounds them and the time only bounds cold code (1 ms rather
 *  than 2: with the parser's WORK_SLICE_MS, a warm flood's bystander p99 6.3 -> 5.3 ms, median
 *  of six bench runs; publish rate within noise). */
const ACK_SLICE_MS = 1;
const ACK_CHECK_EVERY = 64;

/** Pending PubAcks answered together when one store.sync() completes. The arrays keep their
 *  room between uses (up to BATCH_KEEP entries), and used batches go back to one pool shared
 *  by every stream (SPARE_BATCHES): an array emptied by `length = 0` gave its room back, so
 *  every batch of a flood grew its three arrays from nothing again (~80 B per PubAck of
 *  garbage for the young generation). */
class AckBatch {
  /** Entries in use: replies[0, n), seqs[0, n), dups[0, n). */
  n = 0;
  replies: string[] = [];
  seqs: number[] = [];
  dups: boolean[] = [];
  /** The last sequence stored before this batch's sync was asked for (0: none to make visible). */
  coverSeq = 0;
  /** Once synced: the sync's error, and how many of the PubAcks went out. */
  err: Error | null = null;
  sent = 0;
  add(reply: string, seq: number, dup: boolean): void {
    const i = this.n++;
    if (i < this.replies.length) {
      this.replies[i] = reply;
      this.seqs[i] = seq;
      this.dups[i] = dup;
    } else {
      this.replies.push(reply);
      this.seqs.push(seq);
      this.dups.push(dup);
    }
  }
  clear(): void {
    const r = this.replies;
    if (r.length > BATCH_KEEP) {
      r.length = 0;
      this.seqs.length = 0;
      this.dups.length = 0;
    } else {
      // The reply strings are let go (no reference kept past the batch).
      for (let i = 0; i < this.n; i++) r[i] = "";
    }
    this.n = 0;
    this.coverSeq = 0;
    this.err = null;
    this.sent = 0;
  }
}

/** Room kept by a used batch, and how many used batches wait for reuse (process-wide): at
 *  most 8 x 4,096 x 3 array slots (~800 KB) however many streams there are. */
const BATCH_KEEP = 4096;
const SPARE_BATCHES = 8;
const SPARE: AckBatch[] = [];

export class CommitQueue {
  /** The last sequence consumers may deliver. */
  visibleSeq: number;
  /** True when messages become visible only after the sync that covers them. */
  readonly deferVisible: boolean;
  /** `{"stream":<name>[,"domain":<domain>],"seq":` as UTF-8: the start of every PubAck. */
  ackPrefix: Buffer = Buffer.alloc(0);

  private current = new AckBatch();
  private readonly inflight: AckBatch[] = [];
  private flushQueued = false;
  private lastStored = 0;
  private syncAsked = 0;
  /** Stored but not yet visible: consumers hear of these (onStored) when they become visible.
   *  In use: [unvHead, unvLen); the arrays keep their room (up to BATCH_KEEP) once emptied,
   *  and a subject is let go as soon as its message is visible. */
  private readonly unvSeqs: number[] = [];
  private readonly unvSubjs: string[] = [];
  private unvHead = 0;
  private unvLen = 0;
  /** Pairs (seq, previous seq on its subject) waiting to be republished once visible. */
  private readonly unvRepub: number[] = [];

  constructor(
    private readonly host: CommitHost,
    private readonly bus: Bus,
    private readonly log: Logger,
    deferVisible: boolean,
    visibleSeq: number,
    /** Bounds a turn's PubAcks by time too (absent: by count only). */
    private readonly clock: Pick<Clock, "monoMs"> | null = null,
  ) {
    this.deferVisible = deferVisible;
    this.visibleSeq = visibleSeq;
  }

  /** An applied message: visible now, or once its sync completes. */
  stored(seq: number, subject: string): void {
    if (this.deferVisible) {
      const i = this.unvLen++;
      if (i < this.unvSeqs.length) {
        this.unvSeqs[i] = seq;
        this.unvSubjs[i] = subject;
      } else {
        this.unvSeqs.push(seq);
        this.unvSubjs.push(subject);
      }
    } else {
      this.visibleSeq = seq;
      this.host.notifyStored(seq, subject);
    }
  }

  /** Like consumers, republish only what is durable: deferred until the sync, when the message
   *  is read back from the store (its hdr/payload may be views of a read buffer). */
  deferRepublish(seq: number, prevSeq: number): void {
    this.unvRepub.push(seq, prevSeq);
  }

  /** The apply of seq is done (with or without a PubAck to send): under deferVisible it
   *  becomes visible when a sync covers it. */
  applied(seq: number): void {
    if (!this.deferVisible) return;
    this.lastStored = seq;
    if (!this.flushQueued) {
      this.flushQueued = true;
      queueMicrotask(this.flush);
    }
  }

  queueAck(reply: string, seq: number, dup: boolean): void {
    this.current.add(reply, seq, dup);
    if (!this.flushQueued) {
      this.flushQueued = true;
      // After the current read batch, so every publish parsed from one socket read shares it.
      queueMicrotask(this.flush);
    }
  }

  private readonly flush = (): void => {
    this.flushQueued = false;
    const b = this.current;
    const cover = this.lastStored;
    if (b.n === 0 && cover <= this.syncAsked) return;
    this.syncAsked = cover;
    b.coverSeq = cover;
    this.current = SPARE.pop() ?? new AckBatch();
    this.inflight.push(b);
    this.host.store.sync(this.onSynced);
  };

  /** Synced batches whose PubAcks are not all out yet, oldest first. */
  private readonly synced: AckBatch[] = [];
  private releaseQueued = false;

  private readonly onSynced = (err: Error | null): void => {
    const b = this.inflight.shift();
    if (b === undefined) return;
    b.err = err;
    this.synced.push(b);
    if (!this.releaseQueued) this.release(this.host.nextTurn !== undefined ? ACKS_PER_TURN : Infinity);
  };

  private readonly releaseNext = (): void => {
    this.releaseQueued = false;
    this.release(ACKS_PER_TURN);
  };

  /** Up to budget PubAcks of the synced batches (and ACK_SLICE_MS of them), in order; a
   *  batch's messages become visible once its last PubAck is out. The rest waits for a later
   *  turn. */
  private release(budget: number): void {
    const clock = budget === Infinity ? null : this.clock;
    const t0 = clock === null ? 0 : clock.monoMs();
    while (this.synced.length > 0 && budget > 0) {
      const b = this.synced[0]!;
      const n = Math.min(b.n, b.sent + (clock === null ? budget : Math.min(budget, ACK_CHECK_EVERY)));
      budget -= n - b.sent;
      this.sendAcks(b, n);
      if (clock !== null && clock.monoMs() - t0 >= ACK_SLICE_MS) budget = 0;
      if (b.sent < b.n) continue;
      this.synced.shift();
      const err = b.err;
      const cover = b.coverSeq;
      b.clear();
      if (SPARE.length < SPARE_BATCHES) SPARE.push(b);
      // PubAcks first, then deliveries: a publisher sees its ack before any consumer's copy.
      if (err === null && cover > this.visibleSeq) this.advanceVisible(cover);
    }
    if (this.synced.length > 0 && !this.releaseQueued) {
      this.releaseQueued = true;
      this.host.nextTurn!(this.releaseNext);
    }
  }

  /** b's PubAcks from b.sent up to n. */
  private sendAcks(b: AckBatch, n: number): void {
    const bus = this.bus;
    const from = b.sent;
    b.sent = n;
    if (from >= n) return;
    const err = b.err;
    if (err !== null) {
      if (from === 0) {
        this.log.error(`JetStream sync failed on stream '$G > ${this.host.name}': ${err.message}`);
        this.host.syncFailed(err);
      }
      const body = Buffer.from(
        JSON.stringify({ error: jsErr("JSStreamStoreFailedF", { err: err.message }), stream: this.host.name, seq: 0 }),
      );
      for (let i = from; i < n; i++) bus.publish(b.replies[i]!, "", null, body);
      return;
    }
    // Every body of the slice in one buffer, written byte by byte: no string building or
    // UTF-8 encoding per ack; each publish gets a view (receivers copy or keep the view).
    const pre = this.ackPrefix;
    const buf = Buffer.allocUnsafe((n - from) * (pre.length + MAX_SEQ_DIGITS + ACK_DUP_TAIL.length));
    let p = 0;
    for (let i = from; i < n; i++) {
      const start = p;
      for (let k = 0; k < pre.length; k++) buf[p++] = pre[k]!;
      p = putSeq(buf, p, b.seqs[i]!);
      if (b.dups[i]) for (let k = 0; k < ACK_DUP_TAIL.length; k++) buf[p++] = ACK_DUP_TAIL[k]!;
      else buf[p++] = 0x7d; // }
      if (bus.publishRange !== undefined) bus.publishRange(b.replies[i]!, "", null, buf, start, p);
      else bus.publish(b.replies[i]!, "", null, buf.subarray(start, p));
    }
  }

  private advanceVisible(upTo: number): void {
    this.visibleSeq = upTo;
    const seqs = this.unvSeqs;
    const subjs = this.unvSubjs;
    // unvHead moves before each notification: a delivery may store into this stream again
    // (stored() then appends at unvLen).
    while (this.unvHead < this.unvLen && seqs[this.unvHead]! <= upTo) {
      const k = this.unvHead++;
      const subject = subjs[k]!;
      subjs[k] = "";
      this.host.notifyStored(seqs[k]!, subject);
    }
    if (this.unvRepub.length > 0) this.republishVisible(upTo);
    const head = this.unvHead;
    const len = this.unvLen;
    if (head === len) {
      this.unvHead = 0;
      this.unvLen = 0;
      if (seqs.length > BATCH_KEEP) {
        seqs.length = 0;
        subjs.length = 0;
      }
    } else if (head > 1024 && head * 2 > len) {
      // The rest moved to the front in place (a splice made an array of what it removed).
      const rest = len - head;
      for (let j = 0; j < rest; j++) {
        seqs[j] = seqs[head + j]!;
        subjs[j] = subjs[head + j]!;
      }
      for (let j = rest; j < len; j++) subjs[j] = "";
      this.unvHead = 0;
      this.unvLen = rest;
    }
  }

  private republishVisible(upTo: number): void {
    const q = this.unvRepub;
    let k = 0;
    for (; k < q.length && q[k]! <= upTo; k += 2) this.host.republishStored(q[k]!, q[k + 1]!);
    if (k === q.length) q.length = 0;
    else if (k > 0) q.splice(0, k);
  }

  /** Wait until every queued PubAck has been answered (used before close). */
  async drain(): Promise<void> {
    if (this.current.n > 0) this.flush();
    if (this.inflight.length > 0) await new Promise<void>((res) => this.host.store.sync(() => res()));
    this.release(Infinity);
  }
}

/** A sequence (a non-negative integer up to 2^53) in decimal at buf[p]; returns the end. */
function putSeq(buf: Buffer, p: number, v: number): number {
  let digits = 1;
  for (let t = v; t >= 10; t = Math.floor(t / 10)) digits++;
  let q = p + digits - 1;
  for (let t = v; q >= p; ) {
    const d = Math.floor(t / 10);
    buf[q--] = 48 + t - d * 10;
    t = d;
  }
  return p + digits;
}
