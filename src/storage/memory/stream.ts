// In-memory StreamStore: the shared index plus each message's hdr+data copied into a slab
// (slabs.ts: large buffers, no JS object per message; the caller's buffers may be views into
// a reused socket read buffer).
import { StorageType, type StoreCallbacks, type StoreLimits, type StoredMsg, type StreamStore } from "../types.js";
import { randomFillSync } from "node:crypto";
import { SeqIndex } from "./seqindex.js";
import { Slabs, type SlabOwner } from "./slabs.js";
import { MsgCols } from "./msgcols.js";
import { systemScheduler } from "../../runtime/sched.js";

/** nats-server memStoreMsgSize: subject + headers + payload + 16 (seq and timestamp). */
export function memStoreMsgSize(subjectBytes: number, hdrBytes: number, dataBytes: number): number {
  return subjectBytes + hdrBytes + dataBytes + 16;
}

export class MemoryStreamStore extends SeqIndex implements StreamStore, SlabOwner {
  readonly type = StorageType.Memory;
  private readonly slabs = new Slabs(this);
  /** Per message, by sequence: where its bytes are, its header length and timestamp. */
  private readonly cols = new MsgCols();
  private closed = false;
  private syncQ: ((err: Error | null) => void)[] = [];
  private readonly drainFn = () => this.drain();

  constructor(limits: StoreLimits | null, callbacks: StoreCallbacks | null) {
    super(limits, callbacks);
  }

  /** SlabOwner: seq is stored. */
  isLive(seq: number): boolean {
    return this.msgs > 0 && seq >= this.firstSeq && seq <= this.lastSeq && this.subjAt(seq) !== 0;
  }

  protected tsAt(seq: number): number {
    return this.cols.tsOf(seq);
  }

  protected storeClosed(): boolean {
    return this.closed;
  }

  protected onRemoved(seq: number): void {
    this.slabs.removed(this.cols, seq);
    this.dropColumnsBelowFirst();
  }

  protected override onRemovedFront(seq: number, _size: number): void {
    this.slabs.removed(this.cols, seq); // firstSeq moves once they are all gone
  }

  protected override afterRemovedFront(): void {
    this.dropColumnsBelowFirst();
  }

  protected override onRemovedAll(): void {
    this.slabs.clear();
    this.cols.clear();
  }

  private dropColumnsBelowFirst(): void {
    this.cols.dropBelow(this.msgs === 0 ? this.lastSeq + 1 : this.firstSeq);
  }

  protected readAt(seq: number, subject: string): StoredMsg {
    const tsNs = this.cols.tsOf(seq);
    const p = this.slabs.bytes(this.cols, seq);
    const hl = this.cols.hdrOf(seq);
    const hdr = hl === 0xffffffff ? null : p.subarray(0, hl);
    const data = p.subarray(hl === 0xffffffff ? 0 : hl);
    return { seq, subject, hdr, data, tsNs };
  }

  storeMsg(subject: string, hdr: Buffer | null, data: Buffer, tsNs: number, ttlSec: number): number {
    if (this.closed) throw new Error("memory store is closed");
    const seq = this.lastSeq + 1;
    this.put(seq, subject, hdr, data, tsNs, ttlSec);
    return seq;
  }

  storeMsgAt(seq: number, subject: string, hdr: Buffer | null, data: Buffer, tsNs: number, ttlSec: number): void {
    if (this.closed) throw new Error("memory store is closed");
    this.checkStoreAt(seq);
    this.put(seq, subject, hdr, data, tsNs, ttlSec);
  }

  private put(seq: number, subject: string, hdr: Buffer | null, data: Buffer, tsNs: number, ttlSec: number): void {
    const rec = this.internSubject(subject);
    const hl = hdr === null ? 0 : hdr.length;
    this.indexAppend(seq, rec, tsNs, memStoreMsgSize(rec.blen, hl, data.length), ttlSec);
    this.cols.ensure(seq);
    this.slabs.put(this.cols, seq, hdr, data);
    this.cols.set(seq, hdr === null ? 0xffffffff : hl, tsNs);
    this.enforceLimits(rec);
    this.slabs.moveOne(this.cols);
  }

  /** removeMsg, after its bytes in the slab are overwritten with random ones (a slab keeps
   *  a removed message's bytes until it is dropped; nats-server's memory store erases so too). */
  eraseMsg(seq: number): boolean {
    if (!this.isLive(seq)) return false;
    randomFillSync(this.slabs.bytes(this.cols, seq));
    return this.removeMsg(seq);
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
