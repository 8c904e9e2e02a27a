// The trie self-join against the pairwise definition (subjectsCollide / subjectIsSubsetMatch):
// seeded random subject lists over a small alphabet so that collisions, '*' and '>' are
// common; the pair found is the one nats-server's loop names (smallest i, then j). Then the
// sizes that used to stall and the work limit on a hostile list.
import { test } from "node:test";
import assert from "node:assert/strict";
import { findCrossOverlap, findOverlap, OverlapBudgetExceeded, OverlapSearch, SupersetIndex } from "../../src/subjects/overlap.js";
import { subjectIsSubsetMatch, subjectsCollide } from "../../src/subjects/subject.js";

function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const TOKENS = ["a", "b", "c", "*"];

function randomSubject(rnd: () => number): string {
  const n = 1 + Math.floor(rnd() * 4);
  const t: string[] = [];
  for (let i = 0; i < n; i++) t.push(TOKENS[Math.floor(rnd() * TOKENS.length)]!);
  if (rnd() < 0.3) t.push(">");
  return t.join(".");
}

void test("findOverlap names the same pair as the pairwise loop (10,000 seeded lists)", () => {
  const rnd = prng(14);
  for (let iter = 0; iter < 10_000; iter++) {
    const n = 1 + Math.floor(rnd() * 8);
    const s = Array.from({ length: n }, () => randomSubject(rnd));
    let want: { i: number; j: number } | null = null;
    outer: for (let i = 0; i < n; i++) {
      for (let j = i + 1; j < n; j++) {
        if (subjectsCollide(s[i]!, s[j]!)) {
          want = { i, j };
          break outer;
        }
      }
    }
    assert.deepEqual(findOverlap(s, 1e9, 1e9), want, JSON.stringify(s));
    const m = Math.floor(n / 2);
    const a = s.slice(0, m);
    const b = s.slice(m);
    const hit = findCrossOverlap(a, b, 1e9);
    const any = b.some((y) => a.some((x) => subjectsCollide(x, y)));
    assert.equal(hit >= 0, any, JSON.stringify([a, b]));
    if (hit >= 0) assert.ok(a.some((x) => subjectsCollide(x, b[hit]!)));
  }
});

void test("SupersetIndex agrees with subjectIsSubsetMatch against every other subject", () => {
  const rnd = prng(15);
  for (let iter = 0; iter < 5_000; iter++) {
    const n = 1 + Math.floor(rnd() * 8);
    const s = Array.from({ length: n }, () => randomSubject(rnd));
    const idx = new SupersetIndex(s);
    for (let i = 0; i < n; i++) {
      const want = s.some((t, j) => j !== i && subjectIsSubsetMatch(s[i]!, t));
      const got = idx.superset(s[i]!, i);
      assert.equal(got >= 0, want, JSON.stringify([s, i]));
      if (got >= 0) assert.ok(subjectIsSubsetMatch(s[i]!, s[got]!));
    }
  }
});

void test("60,000 subjects with wildcards: no overlap found, well inside the work limit", () => {
  const s: string[] = [];
  for (let i = 0; i < 60_000; i++) s.push(i % 10 === 0 ? `s${i}.*.x` : i % 10 === 1 ? `w${i}.>` : `a.b${i}.c`);
  assert.equal(findOverlap(s), null);
  s.push("a.*.c");
  assert.deepEqual(findOverlap(s, undefined, 10_000), { i: 2, j: 60_000 });
});

void test("a hostile list (every pair compatible until the last token) hits the work limit, not the event loop", () => {
  const s: string[] = [];
  for (let i = 0; i < 30_000; i++) {
    s.push(`k${i}.*.x`);
    s.push(`*.m${i}.y`);
  }
  assert.throws(() => findOverlap(s), OverlapBudgetExceeded);
  // The same list with a big enough budget is decided (no pair collides) — small sizes only.
  assert.equal(findOverlap(s.slice(0, 400), 1e9), null);
});

void test("OverlapSearch worked a few units at a time finds what one call finds (self and cross, literal-heavy lists)", () => {
  const rnd = prng(1414);
  const LIT = ["a", "b", "c", "d"];
  for (let iter = 0; iter < 3000; iter++) {
    const n = 1 + Math.floor(rnd() * 12);
    // Mostly plain literals (the Map and walk paths), some patterns (the trie join).
    const s = Array.from({ length: n }, () => (rnd() < 0.7 ? Array.from({ length: 1 + Math.floor(rnd() * 3) }, () => LIT[Math.floor(rnd() * LIT.length)]!).join(".") : randomSubject(rnd)));
    let want: { i: number; j: number } | null = null;
    outer: for (let i = 0; i < n; i++) {
      for (let j = i + 1; j < n; j++) {
        if (subjectsCollide(s[i]!, s[j]!)) {
          want = { i, j };
          break outer;
        }
      }
    }
    const self = new OverlapSearch(s, null, 1e9, 1e9);
    let steps = 0;
    while (!self.step(1 + Math.floor(rnd() * 6))) steps++;
    assert.deepEqual(self.pair, want, JSON.stringify(s));
    assert.ok(steps < 10_000);
    const m = Math.floor(n / 2);
    const a = s.slice(0, m);
    const b = s.slice(m);
    const cross = new OverlapSearch(a, b);
    while (!cross.step(1 + Math.floor(rnd() * 6)));
    const hit = cross.crossIndex;
    const any = b.some((y) => a.some((x) => subjectsCollide(x, y)));
    assert.equal(hit >= 0, any, JSON.stringify([a, b]));
    if (hit >= 0) assert.ok(a.some((x) => subjectsCollide(x, b[hit]!)), JSON.stringify([a, b, hit]));
  }
});

void test("10,000 literal subjects: a duplicate is named, and a cross search finds the one colliding pattern", () => {
  const s = Array.from({ length: 10_000 }, (_, i) => `hostile.s.${i}`);
  assert.equal(findOverlap(s), null);
  assert.deepEqual(findOverlap([...s, "hostile.s.17"], 1e9, 10_000), { i: 17, j: 10_000 });
  assert.equal(findCrossOverlap(s, ["x.>", "y", "hostile.*.9999"]), 2);
  assert.equal(findCrossOverlap(["x.>", "hostile.s.*"], s), 0);
  assert.equal(findCrossOverlap(s, ["hostile.s"]), -1);
});
