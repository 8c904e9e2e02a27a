// A replicated stream (R3/R5): one Raft group on the server's shared RaftHost whose state
// machine is the local Stream (CLUSTERING.md §1.4, §3.9). Only the leader takes publishes:
// the stream subscribes to its subjects only while this replica leads and has applied its
// term's no-op (so its in-flight and duplicate state are rebuilt from what was applied). The
// leader runs the publish checks, proposes the StreamEntry in binary (stream-codec.ts), and
// every replica applies committed entries in log order through the same Stream.applyEntry;
// only the leader that proposed an entry answers its PubAck, after commit and apply (and the
// store's own fsync). Purge and message delete are entries of the same log.
//
// Sequences are not in the entries: each replica's store assigns them in log order, so the
// same log gives the same sequences everywhere. A replica that restarts replays its log from
// its last snapshot; `applySeq` counts the sequences the entries use, and an entry whose
// sequence the store already holds (written before the restart) is skipped, as is a purge
// that later messages in the store show was applied.
//
// Snapshots (GroupApp.snapshot) hold state only: the log index, the sequences used, the
// store's first/last sequence and counts; one is taken every snapshotEntries publishes or
// snapshotBytes of log, and the log before it is dropped once the store has synced what it
// describes. A replica that installs a snapshot its store does not reach (a follower far
// behind, a memory store after a restart, a file store that lost unsynced writes) catches up
// from a peer whose store is exactly its applied state (stream-catchup.ts): it asks with its
// last sequence, gets that peer's state at its applied index Y (first/last, the sequences it
// no longer holds, the messages past ours), installs it, and applies only entries after Y;
// entries that commit meanwhile wait. The format is stream-snap.ts; version 1 snapshots (the
// whole store as an archive, installStoreSnapshot) are still restored.
//
// A purge entry that would take long (a million messages: 40-100 ms in one go) is applied a
// slice per turn when the group has a scheduler: the entries after it wait in `queued`, as
// during a catch-up, and the group's applied index stays before it until it is done, so
// reads, snapshots and catch-up answers never see a half-purged store as applied state.

import { withIdentity } from "../raft/identity.js";
import type { RaftHost, GroupApp } from "../raft/host.js";
import { type Entry, EntryType, RaftError, type ReadState, Role } from "../raft/types.js";
import type { Clock, TimerHandle } from "../runtime/clock.js";
import type { Logger } from "../runtime/log.js";
import type { Scheduler } from "../runtime/sched.js";
import { decodeStreamSnapshot, encodeArchiveSnapshot, encodeStateSnapshot } from "./stream-snap.js";
import type { StreamStore } from "../storage/types.js";
import { StreamEntry, type EntryApplier, type Proposer } from "../stream/entry.js";
import type { Stream, StreamPurge } from "../stream/stream.js";
import { ConsumerRepl, OP_CONSUMERS } from "./consumer-repl.js";
import { CU_ACK, CU_OPEN, installStoreSnapshot, type LostState } from "./stream-catchup.js";
import { CatchupPeer, DEFAULT_CATCHUP_WINDOW } from "./stream-catchup-peer.js";
import { GroupMembers } from "./stream-members.js";
import { SeedSnapshot } from "./stream-seed.js";
import { LeaderReads, notLeader } from "./stream-reads.js";
import { AckKeys, KEY_SPAN } from "./stream-acks.js";
import { PublishBatch } from "./stream-batch.js";
import type { StreamConfig } from "../contracts/wire.js";
import type { ConsumerSeed } from "../contracts/jetstream.js";
import {
  asBuffer,
  BATCH_HDR,
  OP_BATCH,
  decodeConfigOp,
  decodeDeleteOp,
  decodeMsgOp,
  decodePurgeOp,
  encodeConfigOp,
  encodeDeleteOp,
  encodePurgeOp,
  OP_CONFIG,
  OP_DELETE,
  OP_MSG,
  OP_PURGE,
} from "./stream-codec.js";

/** nats-server snapshots a stream's group every 65,536 entries or 8 MiB. */
const DEFAULT_SNAPSHOT_ENTRIES = 65_536;
const DEFAULT_SNAPSHOT_BYTES = 64 * 1024 * 1024;
/** A purge entry applied over several turns works at most this long per turn. */
const PURGE_SLICE_MS = 2;
/** A peer that asked for a catch-up (or acknowledged a chunk of one) this recently is still
 *  catching up (it asks again within a second while unanswered). */
const ASKING_MS = 1500;

export interface StreamGroupOptions {
  /** Raft group name, e.g. "S-R3F-abcd1234". */
  group: string;
  /** Server names (Raft ids), this one included. */
  peers: string[];
  /** The peers' storage identities when the group was made (RaftGroupInfo.ids). */
  ids?: Readonly<Record<string, string>>;
  self: string;
  /** The server's shared RaftHost (the meta group's host). */
  host: RaftHost;
  /** Build the local Stream with this proposer factory in its StreamEnv (the caller opens the store). */
  open(proposer: (applier: EntryApplier) => Proposer): Stream;
  clock: Clock;
  log: Logger;
  /** With a scheduler, the publishes taken in one job (one socket read) are proposed together
   *  as one Raft entry, at the job's end (a microtask); without, each is its own entry. */
  sched?: Scheduler;
  onLeaderChange?(leader: string): void;
  /** Catch-up credit in bytes: chunks a responder may have unacknowledged (default 8 MiB). */
  catchupWindowBytes?: number;
  /** The cluster's name (the `cluster` blocks of CONSUMER.INFO). */
  clusterName?: string;
  /** A configuration entry was applied (stream.update done): persist it (meta.json). */
  onConfig?(cfg: StreamConfig): void;
  /** A purge entry is applied a step of this many sequences at a time (default: the
   *  Stream's), for at most PURGE_SLICE_MS per turn ... */
  purgeStepSeqs?: number;
  /** ... and at most this many steps per turn (tests, whose clock does not move; default no
   *  limit but the time). */
  purgeTurnSteps?: number;
  /** Snapshot the group after this many applied publishes and other entries (default 65,536) ... */
  snapshotEntries?: number;
  /** ... or this many bytes of applied entries (default 64 MiB); 0 turns automatic snapshots off. */
  snapshotBytes?: number;
  /** R1→R>1 on the server that held the plain stream: it starts as the only voter, its store
   *  (and these consumers) the state, snapshotted (stream-seed.ts) before it takes publishes
   *  or adds members. Ignored once the group has a snapshot. */
  seed?: readonly ConsumerSeed[];
  /** A new member of a running group: its Raft node starts with these voters (not itself). */
  joinVoters?: readonly string[];
  /** Why this replica's copy cannot be trusted (its store was damaged and set aside): the
   *  group starts blank here and re-syncs from its peers (RaftHost.addGroup). */
  resync?: string;
}

interface PendingOp {
  resolve(v: number | boolean | undefined): void;
  reject(e: Error): void;
}

/** The proposer the stream is built with: hands checked entries to the group. */
class RaftProposer implements Proposer {
  readonly immediate = false;
  constructor(private readonly g: StreamGroup) {}
  propose(e: StreamEntry): void {
    this.g.proposeEntry(e);
  }
}

/** A read not confirmed by a quorum in this long is refused (the leader may be cut off). */
export class StreamGroup implements GroupApp {
  readonly stream: Stream;
  /** The copies of the stream's durable consumers' ledgers (consumer-repl.ts). */
  readonly consumers: ConsumerRepl;
  /** Consumer entries up to this index are in `consumers` (a catch-up does not cover them). */
  private consumerIndex = 0;
  readonly name: string;
  private readonly o: StreamGroupOptions;
  private readonly store: StreamStore;
  private leaderName = "";
  private leaderSinceMs = 0;
  /** The term this replica leads in (0: not leading). */
  private leadTerm = 0;
  /** Leading, and the term's no-op is applied: publishes are taken. */
  private taking = false;
  /** The sequence the last applied message entry used. */
  private applySeq = 0;
  /** The store's last sequence when it was opened or restored: entries up to it are replayed. */
  private replayTo = 0;
  /** While the group is being added: a snapshot restored now is our own, from before a restart. */
  private opening = true;
  /** Key (Raft index × KEY_SPAN + place in its batch) and reply subject of each publish this
   *  leader proposed that wants a PubAck. */
  private readonly acks = new AckKeys();
  private readonly ops = new Map<number, PendingOp>();
  private readonly scratch = new StreamEntry();
  /** Publishes taken, proposed one by one or batched per job (stream-batch.ts). */
  private readonly batch: PublishBatch;
  private sinceSnapEntries = 0;
  private sinceSnapBytes = 0;
  private snapTimer: TimerHandle | null = null;
  private readonly snapEntries: number;
  private readonly snapBytes: number;
  /** Index of the last entry this state reflects (applied, or covered by a catch-up). */
  private appliedIndex = 0;
  private readonly reads: LeaderReads;
  /** Entries up to this index are already reflected (a catch-up answer covered them). */
  private skipThrough = 0;
  /** Catching up from a peer after a state-only snapshot: entries wait in `queued`. */
  private readonly cu: CatchupPeer;
  private queued: Entry[] = [];
  /** A purge entry being applied a slice per turn; the entries after it wait in `queued`. */
  private purging: { run: StreamPurge; e: Entry } | null = null;
  private readonly purgeTurnBound = (): void => this.purgeTurn();
  /** A snapshot was asked for while a purge was being applied: taken once it is done. */
  private snapAfterPurge = false;
  private closed = false;
  /** The members the meta group assigned and the Raft voters (stream-members.ts). */
  private readonly membership: GroupMembers;
  /** When each peer last asked this replica for a catch-up (monotonic ms). */
  private readonly asking = new Map<string, number>();
  /** Seeding: no publishes, no members added, until the seed snapshot is on disk. */
  private seeding = false;
  private readonly seed: SeedSnapshot;
  /** Entries applied since open (tests, logs). */
  applied = 0;
  /** Purge entries applied over more than one turn since open (tests). */
  pacedPurges = 0;
  /** Snapshots restored since open (tests). */
  restores = 0;
  /** Catch-ups completed / answered since open (tests). */
  get catchups(): number {
    return this.cu.done;
  }
  get catchupsServed(): number {
    return this.cu.served;
  }
  /** Catch-up data chunks received (tests). */
  get catchupWindows(): number {
    return this.cu.windows;
  }

  static open(o: StreamGroupOptions): StreamGroup {
    return new StreamGroup(o);
  }

  private constructor(o: StreamGroupOptions) {
    this.o = o;
    this.name = o.group;
    this.membership = new GroupMembers({ host: o.host, clock: o.clock, log: o.log, group: o.group, self: o.self, closed: () => this.closed, canChange: () => !this.seeding }, o.peers);
    this.reads = new LeaderReads({ clock: o.clock, leading: () => this.taking && !this.closed, appliedIndex: () => this.appliedIndex, readIndex: (ctx) => o.host.readIndex(this.name, ctx) });
    this.snapEntries = o.snapshotEntries ?? DEFAULT_SNAPSHOT_ENTRIES;
    this.snapBytes = o.snapshotBytes ?? DEFAULT_SNAPSHOT_BYTES;
    const proposer = new RaftProposer(this);
    this.consumers = new ConsumerRepl({
      propose: (data) => this.o.host.propose(this.name, data),
      later: (fn) => {
        if (this.o.sched !== undefined) this.o.sched.microtask(fn);
        else this.o.clock.setTimer(fn, 0);
      },
      publishReply: (reply) => this.stream.replyEmpty(reply),
      clusterInfo: () => ({ name: this.o.clusterName ?? "", ...this.clusterInfo() }),
      localInfo: () => ({ name: this.o.clusterName ?? "", leader: this.o.self }),
    });
    this.stream = o.open(() => proposer);
    this.stream.consumerRepl = this.consumers;
    // The leader's refusals of publishes wait for a quorum to confirm it leads (a deposed
    // leader that does not know it yet must not answer from its stale state).
    this.stream.confirmLeader = () => this.confirmRead();
    this.store = this.stream.store;
    this.batch = new PublishBatch({ host: o.host, group: o.group, sched: o.sched, stream: this.stream, acks: this.acks, scratch: this.scratch, closed: () => this.closed });
    this.cu = new CatchupPeer({
      host: o.host,
      clock: o.clock,
      log: o.log,
      group: o.group,
      self: o.self,
      store: this.store,
      windowBytes: o.catchupWindowBytes ?? DEFAULT_CATCHUP_WINDOW,
      closed: () => this.closed,
      leader: () => this.leaderName,
      others: () => this.membership.others(),
      servable: () => (this.applySeq < this.replayTo || this.purging !== null ? null : { appliedIndex: this.appliedIndex, applySeq: this.applySeq }),
      installed: (index, applySeq) => this.caughtUp(index, applySeq),
      resetLost: (at) => this.resetLost(at),
    });
    this.seed = new SeedSnapshot({
      host: o.host,
      clock: o.clock,
      log: o.log,
      group: o.group,
      store: this.store,
      closed: () => this.closed,
      capture: () => ({ index: this.appliedIndex, data: this.snapshot() }),
      done: () => {
        this.seeding = false;
        this.maybeStartTaking();
      },
    });
    this.stream.setIngest(false);
    this.replayTo = this.store.state().lastSeq;
    const join = o.joinVoters !== undefined && o.joinVoters.length > 0 ? [...o.joinVoters] : null;
    const first = o.seed !== undefined ? o.host.ids.members([o.self]) : (join ?? o.peers.map((p) => withIdentity(p, o.ids?.[p])));
    const node = o.host.addGroup(o.group, first, this, o.resync);
    this.opening = false;
    if (o.seed !== undefined && node.snapshot === null) {
      // The store's messages are the state, as if the log had applied them.
      this.seeding = true;
      this.applySeq = this.replayTo;
      this.consumers.seed(o.seed);
      o.host.campaign(o.group);
    }
    // Resumed in this process while leading, its term's no-op applied already (perhaps under
    // a snapshot): take publishes now.
    this.maybeStartTaking();
  }

  /** Leading, and this state includes the term's no-op (so everything before it) and every
   *  entry of the log: take publishes, with in-flight, duplicate and consumer state exactly
   *  what was applied. A leader's log past its applied index holds only its own term's
   *  entries, proposed by an earlier instance of this group in this process (the stream
   *  reopened while leading); their publishes are in flight but in no InflightTable, and
   *  their consumer operations in no copy a consumer starts from, so taking publishes (a
   *  compare-and-set checked against a store without them) waits until they applied. */
  private maybeStartTaking(): void {
    if (this.taking || this.closed || this.cu.active) return;
    const node = this.o.host.node(this.name);
    if (node === undefined || node.role !== Role.Leader || node.failed !== null) return;
    const i = this.appliedIndex;
    if (i > 0 && node.log.term(i) === node.term && node.log.lastIndex() <= i) {
      if (this.seeding) this.seed.run();
      else this.startTaking(node.term);
    }
  }

  // ---------- membership (STREAM.PEER.REMOVE, SERVER.REMOVE) ----------

  /** The meta group assigned these members (every replica hears it; the leader acts). */
  setPeers(peers: readonly string[]): void {
    this.membership.assign(peers);
  }

  /** The consumers' agreed state (the stream becoming plain again keeps them). */
  consumerSeeds(): ConsumerSeed[] {
    return this.consumers.seeds();
  }

  /** The assigned members. */
  get members(): readonly string[] {
    return this.membership.assigned;
  }

  /** The Raft voters now. */
  get voters(): string[] {
    return this.membership.voters;
  }

  /** /healthz: "" when this replica is current, else nats-server's reason. */
  healthError(): string {
    if (this.closed) return "group node missing";
    const st = this.o.host.status(this.name);
    if (st === undefined) return "group node missing";
    if (st.failed !== null) return `node write error: ${st.failed}`;
    if (this.cu.active) return "stream catching up";
    if (!this.membership.isCurrent()) return "group node unhealthy";
    return "";
  }

  /** Lame duck or shutdown: a leader hands leadership to a peer heard from lately. */
  handOff(boundMs: number): Promise<void> {
    return this.membership.handOff(boundMs);
  }

  /** This server is no longer assigned: resolves once it no longer leads (bounded). */
  leave(boundMs: number): Promise<void> {
    return this.membership.leave(boundMs);
  }

  /** For tests and logs. */
  debugState(): Record<string, unknown> {
    const st = this.store.state();
    return { applied: this.appliedIndex, consumers: this.consumerIndex, applySeq: this.applySeq, replayTo: this.replayTo, skip: this.skipThrough, catchup: this.cu.minIndex, queued: this.queued.length, taking: this.taking, leader: this.leaderName, first: st.firstSeq, last: st.lastSeq, msgs: st.msgs };
  }

  /** Catching up from a peer after installing a state-only snapshot. */
  get isCatchingUp(): boolean {
    return this.cu.active;
  }

  get leader(): string {
    return this.leaderName;
  }

  get isLeader(): boolean {
    return this.leadTerm !== 0 && this.leaderName === this.o.self;
  }

  /** Leading and taking publishes (the term's no-op is applied). */
  get isTakingPublishes(): boolean {
    return this.taking;
  }

  // ---------- propose ----------

  /** From the stream (RaftProposer): a checked publish. Valid only during the call. */
  proposeEntry(e: StreamEntry): void {
    if (!this.taking) {
      this.stream.proposalDropped(e);
      return;
    }
    this.batch.add(e);
  }

  private proposeOp(data: Uint8Array): Promise<number | boolean | undefined> {
    if (!this.isLeader || this.closed) return Promise.reject(notLeader());
    // Publishes and consumer operations taken before this request go first, as they would on
    // a single server.
    this.batch.flush();
    this.consumers.flush();
    let index: number;
    try {
      index = this.o.host.propose(this.name, data);
    } catch (err) {
      if (err instanceof RaftError) return Promise.reject(notLeader());
      return Promise.reject(err as Error);
    }
    return new Promise((resolve, reject) => this.ops.set(index, { resolve, reject }));
  }

  /** Replicated purge: resolves with the number purged once committed and applied here. */
  async purge(req: { filter?: string; seq?: number; keep?: number }): Promise<number> {
    return (await this.proposeOp(encodePurgeOp(req))) as number;
  }

  /** Replicated message delete: resolves with whether it was there, once applied here. */
  async deleteMsg(seq: number, erase: boolean): Promise<boolean> {
    return (await this.proposeOp(encodeDeleteOp(seq, erase))) as boolean;
  }

  /** Replicated configuration change (limits, subjects, ...; the caller checked it): every
   *  replica applies it at the same point of the log; resolves once applied here. */
  async updateConfig(cfg: StreamConfig): Promise<void> {
    await this.proposeOp(encodeConfigOp(cfg));
  }

  /** STREAM.LEADER.STEPDOWN: hand leadership to the most caught-up active peer; resolves
   *  once another replica leads. */
  stepdown(): Promise<void> {
    if (!this.isLeader || this.closed) return Promise.reject(notLeader());
    return this.membership.stepdown();
  }

  /** Leave the group: stop taking publishes and stop driving the Raft group. The stream, its
   *  store and the group's WAL records stay (the caller closes or deletes the stream). */
  /** deleted: the group is gone from this server for good (the stream deleted or moved
   *  away, or turned plain): its Raft state is dropped, not kept for a reopen. */
  close(deleted = false): void {
    if (this.closed) return;
    // A purge under way is finished: the store may go on (reopened, or plain again).
    if (!deleted) this.abandonPurge();
    this.closed = true;
    this.membership.close();
    this.stopLeading("stream group closed");
    this.cu.stop();
    this.cu.stopServing();
    if (deleted) this.o.host.deleteGroup(this.name);
    else this.o.host.removeGroup(this.name);
    if (this.snapTimer !== null) this.o.clock.clearTimer(this.snapTimer);
    this.snapTimer = null;
    this.seed.stop();
  }

  // ---------- linearizable reads ----------

  /** Resolves once this replica is confirmed as leader by a quorum (Raft ReadIndex) and has
   *  applied everything committed when it was asked (stream-reads.ts); rejects otherwise. */
  confirmRead(): Promise<void> {
    return this.reads.confirm();
  }

  onReadState(rs: ReadState): void {
    this.reads.onReadState(rs.context, rs.index);
  }

  // ---------- GroupApp ----------

  apply(entries: Entry[]): void {
    if (this.closed) return;
    if (this.cu.active || this.purging !== null) {
      // The store is not at the snapshot's state yet, or a purge is still being applied:
      // these wait for it.
      this.hold(entries, 0);
      return;
    }
    for (let i = 0; i < entries.length; i++) {
      const e = entries[i]!;
      if (e.index <= this.skipThrough) {
        // A catch-up answer holds the stream, not the consumers: their entries still apply.
        if (e.index > this.consumerIndex && e.type !== EntryType.Noop && e.data[0] === OP_CONSUMERS) this.applyConsumers(e);
        continue;
      }
      this.appliedIndex = e.index;
      this.applied++;
      if (e.type === EntryType.Noop) {
        // Everything before this term's no-op is applied: the leader's state is exact now.
        this.maybeStartTaking();
        continue;
      }
      if (e.type === EntryType.ConfChange) {
        // A membership change (the Raft acted on it at append); a snapshot soon after keeps
        // the voters in the snapshot rather than in a log a restart must replay.
        this.sinceSnapEntries = Math.max(this.sinceSnapEntries, this.snapEntries);
        continue;
      }
      const d = e.data;
      const op = d[0];
      if (op === undefined) continue;
      this.sinceSnapEntries++;
      this.sinceSnapBytes += d.length;
      try {
        switch (op) {
          case OP_MSG:
            this.applyMsg(e.data, 0, e.data.length, e.term, e.index * KEY_SPAN);
            break;
          case OP_BATCH:
            this.applyBatch(e);
            break;
          case OP_PURGE:
            if (this.applyPurge(e)) {
              // Applied over the next turns: the rest waits, and the purge is not applied yet.
              this.appliedIndex = e.index - 1;
              this.hold(entries, i + 1);
              return;
            }
            break;
          case OP_DELETE:
            this.applyDelete(e);
            break;
          case OP_CONFIG:
            this.applyConfig(e);
            break;
          case OP_CONSUMERS:
            if (e.index > this.consumerIndex) this.applyConsumers(e);
            break;
          default:
            this.o.log.warn(`stream group ${this.name}: unknown entry type ${op} at ${e.index}`);
        }
      } catch (err) {
        this.o.log.error(`stream group ${this.name}: applying entry ${e.index}: ${(err as Error).message}`);
        this.ops.get(e.index)?.reject(err as Error);
        this.ops.delete(e.index);
      }
    }
    this.afterApply();
  }

  private afterApply(): void {
    // Leading with entries of an earlier instance in the log: all applied now?
    if (!this.taking) this.maybeStartTaking();
    if (this.snapTimer === null && (this.snapAfterPurge || (this.snapBytes > 0 && (this.sinceSnapEntries >= this.snapEntries || this.sinceSnapBytes >= this.snapBytes)))) {
      this.snapAfterPurge = false;
      // Not from inside apply: the host has not advanced past these entries yet.
      this.snapTimer = this.o.clock.setTimer(() => this.takeSnapshot(), 0);
    }
  }

  /** entries[from...] wait in `queued` (a catch-up or a purge is under way). */
  private hold(entries: Entry[], from: number): void {
    for (let i = from; i < entries.length; i++) if (entries[i]!.index > this.skipThrough) this.queued.push(entries[i]!);
  }

  private applyBatch(e: Entry): void {
    const b = asBuffer(e.data);
    if (b.length < BATCH_HDR) throw new Error("corrupt batch entry");
    const n = b.readUInt16LE(1);
    // Snapshot thresholds count publishes, not Raft entries.
    this.sinceSnapEntries += n - 1;
    const base = e.index * KEY_SPAN;
    let p = BATCH_HDR;
    for (let k = 0; k < n; k++) {
      if (p + 4 > b.length) throw new Error("corrupt batch entry");
      const len = b.readUInt32LE(p);
      p += 4;
      this.applyMsg(b, p, p + len, e.term, base + k);
      p += len;
    }
  }

  private applyMsg(data: Uint8Array, start: number, end: number, term: number, key: number): void {
    const m = decodeMsgOp(data, this.scratch, start, end);
    const seq = ++this.applySeq;
    const reply = this.leadTerm !== 0 && term === this.leadTerm ? this.acks.take(key) : "";
    if (seq <= this.replayTo) {
      // Stored before a restart (or installed by a snapshot): only the duplicate window learns it.
      this.stream.noteReplayed(m.msgId, seq, m.tsNs);
      return;
    }
    m.reply = reply;
    this.stream.applyEntry(m);
    if (this.stream.storeFailure !== null) this.applySeq = this.store.state().lastSeq;
  }

  private applyConsumers(e: Entry): void {
    this.consumerIndex = e.index;
    this.consumers.apply(e.data, e.index, this.leadTerm !== 0 && e.term === this.leadTerm);
  }

  /** Applies a purge entry; true when it goes on over the next turns (purgeTurn). */
  private applyPurge(e: Entry): boolean {
    const p = decodePurgeOp(e.data);
    let n = 0;
    // A purge followed in the log by messages the store holds was applied before a restart.
    if (this.applySeq >= this.replayTo) {
      const req: { filter?: string; seq?: number; keep?: number } = { filter: p.filter };
      if (p.seq > 0) req.seq = p.seq;
      if (p.keep > 0) req.keep = p.keep;
      if (this.o.sched !== undefined) {
        const run = this.stream.beginPurge(req, this.o.purgeStepSeqs);
        if (!this.purgeSlice(run)) {
          this.purging = { run, e };
          this.pacedPurges++;
          this.o.sched.nextTurn(this.purgeTurnBound);
          return true;
        }
        n = run.purged;
      } else n = this.stream.purge(req);
      this.purgeApplied();
    }
    this.settleOp(e, n);
    return false;
  }

  /** A purge may move the last sequence up (a purge to a sequence past the end). */
  private purgeApplied(): void {
    const last = this.store.state().lastSeq;
    if (last > this.applySeq) this.applySeq = last;
  }

  /** One turn's share of a purge; true once it is done. */
  private purgeSlice(run: StreamPurge): boolean {
    const clock = this.o.clock;
    const t0 = clock.monoMs();
    const maxSteps = this.o.purgeTurnSteps ?? Infinity;
    let steps = 0;
    while (!run.step()) if (++steps >= maxSteps || clock.monoMs() - t0 >= PURGE_SLICE_MS) return false;
    return true;
  }

  /** The purge under way goes on; once done, it is applied, and the entries that waited. */
  private purgeTurn(): void {
    const p = this.purging;
    if (p === null || this.closed) return;
    if (!this.purgeSlice(p.run)) {
      this.o.sched!.nextTurn(this.purgeTurnBound);
      return;
    }
    this.purging = null;
    this.purgeApplied();
    this.appliedIndex = p.e.index;
    this.settleOp(p.e, p.run.purged);
    const q = this.queued;
    this.queued = [];
    if (q.length > 0) this.apply(q);
    else this.afterApply();
  }

  /** A snapshot replaces the state a purge under way was working on: it is finished at once
   *  (the store must not keep a half-done job under what is installed), and the entries that
   *  waited for it are covered by the snapshot. */
  private abandonPurge(): void {
    const p = this.purging;
    if (p === null) return;
    this.purging = null;
    while (!p.run.step());
    this.queued = [];
  }

  private applyDelete(e: Entry): void {
    const d = decodeDeleteOp(e.data);
    const ok = this.stream.deleteMsg(d.seq, d.erase);
    this.settleOp(e, ok);
  }

  private applyConfig(e: Entry): void {
    const cfg = decodeConfigOp(e.data);
    // Replaying (the store is past this point): an older config must not trim what the store
    // holds under a newer one; the stream was opened with its latest config.
    if (this.applySeq >= this.replayTo) {
      this.stream.update(cfg);
      this.o.onConfig?.(cfg);
    }
    this.settleOp(e, undefined);
  }

  private settleOp(e: Entry, v: number | boolean | undefined): void {
    const p = this.ops.get(e.index);
    if (p === undefined) return;
    this.ops.delete(e.index);
    if (e.term === this.leadTerm) p.resolve(v);
    else p.reject(notLeader());
  }

  /** State only: the log position and the store's range. A replica that installs it and
   *  finds its store short catches up from a peer (stream-catchup.ts). */
  snapshot(): Uint8Array {
    const st = this.store.state();
    return encodeStateSnapshot({ appliedIndex: this.appliedIndex, applySeq: this.applySeq, firstSeq: st.firstSeq, lastSeq: st.lastSeq, lastTsNs: st.lastTsNs, msgs: st.msgs, bytes: st.bytes }, this.consumers.encode());
  }

  /** The whole store as a snapshot (version 1; installStoreSnapshot restores it). */
  archiveSnapshot(): Uint8Array {
    return encodeArchiveSnapshot(this.applySeq, this.store);
  }

  restore(data: Uint8Array): void {
    const d = decodeStreamSnapshot(this.name, asBuffer(data));
    this.abandonPurge();
    this.restores++;
    this.sinceSnapEntries = 0;
    this.sinceSnapBytes = 0;
    if (d.kind === "archive") {
      this.consumers.restore(Buffer.alloc(0));
      installStoreSnapshot(this.store, d.archive, this.opening);
      this.applySeq = d.applySeq;
      this.replayTo = this.store.state().lastSeq;
      this.stream.storeReplaced();
      return;
    }
    const { appliedIndex: index, applySeq, firstSeq: first, lastSeq: last, msgs } = d.state;
    const st = this.store.state();
    this.consumers.restore(d.consumers);
    this.consumerIndex = index;
    this.appliedIndex = index;
    this.skipThrough = index;
    // Our own snapshot, and the store reaches it: a snapshot is kept only once the store had
    // synced what it describes, so the store holds that state or a later one (a restart or a
    // power loss cannot take it back); replay from it. A memory store starts empty: catch up.
    // Not a store a catch-up was filling when the server stopped (the mark is still there):
    // it may hold a peer's later messages without the removals that come at the catch-up's
    // end, which no replay brings back; it catches up again from where it got to.
    const fileStore = this.store.type === "file";
    const halfFilled = this.opening && fileStore && this.o.host.catchupMarked(this.name);
    if (this.opening && !halfFilled && (st.lastSeq > last || (st.lastSeq === last && (st.lastSeq === 0 || this.store.type === "file" || (st.firstSeq === first && st.msgs === msgs))))) {
      this.applySeq = applySeq;
      this.replayTo = st.lastSeq;
      this.cu.stop();
      return;
    }
    const lost = this.opening && this.store.type === "memory" && st.lastSeq === 0 && last > 0 ? { index, applySeq, lastSeq: last, lastTsNs: d.state.lastTsNs } : null;
    this.queued = [];
    if (this.taking) this.stopLeading("catching up");
    // Durably, before the first message of the catch-up is stored (see halfFilled above).
    if (fileStore) this.o.host.markCatchup(this.name, true);
    this.cu.start(index, lost);
  }

  // ---------- catch-up (stream-catchup-peer.ts) ----------

  onAppFrame(from: string, data: Buffer): void {
    // A peer asking for messages is not current yet, whatever its log (STREAM.INFO).
    if (data[0] === CU_OPEN || data[0] === CU_ACK) this.asking.set(from, this.o.clock.monoMs());
    this.cu.onFrame(from, data);
  }

  /**
   * Every replica of this memory stream restarted and lost the messages its snapshot
   * describes: nobody can answer a catch-up. As nats-server (whose memory streams keep their
   * Raft log in memory, so the stream comes back empty), the messages up to the snapshot are
   * gone; unlike it, the sequence is kept (the store starts after the snapshot's last
   * sequence) and the log entries after the snapshot, which the shared WAL kept, apply with
   * their own sequences. Every replica resets at the same point, the latest snapshot among
   * them (`at`), so they stay identical.
   */
  private resetLost(at: LostState): void {
    this.o.log.warn(`stream group ${this.name}: every replica of this memory stream lost its messages up to sequence ${at.lastSeq} in a restart: it goes on empty from there`);
    const last = this.store.state().lastSeq;
    if (at.lastSeq > last) this.store.skipMsgs(last + 1, at.lastSeq - last, at.lastTsNs);
    this.queued = this.queued.filter((e) => e.index > at.index);
    this.resume(at.index, at.applySeq);
  }

  /** The catch-up's last window is stored: the store is at the peer's state at `index`. */
  private caughtUp(index: number, applySeq: number): void {
    this.resume(index, applySeq);
  }

  /** The store now reflects the log up to `index`: apply what waited and go on. */
  private resume(index: number, applySeq: number): void {
    this.applySeq = applySeq;
    this.replayTo = this.store.state().lastSeq;
    this.appliedIndex = Math.max(this.appliedIndex, index);
    this.skipThrough = Math.max(this.skipThrough, index);
    this.stream.storeReplaced();
    if (this.store.type === "file") {
      // The store is the peer's state now; once that is on disk, a restart may trust it.
      this.store.sync((err) => {
        if (err === null && !this.closed && !this.cu.active) this.o.host.markCatchup(this.name, false);
      });
    }
    const q = this.queued;
    this.queued = [];
    if (q.length > 0) this.apply(q);
    this.maybeStartTaking();
  }

  onLeaderChange(leader: string, term: number): void {
    if (this.closed) return;
    if (leader !== this.leaderName) this.leaderSinceMs = this.o.clock.nowMs();
    this.leaderName = leader;
    if (leader === this.o.self) {
      if (this.leadTerm !== term) {
        if (this.leadTerm !== 0) {
          this.stopLeading("leadership changed");
          // Led again in a new term with no report in between: the owner still hears of the
          // loss, so the consumers of the earlier term stop and are made again from the copies
          // (they report nothing to the log any more: ConsumerReplicator.bind).
          this.o.onLeaderChange?.("");
        }
        // Publishes wait for this term's no-op (apply → startTaking); a stream reopened while
        // leading may have applied it and everything after already.
        this.leadTerm = term;
        this.maybeStartTaking();
      }
    } else {
      if (this.leadTerm !== 0) this.stopLeading("not the stream leader any more");
      if (leader !== "") this.membership.leaderMoved();
    }
    this.o.onLeaderChange?.(leader);
  }

  onResync(reason: string): void {
    this.o.log.error(`stream group ${this.name}: ${reason}: its Raft state here is set aside; it re-syncs from its peers and does not vote until caught up`);
  }

  onFailed(reason: string): void {
    this.o.log.error(`stream group ${this.name} failed: ${reason}`);
    this.stopLeading(reason);
  }

  private startTaking(term: number): void {
    this.leadTerm = term;
    if (this.leaderName !== this.o.self) {
      this.leaderName = this.o.self;
      this.leaderSinceMs = this.o.clock.nowMs();
    }
    this.acks.clear();
    this.batch.reset();
    this.stream.clearInflight();
    this.taking = true;
    this.consumers.setLeading(true);
    this.stream.setIngest(true);
    this.membership.reconcile();
    // Once more, now taking: the consumers start on this leader from the agreed state.
    this.o.onLeaderChange?.(this.leaderName);
  }

  private stopLeading(why: string): void {
    this.leadTerm = 0;
    this.taking = false;
    this.reads.refuseAll();
    this.consumers.setLeading(false);
    this.stream.setIngest(false);
    // Proposed entries may still commit under the next leader; they apply then, unanswered.
    this.stream.clearInflight();
    this.batch.reset();
    this.acks.clear();
    if (this.ops.size > 0) {
      const err = notLeader();
      for (const p of this.ops.values()) p.reject(err);
      this.ops.clear();
    }
    if (why === "stream group closed") this.membership.refuseStepdowns(notLeader());
  }

  /** The server's WAL is over its budget and this group keeps its oldest segment
   *  (RaftHost): snapshot now, through the same path (the store synced first). */
  snapshotNow(): void {
    if (this.snapTimer !== null || this.closed) return;
    this.snapTimer = this.o.clock.setTimer(() => this.takeSnapshot(), 0);
  }

  private takeSnapshot(): void {
    this.snapTimer = null;
    if (this.purging !== null) {
      // The store is half-way through a purge the applied index does not cover yet.
      this.snapAfterPurge = true;
      return;
    }
    if (this.closed || this.applySeq < this.replayTo || this.cu.active) return;
    // The snapshot describes the store as of now; the log before it is dropped only once the
    // store has that on disk (a restart then finds its store at or past its snapshot).
    const index = this.appliedIndex;
    const data = this.snapshot();
    this.sinceSnapEntries = 0;
    this.sinceSnapBytes = 0;
    this.store.sync((err) => {
      if (err !== null || this.closed) return;
      try {
        this.o.host.snapshotAt(this.name, index, data);
      } catch (e) {
        this.o.log.error(`stream group ${this.name}: snapshot failed: ${(e as Error).message}`);
      }
    });
  }

  // ---------- info ----------

  /** nats-server's STREAM.INFO `cluster` block without `name`. */
  clusterInfo(): Record<string, unknown> {
    const now = this.o.clock.monoMs();
    return this.membership.clusterInfo(this.leaderName, this.leaderSinceMs, !this.cu.active, (p) => now - (this.asking.get(p) ?? -Infinity) < ASKING_MS);
  }
}
