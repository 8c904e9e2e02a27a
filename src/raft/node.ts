// One Raft group member as a pure state machine (etcd-io/raft `raft.go` + `rawnode.go`): the
// driver calls tick() on a coarse timer, step() for every message received, propose() on
// the leader, and drains ready() / advance(). Time, randomness and I/O all come from outside,
// so a simulator runs this exact code.
//
// Safety rules beyond the paper (CLUSTERING.md §2): pre-vote, check-quorum with leader
// stickiness, commit only by counting current-term entries, a no-op on election, the leader
// counting its own log only once the driver reports it durable (advance), and a failed node
// (disk or checksum error) that neither votes, acknowledges nor leads.
import type { Random } from "../runtime/random.js";
import { RaftLog } from "./log.js";
import { Progress, ProgressState } from "./progress.js";
import { ReadOnly } from "./readindex.js";
import {
  CAMPAIGN_TRANSFER,
  type Entry,
  EntryType,
  type HardState,
  type Message,
  MsgType,
  NONE,
  RaftError,
  type ReadState,
  type Ready,
  Role,
  type Snapshot,
  type SoftState,
  emptyMessage,
  isHardStateEqual,
  isTransferContext,
  raftAssert,
  voteRespType,
} from "./types.js";

export interface RaftConfig {
  id: string;
  /** Voters, this node included. Ignored when restoring from a snapshot (it has them). */
  peers: string[];
  /** Ticks without hearing from a leader before campaigning: randomized in [n, 2n). */
  electionTicks: number;
  /** Leader ticks between heartbeats. */
  heartbeatTicks: number;
  random: Random;
  preVote?: boolean;
  checkQuorum?: boolean;
  /** Bytes of entries per append message (at least one entry is always sent). */
  maxMsgBytes?: number;
  /** Appends in flight per follower in the Replicate state. */
  maxInflight?: number;
  /** Bytes of committed entries handed out per Ready. */
  maxApplyBytes?: number;
}

/** What the driver read back from disk on start. */
export interface RaftRestore {
  hardState: HardState;
  snapshot: Snapshot | null;
  /** Entries after the snapshot, in order. */
  entries: Entry[];
  /** Index the state machine has already applied (≥ snapshot index). */
  applied?: number;
}

export interface RaftStatus {
  id: string;
  term: number;
  vote: string;
  role: Role;
  leader: string;
  commit: number;
  applied: number;
  lastIndex: number;
  firstIndex: number;
  failed: string | null;
  transferee: string;
  progress: Array<{ id: string; match: number; next: number; state: ProgressState; active: boolean }>;
}

interface PendingReadIndex {
  from: string;
  context: Uint8Array;
}

const DEFAULT_MAX_MSG_BYTES = 1024 * 1024;
const DEFAULT_MAX_INFLIGHT = 256;
const DEFAULT_MAX_APPLY_BYTES = 4 * 1024 * 1024;
const EMPTY = new Uint8Array(0);

export class RaftNode {
  readonly id: string;
  voters: string[];
  term = 0;
  vote = NONE;
  lead = NONE;
  role: Role = Role.Follower;
  readonly log: RaftLog;
  /** The latest snapshot this node holds (made by compact() or received); sent to laggards. */
  snapshot: Snapshot | null;
  failed: string | null = null;

  private readonly cfg: Required<RaftConfig>;
  private prs = new Map<string, Progress>();
  private votes = new Map<string, boolean>();
  private msgs: Message[] = [];
  private readStates: ReadState[] = [];
  private electionElapsed = 0;
  private heartbeatElapsed = 0;
  private randomizedElectionTimeout = 0;
  private leadTransferee = NONE;
  private readonly readOnly = new ReadOnly();
  private pendingReadIndex: PendingReadIndex[] = [];
  private needBcast = false;
  private prevHard: HardState;
  private prevSoft: SoftState;
  private readyOut: Ready | null = null;

  constructor(cfg: RaftConfig, restore?: RaftRestore) {
    this.cfg = {
      preVote: true,
      checkQuorum: true,
      maxMsgBytes: DEFAULT_MAX_MSG_BYTES,
      maxInflight: DEFAULT_MAX_INFLIGHT,
      maxApplyBytes: DEFAULT_MAX_APPLY_BYTES,
      ...cfg,
    };
    raftAssert(cfg.electionTicks > cfg.heartbeatTicks && cfg.heartbeatTicks > 0, "electionTicks > heartbeatTicks > 0");
    this.id = cfg.id;
    const snap = restore?.snapshot ?? null;
    this.snapshot = snap;
    this.voters = snap !== null ? [...snap.voters] : [...cfg.peers];
    raftAssert(this.voters.includes(this.id), `${this.id} is not among the voters`);
    const hs = restore?.hardState ?? { term: 0, vote: NONE, commit: 0 };
    this.log = RaftLog.restore(snap, restore?.entries ?? [], hs.commit, restore?.applied ?? snap?.index ?? 0);
    this.becomeFollower(hs.term, NONE);
    this.vote = hs.vote;
    this.prevHard = this.hardState();
    this.prevSoft = { leader: NONE, role: Role.Follower };
  }

  // ---- driver API ----

  tick(): void {
    if (this.failed !== null) return;
    if (this.role === Role.Leader) this.tickLeader();
    else this.tickElection();
  }

  step(m: Message): void {
    if (this.failed !== null) return;
    if (m.to !== this.id) return;
    if (m.term > this.term) {
      if (m.type === MsgType.Vote || m.type === MsgType.PreVote) {
        const force = isTransferContext(m.context);
        const inLease = this.cfg.checkQuorum && this.lead !== NONE && this.electionElapsed < this.cfg.electionTicks;
        // Stickiness: a leader was heard recently, so this candidate is disruptive.
        if (!force && inLease) return;
      }
      if (m.type === MsgType.PreVote) {
        // A pre-vote never changes our term.
      } else if (m.type === MsgType.PreVoteResp && !m.reject) {
        // Granted pre-votes carry the term the pre-candidate will campaign in.
      } else if (m.type === MsgType.App || m.type === MsgType.Heartbeat || m.type === MsgType.Snap) {
        this.becomeFollower(m.term, m.from);
      } else {
        this.becomeFollower(m.term, NONE);
      }
    } else if (m.term < this.term) {
      if ((this.cfg.checkQuorum || this.cfg.preVote) && (m.type === MsgType.App || m.type === MsgType.Heartbeat)) {
        // A stale leader (e.g. back from a partition) learns our term and steps down.
        this.send(this.msg(MsgType.AppResp, m.from));
      } else if (m.type === MsgType.PreVote) {
        const r = this.msg(MsgType.PreVoteResp, m.from);
        r.reject = true;
        this.send(r);
      }
      return;
    }

    if (m.type === MsgType.Vote || m.type === MsgType.PreVote) {
      this.handleVoteRequest(m);
      return;
    }
    switch (this.role) {
      case Role.Leader:
        this.stepLeader(m);
        break;
      case Role.Candidate:
      case Role.PreCandidate:
        this.stepCandidate(m);
        break;
      case Role.Follower:
        this.stepFollower(m);
        break;
    }
  }

  /** Start an election now (pre-vote first when enabled), as if the election timer fired. */
  campaign(): void {
    if (this.failed !== null || this.role === Role.Leader) return;
    this.electionElapsed = 0;
    this.startCampaign(this.cfg.preVote ? "pre" : "elect");
  }

  /**
   * The driver saw the leader go away (its route closed): forget it, so its lease no longer
   * makes us ignore candidates, and campaign within `withinTicks` instead of a full election
   * timeout (the fast failover path of CLUSTERING.md §3.3).
   */
  leaderLost(withinTicks: number): void {
    if (this.failed !== null || this.role !== Role.Follower || this.lead === NONE) return;
    this.lead = NONE;
    const left = 1 + this.cfg.random.int(Math.max(1, withinTicks));
    this.electionElapsed = Math.max(this.electionElapsed, this.randomizedElectionTimeout - left);
  }

  /** Append data to the log; returns its index. Only on the leader. */
  propose(data: Uint8Array): number {
    this.checkCanPropose();
    const index = this.appendEntry(EntryType.Normal, data);
    this.needBcast = true;
    return index;
  }

  /** Ask the leader to hand leadership to target (after catching it up). */
  transferLeader(target: string): void {
    if (this.failed !== null) throw new RaftError("failed", `node failed: ${this.failed}`);
    if (this.role === Role.Leader) {
      this.handleTransfer(target);
    } else if (this.lead !== NONE) {
      const m = this.msg(MsgType.TransferLeader, this.lead);
      m.context = new TextEncoder().encode(target);
      this.send(m);
    } else throw new RaftError("not_leader", "no leader known");
  }

  /** Start a linearizable read; a ReadState with this context appears in a later Ready. */
  readIndex(context: Uint8Array): void {
    if (this.failed !== null) throw new RaftError("failed", `node failed: ${this.failed}`);
    if (this.role === Role.Leader) {
      this.handleReadIndex(this.id, context);
    } else if (this.lead !== NONE) {
      const m = this.msg(MsgType.ReadIndex, this.lead);
      m.context = context;
      this.send(m);
    } else throw new RaftError("unavailable", "no leader known");
  }

  /** The state machine took a snapshot at index (≤ applied) holding data: drop the log before. */
  compact(index: number, data: Uint8Array): void {
    if (index <= this.log.snapIndex) return;
    raftAssert(index <= this.log.applied, `compact ${index} beyond applied ${this.log.applied}`);
    this.snapshot = { index, term: this.log.term(index), voters: [...this.voters], data };
    this.log.compact(index);
  }

  /** A disk or checksum error: stop voting, acknowledging and leading until re-synced. */
  fail(reason: string): void {
    if (this.failed !== null) return;
    if (this.role !== Role.Follower) this.becomeFollower(this.term, NONE);
    this.lead = NONE;
    this.failed = reason;
    this.msgs = [];
    this.readStates = [];
    this.pendingReadIndex = [];
    this.needBcast = false;
  }

  hasReady(): boolean {
    if (this.readyOut !== null) return false;
    if (this.needBcast || this.msgs.length > 0 || this.readStates.length > 0) return true;
    if (this.log.pendingSnapshot !== null) return true;
    if (this.log.stabled < this.log.lastIndex()) return true;
    if (this.log.committed > this.log.applied) return true;
    if (!isHardStateEqual(this.hardState(), this.prevHard)) return true;
    return this.lead !== this.prevSoft.leader || this.role !== this.prevSoft.role;
  }

  /** The next batch of work. Only one Ready is out at a time: call advance(rd) first. */
  ready(): Ready {
    raftAssert(this.readyOut === null, "ready() before advance() of the previous one");
    if (this.needBcast) {
      this.needBcast = false;
      this.bcastAppend();
    }
    const hs = this.hardState();
    const soft = { leader: this.lead, role: this.role };
    const rd: Ready = {
      softState: soft.leader !== this.prevSoft.leader || soft.role !== this.prevSoft.role ? soft : null,
      hardState: isHardStateEqual(hs, this.prevHard) ? null : hs,
      entries: this.log.unstableEntries(),
      snapshot: this.log.pendingSnapshot,
      committed: this.log.nextCommitted(this.cfg.maxApplyBytes),
      messages: this.failed !== null ? [] : this.msgs,
      readStates: this.readStates,
    };
    this.msgs = [];
    this.readStates = [];
    this.prevSoft = soft;
    if (rd.hardState !== null) this.prevHard = rd.hardState;
    this.readyOut = rd;
    return rd;
  }

  /** rd was persisted, its messages sent and its committed entries applied. */
  advance(rd: Ready): void {
    raftAssert(this.readyOut === rd, "advance() of a Ready that is not the outstanding one");
    this.readyOut = null;
    if (rd.snapshot !== null) {
      if (this.log.pendingSnapshot === rd.snapshot) this.log.pendingSnapshot = null;
      if (rd.snapshot.index > this.log.applied) this.log.applied = rd.snapshot.index;
    }
    const last = rd.entries[rd.entries.length - 1];
    if (last !== undefined) this.log.stableTo(last.index, last.term);
    const lastApplied = rd.committed[rd.committed.length - 1];
    if (lastApplied !== undefined) this.log.appliedTo(lastApplied.index);
    if (this.role === Role.Leader && this.failed === null) {
      // The leader's own log counts towards commit only once it is on disk.
      const self = this.prs.get(this.id)!;
      if (self.maybeUpdate(this.log.stabled) && this.maybeCommit()) this.bcastAppend();
    }
  }

  hardState(): HardState {
    return { term: this.term, vote: this.vote, commit: this.log.committed };
  }

  status(): RaftStatus {
    const progress: RaftStatus["progress"] = [];
    if (this.role === Role.Leader) {
      for (const [id, pr] of this.prs) progress.push({ id, match: pr.match, next: pr.next, state: pr.state, active: pr.recentActive });
    }
    return {
      id: this.id,
      term: this.term,
      vote: this.vote,
      role: this.role,
      leader: this.lead,
      commit: this.log.committed,
      applied: this.log.applied,
      lastIndex: this.log.lastIndex(),
      firstIndex: this.log.firstIndex(),
      failed: this.failed,
      transferee: this.leadTransferee,
      progress,
    };
  }

  // ---- roles ----

  private quorum(): number {
    return Math.floor(this.voters.length / 2) + 1;
  }

  private promotable(): boolean {
    return this.failed === null && this.voters.includes(this.id);
  }

  private reset(term: number): void {
    if (term !== this.term) {
      this.term = term;
      this.vote = NONE;
    }
    this.lead = NONE;
    this.electionElapsed = 0;
    this.heartbeatElapsed = 0;
    this.randomizedElectionTimeout = this.cfg.electionTicks + this.cfg.random.int(this.cfg.electionTicks);
    this.leadTransferee = NONE;
    this.votes.clear();
    this.prs = new Map();
    const next = this.log.lastIndex() + 1;
    for (const v of this.voters) {
      const pr = new Progress(next, this.cfg.maxInflight);
      if (v === this.id) pr.match = this.log.stabled;
      this.prs.set(v, pr);
    }
    this.readOnly.reset();
    this.pendingReadIndex = [];
    this.needBcast = false;
  }

  private becomeFollower(term: number, lead: string): void {
    this.reset(term);
    this.role = Role.Follower;
    this.lead = lead;
  }

  private becomePreCandidate(): void {
    raftAssert(this.role !== Role.Leader, "leader cannot become pre-candidate");
    this.votes.clear();
    this.role = Role.PreCandidate;
    this.lead = NONE;
  }

  private becomeCandidate(): void {
    raftAssert(this.role !== Role.Leader, "leader cannot become candidate");
    this.reset(this.term + 1);
    this.vote = this.id;
    this.role = Role.Candidate;
  }

  private becomeLeader(): void {
    raftAssert(this.role === Role.Candidate, "only a candidate becomes leader");
    this.reset(this.term);
    this.lead = this.id;
    this.role = Role.Leader;
    const self = this.prs.get(this.id)!;
    self.becomeReplicate();
    self.match = this.log.stabled;
    self.next = this.log.lastIndex() + 1;
    this.appendEntry(EntryType.Noop, EMPTY);
  }

  private startCampaign(kind: "pre" | "elect" | "transfer"): void {
    if (!this.promotable()) return;
    let voteType: MsgType;
    let term: number;
    if (kind === "pre") {
      this.becomePreCandidate();
      voteType = MsgType.PreVote;
      term = this.term + 1;
    } else {
      this.becomeCandidate();
      voteType = MsgType.Vote;
      term = this.term;
    }
    this.votes.set(this.id, true);
    if (this.countVotes().granted >= this.quorum()) {
      if (kind === "pre") this.startCampaign("elect");
      else this.becomeLeader();
      return;
    }
    for (const v of this.voters) {
      if (v === this.id) continue;
      const m = emptyMessage(voteType, this.id, v, term);
      m.index = this.log.lastIndex();
      m.logTerm = this.log.lastTerm();
      if (kind === "transfer") m.context = CAMPAIGN_TRANSFER;
      this.send(m);
    }
  }

  private countVotes(): { granted: number; rejected: number } {
    let granted = 0;
    let rejected = 0;
    for (const [id, g] of this.votes) {
      if (!this.voters.includes(id)) continue;
      if (g) granted++;
      else rejected++;
    }
    return { granted, rejected };
  }

  // ---- ticks ----

  private tickElection(): void {
    this.electionElapsed++;
    if (this.promotable() && this.electionElapsed >= this.randomizedElectionTimeout) {
      this.electionElapsed = 0;
      this.startCampaign(this.cfg.preVote ? "pre" : "elect");
    }
  }

  private tickLeader(): void {
    this.heartbeatElapsed++;
    this.electionElapsed++;
    if (this.electionElapsed >= this.cfg.electionTicks) {
      this.electionElapsed = 0;
      if (this.cfg.checkQuorum && !this.quorumActive()) {
        this.becomeFollower(this.term, NONE);
        return;
      }
      this.leadTransferee = NONE; // a transfer that did not finish in one timeout is abandoned
    }
    for (const [id, pr] of this.prs) {
      if (id === this.id || pr.state !== ProgressState.Snapshot) continue;
      // A snapshot lost on the way would stall this follower forever: retry after a timeout.
      if (++pr.snapshotTicks > this.cfg.electionTicks) {
        pr.becomeProbe();
        this.sendAppend(id, true);
      }
    }
    if (this.heartbeatElapsed >= this.cfg.heartbeatTicks) {
      this.heartbeatElapsed = 0;
      this.bcastHeartbeat(this.readOnly.lastPendingContext());
    }
  }

  private quorumActive(): boolean {
    let active = 0;
    for (const [id, pr] of this.prs) {
      if (id === this.id || pr.recentActive) active++;
      if (id !== this.id) pr.recentActive = false;
    }
    return active >= this.quorum();
  }

  // ---- per role ----

  private handleVoteRequest(m: Message): void {
    const canVote =
      this.vote === m.from || (this.vote === NONE && this.lead === NONE) || (m.type === MsgType.PreVote && m.term > this.term);
    const r = this.msg(voteRespType(m.type), m.from);
    if (canVote && this.promotable() && this.log.isUpToDate(m.index, m.logTerm)) {
      // Granted responses carry the candidate's term (a pre-vote's term is not ours yet).
      r.term = m.term;
      if (m.type === MsgType.Vote) {
        this.electionElapsed = 0;
        this.vote = m.from;
      }
    } else {
      r.reject = true;
    }
    this.send(r);
  }

  private stepLeader(m: Message): void {
    const pr = this.prs.get(m.from);
    // Each role handles a few message types and ignores the rest.
    switch (m.type as number) {
      case MsgType.AppResp:
        if (pr !== undefined) this.handleAppResp(m, pr);
        return;
      case MsgType.HeartbeatResp:
        if (pr === undefined) return;
        pr.recentActive = true;
        pr.probeSent = false;
        // A full window that stays full means appends were lost: let one more out, which the
        // follower rejects if it has a gap, sending us back to probing.
        if (pr.state === ProgressState.Replicate && pr.inflights.full()) pr.inflights.freeFirstOne();
        if (pr.match < this.log.lastIndex()) this.sendAppend(m.from, true);
        if (m.context !== null && m.context.length > 0 && this.readOnly.ack(m.context, m.from) >= this.quorum()) {
          for (const rs of this.readOnly.advance(m.context)) this.releaseRead(rs.from, rs.index, rs.context);
        }
        return;
      case MsgType.ReadIndex:
        if (m.context !== null) this.handleReadIndex(m.from, m.context);
        return;
      case MsgType.TransferLeader:
        if (m.context !== null) this.handleTransfer(new TextDecoder().decode(m.context));
        return;
      default:
        return;
    }
  }

  private handleAppResp(m: Message, pr: Progress): void {
    pr.recentActive = true;
    if (m.reject) {
      let hint = m.rejectHint;
      if (m.logTerm > 0) hint = this.log.findConflictByTerm(m.rejectHint, m.logTerm).index;
      if (pr.maybeDecrTo(m.index, hint)) {
        if (pr.state === ProgressState.Replicate) pr.becomeProbe();
        this.sendAppend(m.from, true);
      }
      return;
    }
    const wasPaused = pr.isPaused();
    if (!pr.maybeUpdate(m.index)) {
      if (wasPaused && pr.state === ProgressState.Probe) this.sendAppend(m.from, true);
      return;
    }
    if (pr.state === ProgressState.Probe) pr.becomeReplicate();
    else if (pr.state === ProgressState.Snapshot && pr.match >= pr.pendingSnapshot) {
      pr.becomeProbe();
      pr.becomeReplicate();
    } else if (pr.state === ProgressState.Replicate) pr.inflights.freeLE(m.index);

    if (this.maybeCommit()) this.bcastAppend();
    else if (wasPaused) this.sendAppend(m.from, true);
    // Fill the window while there is more to send.
    while (this.sendAppend(m.from, false));
    if (m.from === this.leadTransferee && pr.match === this.log.lastIndex()) this.sendTimeoutNow(m.from);
  }

  private stepCandidate(m: Message): void {
    // Each role handles a few message types and ignores the rest.
    switch (m.type as number) {
      case MsgType.App:
        this.becomeFollower(m.term, m.from);
        this.handleAppend(m);
        return;
      case MsgType.Heartbeat:
        this.becomeFollower(m.term, m.from);
        this.handleHeartbeat(m);
        return;
      case MsgType.Snap:
        this.becomeFollower(m.term, m.from);
        this.handleSnapshot(m);
        return;
      case MsgType.VoteResp:
      case MsgType.PreVoteResp: {
        const want = this.role === Role.PreCandidate ? MsgType.PreVoteResp : MsgType.VoteResp;
        if (m.type !== want) return;
        this.votes.set(m.from, !m.reject);
        const { granted, rejected } = this.countVotes();
        if (granted >= this.quorum()) {
          if (this.role === Role.PreCandidate) this.startCampaign("elect");
          else {
            this.becomeLeader();
            this.bcastAppend();
          }
        } else if (rejected >= this.quorum()) {
          this.becomeFollower(this.term, NONE);
        }
        return;
      }
      default:
        return;
    }
  }

  private stepFollower(m: Message): void {
    // Each role handles a few message types and ignores the rest.
    switch (m.type as number) {
      case MsgType.App:
        this.electionElapsed = 0;
        this.lead = m.from;
        this.handleAppend(m);
        return;
      case MsgType.Heartbeat:
        this.electionElapsed = 0;
        this.lead = m.from;
        this.handleHeartbeat(m);
        return;
      case MsgType.Snap:
        this.electionElapsed = 0;
        this.lead = m.from;
        this.handleSnapshot(m);
        return;
      case MsgType.TimeoutNow:
        this.startCampaign("transfer");
        return;
      case MsgType.ReadIndexResp:
        if (m.context !== null) this.readStates.push({ index: m.index, context: m.context });
        return;
      case MsgType.TransferLeader:
        if (this.lead !== NONE && m.context !== null) {
          const f = this.msg(MsgType.TransferLeader, this.lead);
          f.context = m.context;
          this.send(f);
        }
        return;
      default:
        return;
    }
  }

  // ---- follower handlers ----

  private handleAppend(m: Message): void {
    if (m.index < this.log.committed) {
      const r = this.msg(MsgType.AppResp, m.from);
      r.index = this.log.committed;
      this.send(r);
      return;
    }
    const r = this.msg(MsgType.AppResp, m.from);
    const lastNew = this.log.maybeAppend(m.index, m.logTerm, m.commit, m.entries);
    if (lastNew !== null) {
      r.index = lastNew;
    } else {
      const hint = this.log.findConflictByTerm(Math.min(m.index, this.log.lastIndex()), m.logTerm);
      r.reject = true;
      r.index = m.index;
      r.rejectHint = hint.index;
      r.logTerm = hint.term;
    }
    this.send(r);
  }

  private handleHeartbeat(m: Message): void {
    this.log.commitTo(Math.min(m.commit, this.log.lastIndex()));
    const r = this.msg(MsgType.HeartbeatResp, m.from);
    r.context = m.context;
    this.send(r);
  }

  private handleSnapshot(m: Message): void {
    const s = m.snapshot;
    if (s === null) return;
    const r = this.msg(MsgType.AppResp, m.from);
    if (s.index <= this.log.committed) {
      r.index = this.log.committed;
    } else if (this.log.matchTerm(s.index, s.term)) {
      this.log.commitTo(s.index);
      r.index = this.log.committed;
    } else {
      this.log.restoreSnapshot(s);
      this.snapshot = s;
      this.voters = [...s.voters];
      r.index = this.log.lastIndex();
    }
    this.send(r);
  }

  // ---- leader helpers ----

  private checkCanPropose(): void {
    if (this.failed !== null) throw new RaftError("failed", `node failed: ${this.failed}`);
    if (this.role !== Role.Leader) throw new RaftError("not_leader", `not leader (leader is "${this.lead}")`);
    if (this.leadTransferee !== NONE) throw new RaftError("transferring", `leadership moving to ${this.leadTransferee}`);
  }

  private appendEntry(type: EntryType, data: Uint8Array): number {
    const index = this.log.lastIndex() + 1;
    this.log.append([{ term: this.term, index, type, data }]);
    return index;
  }

  private maybeCommit(): boolean {
    const matches: number[] = [];
    for (const v of this.voters) matches.push(this.prs.get(v)?.match ?? 0);
    matches.sort((a, b) => b - a);
    const mci = matches[this.quorum() - 1]!;
    // Raft §5.4.2 (and nats-server #7955): entries of earlier terms commit only indirectly.
    if (mci > this.log.committed && this.log.term(mci) === this.term) {
      const wasCommittedInTerm = this.committedInTerm();
      this.log.commitTo(mci);
      if (!wasCommittedInTerm) this.flushPendingReads();
      return true;
    }
    return false;
  }

  private committedInTerm(): boolean {
    return this.log.term(this.log.committed) === this.term;
  }

  private bcastAppend(): void {
    for (const v of this.voters) if (v !== this.id) this.sendAppend(v, true);
  }

  /** Send what pr is missing; false if nothing was sent. */
  private sendAppend(to: string, sendIfEmpty: boolean): boolean {
    const pr = this.prs.get(to);
    if (pr === undefined || pr.isPaused()) return false;
    if (pr.next > this.log.lastIndex() + 1) pr.next = this.log.lastIndex() + 1;
    const prevIndex = pr.next - 1;
    const prevTerm = this.log.term(prevIndex);
    if (prevTerm === -1) return this.sendSnapshot(to, pr);
    const ents = pr.next <= this.log.lastIndex() ? this.log.slice(pr.next, this.log.lastIndex() + 1, this.cfg.maxMsgBytes) : [];
    if (ents.length === 0 && !sendIfEmpty) return false;
    const m = this.msg(MsgType.App, to);
    m.index = prevIndex;
    m.logTerm = prevTerm;
    m.entries = ents;
    m.commit = this.log.committed;
    pr.sentEntries(prevIndex + ents.length, ents.length);
    this.send(m);
    return true;
  }

  private sendSnapshot(to: string, pr: Progress): boolean {
    const s = this.snapshot;
    if (s === null || !pr.recentActive) return false;
    const m = this.msg(MsgType.Snap, to);
    m.snapshot = s;
    pr.becomeSnapshot(s.index);
    this.send(m);
    return true;
  }

  private bcastHeartbeat(context: Uint8Array | null): void {
    for (const [id, pr] of this.prs) {
      if (id === this.id) continue;
      const m = this.msg(MsgType.Heartbeat, id);
      m.commit = Math.min(pr.match, this.log.committed);
      m.context = context;
      this.send(m);
    }
  }

  private sendTimeoutNow(to: string): void {
    this.send(this.msg(MsgType.TimeoutNow, to));
  }

  private handleTransfer(target: string): void {
    if (target === this.id || !this.voters.includes(target)) return;
    if (this.leadTransferee === target) return;
    this.leadTransferee = target;
    this.electionElapsed = 0;
    const pr = this.prs.get(target)!;
    if (pr.match === this.log.lastIndex()) this.sendTimeoutNow(target);
    else this.sendAppend(target, true);
  }

  private handleReadIndex(from: string, context: Uint8Array): void {
    if (this.voters.length === 1) {
      this.releaseRead(from, this.log.committed, context);
      return;
    }
    // Until this term has committed an entry the leader's commit index may be stale.
    if (!this.committedInTerm()) {
      this.pendingReadIndex.push({ from, context });
      return;
    }
    this.readOnly.add(this.log.committed, context, from, this.id);
    this.bcastHeartbeat(context);
  }

  private flushPendingReads(): void {
    const p = this.pendingReadIndex;
    this.pendingReadIndex = [];
    for (const r of p) this.handleReadIndex(r.from, r.context);
  }

  private releaseRead(from: string, index: number, context: Uint8Array): void {
    if (from === this.id || from === NONE) {
      this.readStates.push({ index, context });
      return;
    }
    const m = this.msg(MsgType.ReadIndexResp, from);
    m.index = index;
    m.context = context;
    this.send(m);
  }

  // ---- messages ----

  private msg(type: MsgType, to: string): Message {
    return emptyMessage(type, this.id, to, this.term);
  }

  private send(m: Message): void {
    if (this.failed !== null) return;
    this.msgs.push(m);
  }
}

export { ProgressState };
