// The start of a last_per_subject consumer over many subjects, built over several turns.
//
// Such a consumer first delivers the newest message of every subject its filters match, in
// stream order: a list of one sequence per subject, sorted. Over 400,000 subjects, walking
// the subject table and sorting took 130-170 ms in one call on a fresh server (the code runs
// cold, once), and every other client waited. consumer-api.ts builds the list here first,
// a bounded step at a time with the API pacer's breathe() between steps, and then creates
// the consumer with it (ConsumerCore's `plan`).
//
// The sort is a bit array over the sequences' span, marked and then read in steps (distinct
// sequences come out ascending, no comparisons); a span too sparse for it (more than
// SPARSE_SPAN times the count) falls back to one typed-array sort.

import type { StreamStore } from "../storage/types.js";

/** The newest sequence of each matching subject, ascending, as of the stream's last sequence
 *  `end` when the walk began. */
export interface LastPerSubjectPlan {
  readonly seqs: number[];
  readonly end: number;
}

/** Subjects visited per step of the walk (a step is well under the pacer's 2 ms slice). */
export const SUBJECTS_PER_STEP = 2048;
/** Sequences looked at, marked or read out per step (run once, this code is not compiled
 *  yet: ~0.2 us a sequence, about 1 ms a step). */
const SEQS_PER_STEP = 4096;
/** A span wider than this many times the count is sorted instead of marked. */
const SPARSE_SPAN = 256;

/**
 * Builds the plan for filters (">" for none) over store as of sequence `end` (by default
 * the store's last), calling breathe between steps (it
 * yields to the loop when the turn's slice is used). null when the store cannot walk its
 * subjects in steps (the consumer then computes its start in one call, as before).
 */
export async function buildLastPerSubject(
  store: StreamStore,
  filters: string[],
  breathe: () => Promise<void>,
  end: number = store.state().lastSeq,
): Promise<LastPerSubjectPlan | null> {
  if (store.lastSeqsScan === undefined) return null;
  const found: number[] = [];
  for (const f of filters.length === 0 ? [">"] : filters) {
    const scan = store.lastSeqsScan(f, end);
    while (!scan.step(SUBJECTS_PER_STEP, found)) await breathe();
    await breathe();
  }
  return { seqs: await ascendingSteps(found, breathe), end };
}

/** Distinct sequences of seqs in ascending order, a bounded step at a time. */
export async function ascendingSteps(seqs: number[], breathe: () => Promise<void>): Promise<number[]> {
  const n = seqs.length;
  if (n < 2) return seqs;
  let lo = Infinity;
  let hi = -Infinity;
  for (let i = 0; i < n; i++) {
    const q = seqs[i]!;
    if (q < lo) lo = q;
    if (q > hi) hi = q;
    if ((i & (SEQS_PER_STEP - 1)) === SEQS_PER_STEP - 1) await breathe();
  }
  const span = hi - lo + 1;
  if (span > SPARSE_SPAN * n) {
    const sorted = Float64Array.from(seqs).sort();
    const out: number[] = [];
    for (let i = 0; i < n; i++) if (i === 0 || sorted[i] !== sorted[i - 1]) out.push(sorted[i]!);
    return out;
  }
  const bits = new Uint32Array(Math.ceil(span / 32));
  for (let i = 0; i < n; i++) {
    const off = seqs[i]! - lo;
    bits[off >>> 5]! |= 1 << (off & 31);
    if ((i & (SEQS_PER_STEP - 1)) === SEQS_PER_STEP - 1) await breathe();
  }
  const out: number[] = [];
  let budget = SEQS_PER_STEP;
  for (let w = 0; w < bits.length; w++) {
    let word = bits[w]!;
    while (word !== 0) {
      // The lowest set bit: its index is 31 - clz32 of it alone.
      const low = word & -word;
      out.push(lo + w * 32 + (31 - Math.clz32(low)));
      word ^= low;
      budget--;
    }
    if (--budget <= 0) {
      budget = SEQS_PER_STEP;
      await breathe();
    }
  }
  return out;
}
