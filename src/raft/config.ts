// The configuration a Raft node is built with, what its driver restores it from, and the
// status it reports (node.ts).
import type { Random } from "../runtime/random.js";
import type { ProgressStatus } from "./replicate.js";
import type { Entry, HardState, Role, Snapshot } from "./types.js";

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
  /** Leader ticks without a proposal after which an idle group whose voters all hold its
   *  whole log goes quiet (no heartbeats, no election timers) until a proposal, a message or
   *  the driver wakes it (RaftNode.wake; the driver watches its peers' liveness). 0: never. */
  quiesceTicks?: number;
  /** This server's storage identity (identity.ts): a group that pins another one to this
   *  server's name holds it as a wiped server's new incarnation (no votes, no campaigns).
   *  "" (default): none. */
  identity?: string;
}

/** What the driver read back from disk on start. */
export interface RaftRestore {
  hardState: HardState;
  snapshot: Snapshot | null;
  /** Entries after the snapshot, in order. */
  entries: Entry[];
  /** Index the state machine has already applied (≥ snapshot index). */
  applied?: number;
  /** The node's disk state was corrupt and is started blank: no votes, no campaigns until
   *  it caught up with a leader (RaftNode.recovering). */
  recovering?: boolean;
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
  recovering: boolean;
  transferee: string;
  progress: ProgressStatus[];
  /** The voters in effect (the last membership entry in the log, committed or not). */
  voters: string[];
  /** The learners in effect (replicated to, not counted). */
  learners: string[];
}
