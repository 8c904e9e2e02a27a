// One walk over the records of a block's bytes, for every place that reads records in order
// (recovery, the offsets of a damaged block, compaction). A verifying walk checks each
// record's framing and checksum (checkRecord) and, on damage, can skip to the next valid
// record (resync); a trusted walk, for bytes a valid summary already vouched for, reads only
// the length field. No allocation per record: the walk is one reused object whose fields
// describe the current record.
//
//   const w = new RecordWalk(buf, true);
//   for (;;) {
//     const r = w.next();
//     if (r === WALK_REC) { ... w.pos, w.len, w.kind, w.seq() ... }
//     else if (r === WALK_BAD) { if (!w.skipDamage()) { torn tail [w.pos, end) ; break } damage [w.badFrom, w.pos) }
//     else break; // WALK_END
//   }
import { KIND_FLOOR, KIND_MSG, REC_HDR, REC_OVERHEAD, checkRecord, recSeq } from "./record.js";

/** next(): a record is at pos (len bytes). */
export const WALK_REC = 1;
/** next(): the bytes at pos are not a valid record (skipDamage() finds the next one). */
export const WALK_BAD = 2;
/** next(): the end of the bytes, nothing left. */
export const WALK_END = 3;

export class RecordWalk {
  buf: Buffer;
  /** Offset in buf of the current record (or of the bad bytes, or the end). */
  pos = 0;
  /** Length of the current record, 0 until next() finds one. */
  len = 0;
  /** Kind of the current record. */
  kind = 0;
  /** After skipDamage(): where the damaged bytes began (they end at pos). */
  badFrom = 0;
  private readonly verify: boolean;

  constructor(buf: Buffer, verify: boolean, start = 0) {
    this.buf = buf;
    this.verify = verify;
    this.pos = start;
  }

  /** Step to the record after the current one (the first call: the one at the start). */
  next(): number {
    const buf = this.buf;
    const p = this.pos + this.len;
    this.pos = p;
    this.len = 0;
    if (p >= buf.length) return WALK_END;
    let rl: number;
    if (this.verify) rl = checkRecord(buf, p);
    else {
      rl = p + REC_OVERHEAD <= buf.length ? buf.readUInt32LE(p) : 0;
      if (rl < REC_OVERHEAD || p + rl > buf.length) rl = 0;
    }
    if (rl === 0) return WALK_BAD;
    this.len = rl;
    this.kind = buf[p + 4] as number;
    return WALK_REC;
  }

  /** After WALK_BAD: move to the next valid record after the damage (next() then returns it);
   *  false if there is none (the rest of the bytes, from pos, is a torn tail). */
  skipDamage(): boolean {
    const at = resync(this.buf, this.pos + 1);
    if (at < 0) return false;
    this.badFrom = this.pos;
    this.pos = at;
    this.len = 0;
    return true;
  }

  /** Sequence of the current record. */
  seq(): number {
    return recSeq(this.buf, this.pos);
  }

  /** Offset in buf of the current record's data (after subject and header). */
  dataAt(): number {
    const p = this.pos;
    return p + REC_HDR + this.buf.readUInt16LE(p + 6) + this.buf.readUInt32LE(p + 8);
  }

  /** A floor record's last sequence and its time (its 16 data bytes). */
  floorLast(): number {
    return this.buf.readDoubleLE(this.dataAt());
  }

  floorLastTs(): number {
    return this.buf.readDoubleLE(this.dataAt() + 8);
  }
}

/** Next offset at or after `from` where a valid record starts, or -1. */
export function resync(buf: Buffer, from: number): number {
  for (let q = from; q + REC_OVERHEAD <= buf.length; q++) {
    const k = buf[q + 4] as number;
    if (k < KIND_MSG || k > KIND_FLOOR) continue;
    if (checkRecord(buf, q) > 0) return q;
  }
  return -1;
}

/** Call fn(seq, offset) for every valid message record in buf (offsets from base), skipping
 *  damage, in the order they appear. */
export function forEachMsg(buf: Buffer, base: number, fn: (seq: number, off: number) => void): void {
  const w = new RecordWalk(buf, true);
  for (;;) {
    const r = w.next();
    if (r === WALK_REC) {
      if (w.kind === KIND_MSG) fn(w.seq(), base + w.pos);
    } else if (r === WALK_BAD) {
      if (!w.skipDamage()) return;
    } else return;
  }
}
