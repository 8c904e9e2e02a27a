// Catch-up of a replica whose store is behind its Raft snapshot (CLUSTERING.md §3.4): the
// stream's snapshots hold state only (stream-group.ts), so a replica that installs one (a
// follower far behind, or a memory store after a restart) asks a caught-up peer for the
// messages it lacks. The request says how far the asker's store goes (T); the answer is the
// responder's store as of its applied Raft index Y (read in one go, so it is exactly the
// state at Y): its first and last sequence, the sequences at or below T it no longer holds,
// and its messages above T as a store-snapshot archive (storage/archive.ts), cut into
// chunks. The asker makes its store match, then applies only the entries after Y.
//
// An asker far behind reads the range in windows (issue 18): a request with a window answers
// only the messages above T up to about that many bytes and says `more`; the asker stores
// them and asks again from its new last sequence. Only the answer without `more` (T is
// within a window of the responder's last) carries the state the asker takes over (first,
// deletions, index); messages of earlier windows that the responder deleted meanwhile are in
// its `deleted` list then. So neither side holds more than a window, and a responder spends
// one window's work per request between its publishes.
//
// Frames (RaftHost.sendApp):
//   1 REQUEST  u32 request id, f64 T (the asker's last sequence), f64 min index (its snapshot's),
//              [f64 window bytes (absent or 0: everything)]
//   2 CHUNK    u32 request id, u32 chunk number, u32 chunks, bytes
// The answer's body: u32 header length, header JSON {index, apply_seq, first, last, last_ts,
// deleted, more}, the archive.
import { ArchiveDecoder, decodeMsgRecord, encodeStoreSnapshot, REC_END, REC_MSG, REC_MSG_TTL, REC_STATE, StoreSnapshotReader } from "../storage/archive.js";
import type { StreamStore } from "../storage/types.js";

export const CU_REQUEST = 1;
export const CU_CHUNK = 2;
/** "I cannot answer: my memory store lost what my snapshot describes in a restart" (a
 *  replica that is itself waiting to catch up), with that snapshot's position:
 *  [CU_LOST][f64 index][f64 applySeq][f64 lastSeq][u64 lastTsNs]. */
export const CU_LOST = 3;

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
const CHUNK_BYTES = 256 * 1024;

export interface CatchupRequest {
  reqId: number;
  storeLast: number;
  minIndex: number;
  /** Bytes of messages per answer at most (about: whole messages); 0 = all. */
  window?: number;
}

export interface CatchupHeader {
  /** The responder's applied Raft index: the state below is the state there. */
  index: number;
  /** Sequences used by the messages of the log up to index (StreamGroup.applySeq). */
  applySeq: number;
  first: number;
  last: number;
  lastTs: number;
  /** Sequences at or below the asker's last that the responder no longer holds (above first). */
  deleted: number[];
  /** A window: the messages go up to `last` only, the rest is asked for next. */
  more: boolean;
}

export function encodeCatchupRequest(r: CatchupRequest): Buffer {
  const b = Buffer.allocUnsafe(29);
  b[0] = CU_REQUEST;
  b.writeUInt32LE(r.reqId >>> 0, 1);
  b.writeDoubleLE(r.storeLast, 5);
  b.writeDoubleLE(r.minIndex, 13);
  b.writeDoubleLE(r.window ?? 0, 21);
  return b;
}

export function decodeCatchupRequest(b: Buffer): CatchupRequest | null {
  if ((b.length !== 21 && b.length !== 29) || b[0] !== CU_REQUEST) return null;
  return { reqId: b.readUInt32LE(1), storeLast: b.readDoubleLE(5), minIndex: b.readDoubleLE(13), window: b.length === 29 ? b.readDoubleLE(21) : 0 };
}

/** The answer to req: the store as it is now (applied up to index), as chunk frames. */
export function buildCatchup(req: CatchupRequest, store: StreamStore, index: number, applySeq: number): Buffer[] {
  const reader = new StoreSnapshotReader(store);
  const st = reader.state;
  const t = req.storeLast;
  const from = Math.max(t + 1, st.firstSeq);
  // The window's end: whole messages until about `window` bytes.
  let to = st.lastSeq;
  const window = req.window ?? 0;
  if (window > 0) {
    let bytes = 0;
    for (let s = from; s <= st.lastSeq; ) {
      const m = reader.nextTransient(s, st.lastSeq);
      if (m === null) break;
      bytes += m.subject.length + (m.hdr?.length ?? 0) + m.data.length + 32;
      if (bytes > window && m.seq > from) {
        to = m.seq - 1;
        break;
      }
      s = m.seq + 1;
    }
  }
  const more = to < st.lastSeq;
  const deleted: number[] = [];
  if (!more && t >= st.firstSeq) for (const d of store.deletedSeqs()) if (d <= t) deleted.push(d);
  const hdr = Buffer.from(JSON.stringify({ index, apply_seq: applySeq, first: st.firstSeq, last: more ? to : st.lastSeq, last_ts: st.lastTsNs, deleted, more }));
  const parts: Buffer[] = [Buffer.allocUnsafe(4), hdr];
  parts[0]!.writeUInt32LE(hdr.length, 0);
  for (const f of encodeStoreSnapshot(reader, from, to)) parts.push(f);
  const body = Buffer.concat(parts);
  const n = Math.max(1, Math.ceil(body.length / CHUNK_BYTES));
  const frames: Buffer[] = [];
  for (let k = 0; k < n; k++) {
    const piece = body.subarray(k * CHUNK_BYTES, Math.min(body.length, (k + 1) * CHUNK_BYTES));
    const f = Buffer.allocUnsafe(13 + piece.length);
    f[0] = CU_CHUNK;
    f.writeUInt32LE(req.reqId >>> 0, 1);
    f.writeUInt32LE(k, 5);
    f.writeUInt32LE(n, 9);
    piece.copy(f, 13);
    frames.push(f);
  }
  return frames;
}

/** Gathers the chunks of one answer (in any order; a chunk seen twice is ignored). */
export class CatchupAssembler {
  private readonly parts: (Buffer | null)[] = [];
  private got = 0;

  constructor(readonly reqId: number) {}

  /** A CHUNK frame; returns the whole body once every chunk is in, else null. */
  push(b: Buffer): Buffer | null {
    if (b.length < 13 || b[0] !== CU_CHUNK || b.readUInt32LE(1) !== this.reqId) return null;
    const k = b.readUInt32LE(5);
    const n = b.readUInt32LE(9);
    if (this.parts.length === 0) for (let i = 0; i < n; i++) this.parts.push(null);
    if (n !== this.parts.length || k >= n || this.parts[k] !== null) return null;
    this.parts[k] = Buffer.from(b.subarray(13));
    this.got++;
    return this.got === n ? Buffer.concat(this.parts as Buffer[]) : null;
  }
}

export function chunkReqId(b: Buffer): number {
  return b.length >= 5 ? b.readUInt32LE(1) : -1;
}

/** Make store (a prefix of the stream's history, as every replica's store is) hold the state
 *  an answer describes; returns its header. A window (`more`) only adds its messages. */
export function installCatchup(store: StreamStore, body: Buffer): CatchupHeader {
  if (body.length < 4) throw new Error("stream catch-up: short answer");
  const hl = body.readUInt32LE(0);
  const j = JSON.parse(body.toString("utf8", 4, 4 + hl)) as Record<string, unknown>;
  const h: CatchupHeader = {
    index: Number(j["index"]),
    applySeq: Number(j["apply_seq"]),
    first: Number(j["first"]),
    last: Number(j["last"]),
    lastTs: Number(j["last_ts"]),
    deleted: (j["deleted"] as number[] | undefined) ?? [],
    more: j["more"] === true,
  };
  const st = store.state();
  const t = st.lastSeq;
  if (h.last < t) throw new Error(`stream catch-up: the answer ends at ${h.last}, below this store's ${t}`);
  if (!h.more) {
    if (h.first > st.firstSeq) store.compact(h.first);
    for (const d of h.deleted) if (d <= t) store.removeMsg(d);
  }
  let ended = false;
  const dec = new ArchiveDecoder((kind, rec) => {
    switch (kind) {
      case REC_STATE:
        return;
      case REC_MSG:
      case REC_MSG_TTL: {
        const m = decodeMsgRecord(rec, kind === REC_MSG_TTL);
        if (m.seq > store.state().lastSeq) store.storeMsgAt(m.seq, m.subject, m.hdr, m.data, m.tsNs, m.ttlSec);
        return;
      }
      case REC_END:
        ended = true;
        return;
      default:
        throw new Error(`stream catch-up: unknown record kind ${kind}`);
    }
  });
  dec.push(body.subarray(4 + hl));
  if (!ended) throw new Error("stream catch-up: truncated answer");
  const last = store.state().lastSeq;
  if (h.last > last && !h.more) store.skipMsgs(last + 1, h.last - last, h.lastTs);
  return h;
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
