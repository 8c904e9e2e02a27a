// The meta group running on a server (CLUSTERING.md §1.2, §3.8, §3.9): one RaftHost per
// server with its WAL under <store_dir>/_raft, Raft frames carried by RoutePeerTransport over
// the routes, and the `_meta_` group whose state machine is MetaState. Every JetStream server
// of the cluster votes; peer ids are server names.
//
// Bootstrap (nats-server bootstrapRaftNode takes the boot size from the configured routes):
// the group starts once this server plus the tsnats JetStream servers it has heard from over
// routes reach the expected size: the configured routes (this server's own route URL left
// out) plus one, at least what has been seen. A server with no routes configured waits a grace
// period for peers to route to it. The peer set is written to <dir>/meta-peers.json before the
// group starts, so a restart starts the same group at once from its WAL. Peers of a started
// group are fixed: adding or removing meta peers is membership change (issue 18).
//
// Frames on the peer transport are told apart by their first byte: Raft frames (codec
// VERSION 1) go to the RaftHost; HELLO says "a JetStream server named X" (sent to each tsnats
// peer until it answers); FWD carries a $JS.API.META request from a follower to the meta
// leader, which answers the requester's reply subject itself (the reply routes back over
// the routes like any publish).

import { join } from "node:path";
import type { Bus, InternalSubscription } from "../contracts/bus.js";
import { jsErr } from "../contracts/errors.js";
import type { ForwardedRequest } from "../contracts/jetstream.js";
import { RaftHost, type GroupApp, type RaftTransport } from "../raft/host.js";
import { EntryType, joinMembers, LEARNER_MARK, Role, type Entry, type ReadState } from "../raft/types.js";
import { withIdentity } from "../raft/identity.js";
import { admitJoiners, JOIN_CHECK_MS, memberName } from "./meta-join.js";
import type { MetaGroupOptions, PeerChannel, PeerEvents, ServerFacts } from "./meta-options.js";
import { loadIdentity } from "./identity-file.js";
import { MetaReads } from "./meta-read.js";
import { decodeForward, encodeForward, TAG_FWD } from "./meta-forward.js";
import type { Clock, TimerHandle } from "../runtime/clock.js";
import { writeFileAtomicSync, type Fs } from "../runtime/fs.js";
import type { Logger } from "../runtime/log.js";
import type { Random } from "../runtime/random.js";
import type { Scheduler } from "../runtime/sched.js";
import { decodeMetaOp, encodeMetaOp, MetaState, type MetaChange, type MetaOp, type RaftGroupInfo } from "./meta.js";
import { expectedClusterSize, groupName, selectPeers, serverHash, type PeerInfo } from "./placement.js";

export { expectedClusterSize, serverHash };
import type { EntryApplier, Proposer } from "../stream/entry.js";
import type { Stream } from "../stream/stream.js";
import type { ConsumerSeed } from "../contracts/jetstream.js";

export const META_GROUP = "_meta_";
const PEERS_FILE = "meta-peers.json";
const TAG_HELLO = 0xf1;
/** How often the bootstrap looks at who it has heard from (and says hello again). */
const BOOT_POLL_MS = 250;
/** With no routes configured, wait this long for servers that route to us. */
const NO_ROUTES_GRACE_MS = 3000;
/** When the route to the leader closes, the servers after the first by name campaign this
 *  much later. */
const LEADER_LOST_STAGGER_MS = 50;
/** While the bootstrap waits, say so this often. */
const BOOT_WARN_MS = 10_000;
/** A replica not heard from for this long is not current (nats-server lostQuorumInterval). */
const CURRENT_WINDOW_MS = 10_000;
/** A stepdown is answered once leadership moved, or with an error after this long. */
const STEPDOWN_TIMEOUT_MS = 3000;
/** The meta state is snapshotted after this many applied ops, or this often when any was
 *  applied since the last one: the shared WAL frees a segment only once every group's
 *  snapshot has passed it, so a meta log that is never snapshotted would pin them all. */
const META_SNAPSHOT_ENTRIES = 256;
const META_SNAPSHOT_MS = 60_000;

export const META_STEPDOWN_SUBJECT = "$JS.API.META.LEADER.STEPDOWN";
/** Subscribed only by a clustered server (an unclustered one has no responder, as nats-server
 *  has none outside the system account); handed to onForward like a forwarded request. */
export const SERVER_REMOVE_SUBJECT = "$JS.API.SERVER.REMOVE";
const STEPDOWN_TYPE = "io.nats.jetstream.api.v1.meta_leader_stepdown_response";

export type { ForwardedRequest };
export { encodeForward, decodeForward };

export type { MetaGroupOptions, PeerChannel, PeerEvents, ServerFacts };

/** nats-server's PeerInfo in /jsz meta_cluster.replicas. */
interface ReplicaInfo {
  name: string;
  current: boolean;
  offline?: boolean;
  active: number;
  peer: string;
}

export class MetaGroup implements GroupApp {
  state = new MetaState();
  private readonly transport: PeerChannel;
  private readonly host: RaftHost;
  private raftReceive: ((from: string, frame: Uint8Array) => void) | null = null;
  /** tsnats JetStream servers heard from (HELLO), ever. */
  private readonly jsPeers = new Set<string>();
  /** Monotonic ms of the last frame from each peer. */
  private readonly lastSeen = new Map<string, number>();
  private readonly connected = new Set<string>();
  private peers: string[] | null = null;
  private leader = "";
  private bootTimer: TimerHandle | null = null;
  private readonly startedMs: number;
  private closed = false;
  private sub: InternalSubscription | null = null;
  private removeSub: InternalSubscription | null = null;
  private pendingStepdowns: Array<{ reply: string; timer: TimerHandle }> = [];
  /** Changes applied since start, for tests and logs. */
  applied = 0;
  /** Called with each applied op's change. live: false while entries that were in the log
   *  before this start are applied again (a restart: nobody waits for their replies). */
  onChange: ((op: MetaOp, change: MetaChange, live: boolean) => void) | null = null;
  /** The state was replaced by a snapshot (the local side reconciles with it). */
  onReset: (() => void) | null = null;
  /** A $JS.API request another server forwarded here. */
  onForward: ((from: string, req: ForwardedRequest) => void) | null = null;
  /** The meta leader changed (leaderless: ""). */
  onLeader: ((leader: string) => void) | null = null;
  /** What each JetStream peer said about itself in HELLO. */
  private readonly facts = new Map<string, ServerFacts & { cluster: string }>();
  private sinceSnap = 0;
  private snapTimer: TimerHandle | null = null;
  private snapLoop: TimerHandle | null = null;
  /** Meta snapshots taken since start (tests). */
  snapshots = 0;
  /** Entries up to this index were in the log at start (replayed, not live). */
  private replayUpTo = 0;
  /** Index of the last meta entry applied here; linearizable reads of the meta state. */
  private appliedIndex = 0;
  private readonly reads: MetaReads;
  /** The running meta group's membership a peer's HELLO gave (before this one started). */
  private heardMeta: string[] | null = null;
  private joinLoop: TimerHandle | null = null;
  private readonly joinTick = (): void => {
    this.joinLoop = null;
    if (this.closed) return;
    this.admitJoiners();
    this.joinLoop = this.o.clock.setTimer(this.joinTick, JOIN_CHECK_MS);
  };

  private admitJoiners(): void {
    if (!this.isLeader) return;
    admitJoiners(this.host, META_GROUP, this.jsPeers, (p) => this.connected.has(p) && !this.state.removedPeers.has(p) && this.facts.get(p)?.cluster === this.o.clusterName(), (m) => this.o.log.info(`JetStream cluster meta group: ${m}`));
  }

  /** This server's storage identity (raft/identity.ts), made at the first start on its disk. */
  readonly identity: string;
  /** Proposals waiting for their entry to apply: index -> term, settle. */
  private readonly waiting = new Map<number, { term: number; settle: (c: MetaChange | null) => void; timer: TimerHandle }>();

  constructor(private readonly o: MetaGroupOptions) {
    this.startedMs = o.clock.monoMs();
    this.transport = o.openChannel({
      frame: (from, frame) => this.frame(from, frame),
      peerUp: (name) => {
        this.connected.add(name);
        this.sendHello(name);
        // Quiet groups it votes in wake: it hears from their leaders at once.
        this.host.peerUp(name);
      },
      peerDown: (name) => {
        this.connected.delete(name);
        // Its frames count again once it introduced itself (HELLO) with its storage identity.
        this.host.ids.setPeer(name, null);
        // The other groups it leads here campaign within ~300 ms (RaftHost.peerDown); the
        // meta group staggers its own campaign below.
        if (!this.closed) this.host.peerDown(name, META_GROUP);
        // The route to the leader closed: do not wait out the election timeout. The first by
        // name of the servers still connected campaigns at once (a pre-vote first, so a leader
        // still reachable by the others keeps its term); the others a moment later. The
        // others may still hold the old leader's lease and ignore that first pre-vote; their
        // own campaign drops the lease, and the two pre-candidates then elect one of them.
        // Both at once would often split the vote and wait out a timeout.
        if (name === this.leader && this.peers !== null && !this.closed) {
          const self = this.o.serverName;
          const first = this.peers.filter((p) => p !== name && (p === self || this.connected.has(p)))[0];
          if (first === self) this.host.campaign(META_GROUP);
          else {
            this.o.clock.setTimer(() => {
              if (!this.closed && (this.leader === name || this.leader === "")) this.host.campaign(META_GROUP);
            }, LEADER_LOST_STAGGER_MS);
          }
        }
      },
    });
    const t: RaftTransport = {
      send: (peer, frame) => this.transport.send(peer, frame),
      backlog: (peer) => this.transport.backlog?.(peer) ?? 0,
      onReceive: (h) => (this.raftReceive = h),
    };
    o.fs.mkdirp(o.dir);
    this.identity = loadIdentity(o.fs, o.dir, o.random);
    this.host = new RaftHost({
      id: o.serverName,
      identity: this.identity,
      log: (m) => o.log.info(`JetStream cluster: ${m}`),
      fs: o.fs,
      dir: o.dir,
      clock: o.clock,
      sched: o.sched,
      random: o.random,
      transport: t,
      tickMs: o.tickMs,
      electionTicks: o.electionTicks,
      heartbeatTicks: o.heartbeatTicks,
    });
    this.reads = new MetaReads({ readIndex: (c) => this.host.readIndex(META_GROUP, c), appliedIndex: () => Math.max(this.appliedIndex, this.host.status(META_GROUP)?.applied ?? 0) }, o.clock);
  }

  /** Resolves once this server has applied every meta op committed when it was called (a
   *  ReadIndex through the meta leader): the meta state here is then at least as new as any
   *  reply a client got for an earlier meta op. Rejects without a meta leader. */
  confirmCurrent(): Promise<void> {
    if (this.peers === null || this.closed) return Promise.reject(new Error("meta group not started"));
    return this.reads.confirm();
  }

  onReadState(rs: ReadState): void {
    this.reads.onReadState(rs);
  }

  /** Start: at once from meta-peers.json, else once enough peers were heard from. */
  start(): void {
    this.sub = this.o.bus.subscribe(META_STEPDOWN_SUBJECT, (_s, reply) => this.stepdownRequest(reply));
    this.removeSub = this.o.bus.subscribe(SERVER_REMOVE_SUBJECT, (subject, reply, hdr, payload) => {
      // Buffers are views valid during the call.
      this.onForward?.(this.o.serverName, { subject, reply, hdr: hdr === null ? null : Buffer.from(hdr), payload: Buffer.from(payload), hops: 0, local: false });
    });
    const saved = this.o.fs.readFile(join(this.o.dir, PEERS_FILE));
    if (saved !== null) {
      const peers = JSON.parse(saved.toString("utf8")) as unknown;
      if (!Array.isArray(peers) || !peers.every((p) => typeof p === "string") || !peers.some((p) => memberName(p) === this.o.serverName)) {
        throw new Error(`${join(this.o.dir, PEERS_FILE)} does not hold this server's meta peers`);
      }
      this.startGroup(peers as string[], "recover");
      return;
    }
    let lastWarn = this.startedMs;
    const poll = (): void => {
      this.bootTimer = null;
      if (this.closed || this.peers !== null) return;
      for (const p of this.transport.peers()) if (!this.jsPeers.has(p)) this.sendHello(p);
      if (this.heardMeta !== null) {
        // The cluster's meta group runs already: take its membership. A server it names (this
        // one with a wiped disk, or one that was slow to bootstrap) starts as that member; a
        // new server starts as a learner, which the leader admits (admitJoiners).
        const named = this.heardMeta.some((m) => memberName(m) === this.o.serverName);
        const self = LEARNER_MARK + withIdentity(this.o.serverName, this.identity);
        this.startGroup(named ? this.heardMeta : [...this.heardMeta, self], named ? "recover" : "join");
        return;
      }
      const seen = this.jsPeers.size + 1;
      // A configured route to a server without JetStream (a connection-only server) names no
      // meta group member.
      const expected = Math.max(this.expectedSize() - (this.transport.nonJetStreamPeers?.().length ?? 0), seen);
      const routesConfigured = this.o.routes.length > 0;
      const now = this.o.clock.monoMs();
      if (seen >= expected && (routesConfigured || now - this.startedMs >= NO_ROUTES_GRACE_MS)) {
        this.startGroup([this.o.serverName, ...this.jsPeers], "bootstrap");
        return;
      }
      if (now - lastWarn >= BOOT_WARN_MS) {
        lastWarn = now;
        this.o.log.warn(`JetStream cluster meta group waiting for peers: heard from [${[this.o.serverName, ...this.jsPeers].sort().join(", ")}], expecting ${expected} JetStream servers (the configured routes and this one)`);
      }
      this.bootTimer = this.o.clock.setTimer(poll, BOOT_POLL_MS);
    };
    this.bootTimer = this.o.clock.setTimer(poll, BOOT_POLL_MS);
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    if (this.bootTimer !== null) this.o.clock.clearTimer(this.bootTimer);
    if (this.joinLoop !== null) this.o.clock.clearTimer(this.joinLoop);
    for (const p of this.pendingStepdowns) this.o.clock.clearTimer(p.timer);
    this.pendingStepdowns = [];
    this.settleAll();
    this.reads.close();
    if (this.snapTimer !== null) this.o.clock.clearTimer(this.snapTimer);
    if (this.snapLoop !== null) this.o.clock.clearTimer(this.snapLoop);
    this.sub?.unsubscribe();
    this.removeSub?.unsubscribe();
    this.transport.close();
    this.host.close();
  }

  expectedSize(): number {
    return expectedClusterSize(this.o.routes, this.o.clusterPort());
  }

  get started(): boolean {
    return this.peers !== null;
  }

  get leaderName(): string {
    return this.leader;
  }

  get isLeader(): boolean {
    return this.peers !== null && this.leader === this.o.serverName;
  }

  /** Propose an op (leader only; throws otherwise). */
  propose(op: MetaOp): number {
    return this.host.propose(META_GROUP, encodeMetaOp(op));
  }

  get serverName(): string {
    return this.o.serverName;
  }

  get clusterName(): string {
    return this.o.clusterName();
  }

  /** The server's RaftHost (stream groups run on it beside the meta group). */
  get raftHost(): RaftHost {
    return this.host;
  }

  /** Propose an op and wait for it to apply here: its change, or null when it did not (this
   *  server lost leadership, the entry was replaced, or timeoutMs passed). Leader only. */
  proposeWait(op: MetaOp, timeoutMs: number): Promise<MetaChange | null> {
    if (!this.isLeader) return Promise.resolve(null);
    let index: number;
    try {
      index = this.propose(op);
    } catch {
      return Promise.resolve(null);
    }
    const term = this.host.status(META_GROUP)?.term ?? 0;
    return new Promise((resolve) => {
      const timer = this.o.clock.setTimer(() => {
        if (this.waiting.get(index)?.timer === timer) this.waiting.delete(index);
        resolve(null);
      }, timeoutMs);
      this.waiting.get(index)?.settle(null);
      this.waiting.set(index, { term, settle: resolve, timer });
    });
  }

  private settleAll(): void {
    for (const w of this.waiting.values()) {
      this.o.clock.clearTimer(w.timer);
      w.settle(null);
    }
    this.waiting.clear();
  }

  /** The JetStream servers placement may pick from: this one and every peer that said
   *  hello (offline when its route is down). */
  placementPeers(): PeerInfo[] {
    const self = this.o.facts ?? { tags: [], maxStore: -1, maxMemory: -1 };
    const out: PeerInfo[] = [
      { id: this.o.serverName, name: this.o.serverName, cluster: this.o.clusterName(), tags: self.tags, offline: false, maxStore: self.maxStore, maxMemory: self.maxMemory, usedStore: 0, usedMemory: 0 },
    ];
    const members = this.metaPeers();
    for (const p of new Set([...members, ...this.jsPeers])) {
      if (p === this.o.serverName) continue;
      // A server removed from the meta group (SERVER.REMOVE) holds nothing new.
      if (this.peers !== null && !members.includes(p)) continue;
      const f = this.facts.get(p);
      out.push({
        id: p,
        name: p,
        cluster: f?.cluster ?? this.o.clusterName(),
        tags: f?.tags ?? [],
        offline: !this.connected.has(p) || f === undefined,
        maxStore: f?.maxStore ?? -1,
        maxMemory: f?.maxMemory ?? -1,
        usedStore: 0,
        usedMemory: 0,
      });
    }
    return out;
  }

  /** Place a new stream's replicas (nats-server selectPeerGroup): its Raft group, or the
   *  10005 text. The first peer is the preferred one (it answers the create). */
  placeStream(req: { replicas: number; storage: "file" | "memory"; maxBytes: number; cluster: string; tags: readonly string[]; existing?: readonly string[] }): { ok: true; group: RaftGroupInfo } | { ok: false; error: string } {
    const r = selectPeers(
      { replicas: req.replicas, cluster: req.cluster === "" ? this.o.clusterName() : req.cluster, tags: req.tags, storage: req.storage, maxBytes: req.maxBytes, existing: req.existing ?? [] },
      this.placementPeers(),
      this.state.load(),
      this.o.random,
    );
    if (!r.ok) return r;
    const group: RaftGroupInfo = { name: groupName("S", req.replicas, req.storage, this.o.random), peers: r.peers, store: req.storage, cluster: req.cluster === "" ? this.o.clusterName() : req.cluster, preferred: r.peers[0] };
    const ids = Object.fromEntries(r.peers.flatMap((p) => { const id = this.host.ids.of(p); return id === undefined ? [] : [[p, id]]; }));
    if (Object.keys(ids).length > 0) group.ids = ids;
    return { ok: true, group };
  }

  /** The meta group's voters now (its membership changes with SERVER.REMOVE). */
  metaPeers(): string[] {
    if (this.peers === null) return [];
    return this.host.status(META_GROUP)?.voters ?? this.peers;
  }

  /** nats-server's 8-character peer id of a server. */
  peerId(name: string): string {
    return serverHash(name);
  }

  /** A stream group without `peer`: a replacement picked by placement (online, not in the
   *  group, matching the stream's placement tags and storage), or the group one smaller when
   *  there is none (nats-server 2.9/2.10 remapStreamAssignment). */
  remapPeers(req: { peers: readonly string[]; remove: string; storage: "file" | "memory"; maxBytes: number; cluster: string; tags: readonly string[] }): { peers: string[]; replaced: boolean } {
    const kept = req.peers.filter((p) => p !== req.remove);
    const cands = this.placementPeers().filter((p) => !p.offline && p.id !== req.remove);
    const r = selectPeers(
      { replicas: req.peers.length, cluster: req.cluster === "" ? this.o.clusterName() : req.cluster, tags: req.tags, storage: req.storage, maxBytes: req.maxBytes, existing: kept, ignore: [req.remove] },
      cands,
      this.state.load(),
      this.o.random,
    );
    if (!r.ok || r.peers.length <= kept.length) return { peers: kept, replaced: false };
    return { peers: r.peers, replaced: true };
  }

  /** /healthz: "" when the meta group has a leader and this server is current with it. */
  healthError(): string {
    if (this.peers === null || this.leader === "") return "JetStream has not established contact with a meta leader";
    if (!this.host.isCurrent(META_GROUP, CURRENT_WINDOW_MS)) return "JetStream is not current with the meta leader";
    return "";
  }

  /** Lame duck or shutdown: stop campaigning in every group here (so leadership does not
   *  come back), and hand the meta group's leadership to a connected peer; resolves once
   *  another leads or boundMs passed. */
  async handOff(boundMs: number): Promise<void> {
    this.host.setObserver(true);
    if (!this.isLeader) return;
    const st = this.host.status(META_GROUP);
    if (st === undefined) return;
    let target = "";
    let best = -1;
    for (const p of st.progress) {
      if (p.id === this.o.serverName || !this.connected.has(p.id) || !st.voters.includes(p.id)) continue;
      if (p.match > best) {
        best = p.match;
        target = p.id;
      }
    }
    if (target === "") return;
    try {
      this.host.transferLeader(META_GROUP, target);
    } catch {
      return;
    }
    const end = this.o.clock.monoMs() + boundMs;
    while (this.isLeader && !this.closed && this.o.clock.monoMs() < end) await new Promise<void>((r) => this.o.clock.setTimer(r, 10));
  }

  /** SERVER.REMOVE: take `peer` out of the meta group's voters (a membership change of the
   *  meta log) and wait until it committed. Leader only. Resolves with an error text, or
   *  "" once done; "inflight" when another change is in progress. */
  async removeMetaPeer(peer: string, timeoutMs: number): Promise<string> {
    if (!this.isLeader) return "not the meta leader";
    const voters = this.metaPeers();
    if (!voters.includes(peer)) return "";
    const node = this.host.node(META_GROUP);
    if (node === undefined) return "no meta group";
    if (node.confPending) return "inflight";
    let index: number;
    try {
      index = this.host.proposeConfChange(META_GROUP, voters.filter((v) => v !== peer));
    } catch (e) {
      return (e as Error).message;
    }
    const end = this.o.clock.monoMs() + timeoutMs;
    for (;;) {
      const st = this.host.status(META_GROUP);
      if (st !== undefined && st.commit >= index && !st.voters.includes(peer)) return "";
      if (st === undefined || this.closed || this.o.clock.monoMs() >= end) return "membership change not committed in time";
      await new Promise<void>((r) => this.o.clock.setTimer(r, 20));
    }
  }

  /** Opens a replicated stream's Raft group on this server's RaftHost (stream-groups.ts sets
   *  it: this file does not import the stream group). */
  openStreamGroup?: (o: {
    group: RaftGroupInfo;
    open: (proposer: (applier: EntryApplier) => Proposer) => Stream;
    onLeaderChange?: (leader: string) => void;
    seed?: readonly ConsumerSeed[];
    joinVoters?: readonly string[];
    resync?: string;
  }) => unknown;

  /** Send a request to another server (false when it cannot be reached now). */
  forward(peer: string, req: ForwardedRequest): boolean {
    if (peer === this.o.serverName || !this.connected.has(peer)) return false;
    this.transport.send(peer, encodeForward(req));
    return true;
  }

  /** Peers with a route up now. */
  isConnected(peer: string): boolean {
    return peer === this.o.serverName || this.connected.has(peer);
  }

  /** bootstrap: peers are the names of a new cluster's servers, pinned here to the
   *  identities their HELLOs gave; join: the running group's membership list and this server
   *  as a learner; recover: a saved (or heard) membership list naming this server. */
  private startGroup(peers: string[], how: "bootstrap" | "join" | "recover"): void {
    const sorted = [...new Set(peers.map(memberName))].sort();
    const members = how === "bootstrap" ? this.host.ids.members(sorted) : peers;
    const fresh = how !== "recover" || this.o.fs.readFile(join(this.o.dir, PEERS_FILE)) === null;
    if (fresh) writeFileAtomicSync(this.o.fs, this.o.dir, PEERS_FILE, Buffer.from(JSON.stringify(members)));
    this.peers = sorted;
    this.host.addGroup(META_GROUP, members, this);
    this.joinLoop = this.o.clock.setTimer(this.joinTick, JOIN_CHECK_MS);
    this.replayUpTo = this.host.status(META_GROUP)?.lastIndex ?? 0;
    this.host.start();
    const every = this.o.snapshotMs ?? META_SNAPSHOT_MS;
    const loop = (): void => {
      this.snapLoop = null;
      if (this.closed) return;
      if (this.sinceSnap > 0) this.takeSnapshot();
      this.snapLoop = this.o.clock.setTimer(loop, every);
    };
    this.snapLoop = this.o.clock.setTimer(loop, every);
    this.o.log.info(`JetStream cluster meta group ${how === "bootstrap" ? "bootstrapped" : how === "join" ? "joined (a learner until the leader admits it)" : "recovered"} with peers [${sorted.join(", ")}]`);
  }

  private takeSnapshot(): void {
    this.snapTimer = null;
    if (this.closed || this.peers === null) return;
    try {
      this.host.snapshot(META_GROUP);
      this.sinceSnap = 0;
      this.snapshots++;
    } catch (e) {
      this.o.log.error(`JetStream cluster meta snapshot failed: ${(e as Error).message}`);
    }
  }

  // ---- frames ----

  /** ask: the peer answers with its own HELLO (its identity is not known here). */
  private sendHello(peer: string, ask = false): void {
    const f0 = this.o.facts ?? { tags: [], maxStore: -1, maxMemory: -1 };
    // A started meta group's voters (with their identities) tell a new or wiped server what
    // to join.
    const node = this.peers !== null ? this.host.node(META_GROUP) : undefined;
    const meta = node !== undefined ? joinMembers(node.voters, [], node.ids) : undefined;
    const body = Buffer.from(JSON.stringify({ name: this.o.serverName, js: true, cluster: this.o.clusterName(), tags: f0.tags, max_store: f0.maxStore, max_mem: f0.maxMemory, sid: this.identity, ...(meta !== undefined ? { meta } : {}), ...(ask ? { ask: true } : {}) }));
    const f = Buffer.allocUnsafe(1 + body.length);
    f[0] = TAG_HELLO;
    body.copy(f, 1);
    this.transport.send(peer, f);
  }

  private frame(from: string, frame: Buffer): void {
    if (this.closed || frame.length === 0) return;
    this.lastSeen.set(from, this.o.clock.monoMs());
    const tag = frame[0]!;
    if (tag === TAG_HELLO) {
      try {
        const h = JSON.parse(frame.subarray(1).toString("utf8")) as { cluster?: unknown; tags?: unknown; max_store?: unknown; max_mem?: unknown; sid?: unknown; ask?: unknown; meta?: unknown };
        this.host.ids.setPeer(from, typeof h.sid === "string" ? h.sid : null);
        if (h.ask === true) this.sendHello(from);
        if (this.peers === null && Array.isArray(h.meta) && h.meta.length > 0 && h.meta.every((x) => typeof x === "string") && h.cluster === this.o.clusterName()) this.heardMeta = h.meta as string[];
        this.facts.set(from, {
          cluster: typeof h.cluster === "string" ? h.cluster : this.o.clusterName(),
          tags: Array.isArray(h.tags) ? h.tags.filter((t): t is string => typeof t === "string") : [],
          maxStore: typeof h.max_store === "number" ? h.max_store : -1,
          maxMemory: typeof h.max_mem === "number" ? h.max_mem : -1,
        });
      } catch {
        // an older HELLO: no facts
      }
      if (!this.jsPeers.has(from)) {
        this.jsPeers.add(from);
        // It may not have heard from us yet.
        this.sendHello(from);
      }
      return;
    }
    if (tag === TAG_FWD) {
      const req = decodeForward(frame);
      if (req === null) return;
      if (req.subject === META_STEPDOWN_SUBJECT) this.stepdownRequest(req.reply, true);
      else this.onForward?.(from, req);
      return;
    }
    // Raft traffic from a peer whose identity is unknown here (a route flap seen on this side
    // only): its frames are not admitted to groups pinning its identity, so ask it to
    // introduce itself again (at most once a second).
    if (this.host.ids.of(from) === undefined) this.askHello(from);
    this.raftReceive?.(from, frame);
  }

  private readonly asked = new Map<string, number>();
  private askHello(peer: string): void {
    const now = this.o.clock.monoMs();
    if (now - (this.asked.get(peer) ?? -Infinity) < 1000) return;
    this.asked.set(peer, now);
    this.sendHello(peer, true);
  }

  // ---- GroupApp ----

  apply(entries: Entry[]): void {
    for (const e of entries) {
      this.appliedIndex = e.index;
      if (e.type === EntryType.ConfChange && !this.metaPeers().includes(this.o.serverName)) {
        this.o.log.error("JetStream cluster: this server was removed from the meta group (SERVER.REMOVE)");
      }
      if (e.type !== EntryType.Normal || e.data.length === 0) continue;
      const op = decodeMetaOp(e.data);
      const change = this.state.apply(op);
      this.applied++;
      this.sinceSnap++;
      this.onChange?.(op, change, e.index > this.replayUpTo);
      const w = this.waiting.get(e.index);
      if (w !== undefined) {
        this.waiting.delete(e.index);
        this.o.clock.clearTimer(w.timer);
        w.settle(e.term === w.term ? change : null);
      }
    }
    this.reads.onApplied();
    this.maybeSnapshot();
  }

  snapshot(): Uint8Array {
    return this.state.snapshot();
  }

  private maybeSnapshot(): void {
    // Not from inside apply: the host labels a snapshot with the index it has advanced to.
    if (this.snapTimer === null && this.sinceSnap >= (this.o.snapshotEntries ?? META_SNAPSHOT_ENTRIES)) {
      this.snapTimer = this.o.clock.setTimer(() => this.takeSnapshot(), 0);
    }
  }

  restore(data: Uint8Array): void {
    this.state = MetaState.restore(data);
    this.onReset?.();
  }

  onLeaderChange(leader: string): void {
    const was = this.leader;
    this.leader = leader;
    if (leader === was) return;
    if (was === this.o.serverName) this.settleAll();
    this.onLeader?.(leader);
    if (leader === this.o.serverName) this.o.log.info("Self is new JetStream cluster metadata leader");
    else if (leader !== "") this.o.log.info(`JetStream cluster new metadata leader: ${leader}/${this.o.clusterName()}`);
    else this.o.log.warn("JetStream cluster has no metadata leader");
    if (was === this.o.serverName && leader !== this.o.serverName) {
      const done = this.pendingStepdowns;
      this.pendingStepdowns = [];
      for (const p of done) {
        this.o.clock.clearTimer(p.timer);
        this.respond(p.reply, { type: STEPDOWN_TYPE, success: true });
      }
    }
  }

  onFailed(reason: string): void {
    this.o.log.error(`JetStream cluster meta group failed: ${reason}`);
  }

  onResync(reason: string): void {
    this.o.log.error(`JetStream cluster meta group: ${reason}: its Raft state here is set aside; it re-syncs from its peers and does not vote until caught up`);
  }

  // ---- $JS.API.META.LEADER.STEPDOWN ----

  private respond(reply: string, obj: unknown): void {
    if (reply === "") return;
    this.o.bus.publish(reply, "", null, Buffer.from(JSON.stringify(obj)));
  }

  private stepdownRequest(reply: string, forwarded = false): void {
    if (this.closed) return;
    if (this.peers === null || this.leader === "") {
      // Leaderless: every server that hears it says so (nats-server isLeaderless).
      if (!forwarded) this.respond(reply, { type: STEPDOWN_TYPE, error: jsErr("JSClusterNotAvailErr") });
      return;
    }
    if (this.leader !== this.o.serverName) {
      // Only the leader answers; a request that reached a follower goes to it.
      if (forwarded) return;
      this.transport.send(this.leader, encodeForward({ subject: META_STEPDOWN_SUBJECT, reply, hdr: null, payload: Buffer.alloc(0), hops: 1, local: false }));
      return;
    }
    const st = this.host.status(META_GROUP)!;
    const self = this.o.serverName;
    let target = "";
    let best = -1;
    for (const p of st.progress) {
      if (p.id === self || !this.connected.has(p.id)) continue;
      if (p.match > best) {
        best = p.match;
        target = p.id;
      }
    }
    if (target === "") {
      this.respond(reply, { type: STEPDOWN_TYPE, error: { code: 500, err_code: 10041, description: "no peers to transfer leadership to" } });
      return;
    }
    const timer = this.o.clock.setTimer(() => {
      const i = this.pendingStepdowns.findIndex((p) => p.timer === timer);
      if (i < 0) return;
      this.pendingStepdowns.splice(i, 1);
      this.respond(reply, { type: STEPDOWN_TYPE, error: { code: 500, err_code: 10041, description: "leadership transfer timed out" } });
    }, STEPDOWN_TIMEOUT_MS);
    this.pendingStepdowns.push({ reply, timer });
    try {
      this.host.transferLeader(META_GROUP, target);
    } catch (e) {
      this.o.clock.clearTimer(timer);
      this.pendingStepdowns.pop();
      this.respond(reply, { type: STEPDOWN_TYPE, error: { code: 500, err_code: 10041, description: (e as Error).message } });
    }
  }

  // ---- /jsz ----

  /** nats-server 2.9's MetaClusterInfo: name, leader, peer, replicas, cluster_size; as 2.9.10
   *  prints it, only the leader lists replicas (the others, each current when heard from
   *  lately and caught up to the commit, active = ns since last heard from). */
  jszInfo(): Record<string, unknown> {
    const out: Record<string, unknown> = { name: this.o.clusterName() };
    if (this.peers === null) {
      out["cluster_size"] = Math.max(this.expectedSize(), this.jsPeers.size + 1);
      return out;
    }
    const peers = this.metaPeers();
    const leader = this.leader;
    if (leader !== "") {
      out["leader"] = leader;
      out["peer"] = serverHash(leader);
    }
    const st = this.host.status(META_GROUP);
    if (st !== undefined && st.role === Role.Leader && leader === this.o.serverName) {
      const now = this.o.clock.monoMs();
      const match = new Map<string, number>();
      for (const p of st.progress) match.set(p.id, p.match);
      const replicas: ReplicaInfo[] = [];
      for (const name of peers) {
        if (name === leader) continue;
        const seen = this.lastSeen.get(name);
        const ago = seen === undefined ? -1 : now - seen;
        const current = ago >= 0 && ago < CURRENT_WINDOW_MS && (match.get(name) ?? 0) >= st.commit;
        const r: ReplicaInfo = { name, current, active: ago < 0 ? 0 : Math.round(ago * 1_000_000), peer: serverHash(name) };
        if (!this.connected.has(name)) r.offline = true;
        replicas.push(r);
      }
      if (replicas.length > 0) out["replicas"] = replicas;
    }
    out["cluster_size"] = peers.length;
    return out;
  }
}

/** What the composition root hands over to start the meta group on a clustered JetStream
 *  server (src/compose.ts). */
export interface MetaWiring {
  serverName: string;
  storeDir: string;
  clusterOpts: { routes: string[] };
  cluster: { readonly name: string; readonly port: number };
  openChannel: (events: PeerEvents) => PeerChannel;
  bus: Bus;
  log: Logger;
  clock: Clock;
  sched: Scheduler;
  random: Random;
  /** The disk the meta group's log lives on (the composition root gives it). */
  fs: Fs;
  facts?: ServerFacts;
  attach(m: MetaGroup): void;
}

export function startMetaGroup(w: MetaWiring): MetaGroup {
  const m = new MetaGroup({
    serverName: w.serverName,
    clusterName: () => w.cluster.name,
    clusterPort: () => w.cluster.port,
    routes: w.clusterOpts.routes,
    dir: join(w.storeDir, "_raft"),
    bus: w.bus,
    log: w.log,
    openChannel: w.openChannel,
    clock: w.clock,
    sched: w.sched,
    random: w.random,
    fs: w.fs,
    facts: w.facts,
  });
  w.attach(m);
  m.start();
  return m;
}
