// The meta group's state machine (nats-server's jetStreamCluster assignments): which streams
// and consumers exist and which peers hold their replicas. Every JetStream server applies the
// same committed ops in the same order and gets the same state; nothing here reads a clock, a
// random source or the disk. Ops are values (nats-server's entryOp vocabulary: assignStream,
// updateStream, removeStream, assignConsumer, removeConsumer, peer removal), encoded as one
// type byte plus JSON: the meta log is small and not on a hot path.
//
// What the local server does about a change (start a replica, stop one) is not decided here:
// apply() returns what changed, and the caller acts on it for the groups it is a member of.

/** A Raft group: its name, its peers (ids), where its data lives. */
export interface RaftGroupInfo {
  name: string;
  peers: string[];
  store: "file" | "memory";
  cluster?: string;
  /** The peer that should lead first (the meta leader's pick). */
  preferred?: string;
  /** The storage identity of each peer when the group was made (raft/identity.ts): the
   *  group's first membership pins them, so a server wiped since comes back as a new member. */
  ids?: Record<string, string>;
}

export interface StreamAssignment {
  /** The stream's configuration as the API gave it (the StreamConfig JSON object). */
  config: { name: string; [k: string]: unknown };
  group: RaftGroupInfo;
  /** Creation time, ns since the epoch, chosen by the proposer. */
  created: number;
  /** Who asked, for the reply: the request's reply subject (only the proposer answers). */
  reply?: string;
}

export interface ConsumerAssignment {
  stream: string;
  name: string;
  config: { [k: string]: unknown };
  group: RaftGroupInfo;
  created: number;
  reply?: string;
}

export type MetaOp =
  | { op: "assign_stream"; sa: StreamAssignment }
  | { op: "update_stream"; sa: StreamAssignment }
  | { op: "remove_stream"; stream: string; reply?: string }
  | { op: "assign_consumer"; ca: ConsumerAssignment }
  | { op: "remove_consumer"; stream: string; name: string; reply?: string }
  /** A server leaves the cluster: it is dropped from every group it was in (the meta leader
   *  proposes replacements separately). */
  | { op: "remove_peer"; peer: string }
  /** SERVER.REMOVE: the server is never added back to the meta group by itself (a new
   *  JetStream server that appears is, MetaGroup.admitJoiners). */
  | { op: "forget_peer"; peer: string };

/** What one applied op changed; `error` when it was refused (state unchanged). */
export type MetaChange =
  | { kind: "stream_added"; sa: StreamAssignment }
  | { kind: "stream_updated"; sa: StreamAssignment; before: StreamAssignment }
  | { kind: "stream_removed"; sa: StreamAssignment }
  | { kind: "consumer_added"; ca: ConsumerAssignment }
  | { kind: "consumer_removed"; ca: ConsumerAssignment }
  | { kind: "peer_removed"; peer: string; groups: string[] }
  | { kind: "noop" }
  | { kind: "error"; code: "stream_exists" | "stream_not_found" | "consumer_exists" | "consumer_not_found"; description: string };

const OP_CODES: Record<MetaOp["op"], number> = {
  assign_stream: 1,
  update_stream: 2,
  remove_stream: 3,
  assign_consumer: 4,
  remove_consumer: 5,
  remove_peer: 6,
  forget_peer: 7,
};
const OP_NAMES = new Map(Object.entries(OP_CODES).map(([k, v]) => [v, k as MetaOp["op"]]));

export function encodeMetaOp(op: MetaOp): Buffer {
  const body = Buffer.from(JSON.stringify(op), "utf8");
  const out = Buffer.allocUnsafe(1 + body.length);
  out[0] = OP_CODES[op.op];
  body.copy(out, 1);
  return out;
}

/** Decodes an op; throws on anything that is not one (a corrupt entry must stop the node,
 *  never be skipped). */
export function decodeMetaOp(buf: Uint8Array): MetaOp {
  if (buf.length < 2) throw new Error("meta op: too short");
  const name = OP_NAMES.get(buf[0]!);
  if (name === undefined) throw new Error(`meta op: unknown type ${buf[0]}`);
  const op = JSON.parse(Buffer.from(buf.buffer, buf.byteOffset + 1, buf.length - 1).toString("utf8")) as MetaOp;
  if (typeof op !== "object" || op === null || op.op !== name) throw new Error("meta op: type and body disagree");
  return op;
}

function sameConfig(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

export class MetaState {
  /** Servers taken out by SERVER.REMOVE (forget_peer): never re-admitted by themselves. */
  readonly removedPeers = new Set<string>();
  /** Streams by name, each with its consumers by name. */
  private readonly streams = new Map<string, { sa: StreamAssignment; consumers: Map<string, ConsumerAssignment> }>();

  get streamCount(): number {
    return this.streams.size;
  }

  stream(name: string): StreamAssignment | undefined {
    return this.streams.get(name)?.sa;
  }

  consumer(stream: string, name: string): ConsumerAssignment | undefined {
    return this.streams.get(stream)?.consumers.get(name);
  }

  streamNames(): string[] {
    return [...this.streams.keys()].sort();
  }

  consumerNames(stream: string): string[] {
    const s = this.streams.get(stream);
    return s === undefined ? [] : [...s.consumers.keys()].sort();
  }

  /** Streams and HA assets per peer, for placement. */
  load(): { streams: Map<string, number>; ha: Map<string, number> } {
    const streams = new Map<string, number>();
    const ha = new Map<string, number>();
    for (const { sa } of this.streams.values()) {
      for (const p of sa.group.peers) {
        streams.set(p, (streams.get(p) ?? 0) + 1);
        if (sa.group.peers.length > 1) ha.set(p, (ha.get(p) ?? 0) + 1);
      }
    }
    return { streams, ha };
  }

  /** Every group the peer belongs to (streams and consumers). */
  groupsOf(peer: string): RaftGroupInfo[] {
    const out: RaftGroupInfo[] = [];
    for (const s of this.streams.values()) {
      if (s.sa.group.peers.includes(peer)) out.push(s.sa.group);
      for (const c of s.consumers.values()) if (c.group.peers.includes(peer)) out.push(c.group);
    }
    return out;
  }

  apply(op: MetaOp): MetaChange {
    switch (op.op) {
      case "assign_stream": {
        const name = op.sa.config.name;
        const cur = this.streams.get(name);
        if (cur !== undefined) {
          // The same assignment again (a retried proposal) changes nothing.
          if (sameConfig(cur.sa.config, op.sa.config) && cur.sa.group.name === op.sa.group.name) return { kind: "noop" };
          return { kind: "error", code: "stream_exists", description: "stream name already in use with a different configuration" };
        }
        this.streams.set(name, { sa: op.sa, consumers: new Map() });
        return { kind: "stream_added", sa: op.sa };
      }
      case "update_stream": {
        const cur = this.streams.get(op.sa.config.name);
        if (cur === undefined) return { kind: "error", code: "stream_not_found", description: "stream not found" };
        const before = cur.sa;
        cur.sa = op.sa;
        return { kind: "stream_updated", sa: op.sa, before };
      }
      case "remove_stream": {
        const cur = this.streams.get(op.stream);
        if (cur === undefined) return { kind: "error", code: "stream_not_found", description: "stream not found" };
        this.streams.delete(op.stream);
        return { kind: "stream_removed", sa: cur.sa };
      }
      case "assign_consumer": {
        const s = this.streams.get(op.ca.stream);
        if (s === undefined) return { kind: "error", code: "stream_not_found", description: "stream not found" };
        const cur = s.consumers.get(op.ca.name);
        if (cur !== undefined && cur.group.name !== op.ca.group.name) {
          return { kind: "error", code: "consumer_exists", description: "consumer already exists" };
        }
        s.consumers.set(op.ca.name, op.ca);
        return { kind: "consumer_added", ca: op.ca };
      }
      case "remove_consumer": {
        const s = this.streams.get(op.stream);
        const cur = s?.consumers.get(op.name);
        if (s === undefined || cur === undefined) return { kind: "error", code: "consumer_not_found", description: "consumer not found" };
        s.consumers.delete(op.name);
        return { kind: "consumer_removed", ca: cur };
      }
      case "remove_peer": {
        const groups: string[] = [];
        for (const s of this.streams.values()) {
          if (dropPeer(s.sa.group, op.peer)) groups.push(s.sa.group.name);
          for (const c of s.consumers.values()) if (dropPeer(c.group, op.peer)) groups.push(c.group.name);
        }
        return { kind: "peer_removed", peer: op.peer, groups };
      }
      case "forget_peer":
        this.removedPeers.add(op.peer);
        return { kind: "noop" };
    }
  }

  /** The whole state, for a meta snapshot: streams in name order, consumers in name order. */
  snapshot(): Buffer {
    const out: Array<{ sa: StreamAssignment; consumers: ConsumerAssignment[] }> = [];
    for (const name of this.streamNames()) {
      const s = this.streams.get(name)!;
      out.push({ sa: s.sa, consumers: this.consumerNames(name).map((c) => s.consumers.get(c)!) });
    }
    // The removed servers ride along in an object form; a plain list is the older form.
    return Buffer.from(JSON.stringify(this.removedPeers.size === 0 ? out : { streams: out, removed: [...this.removedPeers].sort() }), "utf8");
  }

  static restore(buf: Uint8Array): MetaState {
    const m = new MetaState();
    type Item = { sa: StreamAssignment; consumers: ConsumerAssignment[] };
    const v = JSON.parse(Buffer.from(buf.buffer, buf.byteOffset, buf.length).toString("utf8")) as Item[] | { streams: Item[]; removed: string[] };
    const list = Array.isArray(v) ? v : v.streams;
    if (!Array.isArray(list)) throw new Error("meta snapshot: not a list");
    if (!Array.isArray(v) && Array.isArray(v.removed)) for (const r of v.removed) if (typeof r === "string") m.removedPeers.add(r);
    for (const e of list) {
      const consumers = new Map<string, ConsumerAssignment>();
      for (const c of e.consumers) consumers.set(c.name, c);
      m.streams.set(e.sa.config.name, { sa: e.sa, consumers });
    }
    return m;
  }
}

function dropPeer(g: RaftGroupInfo, peer: string): boolean {
  const i = g.peers.indexOf(peer);
  if (i < 0) return false;
  g.peers.splice(i, 1);
  if (g.preferred === peer) delete g.preferred;
  return true;
}
