// What the parts of a consumer share: its config and stream, the ledger (delivered, pending,
// ack floor) and the one place operations are applied to it, the redelivery wheel, the pull
// waiting list and pin, the start position (including the last-per-subject phase), the
// num_pending count and the delivery loop's re-entrancy guard. Delivery (delivery.ts), pull
// requests (pull.ts) and acks (ack-handler.ts) each hold the core; Consumer (consumer.ts)
// extends it and wires them together.

import type { Bus } from "../contracts/bus.js";
import type { Clock } from "../runtime/clock.js";
import { systemScheduler, type Scheduler } from "../runtime/sched.js";
import type { Logger } from "../runtime/log.js";
import { LedgerKind, type ConsumerReplicator, type StreamHandle } from "../contracts/jetstream.js";
import type { ConsumerState, ConsumerStore } from "../storage/types.js";
import type { LastPerSubjectPlan } from "./lps-build.js";
import { ACK_PREFIX } from "./ack.js";
import { consumerConfigToWire, filtersOf, type ConsumerConfig } from "./config.js";
import { ConsumerLedger, Outcome, type LedgerOp, type ResetOp, type SkipOp } from "./ledger.js";
import { PinState } from "./priority.js";
import { Outbox, type Publisher } from "./outbox.js";
import { WaitingList } from "./waiting.js";
import { RedeliveryWheel, type Ticker, type Tickable } from "./wheel.js";

/** What a consumer needs from its surroundings (Consumer's ConsumerEnv adds the owner). */
export interface CoreEnv {
  bus: Bus;
  clock: Clock;
  /** Deferred work (the delivery after a batch of acks); the system scheduler if absent. */
  sched?: Scheduler;
  log: Logger;
  ticker: Ticker;
  serverName: string;
  advisory(subject: string, body: Record<string, unknown>): void;
  /** A fresh pin id for a pinned_client consumer (a NUID in nats-server). */
  newPinId(): string;
}

export const EMPTY = Buffer.alloc(0);
export const ADV = "$JS.EVENT.ADVISORY.CONSUMER.";
export const ADV_TYPE = "io.nats.jetstream.advisory.v1.";

export abstract class ConsumerCore implements Tickable {
  readonly name: string;
  cfg: ConsumerConfig;
  readonly stream: StreamHandle;
  readonly createdNs: number;
  readonly env: CoreEnv;
  readonly sched: Scheduler;
  store: ConsumerStore | null;
  readonly ledger: ConsumerLedger;
  /** A replicated stream's consumer: every ledger operation is also reported here. */
  readonly repl: ConsumerReplicator | null;
  /** A replicated stream's consumer: what it sends waits here for its operations to commit
   *  (outbox.ts); null otherwise. */
  readonly outbox: Outbox | null;
  /** Where statuses, heartbeats and flow control go: the outbox, else the bus. */
  readonly out: Publisher;
  filters: string[];
  readonly wheel = new RedeliveryWheel();
  readonly waiting: WaitingList;
  readonly pins: PinState;
  /** "$JS.ACK.<stream>.<consumer>." */
  readonly ackPrefix: string;
  /** Below it the consumer never delivers (hook: needsMessage). */
  readonly startSeq: number;
  // last_per_subject: the newest sequence of each subject still to deliver, and the stream's
  // last sequence when the consumer was created (the end of that phase).
  lps: number[] | null = null;
  lpsEnd = 0;
  /** num_pending when known, else -1. */
  numPendingCache = -1;
  stopped = false;
  /** Wall time of the last delivery and the last ack (info's last_active). */
  lastActiveNs = 0;
  ackActiveNs = 0;
  /** Monotonic time of the last sign of use (inactive_threshold) and of the last push. */
  lastActivityMs: number;
  lastPushMs: number;
  /** A delivery waits for time (replay, rate limit): the next tick must kick. */
  timeHeld = false;
  private delivering = false;
  private again = false;
  private kickQueued = false;
  private readonly deferredKick = (): void => {
    this.kickQueued = false;
    this.kick();
  };
  private readonly skipOp: SkipOp = { op: "skip", sseq: 0 };

  /** A last_per_subject start built beforehand over several turns (lps-build.ts), or null. */
  private readonly plan: LastPerSubjectPlan | null;

  constructor(
    env: CoreEnv,
    stream: StreamHandle,
    cfg: ConsumerConfig,
    createdNs: number,
    store: ConsumerStore | null,
    recovered: ConsumerState | null,
    plan: LastPerSubjectPlan | null = null,
  ) {
    this.env = env;
    this.plan = plan;
    this.sched = env.sched ?? systemScheduler;
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
    const now = env.clock.monoMs();
    this.lastPushMs = now;
    this.lastActivityMs = now;
    this.ledger = new ConsumerLedger(recovered);
    this.ledger.configure(cfg.ack_policy, cfg.max_deliver, cfg.max_ack_pending);
    // Bound to the term this consumer is made in (a consumer left over from an earlier term
    // reports nothing: ConsumerReplicator.bind).
    this.repl = stream.consumerRepl?.bind() ?? null;
    this.outbox = this.repl !== null ? new Outbox(env.bus, this.repl, this.ackPrefix, () => this.kickSoon()) : null;
    this.out = this.outbox ?? env.bus;
    this.repl?.configure(cfg.name, cfg.ack_policy, cfg.max_deliver, cfg.max_ack_pending, JSON.stringify(consumerConfigToWire(cfg, false)), createdNs);
    if (recovered !== null) {
      const ackWaitMs = this.ackWaitMs(1);
      for (const seq of recovered.pending.keys()) this.wheel.schedule(seq, now + ackWaitMs);
      this.startSeq = recovered.ackFloor.streamSeq + 1;
    } else {
      const reset: ResetOp = { op: "reset", sseq: this.initialStart(), dseq: 0 };
      this.commit(reset);
      if (cfg.deliver_policy === "last_per_subject") this.repl?.lastPerSubject(cfg.name, this.lpsEnd);
      this.startSeq = this.ledger.deliveredStreamSeq + 1;
    }
  }

  abstract tick(nowMono: number): boolean;

  /** One pass of the delivery loop (Delivery.run). */
  protected abstract run(): void;

  // ---------- the ledger ----------

  /** Apply an operation to the ledger; deadlines of sequences no longer pending go. This is
   *  where a replicated consumer will propose instead. */
  commit(op: LedgerOp): Outcome {
    const o = this.ledger.apply(op);
    if (this.repl !== null) this.replicate(op);
    this.cancelRemoved();
    return o;
  }

  /** Report an applied operation to the replicated stream (in the order applied). */
  private replicate(op: LedgerOp): void {
    const r = this.repl!;
    const n = this.name;
    switch (op.op) {
      case "delivered":
        return r.op(n, LedgerKind.Delivered, op.sseq, op.dseq, op.dc, op.ts);
      case "acked":
        return r.op(n, LedgerKind.Acked, op.sseq, op.dseq, 0, 0);
      case "nak":
        return r.op(n, LedgerKind.Nak, op.sseq, op.delay, 0, 0);
      case "expired":
        return r.op(n, LedgerKind.Expired, op.sseq, 0, 0, 0);
      case "term":
        return r.op(n, LedgerKind.Term, op.sseq, 0, 0, 0);
      case "progress":
        return r.op(n, LedgerKind.Progress, op.sseq, op.ts, 0, 0);
      case "gone":
        return r.op(n, LedgerKind.Gone, 0, 0, 0, 0, op.sseqs);
      case "skip":
        return r.op(n, LedgerKind.Skip, op.sseq, 0, 0, 0);
      case "purged":
        return r.op(n, LedgerKind.Purged, op.sseq, op.skip, 0, 0);
      case "reset":
        return r.op(n, LedgerKind.Reset, op.sseq, op.dseq, 0, 0);
    }
  }

  // The two operations of every message, without building a value (measured: the value and
  // apply()'s dispatch cost the pull-with-acks path several per cent); a replicated consumer
  // builds the DeliveredOp / AckedOp here.

  /** commit({ op: "delivered", sseq, dseq, dc, ts }) */
  commitDelivered(sseq: number, dseq: number, dc: number, ts: number): void {
    this.ledger.delivered(sseq, dseq, dc, ts);
    if (this.repl !== null) this.repl.op(this.name, LedgerKind.Delivered, sseq, dseq, dc, ts);
  }

  /** commit({ op: "acked", sseq, dseq }) */
  commitAcked(sseq: number, dseq: number): Outcome {
    const o = this.ledger.acked(sseq, dseq);
    if (this.repl !== null && o !== Outcome.None) this.repl.op(this.name, LedgerKind.Acked, sseq, dseq, 0, 0);
    this.cancelRemoved();
    return o;
  }

  private cancelRemoved(): void {
    const l = this.ledger;
    const n = l.removedCount;
    for (let i = 0; i < n; i++) this.wheel.cancel(l.removedSeq(i));
  }

  /** Nothing to deliver up to sseq: delivered moves up to it. */
  skipTo(sseq: number): void {
    const op = this.skipOp;
    op.sseq = sseq;
    this.commit(op);
  }

  persist(): void {
    if (this.store !== null) this.store.update(this.ledger.state);
  }

  // ---------- start position ----------

  /** The delivered stream sequence a new consumer starts from (its deliver_policy). */
  private initialStart(): number {
    const store = this.stream.store;
    const st = store.state();
    const c = this.cfg;
    const lastSeq = st.lastSeq;
    switch (c.deliver_policy) {
      case "all":
        return st.firstSeq > 0 ? st.firstSeq - 1 : 0;
      case "new":
        return lastSeq;
      case "last": {
        let best = 0;
        for (const f of this.filterList()) {
          const m = store.loadLastMsg(f);
          if (m !== null && m.seq > best) best = m.seq;
        }
        return best > 0 ? best - 1 : lastSeq;
      }
      case "by_start_sequence":
        return Math.max(0, c.opt_start_seq - 1);
      case "by_start_time":
        return this.seqForTime(c.opt_start_time_ns) - 1;
      case "last_per_subject": {
        const plan = this.plan;
        if (plan !== null) {
          this.lpsEnd = plan.end;
          this.lps = plan.seqs.length > 0 ? plan.seqs : null;
          return plan.seqs.length > 0 ? plan.seqs[0]! - 1 : plan.end;
        }
        // Hundreds of thousands of subjects are possible: no map of their states, and a
        // numeric sort of a typed array (not a comparator over a boxed array).
        let found: number[] = [];
        for (const f of this.filterList()) {
          const part = store.lastSeqs !== undefined ? store.lastSeqs(f) : [...store.subjectsState(f).values()].map((ss) => ss.last);
          if (found.length === 0) found = part;
          else for (const q of part) found.push(q);
        }
        const seqs = ascending(found);
        this.lpsEnd = lastSeq;
        this.lps = seqs.length > 0 ? seqs : null;
        return seqs.length > 0 ? seqs[0]! - 1 : lastSeq;
      }
    }
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

  filterList(): string[] {
    return this.filters.length === 0 ? [">"] : this.filters;
  }

  /** The last-per-subject phase is over: delivery goes on after the stream's last sequence
   *  at creation. */
  endLps(): void {
    this.lps = null;
    this.skipTo(this.lpsEnd);
    this.numPendingCache = -1;
  }

  // ---------- the delivery loop ----------

  /** Run the delivery loop until nothing more can go out. Re-entrant safe: a delivery may
   *  route back into this consumer (a DLQ on the same stream); a nested kick() only marks
   *  the loop to run again. */
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

  /** Deliver once the current batch of input is processed: the acks of one socket read
   *  free room for many messages, which one delivery loop then sends together. */
  kickSoon(): void {
    if (this.kickQueued) return;
    this.kickQueued = true;
    this.sched.microtask(this.deferredKick);
  }

  isPaused(): boolean {
    return this.cfg.pause_until_ns > 0 && this.cfg.pause_until_ns > this.env.clock.nowNs();
  }

  /** A push consumer delivers (and is push_bound) while its deliver subject has interest;
   *  with deliver_group, only members of that queue group count (nats-server registers its
   *  interest notification for the subject and the group). */
  deliverInterest(): boolean {
    const bus = this.env.bus;
    const g = this.cfg.deliver_group;
    if (g === "" || bus.hasQueueInterest === undefined) return bus.hasInterest(this.cfg.deliver_subject);
    return bus.hasQueueInterest(this.cfg.deliver_subject, g);
  }

  // ---------- timing ----------

  ackWaitMs(dc: number): number {
    const b = this.cfg.backoff;
    if (b.length > 0) return b[Math.min(dc - 1, b.length - 1)]! / 1e6;
    const w = this.cfg.ack_wait;
    return w > 0 ? w / 1e6 : 30_000;
  }

  /** Ask the ticker to fire at the next redelivery deadline within horizonMs. */
  wakeForDeadline(now: number, horizonMs: number): void {
    const at = this.wheel.nextDueMs(now, horizonMs);
    if (at !== Infinity) this.env.ticker.wakeAt(this, at);
  }

  // ---------- num_pending ----------

  computeNumPending(): number {
    let n = 0;
    if (this.lps !== null) {
      n += this.lps.length;
      for (const f of this.filterList()) n += this.visiblePending(this.lpsEnd + 1, f);
    } else {
      const from = this.ledger.deliveredStreamSeq + 1;
      for (const f of this.filterList()) n += this.visiblePending(from, f);
    }
    this.numPendingCache = n;
    return n;
  }

  numPending(): number {
    return this.numPendingCache >= 0 ? this.numPendingCache : this.computeNumPending();
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
}

/** Distinct sequences in ascending order: a bitmap over their span when it is at most 16
 *  times their number (one pass each way, no comparisons), else a typed-array sort. */
export function ascending(seqs: number[]): number[] {
  const n = seqs.length;
  if (n < 2) return seqs;
  let lo = Infinity;
  let hi = -Infinity;
  for (let i = 0; i < n; i++) {
    const q = seqs[i]!;
    if (q < lo) lo = q;
    if (q > hi) hi = q;
  }
  const span = hi - lo + 1;
  if (span > 16 * n) return Array.from(Float64Array.from(seqs).sort());
  const mark = new Uint8Array(span);
  for (let i = 0; i < n; i++) mark[seqs[i]! - lo] = 1;
  const out: number[] = [];
  for (let i = 0; i < span; i++) if (mark[i] === 1) out.push(lo + i);
  return out;
}
