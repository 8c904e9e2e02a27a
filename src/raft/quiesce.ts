// Quiescence for RaftNode (node.ts; CLUSTERING.md §3.6): a leader whose group had no
// proposal for a while, with everything committed and held by every voter, tells its
// followers (MsgType.Quiesce) and stops heartbeating; they stop their election timers. A
// proposal or any message wakes a node (RaftNode.wake); the driver wakes the groups of a
// peer it has not heard from lately (a server-wide liveness frame stands in for the
// heartbeats, RaftHost) or whose route closed. Values only: messages go out through send.
import type { RaftLog } from "./log.js";
import { ProgressState } from "./progress.js";
import type { Replication, ReplicaSource } from "./replicate.js";
import { type Message, MsgType, emptyMessage } from "./types.js";

export class Quiescence {
  /** Idle and caught up: no heartbeats (leader), no election timer (follower). */
  quiesced = false;
  /** Leader ticks since the last proposal (or since it woke). */
  idleTicks = 0;

  constructor(
    private readonly node: ReplicaSource,
    private readonly repl: Replication,
    private readonly send: (m: Message) => void,
    /** Reads, a transfer or a membership change in progress. */
    private readonly busy: () => boolean,
  ) {}

  /** A leader tick: true when the group went quiet now (the Quiesce messages are out). */
  leaderTick(quiesceTicks: number): boolean {
    if (quiesceTicks <= 0 || ++this.idleTicks < quiesceTicks || !this.settled()) return false;
    this.quiesced = true;
    const { id, log, term } = this.node;
    const last = log.lastIndex();
    for (const v of [...this.node.voters, ...this.node.learners]) {
      if (v === id) continue;
      const m = emptyMessage(MsgType.Quiesce, id, v, term);
      m.index = last;
      m.logTerm = log.term(last);
      m.commit = log.committed;
      this.send(m);
    }
    return true;
  }

  /** Everything committed in this term, on disk here and held by every voter heard from
   *  lately; nothing pending. */
  private settled(): boolean {
    const { id, log, term, voters } = this.node;
    const last = log.lastIndex();
    if (log.committed !== last || log.term(last) !== term || log.stabled !== last || !voters.includes(id) || this.busy()) return false;
    for (const v of [...voters, ...this.node.learners]) {
      if (v === id) continue;
      const pr = this.repl.get(v);
      if (pr === undefined || pr.match !== last || !pr.recentActive || pr.state !== ProgressState.Replicate) return false;
    }
    return true;
  }

  /** A follower got the leader's Quiesce: it goes quiet if its log is the leader's whole
   *  log; else it answers (which wakes the leader) and catches up. */
  onQuiesce(m: Message, log: RaftLog): void {
    if (log.lastIndex() === m.index && log.matchTerm(m.index, m.logTerm)) {
      log.commitTo(m.commit);
      this.quiesced = true;
      return;
    }
    this.send(emptyMessage(MsgType.HeartbeatResp, this.node.id, m.from, this.node.term));
  }

  /** Wakes: true if it was quiet. */
  wake(): boolean {
    const was = this.quiesced;
    this.quiesced = false;
    this.idleTicks = 0;
    return was;
  }

  /** Every voter counts as heard for the next check-quorum round (a leader waking). */
  markActive(): void {
    for (const v of this.node.voters) {
      const pr = this.repl.get(v);
      if (pr !== undefined) pr.recentActive = true;
    }
  }
}
