// Raft values: messages, entries, hard state and snapshots are plain data, so the core stays a
// pure state machine (etcd-io/raft `raftpb`). The driver encodes them (codec.ts), persists
// them (wal.ts) and moves them between servers; nothing in src/raft does I/O.

import { splitIdentity, withIdentity } from "./identity.js";

export const MsgType = {
  App: 1,
  AppResp: 2,
  Vote: 3,
  VoteResp: 4,
  PreVote: 5,
  PreVoteResp: 6,
  Heartbeat: 7,
  HeartbeatResp: 8,
  TimeoutNow: 9,
  Snap: 10,
  ReadIndex: 11,
  ReadIndexResp: 12,
  TransferLeader: 13,
  /** Leader → follower: the group is idle and every voter has everything (commit = index =
   *  the leader's last index, logTerm its term); stop the election timer until woken. */
  Quiesce: 14,
} as const;
export type MsgType = (typeof MsgType)[keyof typeof MsgType];

export const EntryType = {
  Normal: 0,
  /** Appended by a new leader so it can commit entries of earlier terms (Raft §5.4.2). */
  Noop: 1,
  /** A membership change: data is the new voter set (encodeVoters). It takes effect as soon
   *  as it is in a log, committed or not (single-server changes, Ongaro's thesis §4.1). */
  ConfChange: 2,
} as const;
export type EntryType = (typeof EntryType)[keyof typeof EntryType];

export interface Entry {
  term: number;
  index: number;
  type: EntryType;
  data: Uint8Array;
}

/** What must be on disk before any message that depends on it leaves. */
export interface HardState {
  term: number;
  /** The peer voted for in `term`, "" for none. */
  vote: string;
  commit: number;
}

export interface Snapshot {
  index: number;
  term: number;
  voters: string[];
  data: Uint8Array;
}

export interface Message {
  type: MsgType;
  from: string;
  to: string;
  term: number;
  /** App: term of the entry at `index`; Vote/PreVote: term of the last entry;
   *  rejected AppResp: term of the follower's entry at `rejectHint`. */
  logTerm: number;
  /** App: the index before `entries`; AppResp: the last matching index (or the rejected
   *  one); Vote/PreVote: the last log index; ReadIndexResp: the read index. */
  index: number;
  entries: Entry[];
  commit: number;
  reject: boolean;
  rejectHint: number;
  snapshot: Snapshot | null;
  /** ReadIndex/Heartbeat: the read request's context; Vote/PreVote: CAMPAIGN_TRANSFER. */
  context: Uint8Array | null;
}

export const NONE = "";

/** In a HeartbeatResp's logTerm (unused there otherwise): "my log was reset and I am
 *  re-syncing" (RaftNode.recovering), so the leader stops counting what it acknowledged
 *  before. A Heartbeat's logTerm, to such a follower, is the leader's last index + 1: "I
 *  know; hold and see committed everything up to there" (it may hold entries the follower
 *  helped commit before its reset, which only the log's end covers). */
export const RESET_FLAG = 1;

export const Role = {
  Follower: 0,
  PreCandidate: 1,
  Candidate: 2,
  Leader: 3,
} as const;
export type Role = (typeof Role)[keyof typeof Role];

export interface SoftState {
  leader: string;
  role: Role;
}

export interface ReadState {
  /** Apply up to this index, then the read is linearizable. */
  index: number;
  context: Uint8Array;
}

/**
 * One batch of work for the driver, handled in order (etcd-io/raft `doc.go`): write
 * `hardState`, `snapshot` and `entries` durably; then send `messages`; then apply `snapshot`
 * and `committed` to the state machine; then call `advance(ready)`.
 */
export interface Ready {
  softState: SoftState | null;
  hardState: HardState | null;
  entries: Entry[];
  snapshot: Snapshot | null;
  committed: Entry[];
  messages: Message[];
  readStates: ReadState[];
}

export function emptyMessage(type: MsgType, from: string, to: string, term: number): Message {
  return {
    type,
    from,
    to,
    term,
    logTerm: 0,
    index: 0,
    entries: [],
    commit: 0,
    reject: false,
    rejectHint: 0,
    snapshot: null,
    context: null,
  };
}

export function entrySize(e: Entry): number {
  return 24 + e.data.length;
}

export function isHardStateEqual(a: HardState, b: HardState): boolean {
  return a.term === b.term && a.vote === b.vote && a.commit === b.commit;
}

/** Response type for a vote request type. */
export function voteRespType(t: MsgType): MsgType {
  return t === MsgType.PreVote ? MsgType.PreVoteResp : MsgType.VoteResp;
}

/** Marks a vote request sent because of TimeoutNow: it bypasses leader stickiness. */
export const CAMPAIGN_TRANSFER = new Uint8Array([0x54]);

export function isTransferContext(c: Uint8Array | null): boolean {
  return c !== null && c.length === 1 && c[0] === 0x54;
}

/** Marks a learner in a membership list (ConfChange data, Snapshot.voters): a member the
 *  leader replicates to that neither votes nor counts for commit or quorum. */
export const LEARNER_MARK = "\u0001";

/** A membership list split into its voters and its learners (both sorted, names only) and
 *  the storage identities pinned to them (identity.ts). */
export function splitMembers(list: readonly string[]): { voters: string[]; learners: string[]; ids: Map<string, string> } {
  const voters: string[] = [];
  const learners: string[] = [];
  const ids = new Map<string, string>();
  for (const x of list) {
    const { name, id, learner } = parseMember(x);
    if (id !== "") ids.set(name, id);
    if (learner) learners.push(name);
    else voters.push(name);
  }
  return { voters: voters.sort(), learners: learners.sort(), ids };
}

/** One membership list item: the server's name, its pinned identity ("" for none), and
 *  whether it is a learner. */
export function parseMember(item: string): { name: string; id: string; learner: boolean } {
  const learner = item.startsWith(LEARNER_MARK);
  return { ...splitIdentity(learner ? item.slice(LEARNER_MARK.length) : item), learner };
}

/** The membership list of these voters and learners, with their pinned identities. */
export function joinMembers(voters: readonly string[], learners: readonly string[], ids?: ReadonlyMap<string, string>): string[] {
  return [...[...voters].sort().map((v) => withIdentity(v, ids?.get(v))), ...[...learners].sort().map((l) => LEARNER_MARK + withIdentity(l, ids?.get(l)))];
}

/** A ConfChange entry's data: the members (voters, then marked learners) as a JSON array
 *  (rare, not a hot path). */
export function encodeVoters(voters: readonly string[]): Uint8Array {
  return new TextEncoder().encode(JSON.stringify([...voters].sort()));
}

export function decodeVoters(data: Uint8Array): string[] {
  const v = JSON.parse(new TextDecoder().decode(data)) as unknown;
  if (!Array.isArray(v) || !v.every((x) => typeof x === "string")) throw new Error("raft: corrupt membership entry");
  return v as string[];
}

export class RaftError extends Error {
  constructor(
    readonly code: "not_leader" | "transferring" | "failed" | "compacted" | "unavailable" | "too_large" | "conf_pending",
    message: string,
  ) {
    super(message);
    this.name = "RaftError";
  }
}

export function raftAssert(cond: boolean, msg: string): asserts cond {
  if (!cond) throw new Error(`raft invariant: ${msg}`);
}
