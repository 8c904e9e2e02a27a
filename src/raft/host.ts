// RaftHost: the driver of every Raft group on one server (CLUSTERING.md §3.1, §3.5). One
// timer ticks all groups; groups touched in a turn (a message, a proposal, a tick) are
// processed together: each one's Ready is written to the shared WAL, one fsync covers them
// all, and only then are their messages sent, their committed entries applied and advance()
// called (persist, then send, then apply). A WAL or snapshot error fails the groups it
// touches: they stop voting, acknowledging and leading (RaftNode.fail).
//
// Many groups per server (CLUSTERING.md §3.6): heartbeats, their answers and Quiesce
// messages of every group bound for one peer leave in one coalesced frame per turn
// (heartbeats.ts), and every heartbeat interval each peer gets one such frame even when it is
// empty: the server-wide liveness that stands in for the heartbeats of quiet groups. A group
// idle for quiesceTicks goes quiet (quiesce.ts) and costs nothing per tick; it wakes on a
// proposal or a message, when its leader's server (or, leading, a voter's) has sent nothing
// for an election timeout, or when the route to one closes (peerDown) or opens (peerUp).
import type { Clock, TimerHandle } from "../runtime/clock.js";
import type { Fs } from "../runtime/fs.js";
import type { Random } from "../runtime/random.js";
import type { Scheduler } from "../runtime/sched.js";
import { decodeMessage, encodeMessage } from "./codec.js";
import { decodeHeartbeats, encodeHeartbeats, HEARTBEATS_TAG, isCoalesced, type GroupMsg } from "./heartbeats.js";
import { RaftNode, type RaftStatus } from "./node.js";
import { clearCatchupMark, deleteSnapshotFile, hasCatchupMark, loadSnapshotFile, quarantineSnapshotFile, saveCatchupMark, saveSnapshotFile } from "./snapfile.js";
import { HostIdentities } from "./identities.js";
import { RouteShare } from "./route-share.js";
import { type Entry, emptyMessage, type Message, MsgType, type ReadState, type Ready, type Snapshot, Role } from "./types.js";
import { Wal } from "./wal.js";

/** How Raft frames reach other servers. RoutePeerTransport (src/cluster/peer-transport.ts)
 *  fits: its send() is this send(), and its PeerHandler.frame() calls the receiver. */
export interface RaftTransport {
  /** The caller may write into frame again once the current job (with its microtasks) is
   *  over: a transport that keeps it longer copies it. */
  send(peer: string, frame: Uint8Array): void;
  /** Bytes waiting to leave for peer (queued, in the route's buffer and socket); optional.
   *  Appends and snapshots wait while it is over MAX_PEER_BACKLOG. */
  backlog?(peer: string): number;
  /** Register the receiver; a frame is a view valid only during the call. */
  onReceive(handler: (from: string, frame: Uint8Array) => void): void;
}

/** The replicated state machine of one group. */
export interface GroupApp {
  /** Committed entries, in order, each once per process lifetime (no-ops included). */
  apply(entries: Entry[]): void;
  /** The state as of the last applied entry. */
  snapshot(): Uint8Array;
  /** Replace the state by a snapshot's. */
  restore(data: Uint8Array): void;
  onLeaderChange?(leader: string, term: number): void;
  onReadState?(rs: ReadState): void;
  /** The group failed (disk or checksum error) and no longer takes part. */
  onFailed?(reason: string): void;
  /** Its Raft state on this server was found corrupt at start: the group starts blank and
   *  re-syncs from its peers (no votes until caught up); the app keeps its own state. */
  onResync?(reason: string): void;
  /** Take a snapshot now if it can (the WAL is over its budget and this group's entries keep
   *  its oldest segment); without this the host snapshots the app at its applied index. */
  snapshotNow?(): void;
  /** A frame another member's app sent with RaftHost.sendApp (a view valid during the call). */
  onAppFrame?(from: string, data: Buffer): void;
}

/** Ticks between two looks for members whose server's storage identity changed. */
const REIDENTIFY_TICKS = 5;

/** First byte of an app frame: [0xf3][u16 group length][group][data]. Raft frames start with
 *  their codec version (1). */
export const APP_FRAME_TAG = 0xf3;

export interface RaftHostOptions {
  /** This server's peer id (also its transport address). */
  id: string;
  fs: Fs;
  dir: string;
  clock: Clock;
  sched: Scheduler;
  random: Random;
  transport: RaftTransport;
  tickMs?: number;
  electionTicks?: number;
  heartbeatTicks?: number;
  /** Leader ticks without a proposal before an idle group goes quiet (default: an election
   *  timeout; 0: never). */
  quiesceTicks?: number;
  segmentBytes?: number;
  /** Past this many bytes of WAL segments, the groups that keep the oldest segment are asked
   *  to snapshot so it can be deleted (default 512 MiB; 0: no budget). */
  walBudgetBytes?: number;
  /** This server's storage identity (identity.ts; "" or absent: none). */
  identity?: string;
  /** Where the host reports membership changes it makes itself (re-identifications). */
  log?: (msg: string) => void;
}

export interface RaftHostStats {
  readies: number;
  walSyncs: number;
  framesIn: number;
  framesOut: number;
  badFrames: number;
  unknownGroup: number;
  /** Coalesced frames sent (liveness included) and the messages they carried. */
  heartbeatFramesOut: number;
  heartbeatsOut: number;
  /** Appends and snapshots that waited for a later turn (a peer's per-turn share was used). */
  bulkDeferred: number;
  /** Raft messages dropped because their sender's storage identity is not the one the group
   *  pins to its name (a wiped server's new incarnation, or one not introduced yet). */
  notAdmitted: number;
  /** Members re-identified by a conf change this host proposed. */
  reidentified: number;
}

interface Group {
  name: string;
  node: RaftNode;
  app: GroupApp;
  busy: boolean;
  lastLeader: string;
  lastTerm: number;
  /** Term and vote of the last HardState written to the WAL (synced, or in this turn's sync). */
  hsTerm: number;
  hsVote: string;
  /** Started blank and not caught up when last looked at (the WAL records the end). */
  recovering: boolean;
}

export class RaftHost {
  readonly stats: RaftHostStats = { readies: 0, walSyncs: 0, framesIn: 0, framesOut: 0, badFrames: 0, unknownGroup: 0, heartbeatFramesOut: 0, heartbeatsOut: 0, bulkDeferred: 0, notAdmitted: 0, reidentified: 0 };
  readonly wal: Wal;
  private readonly groups = new Map<string, Group>();
  private readonly dirty = new Set<Group>();
  private scheduled = false;
  private timer: TimerHandle | null = null;
  private closed = false;
  private readonly tickMs: number;
  /** Monotonic ms of the last frame from each peer (STREAM.INFO `active`). */
  private readonly heard = new Map<string, number>();
  /** Nodes of groups removed in this process, resumed if the group is added again. */
  private readonly detached = new Map<string, RaftNode>();
  private observer = false;
  /** Coalesced messages waiting for this turn's frame, per peer. */
  private readonly hbOut = new Map<string, GroupMsg[]>();
  private hbScheduled = false;
  private readonly hbFlushBound = (): void => this.flushHeartbeats();
  private ticks = 0;
  /** Random at start, in every coalesced frame: a peer's that changes means it restarted. */
  private readonly incarnation: number;
  private readonly peerIncarnation = new Map<string, number>();
  /** Storage identities of this server and its peers (identities.ts): a peer's is set when
   *  it introduces itself, and cleared when it goes away. */
  readonly ids: HostIdentities;
  /** Appends and snapshots share each route fairly between groups (route-share.ts). */
  private readonly share: RouteShare;
  /** Why every group starts blank (the WAL was corrupt at open), or null. */
  private readonly resync: string | null = null;
  private readonly resyncTerms = new Map<string, number>();
  /** Where the corrupt WAL segments were moved ("" if none were). */
  readonly quarantined: string = "";

  constructor(private readonly o: RaftHostOptions) {
    this.tickMs = o.tickMs ?? 100;
    this.share = new RouteShare(o.transport, o.sched, o.clock, this.stats);
    this.ids = new HostIdentities(o.id, o.identity ?? "", this.stats, o.log);
    this.walBudget = o.walBudgetBytes ?? 512 * 1024 * 1024;
    this.incarnation = o.random.int(0x7fffffff);
    this.wal = Wal.open(o.fs, o.dir, o.sched, { segmentBytes: o.segmentBytes });
    const c = this.wal.corrupt;
    if (c !== null) {
      // No group's log here can be trusted past the damage, and which groups had records
      // after it is unknown: every group re-syncs from its peers (addGroup). The terms seen
      // before it are kept (a lower term is never taken again).
      this.resync = `WAL corrupt: ${c.reason}${c.segment !== "" ? ` in ${c.segment}` : ""}`;
      for (const [g, r] of this.wal.recoveredGroups()) this.resyncTerms.set(g, r.hardState.term);
      this.quarantined = this.wal.quarantine();
    }
    o.transport.onReceive((from, frame) => this.receive(from, frame));
  }

  /** A random integer in [0, n) from the host's seeded source (choices among peers). */
  randomInt(n: number): number {
    return this.o.random.int(n);
  }

  /** Bytes of WAL over which groups are made to snapshot, and when it last asked. */
  private readonly walBudget: number = 0;
  private lastForcedMs = -Infinity;
  /** Snapshots forced by the WAL budget (tests, stats). */
  forcedSnapshots = 0;

  /** Over the WAL budget: every group that keeps the oldest segment snapshots (at most once a
   *  second, so a snapshot has time to land and free it). */
  private checkWalBudget(nowMs: number): void {
    if (this.walBudget <= 0 || nowMs - this.lastForcedMs < 1000 || this.wal.totalBytes() <= this.walBudget) return;
    const pinning = this.wal.pinningGroups();
    if (pinning.length === 0) return;
    this.lastForcedMs = nowMs;
    for (const name of pinning) {
      const g = this.groups.get(name);
      if (g === undefined || g.node.failed !== null) continue;
      this.forcedSnapshots++;
      try {
        if (g.app.snapshotNow !== undefined) g.app.snapshotNow();
        else this.snapshot(name);
      } catch {
        // Not possible now (nothing applied past the last snapshot): the next check retries.
      }
    }
    // Segments the new snapshots free are deleted once they are durable.
    this.wal.sync(() => this.wal.releaseSegments());
  }

  /** Start ticking. */
  start(): void {
    if (this.timer !== null || this.closed) return;
    const tick = (): void => {
      if (this.closed) return;
      this.timer = this.o.clock.setTimer(tick, this.tickMs);
      const now = this.o.clock.monoMs();
      const silentMs = (this.o.electionTicks ?? 10) * this.tickMs;
      const within = Math.max(1, Math.round(300 / this.tickMs));
      for (const g of this.groups.values()) {
        const n = g.node;
        if (n.quiesced) {
          // Quiet: only the server-wide liveness of its peers is watched.
          if (!this.peersAlive(n, now, silentMs)) {
            if (n.role === Role.Leader) n.wake(false);
            else n.leaderLost(within);
            this.touch(g);
          }
          continue;
        }
        n.tick();
        this.touch(g);
      }
      if (++this.ticks % (this.o.heartbeatTicks ?? 2) === 0) this.queueLiveness();
      if (this.ticks % REIDENTIFY_TICKS === 0) this.ids.reidentify(this.groups.values(), (g) => this.touch(g as Group));
      this.checkWalBudget(now);
    };
    this.timer = this.o.clock.setTimer(tick, this.tickMs);
  }

  close(): void {
    this.closed = true;
    if (this.timer !== null) this.o.clock.clearTimer(this.timer);
    this.share.close();
    this.timer = null;
    this.wal.close();
  }

  /**
   * Create or recover group `name` with voters `peers`. The app is restored from the group's
   * snapshot; committed entries after it are applied again as they come out of Ready.
   */
  addGroup(name: string, peers: string[], app: GroupApp, resyncWhy?: string): RaftNode {
    if (this.groups.has(name)) throw new Error(`raft group ${name} exists`);
    const kept = this.detached.get(name);
    if (kept !== undefined) return this.resumeGroup(name, kept, app);
    const rec = this.wal.recoveredGroups().get(name);
    let resync = this.resync;
    if (resyncWhy !== undefined && resyncWhy !== "") {
      // The app's own state was set aside (a damaged store): its snapshot describes what is
      // gone, so the group starts with nothing at all.
      resync ??= resyncWhy;
      quarantineSnapshotFile(this.o.fs, this.o.dir, name);
      clearCatchupMark(this.o.fs, this.o.dir, name);
    }
    const loaded = loadSnapshotFile(this.o.fs, this.o.dir, name);
    let snap: Snapshot | null = null;
    if (loaded instanceof Error) {
      resync ??= `snapshot unreadable: ${loaded.message}`;
      quarantineSnapshotFile(this.o.fs, this.o.dir, name);
    } else snap = loaded;
    let entries = rec?.entries ?? [];
    if (snap !== null) {
      entries = entries.filter((e) => e.index > snap.index);
      if (entries.length > 0 && entries[0]!.index !== snap.index + 1) entries = [];
    } else if (rec !== undefined && rec.snapIndex > 0) {
      resync ??= `snapshot ${rec.snapIndex} marked in the WAL is missing`;
    }
    let hardState = rec?.hardState ?? { term: 0, vote: "", commit: 0 };
    if (resync !== null) {
      // Blank but for a snapshot that checks out (it only holds committed state): the log is
      // not trusted, nor the vote. The leader finds the log's end from this node's answers
      // and sends what is missing.
      entries = [];
      hardState = { term: Math.max(hardState.term, this.resyncTerms.get(name) ?? 0), vote: "", commit: snap?.index ?? 0 };
      this.wal.resetGroup(name);
      if (snap !== null) this.wal.markSnapshot(name, snap.index, snap.term);
      this.wal.setHardState(name, hardState);
    }
    if (snap !== null) app.restore(snap.data);
    const node = new RaftNode(
      {
        id: this.o.id,
        peers,
        electionTicks: this.o.electionTicks ?? 10,
        heartbeatTicks: this.o.heartbeatTicks ?? 2,
        quiesceTicks: this.o.quiesceTicks ?? this.o.electionTicks ?? 10,
        random: this.o.random,
        identity: this.o.identity ?? "",
      },
      { hardState, snapshot: snap, entries, applied: snap?.index ?? 0, recovering: resync !== null || rec?.recovering === true },
    );
    node.observer = this.observer;
    const hs = node.hardState();
    const g: Group = { name, node, app, busy: false, lastLeader: "", lastTerm: 0, hsTerm: hs.term, hsVote: hs.vote, recovering: node.recovering };
    this.groups.set(name, g);
    if (resync !== null) app.onResync?.(resync);
    this.touch(g);
    return node;
  }

  /** Stop driving group `name` (its WAL records and snapshot stay). The node is kept: adding
   *  the group again in this process resumes it (the WAL as read at open is stale by then). */
  removeGroup(name: string): void {
    const g = this.groups.get(name);
    if (g === undefined) return;
    this.groups.delete(name);
    this.dirty.delete(g);
    this.detached.set(name, g.node);
  }

  /** The group is gone from this server for good (its stream deleted here, or a replicated
   *  stream turned plain): stop driving it and drop its Raft state (WAL records, snapshot). */
  deleteGroup(name: string): void {
    this.removeGroup(name);
    this.detached.delete(name);
    this.wal.forgetGroup(name);
    deleteSnapshotFile(this.o.fs, this.o.dir, name);
    clearCatchupMark(this.o.fs, this.o.dir, name);
    this.wal.sync(() => this.wal.releaseSegments());
  }

  hasGroup(name: string): boolean {
    return this.groups.has(name);
  }

  /** Groups never campaign (lame duck); applies to groups added later too. */
  setObserver(on: boolean): void {
    this.observer = on;
    for (const g of this.groups.values()) g.node.observer = on;
  }

  /** The group here is caught up (RaftNode.isCurrent) and, following, heard from its leader
   *  within windowMs. */
  isCurrent(group: string, windowMs: number): boolean {
    const n = this.groups.get(group)?.node;
    if (n === undefined || !n.isCurrent()) return false;
    if (n.role === Role.Leader) return true;
    const seen = this.lastHeardMs(n.lead);
    return seen >= 0 && this.o.clock.monoMs() - seen < windowMs;
  }

  /** Monotonic ms when a frame from peer last arrived (-1: never). */
  lastHeardMs(peer: string): number {
    return this.heard.get(peer) ?? -1;
  }

  /** A group removed earlier in this process is added again: the new app gets the node's
   *  snapshot and the entries the old app had applied after it. */
  private resumeGroup(name: string, node: RaftNode, app: GroupApp): RaftNode {
    this.detached.delete(name);
    const hs = node.hardState();
    const g: Group = { name, node, app, busy: false, lastLeader: "", lastTerm: 0, hsTerm: hs.term, hsVote: hs.vote, recovering: node.recovering };
    this.groups.set(name, g);
    if (node.snapshot !== null) app.restore(node.snapshot.data);
    const lo = node.log.snapIndex + 1;
    const hi = node.log.applied;
    if (hi >= lo) app.apply(node.log.slice(lo, hi + 1, Infinity));
    this.touch(g);
    return node;
  }

  node(group: string): RaftNode | undefined {
    return this.groups.get(group)?.node;
  }

  status(group: string): RaftStatus | undefined {
    return this.groups.get(group)?.node.status();
  }

  /** Propose data in group (leader only; throws RaftError otherwise). Returns its index. */
  propose(group: string, data: Uint8Array): number {
    const g = this.mustGroup(group);
    const i = g.node.propose(data);
    this.touch(g);
    return i;
  }

  /** Change group's voters by one server, and its learners (leader only;
   *  RaftNode.proposeConfChange). learners undefined: the current ones stay. A new member is
   *  pinned to the storage identity its server introduced itself with, if known. */
  proposeConfChange(group: string, voters: readonly string[], learners?: readonly string[]): number {
    const g = this.mustGroup(group);
    const n = g.node;
    const ls = learners ?? n.learners;
    const fresh = new Map<string, string | undefined>();
    for (const m of [...voters, ...ls]) if (!n.voters.includes(m) && !n.learners.includes(m)) fresh.set(m, this.ids.of(m));
    const i = n.proposeConfChange(voters, ls, fresh);
    this.touch(g);
    return i;
  }

  transferLeader(group: string, target: string): void {
    const g = this.mustGroup(group);
    g.node.transferLeader(target);
    this.touch(g);
  }

  readIndex(group: string, context: Uint8Array): void {
    const g = this.mustGroup(group);
    g.node.readIndex(context);
    this.touch(g);
  }

  /** Start an election in group now (e.g. the route to its leader closed). */
  campaign(group: string): void {
    const g = this.mustGroup(group);
    g.node.campaign();
    this.touch(g);
  }

  /** The route to peer closed: groups it leads here start an election within ~300 ms
   *  (except `except`, whose app staggers its own); quiet groups led here that it votes in
   *  wake, so that check-quorum watches them again. */
  peerDown(peer: string, except = ""): void {
    // What waited for that route is stale once it is back (the leaders probe again).
    this.share.dropPeer(peer);
    const within = Math.max(1, Math.round(300 / this.tickMs));
    for (const g of this.groups.values()) {
      const n = g.node;
      if (n.lead === peer && n.role === Role.Follower && g.name !== except) {
        n.leaderLost(within);
        this.touch(g);
      } else if (n.quiesced && n.role === Role.Leader && n.voters.includes(peer)) {
        n.wake(false);
        this.touch(g);
      }
    }
  }

  /** The route to peer opened (a restart, a healed partition): quiet groups it votes in
   *  wake, so that it hears from their leaders at once. */
  peerUp(peer: string): void {
    for (const g of this.groups.values()) {
      const n = g.node;
      if (n.quiesced && n.voters.includes(peer)) {
        n.wake(n.role !== Role.Leader);
        this.touch(g);
      }
    }
  }

  /** A quiet group's peers have been heard from within silentMs: its leader's server, or
   *  (leading) every voter's. */
  private peersAlive(n: RaftNode, now: number, silentMs: number): boolean {
    if (n.role !== Role.Leader) {
      const h = this.heard.get(n.lead);
      return h !== undefined && now - h < silentMs;
    }
    for (const v of n.voters) {
      if (v === this.o.id) continue;
      const h = this.heard.get(v);
      if (h === undefined || now - h >= silentMs) return false;
    }
    return true;
  }

  /** Every heartbeat interval: a coalesced frame (maybe empty) to every peer of a group. */
  private queueLiveness(): void {
    for (const g of this.groups.values()) {
      for (const v of g.node.voters) if (v !== this.o.id && !this.hbOut.has(v)) this.hbOut.set(v, []);
    }
    this.scheduleHeartbeats();
  }

  private scheduleHeartbeats(): void {
    if (!this.hbScheduled && !this.closed) {
      this.hbScheduled = true;
      this.o.sched.microtask(this.hbFlushBound);
    }
  }

  private flushHeartbeats(): void {
    this.hbScheduled = false;
    if (this.closed) return;
    for (const [peer, items] of this.hbOut) {
      this.stats.heartbeatFramesOut++;
      this.stats.heartbeatsOut += items.length;
      this.o.transport.send(peer, encodeHeartbeats(this.incarnation, items));
    }
    this.hbOut.clear();
  }

  /** A message of group to its peer: heartbeats and the like in this turn's coalesced frame,
   *  the rest in a frame of its own. */
  private sendMsg(group: string, m: Message): void {
    if (isCoalesced(m)) {
      let items = this.hbOut.get(m.to);
      if (items === undefined) this.hbOut.set(m.to, (items = []));
      items.push({ group, m });
      this.scheduleHeartbeats();
      return;
    }
    this.stats.framesOut++;
    const frame = encodeMessage(group, m);
    if (m.type === MsgType.App || m.type === MsgType.Snap) this.share.send(m.to, group, frame);
    else this.o.transport.send(m.to, frame);
  }

  private receiveHeartbeats(from: string, frame: Uint8Array): void {
    const d = decodeHeartbeats(frame, from, this.o.id);
    if (d instanceof Error) return void this.stats.badFrames++;
    const was = this.peerIncarnation.get(from);
    this.peerIncarnation.set(from, d.incarnation);
    // It restarted (maybe faster than a route close was seen): what it led, it leads no more.
    if (was !== undefined && was !== d.incarnation) this.peerDown(from);
    for (const { group, m } of d.items) {
      const g = this.groups.get(group);
      if (g === undefined) {
        this.stats.unknownGroup++;
        continue;
      }
      if (!this.ids.admits(g.node, from, m.type)) continue;
      g.node.step(m);
      this.touch(g);
    }
  }

  /** Snapshot the group's app at its applied index, durably, and drop the log before it. */
  snapshot(group: string): number {
    const g = this.mustGroup(group);
    return this.snapshotAt(group, g.node.log.applied, null);
  }

  /** The group's app is rebuilding its state from a peer (on) or has finished (off): a
   *  mark kept durably beside its snapshot (set before this returns), which catchupMarked
   *  reports after a restart. */
  markCatchup(group: string, on: boolean): void {
    if (on) saveCatchupMark(this.o.fs, this.o.dir, group);
    else clearCatchupMark(this.o.fs, this.o.dir, group);
  }

  catchupMarked(group: string): boolean {
    return hasCatchupMark(this.o.fs, this.o.dir, group);
  }

  /** snapshot() with data the app took earlier, at index (≤ applied; e.g. once the state it
   *  describes is durable elsewhere). data null: ask the app now (index must be applied). */
  snapshotAt(group: string, index: number, data: Uint8Array | null): number {
    const g = this.mustGroup(group);
    const n = g.node;
    if (index <= n.log.snapIndex || index > n.log.applied || n.failed !== null) return n.log.snapIndex;
    const snap: Snapshot = { index, term: n.log.term(index), voters: n.votersAt(index), data: data ?? g.app.snapshot() };
    saveSnapshotFile(this.o.fs, this.o.dir, group, snap);
    n.compact(index, snap.data);
    this.wal.markSnapshot(group, index, snap.term);
    this.wal.sync(() => this.wal.releaseSegments());
    return index;
  }

  // ---- the turn ----

  private mustGroup(name: string): Group {
    const g = this.groups.get(name);
    if (g === undefined) throw new Error(`no raft group ${name}`);
    return g;
  }

  /** Bytes of the header an app frame of group starts with (appFrameHeader). */
  appHeaderBytes(group: string): number {
    return 3 + Buffer.byteLength(group);
  }

  /** Write the app-frame header of group at the start of frame (appHeaderBytes long): the
   *  caller built its data after it in place, to send with sendAppFrame (no copy). */
  writeAppHeader(group: string, frame: Buffer): void {
    frame[0] = APP_FRAME_TAG;
    frame.writeUInt16BE(Buffer.byteLength(group), 1);
    frame.write(group, 3, "utf8");
  }

  /** Send a whole app frame (writeAppHeader) to server `peer`. */
  sendAppFrame(peer: string, frame: Uint8Array): void {
    this.stats.framesOut++;
    this.o.transport.send(peer, frame);
  }

  /** Send data to the app of `group` on server `peer` (state transfer beside the log). */
  sendApp(group: string, peer: string, data: Uint8Array): void {
    const gl = Buffer.byteLength(group);
    const f = Buffer.allocUnsafe(3 + gl + data.length);
    f[0] = APP_FRAME_TAG;
    f.writeUInt16BE(gl, 1);
    f.write(group, 3, "utf8");
    f.set(data, 3 + gl);
    this.stats.framesOut++;
    this.o.transport.send(peer, f);
  }

  private receiveApp(from: string, frame: Uint8Array): void {
    const b = Buffer.isBuffer(frame) ? frame : Buffer.from(frame.buffer, frame.byteOffset, frame.byteLength);
    if (b.length < 3) return void this.stats.badFrames++;
    const gl = b.readUInt16BE(1);
    if (3 + gl > b.length) return void this.stats.badFrames++;
    const g = this.groups.get(b.toString("utf8", 3, 3 + gl));
    if (g === undefined || g.node.failed !== null) return void this.stats.unknownGroup++;
    g.app.onAppFrame?.(from, b.subarray(3 + gl));
  }

  private receive(from: string, frame: Uint8Array): void {
    if (this.closed) return;
    this.stats.framesIn++;
    this.heard.set(from, this.o.clock.monoMs());
    if (frame[0] === APP_FRAME_TAG) return this.receiveApp(from, frame);
    if (frame[0] === HEARTBEATS_TAG) return this.receiveHeartbeats(from, frame);
    const d = decodeMessage(frame);
    if (d instanceof Error) {
      this.stats.badFrames++;
      return;
    }
    const g = this.groups.get(d.group);
    if (g === undefined || d.msg.from !== from) {
      this.stats.unknownGroup++;
      return;
    }
    if (!this.ids.admits(g.node, from, d.msg.type)) return;
    g.node.step(d.msg);
    this.touch(g);
  }

  private touch(g: Group): void {
    this.dirty.add(g);
    if (!this.scheduled && !this.closed) {
      this.scheduled = true;
      this.o.sched.nextTurn(() => this.process());
    }
  }

  private process(): void {
    this.scheduled = false;
    if (this.closed) return;
    const batch: Array<[Group, Ready]> = [];
    const todo = [...this.dirty];
    this.dirty.clear();
    for (const g of todo) {
      if (g.busy || !g.node.hasReady()) continue;
      const rd = g.node.ready();
      this.stats.readies++;
      g.busy = true;
      const hs = rd.hardState;
      const early = g.node.role === Role.Leader && rd.snapshot === null && (hs === null || (hs.term === g.hsTerm && hs.vote === g.hsVote));
      if (!this.persist(g, rd)) {
        // Nothing that must be durable first: this Ready can be acted on at once.
        this.finish(g, rd);
        continue;
      }
      // The leader's appends (and heartbeats) go out now, while its own write is being
      // synced (Raft thesis §10.2.1): it counts itself towards a commit only once advance()
      // says its entries are stable. Anything else waits for the sync.
      if (early) rd.messages = this.sendLeaderMessages(g, rd.messages);
      this.applyDurable(g, rd);
      batch.push([g, rd]);
    }
    if (batch.length === 0) return;
    this.stats.walSyncs++;
    this.wal.sync((err) => {
      if (this.closed) return;
      for (const [g, rd] of batch) {
        if (err !== null) {
          g.busy = false;
          this.failGroup(g, `WAL write failed: ${err.message}`);
          continue;
        }
        this.finish(g, rd);
      }
    });
  }

  /** Sends the appends and heartbeats among msgs; returns the others, to be sent after the
   *  sync. */
  private sendLeaderMessages(g: Group, msgs: Message[]): Message[] {
    let rest: Message[] | null = null;
    for (let i = 0; i < msgs.length; i++) {
      const m = msgs[i]!;
      if (m.type === MsgType.App || m.type === MsgType.Heartbeat) {
        if (rest === null) rest = msgs.slice(0, i);
        this.sendMsg(g.name, m);
      } else if (rest !== null) rest.push(m);
    }
    return rest ?? msgs;
  }

  /**
   * Write rd's state to the WAL; true if it must be synced before rd is acted on: entries, a
   * snapshot, or a new term or vote. A HardState whose commit index alone moved is written
   * but need not be synced first (etcd's MustSync: a lost commit index is learnt again from
   * the leader, and what it covers is committed on a quorum already); it goes to disk with
   * the next sync.
   */
  private persist(g: Group, rd: Ready): boolean {
    let mustSync = false;
    if (rd.snapshot !== null) {
      try {
        saveSnapshotFile(this.o.fs, this.o.dir, g.name, rd.snapshot);
      } catch (e) {
        this.failGroup(g, `snapshot write failed: ${(e as Error).message}`);
        return false;
      }
      this.wal.markSnapshot(g.name, rd.snapshot.index, rd.snapshot.term);
      mustSync = true;
    }
    if (rd.entries.length > 0) {
      this.wal.appendEntries(g.name, rd.entries);
      mustSync = true;
    }
    const hs = rd.hardState;
    if (hs !== null) {
      this.wal.setHardState(g.name, hs);
      if (hs.term !== g.hsTerm || hs.vote !== g.hsVote) {
        g.hsTerm = hs.term;
        g.hsVote = hs.vote;
        mustSync = true;
      }
    }
    return mustSync;
  }

  /** Readies whose committed entries applyDurable applied before their sync. */
  private readonly appliedEarly = new WeakSet<Ready>();

  /**
   * Committed entries already on this server's disk (a leader's always are: it counts itself
   * only once its own write is durable) do not wait for the sync of the new entries in the
   * same Ready: they are applied now, saving the leader a sync and a turn between a commit
   * and the PubAck or delivery it releases. Committed means durable on a quorum, so nothing
   * is applied that could be lost. Messages still wait for the sync (persist, then send).
   */
  private applyDurable(g: Group, rd: Ready): void {
    const n = g.node;
    const last = rd.committed[rd.committed.length - 1];
    if (last === undefined || rd.snapshot !== null || n.failed !== null || last.index > n.log.stabled) return;
    g.app.apply(rd.committed);
    n.log.appliedTo(last.index);
    this.appliedEarly.add(rd);
  }

  private finish(g: Group, rd: Ready): void {
    // The group may have been removed (and even added again) while this Ready was written.
    const cur = this.groups.get(g.name);
    const live = cur !== undefined && cur.node === g.node ? cur : null;
    const n = g.node;
    // Caught up after a blank start: votes again, also after a restart.
    if (g.recovering && live !== null && !n.recovering) {
      g.recovering = false;
      this.wal.setRecovered(g.name);
    }
    if (n.failed === null && live !== null) {
      for (const m of rd.messages) this.sendMsg(live.name, m);
      if (rd.snapshot !== null) live.app.restore(rd.snapshot.data);
      if (rd.committed.length > 0 && !this.appliedEarly.delete(rd)) live.app.apply(rd.committed);
      for (const rs of rd.readStates) live.app.onReadState?.(rs);
    }
    n.advance(rd);
    g.busy = false;
    if (live === null) return;
    live.busy = false;
    if (rd.softState !== null || n.term !== live.lastTerm) {
      const leader = n.role === Role.Leader ? n.id : n.lead;
      if (leader !== live.lastLeader || n.term !== live.lastTerm) {
        live.lastLeader = leader;
        live.lastTerm = n.term;
        live.app.onLeaderChange?.(leader, n.term);
      }
    }
    this.touch(live);
  }

  private failGroup(g: Group, reason: string): void {
    if (g.node.failed !== null) return;
    const n = g.node;
    n.fail(reason);
    g.app.onFailed?.(reason);
    // Its peers may be quiet, waiting on a leader that this was: any message wakes them.
    for (const v of n.voters) if (v !== this.o.id) this.sendMsg(g.name, emptyMessage(MsgType.HeartbeatResp, this.o.id, v, n.term));
  }
}
