// An unsigned column indexed by an absolute position (a sequence, a checkpoint group), kept in
// fixed-size chunks. A chunk holds no array while its values are one arithmetic run: entries
// [lo, hi) hold a + d * (k - lo) and every other entry is 0. Appending the next value of the run,
// and clearing its first or last entry, keep it that way; any other write makes the chunk dense
// (a typed array as narrow as its values allow). A stream of one subject and one message size,
// or checkpoints of equal-length records, so costs a few numbers per chunk instead of bytes per
// entry. 0 means "nothing here": a dense chunk that holds only zeros again drops its array.

/** An unsigned column as narrow as its largest value allows. */
export type UintCol = Uint8Array | Uint16Array | Uint32Array;

class Chunk {
  dense: UintCol | null = null;
  nz = 0; // non-zero entries of dense
  a = 0;
  d = 0;
  lo = 0;
  hi = 0;
}

function arrayFor(max: number, n: number): UintCol {
  return max <= 0xff ? new Uint8Array(n) : max <= 0xffff ? new Uint16Array(n) : new Uint32Array(n);
}

function capOf(c: UintCol): number {
  return c instanceof Uint8Array ? 0xff : c instanceof Uint16Array ? 0xffff : 0xffffffff;
}

export class ChunkCol {
  readonly size: number; // entries per chunk, a power of two
  private readonly bits: number;
  private base = 0; // chunk number of chunks[0]
  private chunks: (Chunk | null)[] = [];

  constructor(size: number) {
    this.size = size;
    this.bits = Math.log2(size);
    if (!Number.isInteger(this.bits)) throw new Error(`ChunkCol: chunk size ${size} is not a power of two`);
  }

  /** Chunk number of k; integer shifts (no heap number in unoptimised code) below 2^31. */
  private chunkOf(k: number): number {
    return k < 0x80000000 ? k >> this.bits : Math.floor(k / this.size);
  }

  /** Value at k (0 if never written or cleared). */
  get(k: number): number {
    const ch = this.chunkOf(k);
    const c = this.chunks[ch - this.base];
    if (c === undefined || c === null) return 0;
    const i = k - ch * this.size;
    const dn = c.dense;
    if (dn !== null) return dn[i] as number;
    return i >= c.lo && i < c.hi ? c.a + c.d * (i - c.lo) : 0;
  }

  /** Every entry back to 0, with no memory held. */
  clear(): void {
    this.chunks = [];
    this.base = 0;
  }

  /** Forget every chunk that ends below k: nothing there is read or written again. */
  dropBelow(k: number): void {
    const n = Math.min(this.chunkOf(k) - this.base, this.chunks.length);
    if (n <= 0) return;
    this.chunks.splice(0, n);
    this.base += n;
  }

  /** Dense chunks (for tests and memory accounting). */
  denseChunks(): number {
    let n = 0;
    for (const c of this.chunks) if (c !== null && c.dense !== null) n++;
    return n;
  }

  private chunkFor(ch: number): Chunk {
    if (this.chunks.length === 0) this.base = ch;
    if (ch < this.base) {
      const pad = new Array<Chunk | null>(this.base - ch).fill(null);
      this.chunks = pad.concat(this.chunks);
      this.base = ch;
    }
    const j = ch - this.base;
    while (this.chunks.length <= j) this.chunks.push(null);
    let c = this.chunks[j] as Chunk | null;
    if (c === null) {
      c = new Chunk();
      this.chunks[j] = c;
    }
    return c;
  }

  set(k: number, v: number): void {
    const ch = this.chunkOf(k);
    const i = k - ch * this.size;
    let c = this.chunks[ch - this.base];
    if (c === undefined || c === null) {
      if (v === 0) return;
      c = this.chunkFor(ch);
    }
    if (c.dense !== null) return this.setDense(c, i, v);
    const lo = c.lo;
    const hi = c.hi;
    if (lo === hi) {
      if (v === 0) return;
      c.lo = i;
      c.hi = i + 1;
      c.a = v;
      c.d = 0;
      return;
    }
    if (i >= lo && i < hi) {
      if (c.a + c.d * (i - lo) === v) return;
      if (v === 0 && i === lo) {
        c.lo = lo + 1;
        c.a += c.d;
        return;
      }
      if (v === 0 && i === hi - 1) {
        c.hi = hi - 1;
        return;
      }
    } else {
      if (v === 0) return;
      if (i === hi) {
        if (hi - lo === 1) {
          c.d = v - c.a;
          c.hi = hi + 1;
          return;
        }
        if (c.a + c.d * (i - lo) === v) {
          c.hi = hi + 1;
          return;
        }
      }
    }
    this.densify(c, v);
    this.setDense(c, i, v);
  }

  /** n entries from k on all set to v. */
  fill(k: number, n: number, v: number): void {
    if (v === 0) {
      for (let j = 0; j < n; j++) this.set(k + j, 0);
      return;
    }
    const end = k + n;
    while (k < end) {
      const ch = this.chunkOf(k);
      const i0 = k - ch * this.size;
      const i1 = Math.min(this.size, i0 + (end - k));
      const c = this.chunkFor(ch);
      if (c.dense === null && c.lo === c.hi) {
        c.lo = i0;
        c.hi = i1;
        c.a = v;
        c.d = 0;
      } else if (c.dense === null && i0 === c.hi && c.a === v && (c.d === 0 || c.hi - c.lo === 1)) {
        c.d = 0;
        c.hi = i1;
      } else {
        if (c.dense === null) this.densify(c, v);
        for (let i = i0; i < i1; i++) this.setDense(c, i, v);
      }
      k += i1 - i0;
    }
  }

  /** n entries from k on set to a, a + d, a + 2d, ... (every one of them > 0). */
  fillLinear(k: number, n: number, a: number, d: number): void {
    const end = k + n;
    let v = a;
    while (k < end) {
      const ch = this.chunkOf(k);
      const i0 = k - ch * this.size;
      const i1 = Math.min(this.size, i0 + (end - k));
      const c = this.chunkFor(ch);
      const m = i1 - i0;
      if (c.dense === null && c.lo === c.hi) {
        c.lo = i0;
        c.hi = i1;
        c.a = v;
        c.d = d;
      } else if (c.dense === null && i0 === c.hi && (c.hi - c.lo === 1 ? c.a + d === v : c.d === d && c.a + d * (i0 - c.lo) === v)) {
        c.d = d;
        c.hi = i1;
      } else {
        for (let j = 0; j < m; j++) this.set(k + j, v + d * j);
      }
      k += m;
      v += d * m;
    }
  }

  private densify(c: Chunk, v: number): void {
    const last = c.a + c.d * (c.hi - 1 - c.lo);
    const dn = arrayFor(Math.max(v, c.a, last), this.size);
    for (let i = c.lo; i < c.hi; i++) dn[i] = c.a + c.d * (i - c.lo);
    c.dense = dn;
    c.nz = c.hi - c.lo;
    c.lo = c.hi = 0;
  }

  private setDense(c: Chunk, i: number, v: number): void {
    let dn = c.dense as UintCol;
    if (v > capOf(dn)) {
      const w = arrayFor(v, this.size);
      w.set(dn);
      c.dense = dn = w;
    }
    const old = dn[i] as number;
    if (old === 0) {
      if (v === 0) return;
      c.nz++;
    } else if (v === 0 && --c.nz === 0) {
      c.dense = null; // all zero again
      c.lo = c.hi = 0;
      return;
    }
    dn[i] = v;
  }

  /** The last index (>= k, in k's chunk) up to which it stays the same
   *  without a dense array; for dense chunks just k. */
  runEnd(k: number): number {
    const ch = this.chunkOf(k);
    const c = this.chunks[ch - this.base];
    const cs = ch * this.size;
    if (c === undefined || c === null) return cs + this.size - 1;
    if (c.dense !== null) return k;
    const i = k - cs;
    if (i < c.lo) return cs + c.lo - 1;
    if (i >= c.hi) return cs + this.size - 1;
    return c.d === 0 ? cs + c.hi - 1 : k;
  }

  /** The first index (<= k, in k's chunk) from which the value at k stays the same without a
   *  dense array; for dense chunks just k. */
  runStart(k: number): number {
    const ch = this.chunkOf(k);
    const c = this.chunks[ch - this.base];
    const cs = ch * this.size;
    if (c === undefined || c === null) return cs;
    if (c.dense !== null) return k;
    const i = k - cs;
    if (i < c.lo) return cs;
    if (i >= c.hi) return cs + c.hi;
    return c.d === 0 ? cs + c.lo : k;
  }

  /** First k in [from, last] whose value is v (eq) or is not v (!eq); last + 1 if none. */
  find(from: number, last: number, v: number, eq: boolean): number {
    let k = from;
    while (k <= last) {
      const ch = this.chunkOf(k);
      const cs = ch * this.size;
      const ce = Math.min(last, cs + this.size - 1);
      const c = this.chunks[ch - this.base];
      const dn = c === undefined || c === null ? null : c.dense;
      if (dn !== null) {
        const e = ce - cs;
        if (eq) {
          for (let i = k - cs; i <= e; i++) if (dn[i] === v) return cs + i;
        } else {
          for (let i = k - cs; i <= e; i++) if (dn[i] !== v) return cs + i;
        }
        k = ce + 1;
        continue;
      }
      // zeros, then the run [lo, hi), then zeros
      const zeroHit = (v === 0) === eq;
      const e = ce - cs;
      let i = k - cs;
      if (c === undefined || c === null || c.lo === c.hi) {
        if (zeroHit) return k;
        k = ce + 1;
        continue;
      }
      const lo = c.lo;
      const hi = c.hi;
      if (i < lo) {
        if (zeroHit) return k;
        i = lo;
      }
      if (i < hi && i <= e) {
        if (c.d === 0) {
          if ((c.a === v) === eq) return cs + i;
          i = hi;
        } else {
          for (const stop = Math.min(hi - 1, e); i <= stop; i++) if ((c.a + c.d * (i - lo) === v) === eq) return cs + i;
        }
      }
      if (i <= e && zeroHit) return cs + i;
      k = ce + 1;
    }
    return last + 1;
  }

  /** Last k in [first, from] whose value is v (eq) or is not v (!eq); first - 1 if none. */
  findBack(from: number, first: number, v: number, eq: boolean): number {
    let k = from;
    while (k >= first) {
      const ch = this.chunkOf(k);
      const cs = ch * this.size;
      const lo = Math.max(first, cs);
      const c = this.chunks[ch - this.base];
      if (c === undefined || c === null || (c.dense === null && c.lo === c.hi)) {
        if ((v === 0) === eq) return k;
        k = lo - 1;
        continue;
      }
      const dn = c.dense;
      if (dn !== null) {
        for (let i = k - cs, e = lo - cs; i >= e; i--) if ((dn[i] === v) === eq) return cs + i;
        k = lo - 1;
        continue;
      }
      for (;;) {
        if ((this.get(k) === v) === eq) return k;
        const s = this.runStart(k);
        if (s <= lo) break;
        k = s - 1;
      }
      k = lo - 1;
    }
    return first - 1;
  }

  /** Entries in [from, last] whose value is v (eq) or is not v (!eq). */
  count(from: number, last: number, v: number, eq: boolean): number {
    let n = 0;
    let k = from;
    while (k <= last) {
      const ch = this.chunkOf(k);
      const cs = ch * this.size;
      const ce = Math.min(last, cs + this.size - 1);
      const c = this.chunks[ch - this.base];
      const dn = c === undefined || c === null ? null : c.dense;
      if (dn !== null) {
        for (let i = k - cs, e = ce - cs; i <= e; i++) if ((dn[i] === v) === eq) n++;
        k = ce + 1;
        continue;
      }
      while (k <= ce) {
        const e = Math.min(this.runEnd(k), ce);
        if ((this.get(k) === v) === eq) n += e - k + 1;
        k = e + 1;
      }
    }
    return n;
  }
}
