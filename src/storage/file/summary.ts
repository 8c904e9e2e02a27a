// Block summaries: "<n>.sum" beside "<n>.blk" lists what the first `covered` bytes of that block
// hold (each record's kind, sequence, length, subject, and the TTL and time of TTL messages) in
// about one byte per message, so recovery can rebuild the index without walking and
// checksumming every record. A summary is a cache of the block, never the only copy of
// anything: it carries the CRC-32 of those `covered` block bytes and its own CRC-32, and
// recovery uses it only when both match; otherwise it scans the block as before. So it is
// written without fsync (except at close), and a torn, stale, missing or corrupt summary only
// costs a scan.
//
// The builder is fed the same records, in the same order, as they go into the block (by the
// write path, by compaction and by recovery's scan), and keeps the running CRC of the bytes
// handed to the file.
//
//   header  u32 magic "TSUM" | u8 version | 3 pad | u32 covered | u32 blockCrc | f64 lastMsgTs |
//           u32 records | u32 bodyBytes
//   body    one entry per record (below)
//   trailer u32 crc32(header + body)
//
// Entry: a flags byte, then only what the flags do not already say:
//   bits 0-1 kind (0 message, 1 tombstone, 2 floor); bit 2 message has header bytes;
//   bit 3 message has a TTL; bit 4 seq = previous message seq + 1; bit 5 same record length as
//   the previous message; bit 6 same subject as the previous message.
//   message: [varint seq delta] [varint record length] [varint subject index; a new index
//   (= subjects so far) is followed by varint byte length + UTF-8 name] [f64 ts, varint ttl s]
//   tombstone: varint seq.  floor: varint seq, f64 last seq, f64 last time.
import { crc32, crc32ExtendRecord, crc32Update, EXTEND_MAX_BYTES } from "./crc32.js";
import { REC_OVERHEAD } from "./record.js";

/** Shorter records are cheaper to read than to extend by arithmetic (about 32 steps). */
const EXTEND_MIN_BYTES = 192;
const MAGIC = 0x4d555354; // "TSUM" little-endian
const VERSION = 1;
export const SUM_HDR = 32;
const F_KIND_TOMB = 1;
const F_KIND_FLOOR = 2;
const F_HDR = 4;
const F_TTL = 8;
const F_SEQ1 = 16;
const F_SAMELEN = 32;
const F_SAMESUBJ = 64;
/** Record length of a tombstone and of a floor (the store writes no other sizes). */
export const TOMB_REC_LEN = REC_OVERHEAD;
export const FLOOR_REC_LEN = REC_OVERHEAD + 16;

/** Identity of a subject while it is interned; the builder maps it to a local index. */
export interface SumSubject {
  readonly name: string;
  /** UTF-8 length of name. */
  readonly blen: number;
  /** Writes name's UTF-8 bytes at b[p]. */
  writeTo(b: Buffer, p: number): void;
}

export class SummaryBuilder {
  private buf: Buffer = Buffer.allocUnsafe(256);
  private len = 0;
  private records = 0;
  private readonly local = new Map<SumSubject, number>();
  private subjects = 0;
  private prevSeq = 0;
  private prevLen = -1;
  private prevSubj: SumSubject | null = null;
  private lastTs = 0;
  // Trailing one-byte entries (next seq, same length and subject, no TTL) that are all the
  // same byte are counted, not stored, until another entry follows: the write block of a
  // uniform stream keeps a number instead of a byte per message.
  private pendByte = 0;
  private pendN = 0;
  /** CRC-32 of the block bytes [0, covered). */
  crc = 0;
  covered = 0;
  /** Set when the block holds damage the summary cannot describe: never written then. */
  broken = false;

  private room(n: number): void {
    if (this.len + n <= this.buf.length) return;
    const nb = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.len + n));
    this.buf.copy(nb, 0, 0, this.len);
    this.buf = nb;
  }

  private varint(v: number): void {
    const b = this.buf;
    while (v >= 0x80) {
      b[this.len++] = (v % 0x80) | 0x80;
      v = Math.floor(v / 0x80);
    }
    b[this.len++] = v;
  }

  private flushPending(): void {
    if (this.pendN === 0) return;
    this.room(this.pendN);
    this.buf.fill(this.pendByte, this.len, this.len + this.pendN);
    this.len += this.pendN;
    this.pendN = 0;
  }

  /** n more one-byte entries b. */
  private pending(b: number, n: number): void {
    if (this.pendN > 0 && this.pendByte !== b) this.flushPending();
    this.pendByte = b;
    this.pendN += n;
  }

  msg(seq: number, recLen: number, subj: SumSubject, hasHdrBytes: boolean, tsNs: number, ttlSec: number): void {
    if (ttlSec <= 0 && seq === this.prevSeq + 1 && recLen === this.prevLen && subj === this.prevSubj) {
      this.pending(F_SEQ1 | F_SAMELEN | F_SAMESUBJ | (hasHdrBytes ? F_HDR : 0), 1);
      this.prevSeq = seq;
      this.lastTs = tsNs;
      this.records++;
      return;
    }
    this.flushPending();
    this.room(40 + subj.blen);
    const at = this.len++;
    let f = hasHdrBytes ? F_HDR : 0;
    if (ttlSec > 0) f |= F_TTL;
    if (seq === this.prevSeq + 1) f |= F_SEQ1;
    else this.varint(seq - this.prevSeq);
    if (recLen === this.prevLen) f |= F_SAMELEN;
    else this.varint(recLen);
    if (subj === this.prevSubj) f |= F_SAMESUBJ;
    else {
      let idx = this.local.get(subj);
      if (idx === undefined) {
        idx = this.subjects++;
        this.local.set(subj, idx);
        this.varint(idx);
        this.varint(subj.blen);
        subj.writeTo(this.buf, this.len);
        this.len += subj.blen;
      } else this.varint(idx);
    }
    if (ttlSec > 0) {
      this.buf.writeDoubleLE(tsNs, this.len);
      this.len += 8;
      this.varint(ttlSec);
    }
    this.buf[at] = f;
    this.prevSeq = seq;
    this.prevLen = recLen;
    this.prevSubj = subj;
    this.lastTs = tsNs;
    this.records++;
  }

  /** n messages seq, seq + 1, ... with the same length, subject and header flag, no TTL. */
  msgRun(seq: number, n: number, recLen: number, subj: SumSubject, hasHdrBytes: boolean, tsNs: number): void {
    this.msg(seq, recLen, subj, hasHdrBytes, tsNs, 0);
    if (n <= 1) return;
    this.pending(F_SEQ1 | F_SAMELEN | F_SAMESUBJ | (hasHdrBytes ? F_HDR : 0), n - 1);
    this.records += n - 1;
    this.prevSeq = seq + n - 1;
  }

  tomb(seq: number): void {
    this.flushPending();
    this.room(12);
    this.buf[this.len++] = F_KIND_TOMB;
    this.varint(seq);
    this.records++;
  }

  floor(seq: number, lastSeq: number, lastTsNs: number): void {
    this.flushPending();
    this.room(28);
    this.buf[this.len++] = F_KIND_FLOOR;
    this.varint(seq);
    this.buf.writeDoubleLE(lastSeq, this.len);
    this.buf.writeDoubleLE(lastTsNs, this.len + 8);
    this.len += 16;
    this.records++;
  }

  /** Bytes [start, end) of buf were handed to the block file after everything before. */
  wrote(buf: Buffer, start: number, end: number): void {
    this.crc = crc32Update(this.crc, buf, start, end);
    this.covered += end - start;
  }

  /** wrote() for bytes that are whole sealed records (the write path's buffer): long records
   *  extend the CRC by arithmetic instead of being read a second time after sealRecord. */
  wroteRecords(buf: Buffer, start: number, end: number): void {
    let crc = this.crc;
    let p = start;
    while (p < end) {
      const len = buf.readUInt32LE(p);
      crc = len >= EXTEND_MIN_BYTES && len <= EXTEND_MAX_BYTES ? crc32ExtendRecord(crc, len) : crc32Update(crc, buf, p, p + len);
      p += len;
    }
    this.crc = crc;
    this.covered += end - start;
  }

  /** The summary file's bytes, describing every record fed so far (all of them written). */
  encode(): Buffer {
    const body = this.len + this.pendN;
    const out = Buffer.allocUnsafe(SUM_HDR + body + 4);
    out.writeUInt32LE(MAGIC, 0);
    out[4] = VERSION;
    out[5] = out[6] = out[7] = 0;
    out.writeUInt32LE(this.covered, 8);
    out.writeUInt32LE(this.crc, 12);
    out.writeDoubleLE(this.lastTs, 16);
    out.writeUInt32LE(this.records, 24);
    out.writeUInt32LE(body, 28);
    this.buf.copy(out, SUM_HDR, 0, this.len);
    out.fill(this.pendByte, SUM_HDR + this.len, SUM_HDR + body);
    out.writeUInt32LE(crc32(out, 0, SUM_HDR + body), SUM_HDR + body);
    return out;
  }
}

export const SUM_MSG = 0;
export const SUM_TOMB = 1;
export const SUM_FLOOR = 2;

/** SummaryReader.checkStep: entries are left to walk. */
export const CHECK_MORE = 0;
/** SummaryReader.checkStep: well formed, lengths add up. */
export const CHECK_OK = 1;
/** SummaryReader.checkStep: not usable (the block is scanned instead). */
export const CHECK_BAD = 2;

/** Reads a summary entry by entry into its fields (no object per record). */
export class SummaryReader {
  readonly covered: number;
  readonly blockCrc: number;
  readonly lastMsgTs: number;
  readonly records: number;
  private readonly b: Buffer;
  private p = SUM_HDR;
  private readonly end: number;
  private left: number;
  // The current entry
  kind = 0;
  seq = 0;
  recLen = 0;
  hasHdrBytes = false;
  ttlSec = 0;
  tsNs = 0;
  /** Local subject index; a name seen for the first time is in newSubject, else null. */
  subj = 0;
  newSubject: string | null = null;
  /** Messages right after this one (seq + 1, ...) that repeat its length, subject and header
   *  flag without a TTL: read in one step. */
  run = 0;
  floorLastSeq = 0;
  floorLastTs = 0;
  private msgSeq = 0;
  private msgLen = 0;
  private subjectsSeen = 0;
  private checkTotal = 0; // checkStep: record bytes of the entries walked so far

  private constructor(b: Buffer) {
    this.b = b;
    this.covered = b.readUInt32LE(8);
    this.blockCrc = b.readUInt32LE(12);
    this.lastMsgTs = b.readDoubleLE(16);
    this.records = b.readUInt32LE(24);
    this.end = SUM_HDR + b.readUInt32LE(28);
    this.left = this.records;
  }

  /** A reader over a well-formed summary file, or null (torn, corrupt, other version). */
  static open(b: Buffer | null): SummaryReader | null {
    if (b === null || b.length < SUM_HDR + 4) return null;
    if (b.readUInt32LE(0) !== MAGIC || b[4] !== VERSION) return null;
    const body = b.readUInt32LE(28);
    if (SUM_HDR + body + 4 !== b.length) return null;
    if (crc32(b, 0, SUM_HDR + body) !== b.readUInt32LE(SUM_HDR + body)) return null;
    return new SummaryReader(b);
  }

  /** Walks every entry once without using it: the body is well formed and its record
   *  lengths add up to `covered`. Leaves the reader at the start. */
  valid(): boolean {
    let r: number;
    while ((r = this.checkStep(0x7fffffff)) === CHECK_MORE);
    return r === CHECK_OK;
  }

  /** valid() in slices: walks at most maxEntries more entries; CHECK_MORE until every entry
   *  has been seen, then CHECK_OK or CHECK_BAD, with the reader back at the start. */
  checkStep(maxEntries: number): number {
    let r = CHECK_MORE;
    try {
      for (let k = 0; k < maxEntries; k++) {
        if (!this.next()) {
          r = this.checkTotal === this.covered ? CHECK_OK : CHECK_BAD;
          break;
        }
        this.checkTotal += this.recLen * (1 + this.run);
      }
    } catch {
      r = CHECK_BAD;
    }
    if (r !== CHECK_MORE) {
      this.p = SUM_HDR;
      this.left = this.records;
      this.msgSeq = 0;
      this.msgLen = 0;
      this.subjectsSeen = 0;
      this.seq = 0;
      this.checkTotal = 0;
    }
    return r;
  }

  private varint(): number {
    const b = this.b;
    let v = 0;
    let mul = 1;
    for (;;) {
      if (this.p >= this.end) throw new Error("summary: entry runs past the end");
      const x = b[this.p++] as number;
      v += (x & 0x7f) * mul;
      if (x < 0x80) return v;
      mul *= 0x80;
    }
  }

  /** Step to the next entry; false at the end. Throws on a malformed body (checksum passed,
   *  so only a bug could cause it; the caller then scans the block). */
  next(): boolean {
    if (this.left === 0) {
      if (this.p !== this.end) throw new Error("summary: bytes after the last entry");
      return false;
    }
    this.left--;
    if (this.p >= this.end) throw new Error("summary: fewer entries than counted");
    const f = this.b[this.p++] as number;
    const kind = f & 3;
    this.kind = kind;
    this.newSubject = null;
    this.run = 0;
    if (kind === SUM_TOMB) {
      this.seq = this.varint();
      this.recLen = TOMB_REC_LEN;
      return true;
    }
    if (kind === SUM_FLOOR) {
      this.seq = this.varint();
      if (this.p + 16 > this.end) throw new Error("summary: floor runs past the end");
      this.floorLastSeq = this.b.readDoubleLE(this.p);
      this.floorLastTs = this.b.readDoubleLE(this.p + 8);
      this.p += 16;
      this.recLen = FLOOR_REC_LEN;
      return true;
    }
    if (kind !== SUM_MSG) throw new Error(`summary: unknown entry kind ${kind}`);
    this.msgSeq += (f & F_SEQ1) !== 0 ? 1 : this.varint();
    this.seq = this.msgSeq;
    if ((f & F_SAMELEN) === 0) this.msgLen = this.varint();
    this.recLen = this.msgLen;
    if ((f & F_SAMESUBJ) === 0) {
      const idx = this.varint();
      this.subj = idx;
      if (idx === this.subjectsSeen) {
        const n = this.varint();
        if (this.p + n > this.end) throw new Error("summary: subject runs past the end");
        this.newSubject = this.b.toString("utf8", this.p, this.p + n);
        this.p += n;
        this.subjectsSeen++;
      } else if (idx > this.subjectsSeen) throw new Error("summary: subject index out of order");
    }
    this.hasHdrBytes = (f & F_HDR) !== 0;
    if ((f & F_TTL) !== 0) {
      if (this.p + 8 > this.end) throw new Error("summary: ttl runs past the end");
      this.tsNs = this.b.readDoubleLE(this.p);
      this.p += 8;
      this.ttlSec = this.varint();
    } else {
      this.tsNs = this.lastMsgTs;
      this.ttlSec = 0;
      const same = F_SEQ1 | F_SAMELEN | F_SAMESUBJ | (f & F_HDR);
      const b = this.b;
      const stop = this.p + Math.min(this.left, this.end - this.p);
      let q = this.p;
      while (q < stop && b[q] === same) q++;
      const n = q - this.p;
      if (n > 0) {
        this.run = n;
        this.p = q;
        this.left -= n;
        this.msgSeq += n;
      }
    }
    return true;
  }
}
