// The memory store's per-message columns (where its bytes are, its header length, its
// timestamp), indexed by sequence and kept in chunks of CHUNK_MSGS.
//
// Growing by chunks copies nothing: one array per column that doubles copied it whole at
// every doubling, 46 ms in one publish at 2^19 messages (and more past it), while every other
// client waited. Chunks wholly below the first sequence are dropped.

import type { SlabColumns } from "./slabs.js";

const BITS = 10;
/** Messages per chunk (a full chunk is ~24 KiB). */
export const CHUNK_MSGS = 1 << BITS;
const MASK = CHUNK_MSGS - 1;

/** Entries the first chunk of a store starts with (it doubles up to CHUNK_MSGS): a small
 *  stream, one of many KV buckets, then holds ~1 KiB of columns rather than 24 KiB. */
const FIRST_CAP = 32;

class ColChunk {
  slab: Uint32Array;
  off: Uint32Array;
  len: Uint32Array;
  /** Header length inside the message's bytes; 0xffffffff: no header. */
  hdr: Uint32Array;
  ts: Float64Array;
  constructor(cap: number) {
    this.slab = new Uint32Array(cap);
    this.off = new Uint32Array(cap);
    this.len = new Uint32Array(cap);
    this.hdr = new Uint32Array(cap);
    this.ts = new Float64Array(cap);
  }

  /** Room for index i (a first chunk that started small). */
  grow(i: number): void {
    let cap = this.slab.length;
    if (i < cap) return;
    while (cap <= i) cap *= 2;
    cap = Math.min(cap, CHUNK_MSGS);
    const u = (a: Uint32Array): Uint32Array => {
      const b = new Uint32Array(cap);
      b.set(a);
      return b;
    };
    this.slab = u(this.slab);
    this.off = u(this.off);
    this.len = u(this.len);
    this.hdr = u(this.hdr);
    const t = new Float64Array(cap);
    t.set(this.ts);
    this.ts = t;
  }
}

/** Chunk number of seq (integer shifts below 2^31: no heap number in unoptimised code). */
function chunkOf(seq: number): number {
  return seq < 0x80000000 ? seq >> BITS : Math.floor(seq / CHUNK_MSGS);
}

function indexIn(seq: number): number {
  return seq < 0x80000000 ? seq & MASK : seq - Math.floor(seq / CHUNK_MSGS) * CHUNK_MSGS;
}

export class MsgCols implements SlabColumns {
  /** Chunk number of chunks[0]. */
  private base = 0;
  private chunks: (ColChunk | null)[] = [];

  /** Chunks held (tests). */
  get chunkCount(): number {
    let n = 0;
    for (const c of this.chunks) if (c !== null) n++;
    return n;
  }

  /** The chunk of a stored seq. */
  private at(seq: number): ColChunk {
    return this.chunks[chunkOf(seq) - this.base]!;
  }

  /** Makes room for seq (at or above every sequence held). */
  ensure(seq: number): void {
    const ch = chunkOf(seq);
    const first = this.chunks.length === 0;
    if (first) this.base = ch;
    const k = ch - this.base;
    if (k < 0) throw new Error(`memory store: column for seq ${seq} below the first chunk`);
    while (this.chunks.length <= k) this.chunks.push(null);
    const c = this.chunks[k];
    if (c === null || c === undefined) this.chunks[k] = new ColChunk(first ? Math.max(FIRST_CAP, Math.min(CHUNK_MSGS, 2 * (indexIn(seq) + 1))) : CHUNK_MSGS);
    else c.grow(indexIn(seq));
  }

  set(seq: number, hdrLen: number, tsNs: number): void {
    const c = this.at(seq);
    const i = indexIn(seq);
    c.hdr[i] = hdrLen;
    c.ts[i] = tsNs;
  }

  hdrOf(seq: number): number {
    return this.at(seq).hdr[indexIn(seq)]!;
  }

  tsOf(seq: number): number {
    return this.at(seq).ts[indexIn(seq)]!;
  }

  // SlabColumns
  slabOf(seq: number): number {
    return this.at(seq).slab[indexIn(seq)]!;
  }

  offOf(seq: number): number {
    return this.at(seq).off[indexIn(seq)]!;
  }

  lenOf(seq: number): number {
    return this.at(seq).len[indexIn(seq)]!;
  }

  setLoc(seq: number, slab: number, off: number, len: number): void {
    const c = this.at(seq);
    const i = indexIn(seq);
    c.slab[i] = slab;
    c.off[i] = off;
    c.len[i] = len;
  }

  /** Lets go of the chunks wholly below seq. */
  dropBelow(seq: number): void {
    const n = Math.min(chunkOf(seq) - this.base, this.chunks.length);
    if (n <= 0) return;
    this.chunks.splice(0, n);
    this.base += n;
  }

  clear(): void {
    this.chunks = [];
    this.base = 0;
  }
}
