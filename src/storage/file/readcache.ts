// The read side of a file stream store: a bounded cache of read windows over block files,
// and locate(), which finds a message's record from the nearest checkpoint (one per CK_SEQS
// sequences: the offset of the first record of that group) or from the cursor the previous
// read left, walking at most CK_SEQS records. Windows are replaced, never written, so a view of
// one stays valid; those unused for READ_CACHE_IDLE_MS are given back.
import type { Clock, TimerHandle } from "../../runtime/clock.js";
import { ChunkCol } from "../memory/chunkcol.js";
import type { Blk, BlockFiles } from "./block.js";
import type { Journal } from "./journal.js";
import { KIND_FLOOR, KIND_MSG, MAX_RECORD_BYTES, REC_HDR, REC_OVERHEAD, recSeq } from "./record.js";

export const CK_SEQS = 16;
export const CK_CHUNK_GROUPS = 256;
const EMPTY_BUF = Buffer.alloc(0);
const READ_WINDOW_BYTES = 256 * 1024;
const READ_CACHE_WINDOWS = 4;
const SMALL_READ_BYTES = 16 * 1024; // a read that does not continue the previous window
/** Read windows unused this long are given back (a burst of reads leaves no 1 MiB behind). */
const READ_CACHE_IDLE_MS = 5_000;

/** One checkpoint per CK_SEQS sequences: get(g) = offset of the first record stored in seq
 *  group g (g = floor(seq / CK_SEQS)), in the block that holds it. Records of one length make
 *  these an arithmetic run, which a ChunkCol keeps without an array (256 groups per chunk).
 *  Groups below the first live message are never looked up again and are dropped. */
export class Checkpoints {
  private readonly col = new ChunkCol(CK_CHUNK_GROUPS);
  private lastGroup = -1;

  get(g: number): number {
    return this.col.get(g);
  }

  /** A message record seq at off (firstSeq: the stream's first live sequence). */
  note(seq: number, off: number, firstSeq: number): void {
    const g = Math.floor(seq / CK_SEQS);
    if (g !== this.lastGroup) {
      this.put(g, off, firstSeq);
      this.lastGroup = g;
    }
  }

  /** note() for n records of length rl from offset off: seq, seq + 1, ... */
  noteRun(seq: number, n: number, off: number, rl: number, firstSeq: number): void {
    const last = seq + n - 1;
    const g0 = Math.floor(seq / CK_SEQS);
    const g1 = Math.floor(last / CK_SEQS);
    if (g0 !== this.lastGroup) this.put(g0, off, firstSeq);
    if (g1 > g0) {
      // every later group of the run starts at a record boundary: one arithmetic run
      this.col.dropBelow(Math.floor(firstSeq / CK_SEQS));
      this.col.fillLinear(g0 + 1, g1 - g0, off + ((g0 + 1) * CK_SEQS - seq) * rl, CK_SEQS * rl);
    }
    this.lastGroup = g1;
  }

  put(g: number, off: number, firstSeq: number): void {
    if (g % CK_CHUNK_GROUPS === 0) this.col.dropBelow(Math.floor(firstSeq / CK_SEQS));
    this.col.set(g, off);
  }

  clear(): void {
    this.col.clear();
    this.lastGroup = -1;
  }
}

interface CacheWin {
  blk: Blk | null;
  start: number;
  buf: Buffer;
}

export class ReadCache {
  /** Where locate()/view() left the bytes: rbuf[rp...] is the record. */
  rbuf: Buffer = EMPTY_BUF;
  rp = 0;
  // The record found by the last locate(): sequential readers continue from it.
  private curBlk: Blk | null = null;
  private curSeq = 0;
  /** Block offset of the record found by the last locate(). */
  curOff = 0;
  private curLen = 0; // record length at curOff: the next record starts right after it
  private readonly files: BlockFiles;
  private readonly journal: Journal;
  private readonly cks: Checkpoints;
  private readonly clock: Clock;
  private readonly cache: CacheWin[] = [];
  private cacheNext = 0;
  private cacheTimer: TimerHandle | null = null;
  private readsSinceCheck = 0; // view() calls that filled a window since the idle timer last looked
  private closed = false;

  constructor(files: BlockFiles, journal: Journal, cks: Checkpoints, clock: Clock) {
    this.files = files;
    this.journal = journal;
    this.cks = cks;
    this.clock = clock;
    for (let k = 0; k < READ_CACHE_WINDOWS; k++) this.cache.push({ blk: null, start: 0, buf: EMPTY_BUF });
  }

  /** Forget b's windows and the cursor into it (b was rewritten or is gone). */
  drop(b: Blk): void {
    for (const c of this.cache) if (c.blk === b) c.blk = null;
    if (this.curBlk === b) this.curBlk = null;
  }

  /** Forget every window and the cursor. */
  dropAll(): void {
    for (const c of this.cache) c.blk = null;
    this.curBlk = null;
  }

  /** Make [off, off + len) of block b readable at this.rbuf[this.rp]. */
  view(b: Blk, off: number, len: number): void {
    if (b === this.files.wblk && off >= b.written) {
      this.rbuf = this.journal.wbuf;
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
    const got = this.files.fs.read(this.files.fd(b), nb, 0, n, off);
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
      if (this.rbuf !== this.journal.wbuf) this.rbuf = EMPTY_BUF;
    }, READ_CACHE_IDLE_MS);
  }

  /** Bytes held by read windows (for tests and memory accounting). */
  bytes(): number {
    let n = 0;
    for (const c of this.cache) n += c.buf.length;
    return n;
  }

  close(): void {
    this.closed = true;
    if (this.cacheTimer !== null) this.clock.clearTimer(this.cacheTimer);
    this.cacheTimer = null;
  }

  /** Find the record of live message seq in b; leaves it whole at this.rbuf[this.rp]. */
  locate(b: Blk, seq: number): void {
    let off: number;
    if (b.offs !== null) {
      off = b.offs[seq - b.firstSeq] as number;
      this.view(b, off, REC_HDR);
      this.view(b, off, this.rbuf.readUInt32LE(this.rp));
      this.curOff = off;
      return;
    }
    if (this.curBlk === b && this.curSeq <= seq && seq - this.curSeq <= CK_SEQS) {
      off = seq === this.curSeq ? this.curOff : this.curOff + this.curLen;
    } else {
      const g = Math.floor(seq / CK_SEQS);
      off = b.firstSeq <= g * CK_SEQS ? this.cks.get(g) : b.firstMsgOff;
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
}
