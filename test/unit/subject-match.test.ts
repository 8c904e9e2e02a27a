// One filter match: src/subjects/subject.ts subjectMatches (a pattern) and filterMatches (a
// stream/consumer filter, where "" means no filter). The stores used to have their own copy
// that disagreed on the empty filter; it is now the same function.
import { test } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import { filterMatcher, filterMatches, subjectMatches } from "../../src/subjects/subject.js";
import { subjectMatches as storeFilterMatches } from "../../src/storage/subjects.js";

/** The reference: split into tokens. */
function refMatch(pattern: string, subject: string): boolean {
  if (pattern === "" || subject === "") return pattern === subject;
  const p = pattern.split(".");
  const s = subject.split(".");
  for (let i = 0; i < p.length; i++) {
    if (p[i] === ">") return i < s.length;
    if (i >= s.length) return false;
    if (p[i] !== "*" && p[i] !== s[i]) return false;
  }
  return p.length === s.length;
}

void test("filter match: an empty filter matches every subject; an empty pattern matches none", () => {
  for (const subj of ["foo", "foo.bar", "$JS.API.INFO"]) {
    assert.equal(filterMatches("", subj), true);
    assert.equal(storeFilterMatches("", subj), true, "the stores' name for it agrees");
    assert.equal(subjectMatches("", subj), false);
  }
  assert.equal(filterMatches(">", "a.b"), true);
  assert.equal(filterMatches("a.*", "a.b"), true);
  assert.equal(filterMatches("a.*", "a.b.c"), false);
  assert.equal(filterMatches("a.>", "a"), false);
  assert.equal(filterMatches("a.b", "a.b"), true);
});

void test("filter match: subjectMatches agrees with a token-splitting reference", () => {
  const tok = fc.constantFrom("a", "b", "foo", "*", ">");
  const lit = fc.constantFrom("a", "b", "foo", "bar");
  fc.assert(
    fc.property(fc.array(tok, { minLength: 1, maxLength: 4 }), fc.array(lit, { minLength: 1, maxLength: 4 }), (p, s) => {
      // '>' only as the last token of a valid pattern.
      const pat = p.map((t, i) => (t === ">" && i < p.length - 1 ? "*" : t)).join(".");
      const subj = s.join(".");
      assert.equal(subjectMatches(pat, subj), refMatch(pat, subj), `${pat} ~ ${subj}`);
      assert.equal(filterMatches(pat, subj), refMatch(pat, subj));
      assert.equal(storeFilterMatches(pat, subj), refMatch(pat, subj));
    }),
    { numRuns: 2000 },
  );
});

void test("filter match: filterMatcher(f)(s) is filterMatches(f, s) (prefix shapes and the rest)", () => {
  const tok = fc.constantFrom("a", "b", "foo", "*", ">", "a*", ">b");
  const lit = fc.constantFrom("a", "b", "foo", "bar", "a*");
  fc.assert(
    fc.property(fc.array(tok, { minLength: 0, maxLength: 4 }), fc.array(lit, { minLength: 1, maxLength: 5 }), (p, s) => {
      const f = p.join(".");
      const subj = s.join(".");
      assert.equal(filterMatcher(f)(subj), filterMatches(f, subj), `${f} against ${subj}`);
    }),
    { numRuns: 3000 },
  );
  for (const [f, subj, want] of [
    ["foo.>", "foo", false],
    ["foo.>", "foo.a.b", true],
    ["foo.*", "foo.a.b", false],
    ["foo.*", "foo.a", true],
    ["foo.*", "foobar.a", false],
    ["*.>", "a.b", true],
    ["a.*.>", "a.b", false],
    [">", "a", true],
    ["", "a.b", true],
  ] as const) {
    assert.equal(filterMatcher(f)(subj), want, `${f} against ${subj}`);
  }
});
