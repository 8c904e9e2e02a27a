import { test } from "node:test";
import assert from "node:assert/strict";
import { AckReply } from "../../src/protocol/ackreply.js";
import { ackSubject } from "../../src/consumer/ack.js";

// A small seeded generator: the same cases every run.
function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

void test("AckReply: string, bytes and length agree with ackSubject for every kind of number", () => {
  const r = rng(7);
  const pick = (): number => {
    const k = Math.floor(r() * 6);
    if (k === 0) return Math.floor(r() * 10);
    if (k === 1) return Math.floor(r() * 1000);
    if (k === 2) return Math.floor(r() * 2 ** 31);
    if (k === 3) return Math.floor(r() * 2 ** 40);
    if (k === 4) return Number.MAX_SAFE_INTEGER - Math.floor(r() * 1000);
    return 10 ** Math.floor(r() * 15);
  };
  const tsOf = (): number => {
    const k = Math.floor(r() * 5);
    if (k === 0) return Math.floor(r() * 1e9); // a manual clock near zero
    if (k === 1) return 1_733_216_543_000_000_000 + Math.floor(r() * 1e12); // now-ish: above 2^53
    if (k === 2) return Math.floor(r() * 2 ** 53);
    if (k === 3) return 1e9 * Math.floor(r() * 4e9); // whole seconds
    return 4.2e18 + r() * 1e15; // past 2096: the BigInt way
  };
  const ar = new AckReply("$JS.ACK.ORDERS.c1.");
  const out = Buffer.alloc(256);
  for (let i = 0; i < 5000; i++) {
    const dc = 1 + Math.floor(r() * 5);
    const sseq = pick();
    const cseq = pick();
    const ts = tsOf();
    const pending = pick();
    ar.set(dc, sseq, cseq, ts, pending);
    const want = ackSubject("$JS.ACK.ORDERS.c1.", dc, sseq, cseq, ts, pending);
    assert.equal(ar.toString(), want, `case ${i}`);
    assert.equal(ar.length(), want.length, `length, case ${i}`);
    const end = ar.writeTo(out, 3);
    assert.equal(out.toString("latin1", 3, end), want, `bytes, case ${i}`);
  }
});

void test("AckReply: timestamps whose seconds quotient rounds up stay exact", () => {
  const ar = new AckReply("$JS.ACK.S.C.");
  for (const ts of [8_999_999_999_999_999, 9_007_198_999_999_999, 1_999_999_999, 999_999_999, 1e9, 0]) {
    ar.set(1, 1, 1, ts, 0);
    assert.equal(ar.toString(), ackSubject("$JS.ACK.S.C.", 1, 1, 1, ts, 0), String(ts));
    const out = Buffer.alloc(80);
    assert.equal(out.toString("latin1", 0, ar.writeTo(out, 0)), ar.toString());
    assert.equal(ar.length(), ar.toString().length);
  }
});

void test("AckReply: set() replaces the cached string", () => {
  const ar = new AckReply("$JS.ACK.S.C.");
  ar.set(1, 2, 3, 4, 5);
  assert.equal(ar.toString(), "$JS.ACK.S.C.1.2.3.4.5");
  ar.set(2, 20, 30, 1_000_000_007, 0);
  assert.equal(ar.toString(), "$JS.ACK.S.C.2.20.30.1000000007.0");
});
