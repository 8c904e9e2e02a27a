// The simulator's linearizability checker (test/sim/linearizable.ts): known-linearizable
// histories pass and known-non-linearizable ones fail, including ops with unknown outcomes
// (taking effect late, or never) and per-key partitioning.

import { test } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import { checkLinearizable, describeFailure, kvModel, type KvInput, type KvOutput, type Operation } from "../sim/linearizable.js";

type KvOp = Operation<KvInput, KvOutput>;
const op = (part: string, call: number, ret: number, input: KvInput, output: KvOutput): KvOp => ({ part, call, ret, input, output });
const put = (k: string, call: number, ret: number, value: string, rev: number | "unknown"): KvOp => op(k, call, rev === "unknown" ? Infinity : ret, { f: "put", value }, rev === "unknown" ? "unknown" : { rev });
const cas = (k: string, call: number, ret: number, expect: number, value: string, out: number | "fail" | "unknown"): KvOp =>
  op(k, call, out === "unknown" ? Infinity : ret, { f: "cas", expect, value }, typeof out === "number" ? { rev: out } : out);
const get = (k: string, call: number, ret: number, value: string | null, rev: number): KvOp => op(k, call, ret, { f: "get" }, { value, rev });
const ok = (h: KvOp[]): boolean => checkLinearizable(kvModel, h).ok;

void test("linearizable: sequential histories", () => {
  assert.equal(ok([put("k", 0, 1, "a", 1), get("k", 2, 3, "a", 1), cas("k", 4, 5, 1, "b", 2), get("k", 6, 7, "b", 2), cas("k", 8, 9, 1, "c", "fail")]), true);
  // create-only (expect 0) on a missing key, then again on an existing one
  assert.equal(ok([cas("k", 0, 1, 0, "a", 5), cas("k", 2, 3, 0, "b", "fail"), get("k", 4, 5, "a", 5)]), true);
  assert.equal(ok([get("k", 0, 1, null, 0)]), true);
  // wrong: a CAS refused though its revision was current
  assert.equal(ok([put("k", 0, 1, "a", 1), cas("k", 2, 3, 1, "b", "fail")]), false);
  // wrong: a revision going backwards
  assert.equal(ok([put("k", 0, 1, "a", 5), put("k", 2, 3, "b", 4)]), false);
  // wrong: a read of the right value with the wrong revision
  assert.equal(ok([put("k", 0, 1, "a", 5), get("k", 2, 3, "a", 6)]), false);
});

void test("linearizable: overlapping ops may take effect in either order", () => {
  for (const seen of [
    [null, 0],
    ["a", 1],
  ] as const) {
    assert.equal(ok([put("k", 0, 10, "a", 1), get("k", 1, 2, seen[0], seen[1])]), true);
  }
  // Two overlapping puts: reads after both agree on the later revision.
  assert.equal(ok([put("k", 0, 10, "a", 2), put("k", 1, 9, "b", 1), get("k", 11, 12, "a", 2)]), true);
  assert.equal(ok([put("k", 0, 10, "a", 2), put("k", 1, 9, "b", 1), get("k", 11, 12, "b", 1)]), false);
  // A read during a put sees the new value, a later read during the same put cannot go back.
  assert.equal(ok([put("k", 0, 100, "a", 1), get("k", 1, 2, "a", 1), get("k", 3, 4, null, 0)]), false);
  assert.equal(ok([put("k", 0, 100, "a", 1), get("k", 1, 2, null, 0), get("k", 3, 4, "a", 1)]), true);
});

void test("linearizable: stale reads, lost writes and double CAS wins are caught", () => {
  const stale = [put("k", 0, 1, "a", 1), put("k", 2, 3, "b", 2), get("k", 4, 5, "a", 1)];
  const r = checkLinearizable(kvModel, stale);
  assert.equal(r.ok, false);
  assert.equal(r.badPart, "k");
  assert.match(describeFailure(r), /partition k/);
  assert.equal(ok([put("k", 0, 1, "a", 1), get("k", 2, 3, null, 0)]), false);
  assert.equal(ok([put("k", 0, 1, "a", 1), cas("k", 2, 5, 1, "x", 2), cas("k", 2, 5, 1, "y", 3)]), false);
  // One wins, the other is refused: fine either way round.
  assert.equal(ok([put("k", 0, 1, "a", 1), cas("k", 2, 5, 1, "x", 2), cas("k", 2, 5, 1, "y", "fail")]), true);
  assert.equal(ok([put("k", 0, 1, "a", 1), cas("k", 2, 5, 1, "x", "fail"), cas("k", 2, 5, 1, "y", 3)]), true);
});

void test("linearizable: an op with an unknown outcome may take effect any time after its call, or never", () => {
  // never
  assert.equal(ok([put("k", 0, 0, "a", "unknown"), get("k", 5, 6, null, 0)]), true);
  // later, seen with the revision it got
  assert.equal(ok([put("k", 0, 0, "a", "unknown"), get("k", 5, 6, null, 0), get("k", 50, 60, "a", 7), put("k", 70, 71, "b", 8)]), true);
  // ... and then it cannot be undone
  assert.equal(ok([put("k", 0, 0, "a", "unknown"), get("k", 5, 6, "a", 7), get("k", 8, 9, null, 0)]), false);
  // not before its call
  assert.equal(ok([get("k", 0, 1, "a", 7), put("k", 5, 0, "a", "unknown")]), false);
  // A CAS whose condition never held, outcome unknown: it simply did not happen. (The
  // checker in test/checkers before this one called such a history non-linearizable.)
  assert.equal(ok([put("k", 0, 1, "a", 1), cas("k", 2, 0, 5, "b", "unknown"), get("k", 10, 11, "a", 1)]), true);
  // An unknown CAS that did win, as a later read shows.
  assert.equal(ok([put("k", 0, 1, "a", 1), cas("k", 2, 0, 1, "b", "unknown"), get("k", 10, 11, "b", 2)]), true);
  // ... but not one whose condition was already false when it was called.
  assert.equal(ok([put("k", 0, 1, "a", 1), put("k", 2, 3, "c", 2), cas("k", 4, 0, 1, "b", "unknown"), get("k", 10, 11, "b", 3)]), false);
});

void test("linearizable: keys are independent partitions", () => {
  // Interleaved keys: each is fine alone.
  assert.equal(ok([put("x", 0, 1, "a", 1), put("y", 0, 1, "b", 2), get("x", 2, 3, "a", 1), get("y", 2, 3, "b", 2), put("x", 4, 5, "c", 3), get("y", 6, 7, "b", 2)]), true);
  // A read of x cannot see y's value.
  const r = checkLinearizable(kvModel, [put("x", 0, 1, "a", 1), put("y", 0, 1, "b", 2), get("y", 2, 3, "b", 2), get("x", 2, 3, "b", 2)]);
  assert.equal(r.ok, false);
  assert.equal(r.badPart, "x");
});

/** A real register run with random overlap: each op takes effect at an instant inside its
 *  [call, ret] window (an unknown op: after its call, or never), so the history is
 *  linearizable by construction. */
function randomHistory(ops: Array<{ f: "put" | "get" | "cas"; key: number; pre: number; post: number; lost: boolean; applied: boolean; stale: boolean }>): KvOp[] {
  const state = new Map<string, { value: string | null; rev: number }>();
  let rev = 0;
  const out: KvOp[] = [];
  ops.forEach((o, i) => {
    const at = (i + 1) * 10;
    const key = `k${o.key}`;
    const cur = state.get(key) ?? { value: null, rev: 0 };
    const call = at - o.pre;
    const ret = o.lost ? Infinity : at + o.post;
    const value = `v${i}`;
    if (o.f === "put") {
      if (o.lost && !o.applied) {
        out.push(op(key, call, ret, { f: "put", value }, "unknown"));
        return;
      }
      rev++;
      state.set(key, { value, rev });
      out.push(op(key, call, ret, { f: "put", value }, o.lost ? "unknown" : { rev }));
    } else if (o.f === "cas") {
      const expect = o.stale ? cur.rev + 1 : cur.rev;
      if (expect === cur.rev && !(o.lost && !o.applied)) {
        rev++;
        state.set(key, { value, rev });
        out.push(op(key, call, ret, { f: "cas", expect, value }, o.lost ? "unknown" : { rev }));
      } else out.push(op(key, call, ret, { f: "cas", expect, value }, o.lost ? "unknown" : "fail"));
    } else if (!o.lost) out.push(op(key, call, ret, { f: "get" }, { value: cur.value, rev: cur.rev }));
  });
  return out;
}

const opsArb = fc.array(
  fc.record({
    f: fc.constantFrom("put" as const, "get" as const, "get" as const, "cas" as const),
    key: fc.nat(2),
    pre: fc.nat(25),
    post: fc.nat(25),
    lost: fc.nat(9).map((x) => x < 3),
    applied: fc.boolean(),
    stale: fc.boolean(),
  }),
  { minLength: 1, maxLength: 60 },
);

void test("linearizable: histories of a real register always pass; a read of a value never written, or of a known write with another revision, always fails", () => {
  fc.assert(
    fc.property(opsArb, fc.nat(), (ops, pick) => {
      const h = randomHistory(ops);
      const r = checkLinearizable(kvModel, h);
      assert.equal(r.ok, true, describeFailure(r));
      const gets = h.map((o, i) => [o, i] as const).filter(([o]) => o.input.f === "get");
      if (gets.length > 0) {
        const gi = gets[pick % gets.length]![1];
        const bad = h.slice();
        bad[gi] = { ...bad[gi]!, output: { value: "never-written", rev: 999 } };
        assert.equal(checkLinearizable(kvModel, bad).ok, false);
        const g = h[gi]!.output as { value: string | null; rev: number };
        // (A revision nobody was told, an unknown write's, can be anything.)
        const writer = h.find((o) => o.input.f !== "get" && o.input.value === g.value);
        if (g.value !== null && writer !== undefined && writer.output !== "unknown") {
          const bad2 = h.slice();
          bad2[gi] = { ...bad2[gi]!, output: { value: g.value, rev: g.rev + 1000 } };
          assert.equal(checkLinearizable(kvModel, bad2).ok, false);
        }
      }
    }),
    { numRuns: 400 },
  );
});

void test("linearizable: a stale read after a confirmed write is caught inside a long concurrent history", () => {
  // Many overlapping ops on one key, then a read that returns the value of a write that was
  // overwritten by a confirmed later write before the read began.
  const h: KvOp[] = [];
  let rev = 0;
  for (let i = 0; i < 30; i++) h.push(put("k", i * 10, i * 10 + 15, `v${i}`, ++rev));
  h.push(get("k", 400, 401, "v28", 29));
  assert.equal(ok(h), false);
  h.pop();
  h.push(get("k", 400, 401, "v29", 30));
  assert.equal(ok(h), true);
});
