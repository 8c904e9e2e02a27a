// Factories for the stores. Owners (stream/, consumer/) depend on these and on types.ts only.
import type { Clock } from "../runtime/clock.js";
import { SystemClock } from "../runtime/clock.js";
import { NodeFs, type Fs } from "../runtime/fs.js";
import type { StoreCallbacks, StoreLimits } from "./types.js";
import { MemoryStreamStore } from "./memory/stream.js";
import { MemoryConsumerStore } from "./memory/consumer.js";
import { DEFAULT_BLOCK_BYTES, FileStreamStore, type RecoveryReport } from "./file/stream.js";
import { FileConsumerStore } from "./file/consumer.js";

export { MemoryStreamStore, memStoreMsgSize } from "./memory/stream.js";
export { MemoryConsumerStore } from "./memory/consumer.js";
export { FileStreamStore, DEFAULT_BLOCK_BYTES, type RecoveryReport, type DroppedRegion } from "./file/stream.js";
export { FileConsumerStore, type ConsumerRecoveryReport } from "./file/consumer.js";
export { fileStoreMsgSize } from "./file/record.js";
export { subjectMatches, isLiteralSubject } from "./subjects.js";

export function createMemoryStreamStore(limits: StoreLimits | null, callbacks: StoreCallbacks | null): MemoryStreamStore {
  return new MemoryStreamStore(limits, callbacks);
}

export function createMemoryConsumerStore(): MemoryConsumerStore {
  return new MemoryConsumerStore();
}

export interface OpenFileStreamStoreOptions {
  dir: string;
  fs?: Fs;
  clock?: Clock;
  limits?: StoreLimits | null;
  callbacks?: StoreCallbacks | null;
  /** 0 (default): every sync() waits for fsync (group commit). > 0: fsync on this interval. */
  syncIntervalMs?: number;
  blockSizeBytes?: number;
}

/** Open (or create) a file stream store; the report lists anything recovery had to drop. */
export async function openFileStreamStore(
  opts: OpenFileStreamStoreOptions,
): Promise<{ store: FileStreamStore; report: RecoveryReport }> {
  const store = new FileStreamStore({
    dir: opts.dir,
    fs: opts.fs ?? new NodeFs(),
    clock: opts.clock ?? new SystemClock(),
    limits: opts.limits ?? null,
    callbacks: opts.callbacks ?? null,
    syncIntervalMs: opts.syncIntervalMs ?? 0,
    blockSizeBytes: opts.blockSizeBytes !== undefined && opts.blockSizeBytes > 0 ? opts.blockSizeBytes : DEFAULT_BLOCK_BYTES,
  });
  const report = store.open();
  return { store, report };
}

export interface OpenFileConsumerStoreOptions {
  dir: string;
  fs?: Fs;
  clock?: Clock;
  syncIntervalMs?: number;
}

export async function openFileConsumerStore(opts: OpenFileConsumerStoreOptions): Promise<FileConsumerStore> {
  const store = new FileConsumerStore({
    dir: opts.dir,
    fs: opts.fs ?? new NodeFs(),
    clock: opts.clock ?? new SystemClock(),
    syncIntervalMs: opts.syncIntervalMs ?? 0,
  });
  store.open();
  return store;
}
