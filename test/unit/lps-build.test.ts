// The last_per_subject start built in steps (src/consumer/lps-build.ts): the same sequences as
// the one-call way, in order, with the work split between breathe() calls, and a message
// stored while the walk is under way leaves the plan as of its start.

import { test } from "node:test";
import assert from "node:assert/strict";
import { MemoryStreamStore } from "../../src/storage/memory/stream.js";
import { ascendingSteps, buildLastPerSubject, SUBJECTS_PER_STEP } from "../../src/consumer/lps-build.js";
import { SeededRandom } from "../../src/runtime/random.js";

const data = Buffer.from("x");

/** Seeded: failures replay. */
function rng(seed: number): () => number {
  const r = new SeededRandom(seed);
  return () => r.next();
}

const sortedDistinct = (xs: number[]): number[] => [...new Set(xs)].sort((a, b) => a - b);

void test("ascendingSteps: distinct and ascending for dense, sparse and tiny sets, and it breathes on big ones", async () => {
  const r = rng(7);
  for (const [n, spread] of [
    [0, 1],
    [1, 1],
    [2, 1],
    [1000, 2],
    [50_000, 3],
    [20_000, 10_000],
  ] as const) {
    const xs = Array.from({ length: n }, () => 1 + Math.floor(r() * n * spread));
    let breaths = 0;
    const got = await ascendingSteps(xs.slice(), async () => void breaths++);
    assert.deepEqual(got, sortedDistinct(xs), `n=${n} spread=${spread}`);
    if (n === 50_000) assert.ok(breaths >= 20, `50,000 sequences in ${breaths} steps`);
  }
  // Sequences past 2^32 (a bit array offset from the lowest one).
  const big = [2 ** 40 + 5, 2 ** 40 + 1, 2 ** 40 + 3];
  assert.deepEqual(await ascendingSteps(big, async () => undefined), [2 ** 40 + 1, 2 ** 40 + 3, 2 ** 40 + 5]);
});

void test("buildLastPerSubject: the newest sequence of each matching subject, ascending, in steps of the subject walk", async () => {
  const store = new MemoryStreamStore(null, null);
  const r = rng(11);
  const subjects = 3 * SUBJECTS_PER_STEP + 17;
  for (let i = 0; i < subjects * 3; i++) store.storeMsg(`s.${Math.floor(r() * subjects)}.${i % 2 === 0 ? "even" : "odd"}`, null, data, i, 0);
  store.removeMsg(5);
  const want = (filter: string): number[] => sortedDistinct(store.lastSeqs!(filter));
  let breaths = 0;
  const all = await buildLastPerSubject(store, [], async () => void breaths++);
  assert.ok(all !== null);
  assert.deepEqual(all.seqs, want(">"));
  assert.equal(all.end, store.state().lastSeq);
  assert.ok(breaths >= Math.floor(store.state().numSubjects / SUBJECTS_PER_STEP), `${store.state().numSubjects} subjects, ${breaths} steps`);
  const two = await buildLastPerSubject(store, ["s.*.even", "s.1.odd"], async () => undefined);
  assert.deepEqual(two?.seqs, sortedDistinct([...store.lastSeqs!("s.*.even"), ...store.lastSeqs!("s.1.odd")]));
});

void test("buildLastPerSubject: messages stored during the walk leave each subject's newest as of its start", async () => {
  const store = new MemoryStreamStore(null, null);
  const n = 4 * SUBJECTS_PER_STEP;
  for (let i = 0; i < n; i++) store.storeMsg(`k.${i}`, null, data, i, 0);
  const before = store.lastSeqs!(">").sort((a, b) => a - b);
  let added = 0;
  const plan = await buildLastPerSubject(store, ["k.>"], async () => {
    // Every subject, those walked already and those not yet, gets a newer message.
    for (let i = 0; i < n; i += 97) {
      store.storeMsg(`k.${i}`, null, data, n + added, 0);
      added++;
    }
  });
  assert.ok(added > 0);
  assert.equal(plan?.end, n);
  assert.deepEqual(plan?.seqs, before);
});
