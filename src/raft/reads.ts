// Linearizable reads for RaftNode (node.ts; Raft thesis §6.4, etcd-io/raft `raft.go`
// MsgReadIndex): a read asked on the leader, or forwarded to it by a follower, is noted with
// the leader's commit index and confirmed by a heartbeat round carrying its context
// (readindex.ts). Until the leader has committed an entry of its term its commit index may be
// stale, so reads asked before that wait. A confirmed read goes back as a ReadState (asked
// here) or a ReadIndexResp (asked by a follower). Values in, values out like the node:
// messages go out through the node's send.
import { ReadOnly } from "./readindex.js";
import type { Replication, ReplicaSource } from "./replicate.js";
import { type Message, MsgType, NONE, RaftError, type ReadState, Role, emptyMessage } from "./types.js";

/** What the reads read of their node (RaftNode has these). */
export interface ReadSource extends ReplicaSource {
  readonly role: Role;
  readonly lead: string;
}

interface PendingReadIndex {
  from: string;
  context: Uint8Array;
}

export class ReadRequests {
  private readonly readOnly = new ReadOnly();
  /** Reads the leader took before its term committed an entry. */
  private pending: PendingReadIndex[] = [];
  /** Reads confirmed for this node, for the next Ready. */
  states: ReadState[] = [];

  constructor(
    private readonly node: ReadSource,
    private readonly repl: Replication,
    private readonly send: (m: Message) => void,
  ) {}

  /** Start a read (RaftNode.readIndex): on the leader, or forwarded to the one known. */
  request(context: Uint8Array): void {
    if (this.node.role === Role.Leader) {
      this.handle(this.node.id, context);
    } else if (this.node.lead !== NONE) {
      const m = this.msg(MsgType.ReadIndex, this.node.lead);
      m.context = context;
      this.send(m);
    } else throw new RaftError("unavailable", "no leader known");
  }

  /** The leader takes a read asked by `from` (itself or a follower). */
  handle(from: string, context: Uint8Array): void {
    const log = this.node.log;
    if (this.node.voters.length === 1) {
      this.release(from, log.committed, context);
      return;
    }
    // Until this term has committed an entry the leader's commit index may be stale.
    if (log.term(log.committed) !== this.node.term) {
      this.pending.push({ from, context });
      return;
    }
    this.readOnly.add(log.committed, context, from, this.node.id);
    this.repl.bcastHeartbeat(context);
  }

  /** The leader's term committed its first entry: take the reads that waited for it. */
  flushPending(): void {
    const p = this.pending;
    this.pending = [];
    for (const r of p) this.handle(r.from, r.context);
  }

  /** A heartbeat answer on the leader: the reads up to its context are confirmed once a
   *  quorum answered it. */
  onHeartbeatResp(m: Message, quorum: number): void {
    if (m.context !== null && m.context.length > 0 && this.readOnly.ack(m.context, m.from) >= quorum) {
      for (const rs of this.readOnly.advance(m.context)) this.release(rs.from, rs.index, rs.context);
    }
  }

  /** The leader's answer to a read this follower forwarded. */
  onResp(m: Message): void {
    if (m.context !== null) this.states.push({ index: m.index, context: m.context });
  }

  /** The context of the latest read waiting for its heartbeat round (null: none). */
  lastPendingContext(): Uint8Array | null {
    return this.readOnly.lastPendingContext();
  }

  /** Reads are waiting on the leader (it must not go quiet). */
  get busy(): boolean {
    return this.pending.length > 0 || this.readOnly.lastPendingContext() !== null;
  }

  /** The confirmed reads for a Ready (the list starts again empty). */
  take(): ReadState[] {
    const s = this.states;
    this.states = [];
    return s;
  }

  /** A new term: the reads in progress are forgotten. */
  reset(): void {
    this.readOnly.reset();
    this.pending = [];
  }

  /** The node failed: nothing waits and nothing is reported. */
  clear(): void {
    this.states = [];
    this.pending = [];
  }

  private release(from: string, index: number, context: Uint8Array): void {
    if (from === this.node.id || from === NONE) {
      this.states.push({ index, context });
      return;
    }
    const m = this.msg(MsgType.ReadIndexResp, from);
    m.index = index;
    m.context = context;
    this.send(m);
  }

  private msg(type: MsgType, to: string): Message {
    return emptyMessage(type, this.node.id, to, this.node.term);
  }
}
