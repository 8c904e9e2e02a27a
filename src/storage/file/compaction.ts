// Compaction of a sealed block that is mostly dead: it is rewritten with only its live
// message records, the tombstones that still hide a message in another block, and its newest
// floor record, into "<n>.blk.new", fsynced and renamed over the old file (durable at once,
// before anything written since).
import type { SubjRec } from "../memory/subjtable.js";
import type { Blk, BlockFiles } from "./block.js";
import { KIND_FLOOR, KIND_MSG, KIND_TOMB, REC_OVERHEAD, sealRecord, writeRecordHeader } from "./record.js";
import { CK_SEQS } from "./readcache.js";
import { SummaryBuilder } from "./summary.js";
import { RecordWalk, WALK_BAD, WALK_END, WALK_REC } from "./walk.js";

/** What compaction asks of the index. */
export interface CompactHost {
  firstSeq(): number;
  lastSeq(): number;
  /** Subject id of the live message at seq, 0 if none. */
  subjAt(seq: number): number;
  subjRec(id: number): SubjRec;
}

export interface Compacted {
  /** (group, new offset) pairs for the checkpoints of groups that begin in the block. */
  cks: number[];
  /** The block held a floor record and the copy does not. */
  floorLost: boolean;
}

/** Rewrite b; null when it was left as it is (the disk changed under the estimate). */
export function compactBlock(files: BlockFiles, b: Blk, host: CompactHost): Compacted | null {
  const fs = files.fs;
  const old = Buffer.allocUnsafe(b.written);
  fs.read(files.fd(b), old, 0, b.written, 0);
  const lastSeq = host.lastSeq();
  // It must keep every removal it can (a tombstone hiding a message in a block still on
  // disk, even one below firstSeq whose newer floor may not be synced yet) and its newest
  // floor record.
  const tombs: number[] = [];
  for (const t of b.tombs) {
    if (t <= lastSeq) {
      const tb = files.blockFor(t) ?? files.dyingBlockFor(t);
      if (tb !== null && tb !== b) tombs.push(t);
    }
  }
  let floorAt = -1;
  let floorSeq = 0;
  const w = new RecordWalk(old, true);
  if (b.hasFloor) {
    for (let r = w.next(); r !== WALK_END; r = w.next()) {
      if (r === WALK_BAD) {
        if (!w.skipDamage()) break;
        continue;
      }
      if (w.kind === KIND_FLOOR && w.seq() >= floorSeq) {
        floorSeq = w.seq();
        floorAt = w.pos;
      }
    }
  }
  const floorLen = floorAt < 0 ? 0 : old.readUInt32LE(floorAt);
  const out = Buffer.allocUnsafe(b.liveRecBytes + tombs.length * REC_OVERHEAD + floorLen);
  let p = 0;
  let kept = 0;
  let prev = 0;
  let lastG = -1;
  const cks: number[] = [];
  const sum = new SummaryBuilder();
  let hdrMsgs = 0;
  const lo = Math.max(b.firstSeq, host.firstSeq());
  w.pos = 0;
  w.len = 0;
  for (;;) {
    const r = w.next();
    if (r === WALK_BAD) {
      if (!w.skipDamage()) break;
      continue;
    }
    if (r !== WALK_REC) break;
    if (w.kind !== KIND_MSG) continue;
    const q = w.pos;
    const rl = w.len;
    const s = w.seq();
    const id = s > prev && s >= lo && s <= b.lastSeq ? host.subjAt(s) : 0;
    if (id === 0) continue;
    if (p + rl > out.length) return null; // the size estimate is broken: leave the block as it is
    old.copy(out, p, q, q + rl);
    const hasHdr = old.readUInt32LE(q + 8) > 0;
    if (hasHdr) hdrMsgs++;
    sum.msg(s, rl, host.subjRec(id), hasHdr, old.readDoubleLE(q + 20), old.readUInt32LE(q + 28));
    const g = Math.floor(s / CK_SEQS);
    if (g !== lastG) {
      lastG = g;
      if (g * CK_SEQS >= b.firstSeq) cks.push(g, p);
    }
    p += rl;
    prev = s;
    kept++;
  }
  // Every live message must be in the copy; anything else means the disk changed under us.
  if (kept !== b.live) return null;
  for (const t of tombs) {
    writeRecordHeader(out, p, REC_OVERHEAD, KIND_TOMB, 0, 0, 0, t, 0, 0);
    sealRecord(out, p, REC_OVERHEAD);
    sum.tomb(t);
    p += REC_OVERHEAD;
  }
  if (floorAt >= 0) {
    old.copy(out, p, floorAt, floorAt + floorLen);
    w.pos = floorAt;
    sum.floor(floorSeq, w.floorLast(), w.floorLastTs());
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
  fs.fsyncDirSync(files.dir);
  b.fd = fd;
  b.firstMsgOff = 0;
  b.offs = null;
  b.size = b.written = b.good = p;
  b.dirty = false;
  b.tombs = tombs;
  b.hdrMsgs = hdrMsgs;
  b.sum = sum;
  b.sumCovered = -1;
  files.saveSummary(b, false);
  const floorLost = b.hasFloor && floorAt < 0;
  if (floorLost) b.hasFloor = false;
  return { cks, floorLost };
}
