// One stream. A publish is checked (checks.ts) into a StreamEntry, handed to a Proposer
// (entry.ts: the local one applies at once; Raft will commit first) and applied here: store,
// dedup, retention, visibility and group-committed PubAcks (commit.ts). Limits and expiry in
// expiry.ts, purge/delete here, republish in republish.ts, and the seam to consumers
// (StreamHandle). Mirrors and sources live in sourcing.ts.

import { join } from "node:path";
import type { Bus, InternalSubscription } from "../contracts/bus.js";
import type { Clock } from "../runtime/clock.js";
import type { Logger } from "../runtime/log.js";
import type { ConsumerHook, ConsumerReplicator, StreamHandle } from "../contracts/jetstream.js";
import type { StorePurge, StreamStore, StoreLimits } from "../storage/types.js";
import { donePurge } from "../storage/memory/purgejob.js";
import { jsErr, JsApiError, type ApiError, type JsErrName } from "../contracts/errors.js";
import type { StreamConfig, StreamInfoWire, StreamStateWire, PubAckWire } from "../contracts/wire.js";
import { configToWire, NS_PER_MS } from "./config.js";
import { SubjectTransform } from "./transform.js";
import { PublishChecks } from "./checks.js";
import { CommitQueue, type CommitHost } from "./commit.js";
import { LocalProposer, Rollup, StreamEntry, type EntryApplier, type Proposer } from "./entry.js";
import { Expiry, type ExpiryHost } from "./expiry.js";
import { streamInfo, streamState, type StateOpts } from "./info.js";
import { republish } from "./republish.js";
import { hasInterest, removeUnneeded, retainOnAck } from "./retention.js";
import { RefusalGate } from "./refusal-gate.js";

export {
  HDR_MSG_ID,
  HDR_EXPECTED_STREAM,
  HDR_EXPECTED_LAST_SEQ,
  HDR_EXPECTED_LAST_SUBJ_SEQ,
  HDR_EXPECTED_LAST_SUBJ_SEQ_SUBJ,
  HDR_EXPECTED_LAST_MSG_ID,
  HDR_ROLLUP,
  HDR_TTL,
  HDR_STREAM_SOURCE,
  HDR_MARKER_REASON,
  msgIdOf,
} from "./headers.js";

const EMPTY = Buffer.alloc(0);

/** What a stream needs from the service around it. */
export interface StreamEnv {
  bus: Bus;
  clock: Clock;
  log: Logger;
  domain: string;
  serverName: string;
  /** Account limits: would storing `bytes` more exceed them? */
  wouldExceedAccount(storage: "file" | "memory", bytes: number): boolean;
  /** Account-wide consumer limit. */
  canAddConsumer(): boolean;
  /** The file store's sync_interval (0 or absent: fsync before every PubAck). */
  syncIntervalMs?: number;
  /** The store stopped after a failed write or fsync (a full disk): reopen the stream. */
  storeFailed?(st: Stream, err: Error): void;
  /** The proposer between checks and apply (absent: a LocalProposer, which applies at once). */
  proposer?(applier: EntryApplier): Proposer;
  /** Runs fn on a later turn of the loop (absent: a sync's PubAcks all go in one call). */
  nextTurn?(fn: () => void): void;
}

export class Stream implements StreamHandle, EntryApplier, CommitHost, ExpiryHost {
  readonly name: string;
  readonly store: StreamStore;
  cfg: StreamConfig;
  readonly createdNs: number;
  /** Stream directory (file streams) or null. */
  readonly dir: string | null;
  private readonly env: StreamEnv;
  /** CommitHost: the env's later-turn scheduler (synced PubAcks go out a slice per turn). */
  readonly nextTurn: ((fn: () => void) => void) | undefined;
  /** A replicated stream's copy: where its consumers' ledger operations go (StreamGroup). */
  consumerRepl: ConsumerReplicator | null = null;
  private subs: InternalSubscription[] = [];
  /** Subscriptions to drop and subjects to subscribe before subs matches cfg.subjects (none
   *  once detached); `subsPlanned` false: not worked out since the last change. */
  private retiredSubs: InternalSubscription[] = [];
  private subjectsToAdd: string[] = [];
  private subsPlanned = false;
  private readonly consumerMap = new Map<string, ConsumerHook>();
  private readonly checks: PublishChecks;
  private readonly proposer: Proposer;
  private readonly commit: CommitQueue;
  private readonly expiry: Expiry;
  /** Filled by the checks and handed to the proposer, once per publish (no allocation). */
  private readonly scratch = new StreamEntry();
  private republishTr: SubjectTransform | null = null;
  private limitRemoved = false;
  private readonly storeListeners: (() => void)[] = [];
  private closed = false;
  /** Whether the stream subscribes to its subjects (a replicated stream: only while it leads). */
  private ingest = true;
  /** Set when the store stopped (a failed write or fsync): every publish is refused with it,
   *  before the duplicate check (a retried message id must not be called a duplicate of a
   *  message that was never acknowledged), until the service reopens the stream. */
  storeFailure: Error | null = null;
  /** A replicated stream's leader: resolves once a quorum confirms it still leads (set by its
   *  StreamGroup). Its refusals of publishes wait for that (refusal-gate.ts). */
  confirmLeader: (() => Promise<void>) | null = null;
  private refusals: RefusalGate | null = null;

  constructor(cfg: StreamConfig, store: StreamStore, dir: string | null, env: StreamEnv, createdNs: number) {
    this.name = cfg.name;
    this.cfg = cfg;
    this.store = store;
    this.dir = dir;
    this.env = env;
    this.nextTurn = env.nextTurn;
    this.createdNs = createdNs;
    this.checks = new PublishChecks(cfg, store, env);
    this.proposer = env.proposer?.(this) ?? new LocalProposer(this);
    const deferVisible = cfg.storage === "file" && (env.syncIntervalMs ?? 0) === 0;
    this.commit = new CommitQueue(this, env.bus, env.log, deferVisible, store.state().lastSeq, env.clock);
    this.expiry = new Expiry(this, env.clock);
    this.applyConfig(cfg);
  }

  /** The last sequence consumers may deliver (a file stream that fsyncs before its PubAcks:
   *  only what a completed fsync covers). */
  get visibleSeq(): number {
    return this.commit.visibleSeq;
  }

  // ---------- configuration ----------

  static storeLimits(cfg: StreamConfig): StoreLimits {
    return {
      maxMsgs: cfg.max_msgs,
      // discard new is decided before storing; the store still trims for discard old.
      maxBytes: cfg.max_bytes,
      maxAgeMs: cfg.max_age > 0 ? Math.max(1, Math.floor(cfg.max_age / NS_PER_MS)) : 0,
      maxMsgsPerSubject: cfg.max_msgs_per_subject,
    };
  }

  private applyConfig(cfg: StreamConfig): void {
    this.cfg = cfg;
    const ingestTr =
      cfg.subject_transform !== null && cfg.subject_transform.dest !== ""
        ? SubjectTransform.create(cfg.subject_transform.src, cfg.subject_transform.dest)
        : null;
    this.checks.setConfig(cfg, ingestTr);
    this.republishTr = cfg.republish !== null ? SubjectTransform.create(cfg.republish.src, cfg.republish.dest) : null;
    this.commit.ackPrefix = Buffer.from(
      this.env.domain !== ""
        ? `{"stream":${JSON.stringify(cfg.name)},"domain":${JSON.stringify(this.env.domain)},"seq":`
        : `{"stream":${JSON.stringify(cfg.name)},"seq":`,
    );
  }

  /** Subscribe to the stream's subjects and start the expiry timer. sliced: the caller
   *  subscribes with syncSubscriptions, a slice at a time. */
  start(sliced = false): void {
    this.resubscribe(sliced);
    this.expiry.arm();
  }

  update(cfg: StreamConfig, sliced = false): void {
    this.applyConfig(cfg);
    this.store.setLimits(Stream.storeLimits(cfg));
    this.afterLimitRemovals();
    this.resubscribe(sliced);
    this.expiry.arm();
  }

  private resubscribe(sliced = false): void {
    this.subsPlanned = false;
    if (!sliced) this.syncSubscriptions(Infinity);
  }

  /** Brings the subscriptions in line with cfg.subjects (none once detached) with at most
   *  maxOps subscribes and unsubscribes; true when they are. A stream with many subjects is
   *  subscribed this way a slice per turn. Subscriptions on subjects kept are left alone and
   *  the dropped ones go first: the new subjects overlap no kept one (the config was
   *  checked), so no message meets two of the stream's subscriptions meanwhile. */
  syncSubscriptions(maxOps: number): boolean {
    if (!this.subsPlanned) {
      const want = new Set(this.closed || !this.ingest ? [] : this.cfg.subjects);
      const keep: InternalSubscription[] = [];
      for (const s of this.subs) (want.delete(s.subject) ? keep : this.retiredSubs).push(s);
      this.subs = keep;
      this.subjectsToAdd = [...want];
      this.subsPlanned = true;
    }
    let ops = 0;
    const retired = this.retiredSubs;
    while (retired.length > 0 && ops++ < maxOps) retired.pop()!.unsubscribe();
    const add = this.subjectsToAdd;
    // Borrowing: the store copies a message into its own buffers and nothing else here keeps
    // hdr or payload past the call, so a client's publish is not copied once more on the way.
    while (add.length > 0 && ops++ < maxOps) this.subs.push(this.env.bus.subscribe(add.pop()!, this.onMsg, "", true));
    return retired.length === 0 && add.length === 0;
  }

  /** Extra subscriptions (direct get) owned by the service but tied to this stream's life. */
  addSubscription(s: InternalSubscription): void {
    this.subs.push(s);
  }

  // ---------- StreamHandle ----------

  wireConfig(): Record<string, unknown> {
    return configToWire(this.cfg, true);
  }

  retention(): "limits" | "interest" | "workqueue" {
    return this.cfg.retention;
  }

  consumerDir(consumer: string): string | null {
    return this.dir === null ? null : join(this.dir, "obs", consumer);
  }

  addConsumer(c: ConsumerHook): void {
    if (!this.consumerMap.has(c.name)) {
      if (this.cfg.max_consumers > 0 && this.consumerMap.size >= this.cfg.max_consumers) {
        throw new JsApiError(jsErr("JSMaximumConsumersLimitErr"));
      }
      if (!this.env.canAddConsumer()) throw new JsApiError(jsErr("JSMaximumConsumersLimitErr"));
    }
    this.consumerMap.set(c.name, c);
  }

  removeConsumer(name: string): void {
    if (!this.consumerMap.delete(name)) return;
    if (this.cfg.retention === "interest") removeUnneeded(this.store, this.consumerMap);
  }

  consumers(): ConsumerHook[] {
    return [...this.consumerMap.values()];
  }

  consumerCount(): number {
    return this.consumerMap.size;
  }

  onAck(seq: number, subject: string): void {
    retainOnAck(this.store, this.cfg.retention, this.consumerMap, seq, subject);
  }

  addStoreListener(fn: () => void): void {
    this.storeListeners.push(fn);
  }

  removeStoreListener(fn: () => void): void {
    const i = this.storeListeners.indexOf(fn);
    if (i >= 0) this.storeListeners.splice(i, 1);
  }

  // ---------- publish path: check, propose ----------

  private readonly onMsg = (subject: string, reply: string, hdr: Buffer | null, payload: Buffer): void => {
    this.processInbound(subject, reply, hdr, payload);
  };

  private respondErr(reply: string, name: JsErrName, args?: Record<string, string | number>): void {
    this.respondApiErr(reply, jsErr(name, args));
  }

  /** An empty message to reply (a replicated consumer's AckSync answer). */
  replyEmpty(reply: string): void {
    this.env.bus.publish(reply, "", null, EMPTY);
  }

  private respondApiErr(reply: string, err: ApiError): void {
    if (reply === "" || this.cfg.no_ack) return;
    const body = JSON.stringify({ error: err, stream: this.name, seq: 0 });
    this.env.bus.publish(reply, "", null, Buffer.from(body));
  }

  /** A publish refused by the checks. A replicated stream's leader answers only once a quorum
   *  confirmed it leads (it may have been deposed without knowing, its state stale). */
  private refuse(reply: string, err: ApiError): void {
    const confirm = this.confirmLeader;
    if (confirm === null || !this.replicated) return this.respondApiErr(reply, err);
    if (reply === "" || this.cfg.no_ack) return;
    this.refusals ??= new RefusalGate(confirm, (r, body) => this.env.bus.publish(r, "", null, body));
    this.refusals.hold(reply, Buffer.from(JSON.stringify({ error: err, stream: this.name, seq: 0 })));
  }

  /** A message published on one of the stream's subjects. */
  processInbound(subject: string, reply: string, hdr: Buffer | null, payload: Buffer): void {
    if (this.closed) return;
    if (this.storeFailure !== null) return this.respondErr(reply, "JSStreamStoreFailedF", { err: this.storeFailure.message });
    const e = this.scratch;
    const f = this.checks.inbound(subject, reply, hdr, payload, this.env.clock.nowNs(), e);
    if (f !== null) {
      if (f.err !== null) return this.refuse(reply, f.err);
      if (reply !== "" && !this.cfg.no_ack) this.commit.queueAck(reply, f.dupSeq, true);
      return;
    }
    this.propose(e);
  }

  /** A message copied from a source: dedup and limits apply, the expected-* checks do not. */
  processSourced(subj: string, hdr: Buffer | null, payload: Buffer, msgId: string, ttlSec: number): void {
    if (this.closed || this.storeFailure !== null) return;
    const e = this.scratch;
    if (this.checks.sourced(subj, hdr, payload, msgId, ttlSec, this.env.clock.nowNs(), e)) this.propose(e);
  }

  /** A message copied by a mirror, at the origin's time; no checks. */
  processMirrored(subj: string, hdr: Buffer | null, payload: Buffer, tsNs: number, ttlSec: number): void {
    const size = this.checks.msgSize(subj, hdr === null ? 0 : hdr.length, payload.length);
    this.propose(this.scratch.set(subj, hdr, payload, tsNs, ttlSec, "", Rollup.None, "", size));
  }

  /** ExpiryHost: a subject delete marker. */
  storeMarker(subject: string, hdr: Buffer, ttlSec: number, tsNs: number): void {
    const size = this.checks.msgSize(subject, hdr.length, 0);
    this.propose(this.scratch.set(subject, hdr, EMPTY, tsNs, ttlSec, "", Rollup.None, "", size));
  }

  private propose(e: StreamEntry): void {
    const p = this.proposer;
    // Only a proposer that holds entries leaves any in flight for the checks to count.
    if (!p.immediate) this.checks.inflight.add(e);
    p.propose(e);
  }

  // ---------- apply ----------

  /** Apply one committed entry (the proposer's commit callback), in propose order. */
  applyEntry(e: StreamEntry): void {
    // Read once: e may be the scratch entry, which a publish made during a callback below
    // (a delivery, a republish) fills again.
    const subj = e.subject;
    const hdr = e.hdr;
    const payload = e.payload;
    const tsNs = e.tsNs;
    const rollup = e.rollup;
    const reply = e.reply;
    if (this.checks.inflight.count > 0) this.checks.inflight.remove(e);
    if (this.storeFailure !== null) return this.respondErr(reply, "JSStreamStoreFailedF", { err: this.storeFailure.message });
    let seq: number;
    // Previous seq on the subject, sent on republish for gap detection.
    const prevSeq = this.republishTr !== null ? (this.store.loadLastMsg(subj)?.seq ?? 0) : 0;
    try {
      seq = this.store.storeMsg(subj, hdr, payload, tsNs, e.ttlSec);
    } catch (err) {
      this.env.log.error(`JetStream failed to store a msg on stream '$G > ${this.name}': ${(err as Error).message}`);
      this.respondErr(reply, "JSStreamStoreFailedF", { err: (err as Error).message });
      this.noteStoreFailure();
      return;
    }
    this.checks.applied(e.msgId, seq, tsNs);
    this.expiry.onStored(seq, hdr);
    const commit = this.commit;
    if (this.cfg.retention === "interest" && !hasInterest(this.consumerMap, subj)) {
      // No consumer wants it: the sequence is used up but nothing is kept.
      this.store.removeMsg(seq);
    } else {
      if (rollup === Rollup.Subject) this.store.purge({ subject: subj, keep: 1 });
      else if (rollup === Rollup.All) this.store.purge({ keep: 1 });
      if (rollup !== Rollup.None) this.limitRemoved = true;
      commit.stored(seq, subj);
      if (this.republishTr !== null) {
        if (commit.deferVisible) commit.deferRepublish(seq, prevSeq);
        else republish(this.env.bus, this.cfg, this.republishTr, seq, subj, hdr, payload, tsNs, prevSeq);
      }
    }
    if (this.limitRemoved) this.afterLimitRemovals();
    for (let i = 0; i < this.storeListeners.length; i++) this.storeListeners[i]!();
    if (reply !== "" && !this.cfg.no_ack) commit.queueAck(reply, seq, false);
    commit.applied(seq);
  }

  // ---------- CommitHost ----------

  notifyStored(seq: number, subject: string): void {
    if (this.consumerMap.size > 0) for (const c of this.consumerMap.values()) c.onStored(seq, subject);
  }

  republishStored(seq: number, prevSeq: number): void {
    const m = this.store.loadMsg(seq);
    // Gone already (a limit, a purge): nothing to republish, as if it had never been kept.
    if (m !== null) republish(this.env.bus, this.cfg, this.republishTr, m.seq, m.subject, m.hdr, m.data, m.tsNs, prevSeq);
  }

  syncFailed(): void {
    this.noteStoreFailure();
  }

  /** A store that stopped is reported once; other store errors stay with their message. */
  private noteStoreFailure(): void {
    if (this.storeFailure !== null) return;
    const f = this.store.failure?.() ?? null;
    if (f === null) return;
    this.storeFailure = f;
    this.env.storeFailed?.(this, f);
  }

  // ---------- limits and expiry (ExpiryHost) ----------

  isClosed(): boolean {
    return this.closed;
  }

  /** Store callback: a message left because of a limit, an age or a TTL. */
  onLimitRemove(seq: number, subject: string): void {
    this.limitRemoved = true;
    this.expiry.onLimitRemove(seq, subject);
  }

  expired(removed: number): void {
    if (removed > 0 || this.limitRemoved) this.afterLimitRemovals();
  }

  private afterLimitRemovals(): void {
    this.limitRemoved = false;
    if (this.consumerMap.size === 0) return;
    const first = this.store.state().firstSeq;
    for (const c of this.consumerMap.values()) c.onPurged(first);
  }

  runExpiry(): void {
    this.expiry.run();
  }

  // ---------- admin operations ----------

  purge(opts: { filter?: string; seq?: number; keep?: number }): number {
    const n = this.store.purge(purgeOpts(opts));
    this.afterPurge();
    return n;
  }

  /** purge() a slice at a time: `pace` calls the step until it answers true, handing the loop
   *  back between steps as it sees fit. The messages purged are those purge() would have
   *  purged now (StreamStore.beginPurge); publishes while it runs are kept. Consumers hear of
   *  it once it is done. */
  async purgePaced(opts: { filter?: string; seq?: number; keep?: number }, pace: (step: () => boolean) => Promise<void>): Promise<number> {
    const run = this.beginPurge(opts);
    await pace(() => run.step());
    return run.purged;
  }

  /** purge() begun now, done by calling step() (each about stepSeqs sequences) until it
   *  answers true; consumers hear of it then. What it purges is fixed now (as purgePaced). */
  beginPurge(opts: { filter?: string; seq?: number; keep?: number }, stepSeqs = PURGE_STEP_SEQS): StreamPurge {
    const store = this.store;
    // A store without paced purges purges at once (consumers hear of it in purge()).
    if (store.beginPurge === undefined) return new StreamPurge(donePurge(this.purge(opts)), stepSeqs, () => undefined);
    return new StreamPurge(store.beginPurge(purgeOpts(opts)), stepSeqs, () => {
      if (!this.closed) this.afterPurge();
    });
  }

  private afterPurge(): void {
    const first = this.store.state().firstSeq;
    this.expiry.onPurged(first);
    for (const c of this.consumerMap.values()) c.onPurged(first);
  }

  /** erase (nats-server's default, `no_erase: false`): overwrite the stored bytes too. */
  deleteMsg(seq: number, erase: boolean): boolean {
    const store = this.store;
    return erase && store.eraseMsg !== undefined ? store.eraseMsg(seq) : store.removeMsg(seq);
  }

  /** Rebuild the dedup window and last msg id from stored Nats-Msg-Id headers (recovery). */
  rebuildDedup(): number {
    return this.checks.rebuild(this.env.clock.nowNs());
  }

  // ---------- replication (src/jscluster/stream-group.ts drives these) ----------

  /** Take publishes on the stream's subjects, or not: a replicated stream subscribes only
   *  while its replica leads (clients see no responders during an election). */
  setIngest(on: boolean): void {
    if (on === this.ingest) return;
    this.ingest = on;
    this.copyEpoch++;
    // Refusals held for a leadership confirmation: a new term starts from nothing held.
    this.refusals?.clear();
    this.resubscribe();
  }

  /** Bumped when leadership starts or ends and when a proposal is dropped: a mirror or
   *  source reader (sourcing.ts) then finds its position again from the store, since what
   *  it proposed may never be stored. */
  copyEpoch = 0;

  get ingesting(): boolean {
    return this.ingest;
  }

  /** True when what is proposed applies later, through a Raft group (R>1 clustered). */
  get replicated(): boolean {
    return !this.proposer.immediate;
  }

  /** A proposal the proposer could not take (this replica stopped leading): not in flight. */
  proposalDropped(e: StreamEntry): void {
    this.checks.inflight.remove(e);
    this.copyEpoch++;
  }

  /** Leadership changed: nothing proposed here is in flight any more. */
  clearInflight(): void {
    this.checks.inflight.clear();
    this.copyEpoch++;
  }

  /** Proposed here, not yet applied or dropped. */
  get inflightCount(): number {
    return this.checks.inflight.count;
  }

  /** An entry the store already holds at seq (a replica replaying its log after a restart):
   *  only the duplicate window learns it. */
  noteReplayed(msgId: string, seq: number, tsNs: number): void {
    this.checks.applied(msgId, seq, tsNs);
  }

  /** The store's contents were replaced underneath (a Raft snapshot installed): rebuild the
   *  duplicate window from the stored headers, show consumers the new range. */
  storeReplaced(): void {
    this.checks.inflight.clear();
    this.copyEpoch++;
    this.checks.dedup.clear();
    this.checks.lastMsgId = "";
    this.checks.rebuild(this.env.clock.nowNs());
    const st = this.store.state();
    if (st.lastSeq > this.commit.visibleSeq) this.commit.visibleSeq = st.lastSeq;
    this.expiry.arm();
    for (const c of this.consumerMap.values()) c.onPurged(st.firstSeq);
  }

  // ---------- info ----------

  state(opts?: StateOpts): StreamStateWire {
    return streamState(this.store, this.consumerMap.size, opts);
  }

  info(opts?: StateOpts, extra?: Partial<StreamInfoWire>): StreamInfoWire {
    return streamInfo(this.wireConfig(), this.createdNs, this.state(opts), this.env.serverName, this.env.clock.nowNs(), extra);
  }

  pubAck(seq: number, duplicate: boolean): PubAckWire {
    const a: PubAckWire = { stream: this.name, seq };
    if (this.env.domain !== "") a.domain = this.env.domain;
    if (duplicate) a.duplicate = true;
    return a;
  }

  // ---------- lifecycle ----------

  /** Stop ingest and timers; consumers are stopped by the caller. sliced: the caller
   *  unsubscribes with syncSubscriptions (nothing is stored meanwhile). */
  detach(sliced = false): void {
    this.closed = true;
    this.refusals?.clear();
    this.resubscribe(sliced);
    this.expiry.stop();
  }

  async stopConsumers(deleteState: boolean): Promise<void> {
    const cs = [...this.consumerMap.values()];
    this.consumerMap.clear();
    for (const c of cs) {
      try {
        await c.stop(deleteState);
      } catch (e) {
        this.env.log.warn(`stopping consumer '${this.name} > ${c.name}': ${(e as Error).message}`);
      }
    }
  }

  /** Wait until every queued PubAck has been answered (used before close). */
  async drainAcks(): Promise<void> {
    await this.commit.drain();
  }
}

/** A purge begun with Stream.beginPurge. */
export class StreamPurge {
  private finished = false;

  constructor(
    private readonly job: StorePurge,
    private readonly stepSeqs: number,
    private readonly onDone: () => void,
  ) {}

  /** Messages it removed so far; all it removes once done. */
  get purged(): number {
    return this.job.purged;
  }

  /** Works through about stepSeqs sequences; true once done. */
  step(): boolean {
    if (this.finished) return true;
    if (!this.job.step(this.stepSeqs)) return false;
    this.finished = true;
    this.onDone();
    return true;
  }
}

/** Sequences a paced purge works through per step (well under the API's slice of time: a
 *  step that removes every one of them from a file stream, a tombstone each, takes ~1 ms). */
const PURGE_STEP_SEQS = 1024;

function purgeOpts(opts: { filter?: string; seq?: number; keep?: number }): { subject?: string; seq?: number; keep?: number } {
  const p: { subject?: string; seq?: number; keep?: number } = {};
  if (opts.filter !== undefined && opts.filter !== "" && opts.filter !== ">") p.subject = opts.filter;
  if (opts.seq !== undefined && opts.seq > 0) p.seq = opts.seq;
  if (opts.keep !== undefined && opts.keep > 0) p.keep = opts.keep;
  return p;
}
