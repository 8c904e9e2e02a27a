// A simulated disk for one simulated server's Raft state, at the level of records: writes sit
// in a page cache until fsync; a crash keeps a random prefix of the unsynced writes (LazyFS
// "lose unsynced writes", with tearing at record granularity); a bit flip changes a durable
// entry without fixing its CRC32C, so recovery must notice.
import { crc32c } from "../../src/raft/crc32c.js";
import type { Entry, HardState, Snapshot } from "../../src/raft/types.js";
import type { SeededRandom } from "../../src/runtime/random.js";

export interface DiskEntry {
  term: number;
  index: number;
  type: Entry["type"];
  data: Uint8Array;
  crc: number;
}

export type DiskOp = { kind: "hs"; hs: HardState } | { kind: "snap"; snap: Snapshot } | { kind: "entry"; e: DiskEntry };

interface DiskState {
  hs: HardState;
  snap: Snapshot | null;
  entries: DiskEntry[];
  /** Started blank after corruption and not caught up yet (RaftHost's Reset record). */
  recovering?: boolean;
}

export function entryCrc(term: number, index: number, type: number, data: Uint8Array): number {
  const head = new Uint8Array(17);
  const dv = new DataView(head.buffer);
  dv.setFloat64(0, term);
  dv.setFloat64(8, index);
  head[16] = type;
  return crc32c(data, 0, data.length, crc32c(head));
}

function applyOp(s: DiskState, op: DiskOp): void {
  switch (op.kind) {
    case "hs":
      s.hs = op.hs;
      return;
    case "snap":
      s.snap = op.snap;
      s.entries = s.entries.filter((e) => e.index > op.snap.index);
      return;
    case "entry": {
      const base = s.snap?.index ?? 0;
      const keep = Math.max(0, Math.min(s.entries.length, op.e.index - base - 1));
      s.entries.length = keep;
      s.entries.push(op.e);
      return;
    }
  }
}

export interface Recovered {
  hs: HardState;
  snap: Snapshot | null;
  entries: Entry[];
  /** Set when a record failed its checksum: the log was cut before it. */
  corruptAt: number | null;
  recovering: boolean;
}

export class SimDisk {
  private durable: DiskState = { hs: { term: 0, vote: "", commit: 0 }, snap: null, entries: [] };
  private pending: DiskOp[] = [];
  fsyncs = 0;

  write(op: DiskOp): void {
    this.pending.push(op);
  }

  writeEntry(e: Entry): void {
    const data = Uint8Array.from(e.data);
    this.write({ kind: "entry", e: { term: e.term, index: e.index, type: e.type, data, crc: entryCrc(e.term, e.index, e.type, data) } });
  }

  pendingCount(): number {
    return this.pending.length;
  }

  /** fsync of the first n pending writes (those issued before the fsync started). */
  sync(n: number): void {
    this.fsyncs++;
    const ops = this.pending.splice(0, n);
    for (const op of ops) applyOp(this.durable, op);
  }

  /** A snapshot written with its own fsync (temp file, fsync, rename), and the log before it
   *  dropped; unsynced writes stay pending. */
  writeSnapshotDurable(snap: Snapshot): void {
    applyOp(this.durable, { kind: "snap", snap });
  }

  crash(rnd: SeededRandom, tear: boolean): void {
    if (tear && this.pending.length > 0) {
      const keep = rnd.int(this.pending.length + 1);
      for (const op of this.pending.slice(0, keep)) applyOp(this.durable, op);
    }
    this.pending = [];
  }

  /** Flip one bit of a random durable entry; returns its index, or 0 if there is none. */
  flipBit(rnd: SeededRandom): number {
    const es = this.durable.entries;
    if (es.length === 0) return 0;
    const e = es[rnd.int(es.length)]!;
    if (e.data.length === 0) {
      e.term ^= 1 << rnd.int(4);
    } else {
      const data = Uint8Array.from(e.data);
      data[rnd.int(data.length)]! ^= 1 << rnd.int(8);
      e.data = data;
    }
    return e.index;
  }

  /** Whether any durable entry fails its checksum. */
  /** The last index the durable log reaches (flipped entries included). */
  lastDurableIndex(): number {
    const s = this.durable;
    return s.entries.length > 0 ? s.entries[s.entries.length - 1]!.index : (s.snap?.index ?? 0);
  }

  /** Start over after corruption (RaftHost): the log and the vote are gone, the term and a
   *  snapshot (whose own checksum holds) stay; nothing pending survives. */
  resetBlank(): void {
    const s = this.durable;
    this.durable = { hs: { term: s.hs.term, vote: "", commit: s.snap?.index ?? 0 }, snap: s.snap, entries: [], recovering: true };
    this.pending = [];
  }

  /** The node caught up: it votes again after a restart (the host's record; kept durable at
   *  once here, which only makes a crash right after it less conservative than the host). */
  markRecovered(): void {
    this.durable.recovering = false;
  }

  hasBadEntry(): boolean {
    return this.durable.entries.some((e) => entryCrc(e.term, e.index, e.type, e.data) !== e.crc);
  }

  recover(): Recovered {
    const s = this.durable;
    const entries: Entry[] = [];
    let corruptAt: number | null = null;
    for (const e of s.entries) {
      if (entryCrc(e.term, e.index, e.type, e.data) !== e.crc) {
        corruptAt = e.index;
        break;
      }
      entries.push({ term: e.term, index: e.index, type: e.type, data: e.data });
    }
    return { hs: { ...s.hs }, snap: s.snap, entries, corruptAt, recovering: s.recovering === true };
  }

  /** Whether the durable state holds entry (index, term) intact or a snapshot covering it. */
  holds(index: number, term: number): boolean {
    const s = this.durable;
    if (s.snap !== null && s.snap.index >= index) return true;
    const base = s.snap?.index ?? 0;
    const e = s.entries[index - base - 1];
    return e !== undefined && e.index === index && e.term === term && entryCrc(e.term, e.index, e.type, e.data) === e.crc;
  }
}
