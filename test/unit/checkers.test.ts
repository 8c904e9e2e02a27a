// The history checkers the fault tests and the simulator use (test/checkers/): a checker
// that cannot find a violation is worthless, so each is shown both ways.

import { test } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import { checkLinearizable, kvModel, type Operation, type KvInput, type KvOutput } from "../checkers/linearizable.js";
import { checkQueue } from "../checkers/queue.js";

type KvOp = Operation<KvInput, KvOutput>;
const op = (part: string, call: number, ret: number, input: KvInput, output: KvOutput): KvOp => ({ part, call, ret, input, output });

void test("linearizable: sequential and overlapping KV histories pass; stale reads, lost writes and double CAS fail", () => {
  const seq = [op("k", 0, 1, { f: "put", value: "a" }, { rev: 1 }), op("k", 2, 3, { f: "get" }, { value: "a", rev: 1 }), op("k", 4, 5, { f: "cas", expect: 1, value: "b" }, { rev: 2 }), op("k", 6, 7, { f: "get" }, { value: "b", rev: 2 }), op("k", 8, 9, { f: "cas", expect: 1, value: "c" }, "fail")];
  assert.equal(checkLinearizable(kvModel, seq).ok, true);
  // A get overlapping a put may see either value.
  for (const seen of [{ value: null, rev: 0 }, { value: "a", rev: 1 }]) {
    assert.equal(checkLinearizable(kvModel, [op("k", 0, 10, { f: "put", value: "a" }, { rev: 1 }), op("k", 1, 2, { f: "get" }, seen)]).ok, true);
  }
  // Stale read: b was acked before the get began, and the get saw a.
  const stale = [op("k", 0, 1, { f: "put", value: "a" }, { rev: 1 }), op("k", 2, 3, { f: "put", value: "b" }, { rev: 2 }), op("k", 4, 5, { f: "get" }, { value: "a", rev: 1 })];
  const r = checkLinearizable(kvModel, stale);
  assert.equal(r.ok, false);
  assert.equal(r.badPart, "k");
  // Lost write: acked, then not there.
  assert.equal(checkLinearizable(kvModel, [op("k", 0, 1, { f: "put", value: "a" }, { rev: 1 }), op("k", 2, 3, { f: "get" }, { value: null, rev: 0 })]).ok, false);
  // Two CAS on the same revision cannot both win.
  const twoWins = [op("k", 0, 1, { f: "put", value: "a" }, { rev: 1 }), op("k", 2, 5, { f: "cas", expect: 1, value: "x" }, { rev: 2 }), op("k", 2, 5, { f: "cas", expect: 1, value: "y" }, { rev: 3 })];
  assert.equal(checkLinearizable(kvModel, twoWins).ok, false);
  // An unknown put may have happened or not; keys are independent.
  const unknown = [op("k", 0, Infinity, { f: "put", value: "a" }, "unknown"), op("k", 5, 6, { f: "get" }, { value: null, rev: 0 }), op("j", 0, 1, { f: "put", value: "z" }, { rev: 1 })];
  assert.equal(checkLinearizable(kvModel, unknown).ok, true);
  assert.equal(checkLinearizable(kvModel, [op("k", 0, Infinity, { f: "put", value: "a" }, "unknown"), op("k", 5, 6, { f: "get" }, { value: "a", rev: 7 })]).ok, true);
});

/** A real register run with random overlap: each op takes effect at an instant inside its
 *  [call, ret] window, so the history is linearizable by construction. */
function randomHistory(seed: number, ops: Array<{ f: "put" | "get" | "cas"; key: number; client: number; len: number }>): KvOp[] {
  const state = new Map<string, { value: string | null; rev: number }>();
  let rev = 0;
  let t = 0;
  const out: KvOp[] = [];
  const effects = ops.map((o, i) => ({ o, i, at: (t += 1 + ((seed + i) % 3)) }));
  for (const { o, i, at } of effects) {
    const key = `k${o.key}`;
    const cur = state.get(key) ?? { value: null, rev: 0 };
    const call = at - (o.len % 4);
    const ret = at + (o.len % 5);
    if (o.f === "put") {
      rev++;
      state.set(key, { value: `v${i}`, rev });
      out.push(op(key, call, ret, { f: "put", value: `v${i}` }, { rev }));
    } else if (o.f === "cas") {
      const expect = o.len % 2 === 0 ? cur.rev : cur.rev + 1;
      if (expect === cur.rev) {
        rev++;
        state.set(key, { value: `v${i}`, rev });
        out.push(op(key, call, ret, { f: "cas", expect, value: `v${i}` }, { rev }));
      } else out.push(op(key, call, ret, { f: "cas", expect, value: `v${i}` }, "fail"));
    } else out.push(op(key, call, ret, { f: "get" }, { value: cur.value, rev: cur.rev }));
  }
  return out;
}

const opsArb = fc.array(fc.record({ f: fc.constantFrom("put" as const, "get" as const, "cas" as const), key: fc.nat(2), client: fc.nat(3), len: fc.nat(20) }), { minLength: 1, maxLength: 40 });

void test("linearizable: histories of a real register always pass; a get changed to a value never written always fails", () => {
  fc.assert(
    fc.property(fc.nat(1000), opsArb, (seed, ops) => {
      const h = randomHistory(seed, ops);
      assert.equal(checkLinearizable(kvModel, h).ok, true);
      const gi = h.findIndex((o) => o.input.f === "get");
      if (gi >= 0) {
        const bad = h.slice();
        bad[gi] = { ...bad[gi]!, output: { value: "never-written", rev: 999 } };
        assert.equal(checkLinearizable(kvModel, bad).ok, false);
      }
    }),
    { numRuns: 300 },
  );
});

void test("queue: lost, unexpected, duplicated and recovered messages; losses by position per writer", () => {
  const attempts = [
    { value: "w0-0", writer: 0, n: 0, outcome: "ok" as const },
    { value: "w0-1", writer: 0, n: 1, outcome: "ok" as const },
    { value: "w0-2", writer: 0, n: 2, outcome: "ok" as const },
    { value: "w0-3", writer: 0, n: 3, outcome: "ok" as const },
    { value: "w1-0", writer: 1, n: 0, outcome: "unknown" as const },
    { value: "w1-1", writer: 1, n: 1, outcome: "fail" as const },
    { value: "w1-2", writer: 1, n: 2, outcome: "ok" as const },
  ];
  const good = checkQueue({ attempts, reads: ["w0-0", "w0-1", "w0-2", "w0-3", "w1-2", "w1-0", "w1-2"] });
  assert.equal(good.ok, true);
  assert.equal(good.acked, 5);
  assert.equal(good.recovered, 1);
  assert.deepEqual([...good.duplicated], [["w1-2", 2]]);
  // w0-1 lost between read values (a hole), w0-3 lost at the tail, w1-2 lost entirely; one
  // value read that nobody published.
  const bad = checkQueue({ attempts, reads: ["w0-0", "w0-2", "ghost"] });
  assert.equal(bad.ok, false);
  assert.deepEqual(bad.lost.sort(), ["w0-1", "w0-3", "w1-2"]);
  assert.deepEqual(bad.unexpected, ["ghost"]);
  assert.equal(bad.lostMiddle, 1);
  assert.equal(bad.lostPostfix, 1);
  assert.equal(bad.lostPrefix, 1);
});
