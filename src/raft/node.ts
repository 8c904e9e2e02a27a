// One Raft group member as a pure state machine (etcd-io/raft `raft.go` + `rawnode.go`): the
// driver calls tick() on a coarse timer, step() for every message received, propose() on
// the leader, and drains ready() / advance(). Time, randomness and I/O all come from outside,
// so a simulator runs this exact code.
//
// Safety rules beyond the paper (CLUSTERING.md §2): pre-vote, check-quorum with leader
// stickiness, commit only by counting current-term entries, a no-op on election, the leader
// counting its own log only once the driver reports it durable (advance), and a failed node
// (disk or checksum error) that neither votes, acknowledges nor leads.
import { RaftLog } from "./log.js";
import { type Progress, ProgressState } from "./progress.js";
import { ReadRequests } from "./reads.js";
import { ConfLog, planConfChange } from "./conflog.js";
import { Quiescence } from "./quiesce.js";
import { Replication, answerAppend, answerSnapshot } from "./replicate.js";
import type { RaftConfig, RaftRestore, RaftStatus } from "./config.js";

export type { RaftConfig, RaftRestore, RaftStatus } from "./config.js";
import {
  CAMPAIGN_TRANSFER,
  type Entry,
  EntryType,
  type HardState,
  type Message,
  MsgType,
  NONE,
  RESET_FLAG,
  RaftError,
  type Ready,
  Role,
  type Snapshot,
  type SoftState,
  emptyMessage,
  isHardStateEqual,
  isTransferContext,
  raftAssert,
  splitMembers,
  voteRespType,
} from "./types.js";

const DEFAULT_MAX_MSG_BYTES = 1024 * 1024;
const DEFAULT_MAX_INFLIGHT = 256;
const DEFAULT_MAX_APPLY_BYTES = 4 * 1024 * 1024;
const EMPTY = new Uint8Array(0);

export class RaftNode {
  readonly id: string;
  voters: string[];
  /** Members replicated to that neither vote nor count (a new server catching up before it
   *  becomes a voter: single-server changes through learners). */
  learners: string[] = [];
  /** Storage identities pinned to members (identity.ts); a member without one is unpinned. */
  ids = new Map<string, string>();
  term = 0;
  vote = NONE;
  lead = NONE;
  role: Role = Role.Follower;
  readonly log: RaftLog;
  /** The latest snapshot this node holds (made by compact() or received); sent to laggards. */
  snapshot: Snapshot | null;
  failed: string | null = null;
  /** The voters as of the snapshot and the membership entries after it (conflog.ts). */
  private readonly confs: ConfLog;
  /** The highest commit index a leader of this term told us about (App, Heartbeat). */
  private leaderCommit = 0;
  /** Never campaigns (lame duck: leadership was handed away and must not come back). */
  observer = false;
  /** Started blank after its disk state was found corrupt (RaftRestore.recovering): it may
   *  have voted in a term it no longer remembers, and its log is gone, so it neither votes
   *  nor campaigns until it holds everything a leader reported committed. */
  recovering = false;
  /** Recovering: a leader said it knows of the reset (RESET_FLAG), so the commits it reports
   *  no longer count what this node held before. */
  private resetKnown = false;
  /** Recovering: the leader's last index when it said it knows; held and committed here
   *  before the re-sync ends. */
  private mustHold = 0;
  /** Going quiet when idle and waking (quiesce.ts). */
  private readonly quiet: Quiescence;

  private readonly cfg: Required<RaftConfig>;
  /** The leader's side of log replication (replicate.ts): a Progress per voter. */
  private readonly repl: Replication;
  private votes = new Map<string, boolean>();
  private msgs: Message[] = [];
  private electionElapsed = 0;
  private heartbeatElapsed = 0;
  private randomizedElectionTimeout = 0;
  private leadTransferee = NONE;
  /** Linearizable reads (reads.ts): ReadIndex requests and their heartbeat rounds. */
  private readonly reads: ReadRequests;
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
      quiesceTicks: 0,
      identity: "",
      ...cfg,
    };
    raftAssert(cfg.electionTicks > cfg.heartbeatTicks && cfg.heartbeatTicks > 0, "electionTicks > heartbeatTicks > 0");
    this.id = cfg.id;
    this.repl = new Replication(this, (m) => this.send(m), this.cfg.maxMsgBytes, this.cfg.maxInflight);
    this.reads = new ReadRequests(this, this.repl, (m) => this.send(m));
    this.quiet = new Quiescence(this, this.repl, (m) => this.send(m), () => this.leadTransferee !== NONE || this.reads.busy);
    const snap = restore?.snapshot ?? null;
    this.snapshot = snap;
    // A node may start outside its voters: a new member joining a running group starts with
    // the members it joins and campaigns only once the leader's log or snapshot names it.
    raftAssert(snap !== null || cfg.peers.length > 0, "a group needs voters");
    const hs = restore?.hardState ?? { term: 0, vote: NONE, commit: 0 };
    this.log = RaftLog.restore(snap, restore?.entries ?? [], hs.commit, restore?.applied ?? snap?.index ?? 0);
    this.confs = new ConfLog(snap !== null ? snap.voters : cfg.peers, this.log.entries);
    const members = splitMembers(this.confs.current());
    this.voters = members.voters;
    this.learners = members.learners;
    this.ids = members.ids;
    this.becomeFollower(hs.term, NONE);
    this.vote = hs.vote;
    this.recovering = restore?.recovering === true;
    this.prevHard = this.hardState();
    this.prevSoft = { leader: NONE, role: Role.Follower };
  }

  // ---- driver API ----

  tick(): void {
    if (this.failed !== null || this.quiet.quiesced) return;
    if (this.role === Role.Leader) this.tickLeader();
    else this.tickElection();
  }

  step(m: Message): void {
    if (this.failed !== null) return;
    if (m.to !== this.id) return;
    // Anything but the leader's own traffic means something is going on: a follower asks
    // the leader to heartbeat again.
    if (this.quiet.quiesced && m.type !== MsgType.Quiesce) this.wake(m.from !== this.lead);
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
      } else if (m.type === MsgType.App || m.type === MsgType.Heartbeat || m.type === MsgType.Snap || m.type === MsgType.Quiesce) {
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
    this.quiet.wake();
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
    this.quiet.wake();
    this.lead = NONE;
    const left = 1 + this.cfg.random.int(Math.max(1, withinTicks));
    this.electionElapsed = Math.max(this.electionElapsed, this.randomizedElectionTimeout - left);
  }

  /** Append data to the log; returns its index. Only on the leader. */
  propose(data: Uint8Array): number {
    this.checkCanPropose();
    this.wake(false);
    const index = this.appendEntry(EntryType.Normal, data);
    this.needBcast = true;
    return index;
  }

  /**
   * Change the voters to `voters` (leader only): one server added or removed, appended as a
   * ConfChange entry that takes effect at once on every node that appends it. Refused
   * (RaftError "conf_pending") until this term has committed an entry (the new leader's
   * no-op: Ongaro's fix for single-server changes) and while an earlier change is not
   * committed. Returns the entry's index, or 0 when the voters are already these.
   */
  proposeConfChange(voters: readonly string[], learners: readonly string[] = [], ids?: ReadonlyMap<string, string | undefined>): number {
    this.checkCanPropose();
    this.wake(false);
    const data = planConfChange({ voters: this.voters, learners: this.learners, ids: this.ids }, voters, learners, ids);
    if (data === null) return 0;
    if (!this.committedInTerm()) throw new RaftError("conf_pending", "the leader has not committed an entry of its term yet");
    if (this.confs.pendingAbove(this.log.committed)) throw new RaftError("conf_pending", "a membership change is in progress");
    const e: Entry = { term: this.term, index: this.log.lastIndex() + 1, type: EntryType.ConfChange, data };
    this.log.append([e]);
    this.syncConfig([e]);
    this.needBcast = true;
    return e.index;
  }

  /** The voters in effect once entry i is in the log. */
  votersAt(i: number): string[] {
    return this.confs.votersAt(i);
  }

  /** A membership change is in the log and not committed yet. */
  get confPending(): boolean {
    return this.confs.pendingAbove(this.log.committed);
  }

  /** Ask the leader to hand leadership to target (after catching it up). */
  transferLeader(target: string): void {
    if (this.failed !== null) throw new RaftError("failed", `node failed: ${this.failed}`);
    this.wake(true);
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
    this.wake(true);
    this.reads.request(context);
  }

  /**
   * Leave the quiet state (a proposal, a message, or the driver: a peer it has not heard from
   * lately, a route that came back). The timers start from zero: a leader heartbeats at its
   * next tick and counts every voter as heard for this round of check-quorum. A follower
   * with `notify` tells its leader, so that it heartbeats again (a quiet leader whose
   * followers wake one by one would otherwise let them time out).
   */
  wake(notify: boolean): void {
    if (!this.quiet.wake()) return;
    this.electionElapsed = 0;
    if (this.role === Role.Leader) {
      this.heartbeatElapsed = this.cfg.heartbeatTicks;
      this.quiet.markActive();
    } else if (notify && this.lead !== NONE) this.send(this.msg(MsgType.HeartbeatResp, this.lead));
  }

  /** Idle and caught up (quiesce.ts). */
  get quiesced(): boolean {
    return this.quiet.quiesced;
  }

  /** The state machine took a snapshot at index (≤ applied) holding data: drop the log before. */
  compact(index: number, data: Uint8Array): void {
    if (index <= this.log.snapIndex) return;
    raftAssert(index <= this.log.applied, `compact ${index} beyond applied ${this.log.applied}`);
    const voters = this.votersAt(index);
    this.snapshot = { index, term: this.log.term(index), voters, data };
    this.log.compact(index);
    this.confs.compact(index, voters);
  }

  /** A disk or checksum error: stop voting, acknowledging and leading until re-synced. */
  fail(reason: string): void {
    if (this.failed !== null) return;
    if (this.role !== Role.Follower) this.becomeFollower(this.term, NONE);
    this.lead = NONE;
    this.failed = reason;
    this.msgs = [];
    this.reads.clear();
    this.needBcast = false;
  }

  hasReady(): boolean {
    if (this.readyOut !== null) return false;
    if (this.needBcast || this.msgs.length > 0 || this.reads.states.length > 0) return true;
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
      this.repl.bcastAppend();
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
      readStates: this.reads.take(),
    };
    this.msgs = [];
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
      if (this.repl.selfStable(this.log.stabled) && this.maybeCommit()) {
        this.repl.bcastAppend();
        this.maybeLeaveAsRemoved();
      }
    }
  }

  hardState(): HardState {
    return { term: this.term, vote: this.vote, commit: this.log.committed };
  }

  status(): RaftStatus {
    const progress = this.role === Role.Leader ? this.repl.progress() : [];
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
      recovering: this.recovering,
      transferee: this.leadTransferee,
      progress,
      voters: [...this.voters],
      learners: [...this.learners],
    };
  }

  // ---- roles ----

  private quorum(): number {
    return Math.floor(this.voters.length / 2) + 1;
  }

  private promotable(): boolean {
    return this.failed === null && !this.observer && !this.recovering && this.voters.includes(this.id) && !this.superseded();
  }

  /** The group pins another storage identity to this server's name: this node is a wiped
   *  server's new incarnation, not yet the member (identity.ts). */
  superseded(): boolean {
    const pinned = this.ids.get(this.id);
    return pinned !== undefined && this.cfg.identity !== "" && pinned !== this.cfg.identity;
  }

  private reset(term: number): void {
    if (term !== this.term) {
      this.term = term;
      this.vote = NONE;
      this.leaderCommit = 0;
    }
    this.lead = NONE;
    this.quiet.wake();
    this.electionElapsed = 0;
    this.heartbeatElapsed = 0;
    this.randomizedElectionTimeout = this.cfg.electionTicks + this.cfg.random.int(this.cfg.electionTicks);
    this.leadTransferee = NONE;
    this.votes.clear();
    this.repl.reset();
    this.reads.reset();
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
    this.repl.lead();
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
      if (this.cfg.checkQuorum && !this.repl.quorumActive(this.quorum())) {
        this.becomeFollower(this.term, NONE);
        return;
      }
      this.leadTransferee = NONE; // a transfer that did not finish in one timeout is abandoned
    }
    this.repl.retryLostSnapshots(this.cfg.electionTicks);
    if (this.quiet.leaderTick(this.cfg.quiesceTicks)) return;
    if (this.heartbeatElapsed >= this.cfg.heartbeatTicks) {
      this.heartbeatElapsed = 0;
      this.repl.bcastHeartbeat(this.reads.lastPendingContext());
    }
  }

  // ---- per role ----

  private handleVoteRequest(m: Message): void {
    const canVote =
      this.vote === m.from || (this.vote === NONE && this.lead === NONE) || (m.type === MsgType.PreVote && m.term > this.term);
    const r = this.msg(voteRespType(m.type), m.from);
    // A node that thinks it is not a voter still votes: the candidate may know of a later
    // membership entry that added it back (etcd-io/raft does the same for learners).
    if (canVote && this.failed === null && !this.recovering && !this.superseded() && this.log.isUpToDate(m.index, m.logTerm)) {
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
    const pr = this.repl.get(m.from);
    // Each role handles a few message types and ignores the rest.
    switch (m.type as number) {
      case MsgType.AppResp:
        if (pr !== undefined) this.handleAppResp(m, pr);
        return;
      case MsgType.HeartbeatResp:
        if (pr === undefined) return;
        this.repl.onHeartbeatResp(m.from, pr, m.index - 1, m.logTerm === RESET_FLAG);
        // A learner's answer confirms no read: it does not count.
        if (this.voters.includes(m.from)) this.reads.onHeartbeatResp(m, this.quorum());
        return;
      case MsgType.ReadIndex:
        if (m.context !== null) this.reads.handle(m.from, m.context);
        return;
      case MsgType.TransferLeader:
        if (m.context !== null) this.handleTransfer(new TextDecoder().decode(m.context));
        return;
      default:
        return;
    }
  }

  private handleAppResp(m: Message, pr: Progress): void {
    const wasPaused = this.repl.onAppResp(m, pr);
    if (wasPaused === null) return;
    if (this.maybeCommit()) {
      this.repl.bcastAppend();
      if (this.maybeLeaveAsRemoved()) return;
    } else if (wasPaused) this.repl.sendAppend(m.from, true);
    // Fill the window while there is more to send.
    while (this.repl.sendAppend(m.from, false));
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
            this.repl.bcastAppend();
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
      case MsgType.Quiesce:
        this.electionElapsed = 0;
        this.lead = m.from;
        if (m.index > this.leaderCommit) this.leaderCommit = m.index;
        this.quiet.onQuiesce(m, this.log);
        return;
      case MsgType.ReadIndexResp:
        this.reads.onResp(m);
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

  /** Caught up: leading with this term's entry committed and applied, or following a known
   *  leader with everything it reported committed applied here. */
  isCurrent(): boolean {
    if (this.failed !== null) return false;
    const l = this.log;
    if (this.role === Role.Leader) return this.committedInTerm() && l.applied >= l.committed;
    if (this.role !== Role.Follower || this.lead === NONE) return false;
    return l.committed >= this.leaderCommit && l.applied >= l.committed;
  }

  private handleAppend(m: Message): void {
    if (m.commit > this.leaderCommit) this.leaderCommit = m.commit;
    const r = this.msg(MsgType.AppResp, m.from);
    answerAppend(this.log, m, r);
    if (m.entries.length > 0) this.syncConfig(m.entries);
    this.send(r);
    this.maybeRecovered();
  }

  /** A recovering node takes part again once it holds all a leader reported committed. */
  private maybeRecovered(): void {
    const l = this.log;
    if (this.recovering && this.resetKnown && this.lead !== NONE && this.leaderCommit > 0 && l.committed >= Math.max(this.leaderCommit, this.mustHold) && l.stabled >= l.committed) this.recovering = false;
  }

  private handleHeartbeat(m: Message): void {
    if (m.index > this.leaderCommit) this.leaderCommit = m.index;
    this.log.commitTo(Math.min(m.commit, this.log.lastIndex()));
    // Recovering: a leader that counted what this node acknowledged before its reset learns
    // of it here; only a commit it reports after saying it knows ends the re-sync.
    if (m.logTerm > 0 && this.recovering) {
      this.resetKnown = true;
      this.mustHold = Math.max(this.mustHold, m.logTerm - 1);
    }
    const r = this.msg(MsgType.HeartbeatResp, m.from);
    r.context = m.context;
    if (this.recovering) r.logTerm = RESET_FLAG;
    // The end of our log + 1 (0: not said): a leader that counted more of it learns that we
    // lost what we acknowledged (a wiped disk) even when it has nothing new to send.
    r.index = this.log.lastIndex() + 1;
    this.send(r);
    this.maybeRecovered();
  }

  private handleSnapshot(m: Message): void {
    const s = m.snapshot;
    if (s === null) return;
    if (s.index > this.leaderCommit) this.leaderCommit = s.index;
    const r = this.msg(MsgType.AppResp, m.from);
    if (answerSnapshot(this.log, s, r)) {
      this.snapshot = s;
      this.confs.restore(s.voters);
      this.setVoters(s.voters);
    }
    this.send(r);
    this.maybeRecovered();
  }

  // ---- membership ----

  /** The log changed around `added` (appended, or a conflicting suffix replaced): forget
   *  membership entries no longer in it, note the new ones, and take the last one's voters. */
  private syncConfig(added: readonly Entry[]): void {
    this.confs.sync(this.log, added);
    this.setVoters(this.confs.current());
  }

  /** Take a membership list (voters, marked learners, pinned identities). */
  private setVoters(list: readonly string[]): void {
    const { voters: v, learners: l, ids } = splitMembers(list);
    const sameV = v.length === this.voters.length && v.every((x) => this.voters.includes(x));
    const sameL = l.length === this.learners.length && l.every((x) => this.learners.includes(x));
    // A member re-identified (a wiped server's new storage) holds none of what the old one
    // acknowledged: the leader counts from zero for it.
    if (this.role === Role.Leader) for (const [k, was] of this.ids) if (ids.get(k) !== was) this.repl.get(k)?.lostEntries(0);
    this.ids = ids;
    if (sameV && sameL) return;
    this.voters = v;
    this.learners = l;
    if (this.role === Role.Leader) this.repl.syncVoters();
    if (this.leadTransferee !== NONE && !this.voters.includes(this.leadTransferee)) this.leadTransferee = NONE;
  }

  /** A leader whose own removal has committed hands over to the most caught-up voter
   *  (TimeoutNow, so nobody waits out an election timeout) and steps down. */
  private maybeLeaveAsRemoved(): boolean {
    if (this.role !== Role.Leader || this.voters.includes(this.id) || this.confPending) return false;
    let target = NONE;
    let best = -1;
    for (const v of this.voters) {
      const pr = this.repl.get(v);
      if (pr !== undefined && pr.match > best) {
        best = pr.match;
        target = v;
      }
    }
    if (target !== NONE) this.sendTimeoutNow(target);
    this.becomeFollower(this.term, NONE);
    return true;
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
    const mci = this.repl.quorumMatch(this.quorum());
    // Raft §5.4.2 (and nats-server #7955): entries of earlier terms commit only indirectly.
    if (mci > this.log.committed && this.log.term(mci) === this.term) {
      const wasCommittedInTerm = this.committedInTerm();
      this.log.commitTo(mci);
      if (!wasCommittedInTerm) this.reads.flushPending();
      return true;
    }
    return false;
  }

  private committedInTerm(): boolean {
    return this.log.term(this.log.committed) === this.term;
  }

  private sendTimeoutNow(to: string): void {
    this.send(this.msg(MsgType.TimeoutNow, to));
  }

  private handleTransfer(target: string): void {
    if (target === this.id || !this.voters.includes(target)) return;
    if (this.leadTransferee === target) return;
    this.leadTransferee = target;
    this.electionElapsed = 0;
    const pr = this.repl.get(target)!;
    if (pr.match === this.log.lastIndex()) this.sendTimeoutNow(target);
    else this.repl.sendAppend(target, true);
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
