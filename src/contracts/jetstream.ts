// The seam between the stream layer (src/stream, src/jetstream) and the consumer layer
// (src/consumer, src/jetstream/consumer-api.ts). Both sides code against these types.

import type { Bus } from "./bus.js";
import type { Clock } from "../runtime/clock.js";
import type { Scheduler } from "../runtime/sched.js";
import type { Fs } from "../runtime/fs.js";
import type { Logger } from "../runtime/log.js";
import type { JetStreamOptions } from "./options.js";
import type { ConsumerState, StreamStore } from "../storage/types.js";

export interface JetStreamDeps {
  bus: Bus;
  clock: Clock;
  /** Turns of the loop and microtasks (runtime/sched.ts). */
  sched: Scheduler;
  /** The disk JetStream stores to (encryption at rest wraps it). */
  fs: Fs;
  log: Logger;
  opts: JetStreamOptions;
  serverId: string;
  serverName: string;
  maxPayloadBytes: number;
}

/** A consumer as its stream sees it. */
export interface ConsumerHook {
  readonly name: string;
  /** A new message became visible (a file stream: once the fsync after its store completed). */
  onStored(seq: number, subject: string): void;
  /** Messages below firstSeq are gone (purge/compact/limits). */
  onPurged(firstSeq: number): void;
  /** A purge by subject removed messages above the stream's first sequence. */
  onMessagesRemoved?(subject: string): void;
  /** The config values a stream's consumer_limits bound (checked on stream update). */
  consumerLimits?(): { max_ack_pending: number; inactive_threshold: number };
  /** Interest retention: true while this consumer's filter matches subject and it has not
   *  acknowledged seq yet. */
  needsMessage(seq: number, subject: string): boolean;
  /** True when this consumer's filter(s) match the subject. */
  filterMatches(subject: string): boolean;
  /** The stream is being deleted or the server stops. */
  stop(deleteState: boolean): Promise<void>;
}

/** A stream as its consumers see it. */
export interface StreamHandle {
  readonly name: string;
  readonly store: StreamStore;
  /** The last sequence consumers may deliver: the store may hold later ones not yet durable. */
  readonly visibleSeq: number;
  /** Current config in wire JSON shape (snake_case). */
  wireConfig(): Record<string, unknown>;
  retention(): "limits" | "interest" | "workqueue";
  /** Directory for this stream's consumer state, or null for memory streams. */
  consumerDir(consumer: string): string | null;
  addConsumer(c: ConsumerHook): void;
  removeConsumer(name: string): void;
  consumers(): ConsumerHook[];
  /** Retention: a consumer acknowledged seq; the stream decides whether to remove it. */
  onAck(seq: number, subject: string): void;
  /** Set on a replicated stream's copy: where its consumers' ledger operations go. */
  readonly consumerRepl?: ConsumerReplicator | null;
}

/** The kinds of a consumer ledger operation as numbers (the ConsumerReplicator's wire). */
export const LedgerKind = {
  Delivered: 1,
  Acked: 2,
  Nak: 3,
  Expired: 4,
  Term: 5,
  Progress: 6,
  Gone: 7,
  Skip: 8,
  Purged: 9,
  Reset: 10,
} as const;
export type LedgerKind = (typeof LedgerKind)[keyof typeof LedgerKind];

/** Told when a batch of consumer operations committed (ConsumerReplicator.afterCommit). */
export interface CommitWaiter {
  /** Every batch up to gen committed and applied here. */
  committed(gen: number): void;
  /** This replica stopped leading: what waited will not be answered. */
  dropped(): void;
}

/** A consumer as the replicas agreed on it: what a new stream leader makes it again from
 *  (its config as wire JSON, creation time and state). */
export interface ReplicatedConsumer {
  name: string;
  config: string;
  createdNs: number;
  state: ConsumerState;
  /** A last_per_subject consumer's first phase ends here (the stream's last sequence when it
   *  was made); 0 for other policies. */
  lpsEnd: number;
}

/** A consumer as a stream that changes kind (STREAM.UPDATE of its replicas) hands it over:
 *  as a replicated one, plus its ledger knobs. */
export interface ConsumerSeed extends ReplicatedConsumer {
  ackPolicy: "none" | "all" | "explicit";
  maxDeliver: number;
  maxAckPending: number;
}

/** What a replicated stream keeps of its consumers (src/jscluster/consumer-repl.ts): the
 *  stream leader's consumers report every ledger operation here, in the order they applied
 *  them; the operations travel in the stream's Raft log and every replica applies them to
 *  its own copy of each consumer's ledger, so that a new leader's consumers start from the
 *  agreed state. */
export interface ConsumerReplicator {
  /** This copy leads and takes operations (false: a consumer here is stopping). */
  readonly leading: boolean;
  /** The agreed state of a consumer (everything committed and applied here), or null. */
  state(name: string): ConsumerState | null;
  /** A consumer starts (or its config changed): the ledger knobs the replicas need, and its
   *  config (wire JSON) and creation time, so that a new leader can make it again. */
  configure(name: string, ackPolicy: "none" | "all" | "explicit", maxDeliver: number, maxAckPending: number, config: string, createdNs: number): void;
  /** Every consumer the replicas know, with its config, creation time and agreed state. */
  consumers(): ReplicatedConsumer[];
  /** A last_per_subject consumer was made: its first phase ends at endSeq (the stream's last
   *  sequence then), so that a new leader resumes that phase where it stood. */
  lastPerSubject(name: string, endSeq: number): void;
  /** A consumer was deleted. */
  removed(name: string): void;
  /** One ledger operation (fields by kind: a = sseq; b = dseq, delay, ts or skip; c = dc;
   *  d = ts); `gone` carries its sequences in seqs. */
  op(name: string, kind: LedgerKind, a: number, b: number, c: number, d: number, seqs?: readonly number[]): void;
  /** Publish an empty reply once the operations recorded so far have committed (AckSync). */
  replyAfterCommit(reply: string): void;
  /** The batch the operations recorded so far travel in, as a number that grows with each
   *  batch proposed (0: every one of them has committed and applied here). */
  opsGen(): number;
  /** Call w.committed(gen) once the operations recorded so far have committed and applied
   *  here (gen: opsGen() now, or later), or w.dropped() if leadership goes first. Deliveries
   *  wait for this (src/consumer/outbox.ts). */
  afterCommit(w: CommitWaiter): void;
  /** The replicator as one consumer made now sees it: it takes that consumer's operations,
   *  deliveries and replies only while this replica leads in the term it was made in. A
   *  consumer left over from an earlier term (not stopped yet when this replica led again)
   *  has a ledger that is not the agreed one; what it does must not reach the log. */
  bind(): ConsumerReplicator;
  /** CONSUMER.INFO's `cluster` block: the stream group's (replicated: a durable), else
   *  {name, leader: this server}. */
  clusterInfo(replicated: boolean): Record<string, unknown>;
}

/** A $JS.API request carried from one server to the one that answers it (the FWD frame of
 *  the peer channel, src/jscluster/meta-group.ts). hops: how often it was forwarded already;
 *  local: handle it on the receiving server's own streams, without routing it again. */
export interface ForwardedRequest {
  subject: string;
  reply: string;
  hdr: Buffer | null;
  payload: Buffer;
  hops: number;
  local: boolean;
}
