// One consumer: its life (start, config update, pause, stop), the hooks its stream calls
// (ConsumerHook: new messages, purges, retention), and the tick off the shared Ticker
// (ack-wait redelivery, pull request expiry and heartbeats, push idle heartbeats, pin
// timeout, inactivity). The parts live beside it: the ledger of delivered, pending and
// acked (ledger.ts, changed only by operations through ConsumerCore.commit), delivery
// (delivery.ts), pull requests (pull.ts), acks (ack-handler.ts) and info (info.ts).

import type { InternalSubscription } from "../contracts/bus.js";
import type { ConsumerHook, StreamHandle } from "../contracts/jetstream.js";
import type { ConsumerState, ConsumerStore } from "../storage/types.js";
import type { LastPerSubjectPlan } from "./lps-build.js";
import { subjectIsSubsetMatch, subjectMatches } from "../subjects/subject.js";
import { AckHandler } from "./ack-handler.js";
import { consumerConfigToWire, filtersOf, isPush, type ConsumerConfig } from "./config.js";
import { ConsumerCore, EMPTY, type CoreEnv } from "./core.js";
import { Delivery } from "./delivery.js";
import { consumerInfo } from "./info.js";
import { Outcome, type GoneOp, type PurgedOp } from "./ledger.js";
import { PullRequests } from "./pull.js";
import { heartbeatStatus } from "./waiting.js";
import { TICK_MS } from "./wheel.js";

export interface ConsumerEnv extends CoreEnv {
  /** The consumer removed itself (inactivity); the owner drops it from its registry. */
  onSelfDelete(c: Consumer): void;
}

export class Consumer extends ConsumerCore implements ConsumerHook {
  private readonly owner: ConsumerEnv;
  private readonly delivery: Delivery;
  private readonly pulls: PullRequests;
  private readonly acks: AckHandler;
  private subs: InternalSubscription[] = [];
  private readonly scratch: number[] = [];

  constructor(
    env: ConsumerEnv,
    stream: StreamHandle,
    cfg: ConsumerConfig,
    createdNs: number,
    store: ConsumerStore | null,
    recovered: ConsumerState | null,
    plan: LastPerSubjectPlan | null = null,
  ) {
    super(env, stream, cfg, createdNs, store, recovered, plan);
    this.owner = env;
    this.delivery = new Delivery(this);
    this.pulls = new PullRequests(this, this.delivery);
    this.acks = new AckHandler(this, this.pulls);
  }

  /** Subscribe to acks and flow control; call once the consumer is registered. */
  start(): void {
    this.delivery.start();
    const bus = this.env.bus;
    // nats-server 2.11: an ack-none consumer has no ack subscription, so an ack sent as a
    // request gets "no responders" (2.9 answered it).
    if (this.cfg.ack_policy !== "none") {
      const a = this.acks;
      this.subs.push(bus.subscribeAck !== undefined ? bus.subscribeAck(this.ackPrefix, a.onAckMsg, a.onAckBytes) : bus.subscribe(this.ackPrefix + ">", a.onAckMsg));
    }
    if (isPush(this.cfg) && this.cfg.flow_control) this.subs.push(bus.subscribe(this.delivery.fcSubject, this.delivery.onFcMsg));
    this.persist();
    this.env.ticker.want(this);
    this.kick();
  }

  protected override run(): void {
    this.delivery.run();
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
    if (seq > this.ledger.deliveredStreamSeq) return true;
    if (this.lps !== null && sortedHas(this.lps, seq)) return true;
    if (this.cfg.ack_policy === "none") return false;
    return this.ledger.isPending(seq);
  }

  onStored(seq: number, subject: string): void {
    if (this.stopped) return;
    if (!this.filterMatches(subject)) return;
    // A message up to lpsEnd is already counted in lps (or never delivered): it may become
    // visible only after a last_per_subject consumer was created.
    if (this.numPendingCache >= 0 && seq > this.ledger.deliveredStreamSeq && (this.lps === null || seq > this.lpsEnd)) this.numPendingCache++;
    this.kick();
  }

  onPurged(firstSeq: number): void {
    if (this.stopped) return;
    this.numPendingCache = -1;
    let skip = 0;
    if (this.lps !== null) {
      this.lps = this.lps.filter((q) => q >= firstSeq);
      if (this.lps.length === 0) {
        this.lps = null;
        skip = this.lpsEnd;
      }
    }
    const op: PurgedOp = { op: "purged", sseq: firstSeq, skip };
    if (this.commit(op) !== Outcome.None) this.persist();
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
    const s = this.ledger.state;
    const store = this.stream.store;
    const gone: number[] = [];
    for (const seq of s.pending.keys()) if (store.loadMsg(seq) === null) gone.push(seq);
    for (const seq of s.redelivered.keys()) if (!s.pending.has(seq) && store.loadMsg(seq) === null) gone.push(seq);
    let changed = false;
    if (gone.length > 0) {
      const op: GoneOp = { op: "gone", sseqs: gone };
      changed = this.commit(op) !== Outcome.None;
    }
    const f = this.filters;
    if (subject !== "" && f.length > 0 && this.lps === null && f.every((x) => subjectIsSubsetMatch(x, subject))) {
      const st = store.state();
      const next = store.loadNextMsg(subject, Math.max(1, st.firstSeq))?.seq ?? st.lastSeq + 1;
      // Every message of the subject below next is gone, and with it every pending one.
      const op: PurgedOp = { op: "purged", sseq: next, skip: 0 };
      if (this.commit(op) !== Outcome.None) changed = true;
    }
    if (!changed) return;
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
    this.delivery.stop();
    this.pulls.close(deleteState);
    if (deleteState) this.repl?.removed(this.name);
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

  // ---------- config, pause, pin ----------

  updateConfig(cfg: ConsumerConfig): void {
    const oldPush = this.cfg.deliver_subject;
    this.cfg = cfg;
    this.filters = filtersOf(cfg);
    this.ledger.configure(cfg.ack_policy, cfg.max_deliver, cfg.max_ack_pending);
    this.repl?.configure(cfg.name, cfg.ack_policy, cfg.max_deliver, cfg.max_ack_pending, JSON.stringify(consumerConfigToWire(cfg, false)), this.createdNs);
    this.waiting.prioritized = cfg.priority_policy === "prioritized";
    if (cfg.priority_policy !== "pinned_client") this.pins.clear();
    this.numPendingCache = -1;
    if (oldPush !== cfg.deliver_subject) this.lastActivityMs = this.env.clock.monoMs();
    this.env.ticker.want(this);
    this.kick();
  }

  setPause(untilNs: number): void {
    this.cfg = { ...this.cfg, pause_until_ns: untilNs };
    const c = this.cfg;
    this.repl?.configure(c.name, c.ack_policy, c.max_deliver, c.max_ack_pending, JSON.stringify(consumerConfigToWire(c, false)), this.createdNs);
    this.env.ticker.want(this);
    this.kick();
  }

  /** CONSUMER.UNPIN: drop the pin (and announce it); the next delivery picks a new one. */
  unpin(group: string): void {
    this.pins.unpin(group, "admin");
    this.kick();
  }

  // ---------- last per subject across a restart ----------

  /** The stream's last sequence when a last_per_subject consumer was created (0 for other
   *  policies): recorded with the config so that recovery can resume the first phase. */
  lastPerSubjectEnd(): number {
    return this.cfg.deliver_policy === "last_per_subject" ? this.lpsEnd : 0;
  }

  /** After recovery: if the consumer had not got through the last-per-subject phase, rebuild
   *  what is left of it, the newest message of each subject in (delivered, endSeq]. A subject
   *  whose newest message at creation was already delivered has none in that range. `plan`,
   *  when given, is that start built over several turns (lps-build.ts) as of endSeq: the
   *  newest sequence of each subject up to endSeq, of which those after delivered are left. */
  resumeLastPerSubject(endSeq: number, plan: LastPerSubjectPlan | null = null): void {
    const d = this.ledger.deliveredStreamSeq;
    this.lpsEnd = endSeq;
    if (this.cfg.deliver_policy !== "last_per_subject" || endSeq <= d) return;
    let seqs: number[];
    if (plan !== null && plan.end === endSeq) {
      seqs = plan.seqs.slice(firstAbove(plan.seqs, d));
    } else {
      const last = new Map<string, number>();
      const store = this.stream.store;
      for (const f of this.filterList()) {
        for (let m = store.loadNextMsg(f, d + 1); m !== null && m.seq <= endSeq; m = store.loadNextMsg(f, m.seq + 1)) {
          last.set(m.subject, m.seq);
        }
      }
      seqs = [...last.values()].sort((a, b) => a - b);
    }
    this.lps = seqs.length > 0 ? seqs : null;
    if (this.lps === null) this.skipTo(endSeq);
    this.numPendingCache = -1;
  }

  // ---------- pull requests and acks ----------

  /** A MSG.NEXT request (or +NXT). */
  pull(reply: string, payload: Buffer): void {
    this.pulls.pull(reply, payload);
  }

  numWaiting(): number {
    return this.pulls.numWaiting();
  }

  /** Explicit or cumulative ack of a stream sequence (cseq: the delivery the ack names). */
  ack(seq: number, cseq: number): void {
    this.acks.ack(seq, cseq);
  }

  // ---------- the tick ----------

  tick(now: number): boolean {
    if (this.stopped) return false;
    // Redeliveries that are due.
    const due = this.scratch;
    due.length = 0;
    this.wheel.expire(now, due);
    let redeliver = false;
    for (const seq of due) if (this.acks.expired(seq)) redeliver = true;
    due.length = 0;
    // Deadlines before the next coarse tick get a wake-up of their own (one timer still).
    this.wakeForDeadline(now, 2 * TICK_MS);
    const unpinned = this.pins.expire(this.cfg.priority_groups[0] ?? "", now);
    const push = isPush(this.cfg);
    if (!push) this.pulls.tick(now);
    let bound = false;
    if (push) {
      bound = this.deliverInterest();
      const hb = this.cfg.idle_heartbeat / 1e6;
      if (bound && hb > 0 && now - this.lastPushMs >= hb) {
        this.lastPushMs = now;
        this.out.publish(
          this.cfg.deliver_subject,
          "",
          heartbeatStatus(this.ledger.deliveredConsumerSeq, this.ledger.deliveredStreamSeq, this.delivery.fcOutstanding),
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
        this.owner.onSelfDelete(this);
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

  // ---------- state and info ----------

  /** The store's view for tests. */
  snapshot(): ConsumerState {
    return this.ledger.state;
  }

  /** A durable consumer's config and progress for a stream snapshot; null for ephemerals. */
  exportDurable(): { name: string; createdNs: number; config: Record<string, unknown>; state: ConsumerState } | null {
    if (this.cfg.durable_name === "") return null;
    return { name: this.name, createdNs: this.createdNs, config: consumerConfigToWire(this.cfg, false), state: this.ledger.state };
  }

  /** The consumer's store (file consumers); for a durability barrier. */
  storeOf(): ConsumerStore | null {
    return this.store;
  }

  info(type: string): Record<string, unknown> {
    return consumerInfo(this, type, isPush(this.cfg) ? 0 : this.numWaiting());
  }
}

/** The index of the first element of ascending list greater than seq (list.length if none). */
function firstAbove(list: number[], seq: number): number {
  let lo = 0;
  let hi = list.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (list[mid]! <= seq) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** Whether the ascending list holds seq (a binary search: a last_per_subject list can hold
 *  hundreds of thousands, and interest retention asks for every acked message). */
function sortedHas(list: number[], seq: number): boolean {
  const i = firstAbove(list, seq - 1);
  return i < list.length && list[i] === seq;
}
