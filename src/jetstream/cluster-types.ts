// What clustered JetStream (cluster-api.ts) needs of the meta group running on this server
// (src/jscluster/meta-group.ts), as types of this layer: jetstream/ does not import
// jscluster/, the composition root hands the meta group over (JetStreamService
// .attachClusterMeta). The shapes follow src/jscluster/meta.ts.

import type { ConsumerSeed, ForwardedRequest } from "../contracts/jetstream.js";
import type { StreamStore } from "../storage/types.js";
import type { Stream } from "../stream/stream.js";

/** A Raft group: name, peers (server names), store; the preferred peer answers a create. */
export interface ClusterGroup {
  name: string;
  peers: string[];
  store: "file" | "memory";
  cluster?: string;
  preferred?: string;
}

export interface ClusterStreamAssignment {
  /** The stream's config in wire JSON (configToWire of the checked config). */
  config: { name: string; [k: string]: unknown };
  group: ClusterGroup;
  /** Creation time, ns since the epoch. */
  created: number;
  /** The request's reply subject: the responder answers it once the op applied. */
  reply?: string;
}

export interface ClusterConsumerAssignment {
  stream: string;
  name: string;
  config: { [k: string]: unknown };
  group: ClusterGroup;
  created: number;
  reply?: string;
}

export type ClusterOp =
  | { op: "assign_stream"; sa: ClusterStreamAssignment }
  | { op: "update_stream"; sa: ClusterStreamAssignment }
  | { op: "remove_stream"; stream: string; reply?: string }
  | { op: "assign_consumer"; ca: ClusterConsumerAssignment }
  | { op: "remove_consumer"; stream: string; name: string; reply?: string }
  | { op: "remove_peer"; peer: string }
  | { op: "forget_peer"; peer: string };

export type ClusterChange =
  | { kind: "stream_added"; sa: ClusterStreamAssignment }
  | { kind: "stream_updated"; sa: ClusterStreamAssignment; before: ClusterStreamAssignment }
  | { kind: "stream_removed"; sa: ClusterStreamAssignment }
  | { kind: "consumer_added"; ca: ClusterConsumerAssignment }
  | { kind: "consumer_removed"; ca: ClusterConsumerAssignment }
  | { kind: "peer_removed"; peer: string; groups: string[] }
  | { kind: "noop" }
  | { kind: "error"; code: string; description: string };

/** A request carried to another server over the peer channel (the FWD frame). */
export type ClusterForward = ForwardedRequest;

/** A replicated stream's Raft group on this server (src/jscluster/stream-group.ts). */
export interface ClusterStreamGroup<S> {
  readonly stream: S;
  readonly leader: string;
  readonly isLeader: boolean;
  clusterInfo(): Record<string, unknown>;
  purge(req: { filter?: string; seq?: number; keep?: number }): Promise<number> | number;
  deleteMsg(seq: number, erase: boolean): Promise<boolean> | boolean;
  stepdown(): Promise<unknown> | unknown;
  /** The meta group assigned new members (the leader changes the Raft voters to them). */
  setPeers?(peers: readonly string[]): void;
  /** /healthz: "" when current, else nats-server's reason. */
  healthError?(): string;
  /** Lame duck / shutdown: hand leadership to a caught-up peer (bounded). */
  handOff?(boundMs: number): Promise<void>;
  /** This server was removed: resolves once a leader here handed over (bounded). */
  leave?(boundMs: number): Promise<void>;
  /** deleted: the group is gone from this server for good (its Raft state is dropped). */
  close(deleted?: boolean): Promise<void> | void;
  /** The Raft voters now. */
  readonly voters?: string[];
  /** Leading and taking publishes (its term's no-op applied, not catching up). */
  readonly isTakingPublishes?: boolean;
  /** The agreed state of the stream's consumers (a stream becoming plain keeps them). */
  consumerSeeds?(): ConsumerSeed[];
  /** Resolves once a quorum confirmed this replica still leads and it applied what was
   *  committed then (ReadIndex); rejects otherwise. Absent: reads are answered at once. */
  confirmRead?(): Promise<void>;
}

/** The meta group as clustered JetStream uses it. */
export interface ClusterMeta {
  readonly serverName: string;
  readonly clusterName: string;
  /** The group started (bootstrap done). */
  readonly started: boolean;
  /** "" when there is none. */
  readonly leaderName: string;
  readonly isLeader: boolean;
  readonly state: {
    readonly streamCount: number;
    stream(name: string): ClusterStreamAssignment | undefined;
    streamNames(): string[];
    consumer(stream: string, name: string): ClusterConsumerAssignment | undefined;
    consumerNames(stream: string): string[];
  };
  proposeWait(op: ClusterOp, timeoutMs: number): Promise<ClusterChange | null>;
  /** existing: members kept from the current placement (scaling up), first. */
  placeStream(req: { replicas: number; storage: "file" | "memory"; maxBytes: number; cluster: string; tags: readonly string[]; existing?: readonly string[] }): { ok: true; group: ClusterGroup } | { ok: false; error: string };
  forward(peer: string, req: ClusterForward): boolean;
  /** /healthz: "" when the meta group has a leader and this server is current with it. */
  healthError?(): string;
  /** Resolves once this server applied every meta op committed when it was called (a
   *  ReadIndex through the meta leader); rejects without one. */
  confirmCurrent?(): Promise<void>;
  /** Stop campaigning everywhere and hand the meta leadership away (bounded). */
  handOff?(boundMs: number): Promise<void>;
  /** The meta group's voters now. */
  metaPeers?(): string[];
  /** nats-server's 8-character peer id of a server name. */
  peerId?(name: string): string;
  /** A group's members without `remove`: a replacement placed when one is available. */
  remapPeers?(req: { peers: readonly string[]; remove: string; storage: "file" | "memory"; maxBytes: number; cluster: string; tags: readonly string[] }): { peers: string[]; replaced: boolean };
  /** Take a server out of the meta group's voters; "" once committed, "inflight" when another
   *  change is in progress, else an error text. */
  removeMetaPeer?(peer: string, timeoutMs: number): Promise<string>;
  isConnected(peer: string): boolean;
  onChange: ((op: ClusterOp, change: ClusterChange, live: boolean) => void) | null;
  onReset: (() => void) | null;
  onForward: ((from: string, req: ClusterForward) => void) | null;
  onLeader: ((leader: string) => void) | null;
  /** Open a replicated stream's group on this server's RaftHost; absent until stream groups
   *  exist (then R>1 is refused). */
  openStreamGroup?<S>(o: {
    group: ClusterGroup;
    open: (proposer: unknown) => S;
    onLeaderChange?: (leader: string) => void;
    /** The plain stream becomes this group (R1→R>1) with these consumers. */
    seed?: readonly ConsumerSeed[];
    /** A new member joining a running group: its Raft node starts with these voters. */
    joinVoters?: readonly string[];
  }): ClusterStreamGroup<S>;
  jszInfo(): Record<string, unknown>;
  close(): void;
}

/** What the API router asks of clustered JetStream. */
export interface ClusterApiHooks {
  /** In the bus callback: true when the request was forwarded or answered here. */
  intercept(subject: string, reply: string, hdr: Buffer | null, payload: Buffer): boolean;
  /** Meta-level requests (and stepdown) on this server: undefined = not clustered handling
   *  (handle locally), null = answered elsewhere (or already), else the reply body (an
   *  object, or JSON text as {raw}). Throws JsApiError for an error reply. */
  handle(t: string[], reply: string, hdr: Buffer | null, payload: Buffer): Promise<Record<string, unknown> | { raw: string } | null | undefined>;
  /** STREAM.INFO's cluster block for a local stream. */
  clusterBlock(name: string): Record<string, unknown>;
  /** STREAM.INFO's `alternates`: the stream and its mirrors with their clusters (nats-server
   *  streamAlternates), or null when it has no mirror. */
  alternates?(name: string): Array<{ name: string; domain?: string; cluster: string }> | null;
  /** Purge / message delete of a replicated stream through its group (undefined: local). */
  purge?(name: string, opts: { filter?: string; seq?: number; keep?: number }): Promise<number> | undefined;
  deleteMsg?(name: string, seq: number, erase: boolean): Promise<boolean> | undefined;
  /** Move a replicated stream's leadership (and with it its consumers') to another replica;
   *  resolves once another leads. An R1 stream: resolves at once. */
  stepdownStream?(name: string): Promise<void>;
  /** A consumer request was handled here (op and tokens as handleConsumerApi got them). */
  consumerDone?(op: string, tokens: string[]): void;
}

/** A replica's store opened and checked before its group (JetStreamService.prepareReplica). */
export interface ReplicaPrep {
  /** null: not a file stream (openReplica makes the store). */
  store: StreamStore | null;
  /** The stream a store's limit removals go to, once it exists. */
  hold: { stream: Stream | null };
  dir: string | null;
  /** The directory held a stream already (a restart), not a new one. */
  recovering: boolean;
  /** Non-empty: the store was damaged and set aside; the group re-syncs. */
  resync: string;
}
