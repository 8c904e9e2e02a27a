// In-memory StreamStore: the shared index plus one Buffer per message holding hdr+data
// (copied: the caller's buffers may be views into a reused socket read buffer).
import { StorageType, type StoreCallbacks, type StoreLimits, type StoredMsg, type StreamStore } from "../types.js";
import { SeqIndex } from "./seqindex.js";
import { systemScheduler } from "../../runtime/sched.js";

/** nats-server memStoreMsgSize: subject + headers + payload + 16 (seq and timestamp). */
export function memStoreMsgSize(subjectBytes: number, hdrBytes: number, dataBytes: number): number {
  return subjectBytes + hdrBytes + dataBytes + 16;
}

export class MemoryStreamStore extends SeqIndex implements StreamStore {
  readonly type = StorageType.Memory;
  private payloads: (Buffer | null)[];
  private hdrLens: Uint32Array; // header length inside payload; 0xffffffff = null header
  private tsCol: Float64Array;
  private closed = false;
  private syncQ: ((err: Error | null) => void)[] = [];
  private readonly drainFn = () => this.drain();

  constructor(limits: StoreLimits | null, callbacks: StoreCallbacks | null) {
    super(limits, callbacks, 256);
    this.payloads = new Array<Buffer | null>(256).fill(null);
    this.hdrLens = new Uint32Array(256);
    this.tsCol = new Float64Array(256);
  }

  protected resizeExtra(newCap: number, shift: number, used: number): void {
    const keep = Math.max(0, used - shift);
    // Copied by the engine, not a loop here: at a few hundred thousand messages a loop run
    // once per doubling (not compiled yet) was 20-30 ms of one publish.
    const p = this.payloads.slice(shift, shift + keep);
    p.length = newCap;
    p.fill(null, keep);
    this.payloads = p;
    const h = new Uint32Array(newCap);
    h.set(this.hdrLens.subarray(shift, shift + keep));
    this.hdrLens = h;
    const t = new Float64Array(newCap);
    t.set(this.tsCol.subarray(shift, shift + keep));
    this.tsCol = t;
  }

  protected slotTs(_seq: number, slot: number): number {
    return this.tsCol[slot] as number;
  }

  protected storeClosed(): boolean {
    return this.closed;
  }

  protected onRemoved(_seq: number, slot: number): void {
    this.payloads[slot] = null;
  }

  protected readSlot(seq: number, slot: number, subject: string): StoredMsg {
    const tsNs = this.tsCol[slot] as number;
    const p = this.payloads[slot] as Buffer;
    const hl = this.hdrLens[slot] as number;
    const hdr = hl === 0xffffffff ? null : p.subarray(0, hl);
    const data = p.subarray(hl === 0xffffffff ? 0 : hl);
    return { seq, subject, hdr, data, tsNs };
  }

  storeMsg(subject: string, hdr: Buffer | null, data: Buffer, tsNs: number, ttlSec: number): number {
    if (this.closed) throw new Error("memory store is closed");
    const rec = this.internSubject(subject);
    const hl = hdr === null ? 0 : hdr.length;
    const p = Buffer.allocUnsafe(hl + data.length);
    if (hdr !== null) hdr.copy(p, 0);
    data.copy(p, hl);
    const seq = this.lastSeq + 1;
    const i = this.indexAppend(seq, rec, tsNs, memStoreMsgSize(rec.blen, hl, data.length), ttlSec);
    this.payloads[i] = p;
    this.hdrLens[i] = hdr === null ? 0xffffffff : hl;
    this.tsCol[i] = tsNs;
    this.enforceLimits(rec);
    return seq;
  }

  storeMsgAt(seq: number, subject: string, hdr: Buffer | null, data: Buffer, tsNs: number, ttlSec: number): void {
    if (this.closed) throw new Error("memory store is closed");
    this.checkStoreAt(seq);
    const rec = this.internSubject(subject);
    const hl = hdr === null ? 0 : hdr.length;
    const p = Buffer.allocUnsafe(hl + data.length);
    if (hdr !== null) hdr.copy(p, 0);
    data.copy(p, hl);
    const i = this.indexAppend(seq, rec, tsNs, memStoreMsgSize(rec.blen, hl, data.length), ttlSec);
    this.payloads[i] = p;
    this.hdrLens[i] = hdr === null ? 0xffffffff : hl;
    this.tsCol[i] = tsNs;
    this.enforceLimits(rec);
  }

  skipMsgs(seq: number, count: number, tsNs: number): void {
    if (this.closed) throw new Error("memory store is closed");
    this.indexSkip(seq, count, tsNs);
  }

  sync(cb: (err: Error | null) => void): void {
    // one Immediate per batch of callers, not per message
    this.syncQ.push(cb);
    if (this.syncQ.length === 1) systemScheduler.nextTurn(this.drainFn);
  }

  private drain(): void {
    const q = this.syncQ;
    this.syncQ = [];
    for (const cb of q) cb(null);
  }

  async close(): Promise<void> {
    this.closed = true;
  }

  async delete(): Promise<void> {
    this.abandonPurge();
    this.purge({});
    this.closed = true;
  }
}
