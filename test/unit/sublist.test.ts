import { test } from "node:test";
import assert from "node:assert/strict";
import { Sublist, type SublistResult } from "../../src/subjects/sublist.js";
import { subjectMatches } from "../../src/subjects/subject.js";

class Sub {
  constructor(
    readonly subject: string,
    readonly queue = "",
    readonly id = "",
  ) {}
}

function ids(r: SublistResult<Sub>): { p: string[]; q: string[][] } {
  return {
    p: r.psubs.map((s) => s.id).sort(),
    q: r.qsubs.map((g) => g.map((s) => s.id).sort()).sort((a, b) => (a[0] ?? "").localeCompare(b[0] ?? "")),
  };
}

// Pruning is internal; the test looks at the trie root through a cast.
interface LevelView {
  nodes: Map<string, unknown>;
  pwc: unknown;
  fwc: unknown;
}
function rootOf(sl: Sublist<Sub>): LevelView {
  return (sl as unknown as { root: LevelView }).root;
}

void test("insert and match: literals, '*', '>'", () => {
  const sl = new Sublist<Sub>();
  const subs = [
    new Sub("foo.bar", "", "lit"),
    new Sub("foo.*", "", "pwc"),
    new Sub("foo.>", "", "fwc"),
    new Sub(">", "", "all"),
    new Sub("*.bar", "", "pwc0"),
    new Sub("foo.bar.baz", "", "lit3"),
    new Sub("foo*", "", "starlit"),
  ];
  for (const s of subs) sl.insert(s);
  assert.equal(sl.size, subs.length);
  assert.deepEqual(ids(sl.match("foo.bar")).p, ["all", "fwc", "lit", "pwc", "pwc0"]);
  assert.deepEqual(ids(sl.match("foo.bar.baz")).p, ["all", "fwc", "lit3"]);
  assert.deepEqual(ids(sl.match("foo")).p, ["all"]);
  assert.deepEqual(ids(sl.match("foo*")).p, ["all", "starlit"]);
  assert.deepEqual(ids(sl.match("foox")).p, ["all"]);
  assert.deepEqual(ids(sl.match("baz.bar")).p, ["all", "pwc0"]);
  assert.equal(sl.hasInterest("zzz"), true);
  assert.equal(sl.remove(subs[3]!), true);
  assert.equal(sl.hasInterest("zzz"), false);
});

void test("subjects with empty tokens match nothing, even '>' (nats-server sublist)", () => {
  const sl = new Sublist<Sub>();
  sl.insert(new Sub(">", "", "all"));
  sl.insert(new Sub("foo.>", "", "fwc"));
  sl.insert(new Sub("foo.*", "", "pwc"));
  for (const s of ["foo.", ".foo", "foo..bar", ""]) {
    assert.deepEqual(ids(sl.match(s)), { p: [], q: [] }, JSON.stringify(s));
  }
});

void test("queue groups: one array per group, plain subs separate", () => {
  const sl = new Sublist<Sub>();
  sl.insert(new Sub("work.*", "g1", "a"));
  sl.insert(new Sub("work.*", "g1", "b"));
  sl.insert(new Sub("work.>", "g1", "c")); // same group via another node: merged
  sl.insert(new Sub("work.x", "g2", "d"));
  sl.insert(new Sub("work.x", "", "p"));
  const r = ids(sl.match("work.x"));
  assert.deepEqual(r.p, ["p"]);
  assert.deepEqual(r.q, [["a", "b", "c"], ["d"]]);
  assert.deepEqual(ids(sl.match("work.y")).q, [["a", "b", "c"]]);
  assert.deepEqual(ids(sl.match("work.y.z")).q, [["c"]]);
});

void test("remove: exact subscription object only; removing twice is false", () => {
  const sl = new Sublist<Sub>();
  const a = new Sub("foo", "", "a");
  const b = new Sub("foo", "", "b");
  const q = new Sub("foo", "q", "q");
  sl.insert(a);
  sl.insert(b);
  sl.insert(q);
  assert.equal(sl.remove(new Sub("foo", "", "a")), false, "a different object with the same subject");
  assert.equal(sl.remove(new Sub("bar")), false, "unknown subject");
  assert.equal(sl.remove(new Sub("foo", "other", "q")), false, "unknown queue");
  assert.equal(sl.remove(a), true);
  assert.equal(sl.remove(a), false);
  assert.deepEqual(ids(sl.match("foo")), { p: ["b"], q: [["q"]] });
  assert.equal(sl.remove(q), true);
  assert.deepEqual(ids(sl.match("foo")), { p: ["b"], q: [] });
  assert.equal(sl.size, 1);
  const st = sl.stats();
  assert.equal(st.num_inserts, 3);
  assert.equal(st.num_removes, 2);
});

void test("results are copy-on-write: a result in hand never changes", () => {
  const sl = new Sublist<Sub>();
  const a = new Sub("foo.bar", "", "a");
  const g = new Sub("foo.bar", "g", "g1");
  sl.insert(a);
  sl.insert(g);
  const before = sl.match("foo.bar");
  const snapshot = ids(before);
  sl.insert(new Sub("foo.bar", "", "b"));
  sl.insert(new Sub("foo.*", "g", "g2"));
  sl.remove(a);
  sl.remove(g);
  assert.deepEqual(ids(before), snapshot);
  assert.deepEqual(ids(sl.match("foo.bar")), { p: ["b"], q: [["g2"]] });
});

void test("cache: a merged result enters on its second miss; then a repeated match is a hit with the same result", () => {
  const sl = new Sublist<Sub>();
  sl.insert(new Sub("foo.*", "", "a"));
  sl.insert(new Sub("foo.>", "", "b"));
  const r1 = sl.match("foo.bar");
  assert.equal(sl.match("foo.bar"), r1, "the same subject twice in a row is the last-match hit");
  assert.equal(sl.cacheSize(), 0, "one miss does not admit");
  sl.match("foo.baz"); // not foo.bar: the next foo.bar goes past the last-match slot
  const r2 = sl.match("foo.bar"); // second miss: admitted
  assert.equal(sl.cacheSize(), 1);
  sl.match("foo.baz"); // its second miss: admitted too
  const before = sl.stats();
  const r3 = sl.match("foo.bar");
  const after = sl.stats();
  assert.equal(r3, r2);
  assert.deepEqual(ids(r3), ids(r1));
  assert.equal(after.num_matches - before.num_matches, 1);
  assert.equal(Math.round(after.cache_hit_rate * after.num_matches) - Math.round(before.cache_hit_rate * before.num_matches), 1, "a cache hit");
  assert.equal(sl.cacheSize(), 2);
});

void test("cache: a one-node result is the node's own and never cached", () => {
  const sl = new Sublist<Sub>();
  sl.insert(new Sub("foo.*", "", "a"));
  const r1 = sl.match("foo.bar");
  sl.match("x");
  const r2 = sl.match("foo.baz");
  assert.equal(r2, r1, "the same prebuilt result");
  assert.deepEqual(ids(r1).p, ["a"]);
  for (let i = 0; i < 10; i++) sl.match(i % 2 === 0 ? "foo.bar" : "x");
  assert.equal(sl.cacheSize(), 0);
  sl.insert(new Sub("foo.*", "", "b"));
  assert.deepEqual(ids(sl.match("foo.baz")).p, ["a", "b"]);
  assert.notEqual(sl.match("foo.baz"), r1, "an insert into the node replaces its result");
  assert.deepEqual(ids(r1).p, ["a"], "the result in hand is unchanged");
});

void test("cache: unique subjects (reply inboxes, ack subjects) are not admitted", () => {
  const sl = new Sublist<Sub>();
  sl.insert(new Sub("$JS.ACK.S.C.>", "", "ack"));
  sl.insert(new Sub("$JS.ACK.>", "", "mon")); // merged results: the kind the cache keeps
  for (let i = 0; i < 20000; i++) {
    const r = sl.match(`$JS.ACK.S.C.1.${i + 7}.${i + 3}.17332154${String(i * 7919).padStart(11, "0")}.0`);
    assert.equal(r.psubs.length, 2);
  }
  // Only signature collisions get in: a few per cent at most, not the churn of every subject.
  assert.ok(sl.cacheSize() < 16, `cache size ${sl.cacheSize()}`);
});

void test("cache: adding or removing a matching wildcard sub invalidates; others do not", () => {
  const sl = new Sublist<Sub>();
  sl.insert(new Sub("foo.bar", "", "lit"));
  const r1 = sl.match("foo.bar");
  const other = sl.match("baz.qux");
  assert.deepEqual(ids(r1).p, ["lit"]);

  // An unrelated wildcard leaves the cached entry alone.
  sl.insert(new Sub("nope.*", "", "nope"));
  assert.equal(sl.match("foo.bar"), r1);

  const w = new Sub("foo.*", "", "pwc");
  sl.insert(w);
  const r2 = sl.match("foo.bar");
  assert.notEqual(r2, r1);
  assert.deepEqual(ids(r2).p, ["lit", "pwc"]);
  assert.equal(sl.match("baz.qux"), other, "non-matching cache entry kept");

  const f = new Sub(">", "", "fwc");
  sl.insert(f);
  assert.deepEqual(ids(sl.match("baz.qux")).p, ["fwc"]);
  assert.deepEqual(ids(sl.match("foo.bar")).p, ["fwc", "lit", "pwc"]);

  sl.remove(w);
  assert.deepEqual(ids(sl.match("foo.bar")).p, ["fwc", "lit"]);
  sl.remove(f);
  assert.deepEqual(ids(sl.match("foo.bar")).p, ["lit"]);
  assert.deepEqual(ids(sl.match("baz.qux")).p, []);

  // A literal insert invalidates only its own subject.
  const r3 = sl.match("foo.bar");
  sl.insert(new Sub("foo.bar", "q", "q1"));
  const r4 = sl.match("foo.bar");
  assert.notEqual(r4, r3);
  assert.deepEqual(ids(r4).q, [["q1"]]);
});

void test("cache: a literal token containing '*' or '>' is not a wildcard", () => {
  const sl = new Sublist<Sub>();
  const r = sl.match("foo.bar");
  sl.insert(new Sub("foo.b*", "", "x"));
  assert.deepEqual(ids(sl.match("foo.bar")).p, []);
  assert.equal(r.psubs.length, 0);
  assert.deepEqual(ids(sl.match("foo.b*")).p, ["x"]);
});

void test("cache stays bounded", () => {
  const sl = new Sublist<Sub>();
  sl.insert(new Sub(">"));
  sl.insert(new Sub("s.*"));
  for (let round = 0; round < 3; round++) for (let i = 0; i < 5000; i++) sl.match(`s.${i}`);
  assert.ok(sl.cacheSize() > 0 && sl.cacheSize() <= 1024, `cache size ${sl.cacheSize()}`);
  assert.equal(sl.match("s.4999").psubs.length, 2);
});

void test("pruning: removing every subscription leaves an empty trie", () => {
  const sl = new Sublist<Sub>();
  const subs = ["a.b.c", "a.b", "a.*.c", "a.>", ">", "*", "_INBOX.x.y", "_INBOX.x.z"].map((s, i) => new Sub(s, i % 2 === 0 ? "" : "q", String(i)));
  for (const s of subs) sl.insert(s);
  // Remove in an order that leaves interior nodes with children for a while.
  for (const i of [1, 0, 3, 2, 6, 4, 7, 5]) {
    assert.equal(sl.remove(subs[i]!), true);
  }
  const root = rootOf(sl);
  assert.equal(root.nodes.size, 0);
  assert.equal(root.pwc, null);
  assert.equal(root.fwc, null);
  assert.equal(sl.size, 0);
  assert.deepEqual(sl.all(), []);
});

void test("pruning keeps nodes that still lead somewhere", () => {
  const sl = new Sublist<Sub>();
  const deep = new Sub("a.b.c.d");
  const mid = new Sub("a.b");
  sl.insert(deep);
  sl.insert(mid);
  sl.remove(mid);
  assert.equal(sl.match("a.b.c.d").psubs.length, 1);
  sl.insert(mid);
  sl.remove(deep);
  assert.equal(sl.match("a.b").psubs.length, 1);
  assert.equal(sl.match("a.b.c.d").psubs.length, 0);
  sl.remove(mid);
  assert.equal(rootOf(sl).nodes.size, 0);
});

// A tiny seeded PRNG (mulberry32) so failures replay.
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

void test("random subscriptions agree with subjectMatches (seeded, with removes and cache)", () => {
  for (const seed of [1, 2, 3, 42, 1234]) {
    const rnd = prng(seed);
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]!;
    const toks = ["a", "b", "c"];
    const pattern = (): string => {
      const n = 1 + Math.floor(rnd() * 3);
      const parts: string[] = [];
      for (let i = 0; i < n; i++) parts.push(i === n - 1 && rnd() < 0.2 ? ">" : rnd() < 0.25 ? "*" : pick(toks));
      return parts.join(".");
    };
    const literal = (): string => {
      const n = 1 + Math.floor(rnd() * 4);
      const parts: string[] = [];
      for (let i = 0; i < n; i++) parts.push(pick(toks));
      return parts.join(".");
    };
    const sl = new Sublist<Sub>();
    const live: Sub[] = [];
    for (let step = 0; step < 400; step++) {
      const r = rnd();
      if (r < 0.45 || live.length === 0) {
        const s = new Sub(pattern(), rnd() < 0.3 ? pick(["q1", "q2"]) : "", `s${step}`);
        sl.insert(s);
        live.push(s);
      } else if (r < 0.7) {
        const i = Math.floor(rnd() * live.length);
        const [s] = live.splice(i, 1);
        assert.equal(sl.remove(s!), true);
      } else {
        const subj = literal();
        const got = ids(sl.match(subj));
        const want: Sub[] = live.filter((s) => subjectMatches(s.subject, subj));
        const wantP = want.filter((s) => s.queue === "").map((s) => s.id).sort();
        const groups = new Map<string, string[]>();
        for (const s of want) if (s.queue !== "") groups.set(s.queue, [...(groups.get(s.queue) ?? []), s.id]);
        const wantQ = [...groups.values()].map((g) => g.sort()).sort((a, b) => (a[0] ?? "").localeCompare(b[0] ?? ""));
        assert.deepEqual(got, { p: wantP, q: wantQ }, `seed ${seed} step ${step} subject ${subj}`);
      }
    }
    assert.equal(sl.size, live.length);
  }
});

void test("members through every shape (none, one, array, array with a Set): results in hand never change, all() and sizes agree (seeded)", () => {
  for (const seed of [7, 8, 9]) {
    const rnd = prng(seed);
    const subjects = ["m.one", "m.two", "m.*"];
    const sl = new Sublist<Sub>();
    const live: Sub[] = [];
    const held: { r: SublistResult<Sub>; want: { p: string[]; q: string[][] } }[] = [];
    for (let step = 0; step < 3000; step++) {
      // Phases of mostly adds, then mostly removes, so groups grow past the Set threshold
      // (32) and shrink back below half of it, and single members come and go.
      const growing = Math.floor(step / 500) % 2 === 0;
      const r = rnd();
      if (live.length === 0 || r < (growing ? 0.6 : 0.2)) {
        const s = new Sub(subjects[Math.floor(rnd() * subjects.length)]!, rnd() < 0.3 ? "q" : "", `s${step}`);
        sl.insert(s);
        live.push(s);
      } else if (r < 0.8) {
        const [s] = live.splice(Math.floor(rnd() * live.length), 1);
        assert.equal(sl.remove(s!), true);
        assert.equal(sl.remove(s!), false, "removed twice");
      } else {
        const subj = rnd() < 0.5 ? "m.one" : "m.two";
        const res = sl.match(subj);
        const got = ids(res);
        const want = live.filter((s) => subjectMatches(s.subject, subj));
        assert.deepEqual(got.p, want.filter((s) => s.queue === "").map((s) => s.id).sort(), `seed ${seed} step ${step}`);
        if (held.length < 50) held.push({ r: res, want: got });
      }
    }
    for (const h of held) assert.deepEqual(ids(h.r), h.want, `seed ${seed}: a result in hand changed`);
    assert.equal(sl.size, live.length);
    assert.deepEqual(sl.all().map((s) => s.id).sort(), live.map((s) => s.id).sort());
  }
});

void test("soleSubscriberUnder: one subscription on '<prefix>.>' alone, not with a second", () => {
  const sl = new Sublist<Sub>();
  const a = new Sub("$JS.ACK.S.C.>", "", "a");
  sl.insert(a);
  assert.equal(sl.soleSubscriberUnder("$JS.ACK.S.C", a), true);
  const b = new Sub("$JS.ACK.S.C.>", "", "b");
  sl.insert(b);
  assert.equal(sl.soleSubscriberUnder("$JS.ACK.S.C", a), false);
  sl.remove(a);
  assert.equal(sl.soleSubscriberUnder("$JS.ACK.S.C", b), true);
  assert.equal(sl.soleSubscriberUnder("$JS.ACK.S.C", a), false);
});
