// The membership entries of a Raft log (single-server changes take effect when appended,
// Ongaro's thesis §4.1): the voters as of the snapshot and the ConfChange entries after it,
// for RaftNode (node.ts). Values only: no messages, no I/O.
import type { RaftLog } from "./log.js";
import { nextIdentities, reidentified, sameIdentities } from "./identity.js";
import { type Entry, EntryType, RaftError, decodeVoters, encodeVoters, joinMembers } from "./types.js";

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

/**
 * The ConfChange data taking the membership from `cur` to these voters and learners (a learner
 * that is also a voter is a voter), with identities `ids` set for members (undefined or "":
 * unpinned; not given: the current ones), or null when nothing changes. One voter added,
 * removed or re-identified at a time: re-identifying a voter (a wiped server's new storage)
 * replaces a member whose old identity can never vote again, so it is a single change.
 */
export function planConfChange(
  cur: { voters: readonly string[]; learners: readonly string[]; ids: ReadonlyMap<string, string> },
  voters: readonly string[],
  learners: readonly string[],
  ids?: ReadonlyMap<string, string | undefined>,
): Uint8Array | null {
  const next = [...new Set(voters)].sort();
  const nextL = [...new Set(learners)].filter((l) => !next.includes(l)).sort();
  const nextIds = nextIdentities(cur.ids, [...next, ...nextL], ids);
  const added = next.filter((v) => !cur.voters.includes(v));
  const removed = cur.voters.filter((v) => !next.includes(v));
  const kept = next.filter((v) => cur.voters.includes(v));
  const changes = added.length + removed.length + reidentified(cur.ids, nextIds, kept).length;
  const learnersChanged = nextL.length !== cur.learners.length || nextL.some((l) => !cur.learners.includes(l));
  if (changes === 0 && !learnersChanged && sameIdentities(cur.ids, nextIds)) return null;
  if (changes > 1 || next.length === 0) throw new RaftError("failed", "membership changes add, remove or re-identify one voter at a time");
  return encodeVoters(joinMembers(next, nextL, nextIds));
}
