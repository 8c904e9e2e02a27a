// Block summary codec: what a SummaryBuilder is fed (including runs it only counts until
// another entry follows) is exactly what a SummaryReader gives back, entry by entry.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import { SubjRec } from "../../src/storage/memory/subjtable.js";
import { FLOOR_REC_LEN, SUM_FLOOR, SUM_MSG, SUM_TOMB, SummaryBuilder, SummaryReader, TOMB_REC_LEN, type SumSubject } from "../../src/storage/file/summary.js";

type Entry =
  | { k: "msg"; seqGap: number; len: number; subj: number; hdr: boolean; ttl: number; n: number; run: boolean }
  | { k: "tomb"; seq: number }
  | { k: "floor"; seq: number };

const entry: fc.Arbitrary<Entry> = fc.oneof(
  {
    weight: 8,
    arbitrary: fc.record({
      k: fc.constant("msg" as const),
      seqGap: fc.oneof(fc.constant(1), fc.constant(1), fc.integer({ min: 2, max: 300 })),
      len: fc.oneof(fc.constant(60), fc.constant(60), fc.integer({ min: 40, max: 200 })),
      subj: fc.oneof(fc.constant(0), fc.constant(0), fc.nat(3)),
      hdr: fc.boolean(),
      ttl: fc.oneof(fc.constant(0), fc.constant(0), fc.nat(5)),
      n: fc.oneof(fc.constant(1), fc.integer({ min: 1, max: 50 })),
      run: fc.boolean(),
    }),
  },
  { weight: 1, arbitrary: fc.record({ k: fc.constant("tomb" as const), seq: fc.integer({ min: 1, max: 1e6 }) }) },
  { weight: 1, arbitrary: fc.record({ k: fc.constant("floor" as const), seq: fc.integer({ min: 1, max: 1e6 }) }) },
);

interface Out {
  kind: number;
  seq: number;
  recLen: number;
  subj?: string;
  hdr?: boolean;
  ttl?: number;
}

const names = ["a.one", "b.two", "c.three", "d.fünf.日本"]; // one not ASCII: written through the UTF-8 path
const subjects: SumSubject[] = names.map((n) => new SubjRec(0, n));

function build(entries: Entry[]): { b: SummaryBuilder; want: Out[]; covered: number } {
  const b = new SummaryBuilder();
  const want: Out[] = [];
  let seq = 0;
  let covered = 0;
  let ts = 1e18;
  for (const e of entries) {
    if (e.k === "tomb") {
      b.tomb(e.seq);
      want.push({ kind: SUM_TOMB, seq: e.seq, recLen: TOMB_REC_LEN });
      covered += TOMB_REC_LEN;
    } else if (e.k === "floor") {
      b.floor(e.seq, 5, 6);
      want.push({ kind: SUM_FLOOR, seq: e.seq, recLen: FLOOR_REC_LEN });
      covered += FLOOR_REC_LEN;
    } else {
      seq += e.seqGap;
      const s = subjects[e.subj] as SumSubject;
      ts += 1000;
      if (e.run && e.ttl === 0) {
        b.msgRun(seq, e.n, e.len, s, e.hdr, ts);
        for (let j = 0; j < e.n; j++) want.push({ kind: SUM_MSG, seq: seq + j, recLen: e.len, subj: s.name, hdr: e.hdr, ttl: 0 });
      } else {
        for (let j = 0; j < e.n; j++) {
          b.msg(seq + j, e.len, s, e.hdr, ts, e.ttl);
          want.push({ kind: SUM_MSG, seq: seq + j, recLen: e.len, subj: s.name, hdr: e.hdr, ttl: e.ttl });
        }
      }
      seq += e.n - 1;
      covered += e.len * e.n;
    }
  }
  return { b, want, covered };
}

function read(bytes: Buffer): Out[] {
  const r = SummaryReader.open(bytes);
  assert.ok(r !== null, "summary opens");
  assert.ok(r.valid(), "summary is valid");
  const local: string[] = [];
  const got: Out[] = [];
  while (r.next()) {
    if (r.kind !== SUM_MSG) {
      got.push({ kind: r.kind, seq: r.seq, recLen: r.recLen });
      continue;
    }
    if (r.newSubject !== null) local.push(r.newSubject);
    const subj = local[r.subj] as string;
    for (let j = 0; j <= r.run; j++) got.push({ kind: SUM_MSG, seq: r.seq + j, recLen: r.recLen, subj, hdr: r.hasHdrBytes, ttl: j === 0 ? r.ttlSec : 0 });
  }
  return got;
}

void describe("block summary codec", () => {
  void it("reads back every entry it was fed, runs included (seeded property)", () => {
    fc.assert(
      fc.property(fc.array(entry, { maxLength: 60 }), (entries) => {
        const { b, want, covered } = build(entries);
        b.covered = covered; // the block bytes are not part of this test
        assert.deepEqual(read(b.encode()), want);
        // encoding twice, and more entries after an encode, still round-trip
        assert.deepEqual(read(b.encode()), want);
      }),
      { seed: 0x5a11, numRuns: 500 },
    );
  });

  void it("keeps a run of equal entries as a count, not bytes, until another entry follows", () => {
    const b = new SummaryBuilder();
    const s = subjects[0] as SumSubject;
    b.msg(1, 60, s, false, 1e18, 0);
    for (let q = 2; q <= 100_000; q++) b.msg(q, 60, s, false, 1e18 + q, 0);
    b.msgRun(100_001, 50_000, 60, s, false, 2e18);
    b.covered = 150_000 * 60;
    const bytes = b.encode();
    assert.ok(bytes.length > 150_000, "the file still holds a byte per message");
    assert.equal(read(bytes).length, 150_000);
    // what the builder holds is its small initial buffer
    assert.ok((b as unknown as { buf: Buffer }).buf.length <= 256);
  });
});
