// Time slices of the event loop for JetStream API work. Every client shares one loop, so a
// request that means a lot of work (a stream with 10,000 subjects: the overlap searches and
// 10,000 subscriptions) is done as steps, and between steps the pacer hands the loop back
// (the Scheduler's next turn: pending I/O, other clients' reads, timers) once the turn's slice is used.
// The API queue (api.ts) runs its requests on the same pacer, so one turn does at most
// about one slice of API work, however it is split between requests.

import type { Clock } from "../runtime/clock.js";
import type { Scheduler } from "../runtime/sched.js";

/** Work at most this long per turn of the loop before yielding. */
export const API_SLICE_MS = 2;

export class Pacer {
  private sliceStartMs: number;
  /** Turns given back to the loop, since start (for tests and measurements). */
  turns = 0;

  constructor(
    private readonly clock: Clock,
    private readonly sched: Scheduler,
    readonly sliceMs = API_SLICE_MS,
  ) {
    this.sliceStartMs = clock.monoMs();
  }

  /** A new slice starts now (the start of a turn's work). */
  begin(): void {
    this.sliceStartMs = this.clock.monoMs();
  }

  /** The current slice is used up. */
  get due(): boolean {
    return this.clock.monoMs() - this.sliceStartMs >= this.sliceMs;
  }

  /** Yields to the loop for a turn, then starts a new slice. */
  async nextTurn(): Promise<void> {
    await new Promise<void>((r) => this.sched.nextTurn(r));
    this.turns++;
    this.begin();
  }

  /** Yields when the slice is used up; otherwise goes straight on. */
  async breathe(): Promise<void> {
    if (this.due) await this.nextTurn();
  }

  /** Calls step until it returns true, yielding between calls whenever the slice is used up.
   *  step should do a small bounded amount of work (well under a slice). */
  async run(step: () => boolean): Promise<void> {
    while (!step()) if (this.due) await this.nextTurn();
  }
}
