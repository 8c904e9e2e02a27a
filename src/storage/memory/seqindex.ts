// Purges on the sequence index (the StreamStore contract's purge and beginPurge): at once, or
// a slice at a time (a paced purge: what it removes is fixed when it begins, as a cut sequence
// and a filter, so messages stored meanwhile are not its; a removal of a message it already
// had answers "not there"). The rest of the index is seqindex-core.ts.
import type { StorePurge } from "../types.js";
import { isAllFilter, isLiteralSubject, filterMatcher } from "../subjects.js";
import { donePurge, PurgeJob } from "./purgejob.js";
import { SeqIndexCore } from "./seqindex-core.js";

export { unlimitedLimits } from "./seqindex-core.js";
export type { UintCol } from "./chunkcol.js";

export abstract class SeqIndex extends SeqIndexCore {
  /** Set while the running job removes (removeSeq answers true for it). */
  private inJob = false;

  protected purgeTakes(j: PurgeJob, seq: number, id: number): boolean {
    if (seq >= j.cut || !(j.front || this.jobMatches(j, id))) return false;
    j.purged++;
    return !this.inJob;
  }

  purge(opts: { subject?: string; seq?: number; keep?: number }): number {
    this.finishPurge();
    const subject = opts.subject ?? "";
    const seq = opts.seq ?? 0;
    const keep = opts.keep ?? 0;
    let n = 0;
    if (isAllFilter(subject)) {
      if (keep === 0 && seq === 0) n = this.removeRange(this.lastSeq + 1);
      else if (seq > 1) return this.compact(seq);
      else if (keep > 0) {
        if (keep >= this.msgs) return 0;
        return this.compact(this.lastSeq - keep + 1);
      }
      this.afterMutation();
      return n;
    }
    const seqs: number[] = [];
    const limit = seq > 1 ? seq : this.lastSeq + 1;
    if (isLiteralSubject(subject)) {
      const rec = this.subjects.get(subject);
      if (rec === undefined) return 0;
      const id = rec.id;
      const end = Math.min(limit - 1, this.subjLast(rec));
      for (let s = this.subjCol.find(this.subjFirst(rec), end, id, true); s <= end; s = this.subjCol.find(s + 1, end, id, true)) seqs.push(s);
    } else {
      const bits = this.subjTable.matchBits(subject);
      for (let s = this.firstSeq; s < limit && s <= this.lastSeq; s++) {
        const id = this.subjCol.get(s);
        if (id !== 0 && this.subjTable.idMatches(bits, subject, id)) seqs.push(s);
      }
    }
    // keep counts across the whole filter, newest kept (nats-server PurgeEx)
    let remove = seqs.length;
    if (keep > 0) {
      const total = this.countMatching(subject);
      if (keep >= total) return 0;
      remove = Math.min(remove, total - keep);
    }
    for (let k = 0; k < remove; k++) if (this.removeSeq(seqs[k] as number, false)) n++;
    this.afterMutation();
    return n;
  }

  // ---- paced purges ----

  /** purge() a slice at a time (the StreamStore contract's beginPurge). What purge() would
   *  remove now is fixed here as a range and a filter: everything below a cut sequence
   *  (all subjects, with keep or seq), or the matching messages below a cut (a filter; with
   *  keep, the cut is the first message kept). Messages stored later lie above the cut. */
  beginPurge(opts: { subject?: string; seq?: number; keep?: number }): StorePurge {
    this.finishPurge();
    const subject = opts.subject ?? "";
    const seq = opts.seq ?? 0;
    const keep = opts.keep ?? 0;
    let job: PurgeJob;
    if (isAllFilter(subject)) {
      // everything, or a jump past the end: work per subject, not per message
      if ((keep === 0 && seq === 0) || seq > this.lastSeq) return donePurge(this.purge(opts));
      let cut: number;
      if (seq > 1) cut = seq;
      else if (keep > 0) {
        if (keep >= this.msgs) return donePurge(0);
        cut = this.lastSeq - keep + 1;
      } else return donePurge(0);
      if (this.msgs === 0 || cut <= this.firstSeq) return donePurge(this.purge(opts));
      job = new PurgeJob(this, true, cut, "", 0);
    } else {
      let id = 0;
      if (isLiteralSubject(subject)) {
        const rec = this.subjects.get(subject);
        if (rec === undefined) return donePurge(0);
        id = rec.id;
      }
      // never above what is stored now: later messages are not the purge's
      let cut = seq > 1 ? Math.min(seq, this.lastSeq + 1) : this.lastSeq + 1;
      if (keep > 0) {
        const total = this.countMatching(subject);
        if (keep >= total) return donePurge(0);
        cut = Math.min(cut, this.nthMatchingFromEnd(subject, id, keep));
      }
      if (this.msgs === 0 || cut <= this.firstSeq) return donePurge(0);
      job = new PurgeJob(this, false, cut, subject, id);
    }
    job.cursor = this.firstSeq;
    this.job = job;
    return job;
  }

  /** The running paced purge finishes now (before an operation that must see it done). */
  protected finishPurge(): void {
    const j = this.job;
    if (j !== null) this.purgeStep(j, Infinity);
  }

  /** The running paced purge stops where it is (the store is going away). */
  protected abandonPurge(): void {
    const j = this.job;
    if (j === null) return;
    j.done = true;
    this.job = null;
  }

  private jobMatches(j: PurgeJob, id: number): boolean {
    return j.id !== 0 ? id === j.id : this.subjTable.idMatches(this.subjTable.matchBits(j.filter), j.filter, id);
  }

  /** One step of job j: at most about `budget` sequences from its cursor. */
  purgeStep(j: PurgeJob, budget: number): boolean {
    if (j.done) return true;
    if (this.job !== j || this.storeClosed()) {
        if (this.job === j) this.job = null;
      j.done = true;
      return true;
    }
    const from = Math.max(j.cursor, this.firstSeq);
    this.inJob = true;
    try {
      if (j.front) {
        const to = Math.min(j.cut, from + budget);
        if (this.msgs > 0 && to > this.firstSeq) j.purged += this.removeRange(to);
        j.cursor = to;
      } else {
        const stop = Math.min(j.cut - 1, this.lastSeq, from + budget - 1);
        const col = this.subjCol;
        if (j.id !== 0) {
          const id = j.id;
          for (let s = col.find(from, stop, id, true); s <= stop; s = col.find(s + 1, stop, id, true)) this.removeSeq(s, false);
        } else {
          const bits = this.subjTable.matchBits(j.filter);
          for (let s = from; s <= stop; ) {
            const id = col.get(s);
            const e = Math.min(col.runEnd(s), stop);
            if (id !== 0 && this.subjTable.idMatches(bits, j.filter, id)) for (let q = s; q <= e; q++) this.removeSeq(q, false);
            s = e + 1;
          }
        }
        j.cursor = stop + 1;
      }
    } finally {
      this.inJob = false;
    }
    this.afterMutation();
    if (j.cursor < j.cut && j.cursor <= this.lastSeq) return false;
    j.done = true;
    this.job = null;
    this.afterPurgeDone();
    return true;
  }

  /** A paced purge is under way (the file store holds back compaction of the block it is in). */
  protected purgeRunning(): boolean {
    return this.job !== null;
  }

  /** The running paced purge finished. */
  protected afterPurgeDone(): void {}

  /** The sequence of the keep-th newest message matching filter (id for a literal one);
   *  there are more than keep. */
  private nthMatchingFromEnd(filter: string, id: number, keep: number): number {
    const col = this.subjCol;
    const first = this.firstSeq;
    let k = 0;
    if (id !== 0) {
      for (let s = col.findBack(this.lastSeq, first, id, true); s >= first; s = col.findBack(s - 1, first, id, true)) if (++k === keep) return s;
      return first;
    }
    const bits = this.subjTable.matchBits(filter);
    for (let s = this.lastSeq; s >= first; ) {
      const v = col.get(s);
      const b = Math.max(col.runStart(s), first);
      if (v !== 0 && this.subjTable.idMatches(bits, filter, v)) {
        const n = s - b + 1;
        if (k + n >= keep) return s - (keep - k - 1);
        k += n;
      }
      s = b - 1;
    }
    return first;
  }

  private countMatching(filter: string): number {
    let n = 0;
    const match = filterMatcher(filter);
    for (const rec of this.subjects.values()) if (match(rec.name)) n += rec.msgs;
    return n;
  }

}
