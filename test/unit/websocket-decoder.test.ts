// The WebSocket frame decoder (src/server/websocket.ts) under fast-check: any bytes, split
// anywhere, never throw and hold a bounded amount; well-formed masked frames give back their
// payloads whatever the read boundaries; the word-wise unmask equals the byte-wise one.

import { test } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import { WsFrameDecoder, unmask, type WsSink } from "../../src/server/ws-frame.js";
import { frame } from "../helpers/ws-raw.js";

const MAX_MESSAGE = 64 * 1024;

class Recorder implements WsSink {
  data: Buffer[] = [];
  controls: { op: number; payload: Buffer }[] = [];
  failed: { status: number; reason: string } | null = null;
  wsData(b: Buffer): void {
    this.data.push(Buffer.from(b));
  }
  wsControl(op: number, payload: Buffer): void {
    this.controls.push({ op, payload: Buffer.from(payload) });
  }
  wsFail(status: number, reason: string): void {
    assert.equal(this.failed, null, "one failure at most");
    this.failed = { status, reason };
  }
}

/** Feeds bytes cut at the given points (each read copied, as the shared buffer would be). */
function feedSplit(d: WsFrameDecoder, bytes: Buffer, cuts: number[]): number {
  const points = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b);
  let prev = 0;
  let maxHeld = 0;
  for (const p of [...points, bytes.length]) {
    if (p > prev) d.feed(Buffer.from(bytes.subarray(prev, p)));
    maxHeld = Math.max(maxHeld, d.heldBytes());
    prev = Math.max(prev, p);
  }
  return maxHeld;
}

void test("fuzz: random bytes never throw, fail at most once, and hold a bounded amount", () => {
  fc.assert(
    fc.property(fc.uint8Array({ maxLength: 4096 }), fc.array(fc.nat(), { maxLength: 20 }), fc.boolean(), fc.boolean(), (bytes, cuts, mask, inflate) => {
      const r = new Recorder();
      const d = new WsFrameDecoder(r, mask, inflate, MAX_MESSAGE);
      const held = feedSplit(d, Buffer.from(bytes), cuts);
      assert.ok(held <= 14 + 125 + MAX_MESSAGE, `held ${held}`);
      if (r.failed) assert.ok(r.failed.status >= 1000 && r.failed.status < 1012);
    }),
    { numRuns: 3000 },
  );
});

const frameArb = fc.oneof(
  { weight: 6, arbitrary: fc.record({ kind: fc.constant("data" as const), text: fc.boolean(), parts: fc.array(fc.uint8Array({ maxLength: 300 }), { minLength: 1, maxLength: 4 }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("ping" as const), payload: fc.uint8Array({ maxLength: 125 }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("pong" as const), payload: fc.uint8Array({ maxLength: 125 }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("big" as const), size: fc.integer({ min: 126, max: 70_000 }) }) },
);

void test("fuzz: well-formed frames (fragmented, interleaved pings) give back their payloads at any read boundaries", () => {
  fc.assert(
    fc.property(fc.array(frameArb, { maxLength: 12 }), fc.array(fc.nat(), { maxLength: 30 }), (msgs, cuts) => {
      const wire: Buffer[] = [];
      const want: Buffer[] = [];
      const wantCtl: number[] = [];
      for (const m of msgs) {
        if (m.kind === "data") {
          m.parts.forEach((p, i) => {
            const op = i === 0 ? (m.text ? 1 : 2) : 0;
            wire.push(frame(op, Buffer.from(p), { fin: i === m.parts.length - 1 }));
            want.push(Buffer.from(p));
            // A control frame may come between fragments.
            if (i === 0 && m.parts.length > 1) {
              wire.push(frame(9, "mid"));
              wantCtl.push(9);
            }
          });
        } else if (m.kind === "big") {
          const b = Buffer.alloc(m.size, 0x61);
          wire.push(frame(2, b));
          want.push(b);
        } else {
          wire.push(frame(m.kind === "ping" ? 9 : 10, Buffer.from(m.payload)));
          wantCtl.push(m.kind === "ping" ? 9 : 10);
        }
      }
      const r = new Recorder();
      const d = new WsFrameDecoder(r, true, false, MAX_MESSAGE);
      feedSplit(d, Buffer.concat(wire), cuts);
      assert.equal(r.failed, null);
      assert.deepEqual(Buffer.concat(r.data), Buffer.concat(want));
      assert.deepEqual(
        r.controls.map((c) => c.op),
        wantCtl,
      );
    }),
    { numRuns: 300 },
  );
});

void test("fuzz: word-wise unmask equals byte-wise unmask at any offset, length and key position", () => {
  fc.assert(
    fc.property(fc.uint8Array({ minLength: 0, maxLength: 300 }), fc.nat({ max: 7 }), fc.uint8Array({ minLength: 4, maxLength: 4 }), fc.nat({ max: 3 }), (data, off, key, kpos) => {
      const backing = Buffer.alloc(data.length + 8);
      const buf = backing.subarray(off, off + data.length);
      buf.set(data);
      const k = Buffer.from(key);
      const next = unmask(buf, 0, buf.length, k, kpos);
      const want = Buffer.from(data).map((b, i) => b ^ k[(kpos + i) & 3]!);
      assert.deepEqual(Buffer.from(buf), Buffer.from(want));
      assert.equal(next, (kpos + data.length) & 3);
    }),
    { numRuns: 2000 },
  );
});

void test("a compressed message over the bound is refused with 1009", () => {
  const r = new Recorder();
  const d = new WsFrameDecoder(r, true, true, 1024);
  d.feed(frame(2, Buffer.alloc(2000), { rsv1: true }));
  assert.equal(r.failed?.status, 1009);
  assert.equal(d.heldBytes(), 0);
});
