// The entries of a replicated stream's Raft log, in a compact binary form (no JSON on the
// publish path). The first byte says what the entry is:
//   1 MSG     u8 rollup, f64 ts (ns), u32 ttl (s), u32 size, u16 subject length, u16 msg id
//             length, u32 header length or 0xffffffff for none, subject, msg id, header,
//             payload (the rest)
//   2 PURGE   f64 seq (0: none), f64 keep (0: none), u16 filter length, filter
//   3 DELETE  u8 erase, f64 seq
//   4 CONFIG  the stream's configuration as JSON (rare: not on the publish path)
// The reply subject of a publish is not in the entry: only the leader that proposed it
// answers, and it keeps the reply itself (stream-group.ts).
import type { StreamConfig } from "../contracts/wire.js";
import { Rollup, type StreamEntry } from "../stream/entry.js";

export const OP_MSG = 1;
export const OP_PURGE = 2;
export const OP_DELETE = 3;
export const OP_CONFIG = 4;

const NO_HDR = 0xffffffff;
const MSG_FIXED = 1 + 1 + 8 + 4 + 4 + 2 + 2 + 4;
const EMPTY = Buffer.alloc(0);

export class StreamCodecError extends Error {}

/** The entry of a checked publish: one allocation, the bytes the log keeps. */
export function encodeMsgOp(e: StreamEntry): Uint8Array {
  const sl = Buffer.byteLength(e.subject);
  const il = e.msgId === "" ? 0 : Buffer.byteLength(e.msgId);
  const hl = e.hdr === null ? 0 : e.hdr.length;
  const b = Buffer.allocUnsafe(MSG_FIXED + sl + il + hl + e.payload.length);
  b[0] = OP_MSG;
  b[1] = e.rollup;
  b.writeDoubleLE(e.tsNs, 2);
  b.writeUInt32LE(e.ttlSec >>> 0, 10);
  b.writeUInt32LE(e.size >>> 0, 14);
  b.writeUInt16LE(sl, 18);
  b.writeUInt16LE(il, 20);
  b.writeUInt32LE(e.hdr === null ? NO_HDR : hl, 22);
  let p = MSG_FIXED;
  p += b.write(e.subject, p, "utf8");
  if (il > 0) p += b.write(e.msgId, p, "utf8");
  if (e.hdr !== null) p += e.hdr.copy(b, p);
  e.payload.copy(b, p);
  return b;
}

/** Fill `out` from a MSG entry (reply ""): hdr and payload are views of data. */
export function decodeMsgOp(data: Uint8Array, out: StreamEntry): StreamEntry {
  const b = asBuffer(data);
  if (b.length < MSG_FIXED || b[0] !== OP_MSG) throw new StreamCodecError("corrupt stream entry");
  const rollup = b[1]!;
  const tsNs = b.readDoubleLE(2);
  const ttlSec = b.readUInt32LE(10);
  const size = b.readUInt32LE(14);
  const sl = b.readUInt16LE(18);
  const il = b.readUInt16LE(20);
  const hlRaw = b.readUInt32LE(22);
  const hl = hlRaw === NO_HDR ? 0 : hlRaw;
  let p = MSG_FIXED;
  if (p + sl + il + hl > b.length || rollup > Rollup.All) throw new StreamCodecError("corrupt stream entry");
  const subject = b.toString("utf8", p, p + sl);
  p += sl;
  const msgId = il === 0 ? "" : b.toString("utf8", p, p + il);
  p += il;
  const hdr = hlRaw === NO_HDR ? null : b.subarray(p, p + hl);
  p += hl;
  const payload = p === b.length ? EMPTY : b.subarray(p);
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

function asBuffer(d: Uint8Array): Buffer {
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
