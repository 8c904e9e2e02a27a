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

// ---- extending a CRC over a whole record without reading it ----
// A record ends with the CRC-32 of everything before it (little-endian), and the CRC-32 of
// any such byte string is the same constant: so the CRC of a block after one more record is
// crc(block) "shifted" by the record's length, xor that constant (zlib's crc32_combine with a
// known second CRC). The shift is a multiplication by x^(8 len) modulo the polynomial.
const RECORD_RESIDUE = 0x2144df1c;
const POLY = 0xedb88320;

/** a * b modulo the CRC polynomial (bit-reflected, as zlib's multmodp). */
function multmodp(a: number, b: number): number {
  let m = 0x80000000;
  let p = 0;
  for (;;) {
    if ((a & m) !== 0) {
      p ^= b;
      if ((a & (m - 1)) === 0) break;
    }
    m >>>= 1;
    b = (b & 1) !== 0 ? (b >>> 1) ^ POLY : b >>> 1;
  }
  return p >>> 0;
}

const X8 = 0x00800000; // x^8 (bit-reflected: x^k is 0x80000000 >>> k)
/** X8N[n] = x^(8n) mod p, filled on demand up to the longest record extended so far. */
let X8N = new Uint32Array(1024);
let x8nFilled = 1;
X8N[0] = 0x80000000; // x^0
/** Records up to this long are extended by arithmetic; longer ones are read (a table entry
 *  per byte of length would cost more memory than the read costs time). */
export const EXTEND_MAX_BYTES = 64 * 1024;

function x8n(n: number): number {
  if (n >= x8nFilled) {
    if (n >= X8N.length) {
      const t = new Uint32Array(Math.min(EXTEND_MAX_BYTES + 1, Math.max(n + 1, X8N.length * 2)));
      t.set(X8N);
      X8N = t;
    }
    for (let k = x8nFilled; k <= n; k++) X8N[k] = multmodp(X8N[k - 1]!, X8);
    x8nFilled = n + 1;
  }
  return X8N[n]!;
}

/** The CRC-32 of (bytes whose CRC-32 is prev) followed by a sealed record of recLen bytes
 *  (its last four bytes the CRC-32 of the rest), without reading the record. */
export function crc32ExtendRecord(prev: number, recLen: number): number {
  return (multmodp(x8n(recLen), prev) ^ RECORD_RESIDUE) >>> 0;
}
