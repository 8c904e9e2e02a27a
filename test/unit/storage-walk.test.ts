// RecordWalk (storage/file/walk.ts): the one walk over a block's records that recovery,
// compaction and the offsets of a damaged block share.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { FLAG_HDR, KIND_FLOOR, KIND_MSG, KIND_TOMB, REC_HDR, REC_OVERHEAD, sealRecord, writeRecordHeader } from "../../src/storage/file/record.js";
import { RecordWalk, WALK_BAD, WALK_END, WALK_REC, forEachMsg, resync } from "../../src/storage/file/walk.js";

interface Rec {
  kind: number;
  seq: number;
  subject?: string;
  hdr?: Buffer;
  data?: Buffer;
}

function encode(r: Rec): Buffer {
  const subj = Buffer.from(r.subject ?? "");
  const hdr = r.hdr ?? Buffer.alloc(0);
  const data = r.data ?? Buffer.alloc(0);
  const rl = REC_OVERHEAD + subj.length + hdr.length + data.length;
  const b = Buffer.alloc(rl);
  writeRecordHeader(b, 0, rl, r.kind, hdr.length > 0 ? FLAG_HDR : 0, subj.length, hdr.length, r.seq, 1e18 + r.seq, 0);
  subj.copy(b, REC_HDR);
  hdr.copy(b, REC_HDR + subj.length);
  data.copy(b, REC_HDR + subj.length + hdr.length);
  sealRecord(b, 0, rl);
  return b;
}

function flip(b: Buffer, at: number, x: number): void {
  b[at] = (b[at] as number) ^ x;
}

function floorData(last: number, ts: number): Buffer {
  const d = Buffer.alloc(16);
  d.writeDoubleLE(last, 0);
  d.writeDoubleLE(ts, 8);
  return d;
}

const RECS: Rec[] = [
  { kind: KIND_MSG, seq: 1, subject: "a.b", data: Buffer.from("one") },
  { kind: KIND_MSG, seq: 2, subject: "a.c", hdr: Buffer.from("NATS/1.0\r\nX: y\r\n\r\n"), data: Buffer.from("two") },
  { kind: KIND_TOMB, seq: 1 },
  { kind: KIND_MSG, seq: 3, subject: "a.b", data: Buffer.alloc(300, 7) },
  { kind: KIND_FLOOR, seq: 2, data: floorData(3, 1e18 + 3) },
  { kind: KIND_MSG, seq: 4, subject: "z", data: Buffer.alloc(0) },
];

function build(recs: Rec[]): { buf: Buffer; offs: number[] } {
  const parts = recs.map(encode);
  const offs: number[] = [];
  let p = 0;
  for (const x of parts) {
    offs.push(p);
    p += x.length;
  }
  return { buf: Buffer.concat(parts), offs };
}

/** Everything a walk reports, as values: records and the damage it stepped over. */
function walkAll(buf: Buffer, verify: boolean): string[] {
  const out: string[] = [];
  const w = new RecordWalk(buf, verify);
  for (;;) {
    const r = w.next();
    if (r === WALK_REC) out.push(`rec ${w.kind} seq ${w.seq()} at ${w.pos} len ${w.len}`);
    else if (r === WALK_BAD) {
      const at = w.pos;
      if (!w.skipDamage()) {
        out.push(`torn at ${at}`);
        break;
      }
      out.push(`damage ${w.badFrom}..${w.pos}`);
      assert.equal(w.badFrom, at);
    } else {
      assert.equal(r, WALK_END);
      assert.equal(w.pos, buf.length);
      break;
    }
  }
  return out;
}

void describe("RecordWalk", () => {
  void it("walks every record of a clean block in order, with kind, seq, offset and length", () => {
    const { buf, offs } = build(RECS);
    const expect = RECS.map((r, i) => `rec ${r.kind} seq ${r.seq} at ${offs[i]} len ${encode(r).length}`);
    assert.deepEqual(walkAll(buf, true), expect);
    assert.deepEqual(walkAll(buf, false), expect);
  });

  void it("an empty buffer and a start offset", () => {
    assert.deepEqual(walkAll(Buffer.alloc(0), true), []);
    const { buf, offs } = build(RECS);
    const w = new RecordWalk(buf, true, offs[3]);
    assert.equal(w.next(), WALK_REC);
    assert.equal(w.seq(), 3);
  });

  void it("reads a floor record's last sequence and time", () => {
    const { buf, offs } = build(RECS);
    const w = new RecordWalk(buf, true, offs[4]);
    assert.equal(w.next(), WALK_REC);
    assert.equal(w.kind, KIND_FLOOR);
    assert.equal(w.floorLast(), 3);
    assert.equal(w.floorLastTs(), 1e18 + 3);
  });

  void it("a bad checksum in the middle: reported, skipped to the next good record", () => {
    const { buf, offs } = build(RECS);
    flip(buf, (offs[1] as number) + REC_HDR + 1, 0xff); // a subject byte of record 2
    const got = walkAll(buf, true);
    assert.deepEqual(got.slice(0, 2), [`rec ${KIND_MSG} seq 1 at 0 len ${offs[1]}`, `damage ${offs[1]}..${offs[2]}`]);
    assert.equal(got.length, RECS.length + 1 - 1);
    assert.ok(got[2]?.startsWith(`rec ${KIND_TOMB} seq 1 at ${offs[2]}`));
    // a trusted walk does not look at checksums
    assert.equal(walkAll(buf, false).length, RECS.length);
  });

  void it("a garbage length field: the verifying walk resynchronises, the trusted one stops", () => {
    const { buf, offs } = build(RECS);
    buf.writeUInt32LE(0x00ffffff, offs[3] as number);
    const got = walkAll(buf, true);
    assert.ok(got.includes(`damage ${offs[3]}..${offs[4]}`), got.join("; "));
    assert.equal(got.filter((l) => l.startsWith("rec")).length, RECS.length - 1);
    const w = new RecordWalk(buf, false);
    let n = 0;
    while (w.next() === WALK_REC) n++;
    assert.equal(n, 3);
    assert.equal(w.pos, offs[3]);
  });

  void it("a torn tail: no record after it, the walk stops where it begins", () => {
    const { buf, offs } = build(RECS);
    const cut = (offs[5] as number) + 10;
    const torn = buf.subarray(0, cut);
    const got = walkAll(torn, true);
    assert.equal(got[got.length - 1], `torn at ${offs[5]}`);
    assert.equal(got.length, RECS.length); // five records and the tear
    assert.equal(walkAll(torn, false)[4], `rec ${KIND_FLOOR} seq 2 at ${offs[4]} len ${REC_OVERHEAD + 16}`);
  });

  void it("pure garbage: torn at 0; resync finds nothing", () => {
    const g = Buffer.alloc(500, 0xab);
    assert.deepEqual(walkAll(g, true), ["torn at 0"]);
    assert.equal(resync(g, 0), -1);
  });

  void it("forEachMsg lists message records only, with base added, over damage", () => {
    const { buf, offs } = build(RECS);
    flip(buf, (offs[2] as number) + 30, 1); // the tombstone
    const seen: Array<[number, number]> = [];
    forEachMsg(buf, 1000, (s, off) => seen.push([s, off]));
    assert.deepEqual(seen, [
      [1, 1000 + (offs[0] as number)],
      [2, 1000 + (offs[1] as number)],
      [3, 1000 + (offs[3] as number)],
      [4, 1000 + (offs[5] as number)],
    ]);
  });

  void it("agrees with a byte-by-byte reference on randomly damaged blocks", () => {
    let x = 12345;
    const rnd = (n: number): number => {
      x = (x * 1103515245 + 12345) & 0x7fffffff;
      return x % n;
    };
    for (let round = 0; round < 200; round++) {
      const recs: Rec[] = [];
      const n = 1 + rnd(20);
      for (let i = 1; i <= n; i++) recs.push({ kind: KIND_MSG, seq: i, subject: `s.${rnd(3)}`, data: Buffer.alloc(rnd(200), i) });
      const { buf, offs } = build(recs);
      const flips = rnd(3);
      const bad = new Set<number>();
      for (let k = 0; k < flips; k++) {
        const i = rnd(n);
        if (bad.has(i)) continue; // a second flip of the same byte would undo the first
        const at = (offs[i] as number) + REC_HDR + rnd(encode(recs[i]!).length - REC_HDR - 4);
        flip(buf, at, 0x5a);
        bad.add(i);
      }
      const seqs: number[] = [];
      forEachMsg(buf, 0, (s) => seqs.push(s));
      // a flip inside a record's body breaks only that record
      assert.deepEqual(
        seqs,
        recs.map((r) => r.seq).filter((_, i) => !bad.has(i)),
        `round ${round}`,
      );
    }
  });
});
