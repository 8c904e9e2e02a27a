import { test } from "node:test";
import assert from "node:assert/strict";
import {
  isLiteral,
  isValidLiteralSubject,
  isValidQueue,
  isValidSubject,
  subjectIsSubsetMatch,
  subjectMatches,
  subjectsCollide,
} from "../../src/subjects/subject.js";

void test("subject validity: tokens, wildcards, empty tokens, whitespace", () => {
  const valid = ["foo", "foo.bar", "foo.*", "*", ">", "foo.>", "*.bar.>", "foo*", "foo>", "f*o.b>r", "$JS.API.>", "_INBOX.abc.*", "a-b_c.d~e"];
  const invalid = ["", ".", "foo.", ".foo", "foo..bar", "foo.>.bar", ">.foo", "foo bar", "foo\tbar", "foo\r", "foo\nbar", " foo", "foo. "];
  for (const s of valid) assert.equal(isValidSubject(s), true, `valid: ${JSON.stringify(s)}`);
  for (const s of invalid) assert.equal(isValidSubject(s), false, `invalid: ${JSON.stringify(s)}`);
});

void test("literal subjects: wildcard tokens only count as whole tokens", () => {
  for (const s of ["foo", "foo.bar", "foo*", "foo>", "*foo.bar", "a.b>c", "a.**"]) assert.equal(isLiteral(s), true, s);
  for (const s of ["*", ">", "foo.*", "foo.>", "*.foo", "a.*.b"]) assert.equal(isLiteral(s), false, s);
  assert.equal(isValidLiteralSubject("foo.bar"), true);
  assert.equal(isValidLiteralSubject("foo.*"), false);
  assert.equal(isValidLiteralSubject("foo..bar"), false);
  assert.equal(isValidLiteralSubject("foo*.bar>"), true);
});

void test("queue names: non-empty, no whitespace", () => {
  assert.equal(isValidQueue("workers"), true);
  assert.equal(isValidQueue("a.b"), true);
  assert.equal(isValidQueue(""), false);
  assert.equal(isValidQueue("a b"), false);
  assert.equal(isValidQueue("a\tb"), false);
});

void test("subjectMatches: '*' is one token, '>' one or more, literals are byte-wise", () => {
  const cases: [string, string, boolean][] = [
    ["foo", "foo", true],
    ["foo", "Foo", false],
    ["foo", "foo.bar", false],
    ["foo.bar", "foo", false],
    ["*", "foo", true],
    ["*", "foo.bar", false],
    ["foo.*", "foo.bar", true],
    ["foo.*", "foo", false],
    ["foo.*", "foo.bar.baz", false],
    ["foo.*.baz", "foo.bar.baz", true],
    ["foo.*.baz", "foo.bar.qux", false],
    [">", "foo", true],
    [">", "foo.bar.baz", true],
    ["foo.>", "foo", false],
    ["foo.>", "foo.bar", true],
    ["foo.>", "foo.bar.baz", true],
    ["foo.>", "bar.baz", false],
    ["*.>", "a.b", true],
    ["*.>", "a", false],
    ["*.*", "a.b", true],
    ["*.*", "a.b.c", false],
    // '*' and '>' inside a longer token are plain characters
    ["foo*", "foo*", true],
    ["foo*", "foobar", false],
    ["foo>", "foo.bar", false],
    ["foo.b*r", "foo.bar", false],
    ["foo.b*r", "foo.b*r", true],
    ["a.>", "a.b>", true],
  ];
  for (const [p, s, want] of cases) assert.equal(subjectMatches(p, s), want, `${p} ~ ${s}`);
});

void test("subjectsCollide: whether some literal subject matches both patterns", () => {
  const cases: [string, string, boolean][] = [
    ["foo", "foo", true],
    ["foo", "bar", false],
    ["foo.*", "foo.bar", true],
    ["foo.*", "*.bar", true],
    ["foo.*", "foo.>", true],
    ["foo.>", "foo", false],
    ["foo.*", "foo", false],
    ["foo.*", "foo.bar.baz", false],
    ["foo.>", "foo.bar.baz", true],
    [">", "anything.at.all", true],
    ["*", ">", true],
    ["a.>", "b.>", false],
    ["a.*.c", "a.b.d", false],
    ["a.*.c", "*.b.*", true],
    ["a.b", "a.b.c", false],
  ];
  for (const [a, b, want] of cases) {
    assert.equal(subjectsCollide(a, b), want, `${a} x ${b}`);
    assert.equal(subjectsCollide(b, a), want, `${b} x ${a} (symmetric)`);
  }
});

void test("subjectIsSubsetMatch: every subject matched by the first is matched by the second", () => {
  const cases: [string, string, boolean][] = [
    ["foo.bar", "foo.bar", true],
    ["foo.bar", "foo.*", true],
    ["foo.bar", "foo.>", true],
    ["foo.bar", ">", true],
    ["foo.*", "foo.>", true],
    ["foo.*", "foo.*", true],
    ["foo.*", "*.*", true],
    ["foo.>", "foo.>", true],
    ["foo.>", ">", true],
    ["*", ">", true],
    ["foo.>", "foo.*", false],
    ["foo.*", "foo.bar", false],
    [">", "*.>", false],
    [">", "*", false],
    ["foo", "foo.>", false],
    ["foo.bar.baz", "foo.*", false],
    ["foo.bar", "foo.bar.baz", false],
    ["*.bar", "foo.*", false],
  ];
  for (const [sub, sup, want] of cases) assert.equal(subjectIsSubsetMatch(sub, sup), want, `${sub} <= ${sup}`);
});

void test("subjectMatches agrees with subset: a literal matches a pattern iff it is a subset", () => {
  const patterns = ["a", "a.b", "a.*", "*.b", "a.>", ">", "*", "*.*", "a.*.c", "*.>"];
  const literals = ["a", "b", "a.b", "a.c", "b.b", "a.b.c", "a.x.c", "a.b.c.d"];
  for (const p of patterns) {
    for (const l of literals) assert.equal(subjectMatches(p, l), subjectIsSubsetMatch(l, p), `${l} vs ${p}`);
  }
});
