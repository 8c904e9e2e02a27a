// Binary encoding of Raft messages between servers (no JSON on the hot path). One frame holds
// one message of one group:
//
//   u8 version | u8 type | u8 flags (1 = reject, 2 = has context, 4 = has snapshot)
//   | str group | str from | str to                                (str = u8 length + UTF-8)
//   | u64 term | u64 logTerm | u64 index | u64 commit | u64 rejectHint
//   | [u32 length + context] | u32 entries | (u64 term, u64 index, u8 type, u32 length, data)*
//   | [u64 index, u64 term, u16 voters, str voter*, u32 length, data]  (snapshot)
//
// Integers are little-endian; u64 values are JS numbers below 2^53.
import { type Entry, type EntryType, type Message, type MsgType, type Snapshot } from "./types.js";

const VERSION = 1;
const F_REJECT = 1;
const F_CONTEXT = 2;
const F_SNAPSHOT = 4;
const MAX_TYPE = 14;

const utf8 = new TextEncoder();
const utf8d = new TextDecoder();

export interface GroupMessage {
  group: string;
  msg: Message;
}

function strBytes(s: string): Uint8Array {
  const b = utf8.encode(s);
  if (b.length > 255) throw new Error(`raft codec: name too long: ${s.slice(0, 40)}`);
  return b;
}

export function encodedSize(group: string, m: Message): number {
  let n = 3 + 3 + 40 + group.length * 3 + m.from.length * 3 + m.to.length * 3 + 4;
  if (m.context !== null) n += 4 + m.context.length;
  for (const e of m.entries) n += 21 + e.data.length;
  if (m.snapshot !== null) {
    n += 22 + m.snapshot.data.length;
    for (const v of m.snapshot.voters) n += 1 + v.length * 3;
  }
  return n;
}

class Writer {
  p = 0;
  constructor(readonly b: Buffer) {}
  u8(v: number): void {
    this.b[this.p++] = v;
  }
  u16(v: number): void {
    this.b.writeUInt16LE(v, this.p);
    this.p += 2;
  }
  u32(v: number): void {
    this.b.writeUInt32LE(v, this.p);
    this.p += 4;
  }
  u64(v: number): void {
    this.b.writeUInt32LE(v % 0x100000000, this.p);
    this.b.writeUInt32LE(Math.floor(v / 0x100000000), this.p + 4);
    this.p += 8;
  }
  str(s: string): void {
    const x = strBytes(s);
    this.u8(x.length);
    this.b.set(x, this.p);
    this.p += x.length;
  }
  bytes(x: Uint8Array): void {
    this.u32(x.length);
    this.b.set(x, this.p);
    this.p += x.length;
  }
}

export function encodeMessage(group: string, m: Message): Buffer {
  const w = new Writer(Buffer.allocUnsafe(encodedSize(group, m)));
  w.u8(VERSION);
  w.u8(m.type);
  w.u8((m.reject ? F_REJECT : 0) | (m.context !== null ? F_CONTEXT : 0) | (m.snapshot !== null ? F_SNAPSHOT : 0));
  w.str(group);
  w.str(m.from);
  w.str(m.to);
  w.u64(m.term);
  w.u64(m.logTerm);
  w.u64(m.index);
  w.u64(m.commit);
  w.u64(m.rejectHint);
  if (m.context !== null) w.bytes(m.context);
  w.u32(m.entries.length);
  for (const e of m.entries) {
    w.u64(e.term);
    w.u64(e.index);
    w.u8(e.type);
    w.bytes(e.data);
  }
  const s = m.snapshot;
  if (s !== null) {
    w.u64(s.index);
    w.u64(s.term);
    w.u16(s.voters.length);
    for (const v of s.voters) w.str(v);
    w.bytes(s.data);
  }
  return w.b.subarray(0, w.p);
}

class Reader {
  p = 0;
  constructor(readonly b: Buffer) {}
  need(n: number): void {
    if (this.p + n > this.b.length) throw new RangeError("raft codec: frame cut short");
  }
  u8(): number {
    this.need(1);
    return this.b[this.p++]!;
  }
  u16(): number {
    this.need(2);
    const v = this.b.readUInt16LE(this.p);
    this.p += 2;
    return v;
  }
  u32(): number {
    this.need(4);
    const v = this.b.readUInt32LE(this.p);
    this.p += 4;
    return v;
  }
  u64(): number {
    this.need(8);
    const hi = this.b.readUInt32LE(this.p + 4);
    if (hi >= 0x200000) throw new RangeError("raft codec: integer beyond 2^53");
    const v = this.b.readUInt32LE(this.p) + hi * 0x100000000;
    this.p += 8;
    return v;
  }
  str(): string {
    const n = this.u8();
    this.need(n);
    const s = utf8d.decode(this.b.subarray(this.p, this.p + n));
    this.p += n;
    return s;
  }
  /** A view into the reader's (private) copy of the frame. */
  bytes(): Uint8Array {
    const n = this.u32();
    this.need(n);
    const x = new Uint8Array(this.b.buffer, this.b.byteOffset + this.p, n);
    this.p += n;
    return x;
  }
}

/** Decode one frame; an Error (never a throw) if it is malformed. The frame is copied once
 *  (a received frame is valid only during the call); entry data are views of that copy. */
export function decodeMessage(frame: Uint8Array): GroupMessage | Error {
  // allocUnsafe + set, not Buffer.from: the copy overwrites every byte, so the zero-filling
  // Buffer.from does for large frames is wasted work on the hot path.
  const b = Buffer.allocUnsafe(frame.length);
  b.set(frame);
  const r = new Reader(b);
  try {
    if (r.u8() !== VERSION) return new Error("raft codec: unknown version");
    const type = r.u8();
    if (type < 1 || type > MAX_TYPE) return new Error(`raft codec: unknown message type ${type}`);
    const flags = r.u8();
    const group = r.str();
    const from = r.str();
    const to = r.str();
    const term = r.u64();
    const logTerm = r.u64();
    const index = r.u64();
    const commit = r.u64();
    const rejectHint = r.u64();
    const context = (flags & F_CONTEXT) !== 0 ? r.bytes() : null;
    const ne = r.u32();
    if (ne > b.length) return new Error("raft codec: entry count beyond the frame");
    const entries: Entry[] = [];
    for (let i = 0; i < ne; i++) {
      const et = r.u64();
      const ei = r.u64();
      const ty = r.u8() as EntryType;
      if (ty > 2) return new Error(`raft codec: unknown entry type ${ty}`);
      entries.push({ term: et, index: ei, type: ty, data: r.bytes() });
    }
    let snapshot: Snapshot | null = null;
    if ((flags & F_SNAPSHOT) !== 0) {
      const si = r.u64();
      const st = r.u64();
      const nv = r.u16();
      const voters: string[] = [];
      for (let i = 0; i < nv; i++) voters.push(r.str());
      snapshot = { index: si, term: st, voters, data: r.bytes() };
    }
    if (r.p !== b.length) return new Error("raft codec: trailing bytes");
    return {
      group,
      msg: { type: type as MsgType, from, to, term, logTerm, index, entries, commit, reject: (flags & F_REJECT) !== 0, rejectHint, snapshot, context },
    };
  } catch (e) {
    return e as Error;
  }
}
