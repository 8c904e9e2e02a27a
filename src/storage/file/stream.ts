// File-backed StreamStore: append-only block files "<n>.blk" in one directory, with the
// sequence index in memory: the shared SeqIndex (subject id and size per message, a byte or
// two each) plus one checkpoint per CK_SEQS sequences, the offset of the first record of that
// group. The parts live beside this file:
//   block.ts       the block files (Blk, BlockFiles: by id, by seq range, dying, summaries)
//   walk.ts        the one walk over a block's records (verify, skip damage)
//   recovery.ts    open: summaries where valid, a verified scan elsewhere, torn tails cut
//   journal.ts     the write buffer, flushes and group-commit fsync rounds
//   readcache.ts   read windows and locate() (checkpoint or cursor, then a short walk)
//   compaction.ts  rewriting a mostly dead sealed block
//
// Removal: a message removed from the front of the stream is covered by a "floor" record
// (written once per flush); an interior removal writes a tombstone. A sealed block whose
// messages are all gone is unlinked after its still-needed tombstones are copied forward and
// synced; a sealed block that is mostly dead is rewritten with only its live records.
import type { Clock } from "../../runtime/clock.js";
import type { Fs } from "../../runtime/fs.js";
import { StorageType, type StoreCallbacks, type StoreLimits, type StoredMsg, type StreamStore } from "../types.js";
import { SeqIndex } from "../memory/seqindex.js";
import type { SubjRec } from "../memory/subjtable.js";
import { FLAG_HDR, KIND_FLOOR, KIND_MSG, KIND_TOMB, MAX_RECORD_BYTES, REC_HDR, REC_OVERHEAD, fileStoreMsgSize, sealRecord, writeRecordHeader } from "./record.js";
import { Blk, BlockFiles, DEFAULT_BLOCK_BYTES, type RecoveryReport } from "./block.js";
import { Journal, type JournalHost, type SyncCb } from "./journal.js";
import { Checkpoints, ReadCache } from "./readcache.js";
import { Recovery, type Recovered, type RecoveryHost } from "./recovery.js";
import { compactBlock, type CompactHost } from "./compaction.js";

export { Blk, DEFAULT_BLOCK_BYTES, type DroppedRegion, type RecoveryReport } from "./block.js";

const COMPACT_MIN_BYTES = 64 * 1024;
/** Upper bound of a record's length from its limit size (fileStoreMsgSize is rl - 6, or rl - 2
 *  with headers): used for the compaction estimate, so nothing per message has to hold rl. */
const REC_LEN_SLACK = 6;

export interface FileStreamStoreOptions {
  dir: string;
  fs: Fs;
  clock: Clock;
  limits?: StoreLimits | null;
  callbacks?: StoreCallbacks | null;
  /** 0 (default): fsync before every sync() answer. > 0: fsync on this interval only. */
  syncIntervalMs?: number;
  blockSizeBytes?: number;
}

export class FileStreamStore extends SeqIndex implements StreamStore {
  readonly type = StorageType.File;
  private readonly files: BlockFiles;
  private readonly j: Journal;
  private readonly rc: ReadCache;

  private readonly cks = new Checkpoints(); // where a read of a seq starts walking
  private tsMemoSeq = 0;
  private tsMemoNs = 0;
  private writtenFloor = -1;
  private loading = true;
  private readonly compactQueue: Blk[] = [];
  private frontBlk: Blk | null = null; // onRemovedFront: the block of the last seq removed
  private readonly frontDead: Blk[] = [];

  constructor(opts: FileStreamStoreOptions) {
    super(opts.limits ?? null, opts.callbacks ?? null);
    this.files = new BlockFiles(opts.dir, opts.fs, opts.blockSizeBytes ?? DEFAULT_BLOCK_BYTES);
    const host: JournalHost = {
      beforeWrite: (idle) => this.beforeWrite(idle),
      compactionsWaiting: () => this.compactQueue.length > 0,
    };
    this.j = new Journal(this.files, opts.clock, opts.syncIntervalMs ?? 0, host);
    this.rc = new ReadCache(this.files, this.j, this.cks, opts.clock);
  }

  // ---- open ----

  /** Rebuild the index from the block files (recovery.ts) and apply what the floors and
   *  tombstones say is gone. */
  open(): RecoveryReport {
    return this.recovered(this.recovery().run());
  }

  /** open() with `breathe` awaited between block files (recovery at start, chunked). */
  async openPaced(breathe: () => Promise<void>): Promise<RecoveryReport> {
    return this.recovered(await this.recovery().runPaced(breathe));
  }

  private recovery(): Recovery {
    const host: RecoveryHost = {
      lastSeq: () => this.lastSeq,
      intern: (name) => this.internSubject(name),
      append: (blk, seq, rec, tsNs, size, ttl, off) => {
        this.indexAppend(seq, rec, tsNs, size, ttl);
        this.noteAppend(blk, seq, off, size);
      },
      appendRun: (blk, seq, n, rec, tsNs, size, off, rl) => {
        this.indexAppendRun(seq, n, rec, tsNs, size);
        this.cks.noteRun(seq, n, off, rl, this.firstSeq);
        this.noteInBlock(blk, seq, n, off, size);
      },
    };
    return new Recovery(this.files, host);
  }

  private recovered({ report, tombs, acc }: Recovered): RecoveryReport {
    const { floor, floorLast, floorLastTs } = acc;
    const lastSeen = Math.max(this.lastSeq, floorLast, floor - 1);
    if (lastSeen > this.lastSeq) this.extendLast(lastSeen);
    if (floor > 0) this.compact(floor);
    for (const t of tombs) this.removeSeq(t, false);
    if (floorLast > 0 && floorLast >= this.lastSeq) this.lastTsNs = floorLastTs;
    if (this.msgs === 0 && this.lastSeq > 0) this.firstSeq = this.lastSeq + 1;
    this.writtenFloor = floor > 0 ? floor : -1;
    if (this.msgs === 0 && floor === 0 && this.lastSeq === 0) this.writtenFloor = 0;

    const files = this.files;
    const tail = files.blocks[files.blocks.length - 1];
    if (tail !== undefined && tail.size < files.blockSizeBytes) files.wblk = tail;
    else {
      if (tail !== undefined) files.saveSummary(tail, false);
      files.wblk = files.newBlock();
    }
    this.loading = false;
    // Names found here may not be durable yet (a block made just before the store was closed
    // after a failure, and reopened without a crash): the first fsync round covers the
    // directory too, before anything written into them is acknowledged.
    files.dirDirty = true;
    for (const b of [...files.blocks]) if (b !== files.wblk && b.live === 0) this.blockDied(b);
    this.setLimits(this.limits); // limits may have been lowered while the store was closed
    this.j.start();
    return report;
  }

  /** Block and checkpoint bookkeeping for a message record at off in w. */
  private noteAppend(w: Blk, seq: number, off: number, size: number): void {
    this.cks.note(seq, off, this.firstSeq);
    this.noteInBlock(w, seq, 1, off, size);
  }

  /** w gains n live records seq..seq + n - 1 of limit size `size`, the first at off. */
  private noteInBlock(w: Blk, seq: number, n: number, off: number, size: number): void {
    if (w.firstSeq === 0) {
      w.firstSeq = seq;
      w.firstMsgOff = off;
      this.files.seqBlocks.push(w);
    }
    w.lastSeq = seq + n - 1;
    w.live += n;
    w.liveRecBytes += n * (size + REC_LEN_SLACK);
  }


  // ---- hot path ----
  storeMsg(subject: string, hdr: Buffer | null, data: Buffer, tsNs: number, ttlSec: number): number {
    const seq = this.lastSeq + 1;
    this.append(seq, subject, hdr, data, tsNs, ttlSec);
    return seq;
  }

  /** storeMsg at a given sequence and time (a replica, a restore). A gap before seq needs no
   *  record: recovery reads the sequences between two message records as deleted, and a
   *  floor record carries lastSeq. */
  storeMsgAt(seq: number, subject: string, hdr: Buffer | null, data: Buffer, tsNs: number, ttlSec: number): void {
    this.checkWritable();
    this.checkStoreAt(seq);
    this.append(seq, subject, hdr, data, tsNs, ttlSec);
  }

  private append(seq: number, subject: string, hdr: Buffer | null, data: Buffer, tsNs: number, ttlSec: number): void {
    this.checkWritable();
    const rec = this.internSubject(subject);
    const sl = rec.blen;
    const hl = hdr === null ? 0 : hdr.length;
    const dl = data.length;
    const rl = REC_OVERHEAD + sl + hl + dl;
    if (sl > 0xffff || rl > MAX_RECORD_BYTES) throw new Error(`file store: message too large (${rl} bytes, subject ${sl})`);
    let w = this.files.wblk;
    if (w.firstSeq !== 0 && w.size + rl > this.files.blockSizeBytes) w = this.roll();
    const p = this.j.reserve(rl);
    const b = this.j.wbuf;
    const ttl = ttlSec > 0 ? ttlSec : 0;
    writeRecordHeader(b, p, rl, KIND_MSG, hdr === null ? 0 : FLAG_HDR, sl, hl, seq, tsNs, ttl);
    rec.writeTo(b, p + REC_HDR);
    if (hdr !== null) hdr.copy(b, p + REC_HDR + sl);
    data.copy(b, p + REC_HDR + sl + hl);
    sealRecord(b, p, rl);
    const size = fileStoreMsgSize(sl, hl, dl);
    this.indexAppend(seq, rec, tsNs, size, ttl);
    this.noteAppend(w, seq, w.size, size);
    if (hl > 0) w.hdrMsgs++;
    w.sum?.msg(seq, rl, rec, hl > 0, tsNs, ttl);
    w.size += rl;
    this.enforceLimits(rec);
    this.j.scheduleFlush();
  }

  private checkWritable(): void {
    if (this.j.closed) throw new Error("file store is closed");
    if (this.j.failed !== null) throw this.j.failed;
  }

  /** Skip sequences: no record per sequence, only a floor record at the next flush, which
   *  carries the new lastSeq and its time (recovery extends lastSeq to it). */
  skipMsgs(seq: number, count: number, tsNs: number): void {
    this.checkWritable();
    this.indexSkip(seq, count, tsNs);
    this.writtenFloor = -1;
    this.j.scheduleFlush();
  }

  private appendMarker(kind: number, seq: number): void {
    const w = this.files.wblk;
    const dl = kind === KIND_FLOOR ? 16 : 0;
    const rl = REC_OVERHEAD + dl;
    const p = this.j.reserve(rl);
    const b = this.j.wbuf;
    writeRecordHeader(b, p, rl, kind, 0, 0, 0, seq, kind === KIND_FLOOR ? this.lastTsNs : 0, 0);
    if (kind === KIND_FLOOR) {
      b.writeDoubleLE(this.lastSeq, p + REC_HDR);
      b.writeDoubleLE(this.lastTsNs, p + REC_HDR + 8);
      w.hasFloor = true;
      w.sum?.floor(seq, this.lastSeq, this.lastTsNs);
    } else {
      w.tombs.push(seq);
      w.sum?.tomb(seq);
    }
    sealRecord(b, p, rl);
    w.size += rl;
  }

  private roll(): Blk {
    this.j.writeOut();
    const files = this.files;
    const old = files.wblk;
    files.wblk = files.newBlock();
    files.saveSummary(old, false);
    if (old.live === 0) this.blockDied(old);
    return files.wblk;
  }

  /** The journal is about to write: compactions first (between fsync rounds), a fresh write
   *  block for a dead one worth reclaiming, and the floor record if firstSeq moved. */
  private beforeWrite(idle: boolean): void {
    if (idle) this.runCompactions();
    const w = this.files.wblk;
    if (w.live === 0 && w.firstSeq !== 0 && w.size >= this.files.blockSizeBytes >>> 2) this.roll();
    if (this.firstSeq !== this.writtenFloor) {
      this.appendMarker(KIND_FLOOR, this.firstSeq);
      this.writtenFloor = this.firstSeq;
    }
  }

  /** Remove a message and overwrite its record on disk: subject, headers and payload become
   *  zero bytes (nats-server writes random ones), the length, sequence and time stay so the
   *  block still walks and recovers as before. The tombstone is made durable first: a crash
   *  in between leaves the message deleted, never an erased record without its tombstone
   *  (which recovery would read as an empty message). */
  eraseMsg(seq: number): boolean {
    this.checkWritable();
    const files = this.files;
    const b = files.blockFor(seq);
    if (b === null || this.subjAt(seq) === 0) return false;
    const rc = this.rc;
    rc.locate(b, seq);
    const off = rc.curOff;
    const rl = rc.rbuf.readUInt32LE(rc.rp);
    const rec = Buffer.alloc(rl);
    rc.rbuf.copy(rec, 0, rc.rp, rc.rp + REC_HDR);
    if (!this.removeMsg(seq)) return false;
    try {
      this.j.writeOut();
      files.fs.fsyncSync(files.fd(files.wblk)); // the tombstone, before the overwrite
      rec[5] = 0; // flags: no header block
      rec.writeUInt16LE(0, 6); // subject length
      rec.writeUInt32LE(0, 8); // header length
      rec.writeUInt32LE(0, 28); // ttl
      sealRecord(rec, 0, rl);
      files.fs.write(files.fd(b), rec, 0, rl, off);
    } catch (e) {
      this.j.fail(e as Error);
      throw e;
    }
    b.dirty = true;
    // The block's bytes changed under its summary: recovery scans it (and writes a new one).
    b.sum = null;
    b.sumCovered = 0;
    files.fs.unlink(b.sumPath);
    rc.drop(b);
    this.j.scheduleFlush();
    return true;
  }

  /** The write or fsync error that stopped this store, or null. */
  failure(): Error | null {
    return this.j.failed;
  }

  sync(cb: SyncCb): void {
    this.j.sync(cb);
  }

  protected storeClosed(): boolean {
    return this.j.closed;
  }

  // ---- removal bookkeeping ----
  protected override headerCandidate(s: number): number {
    const bl = this.files.seqBlocks;
    for (let lo = this.files.seqBlockFrom(s); lo < bl.length; lo++) {
      const b = bl[lo] as Blk;
      if (b.hdrMsgs > 0) return Math.max(s, b.firstSeq);
    }
    return 0;
  }

  protected onRemoved(seq: number): void {
    const b = this.files.blockFor(seq);
    if (b === null) throw new Error(`file store: no block holds seq ${seq}`);
    b.live--;
    b.liveRecBytes -= this.sizeAt(seq) + REC_LEN_SLACK;
    if (this.loading) return;
    if (seq >= this.firstSeq) this.appendMarker(KIND_TOMB, seq);
    if (b !== this.files.wblk) {
      if (b.live === 0) this.blockDied(b);
      else this.maybeCompact(b);
    }
  }

  /** Queue a sealed block for compaction once it is mostly dead. */
  private maybeCompact(b: Blk): void {
    if (b.size >= Math.min(COMPACT_MIN_BYTES, this.files.blockSizeBytes >>> 1) && b.liveRecBytes * 4 < b.size && !this.compactQueue.includes(b)) {
      this.compactQueue.push(b);
    }
  }

  /** onRemoved for a front range (a purge with keep or seq, a compact): no tombstone (the
   *  floor covers it), the block looked up once per block, dead blocks handled at the end. */
  protected override onRemovedFront(seq: number, size: number): void {
    let b = this.frontBlk;
    if (b === null || seq > b.lastSeq || seq < b.firstSeq) {
      b = this.files.blockFor(seq);
      if (b === null) throw new Error(`file store: no block holds seq ${seq}`);
      this.frontBlk = b;
    }
    b.live--;
    b.liveRecBytes -= size + REC_LEN_SLACK;
    if (b.live === 0 && !this.loading && b !== this.files.wblk) this.frontDead.push(b);
  }

  protected override afterRemovedFront(): void {
    const last = this.frontBlk;
    this.frontBlk = null;
    const dead = this.frontDead.splice(0);
    if (this.loading) return;
    for (const b of dead) this.blockDied(b);
    // While a paced purge works through a block, compacting it would copy its live rest again
    // at every step: it is looked at once the purge is done.
    if (last !== null && last.live > 0 && last !== this.files.wblk && !this.purgeRunning()) this.maybeCompact(last);
  }

  protected override afterPurgeDone(): void {
    const b = this.msgs > 0 ? this.files.blockFor(this.firstSeq) : null;
    if (b !== null && b.live > 0 && b !== this.files.wblk) this.maybeCompact(b);
  }

  /** Everything was removed at once (a purge of everything): every block dies as a whole,
   *  with no record per message. The write block is sealed and a fresh one started; the
   *  floor record written at the next flush (firstSeq = lastSeq + 1, with lastSeq and its
   *  time) says all is gone, and the dead files are unlinked, a few per turn, only after a
   *  fsync covers it. A crash before that fsync finds the blocks as before the purge; after
   *  it, recovery finds the floor and drops every block below it. */
  protected override onRemovedAll(): void {
    const files = this.files;
    this.compactQueue.length = 0;
    this.cks.clear();
    this.rc.dropAll();
    if (this.loading) {
      for (const b of files.blocks) {
        b.live = 0;
        b.liveRecBytes = 0;
      }
      return;
    }
    let keep: Blk | null = null;
    try {
      this.j.writeOut(); // what is buffered belongs to the old write block
      keep = files.newBlock();
      files.wblk = keep;
    } catch (e) {
      // the store has failed (no more writes); the old write block stays the write block
      this.j.fail(e as Error);
      keep = files.wblk;
    }
    files.retireAllBut(keep, this.j.writes + 1);
    this.writtenFloor = -1;
    this.j.scheduleFlush();
  }

  protected override afterMutation(): void {
    if (!this.loading) this.j.scheduleFlush();
  }

  private blockDied(b: Blk): void {
    const files = this.files;
    if (!files.blocks.includes(b)) return;
    // Tombstones in b that still hide a message in another block must outlive b.
    for (const t of b.tombs) {
      if (t >= this.firstSeq && t <= this.lastSeq) {
        const tb = files.blockFor(t);
        if (tb !== null && tb !== b) this.appendMarker(KIND_TOMB, t);
      }
    }
    files.retire(b, this.j.writes + 1);
    this.writtenFloor = -1; // b may have held the only floor record
    this.rc.drop(b);
    this.j.scheduleFlush();
  }

  /** Rewrite mostly dead sealed blocks with only their live messages and needed tombstones. */
  private runCompactions(): void {
    const host: CompactHost = {
      firstSeq: () => this.firstSeq,
      lastSeq: () => this.lastSeq,
      subjAt: (s) => this.subjAt(s),
      subjRec: (id) => this.byId[id] as SubjRec,
    };
    while (this.compactQueue.length > 0) {
      const b = this.compactQueue.pop() as Blk;
      if (!this.files.blocks.includes(b) || b === this.files.wblk || b.live === 0) continue;
      const done = compactBlock(this.files, b, host);
      if (done === null) continue;
      const cks = done.cks;
      for (let k = 0; k < cks.length; k += 2) this.cks.put(cks[k] as number, cks[k + 1] as number, this.firstSeq);
      if (done.floorLost) this.writtenFloor = -1;
      this.rc.drop(b);
    }
  }

  // ---- reads ----
  /** Bytes held by read windows (for tests and memory accounting). */
  readCacheBytes(): number {
    return this.rc.bytes();
  }

  protected tsAt(seq: number): number {
    if (seq === this.tsMemoSeq) return this.tsMemoNs;
    const b = this.files.blockFor(seq);
    if (b === null) throw new Error(`file store: no block holds seq ${seq}`);
    this.rc.locate(b, seq);
    const ts = this.rc.rbuf.readDoubleLE(this.rc.rp + 20);
    this.tsMemoSeq = seq;
    this.tsMemoNs = ts;
    return ts;
  }

  protected readAt(seq: number, subject: string): StoredMsg {
    const b = this.files.blockFor(seq);
    if (b === null) throw new Error(`file store: no block holds seq ${seq}`);
    const rc = this.rc;
    rc.locate(b, seq);
    const buf = rc.rbuf;
    const p = rc.rp;
    const rl = buf.readUInt32LE(p);
    const tsNs = buf.readDoubleLE(p + 20);
    const sl = buf.readUInt16LE(p + 6);
    const hl = buf.readUInt32LE(p + 8);
    const hasHdr = ((buf[p + 5] as number) & FLAG_HDR) !== 0;
    const h0 = p + REC_HDR + sl;
    // Read windows are replaced, never written, so a view of one stays valid; the write
    // buffer is reused and always copied.
    if (this.transientRead && buf !== this.j.wbuf) {
      const end = p + rl - 4;
      return { seq, subject, hdr: hasHdr ? buf.subarray(h0, h0 + hl) : null, data: buf.subarray(h0 + hl, end), tsNs };
    }
    // Copy out: a view would pin a whole read window for as long as the caller keeps it.
    const n = rl - REC_OVERHEAD - sl;
    const out = Buffer.allocUnsafe(n);
    // Small records by hand: Buffer.copy's argument checks cost more than the bytes.
    if (n <= 64) for (let i = 0; i < n; i++) out[i] = buf[h0 + i]!;
    else buf.copy(out, 0, h0, p + rl - 4);
    return { seq, subject, hdr: hasHdr ? out.subarray(0, hl) : null, data: hl === 0 ? out : out.subarray(hl), tsNs };
  }

  // ---- lifecycle ----
  async close(): Promise<void> {
    if (this.j.closed) return;
    await this.j.drainAndClose();
    this.rc.close();
    this.j.finalSync();
  }

  async delete(): Promise<void> {
    await this.close();
    this.files.fs.rmrf(this.files.dir);
  }

  /** Sealed and live block files, for tests and monitoring. */
  blockCount(): number {
    return this.files.blocks.length;
  }
}

export type { SubjRec };
