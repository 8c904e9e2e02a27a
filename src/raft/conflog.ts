// The membership entries of a Raft log (single-server changes take effect when appended,
// Ongaro's thesis §4.1): the voters as of the snapshot and the ConfChange entries after it,
// for RaftNode (node.ts). Values only: no messages, no I/O.
import type { RaftLog } from "./log.js";
import { type Entry, EntryType, decodeVoters } from "./types.js";

/** A membership entry in the log after the snapshot. */
interface ConfEntry {
  index: number;
  term: number;
  voters: string[];
}

export class ConfLog {
  /** Voters as of the snapshot (the configured peers before any). */
  private snapVoters: string[];
  /** Membership entries in the log after the snapshot, oldest first; the last one is in
   *  effect. */
  private confs: ConfEntry[] = [];

  constructor(snapVoters: readonly string[], entries: readonly Entry[]) {
    this.snapVoters = [...snapVoters];
    for (const e of entries) {
      if (e.type === EntryType.ConfChange) this.confs.push({ index: e.index, term: e.term, voters: decodeVoters(e.data) });
    }
  }

  /** The voters in effect: the last membership entry's, else the snapshot's. */
  current(): string[] {
    return [...(this.confs[this.confs.length - 1]?.voters ?? this.snapVoters)];
  }

  /** The voters in effect once entry i is in the log. */
  votersAt(i: number): string[] {
    let v = this.snapVoters;
    for (const c of this.confs) {
      if (c.index > i) break;
      v = c.voters;
    }
    return [...v];
  }

  /** A membership entry is in the log above `committed`. */
  pendingAbove(committed: number): boolean {
    const last = this.confs[this.confs.length - 1];
    return last !== undefined && last.index > committed;
  }

  /** The log was compacted up to index, whose voters were `voters`. */
  compact(index: number, voters: readonly string[]): void {
    this.snapVoters = [...voters];
    this.confs = this.confs.filter((c) => c.index > index);
  }

  /** A snapshot replaced the log. */
  restore(voters: readonly string[]): void {
    this.snapVoters = [...voters];
    this.confs = [];
  }

  /** The log changed around `added` (appended, or a conflicting suffix replaced): forget
   *  membership entries no longer in it and note the new ones. */
  sync(log: RaftLog, added: readonly Entry[]): void {
    while (this.confs.length > 0) {
      const c = this.confs[this.confs.length - 1]!;
      if (c.index <= log.lastIndex() && log.term(c.index) === c.term) break;
      this.confs.pop();
    }
    let after = this.confs[this.confs.length - 1]?.index ?? log.snapIndex;
    for (const e of added) {
      if (e.type !== EntryType.ConfChange || e.index <= after || log.term(e.index) !== e.term) continue;
      this.confs.push({ index: e.index, term: e.term, voters: decodeVoters(e.data) });
      after = e.index;
    }
  }
}
