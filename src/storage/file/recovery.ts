// Recovery of a file stream store's block files: each sealed block has a summary "<n>.sum"
// (summary.ts) validated by a CRC of the block's bytes; the index is rebuilt from it, and only
// what no valid summary covers (the write block's newest bytes, or a block whose summary is
// missing or stale) is read and verified record by record. A torn tail of the last block is
// cut off; damage inside a block drops only the damaged bytes. What the floors and tombstones
// say is gone is returned for the store to apply. Work goes in steps (step()): a block is
// checked, checksummed, indexed from its summary or scanned a bounded slice at a time, so a
// paced open gives the event loop back inside a block as well as between blocks.
import { join } from "node:path";
import type { SubjRec } from "../memory/subjtable.js";
import { Blk, type BlockFiles, type RecoveryReport, type Scratch, readWhole } from "./block.js";
import { crc32Update } from "./crc32.js";
import { KIND_MSG, KIND_TOMB, MAX_RECORD_BYTES, REC_HDR, REC_OVERHEAD, fileStoreMsgSize } from "./record.js";
import { CHECK_MORE, CHECK_OK, SUM_FLOOR, SUM_MSG, SUM_TOMB, SummaryBuilder, SummaryReader } from "./summary.js";
import { RecordWalk, WALK_BAD, WALK_REC, forEachMsg } from "./walk.js";

const CRC_CHUNK_BYTES = 64 * 1024; // small enough to come from the allocator's heap, not a fresh mapping

/** What the index side of the store does for recovered records. */
export interface RecoveryHost {
  lastSeq(): number;
  intern(subject: string): SubjRec;
  /** Index message seq (above lastSeq) of block blk at offset off. */
  append(blk: Blk, seq: number, rec: SubjRec, tsNs: number, size: number, ttlSec: number, off: number): void;
  /** append of n records of length rl from off: seq, seq + 1, ..., no TTL. */
  appendRun(blk: Blk, seq: number, n: number, rec: SubjRec, tsNs: number, size: number, off: number, rl: number): void;
}

/** The newest floor seen: every seq below `floor` is gone; the last seq and its time. */
export interface FloorAcc {
  floor: number;
  floorLast: number;
  floorLastTs: number;
}

export interface Recovered {
  report: RecoveryReport;
  tombs: number[];
  acc: FloorAcc;
}

export function noteFloor(blk: Blk, seq: number, lastSeq: number, lastTs: number, acc: FloorAcc): void {
  blk.hasFloor = true;
  if (seq > acc.floor) acc.floor = seq;
  // The time of the newest floor with the highest last seq (a skip sets a time that need not
  // be above every earlier one); floors are met in the order they were written.
  if (lastSeq >= acc.floorLast) {
    acc.floorLast = lastSeq;
    acc.floorLastTs = lastTs;
  }
}

// A block is recovered in steps, each a bounded slice of one phase, so that runPaced can give
// the loop back inside a block too (an 8 MiB block of small records took 50-140 ms in one go).
const PH_CHECK = 0; // walk the summary's entries (well formed, lengths add up to `covered`)
const PH_CRC = 1; // checksum the block bytes the summary covers
const PH_APPLY = 2; // index the records the summary lists
const PH_SCAN = 3; // verify and index the bytes no summary covers, a window at a time
/** Block bytes checksummed per step. */
const CRC_STEP_BYTES = 1024 * 1024;
/** Summary entries walked per step when checking it. */
const CHECK_STEP_ENTRIES = 8192;
/** Summary entries (and single messages of a run) indexed per step. */
const APPLY_STEP_ENTRIES = 2048;

export class Recovery {
  private readonly files: BlockFiles;
  private readonly host: RecoveryHost;
  private readonly report: RecoveryReport = { blocks: 0, msgs: 0, tombstones: 0, truncatedBytes: 0, dropped: [] };
  private readonly tombs: number[] = [];
  private readonly acc: FloorAcc = { floor: 0, floorLast: 0, floorLastTs: 0 };
  // One buffer for checksums (and short scans) and one for summaries, reused by every block:
  // recovery leaves no garbage that grows with the number of blocks.
  private readonly chunk = Buffer.allocUnsafe(CRC_CHUNK_BYTES);
  private readonly sumBuf: Scratch = { buf: Buffer.allocUnsafe(0) };
  private readonly bigBuf: Scratch = { buf: Buffer.allocUnsafe(0) };
  private lastRec: SubjRec | null = null; // subject of the previous record
  private readonly walk = new RecordWalk(Buffer.alloc(0), true);

  // The block being recovered (null between blocks) and where its recovery is.
  private blk: Blk | null = null;
  private fd = -1;
  private flen = 0;
  private isLast = false;
  private phase = PH_CHECK;
  private sr: SummaryReader | null = null;
  private sum: SummaryBuilder | null = null;
  private crc = 0;
  private pos = 0; // PH_CRC: bytes checksummed; PH_SCAN: bytes verified
  private locals: SubjRec[] = []; // PH_APPLY: the summary's subjects by local index
  private applyOff = 0; // PH_APPLY: block offset of the next record

  constructor(files: BlockFiles, host: RecoveryHost) {
    this.files = files;
    this.host = host;
  }

  /** Read the directory and every block (into files.blocks). */
  run(): Recovered {
    this.begin();
    while (this.step());
    return this.finish();
  }

  /** run() a slice at a time: `breathe` between steps (a step is at most a bounded part of
   *  one block: a window of records, a run of summary entries, a megabyte of checksum), so
   *  neither a store of many blocks nor one big block holds the event loop at once. */
  async runPaced(breathe: () => Promise<void>): Promise<Recovered> {
    this.begin();
    while (this.step()) await breathe();
    return this.finish();
  }

  private ids: number[] = [];
  private sums = new Set<number>();
  private next = 0;

  /** The directory: block ids in order, summaries, leftovers removed. */
  private begin(): void {
    const fs = this.files.fs;
    const dir = this.files.dir;
    fs.mkdirp(dir);
    const ids: number[] = [];
    const sums = new Set<number>();
    for (const name of fs.readdir(dir)) {
      const m = /^(\d+)\.(blk|sum)$/.exec(name);
      if (m) {
        if (m[2] === "blk") ids.push(Number(m[1]));
        else sums.add(Number(m[1]));
      } else if (name.endsWith(".new") || name.endsWith(".tmp")) fs.unlink(join(dir, name));
    }
    ids.sort((a, b) => a - b);
    const idSet = new Set(ids);
    for (const id of sums) if (!idSet.has(id)) fs.unlink(join(dir, `${id}.sum`));
    this.ids = ids;
    this.sums = sums;
    this.next = 0;
  }

  /** One bounded slice of work; false when nothing is left. */
  private step(): boolean {
    if (this.blk === null) {
      const k = this.next;
      const ids = this.ids;
      if (k >= ids.length) return false;
      this.next++;
      this.openBlock(ids[k] as number, k === ids.length - 1, this.sums.has(ids[k] as number));
    } else if (this.phase === PH_CHECK) this.checkStep();
    else if (this.phase === PH_CRC) this.crcStep();
    else if (this.phase === PH_APPLY) this.applyStep();
    else this.scanStep();
    return this.blk !== null || this.next < this.ids.length;
  }

  private finish(): Recovered {
    this.lastRec = null;
    this.bigBuf.buf = Buffer.allocUnsafe(0);
    return { report: this.report, tombs: this.tombs, acc: this.acc };
  }

  /** The block's file and summary: a summary whose own checksum holds is checked further
   *  (PH_CHECK, PH_CRC) before it is used; without one the block is scanned. */
  private openBlock(id: number, isLast: boolean, hasSum: boolean): void {
    const blk = new Blk(id, this.files.pathOf(id));
    this.blk = blk;
    this.isLast = isLast;
    this.fd = this.files.fd(blk);
    this.flen = this.files.fs.fsize(this.fd);
    this.sum = null;
    const sr = hasSum ? SummaryReader.open(readWhole(this.files.fs, blk.sumPath, this.sumBuf)) : null;
    if (sr !== null && sr.covered <= this.flen) {
      this.sr = sr;
      this.phase = PH_CHECK;
    } else this.toScan(0);
  }

  private checkStep(): void {
    const sr = this.sr as SummaryReader;
    const r = sr.checkStep(CHECK_STEP_ENTRIES);
    if (r === CHECK_MORE) return;
    if (r === CHECK_OK) {
      this.phase = PH_CRC;
      this.crc = 0;
      this.pos = 0;
    } else this.toScan(0);
  }

  /** The CRC-32 of the next CRC_STEP_BYTES of the block bytes the summary covers, read
   *  through `chunk`; at the end, the summary is used if the whole matches. */
  private crcStep(): void {
    const sr = this.sr as SummaryReader;
    const fs = this.files.fs;
    const chunk = this.chunk;
    const stop = Math.min(sr.covered, this.pos + CRC_STEP_BYTES);
    let crc = this.crc;
    let pos = this.pos;
    while (pos < stop) {
      const n = Math.min(chunk.length, stop - pos);
      if (fs.read(this.fd, chunk, 0, n, pos) < n) {
        this.toScan(0); // shorter than it was a moment ago
        return;
      }
      crc = crc32Update(crc, chunk, 0, n);
      pos += n;
    }
    this.crc = crc;
    this.pos = pos;
    if (pos < sr.covered) return;
    if (crc !== sr.blockCrc) {
      this.toScan(0);
      return;
    }
    if (this.isLast || sr.covered < this.flen) this.sum = new SummaryBuilder();
    this.locals = [];
    this.applyOff = 0;
    this.phase = PH_APPLY;
  }

  /** Bytes [start, flen) are verified and indexed next (nothing to scan: the block is done). */
  private toScan(start: number): void {
    this.sr = null;
    if (this.sum === null && start === 0 && (this.isLast || this.flen > 0)) this.sum = new SummaryBuilder();
    if (start < this.flen && this.sum !== null) {
      this.phase = PH_SCAN;
      this.pos = start;
    } else this.closeBlock(this.flen);
  }

  /** The rest of the block once its good bytes end at `end` (a torn tail of the last block
   *  is cut off there). */
  private closeBlock(end: number): void {
    const fs = this.files.fs;
    const blk = this.blk as Blk;
    const fd = this.fd;
    const isLast = this.isLast;
    const flen = this.flen;
    blk.size = blk.written = blk.good = isLast ? end : flen;
    if (isLast && end < flen) {
      fs.truncate(fd, end);
      fs.fsyncSync(fd);
    }
    let sum = this.sum;
    if (sum !== null && (sum.broken || sum.covered !== blk.written)) sum = null;
    blk.sum = sum;
    if (!isLast) {
      this.files.saveSummary(blk, false);
      fs.close(fd); // reopened when read
      blk.fd = -1;
    }
    this.files.blocks.push(blk);
    this.report.blocks++;
    this.blk = null;
    this.fd = -1;
    this.sr = null;
    this.sum = null;
    this.locals = [];
  }

  /** Index up to APPLY_STEP_ENTRIES of the records a valid summary lists (the block bytes it
   *  covers are not read); at its end, the bytes after what it covers are scanned. */
  private applyStep(): void {
    const sr = this.sr as SummaryReader;
    const blk = this.blk as Blk;
    const sum = this.sum;
    const host = this.host;
    const report = this.report;
    const locals = this.locals;
    let p = this.applyOff;
    let work = 0;
    while (work < APPLY_STEP_ENTRIES) {
      if (!sr.next()) {
        blk.sumCovered = sr.covered;
        if (sum !== null) {
          sum.crc = sr.blockCrc;
          sum.covered = sr.covered;
        }
        this.toScan(sr.covered);
        return;
      }
      work++;
      const kind = sr.kind;
      const seq = sr.seq;
      if (kind === SUM_MSG) {
        let rec: SubjRec;
        if (sr.newSubject !== null) {
          rec = host.intern(sr.newSubject);
          locals.push(rec);
        } else rec = locals[sr.subj] as SubjRec;
        // fileStoreMsgSize from the record length: rl - 6 without header bytes, rl - 2 with
        const rl = sr.recLen;
        const size = rl - (sr.hasHdrBytes ? 2 : 6);
        const n = 1 + sr.run;
        if (sr.hasHdrBytes) blk.hdrMsgs += n;
        if (n > 1 && seq > host.lastSeq()) {
          host.appendRun(blk, seq, n, rec, sr.tsNs, size, p, rl);
          report.msgs += n;
          sum?.msgRun(seq, n, rl, rec, sr.hasHdrBytes, sr.tsNs);
        } else {
          work += n - 1;
          for (let k = 0; k < n; k++) {
            if (seq + k > host.lastSeq()) {
              host.append(blk, seq + k, rec, sr.tsNs, size, sr.ttlSec, p + k * rl);
              report.msgs++;
            }
            sum?.msg(seq + k, rl, rec, sr.hasHdrBytes, sr.tsNs, sr.ttlSec);
          }
        }
        p += rl * n;
        continue;
      } else if (kind === SUM_TOMB) {
        this.tombs.push(seq);
        blk.tombs.push(seq);
        report.tombstones++;
        sum?.tomb(seq);
      } else if (kind === SUM_FLOOR) {
        noteFloor(blk, seq, sr.floorLastSeq, sr.floorLastTs, this.acc);
        sum?.floor(seq, sr.floorLastSeq, sr.floorLastTs);
      }
      p += sr.recLen;
    }
    this.applyOff = p;
  }

  /** Verify and index the next window of block bytes [pos, flen) through the reused buffer
   *  `chunk`: its whole valid records; a record longer than a window is read on its own; the
   *  rest (damage, the end) in one scan, which ends the block. */
  private scanStep(): void {
    const fs = this.files.fs;
    const blk = this.blk as Blk;
    const sum = this.sum as SummaryBuilder;
    const fd = this.fd;
    const flen = this.flen;
    const pos = this.pos;
    if (pos >= flen) {
      this.closeBlock(pos);
      return;
    }
    const chunk = this.chunk;
    const n = Math.min(chunk.length, flen - pos);
    const got = fs.read(fd, chunk, 0, n, pos);
    let buf = chunk.subarray(0, got);
    if (pos + got < flen && got === n) {
      let used = this.scanBlock(blk, buf, pos, this.isLast, sum, true);
      if (used === 0) used = this.scanLong(blk, buf, pos, sum);
      if (used > 0) {
        this.pos = pos + used;
        return;
      }
      buf = Buffer.allocUnsafe(flen - pos);
      buf = buf.subarray(0, fs.read(fd, buf, 0, buf.length, pos));
    }
    this.closeBlock(pos + this.scanBlock(blk, buf, pos, this.isLast, sum, false));
  }

  /** The record at block offset pos is longer than the window `head` (its start): read it
   *  whole by the length it declares and index it if it is valid and not the block's last
   *  bytes. Returns its length, or 0 (the caller scans the rest of the block at once). */
  private scanLong(blk: Blk, head: Buffer, pos: number, sum: SummaryBuilder): number {
    if (head.length < REC_OVERHEAD) return 0;
    const rl = head.readUInt32LE(0);
    if (rl <= head.length || rl > MAX_RECORD_BYTES || pos + rl >= this.flen) return 0;
    const s = this.bigBuf;
    if (s.buf.length < rl) s.buf = Buffer.allocUnsafe(rl);
    const rec = s.buf.subarray(0, rl);
    if (this.files.fs.read(this.fd, rec, 0, rl, pos) < rl) return 0;
    return this.scanBlock(blk, rec, pos, this.isLast, sum, true);
  }

  /** Verify and index the records in buf (block bytes from offset base on); returns how many
   *  bytes are good up to the end of data (a torn tail is not counted). With `partial` it
   *  stops before the first record that is not whole and valid in buf, touching nothing for it
   *  (the caller reads on from there). */
  private scanBlock(blk: Blk, buf: Buffer, base: number, isLast: boolean, sum: SummaryBuilder, partial: boolean): number {
    const report = this.report;
    const w = this.walk;
    w.buf = buf;
    w.pos = 0;
    w.len = 0;
    let lastMsg = blk.lastSeq;
    let damaged = false;
    const seqBefore = this.host.lastSeq();
    for (;;) {
      const r = w.next();
      if (r === WALK_BAD) {
        if (partial) break;
        sum.broken = true;
        const at = w.pos;
        if (!w.skipDamage()) {
          report.dropped.push({ file: blk.path, offset: base + at, bytes: buf.length - at, reason: "torn-tail", afterSeq: lastMsg });
          if (isLast) report.truncatedBytes += buf.length - at;
          break;
        }
        report.dropped.push({ file: blk.path, offset: base + at, bytes: w.pos - at, reason: "checksum", afterSeq: lastMsg });
        damaged = true;
        continue;
      }
      if (r !== WALK_REC) break;
      const p = w.pos;
      const rl = w.len;
      const kind = w.kind;
      const seq = w.seq();
      if (kind === KIND_MSG) {
        const fresh = seq > this.host.lastSeq();
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
        this.tombs.push(seq);
        blk.tombs.push(seq);
        report.tombstones++;
        sum.tomb(seq);
      } else {
        const ls = w.floorLast();
        const lt = w.floorLastTs();
        noteFloor(blk, seq, ls, lt, this.acc);
        sum.floor(seq, ls, lt);
      }
    }
    // The walk stops at the end, at a torn tail or (partial) at the first record not whole here.
    const end = w.pos;
    sum.wrote(buf, 0, end);
    if (damaged && blk.firstSeq !== 0) {
      // Offsets of every message, for reads that cannot walk over the damage; those in the part
      // a summary covered (verified, so walkable) are found by walking it.
      const offs = new Uint32Array(blk.lastSeq - blk.firstSeq + 1);
      if (base > 0) this.prefixOffsets(blk, base, offs);
      let top = seqBefore;
      forEachMsg(buf, base, (s, off) => {
        if (s > top) {
          top = s;
          offs[s - blk.firstSeq] = off;
        }
      });
      blk.offs = offs;
    }
    return end;
  }

  /** Message offsets in block bytes [0, len), known good (their summary's CRC matched). */
  private prefixOffsets(blk: Blk, len: number, offs: Uint32Array): void {
    const buf = Buffer.allocUnsafe(len);
    this.files.fs.read(this.files.fd(blk), buf, 0, len, 0);
    const w = new RecordWalk(buf, false);
    while (w.next() === WALK_REC) {
      if (w.kind === KIND_MSG) {
        const s = w.seq();
        if (s >= blk.firstSeq && s <= blk.lastSeq) offs[s - blk.firstSeq] = w.pos;
      }
    }
  }

  /** Index the message record at buf[p] (block offset off) if it is new; returns its subject. */
  private loadMsgRecord(blk: Blk, buf: Buffer, p: number, off: number, rl: number, seq: number, tsNs: number, ttl: number): SubjRec {
    const sl = buf.readUInt16LE(p + 6);
    const hl = buf.readUInt32LE(p + 8);
    // Runs of one subject are common: compare bytes instead of decoding and hashing each.
    let rec = this.lastRec;
    if (rec === null || !rec.sameAs(buf, p + REC_HDR, sl)) {
      rec = this.host.intern(buf.toString("utf8", p + REC_HDR, p + REC_HDR + sl));
      this.lastRec = rec;
    }
    if (seq <= this.host.lastSeq()) return rec;
    const dl = rl - REC_OVERHEAD - sl - hl;
    this.host.append(blk, seq, rec, tsNs, fileStoreMsgSize(sl, hl, dl), ttl, off);
    return rec;
  }
}
