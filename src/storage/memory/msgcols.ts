// The memory store's per-message columns (where its bytes are, its header length, its
// timestamp), indexed by sequence and kept in chunks of CHUNK_MSGS.
//
// Growing by chunks copies nothing: one array per column that doubles copied it whole at
// every doubling, 46 ms in one publish at 2^19 messages (and more past it), while every other
// client waited. Chunks wholly below the first sequence are dropped.

import type { SlabColumns } from "./slabs.js";

const BITS = 10;
/** Messages per chunk (a chunk is ~24 KiB). */
export const CHUNK_MSGS = 1 << BITS;
const MASK = CHUNK_MSGS - 1;

class ColChunk {
  readonly slab = new Uint32Array(CHUNK_MSGS);
  readonly off = new Uint32Array(CHUNK_MSGS);
  readonly len = new Uint32Array(CHUNK_MSGS);
  /** Header length inside the message's bytes; 0xffffffff: no header. */
  readonly hdr = new Uint32Array(CHUNK_MSGS);
  readonly ts = new Float64Array(CHUNK_MSGS);
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
    if (this.chunks.length === 0) this.base = ch;
    const k = ch - this.base;
    if (k < 0) throw new Error(`memory store: column for seq ${seq} below the first chunk`);
    while (this.chunks.length <= k) this.chunks.push(null);
    if (this.chunks[k] === null) this.chunks[k] = new ColChunk();
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
