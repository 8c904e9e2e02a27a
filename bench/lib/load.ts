// Load primitives shared by the suites: time, percentiles, chunked publishing, waiting on
// counters with a bound.

import type { RawConn } from "./conn.js";

const T0 = process.hrtime.bigint();

/** Nanoseconds since module load, as a Number (exact well past a year). */
export function nowNs(): number {
  return Number(process.hrtime.bigint() - T0);
}

export function percentile(sorted: Float64Array | number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const idx = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[idx]!;
}

/** p50/p99 in microseconds from latencies in nanoseconds. */
export function latencyStats(latNs: number[]): { p50: number; p99: number } {
  const a = Float64Array.from(latNs).sort();
  return { p50: percentile(a, 50) / 1000, p99: percentile(a, 99) / 1000 };
}

export function payloadOf(size: number): Buffer {
  const b = Buffer.alloc(size);
  for (let i = 0; i < size; i++) b[i] = 97 + (i % 26);
  return b;
}

export function pubFrame(subject: string, payload: Buffer): Buffer {
  return Buffer.concat([Buffer.from(`PUB ${subject} ${payload.length}\r\n`), payload, Buffer.from("\r\n")]);
}

const CHUNK_TARGET_BYTES = 256 * 1024;

export interface PublishPlan {
  /** Stop after this many messages (Infinity: only the deadline). */
  maxMsgs: number;
  /** Stop once nowNs() passes this (Infinity: only the count). */
  deadlineNs: number;
  /** Awaited before each chunk when it returns a promise: flow control against receivers. */
  gate?: (sent: number) => Promise<void> | null;
}

/**
 * Publish one pre-encoded frame over and over, in chunks of ~256 KiB that are written
 * whole, honouring socket backpressure. Returns the number of messages written.
 */
export async function publishFrames(conn: RawConn, frame: Buffer, plan: PublishPlan): Promise<number> {
  const perChunk = Math.max(1, Math.floor(CHUNK_TARGET_BYTES / frame.length));
  const chunk = Buffer.alloc(perChunk * frame.length);
  for (let k = 0; k < perChunk; k++) frame.copy(chunk, k * frame.length);
  let sent = 0;
  while (sent < plan.maxMsgs && nowNs() < plan.deadlineNs) {
    const g = plan.gate?.(sent);
    if (g) await g;
    const n = Math.min(perChunk, plan.maxMsgs - sent);
    const ok = conn.write(n === perChunk ? chunk : chunk.subarray(0, n * frame.length));
    sent += n;
    if (!ok) await conn.waitDrain();
  }
  return sent;
}

/**
 * Resolve once cond() holds, re-checked whenever one of the connections reports progress.
 * Rejects when nothing changes (per progressKey) for stallMs, or when a connection closes.
 */
export function waitFor(
  conns: RawConn[],
  cond: () => boolean,
  progressKey: () => number,
  stallMs: number,
  what: string,
): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    let last = progressKey();
    let lastChange = performance.now();
    const finish = (err: Error | null): void => {
      clearInterval(timer);
      for (const c of conns) c.onProgress = null;
      if (err === null) resolve();
      else reject(err);
    };
    const check = (): void => {
      if (cond()) return finish(null);
      const closed = conns.find((c) => c.closed);
      if (closed !== undefined) {
        return finish(new Error(`${what}: connection closed${closed.errors.length > 0 ? ` (${closed.errors.at(-1)})` : ""}`));
      }
      const k = progressKey();
      if (k !== last) {
        last = k;
        lastChange = performance.now();
      }
    };
    const timer = setInterval(() => {
      check();
      if (performance.now() - lastChange > stallMs) {
        finish(new Error(`${what}: stalled at ${progressKey()} for ${stallMs} ms`));
      }
    }, 100);
    for (const c of conns) c.onProgress = check;
    check();
  });
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

export function deadlineAfter(seconds: number): number {
  return nowNs() + seconds * 1e9;
}
