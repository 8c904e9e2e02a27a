// The in-memory sequence index shared by both stores: columns indexed by sequence plus a
// per-subject table (subjtable.ts). It owns every rule about sequences, limits, compact, TTL
// and counting (purges: seqindex.ts, the class the stores extend); the memory and file stores only add where the bytes live (and
// the timestamp: the file store reads it from the record). The two columns here (subject id
// and size, by seq) are ChunkCols: a chunk of 4096 sequences whose entries are one value (one
// subject, one size, or nothing) costs a few numbers, any other a typed array as narrow as
// its values, so a stream of one subject and one message size keeps almost nothing per
// message (nats-server keeps no per-message state for cold blocks).
import type { LastSeqsScan, StoreCallbacks, StoreLimits, StreamStoreState, SubjectState, StoredMsg } from "../types.js";
import { isAllFilter, isLiteralSubject, filterMatcher } from "../subjects.js";
import { ChunkCol } from "./chunkcol.js";
import { type SubjRec, SubjectTable } from "./subjtable.js";
import { TtlHeap } from "./ttlheap.js";
import type { PurgeJob } from "./purgejob.js";

// Live messages are also counted per chunk of 4096 sequences, so counting from a start
// sequence (numPending) touches one partial chunk plus a counter per later chunk.
const CHUNK = 4096;
const CHUNK_BITS = 12; // CHUNK = 2^12

export const unlimitedLimits: StoreLimits = { maxMsgs: -1, maxBytes: -1, maxAgeMs: 0, maxMsgsPerSubject: -1 };

export abstract class SeqIndexCore {
  protected readonly subjCol = new ChunkCol(CHUNK); // subject id by seq, 0 = no message
  private readonly sizeCol = new ChunkCol(CHUNK); // bytes counted for limits / state (kept after removal)

  protected firstSeq = 0;
  protected lastSeq = 0;
  protected lastTsNs = 0;
  protected msgs = 0;
  protected bytes = 0;

  protected readonly subjTable = new SubjectTable();
  /** The subject table's maps, by name and by id (subjtable.ts). */
  protected readonly subjects = this.subjTable.byName;
  protected readonly byId = this.subjTable.byId;

  // Min-heap of (expiry ns, seq) for messages with a TTL; stale entries are skipped on pop.
  private readonly ttl = new TtlHeap();

  protected limits: StoreLimits;
  protected readonly callbacks: StoreCallbacks;
  private chunkCnt = new Uint32Array(64);
  private chunkBase = 0; // chunk number (floor(seq / CHUNK)) counted by chunkCnt[0]
  /** The purge begun with beginPurge and not done yet, or null (seqindex.ts runs it). */
  protected job: PurgeJob | null = null;

  constructor(limits: StoreLimits | null, callbacks: StoreCallbacks | null) {
    this.limits = { ...(limits ?? unlimitedLimits) };
    this.callbacks = callbacks ?? {};
  }

  // ---- hooks for the concrete store ----
  /** A message left the index (the store's own record of it still there, subject column
   *  already 0). */
  protected abstract onRemoved(seq: number): void;
  /** The live message at seq. */
  protected abstract readAt(seq: number, subject: string): StoredMsg;
  /** Timestamp (ns) of the live message at seq. */
  protected abstract tsAt(seq: number): number;
  /** The store was closed (a running paced purge stops). */
  protected abstract storeClosed(): boolean;
  /** Whether the running paced purge `j` had the message at seq (subject id `id`): it counts
   *  it, and a removal by anyone else then answers that it was not there. */
  protected abstract purgeTakes(j: PurgeJob, seq: number, id: number): boolean;
  /** The running paced purge finishes now (before an operation that must see it done). */
  protected abstract finishPurge(): void;

  // ---- subjects ----
  protected internSubject(subject: string): SubjRec {
    return this.subjTable.intern(subject);
  }

  private fixFirst(rec: SubjRec): void {
    if (!rec.firstStale) return;
    const id = rec.id;
    rec.first = this.subjCol.find(Math.max(rec.first, this.firstSeq), this.lastSeq, id, true);
    rec.firstStale = false;
  }

  private fixLast(rec: SubjRec): void {
    if (!rec.lastStale) return;
    const id = rec.id;
    rec.last = this.subjCol.findBack(Math.min(rec.last, this.lastSeq), this.firstSeq, id, true);
    rec.lastStale = false;
  }

  protected subjFirst(rec: SubjRec): number {
    this.fixFirst(rec);
    return rec.first;
  }

  protected subjLast(rec: SubjRec): number {
    this.fixLast(rec);
    return rec.last;
  }

  // ---- columns ----
  /** Subject id of the message at seq, 0 if none. */
  protected subjAt(seq: number): number {
    return this.subjCol.get(seq);
  }

  /** Limit size of the message at seq (also right after its removal). */
  protected sizeAt(seq: number): number {
    return this.sizeCol.get(seq);
  }

  /** Chunks of the subject and size columns that hold an array (tests, memory accounting). */
  denseColumnChunks(): number {
    return this.subjCol.denseChunks() + this.sizeCol.denseChunks();
  }

  /** Jump the stream to start at seq with nothing stored (compact past the end / restore). */
  protected resetTo(firstSeq: number): void {
    // callers only do this when empty, and removal already zeroed every column entry
    this.subjCol.clear();
    this.sizeCol.clear();
    this.lastSeq = firstSeq - 1;
    this.firstSeq = firstSeq;
  }

  /** Put a message at seq (> lastSeq); sequences in between stay empty (deleted). */
  protected indexAppend(seq: number, rec: SubjRec, tsNs: number, size: number, ttlSec: number): void {
    if (this.msgs === 0) this.startEmpty();
    this.subjCol.set(seq, rec.id);
    this.sizeCol.set(seq, size);
    this.lastSeq = seq;
    this.lastTsNs = tsNs;
    this.chunkAdd(seq);
    if (this.msgs === 0) this.firstSeq = seq;
    this.msgs++;
    this.bytes += size;
    if (rec.msgs === 0) {
      rec.first = seq;
      rec.firstStale = false;
    }
    rec.last = seq;
    rec.lastStale = false;
    rec.msgs++;
    if (ttlSec > 0) this.ttl.push(tsNs + ttlSec * 1e9, seq, ttlSec);
  }

  /** indexAppend of n messages seq, seq + 1, ... of one subject and size, no TTL (recovery). */
  protected indexAppendRun(seq: number, n: number, rec: SubjRec, tsNs: number, size: number): void {
    if (this.msgs === 0) this.startEmpty();
    const last = seq + n - 1;
    this.subjCol.fill(seq, n, rec.id);
    this.sizeCol.fill(seq, n, size);
    if (this.msgs === 0) this.firstSeq = seq;
    for (let s = seq; s <= last; ) {
      const m = Math.min(last - s + 1, CHUNK - (s % CHUNK));
      this.chunkAdd(s, m);
      this.msgs += m;
      s += m;
    }
    this.lastSeq = last;
    this.lastTsNs = tsNs;
    this.bytes += size * n;
    if (rec.msgs === 0) {
      rec.first = seq;
      rec.firstStale = false;
    }
    rec.last = last;
    rec.lastStale = false;
    rec.msgs += n;
  }

  /** The first message of an empty index: no column entry to keep. */
  private startEmpty(): void {
    this.subjCol.clear();
    this.sizeCol.clear();
  }

  /** Stretch lastSeq with empty sequences (state restored from a floor record). */
  protected extendLast(seq: number): void {
    if (seq <= this.lastSeq) return;
    if (this.msgs === 0) {
      this.resetTo(seq + 1);
      return;
    }
    this.lastSeq = seq;
  }

  /** The checks of storeMsgAt: a whole seq above lastSeq. */
  protected checkStoreAt(seq: number): void {
    if (!Number.isSafeInteger(seq) || seq <= this.lastSeq || seq < 1) {
      throw new Error(`store: sequence ${seq} is not above the last sequence ${this.lastSeq}`);
    }
  }

  /** skipMsgs in the index: seq .. seq + count - 1 are used up with no message. */
  protected indexSkip(seq: number, count: number, tsNs: number): void {
    if (!Number.isSafeInteger(count) || count < 1) throw new Error(`store: cannot skip ${count} sequences`);
    if (seq !== this.lastSeq + 1) throw new Error(`store: skip from ${seq} does not follow the last sequence ${this.lastSeq}`);
    this.extendLast(seq + count - 1);
    this.lastTsNs = tsNs;
  }

  msgTtls(from: number, to: number): Map<number, number> {
    const out = new Map<number, number>();
    const h = this.ttl;
    for (let i = 0; i < h.size; i++) {
      const seq = h.seqAt(i);
      if (seq < from || seq > to || seq < this.firstSeq || seq > this.lastSeq || this.subjCol.get(seq) === 0) continue;
      out.set(seq, Math.round(h.ttlAt(i)));
    }
    return out;
  }

  /** After appending, discard old until every limit holds (the store's "discard old"). */
  protected enforceLimits(rec: SubjRec | null): void {
    const l = this.limits;
    // Over a limit while a paced purge runs: it had its messages already (it is as if done
    // when begun), so it finishes before anything is discarded for the limit.
    if (this.job !== null && this.overLimit(rec)) this.finishPurge();
    if (rec !== null && l.maxMsgsPerSubject > 0) {
      while (rec.msgs > l.maxMsgsPerSubject) this.removeSeq(this.subjFirst(rec), true);
    }
    if (l.maxMsgs > 0) {
      while (this.msgs > l.maxMsgs) this.removeSeq(this.firstSeq, true);
    }
    if (l.maxBytes > 0) {
      while (this.bytes > l.maxBytes && this.msgs > 0) this.removeSeq(this.firstSeq, true);
    }
  }

  private overLimit(rec: SubjRec | null): boolean {
    const l = this.limits;
    return (
      (rec !== null && l.maxMsgsPerSubject > 0 && rec.msgs > l.maxMsgsPerSubject) ||
      (l.maxMsgs > 0 && this.msgs > l.maxMsgs) ||
      (l.maxBytes > 0 && this.bytes > l.maxBytes)
    );
  }

  protected removeSeq(seq: number, byLimit: boolean): boolean {
    if (this.msgs === 0 || seq < this.firstSeq || seq > this.lastSeq) return false;
    const id = this.subjCol.get(seq);
    if (id === 0) return false;
    const rec = this.byId[id];
    if (rec === undefined) throw new Error(`seqindex: seq ${seq} has unknown subject id ${id}`);
    // A message the running paced purge has (it is gone as of its begin): the purge counts it,
    // and anyone else hears it was not there.
    const taken = this.job !== null && this.purgeTakes(this.job, seq, id);
    this.subjCol.set(seq, 0);
    const ci = Math.floor(seq / CHUNK) - this.chunkBase;
    this.chunkCnt[ci] = (this.chunkCnt[ci] as number) - 1;
    this.msgs--;
    this.bytes -= this.sizeCol.get(seq);
    rec.msgs--;
    if (rec.msgs === 0) {
      this.subjTable.free(rec);
    } else {
      if (seq === rec.first) rec.firstStale = true;
      if (seq === rec.last) rec.lastStale = true;
      if (rec.msgs === 1) {
        // One message left: whichever bound is still exact is the other one too.
        if (rec.firstStale && !rec.lastStale) {
          rec.first = rec.last;
          rec.firstStale = false;
        } else if (rec.lastStale && !rec.firstStale) {
          rec.last = rec.first;
          rec.lastStale = false;
        }
      }
    }
    if (seq === this.firstSeq) {
      if (this.msgs === 0) this.firstSeq = this.lastSeq + 1;
      else this.firstSeq = this.subjCol.find(seq + 1, this.lastSeq, 0, false);
    }
    this.onRemoved(seq);
    if (Math.floor(this.firstSeq / CHUNK) > Math.floor(seq / CHUNK)) {
      // nothing below firstSeq is read again (the store has seen the removal)
      this.subjCol.dropBelow(this.firstSeq);
      this.sizeCol.dropBelow(this.firstSeq);
    }
    if (taken) return false;
    if (byLimit) this.callbacks.onLimitRemove?.(seq, rec.name);
    return true;
  }

  /** Count k new messages from seq on, all in seq's chunk. */
  private chunkAdd(seq: number, k = 1): void {
    // An integer shift below 2^31 (seq / CHUNK is a heap number per call in unoptimised code).
    const ch = seq < 0x80000000 ? seq >> CHUNK_BITS : Math.floor(seq / CHUNK);
    if (this.msgs === 0 && ch !== this.chunkBase) {
      this.chunkCnt.fill(0);
      this.chunkBase = ch;
    }
    let c = ch - this.chunkBase;
    if (c >= this.chunkCnt.length) {
      const dead = Math.floor(this.firstSeq / CHUNK) - this.chunkBase;
      const used = this.chunkCnt.length - dead;
      let len = this.chunkCnt.length;
      while (c - dead >= len) len *= 2;
      const n = new Uint32Array(used * 2 > len ? len * 2 : len);
      n.set(this.chunkCnt.subarray(dead));
      this.chunkCnt = n;
      this.chunkBase += dead;
      c = ch - this.chunkBase;
    }
    this.chunkCnt[c] = (this.chunkCnt[c] as number) + k;
  }

  /** Live messages with seq >= start (start within [firstSeq, lastSeq]). */
  private countFrom(start: number): number {
    const ch = Math.floor(start / CHUNK);
    const end = Math.min(this.lastSeq, (ch + 1) * CHUNK - 1);
    let n = this.subjCol.count(start, end, 0, false);
    const lastC = Math.floor(this.lastSeq / CHUNK) - this.chunkBase;
    for (let c = ch + 1 - this.chunkBase; c <= lastC; c++) n += this.chunkCnt[c] as number;
    return n;
  }

  // ---- operations of the StreamStore contract ----
  setLimits(l: StoreLimits): void {
    this.finishPurge();
    this.limits = { ...l };
    if (l.maxMsgsPerSubject > 0) for (const rec of [...this.subjects.values()]) this.enforceLimits(rec);
    this.enforceLimits(null);
    this.afterMutation();
  }

  /** Called after any operation that removed messages; the file store schedules writes. */
  protected afterMutation(): void {}

  expire(nowNs: number): number {
    let n = 0;
    if (this.limits.maxAgeMs > 0) {
      const cutoff = nowNs - this.limits.maxAgeMs * 1e6;
      while (this.msgs > 0 && this.tsAt(this.firstSeq) <= cutoff) {
        this.removeSeq(this.firstSeq, true);
        n++;
      }
    }
    while (this.ttl.size > 0 && this.ttl.topAt() <= nowNs) {
      const seq = this.ttl.topSeq();
      this.ttl.pop();
      if (this.removeSeq(seq, true)) n++;
    }
    if (n > 0) this.afterMutation();
    return n;
  }

  /** Earliest time (ns) at which expire() would remove something, or 0 if never. */
  nextExpiryNs(): number {
    let t = 0;
    if (this.limits.maxAgeMs > 0 && this.msgs > 0) t = this.tsAt(this.firstSeq) + this.limits.maxAgeMs * 1e6;
    if (this.ttl.size > 0) {
      const a = this.ttl.topAt();
      if (t === 0 || a < t) t = a;
    }
    return t;
  }

  loadMsg(seq: number): StoredMsg | null {
    if (this.msgs === 0 || seq < this.firstSeq || seq > this.lastSeq) return null;
    const id = this.subjCol.get(seq);
    if (id === 0) return null;
    const rec = this.byId[id] as SubjRec;
    return this.readAt(seq, rec.name);
  }

  loadNextMsg(filter: string, start: number): StoredMsg | null {
    const seq = this.nextSeq(filter, start);
    return seq === 0 ? null : this.loadMsg(seq);
  }

  /** Set while loadNextMsgTransient() reads: readAt may then return views. */
  protected transientRead = false;

  loadNextMsgTransient(filter: string, start: number): StoredMsg | null {
    const seq = this.nextSeq(filter, start);
    if (seq === 0) return null;
    this.transientRead = true;
    try {
      return this.loadMsg(seq);
    } finally {
      this.transientRead = false;
    }
  }

  loadNextMsgWithHeader(start: number): StoredMsg | null {
    let s = start;
    for (;;) {
      s = this.headerCandidate(s);
      if (s === 0) return null;
      const m = this.loadNextMsgTransient(">", s);
      if (m === null) return null;
      if (m.hdr !== null && m.hdr.length > 0) return m;
      s = m.seq + 1;
    }
  }

  /** The first seq >= s that may hold a message with header bytes, or 0 if none can. */
  protected headerCandidate(s: number): number {
    const c = Math.max(s, this.firstSeq, 1);
    return this.msgs > 0 && c <= this.lastSeq ? c : 0;
  }

  /** Sequence of the first message >= start matching filter, or 0. */
  nextSeq(filter: string, start: number): number {
    if (this.msgs === 0) return 0;
    let s = Math.max(start, this.firstSeq);
    const last = this.lastSeq;
    const col = this.subjCol;
    if (isAllFilter(filter)) {
      s = col.find(s, last, 0, false);
      return s <= last ? s : 0;
    }
    if (isLiteralSubject(filter)) {
      const rec = this.subjects.get(filter);
      if (rec === undefined) return 0;
      if (s > this.subjLast(rec)) return 0;
      s = Math.max(s, this.subjFirst(rec));
      s = col.find(s, last, rec.id, true);
      return s <= last ? s : 0;
    }
    const bits = this.subjTable.matchBits(filter);
    while (s <= last) {
      const id = col.get(s);
      if (id !== 0 && this.subjTable.idMatches(bits, filter, id)) return s;
      s = col.runEnd(s) + 1;
    }
    return 0;
  }

  loadLastMsg(filter: string): StoredMsg | null {
    if (this.msgs === 0) return null;
    if (isAllFilter(filter)) {
      return this.loadMsg(this.subjCol.findBack(this.lastSeq, this.firstSeq, 0, false));
    }
    if (isLiteralSubject(filter)) {
      const rec = this.subjects.get(filter);
      return rec === undefined ? null : this.loadMsg(this.subjLast(rec));
    }
    let best = 0;
    const match = filterMatcher(filter);
    for (const rec of this.subjects.values()) {
      if (match(rec.name)) best = Math.max(best, this.subjLast(rec));
    }
    return best === 0 ? null : this.loadMsg(best);
  }

  removeMsg(seq: number): boolean {
    const ok = this.removeSeq(seq, false);
    if (ok) this.afterMutation();
    return ok;
  }

  /** Remove every message at once (a purge of everything, a compact past the end): work per
   *  subject, none per message. The store hears of it through onRemovedAll, not onRemoved. */
  protected removeAll(): number {
    const n = this.msgs;
    const next = this.lastSeq + 1;
    if (n === 0) {
      this.firstSeq = next;
      return 0;
    }
    this.subjTable.clear();
    this.ttl.clear();
    this.subjCol.clear();
    this.sizeCol.clear();
    this.chunkCnt = new Uint32Array(64);
    this.chunkBase = 0;
    this.msgs = 0;
    this.bytes = 0;
    this.firstSeq = next;
    this.onRemovedAll();
    return n;
  }

  /** Every message left the index at once (removeAll); the default has nothing to drop. */
  protected onRemovedAll(): void {}

  /** Remove everything below seq (exclusive). */
  protected removeRange(seq: number): number {
    if (seq > this.lastSeq) return this.removeAll();
    const end = seq - 1;
    if (this.msgs === 0 || end < this.firstSeq) return 0;
    // removeSeq's work for each live message, in one pass that steps from live message to
    // live message; firstSeq moves once at the end, and the store hears onRemovedFront
    const col = this.subjCol;
    let n = 0;
    for (let s = col.find(this.firstSeq, end, 0, false); s <= end; s = col.find(s + 1, end, 0, false)) {
      const id = col.get(s);
      const rec = this.byId[id];
      if (rec === undefined) throw new Error(`seqindex: seq ${s} has unknown subject id ${id}`);
      const ci = Math.floor(s / CHUNK) - this.chunkBase;
      this.chunkCnt[ci] = (this.chunkCnt[ci] as number) - 1;
      const size = this.sizeCol.get(s);
      this.msgs--;
      this.bytes -= size;
      rec.msgs--;
      if (rec.msgs === 0) this.subjTable.free(rec);
      else {
        // every message of rec below seq goes: its first is stale; its last cannot be here
        rec.firstStale = true;
        if (rec.msgs === 1 && !rec.lastStale) {
          rec.first = rec.last;
          rec.firstStale = false;
        }
      }
      this.onRemovedFront(s, size);
      n++;
    }
    const old = this.firstSeq;
    this.firstSeq = this.msgs === 0 ? this.lastSeq + 1 : col.find(seq, this.lastSeq, 0, false);
    // The subject column is cleared whole chunks at a time (dropped) and entry by entry only in
    // the chunk the new first sequence is in: setting entries one by one makes every chunk
    // that held a run of one subject an array first.
    col.dropBelow(this.firstSeq);
    this.sizeCol.dropBelow(this.firstSeq);
    for (let s = Math.max(old, Math.floor(this.firstSeq / CHUNK) * CHUNK); s <= end; s++) if (col.get(s) !== 0) col.set(s, 0);
    this.afterRemovedFront();
    return n;
  }

  /** A message below the new first sequence left the index (removeRange: a purge with keep or
   *  seq, a compact); firstSeq moves once they are all gone, then afterRemovedFront. By
   *  default what onRemoved does. */
  protected onRemovedFront(seq: number, _size: number): void {
    this.onRemoved(seq);
  }

  protected afterRemovedFront(): void {}

  compact(seq: number): number {
    this.finishPurge();
    if (seq <= 0) return 0;
    let n = 0;
    if (seq > this.lastSeq + 1) {
      n = this.removeRange(this.lastSeq + 1);
      this.resetTo(seq);
    } else {
      n = this.removeRange(seq);
    }
    if (this.msgs === 0) this.firstSeq = this.lastSeq + 1;
    this.afterMutation();
    return n;
  }

  state(): StreamStoreState {
    const empty = this.msgs === 0;
    return {
      msgs: this.msgs,
      bytes: this.bytes,
      firstSeq: this.firstSeq,
      firstTsNs: empty ? 0 : this.tsAt(this.firstSeq),
      lastSeq: this.lastSeq,
      lastTsNs: this.lastTsNs,
      numSubjects: this.subjects.size,
      numDeleted: empty ? 0 : this.lastSeq - this.firstSeq + 1 - this.msgs,
    };
  }

  deletedSeqs(): number[] {
    const out: number[] = [];
    if (this.msgs === 0) return out;
    const last = this.lastSeq;
    for (let s = this.subjCol.find(this.firstSeq, last, 0, true); s <= last; s = this.subjCol.find(s + 1, last, 0, true)) out.push(s);
    return out;
  }

  subjectsState(filter: string): Map<string, SubjectState> {
    const out = new Map<string, SubjectState>();
    const match = filterMatcher(filter);
    for (const rec of this.subjects.values()) {
      if (match(rec.name)) {
        out.set(rec.name, { msgs: rec.msgs, first: this.subjFirst(rec), last: this.subjLast(rec) });
      }
    }
    return out;
  }

  lastSeqs(filter: string): number[] {
    const out: number[] = [];
    const match = filterMatcher(filter);
    for (const rec of this.subjects.values()) if (match(rec.name)) out.push(this.subjLast(rec));
    return out;
  }

  lastSeqsScan(filter: string, endSeq: number): LastSeqsScan {
    const it = this.subjects.values();
    const match = filterMatcher(filter);
    return {
      step: (max, out) => {
        for (let i = 0; i < max; i++) {
          const r = it.next();
          if (r.done === true) return true;
          const rec = r.value;
          // A subject removed since (its id free or reused): nothing of it to deliver.
          if (this.byId[rec.id] !== rec) continue;
          if (!match(rec.name)) continue;
          let last = this.subjLast(rec);
          // A message stored since the walk began: the subject's last at endSeq.
          if (last > endSeq) last = this.subjCol.findBack(endSeq, this.firstSeq, rec.id, true);
          if (last >= this.firstSeq && last > 0) out.push(last);
        }
        return false;
      },
    };
  }

  numPending(startSeq: number, filter: string, lastPerSubject: boolean): number {
    if (this.msgs === 0 || startSeq > this.lastSeq) return 0;
    const start = Math.max(startSeq, this.firstSeq);
    const all = isAllFilter(filter);
    const match = filterMatcher(filter);
    if (lastPerSubject) {
      let n = 0;
      for (const rec of this.subjects.values()) {
        if (match(rec.name) && this.subjLast(rec) >= start) n++;
      }
      return n;
    }
    const col = this.subjCol;
    if (!all && !isLiteralSubject(filter) && this.subjects.size < this.lastSeq - start) {
      // A filter that matches every subject (or none) needs no scan of the range.
      let matched = 0;
      for (const rec of this.subjects.values()) if (match(rec.name)) matched++;
      if (matched === 0) return 0;
      if (matched === this.subjects.size) return this.numPending(startSeq, ">", false);
    }
    if (all) return start === this.firstSeq ? this.msgs : this.countFrom(start);
    if (isLiteralSubject(filter)) {
      const rec = this.subjects.get(filter);
      if (rec === undefined) return 0;
      if (start <= this.subjFirst(rec)) return rec.msgs;
      return col.count(start, this.subjLast(rec), rec.id, true);
    }
    if (start === this.firstSeq) {
      let n = 0;
      for (const rec of this.subjects.values()) if (match(rec.name)) n += rec.msgs;
      return n;
    }
    const bits = this.subjTable.matchBits(filter);
    let n = 0;
    for (let s = start; s <= this.lastSeq; ) {
      const id = col.get(s);
      const e = Math.min(col.runEnd(s), this.lastSeq);
      if (id !== 0 && this.subjTable.idMatches(bits, filter, id)) n += e - s + 1;
      s = e + 1;
    }
    return n;
  }
}
