// The write side of a file stream store: one reused write buffer, flushes, and group-commit
// fsync rounds.
//
// storeMsg encodes into the write buffer (reserve) and returns at once; a flush (at once when
// sync() finds an fsync round free, else setImmediate, or early when the buffer is large)
// writes the buffer with one write call and then one fsync round covers every sync()
// callback queued before that write (group commit). Up to two rounds overlap (the disk serves
// two flushes in about the time of one); their callbacks run in the order the rounds
// started, each once every earlier round has completed. In syncIntervalMs mode callbacks
// answer right after the write and fsync runs on a timer.
import type { Clock, TimerHandle } from "../../runtime/clock.js";
import type { Blk, BlockFiles } from "./block.js";

export const FLUSH_AT_BYTES = 1024 * 1024;
/** The write block's summary is rewritten each time this many more bytes are written, so a
 *  crash leaves at most about this much of it to scan. */
const TAIL_SUMMARY_STEP_BYTES = 1024 * 1024;
/** Group-commit fsyncs that may run at once: a second one starts while the first is still on
 *  the disk (which serves two flushes in about the time of one), so under a steady stream of
 *  publishes a batch waits for its own fsync rather than for the one before it as well. */
const MAX_FSYNC_ROUNDS = 2;

export type SyncCb = (err: Error | null) => void;

/** One group-commit fsync: the sync() callbacks it answers and the write count it covers. */
interface FsyncRound {
  cbs: SyncCb[];
  covered: number;
  blks: Blk[]; // the blocks it fsyncs, and each one's written length when it started
  lens: number[];
  pending: number;
  err: Error | null;
  done: boolean;
}

/** What the store does around a flush. */
export interface JournalHost {
  /** Right before the write buffer goes to the file: compactions (when no fsync round runs,
   *  `idle`), rolling a dead write block, the floor record. May throw (the store fails). */
  beforeWrite(idle: boolean): void;
  /** Whether compactions wait (a second fsync round does not start then). */
  compactionsWaiting(): boolean;
}

export class Journal {
  wbuf: Buffer = Buffer.allocUnsafe(16 * 1024); // grows under load up to about FLUSH_AT_BYTES
  wlen = 0;
  writes = 0; // count of write calls, for ordering unlinks after syncs
  failed: Error | null = null;
  closed = false;

  private readonly files: BlockFiles;
  private readonly clock: Clock;
  private readonly syncIntervalMs: number;
  private readonly host: JournalHost;
  private flushScheduled = false;
  private readonly flushFn: () => void;
  private queued: SyncCb[] = []; // sync() calls whose data is not yet written
  private written: SyncCb[] = []; // written, waiting for the next fsync
  /** fsync rounds in flight, oldest first; their callbacks run in this order. */
  private readonly rounds: FsyncRound[] = [];
  private syncTimer: TimerHandle | null = null;
  private readonly idleWaiters: (() => void)[] = [];

  constructor(files: BlockFiles, clock: Clock, syncIntervalMs: number, host: JournalHost) {
    this.files = files;
    this.clock = clock;
    this.syncIntervalMs = syncIntervalMs;
    this.host = host;
    this.flushFn = () => this.flush();
  }

  /** Start after recovery. */
  start(): void {
    if (this.syncIntervalMs > 0) this.armSyncTimer();
    this.scheduleFlush();
  }

  /** Room for rl bytes at the end of the write buffer; returns the buffer position. */
  reserve(rl: number): number {
    if (this.wlen > 0 && this.wlen + rl > FLUSH_AT_BYTES) this.writeOut();
    if (this.wlen + rl > this.wbuf.length) {
      const nb = Buffer.allocUnsafe(Math.max(this.wbuf.length * 2, this.wlen + rl));
      this.wbuf.copy(nb, 0, 0, this.wlen);
      this.wbuf = nb;
    }
    const p = this.wlen;
    this.wlen += rl;
    return p;
  }

  /** Hand the write buffer to the file (page cache); no fsync. */
  writeOut(): void {
    if (this.wlen === 0) return;
    const w = this.files.wblk;
    try {
      this.files.fs.write(this.files.fd(w), this.wbuf, 0, this.wlen, w.written);
    } catch (e) {
      this.fail(e as Error);
      throw e;
    }
    w.sum?.wroteRecords(this.wbuf, 0, this.wlen);
    w.written += this.wlen;
    if (this.syncIntervalMs > 0) w.good = w.written;
    this.wlen = 0;
    this.writes++;
    w.dirty = true;
  }

  scheduleFlush(): void {
    if (!this.flushScheduled) {
      this.flushScheduled = true;
      setImmediate(this.flushFn);
    }
  }

  sync(cb: SyncCb): void {
    if (this.failed !== null || this.closed) {
      setImmediate(cb, this.failed); // after close everything is already on disk
      return;
    }
    this.queued.push(cb);
    // A round can start: write and start the fsync now instead of a turn later (the caller
    // asks once per batch of publishes). While the rounds are all busy, later calls gather
    // for the next one.
    if (this.syncIntervalMs === 0 && this.canStartRound()) this.flush();
    else this.scheduleFlush();
  }

  private flush(): void {
    this.flushScheduled = false;
    if (this.failed !== null) return this.failAll();
    if (this.closed && this.files.wblk.fd < 0) return;
    try {
      this.host.beforeWrite(this.rounds.length === 0);
      this.writeOut();
    } catch {
      return this.failAll();
    }
    const tw = this.files.wblk;
    if (tw.sum !== null && tw.written - tw.sumCovered >= TAIL_SUMMARY_STEP_BYTES) this.files.saveSummary(tw, false);
    if (this.queued.length > 0) {
      if (this.written.length === 0) {
        const t = this.written;
        this.written = this.queued;
        this.queued = t;
      } else {
        for (const cb of this.queued) this.written.push(cb);
        this.queued.length = 0;
      }
    }
    if (this.syncIntervalMs > 0) {
      const cbs = this.written;
      this.written = [];
      for (const cb of cbs) cb(null);
      return;
    }
    if (this.canStartRound() && this.needsFsync()) this.startFsync();
  }

  /** Whether another fsync round may start now: always when none runs; a second one while
   *  no compaction waits (compactions run between rounds). */
  private canStartRound(): boolean {
    if (this.closed) return false;
    const n = this.rounds.length;
    return n === 0 || (n < MAX_FSYNC_ROUNDS && !this.host.compactionsWaiting());
  }

  private needsFsync(): boolean {
    if (this.written.length > 0 || this.files.dirDirty) return true;
    for (const b of this.files.blocks) if (b.dirty) return true;
    for (const b of this.files.dying) {
      // a dead block whose last needed write happened but no completed round covers yet
      if (b.dirty || (b.unlinkAfterWrite <= this.writes && b.unlinkAfterWrite > this.files.covered)) return true;
    }
    return false;
  }

  private startFsync(): void {
    const files = this.files;
    const round: FsyncRound = { cbs: this.written, covered: this.writes, blks: [], lens: [], pending: 1, err: null, done: false };
    this.written = [];
    const targets: Blk[] = [];
    for (const b of files.blocks) {
      if (b.dirty) {
        b.dirty = false;
        targets.push(b);
      }
    }
    for (const b of files.dying) {
      if (b.dirty) {
        b.dirty = false;
        targets.push(b);
      }
    }
    const dir = files.dirDirty;
    files.dirDirty = false;
    round.pending = targets.length + (dir ? 1 : 0) + 1;
    this.rounds.push(round);
    const done = (err: Error | null): void => {
      if (err !== null && round.err === null) round.err = err;
      if (--round.pending > 0) return;
      round.done = true;
      this.releaseRounds();
    };
    for (const b of targets) {
      round.blks.push(b);
      round.lens.push(b.written);
      files.fs.fsync(b.fd, done);
    }
    if (dir) files.fs.fsyncDir(files.dir, done);
    done(null);
  }

  /** Answer finished rounds in the order they started: a round's callbacks run only once
   *  every earlier round is durable too (each round fsyncs only what was dirty at its start). */
  private releaseRounds(): void {
    const rounds = this.rounds;
    while (rounds.length > 0 && rounds[0]!.done) {
      const r = rounds.shift()!;
      if (r.err !== null || this.failed !== null) {
        const err = r.err ?? this.failed!;
        this.fail(err);
        for (const cb of r.cbs) cb(err);
        // Later rounds cannot be trusted either: fail their callbacks now, once.
        for (const later of rounds) {
          const cbs = later.cbs;
          later.cbs = [];
          for (const cb of cbs) cb(err);
        }
        continue;
      }
      for (let i = 0; i < r.blks.length; i++) {
        const b = r.blks[i]!;
        if (r.lens[i]! > b.good) b.good = r.lens[i]!;
      }
      this.files.unlinkDead(r.covered);
      for (const cb of r.cbs) cb(null);
    }
    if (rounds.length === 0) {
      const idle = this.idleWaiters.splice(0);
      for (const w of idle) w();
    }
    if (this.failed !== null) return this.failAll();
    if (this.syncIntervalMs === 0 && this.wlen === 0 && this.canStartRound() && this.needsFsync()) this.startFsync();
  }

  fail(e: Error): void {
    if (this.failed === null) this.failed = e;
  }

  private failAll(): void {
    const err = this.failed ?? new Error("file store failed");
    const cbs = [...this.written, ...this.queued];
    this.written = [];
    this.queued = [];
    for (const cb of cbs) cb(err);
  }

  private armSyncTimer(): void {
    this.syncTimer = this.clock.setTimer(() => {
      this.syncTimer = null;
      if (this.closed) return;
      if (this.rounds.length === 0 && this.failed === null && this.needsFsync()) this.startFsync();
      this.armSyncTimer();
    }, this.syncIntervalMs);
  }

  /** Everything stored so far written and fsynced, every round finished; then closed (sync()
   *  answers at once from now on). */
  async drainAndClose(): Promise<void> {
    await new Promise<void>((res) => this.sync(() => res()));
    if (this.rounds.length > 0) await new Promise<void>((res) => this.idleWaiters.push(res));
    await this.files.quiesce();
    this.closed = true;
    if (this.syncTimer !== null) this.clock.clearTimer(this.syncTimer);
    this.syncTimer = null;
  }

  /** The last fsyncs at close (after drainAndClose), or on failure the cut back to what was
   *  answered for; then every file is closed. */
  finalSync(): void {
    const files = this.files;
    const fs = files.fs;
    if (this.failed === null) {
      try {
        this.writeOut();
        for (const b of files.all()) {
          if (b.dirty && b.fd >= 0) fs.fsyncSync(b.fd);
          b.dirty = false;
        }
        files.saveSummary(files.wblk, true);
        if (files.dirDirty) fs.fsyncDirSync(files.dir);
        files.dirDirty = false;
        files.unlinkDead(this.writes, true);
      } catch {
        // the store is going away; a failed final sync leaves the disk as recovery will see it
      }
    } else {
      // A write or fsync failed: cut every block back to what was answered for, so that
      // reopening it finds exactly the acknowledged messages and none of those whose
      // publishers were told the store failed (a retry of one must not store it twice).
      // Shrinking a file needs no free space.
      for (const b of files.all()) {
        // The write block may hold part of a write that failed half way (written not advanced).
        if (b.written <= b.good && b !== files.wblk) continue;
        try {
          fs.truncate(files.fd(b), b.good);
          fs.fsyncSync(b.fd);
        } catch {
          // recovery will find and drop a torn or unsynced tail as after a crash
        }
      }
    }
    files.closeAll();
  }
}
