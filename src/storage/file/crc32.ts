// CRC-32 (IEEE, the zlib polynomial). Short records are checksummed with a table loop over
// the Buffer in place (no subarray object per message); long ones use zlib.crc32 when this
// Node has it (20.15+/22.2+), which gives the same value.
import * as zlib from "node:zlib";

// Slicing-by-8 tables (TABLE[k * 256 + n] = CRC of byte n followed by k zero bytes): short
// records are checked eight bytes per step, which halves recovery's checksum time.
const TABLE = new Int32Array(256 * 8);
for (let n = 0; n < 256; n++) {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  TABLE[n] = c;
}
for (let n = 0; n < 256; n++) {
  for (let k = 1; k < 8; k++) {
    const prev = TABLE[(k - 1) * 256 + n] as number;
    TABLE[k * 256 + n] = (prev >>> 8) ^ (TABLE[prev & 0xff] as number);
  }
}

type NativeCrc = (data: Uint8Array, value?: number) => number;
const native: NativeCrc | null =
  typeof (zlib as unknown as { crc32?: unknown }).crc32 === "function" ? (zlib as unknown as { crc32: NativeCrc }).crc32 : null;

const NATIVE_MIN_BYTES = 512;

/** crc32 of buf[start, end). */
export function crc32(buf: Buffer, start: number, end: number): number {
  return crc32Update(0, buf, start, end);
}

/** crc32 of everything before (whose crc32 is prev) followed by buf[start, end). */
export function crc32Update(prev: number, buf: Buffer, start: number, end: number): number {
  if (native !== null && end - start >= NATIVE_MIN_BYTES) return native(buf.subarray(start, end), prev) >>> 0;
  const t = TABLE;
  let c = ~prev;
  let i = start;
  for (; i + 8 <= end; i += 8) {
    const lo = ((buf[i] as number) | ((buf[i + 1] as number) << 8) | ((buf[i + 2] as number) << 16) | ((buf[i + 3] as number) << 24)) ^ c;
    c =
      (t[1792 + (lo & 0xff)] as number) ^
      (t[1536 + ((lo >>> 8) & 0xff)] as number) ^
      (t[1280 + ((lo >>> 16) & 0xff)] as number) ^
      (t[1024 + (lo >>> 24)] as number) ^
      (t[768 + (buf[i + 4] as number)] as number) ^
      (t[512 + (buf[i + 5] as number)] as number) ^
      (t[256 + (buf[i + 6] as number)] as number) ^
      (t[buf[i + 7] as number] as number);
  }
  for (; i < end; i++) c = (t[(c ^ (buf[i] as number)) & 0xff] as number) ^ (c >>> 8);
  return (c ^ -1) >>> 0;
}

export const hasNativeCrc32 = native !== null;
