// File-backed StreamStore: append-only block files "<n>.blk" in one directory, with the
// sequence index in memory: the shared SeqIndex (subject id and size per message, a byte or
// two each) plus one checkpoint per CK_SEQS sequences, the offset of the first record of that
// group. A read walks at most CK_SEQS records from its checkpoint (or one, from the cursor
// left by the previous read) inside a bounded cache of read windows; timestamps, offsets and
// lengths are read from the records, not kept per message.
//
// Durability: storeMsg encodes into one reused write buffer and returns at once; a flush
// (at once when sync() finds an fsync round free, else setImmediate, or early when the buffer
// is large) writes the buffer with one write call and then one fsync round covers every
// sync() callback queued before that write (group commit). Up to two rounds overlap (the disk
// serves two flushes in about the time of one); their callbacks run in the order the rounds
// started, each once every earlier round has completed. In syncIntervalMs mode callbacks
// answer right after the write and fsync runs on a timer.
//
// Recovery: each sealed block has a summary "<n>.sum" (summary.ts) validated by a CRC of the
// block's bytes; recovery rebuilds the index from it and scans only what no valid summary
// covers (the write block's newest bytes, or a block whose summary is missing or stale).
//
// Removal: a message removed from the front of the stream is covered by a "floor" record
// (written once per flush); an interior removal writes a tombstone. A sealed block whose
// messages are all gone is unlinked after its still-needed tombstones are copied forward and
// synced; a sealed block that is mostly dead is rewritten with only its live records.
import { join } from "node:path";
import type { Clock, TimerHandle } from "../../runtime/clock.js";
import type { Fs } from "../../runtime/fs.js";
import { StorageType, type StoreCallbacks, type StoreLimits, type StoredMsg, type StreamStore } from "../types.js";
import { SeqIndex, type SubjRec } from "../memory/seqindex.js";
import { ChunkCol } from "../memory/chunkcol.js";
import {
  FLAG_HDR,
  KIND_FLOOR,
  KIND_MSG,
  KIND_TOMB,
  MAX_RECORD_BYTES,
  REC_HDR,
  REC_OVERHEAD,
  checkRecord,
  fileStoreMsgSize,
  recSeq,
  sealRecord,
  writeRecordHeader,
} from "./record.js";
import { crc32Update } from "./crc32.js";
import { SUM_FLOOR, SUM_MSG, SUM_TOMB, SummaryBuilder, SummaryReader } from "./summary.js";

export const DEFAULT_BLOCK_BYTES = 8 * 1024 * 1024;
const EMPTY_BUF = Buffer.alloc(0);
const FLUSH_AT_BYTES = 1024 * 1024;
const READ_WINDOW_BYTES = 256 * 1024;
const READ_CACHE_WINDOWS = 4;
const SMALL_READ_BYTES = 16 * 1024; // a read that does not continue the previous window
/** Read windows unused this long are given back (a burst of reads leaves no 1 MiB behind). */
const READ_CACHE_IDLE_MS = 5_000;
const COMPACT_MIN_BYTES = 64 * 1024;
const CK_SEQS = 16;
const CK_CHUNK_GROUPS = 256;
/** The write block's summary is rewritten each time this many more bytes are written, so a
 *  crash leaves at most about this much of it to scan. */
const TAIL_SUMMARY_STEP_BYTES = 1024 * 1024;
const CRC_CHUNK_BYTES = 64 * 1024; // small enough to come from the allocator's heap, not a fresh mapping
/** Upper bound of a record's length from its limit size (fileStoreMsgSize is rl - 6, or rl - 2
 *  with headers): used for the compaction estimate, so nothing per message has to hold rl. */
const REC_LEN_SLACK = 6;

export class Blk {
  readonly id: number;
  readonly path: string;
  fd = -1;
  firstSeq = 0; // first message seq in this block (0: none)
  lastSeq = 0;
  firstMsgOff = 0; // offset of the first message record (where a group that began earlier is walked from)
  /** Offset of every message (by seq - firstSeq) when recovery found damage inside this block:
   *  a walk cannot step over garbage. null for every healthy block. */
  offs: Uint32Array | null = null;
  live = 0; // live messages
  hdrMsgs = 0; // message records with header bytes, live or not (0: no header to look for here)
  liveRecBytes = 0;
  size = 0; // bytes including the unwritten part of the write buffer
  written = 0; // bytes handed to the file
  dirty = false; // written but not fsynced
  /** Bytes from the start that were answered for: fsynced (or, with sync_interval, written).
   *  After a write or fsync failure the file is cut back to this before it is reopened. */
  good = 0;
  hasFloor = false;
  tombs: number[] = [];
  unlinkAfterWrite = 0; // set when dead: unlink once a fsync covering this write count completes
  /** Summary of the block's records so far, while it can still grow (the write block) or has
   *  not been saved; null for a saved sealed block or one whose damage it cannot describe. */
  sum: SummaryBuilder | null = null;
  sumCovered = 0; // block bytes covered by the summary file last written
  constructor(id: number, path: string) {
    this.id = id;
    this.path = path;
  }
  get sumPath(): string {
    return `${this.path.slice(0, -4)}.sum`;
  }
}

interface FloorAcc {
  floor: number;
  floorLast: number;
  floorLastTs: number;
}

export interface DroppedRegion {
  file: string;
  offset: number;
  bytes: number;
  reason: "checksum" | "torn-tail";
  /** Last good message sequence before the damage (0 if none in that block). */
  afterSeq: number;
}

export interface RecoveryReport {
  blocks: number;
  msgs: number;
  tombstones: number;
  truncatedBytes: number;
  dropped: DroppedRegion[];
}

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

/** One group-commit fsync: the sync() callbacks it answers and the write count it covers. */
interface FsyncRound {
  cbs: SyncCb[];
  covered: number;
  blks: Blk[]; // the blocks it fsyncs, and each one's written length when it started
  lens: number[];
  pending: number;
  err: Error | null;
  done: boolean;
}

/** Group-commit fsyncs that may run at once: a second one starts while the first is still on
 *  the disk (which serves two flushes in about the time of one), so under a steady stream of
 *  publishes a batch waits for its own fsync rather than for the one before it as well. */
const MAX_FSYNC_ROUNDS = 2;

interface CacheWin {
  blk: Blk | null;
  start: number;
  buf: Buffer;
}

type SyncCb = (err: Error | null) => void;

export class FileStreamStore extends SeqIndex implements StreamStore {
  readonly type = StorageType.File;
  private readonly dir: string;
  private readonly fs: Fs;
  private readonly clock: Clock;
  private readonly syncIntervalMs: number;
  private readonly blockSizeBytes: number;

  // Checkpoints: ckCol.get(g) = offset of the first record stored in seq group g
  // (g = floor(seq / CK_SEQS)), in the block that holds it. Records of one length make these
  // an arithmetic run, which a ChunkCol keeps without an array (256 groups per chunk).
  private readonly ckCol = new ChunkCol(CK_CHUNK_GROUPS);
  private ckLastGroup = -1;
  // The record found by the last locate(): sequential readers continue from it.
  private curBlk: Blk | null = null;
  private curSeq = 0;
  private curOff = 0;
  private curLen = 0; // record length at curOff: the next record starts right after it
  // Where locate()/view() left the bytes: rbuf[rp...] is the record.
  private rbuf: Buffer = Buffer.alloc(0);
  private rp = 0;
  private tsMemoSeq = 0;
  private tsMemoNs = 0;
  private lastRec: SubjRec | null = null; // recovery: subject of the previous record

  private blocks: Blk[] = []; // every block file, by id
  private seqBlocks: Blk[] = []; // blocks holding at least one message record, by seq range
  private wblk: Blk;
  private wbuf: Buffer = Buffer.allocUnsafe(16 * 1024); // grows under load up to about FLUSH_AT_BYTES
  private wlen = 0;
  private writes = 0; // count of write calls, for ordering unlinks after syncs
  private writtenFloor = -1;
  private dirDirty = false;
  private loading = true;
  private closed = false;
  private failed: Error | null = null;

  private flushScheduled = false;
  private readonly flushFn: () => void;
  private queued: SyncCb[] = []; // sync() calls whose data is not yet written
  private written: SyncCb[] = []; // written, waiting for the next fsync
  /** fsync rounds in flight, oldest first; their callbacks run in this order. */
  private readonly rounds: FsyncRound[] = [];
  private syncTimer: TimerHandle | null = null;
  private cacheTimer: TimerHandle | null = null;
  private readsSinceCheck = 0; // view() calls that filled a window since the idle timer last looked
  private readonly dying: Blk[] = [];
  private readonly compactQueue: Blk[] = [];
  private readonly cache: CacheWin[] = [];
  private readonly idleWaiters: (() => void)[] = [];
  private cacheNext = 0;

  constructor(opts: FileStreamStoreOptions) {
    super(opts.limits ?? null, opts.callbacks ?? null, 1024);
    this.dir = opts.dir;
    this.fs = opts.fs;
    this.clock = opts.clock;
    this.syncIntervalMs = opts.syncIntervalMs ?? 0;
    this.blockSizeBytes = opts.blockSizeBytes ?? DEFAULT_BLOCK_BYTES;
    this.wblk = new Blk(0, "");
    this.flushFn = () => this.flush();
    for (let k = 0; k < READ_CACHE_WINDOWS; k++) this.cache.push({ blk: null, start: 0, buf: Buffer.alloc(0) });
  }

  // ---- open / recovery ----

  /** Rebuild the index from block summaries where they are valid and by reading and verifying
   *  every record elsewhere; truncate a torn tail. */
  open(): RecoveryReport {
    const fs = this.fs;
    fs.mkdirp(this.dir);
    const report: RecoveryReport = { blocks: 0, msgs: 0, tombstones: 0, truncatedBytes: 0, dropped: [] };
    const ids: number[] = [];
    const sums = new Set<number>();
    for (const name of fs.readdir(this.dir)) {
      const m = /^(\d+)\.(blk|sum)$/.exec(name);
      if (m) {
        if (m[2] === "blk") ids.push(Number(m[1]));
        else sums.add(Number(m[1]));
      } else if (name.endsWith(".new") || name.endsWith(".tmp")) fs.unlink(join(this.dir, name));
    }
    ids.sort((a, b) => a - b);
    for (const id of sums) if (!ids.includes(id)) fs.unlink(join(this.dir, `${id}.sum`));
    const tombs: number[] = [];
    const acc: FloorAcc = { floor: 0, floorLast: 0, floorLastTs: 0 };
    // One buffer for checksums (and short scans) and one for summaries, reused by every block:
    // recovery leaves no garbage that grows with the number of blocks.
    const chunk = Buffer.allocUnsafe(CRC_CHUNK_BYTES);
    const sumBuf: Scratch = { buf: Buffer.allocUnsafe(0) };
    for (let k = 0; k < ids.length; k++) {
      const id = ids[k] as number;
      const blk = new Blk(id, join(this.dir, `${id}.blk`));
      const isLast = k === ids.length - 1;
      const fd = this.blkFd(blk);
      const flen = fs.fsize(fd);
      let start = 0;
      let sum: SummaryBuilder | null = null;
      const sr = sums.has(id) ? SummaryReader.open(readWhole(fs, blk.sumPath, sumBuf)) : null;
      if (sr !== null && sr.covered <= flen && sr.valid() && fileCrc(fs, fd, sr.covered, chunk) === sr.blockCrc) {
        if (isLast || sr.covered < flen) sum = new SummaryBuilder();
        this.applySummary(blk, sr, sum, tombs, acc, report);
        start = sr.covered;
        blk.sumCovered = sr.covered;
        if (sum !== null) {
          sum.crc = sr.blockCrc;
          sum.covered = sr.covered;
        }
      }
      let end = flen;
      if (sum === null && start === 0 && (isLast || flen > 0)) sum = new SummaryBuilder();
      if (start < flen && sum !== null) end = this.scanTail(blk, fd, start, flen, chunk, isLast, sum, tombs, acc, report);
      blk.size = blk.written = blk.good = isLast ? end : flen;
      if (isLast && end < flen) {
        fs.truncate(fd, end);
        fs.fsyncSync(fd);
      }
      if (sum !== null && (sum.broken || sum.covered !== blk.written)) sum = null;
      blk.sum = sum;
      if (!isLast) {
        this.saveSummary(blk, false);
        fs.close(fd); // reopened when read
        blk.fd = -1;
      }
      this.blocks.push(blk);
      report.blocks++;
    }
    // Apply what the floors and tombstones say is gone.
    const { floor, floorLast, floorLastTs } = acc;
    const lastSeen = Math.max(this.lastSeq, floorLast, floor - 1);
    if (lastSeen > this.lastSeq) this.extendLast(lastSeen);
    if (floor > 0) this.compact(floor);
    for (const t of tombs) this.removeSeq(t, false);
    if (floorLast > 0 && floorLast >= this.lastSeq) this.lastTsNs = floorLastTs;
    if (this.msgs === 0 && this.lastSeq > 0) this.firstSeq = this.lastSeq + 1;
    this.writtenFloor = floor > 0 ? floor : -1;
    if (this.msgs === 0 && floor === 0 && this.lastSeq === 0) this.writtenFloor = 0;

    const tail = this.blocks[this.blocks.length - 1];
    if (tail !== undefined && tail.size < this.blockSizeBytes) this.wblk = tail;
    else {
      if (tail !== undefined) this.saveSummary(tail, false);
      this.wblk = this.newBlock();
    }
    this.loading = false;
    this.lastRec = null;
    // Names found here may not be durable yet (a block made just before the store was closed
    // after a failure, and reopened without a crash): the first fsync round covers the
    // directory too, before anything written into them is acknowledged.
    this.dirDirty = true;
    for (const b of [...this.blocks]) if (b !== this.wblk && b.live === 0) this.blockDied(b);
    this.setLimits(this.limits); // limits may have been lowered while the store was closed
    if (this.syncIntervalMs > 0) this.armSyncTimer();
    this.scheduleFlush();
    return report;
  }

  /** Index the records a valid summary lists (the block bytes it covers are not read). */
  private applySummary(blk: Blk, sr: SummaryReader, sum: SummaryBuilder | null, tombs: number[], acc: FloorAcc, report: RecoveryReport): void {
    const locals: SubjRec[] = [];
    let p = 0;
    while (sr.next()) {
      const kind = sr.kind;
      const seq = sr.seq;
      if (kind === SUM_MSG) {
        let rec: SubjRec;
        if (sr.newSubject !== null) {
          rec = this.internSubject(sr.newSubject);
          locals.push(rec);
        } else rec = locals[sr.subj] as SubjRec;
        // fileStoreMsgSize from the record length: rl - 6 without header bytes, rl - 2 with
        const rl = sr.recLen;
        const size = rl - (sr.hasHdrBytes ? 2 : 6);
        const n = 1 + sr.run;
        if (sr.hasHdrBytes) blk.hdrMsgs += n;
        if (n > 1 && seq > this.lastSeq) {
          this.indexAppendRun(seq, n, rec, sr.tsNs, size);
          this.noteAppendRun(blk, seq, n, p, rl, size);
          report.msgs += n;
          sum?.msgRun(seq, n, rl, rec, sr.hasHdrBytes, sr.tsNs);
        } else {
          for (let k = 0; k < n; k++) {
            if (seq + k > this.lastSeq) {
              this.indexAppend(seq + k, rec, sr.tsNs, size, sr.ttlSec);
              this.noteAppend(blk, seq + k, p + k * rl, size);
              report.msgs++;
            }
            sum?.msg(seq + k, rl, rec, sr.hasHdrBytes, sr.tsNs, sr.ttlSec);
          }
        }
        p += rl * n;
        continue;
      } else if (kind === SUM_TOMB) {
        tombs.push(seq);
        blk.tombs.push(seq);
        report.tombstones++;
        sum?.tomb(seq);
      } else if (kind === SUM_FLOOR) {
        this.noteFloor(blk, seq, sr.floorLastSeq, sr.floorLastTs, acc);
        sum?.floor(seq, sr.floorLastSeq, sr.floorLastTs);
      }
      p += sr.recLen;
    }
  }

  private noteFloor(blk: Blk, seq: number, lastSeq: number, lastTs: number, acc: FloorAcc): void {
    blk.hasFloor = true;
    if (seq > acc.floor) acc.floor = seq;
    // The time of the newest floor with the highest last seq (a skip sets a time that need not
    // be above every earlier one); floors are met in the order they were written.
    if (lastSeq >= acc.floorLast) {
      acc.floorLast = lastSeq;
      acc.floorLastTs = lastTs;
    }
  }

  /** Verify and index block bytes [start, flen) through the reused window `chunk`: whole valid
   *  records window by window, and the rest (damage, a record longer than a window, the end) in
   *  one scan. Returns the offset up to which the block is good (a torn tail is not). */
  private scanTail(
    blk: Blk,
    fd: number,
    start: number,
    flen: number,
    chunk: Buffer,
    isLast: boolean,
    sum: SummaryBuilder,
    tombs: number[],
    acc: FloorAcc,
    report: RecoveryReport,
  ): number {
    let pos = start;
    while (pos < flen) {
      const n = Math.min(chunk.length, flen - pos);
      const got = this.fs.read(fd, chunk, 0, n, pos);
      let buf = chunk.subarray(0, got);
      if (pos + got < flen && got === n) {
        const used = this.scanBlock(blk, buf, pos, isLast, sum, tombs, acc, report, true);
        if (used > 0) {
          pos += used;
          continue;
        }
        buf = Buffer.allocUnsafe(flen - pos);
        buf = buf.subarray(0, this.fs.read(fd, buf, 0, buf.length, pos));
      }
      return pos + this.scanBlock(blk, buf, pos, isLast, sum, tombs, acc, report, false);
    }
    return pos;
  }

  /** Verify and index the records in buf (block bytes from offset base on); returns how many
   *  bytes are good up to the end of data (a torn tail is not counted). With `partial` it
   *  stops before the first record that is not whole and valid in buf, touching nothing for it
   *  (the caller reads on from there). */
  private scanBlock(
    blk: Blk,
    buf: Buffer,
    base: number,
    isLast: boolean,
    sum: SummaryBuilder,
    tombs: number[],
    acc: FloorAcc,
    report: RecoveryReport,
    partial: boolean,
  ): number {
    let p = 0;
    let lastMsg = blk.lastSeq;
    let damaged = false;
    const seqBefore = this.lastSeq;
    while (p < buf.length) {
      const rl = checkRecord(buf, p);
      if (rl === 0) {
        if (partial) break;
        const next = resync(buf, p + 1);
        sum.broken = true;
        if (next < 0) {
          report.dropped.push({ file: blk.path, offset: base + p, bytes: buf.length - p, reason: "torn-tail", afterSeq: lastMsg });
          if (isLast) report.truncatedBytes += buf.length - p;
          break;
        }
        report.dropped.push({ file: blk.path, offset: base + p, bytes: next - p, reason: "checksum", afterSeq: lastMsg });
        damaged = true;
        p = next;
        continue;
      }
      const kind = buf[p + 4] as number;
      const seq = recSeq(buf, p);
      if (kind === KIND_MSG) {
        const fresh = seq > this.lastSeq;
        const tsNs = buf.readDoubleLE(p + 20); // read once: each read is a heap number until optimised
        const ttl = buf.readUInt32LE(p + 28);
        const rec = this.loadMsgRecord(blk, buf, p, base + p, rl, seq, tsNs, ttl);
        if (fresh) {
          lastMsg = seq;
          report.msgs++;
        }
        const hasHdr = buf.readUInt32LE(p + 8) > 0;
        if (hasHdr) blk.hdrMsgs++;
        sum.msg(seq, rl, rec, hasHdr, tsNs, ttl);
      } else if (kind === KIND_TOMB) {
        tombs.push(seq);
        blk.tombs.push(seq);
        report.tombstones++;
        sum.tomb(seq);
      } else {
        const d = p + REC_HDR + buf.readUInt16LE(p + 6) + buf.readUInt32LE(p + 8);
        const ls = buf.readDoubleLE(d);
        const lt = buf.readDoubleLE(d + 8);
        this.noteFloor(blk, seq, ls, lt, acc);
        sum.floor(seq, ls, lt);
      }
      p += rl;
    }
    sum.wrote(buf, 0, p);
    if (damaged && blk.firstSeq !== 0) {
      // Offsets of every message, for reads that cannot walk over the damage; those in the part
      // a summary covered (verified, so walkable) are found by walking it.
      const offs = new Uint32Array(blk.lastSeq - blk.firstSeq + 1);
      if (base > 0) this.prefixOffsets(blk, base, offs);
      scannedOffsets(buf, base, seqBefore, blk.firstSeq, offs);
      blk.offs = offs;
    }
    return p;
  }

  /** Message offsets in block bytes [0, len), known good (their summary's CRC matched). */
  private prefixOffsets(blk: Blk, len: number, offs: Uint32Array): void {
    const buf = Buffer.allocUnsafe(len);
    this.fs.read(this.blkFd(blk), buf, 0, len, 0);
    for (let p = 0; p + REC_OVERHEAD <= len; ) {
      const rl = buf.readUInt32LE(p);
      if (rl < REC_OVERHEAD) break;
      if (buf[p + 4] === KIND_MSG) {
        const s = recSeq(buf, p);
        if (s >= blk.firstSeq && s <= blk.lastSeq) offs[s - blk.firstSeq] = p;
      }
      p += rl;
    }
  }

  /** Index the message record at buf[p] (block offset off) if it is new; returns its subject. */
  private loadMsgRecord(blk: Blk, buf: Buffer, p: number, off: number, rl: number, seq: number, tsNs: number, ttl: number): SubjRec {
    const sl = buf.readUInt16LE(p + 6);
    const hl = buf.readUInt32LE(p + 8);
    // Runs of one subject are common: compare bytes instead of decoding and hashing each.
    let rec = this.lastRec;
    if (rec === null || !rec.sameAs(buf, p + REC_HDR, sl)) {
      rec = this.internSubject(buf.toString("utf8", p + REC_HDR, p + REC_HDR + sl));
      this.lastRec = rec;
    }
    if (seq <= this.lastSeq) return rec;
    const dl = rl - REC_OVERHEAD - sl - hl;
    const size = fileStoreMsgSize(sl, hl, dl);
    this.indexAppend(seq, rec, tsNs, size, ttl);
    this.noteAppend(blk, seq, off, size);
    return rec;
  }

  /** Block and checkpoint bookkeeping for a message record at off in w. */
  private noteAppend(w: Blk, seq: number, off: number, size: number): void {
    const g = Math.floor(seq / CK_SEQS);
    if (g !== this.ckLastGroup) {
      this.ckPut(g, off);
      this.ckLastGroup = g;
    }
    this.noteInBlock(w, seq, 1, off, size);
  }

  /** noteAppend of n records of length rl from offset off: seq, seq + 1, ... */
  private noteAppendRun(w: Blk, seq: number, n: number, off: number, rl: number, size: number): void {
    const last = seq + n - 1;
    const g0 = Math.floor(seq / CK_SEQS);
    const g1 = Math.floor(last / CK_SEQS);
    if (g0 !== this.ckLastGroup) this.ckPut(g0, off);
    if (g1 > g0) {
      // every later group of the run starts at a record boundary: one arithmetic run
      this.ckCol.dropBelow(Math.floor(this.firstSeq / CK_SEQS));
      this.ckCol.fillLinear(g0 + 1, g1 - g0, off + ((g0 + 1) * CK_SEQS - seq) * rl, CK_SEQS * rl);
    }
    this.ckLastGroup = g1;
    this.noteInBlock(w, seq, n, off, size);
  }

  /** w gains n live records seq..seq + n - 1 of limit size `size`, the first at off. */
  private noteInBlock(w: Blk, seq: number, n: number, off: number, size: number): void {
    if (w.firstSeq === 0) {
      w.firstSeq = seq;
      w.firstMsgOff = off;
      this.seqBlocks.push(w);
    }
    w.lastSeq = seq + n - 1;
    w.live += n;
    w.liveRecBytes += n * (size + REC_LEN_SLACK);
  }

  private ckPut(g: number, off: number): void {
    // Groups below the first live message are never looked up again.
    if (g % CK_CHUNK_GROUPS === 0) this.ckCol.dropBelow(Math.floor(this.firstSeq / CK_SEQS));
    this.ckCol.set(g, off);
  }

  private blkFd(b: Blk): number {
    if (b.fd < 0) b.fd = this.fs.open(b.path, "rw");
    return b.fd;
  }

  private newBlock(): Blk {
    const last = this.blocks[this.blocks.length - 1];
    const id = last === undefined ? 1 : last.id + 1;
    const b = new Blk(id, join(this.dir, `${id}.blk`));
    b.sum = new SummaryBuilder();
    this.blkFd(b);
    this.blocks.push(b);
    this.dirDirty = true;
    return b;
  }

  // ---- columns ----
  protected resizeExtra(): void {
    // nothing per message beyond the shared columns
  }

  // ---- hot path ----
  storeMsg(subject: string, hdr: Buffer | null, data: Buffer, tsNs: number, ttlSec: number): number {
    if (this.closed) throw new Error("file store is closed");
    if (this.failed !== null) throw this.failed;
    const rec = this.internSubject(subject);
    const sl = rec.blen;
    const hl = hdr === null ? 0 : hdr.length;
    const dl = data.length;
    const rl = REC_OVERHEAD + sl + hl + dl;
    if (sl > 0xffff || rl > MAX_RECORD_BYTES) throw new Error(`file store: message too large (${rl} bytes, subject ${sl})`);
    let w = this.wblk;
    if (w.firstSeq !== 0 && w.size + rl > this.blockSizeBytes) w = this.roll();
    const p = this.reserve(rl);
    const seq = this.lastSeq + 1;
    const b = this.wbuf;
    writeRecordHeader(b, p, rl, KIND_MSG, hdr === null ? 0 : FLAG_HDR, sl, hl, seq, tsNs, ttlSec > 0 ? ttlSec : 0);
    rec.writeTo(b, p + REC_HDR);
    if (hdr !== null) hdr.copy(b, p + REC_HDR + sl);
    data.copy(b, p + REC_HDR + sl + hl);
    sealRecord(b, p, rl);
    const size = fileStoreMsgSize(sl, hl, dl);
    this.indexAppend(seq, rec, tsNs, size, ttlSec);
    this.noteAppend(w, seq, w.size, size);
    if (hl > 0) w.hdrMsgs++;
    w.sum?.msg(seq, rl, rec, hl > 0, tsNs, ttlSec > 0 ? ttlSec : 0);
    w.size += rl;
    this.enforceLimits(rec);
    this.scheduleFlush();
    return seq;
  }

  /** storeMsg at a given sequence and time (a replica, a restore). Kept apart from storeMsg so
   *  the publish path stays as it is. A gap before seq needs no record: recovery reads the
   *  sequences between two message records as deleted, and a floor record carries lastSeq. */
  storeMsgAt(seq: number, subject: string, hdr: Buffer | null, data: Buffer, tsNs: number, ttlSec: number): void {
    if (this.closed) throw new Error("file store is closed");
    if (this.failed !== null) throw this.failed;
    this.checkStoreAt(seq);
    const rec = this.internSubject(subject);
    const sl = rec.blen;
    const hl = hdr === null ? 0 : hdr.length;
    const dl = data.length;
    const rl = REC_OVERHEAD + sl + hl + dl;
    if (sl > 0xffff || rl > MAX_RECORD_BYTES) throw new Error(`file store: message too large (${rl} bytes, subject ${sl})`);
    let w = this.wblk;
    if (w.firstSeq !== 0 && w.size + rl > this.blockSizeBytes) w = this.roll();
    const p = this.reserve(rl);
    const b = this.wbuf;
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
    this.scheduleFlush();
  }

  /** Skip sequences: no record per sequence, only a floor record at the next flush, which
   *  carries the new lastSeq and its time (recovery extends lastSeq to it). */
  skipMsgs(seq: number, count: number, tsNs: number): void {
    if (this.closed) throw new Error("file store is closed");
    if (this.failed !== null) throw this.failed;
    this.indexSkip(seq, count, tsNs);
    this.writtenFloor = -1;
    this.scheduleFlush();
  }

  /** Room for rl bytes at the end of the write buffer; returns the buffer position. */
  private reserve(rl: number): number {
    if (this.wlen > 0 && this.wlen + rl > FLUSH_AT_BYTES) this.writeOut();
    if (this.wlen + rl > this.wbuf.length) {
      const nb = Buffer.allocUnsafe(Math.max(this.wbuf.length * 2, this.wlen + rl));
      this.wbuf.copy(nb, 0, 0, this.wlen);
      this.wbuf = nb;
    }
    const p = this.wlen;
    this.wlen += rl;
    return p;
  }

  private appendMarker(kind: number, seq: number): void {
    const w = this.wblk;
    const dl = kind === KIND_FLOOR ? 16 : 0;
    const rl = REC_OVERHEAD + dl;
    const p = this.reserve(rl);
    const b = this.wbuf;
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

  /** Hand the write buffer to the file (page cache); no fsync. */
  private writeOut(): void {
    if (this.wlen === 0) return;
    const w = this.wblk;
    try {
      this.fs.write(this.blkFd(w), this.wbuf, 0, this.wlen, w.written);
    } catch (e) {
      this.fail(e as Error);
      throw e;
    }
    w.sum?.wroteRecords(this.wbuf, 0, this.wlen);
    w.written += this.wlen;
    if (this.syncIntervalMs > 0) w.good = w.written;
    this.wlen = 0;
    this.writes++;
    w.dirty = true;
  }

  /** Write b's summary (b.sum covers every byte written) and, when b is sealed, drop it from
   *  memory. Without fsync unless asked: a summary lost or torn in a crash costs a scan. */
  private saveSummary(b: Blk, fsync: boolean): void {
    const sum = b.sum;
    if (b !== this.wblk) b.sum = null;
    if (sum === null || sum.covered !== b.written || b.sumCovered === b.written) return;
    const bytes = sum.encode();
    try {
      // A new file rather than an overwrite: under encryption at rest (CryptFs) a new file
      // gets a new key and IV, so two versions of a summary never share a keystream. A crash
      // in between costs a scan, as any lost summary does.
      this.fs.unlink(b.sumPath);
      const fd = this.fs.open(b.sumPath, "rw");
      try {
        this.fs.write(fd, bytes, 0, bytes.length, 0);
        this.fs.truncate(fd, bytes.length);
        if (fsync) this.fs.fsyncSync(fd);
      } finally {
        this.fs.close(fd);
      }
      b.sumCovered = b.written;
    } catch {
      // only a cache: recovery scans the block instead
    }
  }

  private roll(): Blk {
    this.writeOut();
    const old = this.wblk;
    this.wblk = this.newBlock();
    this.saveSummary(old, false);
    if (old.live === 0) this.blockDied(old);
    return this.wblk;
  }

  private scheduleFlush(): void {
    if (!this.flushScheduled) {
      this.flushScheduled = true;
      setImmediate(this.flushFn);
    }
  }

  /** Remove a message and overwrite its record on disk: subject, headers and payload become
   *  zero bytes (nats-server writes random ones), the length, sequence and time stay so the
   *  block still walks and recovers as before. The tombstone is made durable first: a crash
   *  in between leaves the message deleted, never an erased record without its tombstone
   *  (which recovery would read as an empty message). */
  eraseMsg(seq: number): boolean {
    if (this.closed) throw new Error("file store is closed");
    if (this.failed !== null) throw this.failed;
    const b = this.blockFor(seq);
    if (b === null || this.subjAt(seq) === 0) return false;
    this.locate(b, seq);
    const off = this.curOff;
    const rl = this.rbuf.readUInt32LE(this.rp);
    const rec = Buffer.alloc(rl);
    this.rbuf.copy(rec, 0, this.rp, this.rp + REC_HDR);
    if (!this.removeMsg(seq)) return false;
    try {
      this.writeOut();
      this.fs.fsyncSync(this.blkFd(this.wblk)); // the tombstone, before the overwrite
      rec[5] = 0; // flags: no header block
      rec.writeUInt16LE(0, 6); // subject length
      rec.writeUInt32LE(0, 8); // header length
      rec.writeUInt32LE(0, 28); // ttl
      sealRecord(rec, 0, rl);
      this.fs.write(this.blkFd(b), rec, 0, rl, off);
    } catch (e) {
      this.fail(e as Error);
      throw e;
    }
    b.dirty = true;
    // The block's bytes changed under its summary: recovery scans it (and writes a new one).
    b.sum = null;
    b.sumCovered = 0;
    this.fs.unlink(b.sumPath);
    this.dropCache(b);
    this.scheduleFlush();
    return true;
  }

  /** The write or fsync error that stopped this store, or null. */
  failure(): Error | null {
    return this.failed;
  }

  sync(cb: SyncCb): void {
    if (this.failed !== null || this.closed) {
      setImmediate(cb, this.failed); // after close everything is already on disk
      return;
    }
    this.queued.push(cb);
    // A round can start: write and start the fsync now instead of a turn later (the caller
    // asks once per batch of publishes). While the rounds are all busy, later calls gather
    // for the next one.
    if (this.syncIntervalMs === 0 && this.canStartRound()) this.flush();
    else this.scheduleFlush();
  }

  private flush(): void {
    this.flushScheduled = false;
    if (this.failed !== null) return this.failAll();
    if (this.closed && this.wblk.fd < 0) return;
    try {
      if (this.rounds.length === 0) this.runCompactions();
      const w = this.wblk;
      // A dead write block worth reclaiming: start a fresh one, and the old one dies.
      if (w.live === 0 && w.firstSeq !== 0 && w.size >= this.blockSizeBytes >>> 2) this.roll();
      if (this.firstSeq !== this.writtenFloor) {
        this.appendMarker(KIND_FLOOR, this.firstSeq);
        this.writtenFloor = this.firstSeq;
      }
      this.writeOut();
    } catch {
      return this.failAll();
    }
    const tw = this.wblk;
    if (tw.sum !== null && tw.written - tw.sumCovered >= TAIL_SUMMARY_STEP_BYTES) this.saveSummary(tw, false);
    if (this.queued.length > 0) {
      if (this.written.length === 0) {
        const t = this.written;
        this.written = this.queued;
        this.queued = t;
      } else {
        for (const cb of this.queued) this.written.push(cb);
        this.queued.length = 0;
      }
    }
    if (this.syncIntervalMs > 0) {
      const cbs = this.written;
      this.written = [];
      for (const cb of cbs) cb(null);
      return;
    }
    if (this.canStartRound() && this.needsFsync()) this.startFsync();
  }

  /** Whether another fsync round may start now: always when none runs; a second one while
   *  no compaction waits (compactions run between rounds). */
  private canStartRound(): boolean {
    if (this.closed) return false;
    const n = this.rounds.length;
    return n === 0 || (n < MAX_FSYNC_ROUNDS && this.compactQueue.length === 0);
  }

  private needsFsync(): boolean {
    if (this.written.length > 0 || this.dirDirty) return true;
    for (const b of this.blocks) if (b.dirty) return true;
    for (const b of this.dying) if (b.dirty || b.unlinkAfterWrite <= this.writes) return true;
    return false;
  }

  private startFsync(): void {
    const round: FsyncRound = { cbs: this.written, covered: this.writes, blks: [], lens: [], pending: 1, err: null, done: false };
    this.written = [];
    const targets: Blk[] = [];
    for (const b of this.blocks) {
      if (b.dirty) {
        b.dirty = false;
        targets.push(b);
      }
    }
    for (const b of this.dying) {
      if (b.dirty) {
        b.dirty = false;
        targets.push(b);
      }
    }
    const dir = this.dirDirty;
    this.dirDirty = false;
    round.pending = targets.length + (dir ? 1 : 0) + 1;
    this.rounds.push(round);
    const done = (err: Error | null): void => {
      if (err !== null && round.err === null) round.err = err;
      if (--round.pending > 0) return;
      round.done = true;
      this.releaseRounds();
    };
    for (const b of targets) {
      round.blks.push(b);
      round.lens.push(b.written);
      this.fs.fsync(b.fd, done);
    }
    if (dir) this.fs.fsyncDir(this.dir, done);
    done(null);
  }

  /** Answer finished rounds in the order they started: a round's callbacks run only once
   *  every earlier round is durable too (each round fsyncs only what was dirty at its start). */
  private releaseRounds(): void {
    const rounds = this.rounds;
    while (rounds.length > 0 && rounds[0]!.done) {
      const r = rounds.shift()!;
      if (r.err !== null || this.failed !== null) {
        const err = r.err ?? this.failed!;
        this.fail(err);
        for (const cb of r.cbs) cb(err);
        // Later rounds cannot be trusted either: fail their callbacks now, once.
        for (const later of rounds) {
          const cbs = later.cbs;
          later.cbs = [];
          for (const cb of cbs) cb(err);
        }
        continue;
      }
      for (let i = 0; i < r.blks.length; i++) {
        const b = r.blks[i]!;
        if (r.lens[i]! > b.good) b.good = r.lens[i]!;
      }
      this.unlinkDead(r.covered);
      for (const cb of r.cbs) cb(null);
    }
    if (rounds.length === 0) {
      const idle = this.idleWaiters.splice(0);
      for (const w of idle) w();
    }
    if (this.failed !== null) return this.failAll();
    if (this.syncIntervalMs === 0 && this.wlen === 0 && this.canStartRound() && this.needsFsync()) this.startFsync();
  }

  private fail(e: Error): void {
    if (this.failed === null) this.failed = e;
  }

  private failAll(): void {
    const err = this.failed ?? new Error("file store failed");
    const cbs = [...this.written, ...this.queued];
    this.written = [];
    this.queued = [];
    for (const cb of cbs) cb(err);
  }

  private armSyncTimer(): void {
    this.syncTimer = this.clock.setTimer(() => {
      this.syncTimer = null;
      if (this.closed) return;
      if (this.rounds.length === 0 && this.failed === null && this.needsFsync()) this.startFsync();
      this.armSyncTimer();
    }, this.syncIntervalMs);
  }

  // ---- removal bookkeeping ----
  private blockFor(seq: number): Blk | null {
    const bl = this.seqBlocks;
    let lo = 0;
    let hi = bl.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      const b = bl[mid] as Blk;
      if (b.lastSeq < seq) lo = mid + 1;
      else if (b.firstSeq > seq) hi = mid - 1;
      else return b;
    }
    return null;
  }

  private dyingBlockFor(seq: number): Blk | null {
    for (const d of this.dying) if (d.firstSeq !== 0 && d.firstSeq <= seq && seq <= d.lastSeq) return d;
    return null;
  }

  protected override headerCandidate(s: number): number {
    const bl = this.seqBlocks;
    let lo = 0;
    let hi = bl.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if ((bl[mid] as Blk).lastSeq < s) lo = mid + 1;
      else hi = mid;
    }
    for (; lo < bl.length; lo++) {
      const b = bl[lo] as Blk;
      if (b.hdrMsgs > 0) return Math.max(s, b.firstSeq);
    }
    return 0;
  }

  protected onRemoved(seq: number): void {
    const b = this.blockFor(seq);
    if (b === null) throw new Error(`file store: no block holds seq ${seq}`);
    b.live--;
    b.liveRecBytes -= this.sizeAt(seq) + REC_LEN_SLACK;
    if (this.loading) return;
    if (seq >= this.firstSeq) this.appendMarker(KIND_TOMB, seq);
    if (b !== this.wblk) {
      if (b.live === 0) this.blockDied(b);
      else if (b.size >= Math.min(COMPACT_MIN_BYTES, this.blockSizeBytes >>> 1) && b.liveRecBytes * 4 < b.size && !this.compactQueue.includes(b)) {
        this.compactQueue.push(b);
      }
    }
  }

  protected override afterMutation(): void {
    if (!this.loading) this.scheduleFlush();
  }

  private blockDied(b: Blk): void {
    const idx = this.blocks.indexOf(b);
    if (idx < 0) return;
    // Tombstones in b that still hide a message in another block must outlive b.
    for (const t of b.tombs) {
      if (t >= this.firstSeq && t <= this.lastSeq) {
        const tb = this.blockFor(t);
        if (tb !== null && tb !== b) this.appendMarker(KIND_TOMB, t);
      }
    }
    this.blocks.splice(idx, 1);
    const si = this.seqBlocks.indexOf(b);
    if (si >= 0) this.seqBlocks.splice(si, 1);
    this.writtenFloor = -1; // b may have held the only floor record
    b.unlinkAfterWrite = this.writes + 1;
    this.dying.push(b);
    this.dropCache(b);
    this.scheduleFlush();
  }

  private unlinkDead(coveredWrites: number): void {
    if (this.dying.length === 0) return;
    const keep: Blk[] = [];
    for (const b of this.dying) {
      if (b.unlinkAfterWrite <= coveredWrites && !b.dirty) {
        if (b.fd >= 0) this.fs.close(b.fd);
        b.fd = -1;
        this.fs.unlink(b.path);
        this.fs.unlink(b.sumPath);
      } else keep.push(b);
    }
    this.dying.length = 0;
    for (const b of keep) this.dying.push(b);
  }

  /** Rewrite a mostly dead sealed block with only its live messages and needed tombstones. */
  private runCompactions(): void {
    while (this.compactQueue.length > 0) {
      const b = this.compactQueue.pop() as Blk;
      if (!this.blocks.includes(b) || b === this.wblk || b.live === 0) continue;
      this.compactBlock(b);
    }
  }

  private compactBlock(b: Blk): void {
    const fs = this.fs;
    const old = Buffer.allocUnsafe(b.written);
    fs.read(this.blkFd(b), old, 0, b.written, 0);
    // The rewrite is durable at once, before anything written since: it must keep every
    // removal it can (a tombstone hiding a message in a block still on disk, even one below
    // firstSeq whose newer floor may not be synced yet) and its newest floor record.
    const tombs: number[] = [];
    for (const t of b.tombs) {
      if (t <= this.lastSeq) {
        const tb = this.blockFor(t) ?? this.dyingBlockFor(t);
        if (tb !== null && tb !== b) tombs.push(t);
      }
    }
    let floorAt = -1;
    let floorSeq = 0;
    if (b.hasFloor) {
      for (let q = 0; q < old.length; ) {
        const rl = checkRecord(old, q);
        if (rl === 0) {
          const next = resync(old, q + 1);
          if (next < 0) break;
          q = next;
          continue;
        }
        if (old[q + 4] === KIND_FLOOR && recSeq(old, q) >= floorSeq) {
          floorSeq = recSeq(old, q);
          floorAt = q;
        }
        q += rl;
      }
    }
    const floorLen = floorAt < 0 ? 0 : old.readUInt32LE(floorAt);
    const out = Buffer.allocUnsafe(b.liveRecBytes + tombs.length * REC_OVERHEAD + floorLen);
    let p = 0;
    let kept = 0;
    let prev = 0;
    let lastG = -1;
    const cks: number[] = []; // (group, new offset) for groups that begin in this block
    const sum = new SummaryBuilder();
    let hdrMsgs = 0;
    const lo = Math.max(b.firstSeq, this.firstSeq);
    for (let q = 0; q < old.length; ) {
      const rl = checkRecord(old, q);
      if (rl === 0) {
        const next = resync(old, q + 1);
        if (next < 0) break;
        q = next;
        continue;
      }
      if (old[q + 4] === KIND_MSG) {
        const s = recSeq(old, q);
        const id = s > prev && s >= lo && s <= b.lastSeq ? this.subjAt(s) : 0;
        if (id !== 0) {
          if (p + rl > out.length) return; // the size estimate is broken: leave the block as it is
          old.copy(out, p, q, q + rl);
          const rec = this.byId[id] as SubjRec;
          const hasHdr = old.readUInt32LE(q + 8) > 0;
          if (hasHdr) hdrMsgs++;
          sum.msg(s, rl, rec, hasHdr, old.readDoubleLE(q + 20), old.readUInt32LE(q + 28));
          const g = Math.floor(s / CK_SEQS);
          if (g !== lastG) {
            lastG = g;
            if (g * CK_SEQS >= b.firstSeq) cks.push(g, p);
          }
          p += rl;
          prev = s;
          kept++;
        }
      }
      q += rl;
    }
    // Every live message must be in the copy; anything else means the disk changed under us.
    if (kept !== b.live) return;
    for (const t of tombs) {
      writeRecordHeader(out, p, REC_OVERHEAD, KIND_TOMB, 0, 0, 0, t, 0, 0);
      sealRecord(out, p, REC_OVERHEAD);
      sum.tomb(t);
      p += REC_OVERHEAD;
    }
    if (floorAt >= 0) {
      old.copy(out, p, floorAt, floorAt + floorLen);
      const d = floorAt + REC_HDR + old.readUInt16LE(floorAt + 6) + old.readUInt32LE(floorAt + 8);
      sum.floor(floorSeq, old.readDoubleLE(d), old.readDoubleLE(d + 8));
      p += floorLen;
    }
    sum.wrote(out, 0, p);
    const tmp = `${b.path}.new`;
    fs.unlink(tmp);
    const fd = fs.open(tmp, "rw");
    fs.write(fd, out, 0, p, 0);
    fs.fsyncSync(fd);
    if (b.fd >= 0) fs.close(b.fd);
    fs.rename(tmp, b.path);
    fs.fsyncDirSync(this.dir);
    b.fd = fd;
    for (let k = 0; k < cks.length; k += 2) this.ckPut(cks[k] as number, cks[k + 1] as number);
    b.firstMsgOff = 0;
    b.offs = null;
    b.size = b.written = b.good = p;
    b.dirty = false;
    b.tombs = tombs;
    b.hdrMsgs = hdrMsgs;
    b.sum = sum;
    b.sumCovered = -1;
    this.saveSummary(b, false);
    if (b.hasFloor && floorAt < 0) {
      b.hasFloor = false;
      this.writtenFloor = -1;
    }
    this.dropCache(b);
  }

  // ---- reads ----
  private dropCache(b: Blk): void {
    for (const c of this.cache) if (c.blk === b) c.blk = null;
    if (this.curBlk === b) this.curBlk = null;
  }

  /** Make [off, off + len) of block b readable at this.rbuf[this.rp]. */
  private view(b: Blk, off: number, len: number): void {
    if (b === this.wblk && off >= b.written) {
      this.rbuf = this.wbuf;
      this.rp = off - b.written;
      return;
    }
    const cache = this.cache;
    let want = SMALL_READ_BYTES;
    for (let k = 0; k < READ_CACHE_WINDOWS; k++) {
      const c = cache[k] as CacheWin;
      if (c.blk !== b || off < c.start) continue;
      const end = c.start + c.buf.length;
      if (off + len <= end) {
        this.rbuf = c.buf;
        this.rp = off - c.start;
        return;
      }
      // Reading on from the end of a window is a scan: read ahead a lot. A jump reads a little.
      if (off <= end) want = READ_WINDOW_BYTES;
    }
    const n = Math.min(Math.max(len, want), b.written - off);
    if (n < len) throw new Error(`file store: record at ${off} runs past the end of ${b.path}`);
    const nb = Buffer.allocUnsafe(n);
    const got = this.fs.read(this.blkFd(b), nb, 0, n, off);
    if (got < len) throw new Error(`file store: short read at ${off} in ${b.path}`);
    const win = cache[this.cacheNext] as CacheWin;
    this.cacheNext = (this.cacheNext + 1) % READ_CACHE_WINDOWS;
    win.blk = b;
    win.start = off;
    win.buf = got < n ? nb.subarray(0, got) : nb;
    this.rbuf = win.buf;
    this.rp = 0;
    this.readsSinceCheck++;
    if (this.cacheTimer === null && !this.closed) this.armCacheTimer();
  }

  /** Every READ_CACHE_IDLE_MS while windows are held: if none was filled since the last look,
   *  give them all back (reads are served from windows only within one call, so no view is
   *  left pointing into them). */
  private armCacheTimer(): void {
    this.readsSinceCheck = 0;
    this.cacheTimer = this.clock.setTimer(() => {
      this.cacheTimer = null;
      if (this.closed) return;
      if (this.readsSinceCheck > 0) return this.armCacheTimer();
      for (const c of this.cache) {
        c.blk = null;
        c.buf = EMPTY_BUF;
      }
      if (this.rbuf !== this.wbuf) this.rbuf = EMPTY_BUF;
    }, READ_CACHE_IDLE_MS);
  }

  /** Bytes held by read windows (for tests and memory accounting). */
  readCacheBytes(): number {
    let n = 0;
    for (const c of this.cache) n += c.buf.length;
    return n;
  }

  /** Find the record of live message seq in b; leaves it whole at this.rbuf[this.rp]. */
  private locate(b: Blk, seq: number): void {
    let off: number;
    if (b.offs !== null) {
      off = b.offs[seq - b.firstSeq] as number;
      this.view(b, off, REC_HDR);
      this.view(b, off, this.rbuf.readUInt32LE(this.rp));
      return;
    }
    if (this.curBlk === b && this.curSeq <= seq && seq - this.curSeq <= CK_SEQS) {
      off = seq === this.curSeq ? this.curOff : this.curOff + this.curLen;
    }
    else {
      const g = Math.floor(seq / CK_SEQS);
      off = b.firstSeq <= g * CK_SEQS ? this.ckCol.get(g) : b.firstMsgOff;
    }
    for (;;) {
      if (off + REC_HDR > b.size) break;
      this.view(b, off, REC_HDR);
      const buf = this.rbuf;
      const p = this.rp;
      const rl = buf.readUInt32LE(p);
      const kind = buf[p + 4] as number;
      if (rl < REC_OVERHEAD || rl > MAX_RECORD_BYTES || kind < KIND_MSG || kind > KIND_FLOOR) {
        throw new Error(`file store: bad record at ${off} in ${b.path} while looking for seq ${seq}`);
      }
      if (kind === KIND_MSG) {
        const s = recSeq(buf, p);
        if (s === seq) {
          if (p + rl > buf.length) this.view(b, off, rl);
          this.curBlk = b;
          this.curSeq = seq;
          this.curOff = off;
          this.curLen = rl;
          return;
        }
        if (s > seq) break;
      }
      off += rl;
    }
    throw new Error(`file store: seq ${seq} not found in ${b.path}`);
  }

  protected slotTs(seq: number, _slot: number): number {
    if (seq === this.tsMemoSeq) return this.tsMemoNs;
    const b = this.blockFor(seq);
    if (b === null) throw new Error(`file store: no block holds seq ${seq}`);
    this.locate(b, seq);
    const ts = this.rbuf.readDoubleLE(this.rp + 20);
    this.tsMemoSeq = seq;
    this.tsMemoNs = ts;
    return ts;
  }

  protected readSlot(seq: number, _slot: number, subject: string): StoredMsg {
    const b = this.blockFor(seq);
    if (b === null) throw new Error(`file store: no block holds seq ${seq}`);
    this.locate(b, seq);
    const buf = this.rbuf;
    const p = this.rp;
    const rl = buf.readUInt32LE(p);
    const tsNs = buf.readDoubleLE(p + 20);
    const sl = buf.readUInt16LE(p + 6);
    const hl = buf.readUInt32LE(p + 8);
    const hasHdr = ((buf[p + 5] as number) & FLAG_HDR) !== 0;
    const h0 = p + REC_HDR + sl;
    // Read windows are replaced, never written, so a view of one stays valid; the write
    // buffer is reused and always copied.
    if (this.transientRead && buf !== this.wbuf) {
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
    if (this.closed) return;
    await new Promise<void>((res) => this.sync(() => res()));
    if (this.rounds.length > 0) await new Promise<void>((res) => this.idleWaiters.push(res));
    this.closed = true;
    if (this.syncTimer !== null) this.clock.clearTimer(this.syncTimer);
    this.syncTimer = null;
    if (this.cacheTimer !== null) this.clock.clearTimer(this.cacheTimer);
    this.cacheTimer = null;
    if (this.failed === null) {
      try {
        this.writeOut();
        for (const b of [...this.blocks, ...this.dying]) {
          if (b.dirty && b.fd >= 0) this.fs.fsyncSync(b.fd);
          b.dirty = false;
        }
        this.saveSummary(this.wblk, true);
        if (this.dirDirty) this.fs.fsyncDirSync(this.dir);
        this.dirDirty = false;
        this.unlinkDead(this.writes);
      } catch {
        // the store is going away; a failed final sync leaves the disk as recovery will see it
      }
    } else {
      // A write or fsync failed: cut every block back to what was answered for, so that
      // reopening it finds exactly the acknowledged messages and none of those whose
      // publishers were told the store failed (a retry of one must not store it twice).
      // Shrinking a file needs no free space.
      for (const b of [...this.blocks, ...this.dying]) {
        // The write block may hold part of a write that failed half way (written not advanced).
        if (b.written <= b.good && b !== this.wblk) continue;
        try {
          this.fs.truncate(this.blkFd(b), b.good);
          this.fs.fsyncSync(b.fd);
        } catch {
          // recovery will find and drop a torn or unsynced tail as after a crash
        }
      }
    }
    for (const b of [...this.blocks, ...this.dying]) {
      if (b.fd >= 0) this.fs.close(b.fd);
      b.fd = -1;
    }
  }

  async delete(): Promise<void> {
    await this.close();
    this.fs.rmrf(this.dir);
  }

  /** Sealed and live block files, for tests and monitoring. */
  blockCount(): number {
    return this.blocks.length;
  }
}

interface Scratch {
  buf: Buffer;
}

/** The whole file at path as a view of scratch.buf (grown when too small), or null. */
function readWhole(fs: Fs, path: string, scratch: Scratch): Buffer | null {
  let fd: number;
  try {
    fd = fs.open(path, "r");
  } catch {
    return null;
  }
  try {
    const n = fs.fsize(fd);
    if (scratch.buf.length < n) scratch.buf = Buffer.allocUnsafe(Math.max(n, scratch.buf.length * 2));
    const b = scratch.buf.subarray(0, n);
    return fs.read(fd, b, 0, n, 0) === n ? b : null;
  } finally {
    fs.close(fd);
  }
}

/** CRC-32 of the first len bytes of a file, read in chunks; -1 if the file is shorter. */
function fileCrc(fs: Fs, fd: number, len: number, chunk: Buffer): number {
  let crc = 0;
  for (let pos = 0; pos < len; ) {
    const n = Math.min(chunk.length, len - pos);
    if (fs.read(fd, chunk, 0, n, pos) < n) return -1;
    crc = crc32Update(crc, chunk, 0, n);
    pos += n;
  }
  return crc;
}

/** offs[seq - firstSeq] = block offset of each message record in buf (block bytes from base on)
 *  that recovery indexed: walked over damage the way scanBlock walks, counting only sequences
 *  above every one before (seqBefore: the index's last seq when the scan began). */
function scannedOffsets(buf: Buffer, base: number, seqBefore: number, firstSeq: number, offs: Uint32Array): void {
  let top = seqBefore;
  for (let p = 0; p < buf.length; ) {
    const rl = checkRecord(buf, p);
    if (rl === 0) {
      const next = resync(buf, p + 1);
      if (next < 0) break;
      p = next;
      continue;
    }
    if (buf[p + 4] === KIND_MSG) {
      const s = recSeq(buf, p);
      if (s > top) {
        top = s;
        offs[s - firstSeq] = base + p;
      }
    }
    p += rl;
  }
}

/** Next offset after p where a valid record starts, or -1. */
function resync(buf: Buffer, from: number): number {
  for (let q = from; q + REC_OVERHEAD <= buf.length; q++) {
    const k = buf[q + 4] as number;
    if (k < KIND_MSG || k > KIND_FLOOR) continue;
    if (checkRecord(buf, q) > 0) return q;
  }
  return -1;
}

export type { SubjRec };
