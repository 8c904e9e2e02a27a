// The write-ahead log of one server, shared by every Raft group on it (CLUSTERING.md §3.2):
// records from all groups go into one sequence of segment files, so one fdatasync per
// event-loop turn makes every group's entries and hard state durable at once (group commit).
//
// Records are buffered in memory until flush(); a flush writes them with one write and one
// fsync, and only one flush is in flight at a time, so callers of sync() in the same turn
// (and those arriving while an fsync runs) share the next fsync. A segment past its size
// limit is closed at the start of a flush, when everything in it is already durable; the new
// segment starts with a checkpoint of every group's hard state and snapshot mark, so only
// entries tie a group to older segments, and a segment is deleted once every group's
// snapshot covers its entries there.
//
// Recovery reads the segments in order and stops at the first record that fails its CRC32C.
// A record cut short, or bad, at the very end of the newest segment is a torn write of a
// flush that never completed (nothing was acknowledged from it): it is truncated away. A bad
// record anywhere else is corruption: `corrupt` is set and the driver must fail() its groups.
import { join } from "node:path";
import type { Fs } from "../runtime/fs.js";
import type { Scheduler } from "../runtime/sched.js";
import { type Entry, type EntryType, type HardState } from "./types.js";
import { RecordType, decodeRecord, encodeRecord, recordSize, type WalRecord } from "./walrecord.js";

export interface WalOptions {
  /** A segment is closed once it holds this many bytes (default 64 MiB). */
  segmentBytes?: number;
}

export interface RecoveredGroup {
  hardState: HardState;
  snapIndex: number;
  snapTerm: number;
  entries: Entry[];
  /** Started blank after corruption and not caught up yet: it must not vote. */
  recovering: boolean;
}

export interface WalCorruption {
  segment: string;
  offset: number;
  reason: string;
}

export interface WalStats {
  fsyncs: number;
  flushes: number;
  bytesWritten: number;
  records: number;
  segmentsCreated: number;
  segmentsDeleted: number;
}

interface Segment {
  seq: number;
  name: string;
  /** Bytes in the file. */
  bytes: number;
  /** Per group, the highest entry index written to this segment. */
  maxIndex: Map<string, number>;
}

interface GroupMeta {
  hs: HardState;
  snapIndex: number;
  snapTerm: number;
  recovering: boolean;
}

const SEGMENT_PREFIX = "wal-";
const SEGMENT_SUFFIX = ".log";
const utf8 = new TextEncoder();
const utf8d = new TextDecoder();

function segName(seq: number): string {
  return `${SEGMENT_PREFIX}${seq.toString().padStart(16, "0")}${SEGMENT_SUFFIX}`;
}

export class Wal {
  readonly stats: WalStats = { fsyncs: 0, flushes: 0, bytesWritten: 0, records: 0, segmentsCreated: 0, segmentsDeleted: 0 };
  /** Set by open() when a record failed its checksum before the tail. */
  corrupt: WalCorruption | null = null;
  /** Bytes cut from a torn tail on open(). */
  tornBytes = 0;
  /** An fsync or write failed: nothing more is acknowledged. */
  failed: Error | null = null;

  private readonly segmentBytes: number;
  private segments: Segment[] = [];
  private fd = -1;
  private readonly groups = new Map<string, GroupMeta>();
  private readonly recovered = new Map<string, RecoveredGroup>();
  private buf: Buffer = Buffer.allocUnsafe(64 * 1024);
  private bufLen = 0;
  /** Callbacks waiting for the buffered records to be durable. */
  private waiting: Array<(err: Error | null) => void> = [];
  private inflight = false;
  private scheduled = false;
  private closed = false;
  /** Highest entry index per group among the buffered records (which segment they land in
   *  is decided at flush). */
  private bufMax = new Map<string, number>();
  /** Highest segment number present on disk, read or not. */
  private maxSeq = 0;

  private constructor(
    private readonly fs: Fs,
    readonly dir: string,
    private readonly sched: Scheduler,
    opts: WalOptions,
  ) {
    this.segmentBytes = opts.segmentBytes ?? 64 * 1024 * 1024;
  }

  /** Open (or create) the WAL in dir and replay it; see recoveredGroups(). */
  static open(fs: Fs, dir: string, sched: Scheduler, opts: WalOptions = {}): Wal {
    const w = new Wal(fs, dir, sched, opts);
    fs.mkdirp(dir);
    w.replay();
    w.startSegment();
    return w;
  }

  /** What replay found, per group. */
  recoveredGroups(): Map<string, RecoveredGroup> {
    return this.recovered;
  }

  // ---- writing ----

  appendEntries(group: string, entries: Entry[]): void {
    for (const e of entries) {
      this.put({ type: RecordType.Entry, entryType: e.type, group, term: e.term, index: e.index, payload: e.data });
      this.bufMax.set(group, Math.max(this.bufMax.get(group) ?? 0, e.index));
    }
  }

  setHardState(group: string, hs: HardState): void {
    this.meta(group).hs = hs;
    this.put({ type: RecordType.HardState, entryType: 0, group, term: hs.term, index: hs.commit, payload: utf8.encode(hs.vote) });
  }

  /** The group starts over (its state was corrupt): a replay forgets its earlier records,
   *  and they no longer keep a segment from being deleted. */
  resetGroup(group: string): void {
    this.startOver(group, this.meta(group));
    this.put({ type: RecordType.Reset, entryType: 0, group, term: 0, index: 0, payload: new Uint8Array(0) });
  }

  /** A group's state as a Reset record leaves it: nothing, recovering; its entries in the
   *  segments no longer count. */
  private startOver(group: string, m: GroupMeta): void {
    m.hs = { term: 0, vote: "", commit: 0 };
    m.snapIndex = 0;
    m.snapTerm = 0;
    m.recovering = true;
    for (const sg of this.segments) sg.maxIndex.delete(group);
  }

  /** The group is gone from this server for good (its stream deleted or moved away): its
   *  records no longer keep segments, and a replay starts it from nothing. */
  forgetGroup(group: string): void {
    if (!this.groups.has(group)) return;
    this.resetGroup(group);
    this.setRecovered(group);
    this.groups.delete(group);
  }

  /** A group that started blank caught up (RaftNode.recovering went false). */
  setRecovered(group: string): void {
    const m = this.meta(group);
    if (!m.recovering) return;
    m.recovering = false;
    this.put({ type: RecordType.Recovering, entryType: 0, group, term: 0, index: 0, payload: new Uint8Array(0) });
  }

  /** The group's log now starts after index: a durable snapshot covers everything up to it. */
  markSnapshot(group: string, index: number, term: number): void {
    const m = this.meta(group);
    if (index <= m.snapIndex) return;
    m.snapIndex = index;
    m.snapTerm = term;
    this.put({ type: RecordType.SnapMark, entryType: 0, group, term, index, payload: new Uint8Array(0) });
  }

  /** Call cb once everything appended so far is durable (shared fsync). */
  sync(cb: (err: Error | null) => void): void {
    if (this.failed !== null) {
      const err = this.failed;
      this.sched.microtask(() => cb(err));
      return;
    }
    this.waiting.push(cb);
    if (!this.scheduled && !this.inflight) {
      this.scheduled = true;
      this.sched.microtask(() => this.flush());
    }
  }

  /** Delete segments whose entries every group's snapshot has passed; returns how many. */
  releaseSegments(): number {
    let n = 0;
    while (this.segments.length > 1) {
      const s = this.segments[0]!;
      for (const [g, max] of s.maxIndex) if ((this.groups.get(g)?.snapIndex ?? 0) < max) return n;
      this.fs.unlink(join(this.dir, s.name));
      this.segments.shift();
      this.stats.segmentsDeleted++;
      n++;
    }
    return n;
  }

  /**
   * After corruption (the driver starts every group blank, to re-sync from its peers): move
   * every segment but the new current one into a `corrupt-<n>` directory beside them, kept
   * for inspection and never read again, and forget what replay found. Returns that
   * directory.
   */
  quarantine(): string {
    const cur = this.current();
    const to = join(this.dir, `corrupt-${cur.seq}`);
    this.fs.mkdirp(to);
    for (const n of this.fs.readdir(this.dir)) {
      if (n.startsWith(SEGMENT_PREFIX) && n.endsWith(SEGMENT_SUFFIX) && n !== cur.name) this.fs.rename(join(this.dir, n), join(to, n));
    }
    this.fs.fsyncDirSync(to);
    this.fs.fsyncDirSync(this.dir);
    this.segments = [cur];
    this.groups.clear();
    this.recovered.clear();
    this.bufMax.clear();
    // The checkpoint queued for the new segment described the old state.
    this.bufLen = 0;
    return to;
  }

  /** Bytes in every live segment. */
  totalBytes(): number {
    let n = 0;
    for (const s of this.segments) n += s.bytes;
    return n;
  }

  /** The groups whose entries keep the oldest segment from being deleted (their snapshot is
   *  before them): a snapshot of each frees it. Empty with one segment. */
  pinningGroups(): string[] {
    if (this.segments.length < 2) return [];
    const out: string[] = [];
    for (const [g, max] of this.segments[0]!.maxIndex) if ((this.groups.get(g)?.snapIndex ?? 0) < max) out.push(g);
    return out;
  }

  /** The live segment files, oldest first. */
  segmentNames(): string[] {
    return this.segments.map((s) => s.name);
  }

  close(): void {
    this.closed = true;
    if (this.fd >= 0) this.fs.close(this.fd);
    this.fd = -1;
  }

  private meta(group: string): GroupMeta {
    let m = this.groups.get(group);
    if (m === undefined) {
      m = { hs: { term: 0, vote: "", commit: 0 }, snapIndex: 0, snapTerm: 0, recovering: false };
      this.groups.set(group, m);
    }
    return m;
  }

  private current(): Segment {
    return this.segments[this.segments.length - 1]!;
  }

  private put(r: WalRecord): void {
    if (this.closed) throw new Error("raft wal: closed");
    const g = utf8.encode(r.group);
    const need = recordSize(g.length, r.payload.length);
    if (this.bufLen + need > this.buf.length) {
      const nb = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.bufLen + need));
      this.buf.copy(nb, 0, 0, this.bufLen);
      this.buf = nb;
    }
    this.bufLen = encodeRecord(this.buf, this.bufLen, r, g);
    this.stats.records++;
  }

  private flush(): void {
    this.scheduled = false;
    if (this.inflight || this.closed) return;
    const cbs = this.waiting;
    this.waiting = [];
    if (cbs.length === 0) return;
    if (this.failed !== null) {
      for (const cb of cbs) cb(this.failed);
      return;
    }
    try {
      // Everything before is durable here (one flush at a time): a safe point to rotate.
      if (this.current().bytes >= this.segmentBytes && this.bufLen > 0) this.rotate();
      const seg = this.current();
      for (const [g, max] of this.bufMax) seg.maxIndex.set(g, Math.max(seg.maxIndex.get(g) ?? 0, max));
      this.bufMax.clear();
      if (this.bufLen > 0) {
        this.fs.write(this.fd, this.buf, 0, this.bufLen, seg.bytes);
        seg.bytes += this.bufLen;
        this.stats.bytesWritten += this.bufLen;
        this.bufLen = 0;
      }
    } catch (e) {
      this.failed = e as Error;
      for (const cb of cbs) cb(this.failed);
      return;
    }
    this.inflight = true;
    this.stats.flushes++;
    this.fs.fsync(this.fd, (err) => {
      this.inflight = false;
      this.stats.fsyncs++;
      if (err !== null && this.failed === null) this.failed = err;
      for (const cb of cbs) cb(this.failed);
      if (this.waiting.length > 0 && !this.scheduled) {
        this.scheduled = true;
        this.sched.microtask(() => this.flush());
      }
    });
  }

  private rotate(): void {
    // The records waiting in buf go to the new segment, after a checkpoint of every group.
    const pending = Buffer.from(this.buf.subarray(0, this.bufLen));
    this.bufLen = 0;
    if (this.fd >= 0) this.fs.close(this.fd);
    this.startSegment();
    this.ensure(pending.length);
    pending.copy(this.buf, this.bufLen);
    this.bufLen += pending.length;
  }

  private ensure(extra: number): void {
    if (this.bufLen + extra <= this.buf.length) return;
    const nb = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.bufLen + extra));
    this.buf.copy(nb, 0, 0, this.bufLen);
    this.buf = nb;
  }

  /** Create the next segment (durably named) and queue the checkpoint records into buf. */
  private startSegment(): void {
    const seq = Math.max(this.maxSeq, this.segments.length > 0 ? this.current().seq : 0) + 1;
    this.maxSeq = seq;
    const name = segName(seq);
    const path = join(this.dir, name);
    this.fd = this.fs.open(path, "rw");
    this.fs.truncate(this.fd, 0);
    this.fs.fsyncDirSync(this.dir);
    this.segments.push({ seq, name, bytes: 0, maxIndex: new Map() });
    this.stats.segmentsCreated++;
    for (const [g, m] of this.groups) {
      if (m.snapIndex > 0) this.put({ type: RecordType.SnapMark, entryType: 0, group: g, term: m.snapTerm, index: m.snapIndex, payload: new Uint8Array(0) });
      this.put({ type: RecordType.HardState, entryType: 0, group: g, term: m.hs.term, index: m.hs.commit, payload: utf8.encode(m.hs.vote) });
      if (m.recovering) this.put({ type: RecordType.Recovering, entryType: 0, group: g, term: 0, index: 1, payload: new Uint8Array(0) });
    }
  }

  // ---- recovery ----

  private replay(): void {
    const names = this.fs
      .readdir(this.dir)
      .filter((n) => n.startsWith(SEGMENT_PREFIX) && n.endsWith(SEGMENT_SUFFIX))
      .sort();
    for (const n of names) this.maxSeq = Math.max(this.maxSeq, Number(n.slice(SEGMENT_PREFIX.length, -SEGMENT_SUFFIX.length)) || 0);
    for (let k = 0; k < names.length; k++) {
      const name = names[k]!;
      const seq = Number(name.slice(SEGMENT_PREFIX.length, -SEGMENT_SUFFIX.length));
      const seg: Segment = { seq, name, bytes: 0, maxIndex: new Map() };
      this.segments.push(seg);
      const path = join(this.dir, name);
      const data = this.fs.readFile(path) ?? Buffer.alloc(0);
      const last = k === names.length - 1;
      seg.bytes = data.length;
      let off = 0;
      while (off < data.length) {
        const d = decodeRecord(data, off, data.length);
        if (d.kind === "ok") {
          this.apply(seg, d.record);
          off = d.next;
          continue;
        }
        if (last && (d.kind === "short" || d.end === data.length)) {
          // A torn tail: the flush that wrote it never completed.
          this.tornBytes = data.length - off;
          seg.bytes = off;
          const fd = this.fs.open(path, "rw");
          try {
            this.fs.truncate(fd, off);
            this.fs.fsyncSync(fd);
          } finally {
            this.fs.close(fd);
          }
        } else {
          this.corrupt = { segment: name, offset: off, reason: d.kind === "short" ? "record cut short before the last segment" : "checksum mismatch" };
        }
        break;
      }
      if (this.corrupt !== null) break;
    }
    for (const [name, g] of this.recovered) {
      const keepFrom = g.entries.findIndex((e) => e.index > g.snapIndex);
      g.entries = keepFrom < 0 ? [] : g.entries.slice(keepFrom);
      const first = g.entries[0];
      if (first !== undefined && first.index !== g.snapIndex + 1) {
        this.corrupt ??= { segment: "", offset: -1, reason: `group ${name}: log resumes at ${first.index} after snapshot ${g.snapIndex}` };
      }
    }
  }

  private apply(seg: Segment, r: WalRecord): void {
    let g = this.recovered.get(r.group);
    if (g === undefined) {
      g = { hardState: { term: 0, vote: "", commit: 0 }, snapIndex: 0, snapTerm: 0, entries: [], recovering: false };
      this.recovered.set(r.group, g);
    }
    const m = this.meta(r.group);
    switch (r.type) {
      case RecordType.HardState:
        g.hardState = { term: r.term, vote: utf8d.decode(r.payload), commit: r.index };
        m.hs = g.hardState;
        return;
      case RecordType.SnapMark:
        if (r.index > g.snapIndex) {
          g.snapIndex = r.index;
          g.snapTerm = r.term;
          m.snapIndex = r.index;
          m.snapTerm = r.term;
          const keepFrom = g.entries.findIndex((e) => e.index > r.index);
          g.entries = keepFrom < 0 ? [] : g.entries.slice(keepFrom);
        }
        return;
      case RecordType.Reset:
        g.hardState = { term: 0, vote: "", commit: 0 };
        g.snapIndex = 0;
        g.snapTerm = 0;
        g.entries = [];
        g.recovering = true;
        this.startOver(r.group, m);
        m.hs = g.hardState;
        return;
      case RecordType.Recovering:
        g.recovering = r.index === 1;
        m.recovering = g.recovering;
        return;
      case RecordType.Entry: {
        seg.maxIndex.set(r.group, Math.max(seg.maxIndex.get(r.group) ?? 0, r.index));
        if (r.index <= g.snapIndex) return;
        const e: Entry = { term: r.term, index: r.index, type: r.entryType as EntryType, data: Uint8Array.from(r.payload) };
        const first = g.entries.length > 0 ? g.entries[0]!.index : r.index;
        const keep = r.index - first;
        // A later record for an index replaces it and everything after (a new leader's).
        // One that does not follow the run starts a new run: the entries in between were in
        // segments deleted because a snapshot mark later in the log covers them (checked at
        // the end of replay).
        if (keep < 0 || keep > g.entries.length) g.entries = [e];
        else {
          g.entries.length = keep;
          g.entries.push(e);
        }
        return;
      }
    }
  }
}
