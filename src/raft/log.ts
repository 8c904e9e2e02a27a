// The Raft log of one node: a snapshot boundary, the entries after it (all kept in memory),
// and how far they are stable (on disk), committed and applied. Entries past `stabled` are the
// unstable tail handed to the driver in Ready.entries. A pending snapshot (received from the
// leader, not yet persisted) replaces everything up to its index.
import { type Entry, type Snapshot, entrySize, raftAssert } from "./types.js";

export class RaftLog {
  /** Index and term of the last entry folded into the snapshot (0/0 initially). */
  snapIndex = 0;
  snapTerm = 0;
  /** entries[k].index === snapIndex + 1 + k. */
  entries: Entry[] = [];
  /** Entries with index ≤ stabled are on disk. */
  stabled = 0;
  committed = 0;
  applied = 0;
  /** Received by a follower, not yet persisted and applied. */
  pendingSnapshot: Snapshot | null = null;

  static restore(snapshot: Snapshot | null, entries: Entry[], commit: number, applied: number): RaftLog {
    const l = new RaftLog();
    if (snapshot !== null) {
      l.snapIndex = snapshot.index;
      l.snapTerm = snapshot.term;
    }
    for (const e of entries) {
      if (e.index <= l.snapIndex) continue;
      raftAssert(e.index === l.lastIndex() + 1, `restored entries not contiguous at ${e.index}`);
      l.entries.push(e);
    }
    l.stabled = l.lastIndex();
    l.committed = Math.min(Math.max(commit, l.snapIndex), l.lastIndex());
    l.applied = Math.min(Math.max(applied, l.snapIndex), l.committed);
    return l;
  }

  firstIndex(): number {
    return this.snapIndex + 1;
  }

  lastIndex(): number {
    return this.snapIndex + this.entries.length;
  }

  lastTerm(): number {
    const n = this.entries.length;
    return n === 0 ? this.snapTerm : this.entries[n - 1]!.term;
  }

  /** The term of entry i, or -1 if it is compacted away or beyond the end. */
  term(i: number): number {
    if (i === this.snapIndex) return this.snapTerm;
    if (i < this.snapIndex || i > this.lastIndex()) return -1;
    return this.entries[i - this.snapIndex - 1]!.term;
  }

  entry(i: number): Entry | undefined {
    return this.entries[i - this.snapIndex - 1];
  }

  matchTerm(i: number, t: number): boolean {
    const lt = this.term(i);
    return lt !== -1 && lt === t;
  }

  /** Raft §5.4.1: a candidate's log is at least as up to date as ours. */
  isUpToDate(lastIndex: number, lastTerm: number): boolean {
    const myTerm = this.lastTerm();
    return lastTerm > myTerm || (lastTerm === myTerm && lastIndex >= this.lastIndex());
  }

  /** The first entry of ents whose term differs from ours at its index (0 if none: every
   *  entry matches, or all are beyond our log and the first is new, which is also returned). */
  findConflict(ents: Entry[]): number {
    for (const e of ents) if (!this.matchTerm(e.index, e.term)) return e.index;
    return 0;
  }

  /**
   * The largest index ≤ index whose term is ≤ term: a leader uses it to skip a follower's
   * divergent tail one term at a time (etcd `findConflictByTerm`).
   */
  findConflictByTerm(index: number, term: number): { index: number; term: number } {
    let i = Math.min(index, this.lastIndex());
    for (; i > this.snapIndex; i--) {
      const t = this.term(i);
      if (t <= term) return { index: i, term: t };
    }
    return { index: this.snapIndex, term: this.snapTerm };
  }

  /**
   * Follower side of AppendEntries: if our entry at prevIndex has prevTerm, append ents
   * (truncating a conflicting suffix), advance commit to min(leaderCommit, last new index)
   * and return the last new index; otherwise null.
   */
  maybeAppend(prevIndex: number, prevTerm: number, leaderCommit: number, ents: Entry[]): number | null {
    if (!this.matchTerm(prevIndex, prevTerm)) return null;
    const lastNew = prevIndex + ents.length;
    const ci = this.findConflict(ents);
    if (ci !== 0) {
      raftAssert(ci > this.committed, `conflict at ${ci} ≤ committed ${this.committed}`);
      this.append(ents.slice(ci - prevIndex - 1));
    }
    this.commitTo(Math.min(leaderCommit, lastNew));
    return lastNew;
  }

  /** Append ents, replacing any entries at or after ents[0].index. */
  append(ents: Entry[]): void {
    if (ents.length === 0) return;
    const first = ents[0]!.index;
    raftAssert(first > this.committed, `append at ${first} would overwrite committed ${this.committed}`);
    raftAssert(first <= this.lastIndex() + 1, `append at ${first} leaves a gap after ${this.lastIndex()}`);
    if (first <= this.lastIndex()) {
      this.entries.length = first - this.snapIndex - 1;
      if (this.stabled >= first) this.stabled = first - 1;
    }
    for (const e of ents) this.entries.push(e);
  }

  commitTo(i: number): void {
    if (i > this.committed) {
      raftAssert(i <= this.lastIndex(), `commit ${i} beyond last index ${this.lastIndex()}`);
      this.committed = i;
    }
  }

  /** Entries in [lo, hi), at least one, then up to maxBytes in all. */
  slice(lo: number, hi: number, maxBytes: number): Entry[] {
    raftAssert(lo > this.snapIndex, `slice from compacted ${lo}`);
    const out: Entry[] = [];
    let bytes = 0;
    for (let i = lo; i < hi && i <= this.lastIndex(); i++) {
      const e = this.entry(i)!;
      bytes += entrySize(e);
      if (out.length > 0 && bytes > maxBytes) break;
      out.push(e);
    }
    return out;
  }

  unstableEntries(): Entry[] {
    if (this.stabled >= this.lastIndex()) return [];
    return this.entries.slice(Math.max(this.stabled, this.snapIndex) - this.snapIndex);
  }

  /** Committed entries not yet applied, up to maxBytes (at least one). */
  nextCommitted(maxBytes: number): Entry[] {
    const lo = Math.max(this.applied + 1, this.firstIndex());
    if (this.committed < lo) return [];
    return this.slice(lo, this.committed + 1, maxBytes);
  }

  stableTo(index: number, term: number): void {
    // An entry handed out for persisting may since have been replaced by a newer leader's:
    // only count it stable if it is still the same entry.
    if (index > this.stabled && this.matchTerm(index, term)) this.stabled = index;
  }

  appliedTo(i: number): void {
    if (i === 0) return;
    raftAssert(i <= this.committed && i >= this.applied, `applied ${i} outside [${this.applied}, ${this.committed}]`);
    this.applied = i;
  }

  /** Replace the whole log by a snapshot received from the leader. */
  restoreSnapshot(s: Snapshot): void {
    this.snapIndex = s.index;
    this.snapTerm = s.term;
    this.entries = [];
    this.stabled = s.index;
    this.committed = s.index;
    this.pendingSnapshot = s;
  }

  /** Drop entries up to index (≤ applied), now covered by a snapshot of the state machine. */
  compact(index: number): void {
    if (index <= this.snapIndex) return;
    raftAssert(index <= this.applied, `compact ${index} beyond applied ${this.applied}`);
    const t = this.term(index);
    this.entries = this.entries.slice(index - this.snapIndex);
    this.snapIndex = index;
    this.snapTerm = t;
  }
}
