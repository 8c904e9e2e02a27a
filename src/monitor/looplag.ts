// Event loop lag: how late the loop runs a timer that should fire every RESOLUTION_MS (an
// unref'd interval that records its own lateness into a perf_hooks histogram: one short
// callback per 10 ms; monitorEventLoopDelay's histogram cannot be merged into another, which
// the windows below need). tsnats serves every
// connection on this one loop, so this is how long any client may wait behind another's
// work. nats-server has no such field; /varz shows it as `tsnats_event_loop_lag` and
// /metrics as `tsnats_event_loop_lag_*_seconds`.
//
// Windows: percentiles cover the current window and the one before (WINDOW_MS each), so a
// reading always spans between one and two windows of recent history; `max_ms_since_start`
// never resets.

import { createHistogram, type RecordableHistogram } from "node:perf_hooks";
import type { Clock, TimerHandle } from "../runtime/clock.js";

const RESOLUTION_MS = 10;
export const LOOP_LAG_WINDOW_MS = 30_000;
const NS_PER_MS = 1e6;

export interface LoopLag {
  /** What the percentiles cover, in ms (the current window plus the previous one). */
  window_ms: number;
  p50_ms: number;
  p99_ms: number;
  max_ms: number;
  mean_ms: number;
  max_ms_since_start: number;
}

export const NO_LOOP_LAG: LoopLag = { window_ms: 0, p50_ms: 0, p99_ms: 0, max_ms: 0, mean_ms: 0, max_ms_since_start: 0 };

const round3 = (ns: number): number => (Number.isFinite(ns) ? Math.round((ns / NS_PER_MS) * 1000) / 1000 : 0);

export class LoopLagMeter {
  private live: RecordableHistogram = createHistogram();
  private prev: RecordableHistogram = createHistogram();
  private windowStart: number;
  private maxEverNs = 0;
  private last: number;
  private timer: TimerHandle | null = null;
  private stopped = false;

  constructor(private readonly clock: Clock) {
    this.windowStart = clock.nowMs();
    this.last = clock.monoMs();
    this.arm();
  }

  private arm(): void {
    this.timer = this.clock.setTimer(() => {
      this.timer = null;
      if (this.stopped) return;
      this.tick();
      this.arm();
    }, RESOLUTION_MS);
  }

  /** Records how late this tick is; rotates the window. */
  tick(): void {
    const t = this.clock.monoMs();
    const lateNs = Math.round((t - this.last - RESOLUTION_MS) * NS_PER_MS);
    this.last = t;
    // record() takes integers >= 1; on time counts as 1 ns.
    this.live.record(lateNs >= 1 ? lateNs : 1);
    if (this.clock.nowMs() - this.windowStart >= LOOP_LAG_WINDOW_MS) this.rotate();
  }

  private rotate(): void {
    if (this.live.count > 0) this.maxEverNs = Math.max(this.maxEverNs, this.live.max);
    this.prev = this.live;
    this.live = createHistogram();
    this.windowStart = this.clock.nowMs();
  }

  read(): LoopLag {
    const h = createHistogram();
    if (this.prev.count > 0) h.add(this.prev);
    if (this.live.count > 0) {
      h.add(this.live);
      this.maxEverNs = Math.max(this.maxEverNs, this.live.max);
    }
    const covered = this.clock.nowMs() - this.windowStart + (this.prev.count > 0 ? LOOP_LAG_WINDOW_MS : 0);
    if (h.count === 0) return { ...NO_LOOP_LAG, window_ms: covered, max_ms_since_start: round3(this.maxEverNs) };
    return {
      window_ms: covered,
      p50_ms: round3(h.percentile(50)),
      p99_ms: round3(h.percentile(99)),
      max_ms: round3(h.max),
      mean_ms: round3(h.mean),
      max_ms_since_start: round3(this.maxEverNs),
    };
  }

  stop(): void {
    this.stopped = true;
    if (this.timer !== null) this.clock.clearTimer(this.timer);
    this.timer = null;
  }
}
