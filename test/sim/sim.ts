// A deterministic simulator of a Raft cluster: N RaftNodes (the production core), each with a
// simulated disk (disk.ts) and a replicated append-only log of publishes as its state
// machine, on a virtual clock driven by one seeded PRNG. Faults: message delay, drop,
// duplication and reordering, symmetric and one-way partitions, paused nodes, crashes that
// lose unsynced writes, and bit flips in persisted entries (the node must detect them by CRC,
// fail() and take no further part). Invariants are checked after every event; a violation
// stops the run and names the seed, which replays exactly.
import { decodeMessage, encodeMessage } from "../../src/raft/codec.js";
import { HostIdentities } from "../../src/raft/identities.js";
import { withIdentity } from "../../src/raft/identity.js";
import { RaftNode } from "../../src/raft/node.js";
import { type Entry, EntryType, type Message, type Ready, Role, type Snapshot } from "../../src/raft/types.js";
import { RaftError } from "../../src/raft/types.js";
import { SeededRandom } from "../../src/runtime/random.js";
import { SimDisk } from "./disk.js";
import { EventHeap } from "./heap.js";

export interface SimConfig {
  seed: number;
  nodes: number;
  /** Virtual ms with faults injected. */
  faultMs?: number;
  /** Virtual ms after healing everything, for the cluster to converge. */
  healMs?: number;
  tickMs?: number;
  /** Log every fault and leader change. */
  verbose?: boolean;
  /** Carry every message as a binary frame through codec.ts (as RaftHost does). */
  codec?: boolean;
  /** When a node crashes, its peers see the route close (RaftHost.peerDown → leaderLost). */
  fastFailover?: boolean;
  /** Membership changes among the faults: the leader removes a voter (at most one is out at
   *  a time, so a quorum of the new set is still a majority of all nodes) and adds it back;
   *  at heal every node is added back. */
  membership?: boolean;
  /** A node whose recovery finds a bad CRC starts blank and re-syncs, not voting until it
   *  caught up (RaftHost's corruption re-sync), instead of failing for good. */
  resync?: boolean;
  /** A node's disk is wiped in place (a server replaced with an empty disk under the same
   *  name): it comes back blank with a new storage identity, the members pinned to their
   *  identities, and the production admission and re-identification (raft/identities.ts).
   *  Messages its old incarnation sent are dropped once it is gone (their route closed). */
  wipe?: boolean;
}

export interface SimStats {
  events: number;
  delivered: number;
  dropped: number;
  duplicated: number;
  leaderTerms: number;
  committed: number;
  proposed: number;
  acked: number;
  crashes: number;
  tornCrashes: number;
  pauses: number;
  partitions: number;
  transfers: number;
  bitFlips: number;
  failedNodes: number;
  resyncs: number;
  wipes: number;
  /** Messages not admitted (sender's identity not the pinned one) and members re-identified. */
  notAdmitted: number;
  reidentified: number;
  compactions: number;
  snapshotsInstalled: number;
  readsChecked: number;
  fsyncs: number;
  confChanges: number;
}

export interface SimResult {
  seed: number;
  nodes: number;
  violation: string | null;
  /** Virtual ms at the end (or at the violation). */
  atMs: number;
  stats: SimStats;
  log: string[];
}

const enc = new TextEncoder();
const dec = new TextDecoder();

/** The replicated state machine: an append-only log of publish ids, deduplicated by id. */
class PubLog {
  pubs: string[] = [];
  seen = new Set<string>();
  apply(id: string): void {
    if (this.seen.has(id)) return;
    this.seen.add(id);
    this.pubs.push(id);
  }
  encode(): Uint8Array {
    return enc.encode(this.pubs.join("\n"));
  }
  static decode(b: Uint8Array): PubLog {
    const p = new PubLog();
    const s = dec.decode(b);
    if (s.length > 0) for (const id of s.split("\n")) p.apply(id);
    return p;
  }
}

interface SimNode {
  id: string;
  idx: number;
  raft: RaftNode | null;
  disk: SimDisk;
  app: PubLog;
  up: boolean;
  paused: boolean;
  /** Bumped on each crash: events of an earlier life are ignored. */
  life: number;
  busy: boolean;
  inbox: Message[];
  failed: boolean;
  failDetected: boolean;
  /** Started blank after a bad CRC (cfg.resync): failed until its Raft stops recovering. */
  resyncing: boolean;
  /** While resyncing, the entries committed before its reset count as held (the damage is
   *  this node's failure within the fault budget, as a flipped entry is). */
  resetUpTo: number;
  /** Proposals this leader made in this life: index → [term, publish id]. */
  proposals: Map<number, [number, string]>;
  /** Commit index already folded into the global committed log, this life. */
  seenCommit: number;
  lastRole: Role;
  /** Outstanding reads: context → the highest acked index when the read started. */
  reads: Map<string, number>;
  /** Storage identity (cfg.wipe: a new one after each wipe) and this life's knowledge of the
   *  others' (the host's HostIdentities). */
  identity: string;
  hostIds: HostIdentities | null;
}

class Violation extends Error {}

export class Sim {
  readonly rnd: SeededRandom;
  readonly stats: SimStats = {
    events: 0,
    delivered: 0,
    dropped: 0,
    duplicated: 0,
    leaderTerms: 0,
    committed: 0,
    proposed: 0,
    acked: 0,
    crashes: 0,
    tornCrashes: 0,
    pauses: 0,
    partitions: 0,
    transfers: 0,
    bitFlips: 0,
    failedNodes: 0,
    resyncs: 0,
    wipes: 0,
    notAdmitted: 0,
    reidentified: 0,
    compactions: 0,
    snapshotsInstalled: 0,
    readsChecked: 0,
    fsyncs: 0,
    confChanges: 0,
  };
  readonly log: string[] = [];
  private now = 0;
  private seq = 0;
  private readonly heap = new EventHeap();
  private readonly nodes: SimNode[] = [];
  private readonly ids: string[];
  private readonly blocked = new Set<string>();
  private dropRate: number;
  private dupRate: number;
  private maxDelayMs: number;
  private faulting = true;
  private clientsOn = true;
  private readonly tickMs: number;
  private readonly faultMs: number;
  private readonly healMs: number;
  // Global truths the invariants compare against.
  private readonly leaderOfTerm = new Map<number, string>();
  /** committed[i] = "term|payload" of the entry committed at index i (1-based; [0] unused). */
  private readonly committed: string[] = [""];
  /** commitTerm[i]: the term of the first node seen with i committed, i.e. the leader that
   *  committed it (only leaders advance commit on their own). */
  private readonly commitTerm: number[] = [0];
  /** Every (index, term) seen in any log → "payload|prevTerm". */
  private readonly entryAt = new Map<string, string>();
  /** The canonical applied sequence of publishes. */
  private readonly canon: string[] = [];
  private readonly acked = new Map<string, number>();
  private maxAckedIndex = 0;
  private readonly flipped = new Set<string>();
  private pubSeq = 0;
  private readSeq = 0;
  private knownLeader = 0;

  constructor(private readonly cfg: SimConfig) {
    this.rnd = new SeededRandom(cfg.seed * 2654435761 + cfg.nodes);
    this.tickMs = cfg.tickMs ?? 10;
    this.faultMs = cfg.faultMs ?? 3000;
    this.healMs = cfg.healMs ?? 3000;
    // Each seed gets its own fault mix.
    this.dropRate = this.rnd.next() * 0.1;
    this.dupRate = this.rnd.next() * 0.05;
    this.maxDelayMs = 2 + this.rnd.int(20);
    this.ids = [];
    for (let i = 0; i < cfg.nodes; i++) this.ids.push(`n${i + 1}`);
    for (let i = 0; i < cfg.nodes; i++) {
      const n: SimNode = {
        id: this.ids[i]!,
        idx: i,
        raft: null,
        disk: new SimDisk(),
        app: new PubLog(),
        up: false,
        paused: false,
        life: 0,
        busy: false,
        inbox: [],
        failed: false,
        failDetected: false,
        resyncing: false,
        resetUpTo: 0,
        proposals: new Map(),
        seenCommit: 0,
        lastRole: Role.Follower,
        reads: new Map(),
        identity: `${this.ids[i]!}i0`,
        hostIds: null,
      };
      this.nodes.push(n);
      this.boot(n);
      this.scheduleTick(n, this.rnd.int(this.tickMs));
    }
  }

  run(): SimResult {
    let violation: string | null = null;
    try {
      this.at(this.rnd.int(20), () => this.client());
      this.at(100 + this.rnd.int(300), () => this.fault());
      this.at(this.faultMs, () => this.heal());
      this.at(this.faultMs + this.healMs / 2, () => (this.clientsOn = false));
      const end = this.faultMs + this.healMs;
      for (;;) {
        const e = this.heap.pop();
        if (e === undefined || e.at > end) break;
        this.now = e.at;
        this.stats.events++;
        e.run();
      }
      this.now = end;
      this.finalChecks();
    } catch (err) {
      if (err instanceof Violation) violation = err.message;
      else violation = `exception: ${(err as Error).stack ?? String(err)}`;
    }
    for (const n of this.nodes) this.stats.fsyncs += n.disk.fsyncs;
    this.stats.committed = this.committed.length - 1;
    this.stats.leaderTerms = this.leaderOfTerm.size;
    return { seed: this.cfg.seed, nodes: this.cfg.nodes, violation, atMs: this.now, stats: this.stats, log: this.log };
  }

  // ---- scheduling ----

  private at(delayMs: number, run: () => void): void {
    this.heap.push({ at: this.now + delayMs, seq: this.seq++, run });
  }

  private note(s: string): void {
    if (this.cfg.verbose === true) this.log.push(`${this.now.toFixed(1)}ms ${s}`);
  }

  private fail(s: string): never {
    throw new Violation(`${s} (at ${this.now.toFixed(1)}ms)`);
  }

  private scheduleTick(n: SimNode, delay: number): void {
    this.at(delay, () => {
      if (n.up && !n.paused && n.raft !== null) {
        n.raft.tick();
        n.hostIds?.reidentify([{ name: "sim", node: n.raft }], () => undefined);
        this.afterEvent(n);
      }
      this.scheduleTick(n, this.tickMs);
    });
  }

  // ---- node lifecycle ----

  private boot(n: SimNode): void {
    const r = n.disk.recover();
    n.app = r.snap !== null ? PubLog.decode(r.snap.data) : new PubLog();
    if (r.snap !== null) this.checkCanonPrefix(n, "restore from disk");
    const wipe = this.cfg.wipe === true;
    n.raft = new RaftNode(
      {
        id: n.id,
        // The identities the group was made with (a meta assignment's RaftGroupInfo.ids).
        peers: wipe ? this.ids.map((p) => withIdentity(p, `${p}i0`)) : this.ids,
        electionTicks: 10,
        heartbeatTicks: 2,
        random: new SeededRandom(this.rnd.int(2 ** 31)),
        maxMsgBytes: 4096,
        maxInflight: 16,
        ...(wipe ? { identity: n.identity } : {}),
      },
      { hardState: r.hs, snapshot: r.snap, entries: r.entries, applied: r.snap?.index ?? 0, recovering: r.recovering },
    );
    n.up = true;
    n.busy = false;
    n.inbox = [];
    n.proposals = new Map();
    n.reads = new Map();
    n.seenCommit = n.raft.log.committed;
    n.lastRole = Role.Follower;
    if (wipe) this.introduce(n);
    // Whatever survived on disk must agree with what the cluster committed.
    // (An entry beyond its own commit index may be a stale one a new leader will replace.)
    for (const e of r.entries) if (e.index <= n.raft.log.committed) this.checkCommittedEntry(n, e.index, e.term, payloadOf(e), "recovered");
    if (r.recovering && r.corruptAt === null) {
      // Restarted while re-syncing: still not voting (the host's Reset record says so).
      n.resyncing = true;
      n.failed = true;
    }
    if (r.corruptAt !== null || (n.failed && !n.resyncing)) {
      if (r.corruptAt === null) this.fail(`${n.id} has a flipped bit its recovery did not detect`);
      if (this.cfg.resync === true) {
        // What it may have acknowledged: all it held, committed or not yet.
        if (!n.resyncing) n.resetUpTo = Math.max(this.committed.length - 1, n.disk.lastDurableIndex());
        n.disk.resetBlank();
        const b = n.disk.recover();
        n.app = b.snap !== null ? PubLog.decode(b.snap.data) : new PubLog();
        n.raft = new RaftNode(
          { id: n.id, peers: this.ids, electionTicks: 10, heartbeatTicks: 2, random: new SeededRandom(this.rnd.int(2 ** 31)), maxMsgBytes: 4096, maxInflight: 16 },
          { hardState: b.hs, snapshot: b.snap, entries: [], applied: b.snap?.index ?? 0, recovering: true },
        );
        n.seenCommit = n.raft.log.committed;
        if (!n.resyncing) this.stats.resyncs++;
        n.resyncing = true;
        n.failed = true;
        this.note(`${n.id} recovered with a bad CRC at ${r.corruptAt}: starts blank, re-syncing`);
        return;
      }
      n.raft.fail(`checksum mismatch at index ${r.corruptAt}`);
      if (!n.failDetected) this.stats.failedNodes++;
      n.failDetected = true;
      n.failed = true;
      this.note(`${n.id} recovered with a bad CRC at ${r.corruptAt}: failed`);
    }
  }

  private crash(n: SimNode): void {
    if (!n.up) return;
    const tear = this.rnd.next() < 0.5;
    n.disk.crash(this.rnd, tear);
    n.up = false;
    n.paused = false;
    n.raft = null;
    n.life++;
    // Its routes close: the others forget its identity until it introduces itself again.
    for (const o of this.nodes) o.hostIds?.setPeer(n.id, null);
    this.deferred.delete(n);
    if (this.cfg.fastFailover === true) {
      for (const o of this.nodes) if (o.up && !o.paused && o.raft !== null && o.raft.lead === n.id) {
        o.raft.leaderLost(3);
        this.afterEvent(o);
      }
    }
    this.stats.crashes++;
    if (tear) this.stats.tornCrashes++;
    this.checkDurable(Math.max(1, this.committed.length - 300));
    this.note(`crash ${n.id}${tear ? " (torn)" : ""}`);
  }

  private restart(n: SimNode): void {
    if (n.up) return;
    this.boot(n);
    this.note(`restart ${n.id} term=${n.raft!.term} last=${n.raft!.log.lastIndex()} commit=${n.raft!.log.committed}`);
    this.afterEvent(n);
  }

  // ---- the driver: persist, then send, then apply ----

  private pump(n: SimNode): void {
    const r = n.raft;
    if (r === null || !n.up || n.paused || n.busy || !r.hasReady()) return;
    const rd = r.ready();
    n.busy = true;
    this.checkNewEntries(n, rd);
    if (rd.snapshot !== null) n.disk.write({ kind: "snap", snap: rd.snapshot });
    for (const e of rd.entries) n.disk.writeEntry(e);
    if (rd.hardState !== null) n.disk.write({ kind: "hs", hs: rd.hardState });
    const life = n.life;
    const writes = n.disk.pendingCount();
    if (writes === 0) {
      this.finish(n, rd);
      return;
    }
    this.at(0.2 + this.rnd.next() * 2, () => {
      if (n.life !== life) return;
      if (n.paused) {
        this.deferUntilResumed(n, () => this.syncDone(n, rd, writes));
        return;
      }
      this.syncDone(n, rd, writes);
    });
  }

  private deferred = new Map<SimNode, Array<() => void>>();

  private deferUntilResumed(n: SimNode, fn: () => void): void {
    const q = this.deferred.get(n) ?? [];
    q.push(fn);
    this.deferred.set(n, q);
  }

  private syncDone(n: SimNode, rd: Ready, writes: number): void {
    n.disk.sync(writes);
    this.finish(n, rd);
  }

  private finish(n: SimNode, rd: Ready): void {
    const r = n.raft!;
    for (const m of rd.messages) this.send(m);
    if (rd.snapshot !== null) {
      n.app = PubLog.decode(rd.snapshot.data);
      this.stats.snapshotsInstalled++;
      this.checkCanonPrefix(n, "snapshot install");
    }
    for (const e of rd.committed) this.applyEntry(n, e);
    for (const rs of rd.readStates) {
      const key = dec.decode(rs.context);
      const need = n.reads.get(key);
      if (need === undefined) continue;
      n.reads.delete(key);
      if (rs.index < need) this.fail(`${n.id} read ${key} got index ${rs.index} < acked ${need}: stale read`);
      this.stats.readsChecked++;
    }
    r.advance(rd);
    n.busy = false;
    this.maybeCompact(n);
    this.afterEvent(n);
  }

  private applyEntry(n: SimNode, e: Entry): void {
    const payload = payloadOf(e);
    this.checkCommittedEntry(n, e.index, e.term, payload, "applied");
    if (e.type === EntryType.Normal) {
      const before = n.app.pubs.length;
      n.app.apply(payload);
      if (n.app.pubs.length > before) {
        const k = n.app.pubs.length - 1;
        if (k < this.canon.length) {
          if (this.canon[k] !== payload) this.fail(`${n.id} applied ${payload} at position ${k}, others applied ${this.canon[k]}`);
        } else if (k === this.canon.length) this.canon.push(payload);
        else this.fail(`${n.id} applied position ${k} past the canonical ${this.canon.length}`);
      }
    }
    const p = n.proposals.get(e.index);
    if (p !== undefined) {
      n.proposals.delete(e.index);
      if (p[0] === e.term && p[1] === payload && !this.acked.has(payload)) {
        this.acked.set(payload, e.index);
        this.stats.acked++;
        if (e.index > this.maxAckedIndex) this.maxAckedIndex = e.index;
      }
    }
  }

  private maybeCompact(n: SimNode): void {
    const r = n.raft!;
    if (r.log.applied - r.log.snapIndex < 40 || this.rnd.next() > 0.05) return;
    const snap: Snapshot = { index: r.log.applied, term: r.log.term(r.log.applied), voters: r.votersAt(r.log.applied), data: n.app.encode() };
    n.disk.writeSnapshotDurable(snap);
    r.compact(snap.index, snap.data);
    this.stats.compactions++;
  }

  private send(m: Message): void {
    if (this.blocked.has(`${m.from}>${m.to}`) || this.rnd.next() < this.dropRate) {
      this.stats.dropped++;
      return;
    }
    const copies = this.rnd.next() < this.dupRate ? 2 : 1;
    if (copies === 2) this.stats.duplicated++;
    const frame = this.cfg.codec === true ? encodeMessage("sim", m) : null;
    const sender = this.nodes[this.ids.indexOf(m.from)]!;
    const senderId = sender.identity;
    for (let c = 0; c < copies; c++) {
      const delay = this.rnd.next() < 0.02 ? this.maxDelayMs * 5 : 0.1 + this.rnd.next() * this.maxDelayMs;
      this.at(delay, () => {
        // Sent by an incarnation wiped since: its connection is gone with it.
        if (sender.identity !== senderId) return void this.stats.dropped++;
        if (frame === null) return this.deliver(m);
        const d = decodeMessage(frame);
        if (d instanceof Error) this.fail(`codec: ${d.message}`);
        this.deliver(d.msg);
      });
    }
  }

  private deliver(m: Message): void {
    const n = this.nodes[this.ids.indexOf(m.to)]!;
    if (!n.up || n.raft === null) {
      this.stats.dropped++;
      return;
    }
    if (n.paused) {
      n.inbox.push(m);
      return;
    }
    if (n.hostIds !== null && !n.hostIds.admits(n.raft, m.from, m.type)) {
      this.stats.dropped++;
      return;
    }
    this.stats.delivered++;
    n.raft.step(m);
    this.afterEvent(n);
  }

  /** cfg.wipe: n (just booted) and every node up learn each other's identity (HELLO). */
  private introduce(n: SimNode): void {
    n.hostIds = new HostIdentities(n.id, n.identity, this.stats, (msg) => this.note(msg));
    for (const o of this.nodes) {
      if (o === n || !o.up || o.raft === null) continue;
      n.hostIds.setPeer(o.id, o.identity);
      o.hostIds?.setPeer(n.id, n.identity);
    }
  }

  /** cfg.wipe: n's disk is replaced by an empty one and it restarts with a new identity. What
   *  it held counts as held until it is a member again and caught up (as a re-sync). */
  private wipe(n: SimNode): void {
    const heldUpTo = Math.max(this.committed.length - 1, n.disk.lastDurableIndex());
    this.crash(n);
    n.disk = new SimDisk();
    n.identity = `${n.id}i${++this.stats.wipes}`;
    n.resetUpTo = heldUpTo;
    n.resyncing = true;
    n.failed = true;
    for (const k of [...this.flipped]) if (k.startsWith(`${n.id}:`)) this.flipped.delete(k);
    this.note(`wipe ${n.id}: new identity ${n.identity}`);
    this.at(10, () => this.restart(n));
  }

  // ---- invariants ----

  private afterEvent(n: SimNode): void {
    const r = n.raft;
    if (r === null) return;
    // A wiped node is done once the entry naming its new identity is in its log and its
    // whole log is on disk: that entry came after everything its leader had.
    if (n.resyncing && !r.recovering && !r.superseded() && (this.cfg.wipe !== true || r.log.stabled >= r.log.lastIndex())) {
      // Caught up with a leader: it holds everything committed again and takes part.
      n.disk.markRecovered();
      n.resyncing = false;
      n.failed = false;
      for (const k of [...this.flipped]) if (k.startsWith(`${n.id}:`)) this.flipped.delete(k);
      this.note(`${n.id} re-synced (commit ${r.log.committed})`);
    }
    if (r.role === Role.Leader) {
      const prev = this.leaderOfTerm.get(r.term);
      if (prev !== undefined && prev !== n.id) this.fail(`two leaders in term ${r.term}: ${prev} and ${n.id}`);
      if (n.failed) this.fail(`failed node ${n.id} became leader`);
      if (prev === undefined) {
        this.leaderOfTerm.set(r.term, n.id);
        this.note(`${n.id} leads term ${r.term} (last=${r.log.lastIndex()} commit=${r.log.committed})`);
        this.checkLeaderCompleteness(n);
      }
      this.knownLeader = n.idx;
    }
    if (n.lastRole === Role.Leader && r.role !== Role.Leader) n.proposals.clear();
    n.lastRole = r.role;
    // Fold newly committed entries into the global committed log.
    const c = r.log.committed;
    for (let i = Math.max(n.seenCommit + 1, r.log.firstIndex()); i <= c; i++) {
      const e = r.log.entry(i)!;
      this.checkCommittedEntry(n, i, e.term, payloadOf(e), "committed");
    }
    if (c > n.seenCommit) n.seenCommit = c;
    this.pump(n);
  }

  private checkCommittedEntry(n: SimNode, index: number, term: number, payload: string, what: string): void {
    const v = `${term}|${payload}`;
    if (what === "recovered") {
      // Only entries at or below a committed index must match (the rest may be uncommitted).
      const known = this.committed[index];
      if (known !== undefined && known !== v) this.fail(`${n.id} ${what} entry ${index} is ${v}, committed was ${known}`);
      return;
    }
    const known = this.committed[index];
    if (known === undefined) {
      if (index !== this.committed.length) {
        // Commits can be learnt out of order across nodes only via snapshots; fill the gap later.
        while (this.committed.length < index) this.committed.push(undefined as unknown as string);
      }
      this.committed[index] = v;
      this.commitTerm[index] = n.raft?.term ?? 0;
    } else if (known !== v) {
      this.fail(`${n.id} ${what} entry ${index} as ${v}, but ${known} was committed there`);
    }
  }

  private checkNewEntries(n: SimNode, rd: Ready): void {
    const r = n.raft!;
    for (const e of rd.entries) {
      const key = `${e.index}:${e.term}`;
      const v = `${payloadOf(e)}|${r.log.term(e.index - 1)}`;
      const prev = this.entryAt.get(key);
      if (prev === undefined) this.entryAt.set(key, v);
      else if (prev !== v) this.fail(`log matching: ${n.id} has ${key} = ${v}, another log has ${prev}`);
    }
  }

  private checkLeaderCompleteness(n: SimNode): void {
    const r = n.raft!;
    for (let i = r.log.firstIndex(); i < this.committed.length; i++) {
      const v = this.committed[i];
      // A leader must hold what was committed in earlier terms; a late winner of an old
      // term need not hold what a newer term committed.
      if (v === undefined || (this.commitTerm[i] ?? 0) >= r.term) continue;
      const e = r.log.entry(i);
      if (e === undefined || `${e.term}|${payloadOf(e)}` !== v) {
        this.fail(`leader completeness: ${n.id} leads term ${r.term} without committed entry ${i} (${v})`);
      }
    }
  }

  private checkCanonPrefix(n: SimNode, what: string): void {
    const p = n.app.pubs;
    for (let k = 0; k < p.length; k++) {
      if (k < this.canon.length) {
        if (this.canon[k] !== p[k]) this.fail(`${n.id} ${what}: position ${k} is ${p[k]}, canonical ${this.canon[k]}`);
      } else this.canon.push(p[k]!);
    }
  }

  private finalChecks(): void {
    const healthy = this.nodes.filter((n) => !n.failed);
    const majority = Math.floor(this.cfg.nodes / 2) + 1;
    if (healthy.length < majority) this.fail(`only ${healthy.length} healthy nodes (fault budget broken)`);
    if (this.cfg.verbose === true) {
      for (const n of this.nodes) this.note(`final ${n.id} ${JSON.stringify(n.raft?.status())}`);
    }
    const leaders = healthy.filter((n) => n.raft?.role === Role.Leader);
    const top = Math.max(...healthy.map((n) => n.raft!.term));
    const topLeaders = leaders.filter((n) => n.raft!.term === top);
    if (topLeaders.length !== 1) this.fail(`liveness: no leader in term ${top} after healing`);
    const ref = topLeaders[0]!;
    for (const n of healthy) {
      const r = n.raft!;
      if (r.log.committed !== ref.raft!.log.committed || r.log.applied !== ref.raft!.log.applied) {
        this.fail(`liveness: ${n.id} commit/applied ${r.log.committed}/${r.log.applied}, leader ${ref.id} ${ref.raft!.log.committed}/${ref.raft!.log.applied}`);
      }
      if (n.app.pubs.length !== ref.app.pubs.length) this.fail(`${n.id} applied ${n.app.pubs.length} publishes, leader ${ref.app.pubs.length}`);
    }
    for (const [id, index] of this.acked) {
      let holders = 0;
      for (const n of healthy) if (n.app.seen.has(id)) holders++;
      if (holders < majority) this.fail(`acked publish ${id} (index ${index}) held by ${holders} of ${this.cfg.nodes}`);
    }
    this.checkDurable(1);
  }

  /** Every committed entry from `from` on is on a majority of disks (intact, or inside a
   *  snapshot), except where a bit flip destroyed a copy. Checked at each crash, when
   *  unsynced writes vanish, and at the end. */
  private checkDurable(from: number): void {
    const majority = Math.floor(this.cfg.nodes / 2) + 1;
    for (let i = from; i < this.committed.length; i++) {
      const v = this.committed[i];
      if (v === undefined) continue;
      const term = Number(v.slice(0, v.indexOf("|")));
      let holders = 0;
      for (const n of this.nodes) if (n.disk.holds(i, term) || this.flipped.has(`${n.id}:${i}`) || (n.resyncing && i <= n.resetUpTo)) holders++;
      if (holders < majority) {
        const who = this.nodes.map((n) => `${n.id}:${n.disk.holds(i, term) ? "d" : ""}${this.flipped.has(`${n.id}:${i}`) ? "f" : ""}${n.resyncing ? `r${n.resetUpTo}` : ""}`).join(" ");
        this.fail(`committed entry ${i} durable on only ${holders} disks (${who})`);
      }
    }
  }

  // ---- workload ----

  private client(): void {
    if (this.clientsOn) {
      const pick = this.rnd.next() < 0.85 ? this.knownLeader : this.rnd.int(this.nodes.length);
      const n = this.nodes[pick]!;
      const r = n.raft;
      if (r !== null && n.up && !n.paused) {
        if (r.role !== Role.Leader) {
          const li = this.ids.indexOf(r.lead);
          if (li >= 0) this.knownLeader = li;
        } else {
          // Sometimes retry a publish that was never acked (a client timeout), by the same id.
          let id: string;
          if (this.pubSeq > 0 && this.rnd.next() < 0.05) {
            id = `p${this.rnd.int(this.pubSeq)}`;
          } else id = `p${this.pubSeq++}`;
          try {
            const index = r.propose(enc.encode(id));
            n.proposals.set(index, [r.term, id]);
            this.stats.proposed++;
          } catch (e) {
            if (!(e instanceof RaftError)) throw e;
          }
          if (this.rnd.next() < 0.05) this.startRead(n);
          this.afterEvent(n);
        }
      }
      if (this.rnd.next() < 0.03) {
        const f = this.nodes[this.rnd.int(this.nodes.length)]!;
        if (f.up && !f.paused && f.raft !== null && !f.failed) this.startRead(f);
      }
    }
    this.at(0.5 + this.rnd.next() * 6, () => this.client());
  }

  private startRead(n: SimNode): void {
    const key = `r${this.readSeq++}`;
    try {
      n.raft!.readIndex(enc.encode(key));
      n.reads.set(key, this.maxAckedIndex);
      this.afterEvent(n);
    } catch (e) {
      if (!(e instanceof RaftError)) throw e;
    }
  }

  // ---- faults ----

  private fault(): void {
    if (!this.faulting) return;
    const f = Math.floor(this.nodes.length / 2);
    const kind = this.pickFault();
    const n = this.nodes[this.rnd.int(this.nodes.length)]!;
    if (this.cfg.wipe === true && this.rnd.next() < 0.1) {
      // A wiped disk, within the fault budget (a wiped node is damaged until re-synced).
      const damaged = this.nodes.filter((m) => m.failed).length;
      const someoneOut = this.cfg.membership === true && this.nodes.some((m) => m.raft !== null && m.raft.voters.length < this.ids.length);
      if (damaged < f && !n.failed && n.up && !someoneOut) this.wipe(n);
      this.at(50 + this.rnd.int(400), () => this.fault());
      return;
    }
    if (kind === 0) {
      // Partition: a random side, cut both ways or one way.
      this.blocked.clear();
      const side = new Set(this.ids.filter(() => this.rnd.next() < 0.5));
      const oneWay = this.rnd.next() < 0.3;
      for (const a of this.ids) {
        for (const b of this.ids) {
          if (side.has(a) && !side.has(b)) {
            this.blocked.add(`${a}>${b}`);
            if (!oneWay) this.blocked.add(`${b}>${a}`);
          }
        }
      }
      this.stats.partitions++;
      this.note(`partition {${[...side].join(",")}}${oneWay ? " one-way" : ""}`);
    } else if (kind === 1) {
      this.blocked.clear();
      this.note("heal partition");
    } else if (kind === 2) {
      if (n.up) {
        this.crash(n);
        const down = 50 + this.rnd.int(1500);
        this.at(down, () => this.faulting && this.restart(n));
      }
    } else if (kind === 3) {
      if (n.up && !n.paused) {
        n.paused = true;
        this.stats.pauses++;
        this.note(`pause ${n.id}`);
        const life = n.life;
        this.at(20 + this.rnd.int(1500), () => n.life === life && this.resume(n));
      }
    } else if (kind === 4) {
      const l = this.nodes.find((m) => m.up && !m.paused && m.raft?.role === Role.Leader);
      if (l !== undefined) {
        const target = this.ids[this.rnd.int(this.ids.length)]!;
        try {
          l.raft!.transferLeader(target);
          this.stats.transfers++;
          this.note(`transfer ${l.id} -> ${target}`);
        } catch (e) {
          if (!(e instanceof RaftError)) throw e;
        }
        this.afterEvent(l);
      }
    } else if (kind === 5) {
      // A bit flip in a persisted entry, within the fault budget: the node finds it on restart.
      const failedOrFlipped = this.nodes.filter((m) => m.failed).length;
      const someoneOut = this.cfg.membership === true && this.nodes.some((m) => m.raft !== null && m.raft.voters.length < this.ids.length);
      if (failedOrFlipped < f && !n.failed && n.up && !someoneOut) {
        const at = n.disk.flipBit(this.rnd);
        if (at > 0) {
          this.stats.bitFlips++;
          n.failed = true; // it is now doomed: recovery will see the bad CRC
          this.flipped.add(`${n.id}:${at}`);
          this.note(`bit flip in ${n.id} entry ${at}`);
          this.crash(n);
          if (!n.disk.hasBadEntry()) {
            // The torn crash kept unsynced writes that replaced the flipped entry (a newer
            // leader's entry at that index, or a snapshot): the disk is clean again.
            n.failed = false;
            this.flipped.delete(`${n.id}:${at}`);
            this.note(`${n.id}: the flipped entry ${at} was overwritten before the cut`);
          }
          this.at(10, () => this.restart(n));
        }
      }
    } else if (kind === 7) {
      // Power loss across several servers at once (Jepsen's NATS 2.12.1 scenario): each loses
      // its unsynced writes; they come back shortly after.
      const k = 2 + this.rnd.int(this.nodes.length - 1);
      this.note(`power loss on ${k} nodes`);
      for (let i = 0; i < k; i++) {
        const m = this.nodes[this.rnd.int(this.nodes.length)]!;
        if (!m.up) continue;
        this.crash(m);
        this.at(20 + this.rnd.int(300), () => this.faulting && this.restart(m));
      }
    } else if (kind === 8 && this.cfg.membership === true) {
      this.changeMembership();
    } else if (kind === 6) {
      this.dropRate = this.rnd.next() * 0.15;
      this.maxDelayMs = 2 + this.rnd.int(30);
    }
    // else: quiet
    this.at(50 + this.rnd.int(400), () => this.fault());
  }

  /** Each seed weighs the fault kinds differently, so some seeds are crash storms, others
   *  partition storms: partition, heal, crash, pause, transfer, bit flip, network change,
   *  power loss of several nodes, quiet. */
  private readonly faultWeights: number[] = [];

  private pickFault(): number {
    const kinds = this.cfg.membership === true ? 10 : 9;
    if (this.faultWeights.length === 0) for (let i = 0; i < kinds; i++) this.faultWeights.push(this.rnd.next() ** 2 + (i === 5 ? 0 : 0.05));
    const w = this.faultWeights;
    let x = this.rnd.next() * w.reduce((a, b) => a + b, 0);
    for (let i = 0; i < w.length; i++) {
      x -= w[i]!;
      if (x < 0) return i;
    }
    return w.length - 1;
  }

  /** The leader adds back the node that is out, or removes one (never with a failed node
   *  around: with one voter out and one failed, no quorum could add it back). */
  private changeMembership(): boolean {
    const l = this.topLeader();
    if (l === undefined || l.paused || l.failed) return false;
    const r = l.raft!;
    const voters = r.voters;
    const out = this.ids.filter((id) => !voters.includes(id));
    let next: string[];
    if (out.length > 0) next = [...voters, out[0]!];
    else {
      if (this.nodes.some((m) => m.failed) || !this.faulting) return false;
      const victim = this.ids[this.rnd.int(this.ids.length)]!;
      next = voters.filter((v) => v !== victim);
    }
    try {
      // A member added is pinned to the identity its server introduced (RaftHost does this).
      const added = next.filter((v) => !r.voters.includes(v));
      r.proposeConfChange(next, [], this.cfg.wipe === true ? new Map(added.map((a) => [a, this.nodes[this.ids.indexOf(a)]!.identity])) : undefined);
      this.stats.confChanges++;
      this.note(`${l.id} changes voters to [${next.join(",")}]`);
    } catch (e) {
      if (!(e instanceof RaftError)) throw e;
      return false;
    }
    this.afterEvent(l);
    return true;
  }

  /** The leader of the highest term (a deposed one may not know yet). */
  private topLeader(): SimNode | undefined {
    let best: SimNode | undefined;
    for (const m of this.nodes) {
      if (!m.up || m.raft?.role !== Role.Leader) continue;
      if (best === undefined || m.raft.term > best.raft!.term) best = m;
    }
    return best;
  }

  /** After healing: add back whoever is out, retrying until the voters are every node. */
  private restoreVoters(): void {
    const l = this.topLeader();
    if (l !== undefined && l.raft!.voters.length === this.ids.length && !l.raft!.confPending) return;
    this.changeMembership();
    this.at(20, () => this.restoreVoters());
  }

  private resume(n: SimNode): void {
    if (!n.paused) return;
    n.paused = false;
    this.note(`resume ${n.id}`);
    const q = this.deferred.get(n) ?? [];
    this.deferred.delete(n);
    for (const fn of q) fn();
    const inbox = n.inbox;
    n.inbox = [];
    for (const m of inbox) {
      if (n.raft === null || !n.up) break;
      this.stats.delivered++;
      n.raft.step(m);
      this.afterEvent(n);
    }
    this.afterEvent(n);
  }

  private heal(): void {
    this.faulting = false;
    this.blocked.clear();
    this.dropRate = 0;
    this.dupRate = 0;
    this.maxDelayMs = 3;
    this.note("heal all");
    for (const n of this.nodes) {
      if (n.paused) this.resume(n);
      if (!n.up) this.restart(n);
    }
    if (this.cfg.membership === true) this.restoreVoters();
  }
}

function payloadOf(e: Entry): string {
  return e.type === EntryType.Noop ? "<noop>" : dec.decode(e.data);
}

export function runSeed(cfg: SimConfig): SimResult {
  return new Sim(cfg).run();
}
