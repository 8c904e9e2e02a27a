// Mirrors and sources. When the origin has a copy on this server, each reader copies from
// the origin stream's store directly, woken by the origin's store notifications and by a
// coarse retry tick (origins created later). Clustered, an origin with no copy here is read
// through a RemoteFeed the host opens (an internal consumer on the origin, over the cluster:
// src/jetstream/remote-source.ts). Of a replicated target only the leader's readers run
// (what they copy goes through its Raft group); a replica that stops leading forgets its
// positions and finds them again from its store when it leads.
// Positions survive restarts: a mirror resumes at its own last_seq + 1; a source at the
// origin seq recorded in sources.json or, if newer, in its last stored Nats-Stream-Source.

import { join } from "node:path";
import type { Fs } from "../runtime/fs.js";
import { writeFileAtomicSync } from "../runtime/fs.js";
import type { TimerHandle, Clock } from "../runtime/clock.js";
import type { Logger } from "../runtime/log.js";
import type { Bus } from "../contracts/bus.js";
import { appendHeaders, parseHeaders } from "../protocol/headers.js";
import type { StreamSourceConfig, StreamSourceInfoWire } from "../contracts/wire.js";
import type { StoredMsg } from "../storage/types.js";
import { sourceIndexName } from "./config.js";
import { SubjectTransform } from "./transform.js";
import type { Stream } from "./stream.js";
import { HDR_STREAM_SOURCE, HDR_TTL, msgIdOf } from "./headers.js";
import { parseMsgTtlSec, parseRfc3339Ns } from "./time.js";
import { seqFromTime } from "./get.js";
import { subjectMatches } from "../subjects/subject.js";

const BATCH = 4096;
const TICK_MS = 1000;
const SCAN_BACK_MAX = 100_000;

/** Where a remote feed starts: an origin sequence, else a time (RFC 3339), else the start. */
export interface RemoteStart {
  seq: number;
  time: string;
}

/** Messages of an origin stream held on other servers, in origin order. */
export interface RemoteFeed {
  /** The coarse tick: start over from next (null: from where the feed began) if the feed
   *  went silent. */
  tick(next: RemoteStart | null): void;
  /** Start over from this position. */
  restart(from: RemoteStart): void;
  close(): void;
}

export interface SourcingHost {
  readonly fs: Fs;
  readonly deps: { clock: Clock; log: Logger; bus: Bus };
  getStream(name: string): Stream | undefined;
  /** Clustered: read an origin that has no copy on this server over the cluster; sink gets
   *  each message with its origin sequence and time. Absent (or null): such an origin is
   *  waited for, as when it does not exist yet. */
  openRemote?(origin: string, start: RemoteStart, sink: (m: StoredMsg) => void): RemoteFeed | null;
}

class Reader {
  readonly iname: string;
  /** Next origin sequence to read; 0 until the start position is known. */
  next = 0;
  origin: Stream | null = null;
  lastActiveMono = -1;
  private readonly filter: string;
  private readonly transforms: SubjectTransform[];
  scheduled = false;
  dirty = false;
  /** The feed from an origin held elsewhere (clustered), or null. */
  remote: RemoteFeed | null = null;
  /** Mirror of a replicated target: the last origin sequence proposed (the store lags the
   *  proposals), -1 until known. */
  proposedOrigin = -1;
  /** The target's copyEpoch this reader's position was found in (-1: none yet). */
  epoch = -1;

  constructor(
    readonly target: Stream,
    readonly cfg: StreamSourceConfig,
    readonly isMirror: boolean,
  ) {
    this.iname = sourceIndexName(cfg);
    this.filter = cfg.filter_subject;
    this.transforms = cfg.subject_transforms.map((t) => SubjectTransform.create(t.src, t.dest));
  }

  /** Subject after filter/transforms, or null when the message is not wanted. */
  map(subject: string): string | null {
    if (this.transforms.length > 0) {
      for (const t of this.transforms) {
        const r = t.apply(subject);
        if (r !== null) return r;
      }
      return null;
    }
    if (this.filter !== "" && !subjectMatches(this.filter, subject)) return null;
    return subject;
  }

  info(clock: Clock): StreamSourceInfoWire {
    const o: StreamSourceInfoWire = { name: this.cfg.name, lag: 0, active: -1 };
    if (this.cfg.external !== null) o.external = { ...this.cfg.external };
    if (this.origin !== null && this.next > 0) {
      const last = this.origin.store.state().lastSeq;
      o.lag = Math.max(0, last - (this.next - 1));
    }
    if (this.lastActiveMono >= 0) o.active = Math.floor((clock.monoMs() - this.lastActiveMono) * 1e6);
    if (this.cfg.filter_subject !== "") o.filter_subject = this.cfg.filter_subject;
    if (this.cfg.subject_transforms.length > 0) o.subject_transforms = this.cfg.subject_transforms.map((t) => ({ ...t }));
    return o;
  }
}

export class Sourcing {
  private readonly readers = new Map<string, Reader[]>(); // by target stream name
  private readonly wakers = new Map<Reader, () => void>();
  private tick: TimerHandle | null = null;

  constructor(private readonly host: SourcingHost) {}

  start(): void {
    this.armTick();
  }

  stop(): void {
    if (this.tick !== null) this.host.deps.clock.clearTimer(this.tick);
    this.tick = null;
    for (const name of [...this.readers.keys()]) {
      const st = this.host.getStream(name);
      if (st) this.persist(st, true);
      this.dropReaders(name);
    }
  }

  private armTick(): void {
    this.tick = this.host.deps.clock.setTimer(() => {
      this.tick = null;
      for (const [name, rs] of this.readers) {
        for (const r of rs) {
          this.pump(r);
          r.remote?.tick(r.next > 0 ? { seq: r.next, time: "" } : null);
        }
        const st = this.host.getStream(name);
        if (st) this.persist(st, false);
      }
      this.armTick();
    }, TICK_MS);
  }

  /** (Re)build the readers of a stream from its config; keeps positions of unchanged ones. */
  attach(st: Stream): void {
    const old = new Map<string, Reader>();
    for (const r of this.readers.get(st.name) ?? []) old.set((r.isMirror ? "M:" : "S:") + r.iname, r);
    this.dropReaders(st.name);
    const cfgs: [StreamSourceConfig, boolean][] = [];
    if (st.cfg.mirror !== null) cfgs.push([st.cfg.mirror, true]);
    for (const s of st.cfg.sources) cfgs.push([s, false]);
    if (cfgs.length === 0) return;
    const saved = this.loadPositions(st);
    const rs: Reader[] = [];
    for (const [c, isMirror] of cfgs) {
      if (c.external !== null) continue; // other domains/accounts are not reachable in-process
      const r = new Reader(st, c, isMirror);
      const prev = old.get((isMirror ? "M:" : "S:") + r.iname);
      if (prev !== undefined) r.next = prev.next;
      else if (!isMirror) {
        const p = saved.get(r.iname);
        if (p !== undefined) r.next = p;
      }
      rs.push(r);
    }
    if (rs.some((r) => !r.isMirror && r.next === 0)) this.scanSourceHeaders(st, rs);
    this.readers.set(st.name, rs);
    for (const r of rs) this.pump(r);
  }

  detach(st: Stream): void {
    this.dropReaders(st.name);
  }

  private dropReaders(name: string): void {
    for (const r of this.readers.get(name) ?? []) {
      this.stopRemote(r);
      const w = this.wakers.get(r);
      if (w !== undefined && r.origin !== null) r.origin.removeStoreListener(w);
      this.wakers.delete(r);
      r.origin = null;
    }
    this.readers.delete(name);
  }

  mirrorInfo(st: Stream): StreamSourceInfoWire | undefined {
    const r = (this.readers.get(st.name) ?? []).find((x) => x.isMirror);
    if (r !== undefined) return r.info(this.host.deps.clock);
    if (st.cfg.mirror !== null) return { name: st.cfg.mirror.name, lag: 0, active: -1 };
    return undefined;
  }

  sourcesInfo(st: Stream): StreamSourceInfoWire[] | undefined {
    if (st.cfg.sources.length === 0) return undefined;
    return (this.readers.get(st.name) ?? []).filter((x) => !x.isMirror).map((r) => r.info(this.host.deps.clock));
  }

  private resolve(r: Reader): Stream | null {
    const o = this.host.getStream(r.cfg.name) ?? null;
    if (o !== r.origin) {
      const w = this.wakers.get(r);
      if (w !== undefined && r.origin !== null) r.origin.removeStoreListener(w);
      r.origin = o;
      if (o !== null) {
        const waker = (): void => this.schedule(r);
        this.wakers.set(r, waker);
        o.addStoreListener(waker);
      }
    }
    return o;
  }

  private schedule(r: Reader): void {
    if (r.scheduled) return;
    r.scheduled = true;
    this.host.deps.clock.setTimer(() => {
      r.scheduled = false;
      if (this.readers.get(r.target.name)?.includes(r)) this.pump(r);
    }, 0);
  }

  private startSeq(r: Reader, origin: Stream): number {
    if (r.isMirror) {
      const last = r.target.store.state().lastSeq;
      if (last > 0) return last + 1;
    }
    if (r.cfg.opt_start_seq > 0) return r.cfg.opt_start_seq;
    if (r.cfg.opt_start_time !== "") {
      const ns = parseRfc3339Ns(r.cfg.opt_start_time);
      if (!Number.isNaN(ns)) return seqFromTime(origin.store, ns);
    }
    return Math.max(1, origin.store.state().firstSeq);
  }

  private stopRemote(r: Reader): void {
    r.remote?.close();
    r.remote = null;
  }

  /** Copy what is new in the origin; re-schedules itself when a batch was full. */
  private pump(r: Reader): void {
    if (r.target.replicated && r.epoch !== r.target.copyEpoch) {
      // Leadership moved (maybe away and back between two ticks) or a proposal was dropped:
      // what this reader proposed may never reach the store. Find the position again from
      // the store once nothing proposed here is in flight.
      this.stopRemote(r);
      r.next = 0;
      r.proposedOrigin = -1;
      if (r.target.inflightCount > 0) return;
      r.epoch = r.target.copyEpoch;
    }
    if (!r.target.ingesting) {
      // A replica that does not lead copies nothing; it finds its position again when it
      // leads (from its store, which then has every committed copy).
      this.stopRemote(r);
      r.next = 0;
      r.proposedOrigin = -1;
      return;
    }
    const origin = this.resolve(r);
    if (origin === r.target) return;
    if (origin === null) {
      this.pumpRemote(r);
      return;
    }
    this.stopRemote(r);
    // A target whose store stopped copies nothing (and so does not move on) until it is
    // reopened; its new readers start from what it holds.
    if (r.target.storeFailure !== null) return;
    if (r.next === 0) r.next = this.startSeq(r, origin);
    let n = 0;
    while (n < BATCH) {
      const m = origin.store.loadNextMsg(">", r.next);
      if (m === null) break;
      if (r.isMirror) this.storeMirrored(r, m);
      else this.storeSourced(r, m);
      r.next = m.seq + 1;
      r.dirty = true;
      r.lastActiveMono = this.host.deps.clock.monoMs();
      n++;
    }
    if (n === BATCH) this.schedule(r);
  }

  /** The origin has no copy here: read it over the cluster (if the host can). */
  private pumpRemote(r: Reader): void {
    if (r.remote !== null || this.host.openRemote === undefined || r.target.storeFailure !== null) return;
    const start = this.remoteStart(r);
    r.remote = this.host.openRemote(r.cfg.name, start, (m) => this.onRemote(r, m));
  }

  private remoteStart(r: Reader): RemoteStart {
    if (r.next > 0) return { seq: r.next, time: "" };
    if (r.isMirror) {
      const last = r.target.store.state().lastSeq;
      if (last > 0) return { seq: last + 1, time: "" };
    } else {
      // A leader's store holds every committed copy: its newest source header is where the
      // previous leader got to.
      this.scanSourceHeaders(r.target, [r]);
      if (r.next > 0) return { seq: r.next, time: "" };
    }
    if (r.cfg.opt_start_seq > 0) return { seq: r.cfg.opt_start_seq, time: "" };
    return { seq: 0, time: r.cfg.opt_start_time };
  }

  private onRemote(r: Reader, m: StoredMsg): void {
    if (!r.target.ingesting || r.target.storeFailure !== null || !this.readers.get(r.target.name)?.includes(r) || (r.target.replicated && r.epoch !== r.target.copyEpoch)) {
      this.stopRemote(r);
      return;
    }
    if (r.next > 0 && m.seq < r.next) return; // seen (a feed that started over)
    if (r.isMirror) this.storeMirrored(r, m);
    else this.storeSourced(r, m);
    r.next = m.seq + 1;
    r.dirty = true;
    r.lastActiveMono = this.host.deps.clock.monoMs();
  }

  private storeMirrored(r: Reader, m: StoredMsg): void {
    const t = r.target;
    const subj = r.map(m.subject);
    if (subj === null) return; // filtered out: leaves a gap, filled when the next one arrives
    if (t.replicated) {
      // What is proposed reaches the store only when it commits: judge against what was
      // proposed. Gaps are not reserved (that would write around the Raft group): the
      // mirror's sequences then run behind the origin's after deleted origin messages.
      if (r.proposedOrigin < 0) r.proposedOrigin = t.store.state().lastSeq;
      if (m.seq <= r.proposedOrigin) return;
      r.proposedOrigin = m.seq;
      t.processMirrored(subj, m.hdr, m.data, m.tsNs, ttlOf(m.hdr));
      return;
    }
    const st = t.store.state();
    if (m.seq <= st.lastSeq) return;
    if (m.seq > st.lastSeq + 1) {
      if (st.msgs === 0) t.store.compact(m.seq);
      else {
        // Interior gap: reserve the sequences the origin no longer has.
        for (let s = st.lastSeq + 1; s < m.seq; s++) t.store.removeMsg(t.store.storeMsg("", null, Buffer.alloc(0), m.tsNs, 0));
      }
    }
    t.processMirrored(subj, m.hdr, m.data, m.tsNs, ttlOf(m.hdr));
  }

  private storeSourced(r: Reader, m: StoredMsg): void {
    const subj = r.map(m.subject);
    if (subj === null) return;
    const tr = r.cfg.subject_transforms;
    const filter = tr.length > 0 ? tr.map((x) => x.src || ">").join(",") : r.cfg.filter_subject || ">";
    const dest = tr.length > 0 ? tr.map((x) => x.dest || ">").join(",") : ">";
    const hdr = appendHeaders(m.hdr, [[HDR_STREAM_SOURCE, `${r.cfg.name} ${m.seq} ${filter} ${dest} ${m.subject}`]]);
    r.target.processSourced(subj, hdr, m.data, msgIdOf(m.hdr), ttlOf(m.hdr));
  }

  // ---------- persistence of source positions ----------

  private positionsFile(st: Stream): string | null {
    return st.dir === null ? null : join(st.dir, "sources.json");
  }

  private loadPositions(st: Stream): Map<string, number> {
    const out = new Map<string, number>();
    const f = this.positionsFile(st);
    if (f === null) return out;
    const raw = this.host.fs.readFile(f);
    if (raw === null) return out;
    try {
      const o = JSON.parse(raw.toString("utf8")) as Record<string, number>;
      for (const [k, v] of Object.entries(o)) if (typeof v === "number") out.set(k, v);
    } catch {
      this.host.deps.log.warn(`JetStream ignoring unreadable ${f}`);
    }
    return out;
  }

  private persist(st: Stream, force: boolean): void {
    const rs = (this.readers.get(st.name) ?? []).filter((r) => !r.isMirror);
    if (st.dir === null || rs.length === 0) return;
    if (!force && !rs.some((r) => r.dirty)) return;
    const o: Record<string, number> = {};
    for (const r of rs) {
      o[r.iname] = r.next;
      r.dirty = false;
    }
    // Positions may lag the data (never lead it): on recovery the header scan catches up.
    st.store.sync((err) => {
      if (err !== null) return; // not durable: the positions would lead the data
      try {
        if (st.dir !== null && this.host.fs.stat(st.dir) !== null) {
          writeFileAtomicSync(this.host.fs, st.dir, "sources.json", Buffer.from(JSON.stringify(o)));
        }
      } catch (e) {
        this.host.deps.log.warn(`JetStream could not save source positions of '${st.name}': ${(e as Error).message}`);
      }
    });
  }

  /** Newest stored Nats-Stream-Source per source, scanning back from the stream's end. */
  private scanSourceHeaders(st: Stream, rs: Reader[]): void {
    const want = new Map<string, Reader>();
    for (const r of rs) if (!r.isMirror) want.set(r.cfg.name, r);
    const found = new Set<string>();
    const s = st.store.state();
    let scanned = 0;
    for (let seq = s.lastSeq; seq >= s.firstSeq && seq > 0 && scanned < SCAN_BACK_MAX; seq--, scanned++) {
      const m = st.store.loadMsg(seq);
      if (m === null || m.hdr === null) continue;
      if (m.hdr.indexOf(HDR_STREAM_SOURCE, 0, "latin1") < 0) continue;
      let v = "";
      for (const [k, val] of parseHeaders(m.hdr).entries) if (k === HDR_STREAM_SOURCE) v = val;
      const f = v.split(" ");
      const name = f[0] ?? "";
      const oseq = Number(f[1]);
      if (found.has(name) || !Number.isFinite(oseq)) continue;
      const r = want.get(name);
      if (r === undefined) continue;
      found.add(name);
      if (oseq + 1 > r.next) r.next = oseq + 1;
      if (found.size === want.size) break;
    }
  }
}

function ttlOf(hdr: Buffer | null): number {
  if (hdr === null || hdr.indexOf(HDR_TTL, 0, "latin1") < 0) return 0;
  for (const [k, v] of parseHeaders(hdr).entries) {
    if (k === HDR_TTL) {
      const t = parseMsgTtlSec(v);
      return Number.isNaN(t) ? 0 : t;
    }
  }
  return 0;
}
