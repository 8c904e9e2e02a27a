// Time slices of the event loop for JetStream API work. Every client shares one loop, so a
// request that means a lot of work (a stream with 10,000 subjects: the overlap searches and
// 10,000 subscriptions) is done as steps, and between steps the pacer hands the loop back
// (setImmediate: pending I/O, other clients' reads, timers) once the turn's slice is used.
// The API queue (api.ts) runs its requests on the same pacer, so one turn does at most
// about one slice of API work, however it is split between requests.

/** Work at most this long per turn of the loop before yielding. */
export const API_SLICE_MS = 2;

export class Pacer {
  private sliceStartMs = performance.now();
  /** Turns given back to the loop, since start (for tests and measurements). */
  turns = 0;

  constructor(readonly sliceMs = API_SLICE_MS) {}

  /** A new slice starts now (the start of a turn's work). */
  begin(): void {
    this.sliceStartMs = performance.now();
  }

  /** The current slice is used up. */
  get due(): boolean {
    return performance.now() - this.sliceStartMs >= this.sliceMs;
  }

  /** Yields to the loop for a turn, then starts a new slice. */
  async nextTurn(): Promise<void> {
    await new Promise<void>((r) => setImmediate(r));
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
