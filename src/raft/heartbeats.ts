// The coalesced frame RaftHost sends each peer server (CLUSTERING.md §3.6): the heartbeats,
// heartbeat answers and Quiesce messages of all its groups for that peer in one turn, or none
// (the server-wide liveness frame every heartbeat interval). Sender and receiver are the
// frame's transport ends, so the messages carry neither:
//
//   u8 HEARTBEATS_TAG | u8 version | u32 incarnation | u32 count
//   | (u8 group length, group UTF-8, u8 type, f64 term, f64 logTerm, f64 index, f64 commit)*
//
// Only messages without a read context are coalesced (a ReadIndex heartbeat goes alone). The
// incarnation is the sending RaftHost's, random at its start: a peer that sees it change
// knows the server restarted (its groups lead nothing now) even if no route closed.
import { type Message, MsgType, emptyMessage } from "./types.js";

/** First byte of a coalesced frame (Raft frames start with their codec version, app frames
 *  with 0xf3). */
export const HEARTBEATS_TAG = 0xf4;
const VERSION = 1;
const HDR = 1 + 1 + 4 + 4;
const ITEM_FIXED = 1 + 1 + 4 * 8;

export interface GroupMsg {
  group: string;
  m: Message;
}

/** Goes in the coalesced frame. */
export function isCoalesced(m: Message): boolean {
  if (m.type === MsgType.Quiesce) return true;
  if (m.type !== MsgType.Heartbeat && m.type !== MsgType.HeartbeatResp) return false;
  return m.context === null || m.context.length === 0;
}

export function encodeHeartbeats(incarnation: number, items: readonly GroupMsg[]): Buffer {
  let size = HDR;
  for (const it of items) size += ITEM_FIXED + Buffer.byteLength(it.group);
  const b = Buffer.allocUnsafe(size);
  b[0] = HEARTBEATS_TAG;
  b[1] = VERSION;
  b.writeUInt32LE(incarnation >>> 0, 2);
  b.writeUInt32LE(items.length, 6);
  let p = HDR;
  for (const { group, m } of items) {
    const gl = b.write(group, p + 1, "utf8");
    if (gl > 255) throw new Error(`raft heartbeats: group name too long: ${group.slice(0, 40)}`);
    b[p] = gl;
    p += 1 + gl;
    b[p++] = m.type;
    p = b.writeDoubleLE(m.term, p);
    p = b.writeDoubleLE(m.logTerm, p);
    p = b.writeDoubleLE(m.index, p);
    p = b.writeDoubleLE(m.commit, p);
  }
  return b;
}

/** The messages of a coalesced frame from `from` to `to`; an Error (never a throw) if it is
 *  malformed. */
export function decodeHeartbeats(frame: Uint8Array, from: string, to: string): { incarnation: number; items: GroupMsg[] } | Error {
  const b = Buffer.isBuffer(frame) ? frame : Buffer.from(frame.buffer, frame.byteOffset, frame.byteLength);
  if (b.length < HDR || b[0] !== HEARTBEATS_TAG || b[1] !== VERSION) return new Error("raft heartbeats: bad header");
  const incarnation = b.readUInt32LE(2);
  const n = b.readUInt32LE(6);
  const out: GroupMsg[] = [];
  let p = HDR;
  for (let i = 0; i < n; i++) {
    if (p >= b.length) return new Error("raft heartbeats: frame cut short");
    const gl = b[p]!;
    if (p + gl + ITEM_FIXED > b.length) return new Error("raft heartbeats: frame cut short");
    const group = b.toString("utf8", p + 1, p + 1 + gl);
    p += 1 + gl;
    const type = b[p++]!;
    if (type !== MsgType.Heartbeat && type !== MsgType.HeartbeatResp && type !== MsgType.Quiesce) return new Error(`raft heartbeats: message type ${type}`);
    const m = emptyMessage(type as MsgType, from, to, b.readDoubleLE(p));
    m.logTerm = b.readDoubleLE(p + 8);
    m.index = b.readDoubleLE(p + 16);
    m.commit = b.readDoubleLE(p + 24);
    p += 32;
    if (!okInt(m.term) || !okInt(m.logTerm) || !okInt(m.index) || !okInt(m.commit)) return new Error("raft heartbeats: bad number");
    out.push({ group, m });
  }
  if (p !== b.length) return new Error("raft heartbeats: trailing bytes");
  return { incarnation, items: out };
}

function okInt(v: number): boolean {
  return Number.isSafeInteger(v) && v >= 0;
}
