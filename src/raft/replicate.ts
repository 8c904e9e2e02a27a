// Log replication (Raft §5.3, etcd-io/raft `raft.go` sendAppend and
// handleAppendEntriesResponse, `tracker/`), both sides, for RaftNode (node.ts):
//   Replication     the leader's side: a Progress per voter, what to send each follower
//                   (entries, a snapshot when its next entry is compacted away, heartbeats)
//                   and what their answers change; which index a quorum holds; whether a
//                   quorum was heard from (check-quorum).
//   answerAppend,   the follower's side: its answer to an append or a snapshot, worked out
//   answerSnapshot  on its log.
// Values in, values out like the node: messages go out through the node's send, nothing here
// does I/O or reads a clock.
import type { RaftLog } from "./log.js";
import { Progress, ProgressState } from "./progress.js";
import { type Message, MsgType, type Snapshot, emptyMessage } from "./types.js";

/** What Replication reads of its node (RaftNode has these). */
export interface ReplicaSource {
  readonly id: string;
  readonly term: number;
  readonly log: RaftLog;
  /** The latest snapshot the node holds: sent to a follower whose next entry is compacted. */
  readonly snapshot: Snapshot | null;
  readonly voters: readonly string[];
  /** Replicated to, never counted (catching up before they become voters). */
  readonly learners: readonly string[];
}

export interface ProgressStatus {
  id: string;
  match: number;
  next: number;
  state: ProgressState;
  active: boolean;
}

export class Replication {
  /** A Progress per voter, this node included; rebuilt for every term (reset). */
  private prs = new Map<string, Progress>();
  /** Followers seen to have lost entries they acknowledged (a wiped disk; tests, logs). */
  lostLogs = 0;

  constructor(
    private readonly node: ReplicaSource,
    private readonly send: (m: Message) => void,
    /** Bytes of entries per append message (at least one entry is always sent). */
    private readonly maxMsgBytes: number,
    /** Appends in flight per follower in the Replicate state. */
    private readonly maxInflight: number,
  ) {}

  /** A new term: every voter's next entry is past the log's end; this node matches what
   *  it has on disk. */
  reset(): void {
    const { id, log } = this.node;
    this.prs = new Map();
    const next = log.lastIndex() + 1;
    // This node keeps a Progress even when it is not a voter (a leader removing itself).
    for (const v of new Set([...this.node.voters, ...this.node.learners, id])) {
      const pr = new Progress(next, this.maxInflight);
      if (v === id) pr.match = log.stabled;
      this.prs.set(v, pr);
    }
  }

  /** The voters changed under a leader: a Progress for each new one (probing from the end
   *  of the log), none for the ones removed. */
  syncVoters(): void {
    const { id, log, voters, learners } = this.node;
    const members = [...voters, ...learners];
    for (const v of members) {
      if (this.prs.has(v)) continue;
      const pr = new Progress(log.lastIndex() + 1, this.maxInflight);
      pr.recentActive = true;
      this.prs.set(v, pr);
    }
    for (const k of [...this.prs.keys()]) if (k !== id && !members.includes(k)) this.prs.delete(k);
  }

  /** The node became leader: its own progress replicates from the end of its log. */
  lead(): void {
    const log = this.node.log;
    const self = this.prs.get(this.node.id)!;
    self.becomeReplicate();
    self.match = log.stabled;
    self.next = log.lastIndex() + 1;
  }

  get(id: string): Progress | undefined {
    return this.prs.get(id);
  }

  /** The leader's own log is on disk up to stabled; true when that moved its match. */
  selfStable(stabled: number): boolean {
    return this.prs.get(this.node.id)!.maybeUpdate(stabled);
  }

  /** The highest index that `quorum` voters hold. */
  quorumMatch(quorum: number): number {
    const matches: number[] = [];
    for (const v of this.node.voters) matches.push(this.prs.get(v)?.match ?? 0);
    matches.sort((a, b) => b - a);
    return matches[quorum - 1]!;
  }

  /** Check-quorum: were `quorum` voters (this node included) heard from since the last
   *  call? Forgets what it heard, for the next round. */
  quorumActive(quorum: number): boolean {
    const self = this.node.id;
    let active = 0;
    for (const v of this.node.voters) if (v === self || this.prs.get(v)?.recentActive === true) active++;
    for (const [id, pr] of this.prs) if (id !== self) pr.recentActive = false;
    return active >= quorum;
  }

  /** A leader tick: a snapshot lost on the way would stall its follower forever, so one
   *  unanswered for more than timeoutTicks sends the follower back to probing. */
  retryLostSnapshots(timeoutTicks: number): void {
    for (const [id, pr] of this.prs) {
      if (id === this.node.id || pr.state !== ProgressState.Snapshot) continue;
      if (++pr.snapshotTicks > timeoutTicks) {
        pr.becomeProbe();
        this.sendAppend(id, true);
      }
    }
  }

  bcastAppend(): void {
    for (const v of this.node.voters) if (v !== this.node.id) this.sendAppend(v, true);
    for (const v of this.node.learners) if (v !== this.node.id) this.sendAppend(v, true);
  }

  /** Send what pr is missing; false if nothing was sent. */
  sendAppend(to: string, sendIfEmpty: boolean): boolean {
    const pr = this.prs.get(to);
    if (pr === undefined || pr.isPaused()) return false;
    const log = this.node.log;
    if (pr.next > log.lastIndex() + 1) pr.next = log.lastIndex() + 1;
    const prevIndex = pr.next - 1;
    const prevTerm = log.term(prevIndex);
    if (prevTerm === -1) return this.sendSnapshot(to, pr);
    const ents = pr.next <= log.lastIndex() ? log.slice(pr.next, log.lastIndex() + 1, this.maxMsgBytes) : [];
    if (ents.length === 0 && !sendIfEmpty) return false;
    const m = this.msg(MsgType.App, to);
    m.index = prevIndex;
    m.logTerm = prevTerm;
    m.entries = ents;
    m.commit = log.committed;
    pr.sentEntries(prevIndex + ents.length, ents.length);
    this.send(m);
    return true;
  }

  private sendSnapshot(to: string, pr: Progress): boolean {
    const s = this.node.snapshot;
    if (s === null || !pr.recentActive) return false;
    const m = this.msg(MsgType.Snap, to);
    m.snapshot = s;
    pr.becomeSnapshot(s.index);
    this.send(m);
    return true;
  }

  /** A heartbeat to every follower, carrying a read request's context (or null). */
  bcastHeartbeat(context: Uint8Array | null): void {
    const committed = this.node.log.committed;
    for (const [id, pr] of this.prs) {
      if (id === this.node.id) continue;
      const m = this.msg(MsgType.Heartbeat, id);
      m.commit = Math.min(pr.match, committed);
      // The leader's own commit, so a follower knows how far it has to go (isCurrent).
      m.index = committed;
      m.context = context;
      if (pr.resetSeen) m.logTerm = this.node.log.lastIndex() + 1;
      this.send(m);
    }
  }

  /** A heartbeat answer from `from`: it is alive, and gets what it lacks. `has`: the end of
   *  its log when it answered (-1: not said). */
  onHeartbeatResp(from: string, pr: Progress, has = -1, reset = false): void {
    pr.recentActive = true;
    pr.probeSent = false;
    // A follower re-syncing after its log was reset (corruption) lost what it acknowledged
    // past its end: count only what it holds, and say so in the next heartbeats (it stays
    // out of elections until it holds what was committed after that).
    pr.resetSeen = reset;
    if ((has === 0 || (reset && has >= 0)) && pr.match > has) {
      // Its log is empty where we counted entries: it lost what it acknowledged (a wiped
      // disk, back under the same id). Only an empty log counts: an answer that arrives
      // late, after later acknowledgements, says less than the follower holds.
      pr.lostEntries(has);
      this.lostLogs++;
    }
    // A full window that stays full means appends were lost: let one more out, which the
    // follower rejects if it has a gap, sending us back to probing.
    if (pr.state === ProgressState.Replicate && pr.inflights.full()) pr.inflights.freeFirstOne();
    if (pr.match < this.node.log.lastIndex()) this.sendAppend(from, true);
  }

  /**
   * An append answer m from a follower. null when it moved nothing further (a rejection,
   * handled here, or a stale answer); otherwise its match moved, and the result says
   * whether the follower was paused before: the node then commits what it can and sends.
   */
  onAppResp(m: Message, pr: Progress): boolean | null {
    pr.recentActive = true;
    if (m.reject) {
      if (m.rejectHint === 0 && pr.match > 0 && m.index >= pr.match) {
        // An empty log where the leader counted entries: the follower lost what it
        // acknowledged (a wiped disk, back under the same id). Without this its progress
        // would stay at the old match, probing there for ever. (Only an empty log: a
        // rejection that arrives late, after later acknowledgements, must not count.)
        pr.lostEntries(m.rejectHint);
        this.lostLogs++;
        this.sendAppend(m.from, true);
        return null;
      }
      let hint = m.rejectHint;
      if (m.logTerm > 0) hint = this.node.log.findConflictByTerm(m.rejectHint, m.logTerm).index;
      if (pr.maybeDecrTo(m.index, hint)) {
        if (pr.state === ProgressState.Replicate) pr.becomeProbe();
        this.sendAppend(m.from, true);
      }
      return null;
    }
    const wasPaused = pr.isPaused();
    if (!pr.maybeUpdate(m.index)) {
      if (wasPaused && pr.state === ProgressState.Probe) this.sendAppend(m.from, true);
      return null;
    }
    if (pr.state === ProgressState.Probe) pr.becomeReplicate();
    else if (pr.state === ProgressState.Snapshot && pr.match >= pr.pendingSnapshot) {
      pr.becomeProbe();
      pr.becomeReplicate();
    } else if (pr.state === ProgressState.Replicate) pr.inflights.freeLE(m.index);
    return wasPaused;
  }

  progress(): ProgressStatus[] {
    const out: ProgressStatus[] = [];
    for (const [id, pr] of this.prs) out.push({ id, match: pr.match, next: pr.next, state: pr.state, active: pr.recentActive });
    return out;
  }

  private msg(type: MsgType, to: string): Message {
    return emptyMessage(type, this.node.id, to, this.node.term);
  }
}

/** A follower's answer r (an AppResp) to the leader's append m, appending what matches. */
export function answerAppend(log: RaftLog, m: Message, r: Message): void {
  if (m.index < log.committed) {
    r.index = log.committed;
    return;
  }
  const lastNew = log.maybeAppend(m.index, m.logTerm, m.commit, m.entries);
  if (lastNew !== null) {
    r.index = lastNew;
  } else {
    const hint = log.findConflictByTerm(Math.min(m.index, log.lastIndex()), m.logTerm);
    r.reject = true;
    r.index = m.index;
    r.rejectHint = hint.index;
    r.logTerm = hint.term;
  }
}

/** A follower's answer r (an AppResp) to the leader's snapshot s. True when s replaced the
 *  log (the node then holds s and takes its voters); false when the log already had it. */
export function answerSnapshot(log: RaftLog, s: Snapshot, r: Message): boolean {
  if (s.index <= log.committed) {
    r.index = log.committed;
    return false;
  }
  if (log.matchTerm(s.index, s.term)) {
    log.commitTo(s.index);
    r.index = log.committed;
    return false;
  }
  log.restoreSnapshot(s);
  r.index = log.lastIndex();
  return true;
}
