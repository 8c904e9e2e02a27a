// What the meta group is built with (MetaGroup, meta-group.ts): its options, the channel to
// other tsnats servers, and what a server says about itself in HELLO.
import type { Bus } from "../contracts/bus.js";
import type { Clock } from "../runtime/clock.js";
import type { Fs } from "../runtime/fs.js";
import type { Logger } from "../runtime/log.js";
import type { Random } from "../runtime/random.js";
import type { Scheduler } from "../runtime/sched.js";

/** What a server says about itself in HELLO (placement input on the meta leader). */
export interface ServerFacts {
  tags: string[];
  maxStore: number;
  maxMemory: number;
}

/** The channel to other tsnats servers by name (RoutePeerTransport over the routes, made by
 *  the composition root): frames are views valid only during the call. */
export interface PeerChannel {
  send(peer: string, frame: Uint8Array): void;
  /** Peers reachable now. */
  peers(): string[];
  /** Bytes waiting to leave for peer (queued and in the route's buffers); optional. */
  backlog?(peer: string): number;
  /** Route peers connected now that run without JetStream (not meta group members). */
  nonJetStreamPeers?(): string[];
  close(): void;
}

export interface PeerEvents {
  frame(from: string, frame: Buffer): void;
  peerUp?(name: string): void;
  peerDown?(name: string): void;
}

export interface MetaGroupOptions {
  serverName: string;
  /** The cluster's name now (a dynamic name may change once). */
  clusterName: () => string;
  /** This server's route listen port (known once the cluster started). */
  clusterPort: () => number;
  /** Configured route URLs. */
  routes: readonly string[];
  /** The Raft directory (WAL, snapshots, meta-peers.json). */
  dir: string;
  bus: Bus;
  log: Logger;
  openChannel: (events: PeerEvents) => PeerChannel;
  clock: Clock;
  sched: Scheduler;
  random: Random;
  fs: Fs;
  /** Tags and limits this server announces (placement). */
  facts?: ServerFacts;
  tickMs?: number;
  /** Snapshot after this many applied ops (default 256) or every snapshotMs (default 60 s). */
  snapshotEntries?: number;
  snapshotMs?: number;
  electionTicks?: number;
  heartbeatTicks?: number;
}
