// Timing without a timer per item (STYLE 7). A Ticker owns the one Clock timer of the
// consumer layer and runs the `tick` of every consumer that asked for one; a consumer keeps
// its ack deadlines in a RedeliveryWheel: buckets of sequences by coarse tick number.

import type { Clock, TimerHandle } from "../runtime/clock.js";

export const TICK_MS = 50;
/** Redelivery deadlines are kept to this resolution; the consumer asks the Ticker to wake at
 *  the next one due before the coarse tick (nats.js "jetstream - backoff" expects
 *  redeliveries within 50 ms of the backoff values: 50 ms buckets on a 50 ms tick were up to
 *  ~100 ms late). */
export const WHEEL_RES_MS = 10;

/** Deadlines of sequences, resolved to buckets of tickMs. */
export class RedeliveryWheel {
  private readonly buckets = new Map<number, number[]>();
  private readonly due = new Map<number, number>(); // seq -> bucket
  private last = -1; // highest bucket already drained
  constructor(private readonly tickMs: number = WHEEL_RES_MS) {}

  /** The earliest live deadline's bucket time in (last drained, nowMs + horizonMs], or
   *  Infinity: a look ahead over bucket numbers (horizon / resolution map lookups), so the
   *  consumer can ask for a wake-up at the next deadline before the coarse tick. Buckets
   *  whose sequences were all acked or rescheduled are dropped on the way (each entry is
   *  looked at once), so acked deliveries cause no wake-ups. */
  nextDueMs(nowMs: number, horizonMs: number): number {
    if (this.buckets.size === 0) return Infinity;
    const end = Math.floor((nowMs + horizonMs) / this.tickMs);
    for (let k = Math.max(this.last + 1, Math.floor(nowMs / this.tickMs)); k <= end; k++) {
      const list = this.buckets.get(k);
      if (list === undefined) continue;
      let live = false;
      for (let i = 0; i < list.length; i++) {
        if (this.due.get(list[i]!) === k) {
          live = true;
          if (i > 0) list.splice(0, i);
          break;
        }
      }
      if (live) return k * this.tickMs;
      this.buckets.delete(k);
    }
    return Infinity;
  }

  get size(): number {
    return this.due.size;
  }

  /** (Re)schedule seq to fire at monotonic time atMs (rounded up to a bucket). */
  schedule(seq: number, atMs: number): void {
    let b = Math.ceil(atMs / this.tickMs);
    if (b <= this.last) b = this.last + 1;
    const prev = this.due.get(seq);
    if (prev === b) return;
    this.due.set(seq, b);
    let list = this.buckets.get(b);
    if (list === undefined) {
      list = [];
      this.buckets.set(b, list);
    }
    list.push(seq);
  }

  cancel(seq: number): void {
    this.due.delete(seq);
  }

  has(seq: number): boolean {
    return this.due.has(seq);
  }

  clear(): void {
    this.buckets.clear();
    this.due.clear();
  }

  /** Append every sequence whose deadline is at or before nowMs to out, in bucket order
   *  and, within a bucket, ascending sequence order. */
  expire(nowMs: number, out: number[]): void {
    const cur = Math.floor(nowMs / this.tickMs);
    if (cur <= this.last) return;
    const from = this.last + 1;
    this.last = cur;
    if (this.buckets.size === 0) return;
    const keys: number[] = [];
    if (cur - from > this.buckets.size * 4) {
      for (const k of this.buckets.keys()) if (k <= cur) keys.push(k);
      keys.sort((a, b) => a - b);
    } else {
      for (let k = from; k <= cur; k++) if (this.buckets.has(k)) keys.push(k);
    }
    for (const k of keys) {
      const list = this.buckets.get(k)!;
      this.buckets.delete(k);
      const start = out.length;
      for (const seq of list) {
        if (this.due.get(seq) === k) {
          this.due.delete(seq);
          out.push(seq);
        }
      }
      if (out.length - start > 1) {
        const part = out.splice(start).sort((a, b) => a - b);
        for (const s of part) out.push(s);
      }
    }
  }
}

export interface Tickable {
  /** Called on every tick while registered; return false to be dropped until the next
   *  want(). */
  tick(nowMono: number): boolean;
}

/** The single timer of the consumer layer: a coarse tick, brought forward when someone
 *  needs a precise deadline (a pull request's expiry: libnats gives the server only 10 ms
 *  between the request's expires and its own timeout, so a 408 must not wait for the tick). */
export class Ticker {
  private readonly active = new Set<Tickable>();
  private timer: TimerHandle | null = null;
  private timerAtMs = 0;
  constructor(
    private readonly clock: Clock,
    private readonly onError: (e: unknown) => void,
    private readonly tickMs: number = TICK_MS,
  ) {}

  want(t: Tickable): void {
    this.active.add(t);
    // arm() only ever moves the timer earlier: a far wakeAt() must not delay the tick.
    this.arm(this.clock.monoMs() + this.tickMs);
  }

  /** Like want(), and fire no later than monotonic time atMs. A tickable that still needs
   *  the deadline after a tick asks again from its tick(). */
  wakeAt(t: Tickable, atMs: number): void {
    this.active.add(t);
    this.arm(atMs);
  }

  drop(t: Tickable): void {
    this.active.delete(t);
  }

  get size(): number {
    return this.active.size;
  }

  /** Make the timer fire at atMs or earlier. */
  private arm(atMs: number): void {
    if (this.timer !== null) {
      if (this.timerAtMs <= atMs) return;
      this.clock.clearTimer(this.timer);
    }
    this.timerAtMs = atMs;
    this.timer = this.clock.setTimer(this.fire, Math.max(0, atMs - this.clock.monoMs()));
  }

  private readonly fire = (): void => {
    this.timer = null;
    const now = this.clock.monoMs();
    for (const t of [...this.active]) {
      let keep = false;
      try {
        keep = t.tick(now);
      } catch (e) {
        this.onError(e);
        keep = false;
      }
      if (!keep) this.active.delete(t);
    }
    if (this.active.size > 0) this.arm(now + this.tickMs);
  };

  stop(): void {
    if (this.timer !== null) this.clock.clearTimer(this.timer);
    this.timer = null;
    this.active.clear();
  }
}
