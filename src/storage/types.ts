// The storage contract. Streams talk to a StreamStore; consumers to a ConsumerStore.
// Implementations: memory/ and file/. A store never imports stream or consumer code:
// it reports upward only through the callbacks given to it (nats-server store.go).

export const StorageType = { File: "file", Memory: "memory" } as const;
export type StorageType = (typeof StorageType)[keyof typeof StorageType];

export interface StoredMsg {
  seq: number;
  subject: string;
  hdr: Buffer | null; // raw header block or null
  data: Buffer;
  tsNs: number; // int64 ns since epoch, as a JS number
}

/** Limits the store enforces itself, always by discarding the oldest ("discard old").
 *  "discard new" is decided by the stream before it calls storeMsg. -1/0 = unlimited. */
export interface StoreLimits {
  maxMsgs: number;
  maxBytes: number;
  maxAgeMs: number;
  maxMsgsPerSubject: number;
}

export interface StreamStoreState {
  msgs: number;
  bytes: number;
  firstSeq: number;
  firstTsNs: number;
  lastSeq: number;
  lastTsNs: number;
  numSubjects: number;
  numDeleted: number; // interior gaps between firstSeq and lastSeq
}

export interface SubjectState {
  msgs: number;
  first: number;
  last: number;
}

/** What the store tells its owner. */
export interface StoreCallbacks {
  /** A message left the store because of a limit, an age or a TTL (not on explicit remove). */
  onLimitRemove?(seq: number, subject: string): void;
}

/** A purge in progress (StreamStore.beginPurge). */
export interface StorePurge {
  /** Messages it removed so far; all it removes once done. */
  readonly purged: number;
  readonly done: boolean;
  /** Works through at most about `budgetSeqs` sequences; true once done (also when the store
   *  was closed under it, which leaves the rest). */
  step(budgetSeqs: number): boolean;
}

/** A walk over a store's subjects (StreamStore.lastSeqsScan). */
export interface LastSeqsScan {
  /** Visits up to max more subjects and pushes the last sequence of each that matches onto
   *  out; true once every subject has been visited. Subjects added meanwhile may be visited
   *  or not; removed ones are not (a Map iterator's rules). */
  step(max: number, out: number[]): boolean;
}

export interface StreamStore {
  readonly type: StorageType;
  /** Append. Sequences are assigned by the store (lastSeq + 1). ttlSec > 0: per-message TTL. */
  storeMsg(subject: string, hdr: Buffer | null, data: Buffer, tsNs: number, ttlSec: number): number;
  /** storeMsg at a sequence and time chosen elsewhere (a replica applying its leader's
   *  entry, a snapshot being restored). seq must be above lastSeq (else it throws); sequences
   *  between lastSeq and seq become deleted ones, as after skipMsgs. Limits, TTL and durability
   *  (the next sync) as for storeMsg. */
  storeMsgAt(seq: number, subject: string, hdr: Buffer | null, data: Buffer, tsNs: number, ttlSec: number): void;
  /** Use up sequences seq .. seq + count - 1 without storing anything (nats-server SkipMsgs):
   *  seq must be lastSeq + 1 and count >= 1 (else it throws). lastSeq becomes seq + count - 1
   *  and lastTsNs becomes tsNs. In an empty store firstSeq moves past them; otherwise they are
   *  deleted sequences (numDeleted, deletedSeqs). Durable with the next sync. */
  skipMsgs(seq: number, count: number, tsNs: number): void;
  /** Per-message TTLs of the live messages in [from, to]: seq -> ttl seconds (what a
   *  snapshot carries so that a restored message expires when the original would). */
  msgTtls(from: number, to: number): Map<number, number>;
  /** Durability barrier: cb runs once everything stored before the call is on stable
   *  storage (for memory stores: on the next tick). Many calls share one fsync. */
  sync(cb: (err: Error | null) => void): void;
  /** The write or fsync error that stopped the store (it then refuses new messages until it
   *  is closed and opened again), or null; absent where storing cannot fail that way. */
  failure?(): Error | null;
  loadMsg(seq: number): StoredMsg | null;
  /** First message with seq >= start whose subject matches filter ("" or ">" = any). */
  loadNextMsg(filter: string, start: number): StoredMsg | null;
  /** loadNextMsg for a caller that sends the message at once (a consumer's delivery): the
   *  buffers may be views of the store's read cache instead of copies. They stay valid, but
   *  keeping them keeps a whole read window alive. Optional. */
  loadNextMsgTransient?(filter: string, start: number): StoredMsg | null;
  /** First message with seq >= start that has header bytes (what a dedup rebuild reads),
   *  returned as by loadNextMsgTransient. Stores skip what holds no headers (a file store:
   *  whole blocks). Optional. */
  loadNextMsgWithHeader?(start: number): StoredMsg | null;
  /** Last message whose subject matches filter (wildcards allowed). */
  loadLastMsg(filter: string): StoredMsg | null;
  /** Remove one message; false if it was not there. */
  removeMsg(seq: number): boolean;
  /** removeMsg, and the message's bytes are overwritten where they are stored (absent: the
   *  store keeps no copy once a message is removed). */
  eraseMsg?(seq: number): boolean;
  /** Purge: all, or those matching subject, or below seq (exclusive), keeping the newest `keep`. */
  purge(opts: { subject?: string; seq?: number; keep?: number }): number;
  /** purge() done a slice at a time: the messages it removes are fixed when it begins (those
   *  purge() would remove now; messages stored later are never among them, and `keep` counts
   *  only what is stored now), and step() removes them a bounded amount at a time. While it
   *  runs, reads may still find messages it has not reached; a removal of one of them by
   *  anyone else answers false (the purge had it) and counts in `purged`. Any other purge,
   *  compact or setLimits, and a store over one of its limits, first finishes it at once, so
   *  the end state is that of purge() at begin followed by everything after. One at a time:
   *  beginning another finishes the running one. Optional (stores without it purge at once). */
  beginPurge?(opts: { subject?: string; seq?: number; keep?: number }): StorePurge;
  /** Remove all messages with seq < seq; if seq > lastSeq+1 the stream restarts at seq. */
  compact(seq: number): number;
  setLimits(l: StoreLimits): void;
  /** Apply age and TTL expiry as of now; returns how many were removed. */
  expire(nowNs: number): number;
  /** Earliest time (ns) at which expire() would remove something (max_age or a per-message
   *  TTL), or 0 if nothing is due ever. */
  nextExpiryNs(): number;
  state(): StreamStoreState;
  /** Deleted sequences between first and last, for deleted_details. */
  deletedSeqs(): number[];
  subjectsState(filter: string): Map<string, SubjectState>;
  /** The last sequence of every subject that filter matches, in no order (subjectsState's
   *  `last` without building the map: a last_per_subject consumer over many subjects). */
  lastSeqs?(filter: string): number[];
  /** lastSeqs as a walk over several calls (consumer-api builds a last_per_subject
   *  consumer's start over turns with it): sequences above endSeq are left out. */
  lastSeqsScan?(filter: string, endSeq: number): LastSeqsScan;
  /** Messages at or after startSeq matching filter; lastPerSubject counts one per subject. */
  numPending(startSeq: number, filter: string, lastPerSubject: boolean): number;
  /** Flush, fsync and close. */
  close(): Promise<void>;
  /** Close and remove everything on disk. */
  delete(): Promise<void>;
}

export interface ConsumerPending {
  cseq: number;
  tsNs: number; // last delivery time
}

export interface ConsumerState {
  delivered: { consumerSeq: number; streamSeq: number };
  ackFloor: { consumerSeq: number; streamSeq: number };
  pending: Map<number, ConsumerPending>; // by stream seq
  redelivered: Map<number, number>; // stream seq -> delivery count (only when > 1)
}

export interface ConsumerStore {
  load(): ConsumerState | null;
  /** Record the new state; it is written with the stream's durability (group commit). */
  update(state: ConsumerState): void;
  sync(cb: (err: Error | null) => void): void;
  /** Persist the consumer's config JSON atomically. */
  writeConfig(json: string): void;
  readConfig(): string | null;
  close(): Promise<void>;
  delete(): Promise<void>;
}
