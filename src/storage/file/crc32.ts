// CRC-32 (IEEE, the zlib polynomial). Short records are checksummed with a table loop over
// the Buffer in place (no subarray object per message); long ones use zlib.crc32 when this
// Node has it (20.15+/22.2+), which gives the same value.
import * as zlib from "node:zlib";

const TABLE = new Int32Array(256);
for (let n = 0; n < 256; n++) {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  TABLE[n] = c;
}

type NativeCrc = (data: Uint8Array, value?: number) => number;
const native: NativeCrc | null =
  typeof (zlib as unknown as { crc32?: unknown }).crc32 === "function" ? (zlib as unknown as { crc32: NativeCrc }).crc32 : null;

const NATIVE_MIN_BYTES = 512;

/** crc32 of buf[start, end). */
export function crc32(buf: Buffer, start: number, end: number): number {
  if (native !== null && end - start >= NATIVE_MIN_BYTES) return native(buf.subarray(start, end)) >>> 0;
  let c = -1;
  for (let i = start; i < end; i++) c = (TABLE[(c ^ (buf[i] as number)) & 0xff] as number) ^ (c >>> 8);
  return (c ^ -1) >>> 0;
}

export const hasNativeCrc32 = native !== null;
