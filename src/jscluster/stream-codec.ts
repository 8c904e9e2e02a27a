// The entries of a replicated stream's Raft log, in a compact binary form (no JSON on the
// publish path). The first byte says what the entry is:
//   1 MSG     u8 rollup, f64 ts (ns), u32 ttl (s), u32 size, u16 subject length, u16 msg id
//             length, u32 header length or 0xffffffff for none, subject, msg id, header,
//             payload (the rest)
//   2 PURGE   f64 seq (0: none), f64 keep (0: none), u16 filter length, filter
//   3 DELETE  u8 erase, f64 seq
//   4 CONFIG  the stream's configuration as JSON (rare: not on the publish path)
//   5 BATCH   u16 count, then count × (u32 length, a MSG entry): the publishes one leader
//             took in one turn, as one Raft entry
// The reply subject of a publish is not in the entry: only the leader that proposed it
// answers, and it keeps the reply itself (stream-group.ts).
import type { StreamConfig } from "../contracts/wire.js";
import { Rollup, type StreamEntry } from "../stream/entry.js";

export const OP_MSG = 1;
export const OP_PURGE = 2;
export const OP_DELETE = 3;
export const OP_CONFIG = 4;
export const OP_BATCH = 5;
/** Publishes per BATCH entry at most (nats-server sends up to 4,096 entries per append). */
export const MAX_BATCH_MSGS = 4096;
export const BATCH_HDR = 3;

const NO_HDR = 0xffffffff;
const MSG_FIXED = 1 + 1 + 8 + 4 + 4 + 2 + 2 + 4;
const EMPTY = Buffer.alloc(0);

export class StreamCodecError extends Error {}

/** Bytes of e's MSG entry. */
export function msgOpSize(e: StreamEntry): number {
  const sl = Buffer.byteLength(e.subject);
  const il = e.msgId === "" ? 0 : Buffer.byteLength(e.msgId);
  return MSG_FIXED + sl + il + (e.hdr === null ? 0 : e.hdr.length) + e.payload.length;
}

/** The entry of a checked publish: one allocation, the bytes the log keeps. */
export function encodeMsgOp(e: StreamEntry): Uint8Array {
  const b = Buffer.allocUnsafe(msgOpSize(e));
  writeMsgOp(b, 0, e);
  return b;
}

/** e's MSG entry written at b[p] (room for msgOpSize(e) bytes); returns the end. */
export function writeMsgOp(b: Buffer, p: number, e: StreamEntry): number {
  const hl = e.hdr === null ? 0 : e.hdr.length;
  b[p] = OP_MSG;
  b[p + 1] = e.rollup;
  b.writeDoubleLE(e.tsNs, p + 2);
  b.writeUInt32LE(e.ttlSec >>> 0, p + 10);
  b.writeUInt32LE(e.size >>> 0, p + 14);
  b.writeUInt32LE(e.hdr === null ? NO_HDR : hl, p + 22);
  let q = p + MSG_FIXED;
  const sl = b.write(e.subject, q, "utf8");
  q += sl;
  const il = e.msgId === "" ? 0 : b.write(e.msgId, q, "utf8");
  q += il;
  b.writeUInt16LE(sl, p + 18);
  b.writeUInt16LE(il, p + 20);
  if (e.hdr !== null) q += e.hdr.copy(b, q);
  q += e.payload.copy(b, q);
  return q;
}

/** Fill `out` from the MSG entry data[start, end) (reply ""): hdr and payload are views. */
export function decodeMsgOp(data: Uint8Array, out: StreamEntry, start = 0, end = data.length): StreamEntry {
  const b = asBuffer(data);
  const p0 = start;
  if (end - start < MSG_FIXED || end > b.length || b[p0] !== OP_MSG) throw new StreamCodecError("corrupt stream entry");
  const rollup = b[p0 + 1]!;
  const tsNs = b.readDoubleLE(p0 + 2);
  const ttlSec = b.readUInt32LE(p0 + 10);
  const size = b.readUInt32LE(p0 + 14);
  const sl = b.readUInt16LE(p0 + 18);
  const il = b.readUInt16LE(p0 + 20);
  const hlRaw = b.readUInt32LE(p0 + 22);
  const hl = hlRaw === NO_HDR ? 0 : hlRaw;
  let p = p0 + MSG_FIXED;
  if (p + sl + il + hl > end || rollup > Rollup.All) throw new StreamCodecError("corrupt stream entry");
  const subject = b.toString("utf8", p, p + sl);
  p += sl;
  const msgId = il === 0 ? "" : b.toString("utf8", p, p + il);
  p += il;
  const hdr = hlRaw === NO_HDR ? null : b.subarray(p, p + hl);
  p += hl;
  const payload = p === end ? EMPTY : b.subarray(p, end);
  return out.set(subject, hdr, payload, tsNs, ttlSec, msgId, rollup as Rollup, "", size);
}

export interface PurgeOp {
  filter: string;
  seq: number;
  keep: number;
}

export function encodePurgeOp(req: { filter?: string; seq?: number; keep?: number }): Uint8Array {
  const f = req.filter ?? "";
  const fl = Buffer.byteLength(f);
  const b = Buffer.allocUnsafe(1 + 8 + 8 + 2 + fl);
  b[0] = OP_PURGE;
  b.writeDoubleLE(req.seq ?? 0, 1);
  b.writeDoubleLE(req.keep ?? 0, 9);
  b.writeUInt16LE(fl, 17);
  b.write(f, 19, "utf8");
  return b;
}

export function decodePurgeOp(data: Uint8Array): PurgeOp {
  const b = asBuffer(data);
  if (b.length < 19 || b[0] !== OP_PURGE) throw new StreamCodecError("corrupt purge entry");
  const fl = b.readUInt16LE(17);
  if (19 + fl !== b.length) throw new StreamCodecError("corrupt purge entry");
  return { seq: b.readDoubleLE(1), keep: b.readDoubleLE(9), filter: b.toString("utf8", 19, 19 + fl) };
}

export function encodeDeleteOp(seq: number, erase: boolean): Uint8Array {
  const b = Buffer.allocUnsafe(10);
  b[0] = OP_DELETE;
  b[1] = erase ? 1 : 0;
  b.writeDoubleLE(seq, 2);
  return b;
}

export function decodeDeleteOp(data: Uint8Array): { seq: number; erase: boolean } {
  const b = asBuffer(data);
  if (b.length !== 10 || b[0] !== OP_DELETE) throw new StreamCodecError("corrupt delete entry");
  return { erase: b[1] === 1, seq: b.readDoubleLE(2) };
}

export function asBuffer(d: Uint8Array): Buffer {
  return Buffer.isBuffer(d) ? d : Buffer.from(d.buffer, d.byteOffset, d.byteLength);
}

export function encodeConfigOp(cfg: StreamConfig): Uint8Array {
  const body = Buffer.from(JSON.stringify(cfg));
  const b = Buffer.allocUnsafe(1 + body.length);
  b[0] = OP_CONFIG;
  body.copy(b, 1);
  return b;
}

export function decodeConfigOp(data: Uint8Array): StreamConfig {
  const b = asBuffer(data);
  if (b.length < 2 || b[0] !== OP_CONFIG) throw new StreamCodecError("corrupt config entry");
  return JSON.parse(b.toString("utf8", 1)) as StreamConfig;
}


/** Calls fn with the bounds of each MSG entry of a BATCH entry. */
export function forEachBatchMsg(data: Uint8Array, fn: (start: number, end: number, k: number) => void): void {
  const b = asBuffer(data);
  const n = b.readUInt16LE(1);
  let p = BATCH_HDR;
  for (let k = 0; k < n; k++) {
    const len = b.readUInt32LE(p);
    p += 4;
    if (p + len > b.length) throw new Error("corrupt batch entry");
    fn(p, p + len, k);
    p += len;
  }
}
