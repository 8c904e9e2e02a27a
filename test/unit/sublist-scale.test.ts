// The Sublist under bursts: many subscriptions to one subject (O(1) insert and remove, not a
// copy of the whole group each time), results in hand that must not change, insertion order
// kept through the Set a large group keeps, and wildcard invalidation of a large cache.

import { test } from "node:test";
import assert from "node:assert/strict";
import { Sublist } from "../../src/subjects/sublist.js";
import { subjectMatches } from "../../src/subjects/subject.js";

class Sub {
  constructor(
    readonly subject: string,
    readonly queue = "",
    readonly id = "",
  ) {}
}

// Seeded, so a failure repeats.
function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

void test("a result in hand is unchanged by inserts and removes, small and large groups", () => {
  for (const n of [3, 40, 500]) {
    const sl = new Sublist<Sub>();
    const subs = Array.from({ length: n }, (_, i) => new Sub("a.b", "", `p${i}`));
    const qs = Array.from({ length: n }, (_, i) => new Sub("a.b", "q", `q${i}`));
    for (let i = 0; i < n; i++) {
      sl.insert(subs[i]!);
      sl.insert(qs[i]!);
    }
    const before = sl.match("a.b");
    const p0 = before.psubs.map((s) => s.id);
    const q0 = before.qsubs.map((g) => g.map((s) => s.id));
    // Change the group every way: remove half, add new ones, remove one of the new ones.
    for (let i = 0; i < n; i += 2) {
      sl.remove(subs[i]!);
      sl.remove(qs[i]!);
    }
    const extra = new Sub("a.b", "", "x");
    const qextra = new Sub("a.b", "q", "qx");
    sl.insert(extra);
    sl.insert(qextra);
    assert.deepEqual(before.psubs.map((s) => s.id), p0, `n=${n}: psubs in hand changed`);
    assert.deepEqual(before.qsubs.map((g) => g.map((s) => s.id)), q0, `n=${n}: qsubs in hand changed`);
    const after = sl.match("a.b");
    const want = subs.filter((_, i) => i % 2 === 1).map((s) => s.id);
    assert.deepEqual(after.psubs.map((s) => s.id), [...want, "x"], `n=${n}: order after changes`);
    assert.deepEqual(after.qsubs.map((g) => g.map((s) => s.id)), [[...qs.filter((_, i) => i % 2 === 1).map((s) => s.id), "qx"]]);
    // The second result is again independent of what follows.
    const held = after.psubs.map((s) => s.id);
    sl.remove(extra);
    assert.deepEqual(after.psubs.map((s) => s.id), held);
    assert.equal(sl.size, 2 * (n - Math.ceil(n / 2)) + 1);
  }
});

void test("large groups keep insertion order through adds, removes and re-adds (model check)", () => {
  const r = rng(7);
  const sl = new Sublist<Sub>();
  const pool = Array.from({ length: 200 }, (_, i) => new Sub("x.y", i % 3 === 0 ? "g" : "", `s${i}`));
  const model: Sub[] = []; // insertion order of what is subscribed
  let held: { ids: string[]; res: ReturnType<typeof sl.match> }[] = [];
  for (let step = 0; step < 5000; step++) {
    const s = pool[Math.floor(r() * pool.length)]!;
    const at = model.indexOf(s);
    if (at >= 0) {
      assert.equal(sl.remove(s), true);
      model.splice(at, 1);
    } else {
      sl.insert(s);
      model.push(s);
    }
    if (r() < 0.2) {
      const res = sl.match("x.y");
      assert.deepEqual(
        res.psubs.map((x) => x.id),
        model.filter((x) => x.queue === "").map((x) => x.id),
        `step ${step}: psubs`,
      );
      const g = model.filter((x) => x.queue === "g").map((x) => x.id);
      assert.deepEqual(
        res.qsubs.map((q) => q.map((x) => x.id)),
        g.length === 0 ? [] : [g],
        `step ${step}: qsubs`,
      );
      held.push({ ids: res.psubs.map((x) => x.id), res });
    }
    if (held.length > 20) held = held.slice(10);
    for (const h of held) assert.deepEqual(h.res.psubs.map((x) => x.id), h.ids, `step ${step}: a held result changed`);
  }
  assert.equal(sl.size, model.length);
  for (const s of [...model]) assert.equal(sl.remove(s), true);
  assert.equal(sl.size, 0);
  assert.equal(sl.match("x.y").psubs.length, 0);
});

void test("100k subscriptions to one subject insert and remove in linear time", { timeout: 20000 }, () => {
  // Quadratic (a copy of the group per insert) took about a minute here; linear is well
  // under a second. The timeout is the assertion, loose for a loaded machine.
  const sl = new Sublist<Sub>();
  const n = 100_000;
  const subs = Array.from({ length: n }, (_, i) => new Sub("same.subject", i % 10 === 0 ? "q" : "", String(i)));
  for (const s of subs) sl.insert(s);
  const r = sl.match("same.subject");
  assert.equal(r.psubs.length + (r.qsubs[0]?.length ?? 0), n);
  // Removes in insertion order (a disconnect) and in reverse (UNSUB from the top).
  for (let i = 0; i < n / 2; i++) assert.equal(sl.remove(subs[i]!), true);
  for (let i = n - 1; i >= n / 2; i--) assert.equal(sl.remove(subs[i]!), true);
  assert.equal(sl.size, 0);
  assert.equal(sl.match("same.subject").psubs.length, 0);
});

void test("a wildcard insert or remove with a large cache still invalidates what it must", () => {
  const sl = new Sublist<Sub>();
  // Two nodes per subject make every match a merged (cacheable) result.
  sl.insert(new Sub("c.>", "", "fwc"));
  sl.insert(new Sub("c.*.*", "", "pwc"));
  const subjects = Array.from({ length: 300 }, (_, i) => `c.${i}.x`);
  for (let round = 0; round < 2; round++) for (const s of subjects) sl.match(s); // second miss admits
  assert.ok(sl.cacheSize() > 64, `cache holds ${sl.cacheSize()}`);
  const w = new Sub("c.7.*", "", "new");
  sl.insert(w);
  assert.deepEqual(sl.match("c.7.x").psubs.map((s) => s.id).sort(), ["fwc", "new", "pwc"]);
  assert.deepEqual(sl.match("c.8.x").psubs.map((s) => s.id).sort(), ["fwc", "pwc"]);
  // Refill, then remove the wildcard with a large cache again.
  for (let round = 0; round < 2; round++) for (const s of subjects) sl.match(s);
  sl.remove(w);
  assert.deepEqual(sl.match("c.7.x").psubs.map((s) => s.id).sort(), ["fwc", "pwc"]);
  // A small cache takes the one-by-one path.
  const sl2 = new Sublist<Sub>();
  sl2.insert(new Sub("d.>", "", "fwc"));
  sl2.insert(new Sub("d.*", "", "pwc"));
  for (let round = 0; round < 2; round++) for (const s of ["d.1", "d.2"]) sl2.match(s);
  sl2.insert(new Sub("d.1", "", "lit"));
  sl2.insert(new Sub("*.2", "", "w2"));
  assert.deepEqual(sl2.match("d.1").psubs.map((s) => s.id).sort(), ["fwc", "lit", "pwc"]);
  assert.deepEqual(sl2.match("d.2").psubs.map((s) => s.id).sort(), ["fwc", "pwc", "w2"]);
});

void test("random bursts on a few subjects agree with subjectMatches (seeded, large groups)", () => {
  const r = rng(42);
  const patterns = ["a.b", "a.*", "a.>", ">", "*.b", "a.b", "a.b"]; // a.b weighted
  const subjects = ["a.b", "a.c", "z.b", "a.b.c"];
  const sl = new Sublist<Sub>();
  const live = new Set<Sub>();
  let id = 0;
  for (let step = 0; step < 20000; step++) {
    if (live.size > 0 && r() < 0.45) {
      const arr = [...live];
      const s = arr[Math.floor(r() * arr.length)]!;
      assert.equal(sl.remove(s), true);
      live.delete(s);
    } else {
      const s = new Sub(patterns[Math.floor(r() * patterns.length)]!, r() < 0.3 ? (r() < 0.5 ? "q1" : "q2") : "", String(id++));
      sl.insert(s);
      live.add(s);
    }
    if (step % 97 === 0) {
      for (const subj of subjects) {
        const res = sl.match(subj);
        const got = [...res.psubs, ...res.qsubs.flat()].map((s) => s.id).sort();
        const want = [...live].filter((s) => subjectMatches(s.subject, subj)).map((s) => s.id).sort();
        assert.deepEqual(got, want, `step ${step} ${subj}`);
      }
    }
  }
});
