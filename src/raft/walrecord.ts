// One record of the shared write-ahead log (wal.ts):
//
//   u32 LE  body length
//   u32 LE  CRC32C of the body
//   body:   u8 record type | u8 entry type | u8 group length | group (UTF-8)
//           | u64 LE term | u64 LE index | payload
//
// Entry records carry a Raft entry of one group; HardState records carry term (term),
// commit (index) and the vote (payload); SnapMark records say the group's log now starts
// after (term, index) because a snapshot covers everything before.
import { crc32c } from "./crc32c.js";

export const RecordType = {
  Entry: 1,
  HardState: 2,
  SnapMark: 3,
  /** The group starts over here (its state was corrupt): replay forgets what came before,
   *  and the group is recovering (no votes) until a Recovering record with index 0. */
  Reset: 4,
  /** index 1: the group is recovering (a segment checkpoint); 0: it caught up. */
  Recovering: 5,
} as const;
export type RecordType = (typeof RecordType)[keyof typeof RecordType];

export const RECORD_HEADER_BYTES = 8;
const FIXED_BODY_BYTES = 3 + 16;
/** A record larger than this is taken for a corrupt length. */
export const MAX_RECORD_BYTES = 64 * 1024 * 1024;

export interface WalRecord {
  type: RecordType;
  entryType: number;
  group: string;
  term: number;
  index: number;
  payload: Uint8Array;
}

const utf8 = new TextEncoder();
const utf8d = new TextDecoder();

export function recordSize(groupBytes: number, payloadBytes: number): number {
  return RECORD_HEADER_BYTES + FIXED_BODY_BYTES + groupBytes + payloadBytes;
}

function putU64(b: Buffer, v: number, at: number): void {
  b.writeUInt32LE(v % 0x100000000, at);
  b.writeUInt32LE(Math.floor(v / 0x100000000), at + 4);
}

function getU64(b: Buffer, at: number): number {
  return b.readUInt32LE(at) + b.readUInt32LE(at + 4) * 0x100000000;
}

/** Encode a record into out at off; returns the offset after it. out must have room. */
export function encodeRecord(out: Buffer, off: number, r: WalRecord, groupBytes: Uint8Array = utf8.encode(r.group)): number {
  if (groupBytes.length > 255) throw new Error(`raft group name too long: ${r.group}`);
  const body = FIXED_BODY_BYTES + groupBytes.length + r.payload.length;
  const b = off + RECORD_HEADER_BYTES;
  out[b] = r.type;
  out[b + 1] = r.entryType;
  out[b + 2] = groupBytes.length;
  out.set(groupBytes, b + 3);
  let p = b + 3 + groupBytes.length;
  putU64(out, r.term, p);
  putU64(out, r.index, p + 8);
  p += 16;
  out.set(r.payload, p);
  out.writeUInt32LE(body, off);
  out.writeUInt32LE(crc32c(out, b, b + body), off + 4);
  return b + body;
}

export function encodeRecordBuffer(r: WalRecord): Buffer {
  const g = utf8.encode(r.group);
  const out = Buffer.allocUnsafe(recordSize(g.length, r.payload.length));
  encodeRecord(out, 0, r, g);
  return out;
}

export type DecodeResult =
  | { kind: "ok"; record: WalRecord; next: number }
  /** The bytes end inside this record (a torn write at the tail). */
  | { kind: "short" }
  /** The record is complete but its checksum or structure is wrong. */
  | { kind: "bad"; end: number };

/** Decode the record at buf[off, end). The payload is a view into buf. */
export function decodeRecord(buf: Buffer, off: number, end: number): DecodeResult {
  if (end - off < RECORD_HEADER_BYTES) return { kind: "short" };
  const len = buf.readUInt32LE(off);
  if (len > MAX_RECORD_BYTES) return { kind: "bad", end };
  const b = off + RECORD_HEADER_BYTES;
  if (b + len > end) return { kind: "short" };
  if (crc32c(buf, b, b + len) !== buf.readUInt32LE(off + 4)) return { kind: "bad", end: b + len };
  if (len < FIXED_BODY_BYTES) return { kind: "bad", end: b + len };
  const type = buf[b]!;
  const gl = buf[b + 2]!;
  if ((type !== RecordType.Entry && type !== RecordType.HardState && type !== RecordType.SnapMark && type !== RecordType.Reset && type !== RecordType.Recovering) || FIXED_BODY_BYTES + gl > len) {
    return { kind: "bad", end: b + len };
  }
  const group = utf8d.decode(buf.subarray(b + 3, b + 3 + gl));
  const p = b + 3 + gl;
  return {
    kind: "ok",
    record: {
      type: type as RecordType,
      entryType: buf[b + 1]!,
      group,
      term: getU64(buf, p),
      index: getU64(buf, p + 8),
      payload: buf.subarray(p + 16, b + len),
    },
    next: b + len,
  };
}
