// File-backed ConsumerStore. State goes to an append-only log of whole-state snapshots, each
// with a length and CRC-32; load takes the last intact one. Why a log and not an atomically
// replaced file: a replace costs write + fsync + rename + directory fsync per commit, an append
// costs one write and one fsync, and (like the stream store) one fsync covers every update()
// made before it. update() only keeps a reference; encoding happens once per flush, so a
// consumer acking thousands of messages between flushes pays for one snapshot. When the log
// outgrows a few snapshots it is rewritten (temp file, fsync, rename, directory fsync).
// The config JSON is replaced atomically in meta.json.
import { join } from "node:path";
import { SystemClock, type Clock, type TimerHandle } from "../../runtime/clock.js";
import { writeFileAtomicSync, type Fs } from "../../runtime/fs.js";
import type { ConsumerState, ConsumerStore } from "../types.js";
import { crc32 } from "./crc32.js";

const LOG = "o.log";
const META = "meta.json";
const MIN_REWRITE_BYTES = 1024 * 1024;
const STATE_MAGIC = 0x43; // 'C'
const UPDATE_COALESCE_MS = 20;
/** After a failed write or fsync (a full disk), the next try of the newest state. */
export const CONSUMER_RETRY_MS = 1000;

export interface FileConsumerStoreOptions {
  dir: string;
  fs: Fs;
  syncIntervalMs?: number;
  clock?: Clock;
}

export interface ConsumerRecoveryReport {
  snapshots: number;
  truncatedBytes: number;
}

type SyncCb = (err: Error | null) => void;

export function encodeConsumerState(s: ConsumerState): Buffer {
  const len = 4 + 1 + 32 + 4 + s.pending.size * 24 + 4 + s.redelivered.size * 12 + 4;
  const b = Buffer.allocUnsafe(len);
  let p = 0;
  b.writeUInt32LE(len, p);
  p += 4;
  b[p++] = STATE_MAGIC;
  b.writeDoubleLE(s.delivered.consumerSeq, p);
  b.writeDoubleLE(s.delivered.streamSeq, p + 8);
  b.writeDoubleLE(s.ackFloor.consumerSeq, p + 16);
  b.writeDoubleLE(s.ackFloor.streamSeq, p + 24);
  p += 32;
  b.writeUInt32LE(s.pending.size, p);
  p += 4;
  for (const [seq, v] of s.pending) {
    b.writeDoubleLE(seq, p);
    b.writeDoubleLE(v.cseq, p + 8);
    b.writeDoubleLE(v.tsNs, p + 16);
    p += 24;
  }
  b.writeUInt32LE(s.redelivered.size, p);
  p += 4;
  for (const [seq, n] of s.redelivered) {
    b.writeDoubleLE(seq, p);
    b.writeUInt32LE(n, p + 8);
    p += 12;
  }
  b.writeUInt32LE(crc32(b, 0, p), p);
  return b;
}

/** Length of the intact snapshot at p, or 0. */
function checkSnapshot(b: Buffer, p: number): number {
  if (p + 45 > b.length) return 0;
  const len = b.readUInt32LE(p);
  if (len < 45 || p + len > b.length || b[p + 4] !== STATE_MAGIC) return 0;
  if (crc32(b, p, p + len - 4) !== b.readUInt32LE(p + len - 4)) return 0;
  return len;
}

export function decodeConsumerState(b: Buffer, p: number): ConsumerState {
  let q = p + 5;
  const s: ConsumerState = {
    delivered: { consumerSeq: b.readDoubleLE(q), streamSeq: b.readDoubleLE(q + 8) },
    ackFloor: { consumerSeq: b.readDoubleLE(q + 16), streamSeq: b.readDoubleLE(q + 24) },
    pending: new Map(),
    redelivered: new Map(),
  };
  q += 32;
  const np = b.readUInt32LE(q);
  q += 4;
  for (let k = 0; k < np; k++, q += 24) s.pending.set(b.readDoubleLE(q), { cseq: b.readDoubleLE(q + 8), tsNs: b.readDoubleLE(q + 16) });
  const nr = b.readUInt32LE(q);
  q += 4;
  for (let k = 0; k < nr; k++, q += 12) s.redelivered.set(b.readDoubleLE(q), b.readUInt32LE(q + 8));
  return s;
}

export class FileConsumerStore implements ConsumerStore {
  readonly recovery: ConsumerRecoveryReport = { snapshots: 0, truncatedBytes: 0 };
  private readonly dir: string;
  private readonly fs: Fs;
  private readonly clock: Clock;
  private readonly syncIntervalMs: number;
  private fd = -1;
  private logBytes = 0;
  private loaded: ConsumerState | null = null;
  private latest: ConsumerState | null = null; // set by update(), encoded at the next flush
  private config: string | null = null;
  private flushScheduled = false;
  private readonly flushFn: () => void;
  private queued: SyncCb[] = [];
  private written: SyncCb[] = [];
  private fsyncing = false;
  private dirty = false;
  private failed: Error | null = null;
  private closed = false;
  private timer: TimerHandle | null = null;
  private readonly idleWaiters: (() => void)[] = [];
  private coalesceTimer: TimerHandle | null = null;
  private retryTimer: TimerHandle | null = null;
  private readonly coalesceFn = (): void => {
    this.coalesceTimer = null;
    this.schedule();
  };

  constructor(opts: FileConsumerStoreOptions) {
    this.dir = opts.dir;
    this.fs = opts.fs;
    this.clock = opts.clock ?? new SystemClock();
    this.syncIntervalMs = opts.syncIntervalMs ?? 0;
    this.flushFn = () => this.flush();
  }

  open(): void {
    const fs = this.fs;
    fs.mkdirp(this.dir);
    const path = join(this.dir, LOG);
    const buf = fs.readFile(path) ?? Buffer.alloc(0);
    let p = 0;
    let last = -1;
    for (;;) {
      const n = checkSnapshot(buf, p);
      if (n === 0) break;
      last = p;
      this.recovery.snapshots++;
      p += n;
    }
    this.loaded = last >= 0 ? decodeConsumerState(buf, last) : null;
    this.fd = fs.open(path, "rw");
    if (p < buf.length) {
      this.recovery.truncatedBytes = buf.length - p;
      fs.truncate(this.fd, p);
      fs.fsyncSync(this.fd);
    }
    this.logBytes = p;
    const meta = fs.readFile(join(this.dir, META));
    this.config = meta === null ? null : meta.toString("utf8");
    if (buf.length === 0) fs.fsyncDirSync(this.dir); // the new log file itself must survive
    if (this.syncIntervalMs > 0) this.arm();
  }

  load(): ConsumerState | null {
    const s = this.latest ?? this.loaded;
    return s === null ? null : decodeConsumerState(encodeConsumerState(s), 0);
  }

  update(state: ConsumerState): void {
    if (this.closed) throw new Error("consumer store is closed");
    this.latest = state;
    // Nobody waits for this state yet: write it a little later, coalescing a burst of acks
    // into one snapshot. A sync() flushes at once.
    if (!this.flushScheduled && this.coalesceTimer === null && this.fd >= 0) {
      this.coalesceTimer = this.clock.setTimer(this.coalesceFn, UPDATE_COALESCE_MS);
    }
  }

  sync(cb: SyncCb): void {
    if (this.failed !== null || this.closed) {
      setImmediate(cb, this.failed);
      return;
    }
    this.queued.push(cb);
    this.schedule();
  }

  writeConfig(json: string): void {
    writeFileAtomicSync(this.fs, this.dir, META, Buffer.from(json, "utf8"));
    this.config = json;
  }

  readConfig(): string | null {
    return this.config;
  }

  private schedule(): void {
    if (this.coalesceTimer !== null) {
      this.clock.clearTimer(this.coalesceTimer);
      this.coalesceTimer = null;
    }
    if (!this.flushScheduled) {
      this.flushScheduled = true;
      setImmediate(this.flushFn);
    }
  }

  private flush(): void {
    this.flushScheduled = false;
    if (this.fd < 0) return;
    try {
      this.writeLatest();
    } catch (e) {
      this.fail(e as Error);
    }
    if (this.failed !== null) {
      const cbs = [...this.written, ...this.queued];
      this.written = [];
      this.queued = [];
      for (const cb of cbs) cb(this.failed);
      return;
    }
    for (const cb of this.queued) this.written.push(cb);
    this.queued = [];
    if (this.syncIntervalMs > 0) {
      const cbs = this.written;
      this.written = [];
      for (const cb of cbs) cb(null);
      return;
    }
    if (!this.fsyncing && (this.dirty || this.written.length > 0)) this.startFsync();
  }

  private writeLatest(): void {
    const s = this.latest;
    if (s === null) return;
    this.latest = null;
    this.loaded = s;
    const b = encodeConsumerState(s);
    if (this.logBytes > Math.max(MIN_REWRITE_BYTES, b.length * 8) && !this.fsyncing) {
      // rewrite: the new log holds just this snapshot
      const tmp = join(this.dir, `${LOG}.new`);
      this.fs.unlink(tmp);
      const fd = this.fs.open(tmp, "rw");
      this.fs.write(fd, b, 0, b.length, 0);
      this.fs.fsyncSync(fd);
      this.fs.close(this.fd);
      this.fs.rename(tmp, join(this.dir, LOG));
      this.fs.fsyncDirSync(this.dir);
      this.fd = fd;
      this.logBytes = b.length;
      return;
    }
    this.fs.write(this.fd, b, 0, b.length, this.logBytes);
    this.logBytes += b.length;
    this.dirty = true;
  }

  private startFsync(): void {
    this.fsyncing = true;
    this.dirty = false;
    const cbs = this.written;
    this.written = [];
    this.fs.fsync(this.fd, (err) => {
      this.fsyncing = false;
      for (const r of this.idleWaiters.splice(0)) r();
      if (err !== null) this.fail(err);
      for (const cb of cbs) cb(err);
      if (this.syncIntervalMs === 0 && this.fd >= 0 && (this.dirty || this.written.length > 0)) this.startFsync();
    });
  }

  /** Every state is a whole snapshot, so a failure needs no reopen: callbacks get the error
   *  until a retry writes the newest state again. It goes where the failed write began
   *  (logBytes did not move), over whatever part of a snapshot that write left. */
  private fail(e: Error): void {
    if (this.failed === null) this.failed = e;
    if (this.retryTimer !== null || this.closed) return;
    this.retryTimer = this.clock.setTimer(() => {
      this.retryTimer = null;
      if (this.closed || this.fsyncing) return this.fail(this.failed ?? e);
      this.failed = null;
      if (this.latest === null) this.latest = this.loaded; // the last written state may not be durable
      this.dirty = true;
      this.schedule();
    }, CONSUMER_RETRY_MS);
  }

  private arm(): void {
    this.timer = this.clock.setTimer(() => {
      this.timer = null;
      if (this.closed) return;
      if (!this.fsyncing && this.dirty && this.failed === null) this.startFsync();
      this.arm();
    }, this.syncIntervalMs);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    await new Promise<void>((res) => this.sync(() => res()));
    if (this.fsyncing) await new Promise<void>((res) => this.idleWaiters.push(res));
    this.closed = true;
    if (this.coalesceTimer !== null) this.clock.clearTimer(this.coalesceTimer);
    this.coalesceTimer = null;
    if (this.timer !== null) this.clock.clearTimer(this.timer);
    this.timer = null;
    if (this.retryTimer !== null) this.clock.clearTimer(this.retryTimer);
    this.retryTimer = null;
    if (this.fd >= 0) {
      try {
        if (this.dirty && this.failed === null) this.fs.fsyncSync(this.fd);
      } finally {
        this.fs.close(this.fd);
        this.fd = -1;
      }
    }
  }

  async delete(): Promise<void> {
    await this.close();
    this.fs.rmrf(this.dir);
  }
}
