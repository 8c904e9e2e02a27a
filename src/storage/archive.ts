// The snapshot archive codec, and store snapshots built on it: what a stream snapshot
// ($JS.API.STREAM.SNAPSHOT / RESTORE, jetstream/snapshot.ts) sends over the network and what a
// replica far behind installs (state plus the messages, streamed by sequence range).
//
// Archive: "TSNSNAP1", then frames [u32 compressed length][u32 raw length][u32 crc32(raw)]
// [deflate-raw bytes]. A frame holds whole records [u8 kind][u32 length][body]:
//   1 META      JSON: a stream snapshot's config, created, state
//   2 MSG       f64 seq, f64 ts, u16 subject length, u32 header length or 0xffffffff for none,
//               u32 data length, subject, header, data
//   3 CONSUMER  JSON: name, config, created, state
//   4 END       JSON: counts ({msgs, last_seq, ...}); a missing END means a truncated archive
//   5 STATE     JSON: a store snapshot's state header (StoreSnapshotState, snake_case)
//   6 MSG_TTL   MSG followed by u32 ttl seconds
// A stream snapshot holds META, MSG, CONSUMER, END (its TTLs come back from the Nats-TTL
// header); a store snapshot holds STATE, MSG or MSG_TTL, END.
//
// Store snapshots are values: a StoreSnapshotReader gives the state header and the live
// messages of a sequence range, one SnapshotMsg at a time (seq, time, subject, header, data,
// TTL); a StoreSnapshotWriter puts them into an empty store with storeMsgAt and ends with
// skipMsgs up to the header's last sequence, so the copy has the same sequences, times,
// subjects, headers, payloads, deleted sequences and TTLs. Sequences between two messages
// are deleted ones; nothing per deleted sequence is carried.
import { constants as zc, deflateRaw, deflateRawSync, inflateRaw, inflateRawSync } from "node:zlib";
import { SystemClock, type Clock } from "../runtime/clock.js";
import { systemScheduler, type Scheduler } from "../runtime/sched.js";
import { crc32 } from "./file/crc32.js";
import type { StreamStore } from "./types.js";

export const ARCHIVE_MAGIC = Buffer.from("TSNSNAP1", "latin1");
export const FRAME_HDR = 12;
/** Raw bytes a writer puts into one frame before it starts the next. */
export const FRAME_RAW_TARGET = 256 * 1024;
export const REC_META = 1;
export const REC_MSG = 2;
export const REC_CONSUMER = 3;
export const REC_END = 4;
export const REC_STATE = 5;
export const REC_MSG_TTL = 6;
const NO_HDR = 0xffffffff;
const MSG_FIXED = 8 + 8 + 2 + 4 + 4;

/** A malformed or out-of-order archive. */
export class ArchiveError extends Error {}

/** One message of a store snapshot. */
export interface SnapshotMsg {
  seq: number;
  tsNs: number;
  subject: string;
  hdr: Buffer | null;
  data: Buffer;
  /** Per-message TTL in seconds, 0 for none. */
  ttlSec: number;
}

/** The state header of a store snapshot: what the messages alone do not say. */
export interface StoreSnapshotState {
  firstSeq: number;
  lastSeq: number;
  /** Time of the last sequence (of a message, or of the skip that used it). */
  lastTsNs: number;
  /** Counts when the snapshot began (messages removed while it streams are left out). */
  msgs: number;
  bytes: number;
  numDeleted: number;
}

// ---------------------------------------------------------------- records and frames

export function encodeRecord(kind: number, body: Buffer): Buffer {
  const b = Buffer.allocUnsafe(5 + body.length);
  b[0] = kind;
  b.writeUInt32LE(body.length, 1);
  body.copy(b, 5);
  return b;
}

export function encodeJsonRecord(kind: number, obj: unknown): Buffer {
  return encodeRecord(kind, Buffer.from(JSON.stringify(obj)));
}

/** A MSG record, or MSG_TTL when ttlSec > 0 and withTtl. */
export function encodeMsgRecord(seq: number, tsNs: number, subject: string, hdr: Buffer | null, data: Buffer, ttlSec = 0, withTtl = false): Buffer {
  const ttl = withTtl && ttlSec > 0;
  const sl = Buffer.byteLength(subject);
  const hl = hdr === null ? 0 : hdr.length;
  const bodyLen = MSG_FIXED + sl + hl + data.length + (ttl ? 4 : 0);
  const b = Buffer.allocUnsafe(5 + bodyLen);
  b[0] = ttl ? REC_MSG_TTL : REC_MSG;
  b.writeUInt32LE(bodyLen, 1);
  let p = 5;
  b.writeDoubleLE(seq, p);
  p += 8;
  b.writeDoubleLE(tsNs, p);
  p += 8;
  b.writeUInt16LE(sl, p);
  p += 2;
  b.writeUInt32LE(hdr === null ? NO_HDR : hl, p);
  p += 4;
  b.writeUInt32LE(data.length, p);
  p += 4;
  p += b.write(subject, p, "utf8");
  if (hdr !== null) p += hdr.copy(b, p);
  p += data.copy(b, p);
  if (ttl) b.writeUInt32LE(ttlSec >>> 0, p);
  return b;
}

/** The body of a MSG (or, withTtl, MSG_TTL) record; header and data are copies. */
export function decodeMsgRecord(b: Buffer, withTtl: boolean): SnapshotMsg {
  if (b.length < MSG_FIXED + (withTtl ? 4 : 0)) throw new ArchiveError("corrupt snapshot message record");
  let p = 0;
  const seq = b.readDoubleLE(p);
  p += 8;
  const tsNs = b.readDoubleLE(p);
  p += 8;
  const sl = b.readUInt16LE(p);
  p += 2;
  const hlRaw = b.readUInt32LE(p);
  p += 4;
  const dl = b.readUInt32LE(p);
  p += 4;
  const hl = hlRaw === NO_HDR ? 0 : hlRaw;
  if (p + sl + hl + dl + (withTtl ? 4 : 0) !== b.length) throw new ArchiveError("corrupt snapshot message record");
  const subject = b.toString("utf8", p, p + sl);
  p += sl;
  const hdr = hlRaw === NO_HDR ? null : Buffer.from(b.subarray(p, p + hl));
  p += hl;
  const data = Buffer.from(b.subarray(p, p + dl));
  p += dl;
  const ttlSec = withTtl ? b.readUInt32LE(p) : 0;
  return { seq, tsNs, subject, hdr, data, ttlSec };
}

/** One frame around raw (whole records). */
export function encodeFrame(raw: Buffer): Buffer {
  const z = deflateRawSync(raw, { level: zc.Z_BEST_SPEED });
  const f = Buffer.allocUnsafe(FRAME_HDR + z.length);
  f.writeUInt32LE(z.length, 0);
  f.writeUInt32LE(raw.length, 4);
  f.writeUInt32LE(crc32(raw, 0, raw.length) >>> 0, 8);
  z.copy(f, FRAME_HDR);
  return f;
}

/** Cuts an archive, fed in chunks of any size, into its frames: checks the magic, hands out
 *  each whole frame (still compressed) in order. */
class FrameSplitter {
  private buf: Buffer = Buffer.alloc(0);
  private magicSeen = false;

  /** Append a chunk; returns the frames it completed. */
  push(chunk: Buffer): Array<{ z: Buffer; rawLen: number; crc: number }> {
    this.buf = this.buf.length === 0 ? Buffer.from(chunk) : Buffer.concat([this.buf, chunk]);
    const out: Array<{ z: Buffer; rawLen: number; crc: number }> = [];
    if (!this.magicSeen) {
      if (this.buf.length < ARCHIVE_MAGIC.length) return out;
      if (!this.buf.subarray(0, ARCHIVE_MAGIC.length).equals(ARCHIVE_MAGIC)) throw new ArchiveError("not a tsnats snapshot");
      this.magicSeen = true;
      this.buf = this.buf.subarray(ARCHIVE_MAGIC.length);
    }
    let p = 0;
    while (this.buf.length - p >= FRAME_HDR) {
      const zl = this.buf.readUInt32LE(p);
      if (this.buf.length - p < FRAME_HDR + zl) break;
      out.push({ z: this.buf.subarray(p + FRAME_HDR, p + FRAME_HDR + zl), rawLen: this.buf.readUInt32LE(p + 4), crc: this.buf.readUInt32LE(p + 8) });
      p += FRAME_HDR + zl;
    }
    // the frames handed out keep views of the old buffer; what is left is copied
    if (p > 0) this.buf = Buffer.from(this.buf.subarray(p));
    return out;
  }
}

function checkFrame(raw: Buffer, rawLen: number, crc: number): void {
  if (raw.length !== rawLen || crc32(raw, 0, raw.length) >>> 0 !== crc) throw new ArchiveError("corrupt snapshot frame: checksum mismatch");
}

/** The records of one frame's raw bytes, from offset p: [kind, body, next offset]. */
function recordAt(raw: Buffer, p: number): [number, Buffer, number] {
  if (raw.length - p < 5) throw new ArchiveError("corrupt snapshot record");
  const kind = raw[p]!;
  const len = raw.readUInt32LE(p + 1);
  const body = raw.subarray(p + 5, p + 5 + len);
  if (body.length !== len) throw new ArchiveError("corrupt snapshot record");
  return [kind, body, p + 5 + len];
}

/** Reads an archive from chunks of any size: checks the magic and each frame's checksum and
 *  hands every record to onRecord in order. Throws ArchiveError on anything malformed, and on
 *  a frame after the END record. */
export class ArchiveDecoder {
  private readonly frames = new FrameSplitter();
  private ended = false;

  constructor(private readonly onRecord: (kind: number, body: Buffer) => void) {}

  /** Whether the END record has been read. */
  get complete(): boolean {
    return this.ended;
  }

  push(chunk: Buffer): void {
    for (const f of this.frames.push(chunk)) {
      if (this.ended) throw new ArchiveError("data after the end of the snapshot");
      let raw: Buffer;
      try {
        raw = inflateRawSync(f.z);
      } catch (e) {
        throw new ArchiveError(`corrupt snapshot frame: ${(e as Error).message}`);
      }
      checkFrame(raw, f.rawLen, f.crc);
      for (let p = 0; p < raw.length; ) {
        const [kind, body, next] = recordAt(raw, p);
        p = next;
        if (kind === REC_END) this.ended = true;
        this.onRecord(kind, body);
      }
    }
  }
}

// ---------------------------------------------------------------- store snapshots

function stateToJson(s: StoreSnapshotState): Record<string, number> {
  return { first_seq: s.firstSeq, last_seq: s.lastSeq, last_ts: s.lastTsNs, msgs: s.msgs, bytes: s.bytes, num_deleted: s.numDeleted };
}

function stateFromJson(o: Record<string, unknown>): StoreSnapshotState {
  const n = (k: string): number => {
    const v = Number(o[k] ?? 0);
    if (!Number.isFinite(v) || v < 0) throw new ArchiveError(`corrupt snapshot state: ${k}`);
    return v;
  };
  return { firstSeq: n("first_seq"), lastSeq: n("last_seq"), lastTsNs: n("last_ts"), msgs: n("msgs"), bytes: n("bytes"), numDeleted: n("num_deleted") };
}

/** The messages of a store as they were when the reader was made: the state header then, and
 *  the live messages up to that last sequence (read as they are asked for: one removed in the
 *  meantime is left out; one stored since is beyond the range). */
export class StoreSnapshotReader {
  readonly state: StoreSnapshotState;
  private ttls: Map<number, number> | null = null;

  /** withTtl: read the messages' TTLs (one pass over the store's TTL index, at the first message). */
  constructor(
    private readonly store: StreamStore,
    private readonly withTtl = true,
  ) {
    const s = store.state();
    this.state = { firstSeq: s.firstSeq, lastSeq: s.lastSeq, lastTsNs: s.lastTsNs, msgs: s.msgs, bytes: s.bytes, numDeleted: s.numDeleted };
  }

  /** The first live message with seq in [from, to] (to: at most the header's lastSeq), or null. */
  next(from: number, to = this.state.lastSeq): SnapshotMsg | null {
    return this.read(from, to, false);
  }

  /** next() for a caller that encodes the message at once: header and data may be views of the
   *  store's read cache (loadNextMsgTransient) instead of copies. */
  nextTransient(from: number, to = this.state.lastSeq): SnapshotMsg | null {
    return this.read(from, to, true);
  }

  private read(from: number, to: number, transient: boolean): SnapshotMsg | null {
    const end = Math.min(to, this.state.lastSeq);
    if (from > end) return null;
    const m = transient && this.store.loadNextMsgTransient !== undefined ? this.store.loadNextMsgTransient("", from) : this.store.loadNextMsg("", from);
    if (m === null || m.seq > end) return null;
    let ttlSec = 0;
    if (this.withTtl) {
      this.ttls ??= this.store.msgTtls(this.state.firstSeq, this.state.lastSeq);
      ttlSec = this.ttls.get(m.seq) ?? 0;
    }
    return { seq: m.seq, tsNs: m.tsNs, subject: m.subject, hdr: m.hdr, data: m.data, ttlSec };
  }

  /** The live messages of [from, to], in sequence order. */
  *range(from = this.state.firstSeq, to = this.state.lastSeq): Generator<SnapshotMsg> {
    for (let s = from; ; ) {
      const m = this.next(s, to);
      if (m === null) return;
      yield m;
      s = m.seq + 1;
    }
  }
}

/** Rebuilds a store snapshot in a store that holds nothing yet (give it no limits: a limit
 *  would discard what the original kept). begin, put per message in sequence order, finish. */
export class StoreSnapshotWriter {
  private state: StoreSnapshotState | null = null;
  private msgs = 0;
  private last: number; // the store's last sequence (kept here: state() per message costs)

  constructor(private readonly store: StreamStore) {
    this.last = store.state().lastSeq;
  }

  /** Optional: the header, so that finish() needs no arguments. */
  begin(state: StoreSnapshotState): void {
    this.state = state;
  }

  get count(): number {
    return this.msgs;
  }

  put(m: SnapshotMsg): void {
    if (!Number.isSafeInteger(m.seq) || m.seq < 1 || m.seq <= this.last) throw new ArchiveError(`snapshot sequence ${m.seq} out of order`);
    if (this.state !== null && m.seq > this.state.lastSeq) throw new ArchiveError(`snapshot sequence ${m.seq} is past the last sequence ${this.state.lastSeq}`);
    this.store.storeMsgAt(m.seq, m.subject, m.hdr, m.data, m.tsNs, m.ttlSec);
    this.last = m.seq;
    this.msgs++;
  }

  /** Use up the sequences after the last message up to lastSeq (time lastTsNs); by default
   *  those of the header given to begin. */
  finish(lastSeq = this.state?.lastSeq ?? 0, lastTsNs = this.state?.lastTsNs ?? 0): void {
    const s = this.store.state();
    if (lastSeq < s.lastSeq) throw new ArchiveError(`snapshot last sequence ${lastSeq} is below its messages (${s.lastSeq})`);
    if (lastSeq > s.lastSeq) this.store.skipMsgs(s.lastSeq + 1, lastSeq - s.lastSeq, lastTsNs);
    // an emptied store says first = last + 1 (a purge of nothing: 1 and 0); keep that
    const first = this.state?.firstSeq ?? 0;
    if (first === lastSeq + 1 && this.store.state().firstSeq < first) this.store.compact(first);
    this.last = lastSeq;
  }
}

/** The archive of a store snapshot, frame by frame (the magic first): STATE, the messages of
 *  [from, to] (default: all), END. */
export function* encodeStoreSnapshot(reader: StoreSnapshotReader, from = reader.state.firstSeq, to = reader.state.lastSeq): Generator<Buffer> {
  yield ARCHIVE_MAGIC;
  const recs: Buffer[] = [encodeJsonRecord(REC_STATE, stateToJson(reader.state))];
  let raw = recs[0]!.length;
  let msgs = 0;
  for (let s = from; ; ) {
    const m = reader.nextTransient(s, to);
    if (m === null) break;
    s = m.seq + 1;
    const r = encodeMsgRecord(m.seq, m.tsNs, m.subject, m.hdr, m.data, m.ttlSec, true);
    recs.push(r);
    raw += r.length;
    msgs++;
    if (raw >= FRAME_RAW_TARGET) {
      yield encodeFrame(Buffer.concat(recs));
      recs.length = 0;
      raw = 0;
    }
  }
  recs.push(encodeJsonRecord(REC_END, { msgs, last_seq: reader.state.lastSeq }));
  yield encodeFrame(Buffer.concat(recs));
}

/** The records of a store snapshot applied to a store through a StoreSnapshotWriter: STATE
 *  first, then MSG / MSG_TTL in order, END last. */
class StoreRecordApplier {
  readonly writer: StoreSnapshotWriter;
  header: StoreSnapshotState | null = null;
  ended = false;

  constructor(store: StreamStore) {
    this.writer = new StoreSnapshotWriter(store);
  }

  record(kind: number, body: Buffer): void {
    if (kind !== REC_STATE && this.header === null) throw new ArchiveError("snapshot does not start with its state");
    switch (kind) {
      case REC_STATE:
        if (this.header !== null) throw new ArchiveError("snapshot has two states");
        this.header = stateFromJson(JSON.parse(body.toString("utf8")) as Record<string, unknown>);
        this.writer.begin(this.header);
        break;
      case REC_MSG:
      case REC_MSG_TTL:
        this.writer.put(decodeMsgRecord(body, kind === REC_MSG_TTL));
        break;
      case REC_END:
        this.writer.finish();
        this.ended = true;
        break;
      default:
        throw new ArchiveError(`unknown snapshot record kind ${kind}`);
    }
  }
}

/** Restores a store snapshot archive, fed in chunks of any size, into an empty store. */
export class StoreSnapshotDecoder {
  private readonly apply: StoreRecordApplier;
  private readonly dec: ArchiveDecoder;

  constructor(store: StreamStore) {
    this.apply = new StoreRecordApplier(store);
    this.dec = new ArchiveDecoder((kind, body) => this.apply.record(kind, body));
  }

  get state(): StoreSnapshotState | null {
    return this.apply.header;
  }

  push(chunk: Buffer): void {
    this.dec.push(chunk);
  }

  /** The archive has ended: throws if its END record was never read. */
  end(): void {
    if (!this.dec.complete) throw new ArchiveError("snapshot is truncated");
  }
}

// ---------------------------------------------------------------- sliced across turns
//
// The same archive, written and restored a slice at a time so that a big store (a 1 GB
// snapshot) never holds the event loop for long: messages are read and encoded, or decoded
// and stored, for at most turnBudgetMs per turn before the next turn goes on; frames are
// deflated and inflated on the thread pool.

/** How a sliced snapshot or restore shares the event loop. */
export interface SliceOptions {
  /** Work done per turn before yielding (default 4 ms). */
  turnBudgetMs?: number;
  /** Monotonic time (monoMs) for the budget. */
  clock?: Clock;
  /** Where the next slice runs (nextTurn). */
  sched?: Scheduler;
}

export const DEFAULT_TURN_BUDGET_MS = 4;
/** Messages between two looks at the clock. */
const CLOCK_EVERY = 32;

/** The time budget of one turn; `spent()` is true once it is used up. */
class TurnBudget {
  private readonly clock: Clock;
  private readonly sched: Scheduler;
  private readonly budgetMs: number;
  private deadline: number;
  private n = 0;
  /** Turns started (the first one included). */
  turns = 1;
  /** The longest run of work between two yields (ms, by the clock: it includes any time the
   *  process was not running). */
  maxSliceMs = 0;

  constructor(opts: SliceOptions) {
    this.clock = opts.clock ?? new SystemClock();
    this.sched = opts.sched ?? systemScheduler;
    this.budgetMs = opts.turnBudgetMs ?? DEFAULT_TURN_BUDGET_MS;
    this.deadline = this.clock.monoMs() + this.budgetMs;
  }

  spent(): boolean {
    if (++this.n < CLOCK_EVERY) return false;
    this.n = 0;
    return this.clock.monoMs() >= this.deadline;
  }

  /** Let the rest of the loop run; the budget starts again in the next turn. */
  async yieldTurn(): Promise<void> {
    this.endSlice();
    await new Promise<void>((res) => this.sched.nextTurn(res));
    this.restart();
  }

  /** The work of this turn ends here (an await follows). */
  endSlice(): void {
    const ms = this.clock.monoMs() - (this.deadline - this.budgetMs);
    if (ms > this.maxSliceMs) this.maxSliceMs = ms;
  }

  /** A new budget after an await that already gave the loop away. */
  restart(): void {
    this.turns++;
    this.n = 0;
    this.deadline = this.clock.monoMs() + this.budgetMs;
  }
}

/** encodeFrame with the deflate on the thread pool. */
export function encodeFrameAsync(raw: Buffer): Promise<Buffer> {
  return new Promise((res, rej) => {
    deflateRaw(raw, { level: zc.Z_BEST_SPEED }, (err, z) => {
      if (err !== null) return rej(err);
      const f = Buffer.allocUnsafe(FRAME_HDR + z.length);
      f.writeUInt32LE(z.length, 0);
      f.writeUInt32LE(raw.length, 4);
      f.writeUInt32LE(crc32(raw, 0, raw.length) >>> 0, 8);
      z.copy(f, FRAME_HDR);
      res(f);
    });
  });
}

function inflateAsync(z: Buffer): Promise<Buffer> {
  return new Promise((res, rej) => {
    inflateRaw(z, (err, raw) => {
      if (err !== null) rej(new ArchiveError(`corrupt snapshot frame: ${err.message}`));
      else res(raw);
    });
  });
}

export interface SnapshotStreamed {
  msgs: number;
  frames: number;
  /** Event-loop turns the snapshot was spread over. */
  turns: number;
  /** The longest slice of work in one turn (ms). */
  maxSliceMs: number;
}

/** The archive of encodeStoreSnapshot handed to sink frame by frame (the magic first), read a
 *  slice per turn. sink may return a promise: the next frame waits for it (backpressure).
 *  Messages removed while it runs are left out, as with the reader. */
export async function streamStoreSnapshot(
  reader: StoreSnapshotReader,
  sink: (frame: Buffer) => void | Promise<void>,
  from = reader.state.firstSeq,
  to = reader.state.lastSeq,
  opts: SliceOptions = {},
): Promise<SnapshotStreamed> {
  const budget = new TurnBudget(opts);
  budget.endSlice();
  await sink(ARCHIVE_MAGIC);
  budget.restart();
  const recs: Buffer[] = [encodeJsonRecord(REC_STATE, stateToJson(reader.state))];
  let raw = recs[0]!.length;
  let msgs = 0;
  let frames = 0;
  const emit = async (): Promise<void> => {
    budget.endSlice();
    const f = await encodeFrameAsync(recs.length === 1 ? recs[0]! : Buffer.concat(recs));
    recs.length = 0;
    raw = 0;
    frames++;
    await sink(f);
    budget.restart(); // the deflate gave the loop away
  };
  for (let s = from; ; ) {
    const m = reader.nextTransient(s, to);
    if (m === null) break;
    const r = encodeMsgRecord(m.seq, m.tsNs, m.subject, m.hdr, m.data, m.ttlSec, true);
    recs.push(r);
    raw += r.length;
    msgs++;
    s = m.seq + 1;
    if (raw >= FRAME_RAW_TARGET) await emit();
    else if (budget.spent()) await budget.yieldTurn();
  }
  recs.push(encodeJsonRecord(REC_END, { msgs, last_seq: reader.state.lastSeq }));
  await emit();
  return { msgs, frames, turns: budget.turns, maxSliceMs: budget.maxSliceMs };
}

/** StoreSnapshotDecoder for big archives: frames inflated on the thread pool, records stored a
 *  slice per turn. Await each push before the next; then end(). */
export class StoreSnapshotRestorer {
  private readonly apply: StoreRecordApplier;
  private readonly frames = new FrameSplitter();
  private readonly budget: TurnBudget;
  private busy = false;

  constructor(store: StreamStore, opts: SliceOptions = {}) {
    this.apply = new StoreRecordApplier(store);
    this.budget = new TurnBudget(opts);
  }

  get state(): StoreSnapshotState | null {
    return this.apply.header;
  }

  /** Messages stored so far. */
  get count(): number {
    return this.apply.writer.count;
  }

  /** Event-loop turns the restore was spread over so far. */
  get turns(): number {
    return this.budget.turns;
  }

  /** The longest slice of work in one turn so far (ms). */
  get maxSliceMs(): number {
    return this.budget.maxSliceMs;
  }

  /** Feed a chunk of any size; resolves once every frame it completed is stored. */
  async push(chunk: Buffer): Promise<void> {
    if (this.busy) throw new Error("StoreSnapshotRestorer.push: the previous push has not finished");
    this.busy = true;
    try {
      for (const f of this.frames.push(chunk)) {
        if (this.apply.ended) throw new ArchiveError("data after the end of the snapshot");
        this.budget.endSlice();
        const raw = await inflateAsync(f.z);
        this.budget.restart();
        checkFrame(raw, f.rawLen, f.crc);
        for (let p = 0; p < raw.length; ) {
          const [kind, body, next] = recordAt(raw, p);
          p = next;
          this.apply.record(kind, body);
          if (this.budget.spent()) await this.budget.yieldTurn();
        }
      }
    } finally {
      this.budget.endSlice();
      this.busy = false;
    }
  }

  /** The archive has ended: throws if its END record was never read. */
  end(): StoreSnapshotState {
    if (!this.apply.ended || this.apply.header === null) throw new ArchiveError("snapshot is truncated");
    return this.apply.header;
  }
}
