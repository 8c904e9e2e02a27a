// The block files of a file stream store: "<n>.blk" (records, record.ts) with an optional
// "<n>.sum" beside each (summary.ts). BlockFiles is the set of them: every block by id, those
// holding message records by sequence range, the write block, and the dead ones waiting for
// a fsync before they are unlinked.
import { join } from "node:path";
import type { Fs } from "../../runtime/fs.js";
import { SummaryBuilder } from "./summary.js";

export const DEFAULT_BLOCK_BYTES = 8 * 1024 * 1024;
/** Dead block files being unlinked on the thread pool at once. */
const UNLINKS_IN_FLIGHT = 1;

export class Blk {
  readonly id: number;
  readonly path: string;
  fd = -1;
  firstSeq = 0; // first message seq in this block (0: none)
  lastSeq = 0;
  firstMsgOff = 0; // offset of the first message record (where a group that began earlier is walked from)
  /** Offset of every message (by seq - firstSeq) when recovery found damage inside this block:
   *  a walk cannot step over garbage. null for every healthy block. */
  offs: Uint32Array | null = null;
  live = 0; // live messages
  hdrMsgs = 0; // message records with header bytes, live or not (0: no header to look for here)
  liveRecBytes = 0;
  size = 0; // bytes including the unwritten part of the write buffer
  written = 0; // bytes handed to the file
  dirty = false; // written but not fsynced
  /** Bytes from the start that were answered for: fsynced (or, with sync_interval, written).
   *  After a write or fsync failure the file is cut back to this before it is reopened. */
  good = 0;
  hasFloor = false;
  tombs: number[] = [];
  unlinkAfterWrite = 0; // set when dead: unlink once a fsync covering this write count completes
  /** Summary of the block's records so far, while it can still grow (the write block) or has
   *  not been saved; null for a saved sealed block or one whose damage it cannot describe. */
  sum: SummaryBuilder | null = null;
  sumCovered = 0; // block bytes covered by the summary file last written
  constructor(id: number, path: string) {
    this.id = id;
    this.path = path;
  }
  get sumPath(): string {
    return `${this.path.slice(0, -4)}.sum`;
  }
}

export interface DroppedRegion {
  file: string;
  offset: number;
  bytes: number;
  reason: "checksum" | "torn-tail";
  /** Last good message sequence before the damage (0 if none in that block). */
  afterSeq: number;
}

export interface RecoveryReport {
  blocks: number;
  msgs: number;
  tombstones: number;
  truncatedBytes: number;
  dropped: DroppedRegion[];
}

export class BlockFiles {
  readonly dir: string;
  readonly fs: Fs;
  readonly blockSizeBytes: number;
  blocks: Blk[] = []; // every block file, by id
  seqBlocks: Blk[] = []; // blocks holding at least one message record, by seq range
  readonly dying: Blk[] = [];
  wblk: Blk;
  /** A name was made or removed: the next fsync round covers the directory too. */
  dirDirty = false;
  /** Highest write count a completed fsync round covered (dead blocks up to it may go). */
  covered = 0;
  private unlinking = 0; // async unlinks in flight
  private closing = false;
  private readonly unlinkWaiters: (() => void)[] = [];
  private readonly unlinkDone: (err: Error | null) => void;

  constructor(dir: string, fs: Fs, blockSizeBytes: number) {
    this.dir = dir;
    this.fs = fs;
    this.blockSizeBytes = blockSizeBytes;
    this.wblk = new Blk(0, "");
    this.unlinkDone = () => this.onUnlinked();
  }

  pathOf(id: number): string {
    return join(this.dir, `${id}.blk`);
  }

  fd(b: Blk): number {
    if (b.fd < 0) b.fd = this.fs.open(b.path, "rw");
    return b.fd;
  }

  newBlock(): Blk {
    const last = this.blocks[this.blocks.length - 1];
    const id = last === undefined ? 1 : last.id + 1;
    const b = new Blk(id, this.pathOf(id));
    b.sum = new SummaryBuilder();
    this.fd(b);
    this.blocks.push(b);
    this.dirDirty = true;
    return b;
  }

  /** The live block whose message range holds seq, or null. */
  blockFor(seq: number): Blk | null {
    const bl = this.seqBlocks;
    let lo = 0;
    let hi = bl.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      const b = bl[mid] as Blk;
      if (b.lastSeq < seq) lo = mid + 1;
      else if (b.firstSeq > seq) hi = mid - 1;
      else return b;
    }
    return null;
  }

  dyingBlockFor(seq: number): Blk | null {
    for (const d of this.dying) if (d.firstSeq !== 0 && d.firstSeq <= seq && seq <= d.lastSeq) return d;
    return null;
  }

  /** Index in seqBlocks of the first block whose lastSeq >= s. */
  seqBlockFrom(s: number): number {
    const bl = this.seqBlocks;
    let lo = 0;
    let hi = bl.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if ((bl[mid] as Blk).lastSeq < s) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /** Take b out of the live sets; it is unlinked once a fsync covering write count `after`
   *  completes (unlinkDead). */
  retire(b: Blk, after: number): boolean {
    const idx = this.blocks.indexOf(b);
    if (idx < 0) return false;
    this.blocks.splice(idx, 1);
    const si = this.seqBlocks.indexOf(b);
    if (si >= 0) this.seqBlocks.splice(si, 1);
    b.unlinkAfterWrite = after;
    this.dying.push(b);
    return true;
  }

  /** Every block but keep dies at once (a purge of everything): unlinked once a fsync
   *  covering write count `after` completes. */
  retireAllBut(keep: Blk, after: number): void {
    for (const b of this.blocks) {
      if (b === keep) continue;
      b.live = 0;
      b.liveRecBytes = 0;
      b.sum = null;
      b.unlinkAfterWrite = after;
      this.dying.push(b);
    }
    keep.live = 0;
    keep.liveRecBytes = 0;
    this.blocks = [keep];
    this.seqBlocks = keep.firstSeq !== 0 ? [keep] : [];
  }

  /** Unlink the dead blocks a completed fsync round (covering write count `covered`) made
   *  safe to lose. Where the Fs can unlink off the event loop (freeing an 8 MiB file's
   *  extents takes milliseconds), at most UNLINKS_IN_FLIGHT at once, each finished one
   *  starting the next, so a purge of a big stream neither stalls the loop nor floods the
   *  thread pool the fsyncs share; else (or with `now`, at close) here and now. */
  unlinkDead(covered: number, now = false): void {
    if (covered > this.covered) this.covered = covered;
    if (this.dying.length === 0) return;
    const async = !now && !this.closing && this.fs.unlinkAsync !== undefined;
    const keep: Blk[] = [];
    for (const b of this.dying) {
      if (b.unlinkAfterWrite > this.covered || b.dirty || (async && this.unlinking >= UNLINKS_IN_FLIGHT)) {
        keep.push(b);
        continue;
      }
      try {
        if (b.fd >= 0) this.fs.close(b.fd);
        b.fd = -1;
        if (async) {
          this.unlinking++;
          this.fs.unlinkAsync!(b.path, this.unlinkDone);
          this.fs.unlink(b.sumPath); // small
        } else {
          this.fs.unlink(b.path);
          this.fs.unlink(b.sumPath);
        }
      } catch {
        // left on disk: recovery finds it below the floor (or empty) and drops it again
      }
    }
    this.dying.length = 0;
    for (const b of keep) this.dying.push(b);
  }

  private onUnlinked(): void {
    this.unlinking--;
    if (!this.closing) this.unlinkDead(this.covered);
    if (this.unlinking === 0) for (const w of this.unlinkWaiters.splice(0)) w();
  }

  /** Resolves once no unlink is in flight; none start after it is called. */
  async quiesce(): Promise<void> {
    this.closing = true;
    if (this.unlinking > 0) await new Promise<void>((res) => this.unlinkWaiters.push(res));
  }

  /** Write b's summary (b.sum covers every byte written) and, when b is sealed, drop it from
   *  memory. Without fsync unless asked: a summary lost or torn in a crash costs a scan. */
  saveSummary(b: Blk, fsync: boolean): void {
    const sum = b.sum;
    if (b !== this.wblk) b.sum = null;
    if (sum === null || sum.covered !== b.written || b.sumCovered === b.written) return;
    const bytes = sum.encode();
    try {
      // A new file rather than an overwrite: under encryption at rest (CryptFs) a new file
      // gets a new key and IV, so two versions of a summary never share a keystream. A crash
      // in between costs a scan, as any lost summary does.
      this.fs.unlink(b.sumPath);
      const fd = this.fs.open(b.sumPath, "rw");
      try {
        this.fs.write(fd, bytes, 0, bytes.length, 0);
        this.fs.truncate(fd, bytes.length);
        if (fsync) this.fs.fsyncSync(fd);
      } finally {
        this.fs.close(fd);
      }
      b.sumCovered = b.written;
    } catch {
      // only a cache: recovery scans the block instead
    }
  }

  /** Every block, live and dying. */
  all(): Blk[] {
    return [...this.blocks, ...this.dying];
  }

  closeAll(): void {
    for (const b of this.all()) {
      if (b.fd >= 0) this.fs.close(b.fd);
      b.fd = -1;
    }
  }
}

export interface Scratch {
  buf: Buffer;
}

/** The whole file at path as a view of scratch.buf (grown when too small), or null. */
export function readWhole(fs: Fs, path: string, scratch: Scratch): Buffer | null {
  let fd: number;
  try {
    fd = fs.open(path, "r");
  } catch {
    return null;
  }
  try {
    const n = fs.fsize(fd);
    if (scratch.buf.length < n) scratch.buf = Buffer.allocUnsafe(Math.max(n, scratch.buf.length * 2));
    const b = scratch.buf.subarray(0, n);
    return fs.read(fd, b, 0, n, 0) === n ? b : null;
  } finally {
    fs.close(fd);
  }
}
