// A purge begun with SeqIndex.beginPurge, run a slice at a time.
import type { StorePurge } from "../types.js";

/** A purge begun with beginPurge: what it removes is fixed at begin. `front`: every live
 *  message below `cut`; otherwise those below `cut` whose subject matches `filter` (the
 *  subject id `id` for a literal filter, 0 for a wildcard). */
export class PurgeJob implements StorePurge {
  purged = 0;
  done = false;
  /** Sequences below it have been worked through. */
  cursor = 0;
  constructor(
    private readonly owner: { purgeStep(j: PurgeJob, budget: number): boolean },
    readonly front: boolean,
    readonly cut: number,
    readonly filter: string,
    readonly id: number,
  ) {}

  step(budgetSeqs: number): boolean {
    return this.done || this.owner.purgeStep(this, budgetSeqs);
  }
}

const DONE_PURGE_OWNER = { purgeStep: (): boolean => true };

export function donePurge(n: number): StorePurge {
  const j = new PurgeJob(DONE_PURGE_OWNER, true, 0, "", 0);
  j.purged = n;
  j.done = true;
  return j;
}
