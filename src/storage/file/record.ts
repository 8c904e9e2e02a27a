// On-disk record layout of a block file (little-endian). Every record carries its own length
// and a CRC-32 over everything before the checksum, so recovery can verify each record and
// resynchronise after a damaged one.
//
//   0  u32 recLen (whole record, checksum included)
//   4  u8  kind   (1 message, 2 tombstone, 3 floor)
//   5  u8  flags  (bit 0: has header block)
//   6  u16 subject length
//   8  u32 header length
//  12  u32 seq low 32 bits, 16 u32 seq high bits
//  20  f64 timestamp ns
//  28  u32 ttl seconds (0 none)
//  32  subject | header | data | u32 crc32
//
// A tombstone deletes one seq. A floor says "every seq below `seq` is gone" and carries the
// last sequence and its time in its data (8 + 8 bytes), so stream state survives even when
// every message and block is gone.
import { crc32 } from "./crc32.js";

export const REC_HDR = 32;
export const REC_OVERHEAD = REC_HDR + 4;
export const KIND_MSG = 1;
export const KIND_TOMB = 2;
export const KIND_FLOOR = 3;
export const FLAG_HDR = 1;
/** Anything longer is treated as corruption (nats-server uses 32 MiB for its own records). */
export const MAX_RECORD_BYTES = 64 * 1024 * 1024;
const TWO32 = 4294967296;

export function writeRecordHeader(
  b: Buffer,
  p: number,
  recLen: number,
  kind: number,
  flags: number,
  subjLen: number,
  hdrLen: number,
  seq: number,
  tsNs: number,
  ttlSec: number,
): void {
  b.writeUInt32LE(recLen, p);
  b[p + 4] = kind;
  b[p + 5] = flags;
  b.writeUInt16LE(subjLen, p + 6);
  b.writeUInt32LE(hdrLen, p + 8);
  b.writeUInt32LE(seq % TWO32, p + 12);
  b.writeUInt32LE(Math.floor(seq / TWO32), p + 16);
  b.writeDoubleLE(tsNs, p + 20);
  b.writeUInt32LE(ttlSec >>> 0, p + 28);
}

export function sealRecord(b: Buffer, p: number, recLen: number): void {
  b.writeUInt32LE(crc32(b, p, p + recLen - 4), p + recLen - 4);
}

export function recSeq(b: Buffer, p: number): number {
  const hi = b.readUInt32LE(p + 16);
  // Below 2^32 the low word alone: an integer, where lo + 0 * 2^32 is a double (a heap number
  // per record, and then per use, in code not yet optimised, as most of a recovery scan is).
  return hi === 0 ? b.readUInt32LE(p + 12) : b.readUInt32LE(p + 12) + hi * TWO32;
}

/** Length of a well-formed record with a good checksum at p, or 0. */
export function checkRecord(b: Buffer, p: number): number {
  if (p + REC_OVERHEAD > b.length) return 0;
  const recLen = b.readUInt32LE(p);
  if (recLen < REC_OVERHEAD || recLen > MAX_RECORD_BYTES || p + recLen > b.length) return 0;
  const kind = b[p + 4] as number;
  if (kind < KIND_MSG || kind > KIND_FLOOR || (b[p + 5] as number) > FLAG_HDR) return 0;
  if (REC_OVERHEAD + b.readUInt16LE(p + 6) + b.readUInt32LE(p + 8) > recLen) return 0;
  if (crc32(b, p, p + recLen - 4) !== b.readUInt32LE(p + recLen - 4)) return 0;
  return recLen;
}

/** nats-server fileStoreMsgSize: 22 + subject + payload + 8, plus 4 + headers when present. */
export function fileStoreMsgSize(subjectBytes: number, hdrBytes: number, dataBytes: number): number {
  return hdrBytes === 0 ? 30 + subjectBytes + dataBytes : 34 + subjectBytes + hdrBytes + dataBytes;
}
