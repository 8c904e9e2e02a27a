// Message bytes of the memory store, packed into large buffers (slabs) instead of one Buffer
// per message.
//
// One Buffer per stored message is one JS object per message that survives: every scavenge
// copied the ones stored since the last, and a client filling a memory stream with 1,000,000
// small messages got 20-44 ms scavenges and 105 ms turns on a default heap (a bystander
// waits through each). Here a message is copied into the current slab (1 MiB, outside the JS
// heap), and the store keeps only numbers: slab id, offset and length per message.
//
// Slabs are append-only: bytes once written are never overwritten, so the views that reads
// hand out stay valid as long as they are held. A slab whose messages are all gone is
// dropped. A slab that became sparse (a quarter of it live or less: a KV bucket overwriting
// keys, acks of a work queue out of order) has its live messages copied into the current
// slab, one such slab per store call, and is dropped then. Each slab records the sequences
// written into it (a typed array), which is what the move walks.

/** Bytes of one slab, once the store holds a few MiB; a store's first slab is
 *  FIRST_SLAB_BYTES and each next one twice the one before up to this, so that a small stream
 *  (one of many KV buckets) reserves little. */
export const SLAB_BYTES = 1 << 20;
const FIRST_SLAB_BYTES = 64 << 10;
/** A message this size or larger gets a buffer of its own. */
export const OWN_SLAB_BYTES = SLAB_BYTES >>> 3;
/** A slab with at most 1/SPARSE_SHARE of its bytes live has its messages moved. */
const SPARSE_SHARE = 4;
const EMPTY_SEQS = new Float64Array(0);

/** Where each message's bytes are (slab id, offset, length), kept by the store per
 *  sequence (its columns). */
export interface SlabColumns {
  slabOf(seq: number): number;
  offOf(seq: number): number;
  lenOf(seq: number): number;
  setLoc(seq: number, slab: number, off: number, len: number): void;
}

/** What a move needs of the store. */
export interface SlabOwner {
  /** seq is stored (not removed). */
  isLive(seq: number): boolean;
}

export class Slabs {
  private bufs: (Buffer | null)[] = [];
  /** Live bytes and live messages per slab. */
  private live: number[] = [];
  private msgs: number[] = [];
  /** Bytes written (the end of the used part). */
  private used: number[] = [];
  /** Sequences written into each slab, and how many. */
  private seqs: Float64Array[] = [];
  private nseq: number[] = [];
  private queued: boolean[] = [];
  private readonly freeIds: number[] = [];
  private cur = -1;
  private nextSize = FIRST_SLAB_BYTES;
  /** Slabs to move the live messages out of. */
  private sparse: number[] = [];

  constructor(private readonly owner: SlabOwner) {}

  /** Slabs held (tests, accounting). */
  get count(): number {
    return this.bufs.length - this.freeIds.length;
  }

  /** Copies hdr and data for seq into a slab and records where in cols. */
  put(cols: SlabColumns, seq: number, hdr: Buffer | null, data: Buffer): void {
    const hl = hdr === null ? 0 : hdr.length;
    const len = hl + data.length;
    let id: number;
    let off: number;
    if (len >= OWN_SLAB_BYTES) {
      id = this.newSlab(len);
      off = 0;
    } else {
      if (this.cur < 0 || this.used[this.cur]! + len > this.bufs[this.cur]!.length) this.nextCur(len);
      id = this.cur;
      off = this.used[id]!;
    }
    const b = this.bufs[id]!;
    if (hdr !== null) hdr.copy(b, off);
    data.copy(b, off + hl);
    this.used[id] = off + len;
    this.place(cols, seq, id, off, len);
  }

  /** The bytes of seq (a view of its slab). */
  bytes(cols: SlabColumns, seq: number): Buffer {
    const off = cols.offOf(seq);
    return this.bufs[cols.slabOf(seq)]!.subarray(off, off + cols.lenOf(seq));
  }

  /** The message at seq is gone (its columns are still there). */
  removed(cols: SlabColumns, seq: number): void {
    const id = cols.slabOf(seq);
    this.live[id] = this.live[id]! - cols.lenOf(seq);
    if (--this.msgs[id]! === 0 && id !== this.cur) {
      this.drop(id);
      return;
    }
    if (id !== this.cur) this.queueIfSparse(id);
  }

  private queueIfSparse(id: number): void {
    if (!this.queued[id] && this.live[id]! * SPARSE_SHARE <= this.used[id]!) {
      this.queued[id] = true;
      this.sparse.push(id);
    }
  }

  /** A new current slab (room for len at least); the one before is dropped when empty,
   *  queued when sparse. */
  private nextCur(len: number): void {
    const old = this.cur;
    this.cur = -1;
    if (old >= 0) {
      if (this.msgs[old] === 0) this.drop(old);
      else this.queueIfSparse(old);
    }
    this.cur = this.newSlab(Math.max(this.nextSize, len));
    this.nextSize = Math.min(SLAB_BYTES, this.nextSize * 2);
  }

  /** Every message is gone. */
  clear(): void {
    this.bufs = [];
    this.live = [];
    this.msgs = [];
    this.used = [];
    this.seqs = [];
    this.nseq = [];
    this.queued = [];
    this.freeIds.length = 0;
    this.sparse = [];
    this.cur = -1;
    this.nextSize = FIRST_SLAB_BYTES;
  }

  /** Moves the live messages of one sparse slab into the current one (none when none is
   *  sparse); the store calls it once per store call. */
  moveOne(cols: SlabColumns): void {
    while (this.sparse.length > 0) {
      const id = this.sparse.pop()!;
      if (!this.queued[id]) continue; // dropped since (and maybe reused)
      this.queued[id] = false;
      if (id === this.cur || this.bufs[id] === null) continue;
      const src = this.bufs[id]!;
      const list = this.seqs[id]!;
      const n = this.nseq[id]!;
      for (let k = 0; k < n; k++) {
        const seq = list[k]!;
        if (!this.owner.isLive(seq) || cols.slabOf(seq) !== id) continue;
        const off = cols.offOf(seq);
        const len = cols.lenOf(seq);
        if (this.cur < 0 || this.used[this.cur]! + len > this.bufs[this.cur]!.length) this.nextCur(len);
        const to = this.cur;
        const at = this.used[to]!;
        src.copy(this.bufs[to]!, at, off, off + len);
        this.used[to] = at + len;
        this.live[id] = this.live[id]! - len;
        this.msgs[id] = this.msgs[id]! - 1;
        this.place(cols, seq, to, at, len);
      }
      this.drop(id);
      return;
    }
  }

  private place(cols: SlabColumns, seq: number, id: number, off: number, len: number): void {
    cols.setLoc(seq, id, off, len);
    this.live[id] = this.live[id]! + len;
    this.msgs[id] = this.msgs[id]! + 1;
    let list = this.seqs[id]!;
    const n = this.nseq[id]!;
    if (n === list.length) {
      const grown = new Float64Array(Math.max(64, n * 2));
      grown.set(list);
      this.seqs[id] = list = grown;
    }
    list[n] = seq;
    this.nseq[id] = n + 1;
  }

  private newSlab(size: number): number {
    const buf = Buffer.allocUnsafeSlow(size);
    const id = this.freeIds.length > 0 ? this.freeIds.pop()! : this.bufs.length;
    this.bufs[id] = buf;
    this.live[id] = 0;
    this.msgs[id] = 0;
    this.used[id] = 0;
    this.seqs[id] = EMPTY_SEQS;
    this.nseq[id] = 0;
    this.queued[id] = false;
    return id;
  }

  private drop(id: number): void {
    this.bufs[id] = null;
    this.seqs[id] = EMPTY_SEQS;
    this.nseq[id] = 0;
    this.live[id] = 0;
    this.msgs[id] = 0;
    this.used[id] = 0;
    this.queued[id] = false;
    if (id === this.cur) this.cur = -1;
    this.freeIds.push(id);
  }
}
