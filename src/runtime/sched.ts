// The determinism seam for scheduling work later in this turn or in the next one. JetStream,
// consumers and routing defer work through a Scheduler instead of calling queueMicrotask or
// setImmediate, so a simulator can run several servers in one process and decide the order.

export interface Scheduler {
  /** Run fn after the current job, before any I/O (queueMicrotask). */
  microtask(fn: () => void): void;
  /** Run fn on the next event-loop turn, after pending I/O (setImmediate). */
  nextTurn(fn: () => void): void;
}

export const systemScheduler: Scheduler = {
  microtask: queueMicrotask,
  nextTurn(fn: () => void): void {
    setImmediate(fn);
  },
};

/** A scheduler the test drives: nothing runs until runUntilIdle() (or step()). Microtasks
 *  queued while running run before the next deferred turn, as in Node. */
export class ManualScheduler implements Scheduler {
  private micro: Array<() => void> = [];
  private turns: Array<() => void> = [];
  microtask(fn: () => void): void {
    this.micro.push(fn);
  }
  nextTurn(fn: () => void): void {
    this.turns.push(fn);
  }
  get pending(): number {
    return this.micro.length + this.turns.length;
  }
  /** Drain microtasks, then run the turns queued before this call. Returns false if idle. */
  step(): boolean {
    this.drainMicro();
    if (this.turns.length === 0) return false;
    const batch = this.turns;
    this.turns = [];
    for (const fn of batch) {
      fn();
      this.drainMicro();
    }
    return true;
  }
  /** Step until nothing is queued, at most maxSteps turns. */
  runUntilIdle(maxSteps = 10_000): void {
    for (let i = 0; i < maxSteps && this.step(); i++);
  }
  private drainMicro(): void {
    for (let i = 0; i < this.micro.length; i++) this.micro[i]!();
    this.micro.length = 0;
  }
}
