// SubjectMap (src/storage/memory/subjtable.ts): one Map while small, 64 once big (so that no
// single rehash walks the whole table); it must answer as a Map does, across the split.

import { test } from "node:test";
import assert from "node:assert/strict";
import { SubjectMap } from "../../src/storage/memory/subjtable.js";
import { SeededRandom } from "../../src/runtime/random.js";

void test("SubjectMap: the same answers as a Map across its split (seeded: sets, deletes, clear)", () => {
  const rand = new SeededRandom(3);
  const r = (): number => rand.next();
  const m = new SubjectMap<number>();
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
    m.clear();
    ref.clear();
    assert.equal(m.size, 0);
    assert.equal(m.get("s.1.1"), undefined);
  }
});
