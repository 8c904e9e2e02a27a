// The FWD frame of the meta group's peer channel: a $JS.API request one server hands to
// another (the meta leader, a stream's leader), with its hop count and whether the receiver
// must handle it itself.

import type { ForwardedRequest } from "../contracts/jetstream.js";

export const TAG_FWD = 0xf2;

const FWD_LOCAL = 0x80;

/** FWD frame: tag, flags (hops | local), u16 subject length, u16 reply length, u32 header
 *  length (0xffffffff: none), subject, reply, header, payload. */
export function encodeForward(r: ForwardedRequest): Buffer {
  const subj = Buffer.from(r.subject, "utf8");
  const rep = Buffer.from(r.reply, "utf8");
  const hlen = r.hdr === null ? 0 : r.hdr.length;
  const f = Buffer.allocUnsafe(10 + subj.length + rep.length + hlen + r.payload.length);
  f[0] = TAG_FWD;
  f[1] = (Math.min(r.hops, 0x7f) & 0x7f) | (r.local ? FWD_LOCAL : 0);
  f.writeUInt16BE(subj.length, 2);
  f.writeUInt16BE(rep.length, 4);
  f.writeUInt32BE(r.hdr === null ? 0xffffffff : hlen, 6);
  let o = 10;
  o += subj.copy(f, o);
  o += rep.copy(f, o);
  if (r.hdr !== null) o += r.hdr.copy(f, o);
  r.payload.copy(f, o);
  return f;
}

/** Decodes a FWD frame (copies: the frame is only valid during the call); null if malformed. */
export function decodeForward(f: Uint8Array): ForwardedRequest | null {
  if (f.length < 10 || f[0] !== TAG_FWD) return null;
  const b = Buffer.from(f.buffer, f.byteOffset, f.length);
  const sl = b.readUInt16BE(2);
  const rl = b.readUInt16BE(4);
  const hraw = b.readUInt32BE(6);
  const hl = hraw === 0xffffffff ? 0 : hraw;
  if (10 + sl + rl + hl > b.length) return null;
  let o = 10;
  const subject = b.toString("utf8", o, o + sl);
  o += sl;
  const reply = b.toString("utf8", o, o + rl);
  o += rl;
  const hdr = hraw === 0xffffffff ? null : Buffer.from(b.subarray(o, o + hl));
  o += hl;
  return { subject, reply, hdr, payload: Buffer.from(b.subarray(o)), hops: b[1]! & 0x7f, local: (b[1]! & FWD_LOCAL) !== 0 };
}
