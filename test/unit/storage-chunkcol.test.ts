// ChunkCol (the subject/size/checkpoint columns): seeded random operations against a plain
// dense array as the model, and the compactness it exists for.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { ChunkCol } from "../../src/storage/memory/chunkcol.js";
import { openFileStreamStore } from "../../src/storage/index.js";
import { ManualClock } from "../../src/runtime/clock.js";
import { syncP, T0 } from "../helpers/storage-contract.js";

const SIZE = 16;
const SPAN = 120; // positions 0..SPAN-1: several chunks

type Op =
  | { t: "set"; k: number; v: number }
  | { t: "next"; k: number } // append-like: value of the model's previous entry plus step
  | { t: "fill"; k: number; n: number; v: number }
  | { t: "lin"; k: number; n: number; a: number; d: number }
  | { t: "drop"; k: number }
  | { t: "clear" };

const value = fc.oneof(fc.constant(0), fc.constant(0), fc.integer({ min: 1, max: 3 }), fc.integer({ min: 1, max: 70000 }), fc.constant(0xfffffff0));
const pos = fc.integer({ min: 0, max: SPAN - 1 });
const op: fc.Arbitrary<Op> = fc.oneof(
  { weight: 6, arbitrary: fc.record({ t: fc.constant("set" as const), k: pos, v: value }) },
  { weight: 6, arbitrary: fc.record({ t: fc.constant("next" as const), k: pos }) },
  { weight: 2, arbitrary: fc.record({ t: fc.constant("fill" as const), k: pos, n: fc.integer({ min: 1, max: 40 }), v: value }) },
  {
    weight: 2,
    arbitrary: fc.record({
      t: fc.constant("lin" as const),
      k: pos,
      n: fc.integer({ min: 1, max: 40 }),
      a: fc.integer({ min: 1, max: 1000 }),
      d: fc.integer({ min: 0, max: 50 }),
    }),
  },
  { weight: 1, arbitrary: fc.record({ t: fc.constant("drop" as const), k: pos }) },
  { weight: 1, arbitrary: fc.constant({ t: "clear" as const }) },
);

/** Apply ops to a ChunkCol and a dense model; positions below the dropped bound are not used
 *  again (as in the stores), so the model zeroes them. */
function run(ops: Op[]): { col: ChunkCol; model: number[]; floor: number } {
  const col = new ChunkCol(SIZE);
  const model = new Array<number>(SPAN + 64).fill(0);
  let floor = 0;
  const put = (k: number, v: number): void => {
    col.set(k, v);
    model[k] = v;
  };
  for (const o of ops) {
    switch (o.t) {
      case "set":
        if (o.k >= floor) put(o.k, o.v);
        break;
      case "next": {
        if (o.k < floor) break;
        const prev = o.k > floor ? (model[o.k - 1] as number) : 0;
        const prev2 = o.k > floor + 1 ? (model[o.k - 2] as number) : 0;
        put(o.k, prev === 0 ? 7 : Math.max(1, prev + (prev - prev2)));
        break;
      }
      case "fill":
        if (o.k < floor) break;
        col.fill(o.k, o.n, o.v);
        for (let j = 0; j < o.n; j++) model[o.k + j] = o.v;
        break;
      case "lin":
        if (o.k < floor) break;
        col.fillLinear(o.k, o.n, o.a, o.d);
        for (let j = 0; j < o.n; j++) model[o.k + j] = o.a + o.d * j;
        break;
      case "drop": {
        col.dropBelow(o.k);
        const b = Math.floor(o.k / SIZE) * SIZE;
        if (b > floor) {
          for (let k = floor; k < b; k++) model[k] = 0;
          floor = b;
        }
        break;
      }
      case "clear":
        col.clear();
        model.fill(0);
        floor = 0;
        break;
    }
  }
  return { col, model, floor };
}

function check(col: ChunkCol, model: number[], floor: number): void {
  const n = model.length;
  for (let k = floor; k < n; k++) assert.equal(col.get(k), model[k], `get(${k})`);
  for (let k = floor; k < n; k++) {
    const e = col.runEnd(k);
    const s = col.runStart(k);
    assert.ok(e >= k && Math.floor(e / SIZE) === Math.floor(k / SIZE), `runEnd(${k}) = ${e}`);
    assert.ok(s <= k && Math.floor(s / SIZE) === Math.floor(k / SIZE), `runStart(${k}) = ${s}`);
    for (let j = s; j <= e; j++) if (j < n) assert.equal(model[j], model[k], `run of ${k} holds ${j}`);
  }
  const values = new Set<number>([0, 7, ...model]);
  for (const v of values) {
    for (const eq of [true, false]) {
      for (const [a, b] of [
        [floor, n - 1],
        [floor + 3, floor + 37],
        [floor + 15, floor + 17],
        [floor + 20, floor + 20],
      ] as const) {
        let f = b + 1;
        for (let k = a; k <= b; k++) if ((model[k] === v) === eq) {
          f = k;
          break;
        }
        assert.equal(col.find(a, b, v, eq), f, `find(${a}, ${b}, ${v}, ${eq})`);
        let l = a - 1;
        for (let k = b; k >= a; k--) if ((model[k] === v) === eq) {
          l = k;
          break;
        }
        assert.equal(col.findBack(b, a, v, eq), l, `findBack(${b}, ${a}, ${v}, ${eq})`);
        let c = 0;
        for (let k = a; k <= b; k++) if ((model[k] === v) === eq) c++;
        assert.equal(col.count(a, b, v, eq), c, `count(${a}, ${b}, ${v}, ${eq})`);
      }
    }
  }
}

void describe("ChunkCol", () => {
  void it("matches a dense array under seeded random operations", () => {
    fc.assert(
      fc.property(fc.array(op, { maxLength: 120 }), (ops) => {
        const { col, model, floor } = run(ops);
        check(col, model, floor);
      }),
      { seed: 0x5e9c01, numRuns: 400 },
    );
  });

  void it("matches a dense array at every step of one long seeded run", () => {
    const ops = fc.sample(op, { seed: 42, numRuns: 600 });
    for (let i = 50; i <= ops.length; i += 50) {
      const { col, model, floor } = run(ops.slice(0, i));
      check(col, model, floor);
    }
  });

  void it("keeps a run of one value, or an arithmetic run, without arrays", () => {
    const c = new ChunkCol(4096);
    for (let k = 1; k <= 100_000; k++) c.set(k, 3);
    assert.equal(c.denseChunks(), 0);
    const ck = new ChunkCol(256);
    for (let g = 0; g < 10_000; g++) ck.set(g, 36 + g * 832);
    assert.equal(ck.denseChunks(), 0);
    assert.equal(ck.get(9999), 36 + 9999 * 832);
    // removals from the front and the back keep it so; one in the middle does not
    c.set(1, 0);
    c.set(100_000, 0);
    assert.equal(c.denseChunks(), 0);
    c.set(50_000, 0);
    assert.equal(c.denseChunks(), 1);
    assert.equal(c.count(1, 100_000, 0, false), 99_997);
    // a dense chunk whose entries are all cleared gives its array back
    for (let k = 49_152; k < 53_248; k++) c.set(k, 0);
    assert.equal(c.denseChunks(), 0);
  });

  void it("widens a dense chunk for a large value", () => {
    const c = new ChunkCol(16);
    c.set(3, 1);
    c.set(5, 2);
    c.set(4, 70_000);
    c.set(6, 0xfffffff0);
    assert.deepEqual([c.get(3), c.get(4), c.get(5), c.get(6)], [1, 70_000, 2, 0xfffffff0]);
  });
});

void describe("file store index after recovery", () => {
  void it("holds no column arrays for one subject and one size, and still reads every message", async () => {
    const root = mkdtempSync(join(tmpdir(), "tsnats-chunkcol-"));
    const dir = join(root, "s");
    const clock = new ManualClock(T0);
    try {
      const a = (await openFileStreamStore({ dir, clock, blockSizeBytes: 64 * 1024 })).store;
      const data = Buffer.from("0123456789abcdef");
      for (let i = 0; i < 20_000; i++) a.storeMsg("one.subject", null, data, T0 + i, 0);
      await syncP(a);
      assert.equal(a.denseColumnChunks(), 0);
      await a.close();
      const b = (await openFileStreamStore({ dir, clock, blockSizeBytes: 64 * 1024 })).store;
      assert.equal(b.denseColumnChunks(), 0);
      assert.equal(b.state().msgs, 20_000);
      for (const s of [1, 2, 4095, 4096, 4097, 12_345, 20_000]) {
        const m = b.loadMsg(s);
        assert.ok(m !== null && m.tsNs === T0 + s - 1 && m.data.equals(data), `seq ${s}`);
      }
      assert.equal(b.removeMsg(7000), true);
      assert.equal(b.numPending(1, "one.subject", false), 19_999);
      assert.equal(b.loadNextMsg("one.*", 7000)?.seq, 7001);
      assert.deepEqual(b.deletedSeqs(), [7000]);
      await b.close();
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
