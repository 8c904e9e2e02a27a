// SplitMap (src/subjects/splitmap.ts): one Map while small, 64 once big (so that no
// single rehash walks the whole table); it must answer as a Map does, across the split.

import { test } from "node:test";
import assert from "node:assert/strict";
import { SplitMap } from "../../src/subjects/splitmap.js";
import { SeededRandom } from "../../src/runtime/random.js";

void test("SplitMap: the same answers as a Map across its split (seeded: sets, deletes, clear)", () => {
  const rand = new SeededRandom(3);
  const r = (): number => rand.next();
  const m = new SplitMap<number>();
  const ref = new Map<string, number>();
  for (let round = 0; round < 2; round++) {
    for (let i = 0; i < 30_000; i++) {
      const k = `s.${Math.floor(r() * 12_000)}.${i % 3}`;
      if (r() < 0.25) assert.equal(m.delete(k), ref.delete(k), `delete ${k}`);
      else {
        m.set(k, i);
        ref.set(k, i);
      }
      if (i % 997 === 0) assert.equal(m.get(k), ref.get(k));
    }
    assert.equal(m.size, ref.size);
    for (const [k, v] of ref) assert.equal(m.get(k), v);
    assert.deepEqual([...m.values()].sort((a, b) => a - b), [...ref.values()].sort((a, b) => a - b));
    assert.deepEqual([...m.entries()].sort((a, b) => (a[0] < b[0] ? -1 : 1)), [...ref.entries()].sort((a, b) => (a[0] < b[0] ? -1 : 1)));
    for (const k of ["s.1.1", "s.2.2", "nope"]) assert.equal(m.has(k), ref.has(k));
    m.clear();
    ref.clear();
    assert.equal(m.size, 0);
    assert.equal(m.get("s.1.1"), undefined);
  }
});

void test("SplitMap: past the split, with keys both in the unsplit map and in the shards, every answer is a Map's", () => {
  const rand = new SeededRandom(11);
  const m = new SplitMap<number>();
  const ref = new Map<string, number>();
  for (let i = 0; i < 4096; i++) {
    m.set(`k.${i}`, i);
    ref.set(`k.${i}`, i);
  }
  const sorted = (it: Iterable<[string, number]>): Array<[string, number]> => [...it].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  // The 4,097th entry splits; the first 4,096 stay in the unsplit map. Overwrite, delete and
  // add, on keys on both sides, checking all of it after every operation.
  for (let step = 0; step < 200; step++) {
    const k = `k.${Math.floor(rand.next() * 5000)}`;
    const op = rand.next();
    if (op < 0.2) assert.equal(m.delete(k), ref.delete(k), `delete ${k}`);
    else {
      m.set(k, step);
      ref.set(k, step);
    }
    assert.equal(m.size, ref.size, `size after step ${step}`);
    if (step % 10 === 0) assert.deepEqual(sorted(m.entries()), sorted(ref.entries()), `entries after step ${step}`);
    for (let j = 0; j < 20; j++) {
      const q = `k.${Math.floor(rand.next() * 5000)}`;
      assert.equal(m.get(q), ref.get(q), `get ${q}`);
      assert.equal(m.has(q), ref.has(q), `has ${q}`);
    }
  }
  assert.equal([...m.values()].length, ref.size);
});
