// Catch-up of a replica whose store is behind its Raft snapshot (CLUSTERING.md §3.4): the
// stream's snapshots hold state only (stream-group.ts), so a replica that installs one (a
// follower far behind, or a memory store after a restart) asks a caught-up peer for the
// messages it lacks. The request (OPEN) says how far the asker's store goes (T); the
// responder streams its messages above T in DATA chunks of about `chunkBytes`, read from its
// store a chunk at a time, under a credit the asker gives back with an ACK per chunk stored
// (so neither side holds more than the credit, and the responder spends about one chunk's
// work per event between its publishes). When a chunk reaches the responder's last sequence,
// the FINAL frame follows it, built in the same synchronous step: the responder's applied
// Raft index Y, its first and last sequence and the sequences it no longer holds among those
// it sent, i.e. exactly its state at Y. The asker makes its store match it and applies only
// the entries after Y. Messages the responder removed while it streamed are in that list, or
// below its first sequence.
//
// Frames (RaftHost.sendApp):
//   OPEN   [4][u32 request id][f64 T][f64 min index (the asker's snapshot's)][f64 credit bytes]
//   DATA   [5][u32 crc32 of what follows][u32 request id][u32 chunk number][u8 flags][f64 to]
//          then, flags 0: records [f64 seq][f64 ts][u32 ttl s][u16 subject][u32 header or
//          0xffffffff][u32 data][subject][header][data]...; flags 1 (FINAL): [f64 index]
//          [f64 apply seq][f64 first][f64 last][f64 last ts][u32 n][f64 deleted seq]*n;
//          flags 2 (DELETED): [u32 n][f64 deleted seq]*n, more of the FINAL frame's list
//          (a long list goes in pieces of DELETED_PER_FRAME, right before the FINAL frame).
//          `to`: the last sequence the chunk covers.
//   ACK    [6][u32 request id][u32 chunks stored]
//   LOST   [3][f64 index][f64 applySeq][f64 lastSeq][u64 lastTsNs] (below)
import { ArchiveDecoder, decodeMsgRecord, REC_END, REC_MSG, REC_MSG_TTL, REC_STATE } from "../storage/archive.js";
import { crc32 } from "../storage/file/crc32.js";
import type { StoredMsg, StreamStore } from "../storage/types.js";

/** "I cannot answer: my memory store lost what my snapshot describes in a restart" (a
 *  replica that is itself waiting to catch up), with that snapshot's position:
 *  [CU_LOST][f64 index][f64 applySeq][f64 lastSeq][u64 lastTsNs]. */
export const CU_LOST = 3;
export const CU_OPEN = 4;
export const CU_DATA = 5;
export const CU_ACK = 6;

export interface LostState {
  index: number;
  applySeq: number;
  lastSeq: number;
  lastTsNs: number;
}

export function encodeCatchupLost(s: LostState): Buffer {
  const b = Buffer.allocUnsafe(33);
  b[0] = CU_LOST;
  b.writeDoubleLE(s.index, 1);
  b.writeDoubleLE(s.applySeq, 9);
  b.writeDoubleLE(s.lastSeq, 17);
  b.writeBigUInt64LE(BigInt(Math.max(0, Math.trunc(s.lastTsNs))), 25);
  return b;
}

export function decodeCatchupLost(b: Buffer): LostState | null {
  if (b.length !== 33 || b[0] !== CU_LOST) return null;
  return { index: b.readDoubleLE(1), applySeq: b.readDoubleLE(9), lastSeq: b.readDoubleLE(17), lastTsNs: Number(b.readBigUInt64LE(25)) };
}

/** A chunk holds about this many bytes of messages at most (a bigger message goes alone). */
export const MAX_CHUNK_BYTES = 256 * 1024;

/** The chunk size for a credit: a quarter of it (so that several are in flight), at most
 *  MAX_CHUNK_BYTES. */
export function chunkBytesFor(creditBytes: number): number {
  return Math.max(1, Math.min(MAX_CHUNK_BYTES, Math.floor(creditBytes / 4)));
}

export interface CatchupOpen {
  reqId: number;
  /** The asker's last sequence. */
  storeLast: number;
  /** The asker's snapshot index: only a responder that applied this far answers. */
  minIndex: number;
  /** Bytes of chunks the responder may have unacknowledged. */
  creditBytes: number;
}

export interface CatchupHeader {
  /** The responder's applied Raft index: the state below is the state there. */
  index: number;
  /** Sequences used by the messages of the log up to index (StreamGroup.applySeq). */
  applySeq: number;
  first: number;
  last: number;
  lastTs: number;
  /** Sequences the responder no longer holds, among those the asker may hold (above first). */
  deleted: number[];
}

const OPEN_LEN = 29;
const ACK_LEN = 9;
/** type, crc, request id, chunk, flags, to */
const DATA_HDR = 1 + 4 + 4 + 4 + 1 + 8;
const F_FINAL = 1;
const F_DELETED = 2;
/** Deleted sequences per frame (a KV stream may have millions: frames stay well below the
 *  transport's frame bound). */
export const DELETED_PER_FRAME = 65_536;
const REC_FIXED = 8 + 8 + 4 + 2 + 4 + 4;
const NO_HDR = 0xffffffff;
const FINAL_FIXED = 5 * 8 + 4;

export function encodeCatchupOpen(r: CatchupOpen): Buffer {
  const b = Buffer.allocUnsafe(OPEN_LEN);
  b[0] = CU_OPEN;
  b.writeUInt32LE(r.reqId >>> 0, 1);
  b.writeDoubleLE(r.storeLast, 5);
  b.writeDoubleLE(r.minIndex, 13);
  b.writeDoubleLE(r.creditBytes, 21);
  return b;
}

export function decodeCatchupOpen(b: Buffer): CatchupOpen | null {
  if (b.length !== OPEN_LEN || b[0] !== CU_OPEN) return null;
  const r = { reqId: b.readUInt32LE(1), storeLast: b.readDoubleLE(5), minIndex: b.readDoubleLE(13), creditBytes: b.readDoubleLE(21) };
  if (!Number.isSafeInteger(r.storeLast) || r.storeLast < 0 || !(r.creditBytes > 0)) return null;
  return r;
}

export function encodeCatchupAck(reqId: number, chunks: number): Buffer {
  const b = Buffer.allocUnsafe(ACK_LEN);
  b[0] = CU_ACK;
  b.writeUInt32LE(reqId >>> 0, 1);
  b.writeUInt32LE(chunks >>> 0, 5);
  return b;
}

export function decodeCatchupAck(b: Buffer): { reqId: number; chunks: number } | null {
  if (b.length !== ACK_LEN || b[0] !== CU_ACK) return null;
  return { reqId: b.readUInt32LE(1), chunks: b.readUInt32LE(5) };
}

/** The request id of a DATA frame (-1: not one). */
export function dataReqId(b: Buffer): number {
  return b.length >= DATA_HDR && b[0] === CU_DATA ? b.readUInt32LE(5) : -1;
}

/** The DATA header at `at` (the frame's data runs to end); returns the frame, [0, end). */
function sealData(b: Buffer, at: number, end: number, reqId: number, chunk: number, flags: number, to: number): Buffer {
  b[at] = CU_DATA;
  b.writeUInt32LE(reqId >>> 0, at + 5);
  b.writeUInt32LE(chunk >>> 0, at + 9);
  b[at + 13] = flags;
  b.writeDoubleLE(to, at + 14);
  b.writeUInt32LE(crc32(b, at + 5, end) >>> 0, at + 1);
  return b.subarray(0, end);
}

/**
 * The responder's side of one catch-up: reads the store from the asker's last sequence on,
 * a chunk per build(). The store may change between builds (publishes, limits, deletes); the
 * FINAL frame, built with the chunk that reaches the store's last sequence, says how it ended.
 */
export class CatchupSender {
  /** The next sequence to read. */
  private next: number;
  /** Chunk frames built (the next chunk's number). */
  chunks = 0;
  /** The highest sequence sent in a data chunk. */
  private maxSent: number;
  /** The FINAL frame was built. */
  done = false;
  private ttls: Map<number, number> | null = null;
  private ttlTo = 0;
  private readonly load: (filter: string, start: number) => StoredMsg | null;
  private readonly bufs: Buffer[] = [];
  private nextBuf = 0;

  constructor(
    readonly req: CatchupOpen,
    private readonly store: StreamStore,
    private readonly chunkBytes: number,
    /** Bytes left free at the start of every frame (the transport's header, written there by
     *  the caller: no copy to prepend it). */
    private readonly prefix = 0,
    /** Chunk buffers kept and reused (0: a new one per chunk, which the caller may keep). With
     *  n, the frames of up to n builds after a reuse() are distinct; the caller sends them
     *  before the next reuse() (the transport copies what it queues by the end of the job). */
    private readonly pool = 0,
  ) {
    this.next = req.storeLast + 1;
    this.maxSent = req.storeLast;
    this.load = store.loadNextMsgTransient !== undefined ? store.loadNextMsgTransient.bind(store) : store.loadNextMsg.bind(store);
  }

  /** The pooled buffers may be written again (their frames went out). */
  reuse(): void {
    this.nextBuf = 0;
  }

  private chunkBuffer(size: number): Buffer {
    if (size > this.prefix + DATA_HDR + this.chunkBytes || this.nextBuf >= this.pool) return Buffer.allocUnsafe(size);
    let b = this.bufs[this.nextBuf];
    if (b === undefined) this.bufs.push((b = Buffer.allocUnsafe(this.prefix + DATA_HDR + this.chunkBytes)));
    this.nextBuf++;
    return b;
  }

  /** The next chunk (none when nothing is left), and the FINAL frame after it when it reached
   *  the store's end; index and applySeq: the responder's applied position now. */
  build(index: number, applySeq: number, out: Buffer[]): void {
    if (this.done) return;
    const store = this.store;
    const st = store.state();
    const last = st.lastSeq;
    let s = Math.max(this.next, st.firstSeq);
    const at = this.prefix;
    let buf = this.chunkBuffer(at + DATA_HDR + this.chunkBytes);
    let p = at + DATA_HDR;
    let n = 0;
    let end = false;
    for (;;) {
      if (s > last) {
        end = true;
        break;
      }
      const m = this.load("", s);
      if (m === null || m.seq > last) {
        end = true;
        break;
      }
      const sl = Buffer.byteLength(m.subject);
      const hl = m.hdr === null ? 0 : m.hdr.length;
      const need = REC_FIXED + sl + hl + m.data.length;
      if (p + need > buf.length) {
        if (n > 0) break;
        buf = Buffer.allocUnsafe(at + DATA_HDR + need);
      }
      if (m.seq > this.ttlTo) {
        // TTLs of what is ahead, one pass over the store's TTL index (not one per chunk).
        this.ttls = store.msgTtls(m.seq, last);
        this.ttlTo = last;
      }
      buf.writeDoubleLE(m.seq, p);
      buf.writeDoubleLE(m.tsNs, p + 8);
      buf.writeUInt32LE((this.ttls?.get(m.seq) ?? 0) >>> 0, p + 16);
      buf.writeUInt16LE(sl, p + 20);
      buf.writeUInt32LE(m.hdr === null ? NO_HDR : hl, p + 22);
      buf.writeUInt32LE(m.data.length, p + 26);
      p += REC_FIXED;
      p += buf.write(m.subject, p, "utf8");
      if (m.hdr !== null) p += m.hdr.copy(buf, p);
      p += m.data.copy(buf, p);
      n++;
      this.maxSent = m.seq;
      s = m.seq + 1;
    }
    const to = end ? last : s - 1;
    if (n > 0) out.push(sealData(buf, at, p, this.req.reqId, this.chunks++, 0, to));
    this.next = to + 1;
    if (!end) return;
    // The store's state now: the messages sent that it no longer holds, its range, the
    // applied position it is the state of.
    let deleted: number[] = [];
    for (const d of store.deletedSeqs()) if (d <= this.maxSent) deleted.push(d);
    while (deleted.length > DELETED_PER_FRAME) {
      const piece = deleted.slice(0, DELETED_PER_FRAME);
      deleted = deleted.slice(DELETED_PER_FRAME);
      const d = Buffer.allocUnsafe(at + DATA_HDR + 4 + 8 * piece.length);
      let r = d.writeUInt32LE(piece.length, at + DATA_HDR);
      for (const x of piece) r = d.writeDoubleLE(x, r);
      out.push(sealData(d, at, r, this.req.reqId, this.chunks++, F_DELETED, last));
    }
    const f = Buffer.allocUnsafe(at + DATA_HDR + FINAL_FIXED + 8 * deleted.length);
    let q = at + DATA_HDR;
    q = f.writeDoubleLE(index, q);
    q = f.writeDoubleLE(applySeq, q);
    q = f.writeDoubleLE(st.firstSeq, q);
    q = f.writeDoubleLE(last, q);
    q = f.writeDoubleLE(st.lastTsNs, q);
    q = f.writeUInt32LE(deleted.length, q);
    for (const d of deleted) q = f.writeDoubleLE(d, q);
    out.push(sealData(f, at, q, this.req.reqId, this.chunks++, F_FINAL, last));
    this.done = true;
  }
}

/**
 * The asker's side of one catch-up: applies the chunks to its store in order (a chunk that
 * comes early is kept until its turn; one seen before is ignored). A store that is a prefix
 * of the stream's history (as every replica's is) ends at the responder's state.
 */
export class CatchupReceiver {
  /** Chunks applied (the next one's number). */
  applied = 0;
  private readonly early = new Map<number, Buffer>();
  private last: number;
  /** Data chunks applied (tests, stats). */
  dataChunks = 0;
  /** Deleted sequences of the DELETED frames so far (the FINAL frame adds its own). */
  private readonly deleted: number[] = [];

  /** Chunks are kept while an earlier one is missing. */
  get waiting(): boolean {
    return this.early.size > 0;
  }

  constructor(
    readonly reqId: number,
    private readonly store: StreamStore,
    /** Chunks kept while an earlier one is missing, at most. */
    private readonly maxEarly = 256,
  ) {
    this.last = store.state().lastSeq;
  }

  /** A DATA frame of this request (a view valid during the call): the header once the FINAL
   *  frame is applied, else null. Throws on a corrupt frame or an answer that does not fit. */
  push(b: Buffer): CatchupHeader | null {
    if (dataReqId(b) !== this.reqId) return null;
    const k = b.readUInt32LE(9);
    if (k < this.applied) return null;
    if (k > this.applied) {
      if (this.early.size < this.maxEarly && !this.early.has(k)) this.early.set(k, Buffer.from(b));
      return null;
    }
    let h = this.applyOne(b);
    while (h === null) {
      const nb = this.early.get(this.applied);
      if (nb === undefined) break;
      this.early.delete(this.applied);
      h = this.applyOne(nb);
    }
    return h;
  }

  private applyOne(b: Buffer): CatchupHeader | null {
    if (crc32(b, 5, b.length) >>> 0 !== b.readUInt32LE(1)) throw new Error("stream catch-up: chunk checksum mismatch");
    this.applied++;
    if ((b[13]! & F_FINAL) !== 0) return this.applyFinal(b);
    if ((b[13]! & F_DELETED) !== 0) {
      const n = b.length >= DATA_HDR + 4 ? b.readUInt32LE(DATA_HDR) : -1;
      if (n < 0 || b.length !== DATA_HDR + 4 + 8 * n) throw new Error("stream catch-up: corrupt deleted frame");
      for (let i = 0; i < n; i++) this.deleted.push(b.readDoubleLE(DATA_HDR + 4 + 8 * i));
      return null;
    }
    this.dataChunks++;
    const store = this.store;
    for (let p = DATA_HDR; p < b.length; ) {
      if (p + REC_FIXED > b.length) throw new Error("stream catch-up: corrupt chunk");
      const seq = b.readDoubleLE(p);
      const ts = b.readDoubleLE(p + 8);
      const ttl = b.readUInt32LE(p + 16);
      const sl = b.readUInt16LE(p + 20);
      const hlRaw = b.readUInt32LE(p + 22);
      const dl = b.readUInt32LE(p + 26);
      const hl = hlRaw === NO_HDR ? 0 : hlRaw;
      const s0 = p + REC_FIXED;
      const end = s0 + sl + hl + dl;
      if (end > b.length) throw new Error("stream catch-up: corrupt chunk");
      if (seq > this.last) {
        // Views: both stores copy what they keep.
        store.storeMsgAt(seq, b.toString("utf8", s0, s0 + sl), hlRaw === NO_HDR ? null : b.subarray(s0 + sl, s0 + sl + hl), b.subarray(s0 + sl + hl, end), ts, ttl);
        this.last = seq;
      }
      p = end;
    }
    return null;
  }

  private applyFinal(b: Buffer): CatchupHeader {
    if (b.length < DATA_HDR + FINAL_FIXED) throw new Error("stream catch-up: short final frame");
    let q = DATA_HDR;
    const h: CatchupHeader = { index: b.readDoubleLE(q), applySeq: b.readDoubleLE(q + 8), first: b.readDoubleLE(q + 16), last: b.readDoubleLE(q + 24), lastTs: b.readDoubleLE(q + 32), deleted: this.deleted };
    const n = b.readUInt32LE(q + 40);
    q += FINAL_FIXED;
    if (b.length !== q + 8 * n) throw new Error("stream catch-up: corrupt final frame");
    for (let i = 0; i < n; i++) h.deleted.push(b.readDoubleLE(q + 8 * i));
    const store = this.store;
    const st = store.state();
    if (h.last < st.lastSeq) throw new Error(`stream catch-up: the answer ends at ${h.last}, below this store's ${st.lastSeq}`);
    if (h.first > st.firstSeq) store.compact(h.first);
    for (const d of h.deleted) if (d >= h.first && d <= st.lastSeq) store.removeMsg(d);
    const last = store.state().lastSeq;
    if (h.last > last) store.skipMsgs(last + 1, h.last - last, h.lastTs);
    this.last = h.last;
    return h;
  }
}

/**
 * Make `store` hold what a stream snapshot archive holds, changing as little as it can: the
 * messages below the snapshot's first sequence go, messages the store holds that the snapshot
 * does not (up to its last sequence) are removed, and the snapshot's messages past the store's
 * last sequence are stored at their sequences; then the last sequence moves up to the
 * snapshot's. A store already past the snapshot keeps what it holds beyond it. `own`: the
 * snapshot is this replica's own (a restart); a store that matches its state is trusted.
 */
export function installStoreSnapshot(store: StreamStore, archive: Buffer, own: boolean): void {
  const before = store.state();
  let storeLast = before.lastSeq;
  let cur = before.firstSeq;
  let snapLast = 0;
  let snapLastTs = 0;
  let trust = false;
  let ended = false;
  const dropUntil = (limit: number): void => {
    // Store messages in [cur, limit) that the snapshot does not hold.
    for (let m = store.loadNextMsg("", cur); m !== null && m.seq < limit; m = store.loadNextMsg("", m.seq + 1)) store.removeMsg(m.seq);
    if (limit > cur) cur = limit;
  };
  const dec = new ArchiveDecoder((kind, body) => {
    switch (kind) {
      case REC_STATE: {
        const s = JSON.parse(body.toString("utf8")) as Record<string, number>;
        const first = Number(s["first_seq"] ?? 0);
        snapLast = Number(s["last_seq"] ?? 0);
        snapLastTs = Number(s["last_ts"] ?? 0);
        const msgs = Number(s["msgs"] ?? 0);
        trust = own && (storeLast > snapLast || (storeLast === snapLast && before.firstSeq === first && before.msgs === msgs));
        if (trust) return;
        if (first > before.firstSeq && before.msgs > 0 || first > storeLast + 1) {
          store.compact(first);
          storeLast = store.state().lastSeq;
          cur = first;
        }
        return;
      }
      case REC_MSG:
      case REC_MSG_TTL: {
        if (trust) return;
        const m = decodeMsgRecord(body, kind === REC_MSG_TTL);
        if (m.seq <= storeLast) {
          dropUntil(m.seq);
          cur = m.seq + 1;
          return;
        }
        if (cur <= storeLast) dropUntil(storeLast + 1);
        store.storeMsgAt(m.seq, m.subject, m.hdr, m.data, m.tsNs, m.ttlSec);
        storeLast = m.seq;
        cur = m.seq + 1;
        return;
      }
      case REC_END:
        ended = true;
        if (trust) return;
        dropUntil(Math.min(storeLast, snapLast) + 1);
        if (snapLast > storeLast) store.skipMsgs(storeLast + 1, snapLast - storeLast, snapLastTs);
        return;
      default:
        throw new Error(`stream snapshot: unknown record kind ${kind}`);
    }
  });
  dec.push(archive);
  if (!ended) throw new Error("stream snapshot: truncated archive");
}
