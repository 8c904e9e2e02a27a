// Pure parts of the consumer layer: ack subject and payloads, the redelivery wheel, pull
// request parsing and the waiting list.

import { test } from "node:test";
import assert from "node:assert/strict";
import { ackSubject, parseAck, parseAckSubject, tsString, AckKind } from "../../src/consumer/ack.js";
import { RedeliveryWheel, Ticker } from "../../src/consumer/wheel.js";
import { parsePullRequest, WaitingList, type PullRequest } from "../../src/consumer/waiting.js";
import { ManualClock } from "../../src/runtime/clock.js";

void test("ack subject: 9-token v1 layout round-trips; v2 parses; junk is rejected", () => {
  const s = ackSubject("$JS.ACK.S.C.", 2, 10, 12, 1796238580253849676, 3);
  assert.equal(s.split(".").length, 9);
  const t = parseAckSubject(s)!;
  assert.deepEqual([t.stream, t.consumer, t.dc, t.sseq, t.cseq, t.pending], ["S", "C", 2, 10, 12, 3]);
  const v2 = parseAckSubject("$JS.ACK._.HASH.S.C.1.5.6.100.0")!;
  assert.deepEqual([v2.stream, v2.consumer, v2.sseq], ["S", "C", 5]);
  assert.equal(parseAckSubject("$JS.ACK.S.C.x.1.1.1.1"), null);
  assert.equal(parseAckSubject("$JS.ACK.S.C.1.1"), null);
});

void test("ack payloads: ack, nak with delay (json and duration), wpi, term reason, nxt", () => {
  assert.equal(parseAck(Buffer.alloc(0))!.kind, AckKind.Ack);
  assert.equal(parseAck(Buffer.from("+ACK"))!.kind, AckKind.Ack);
  assert.deepEqual(parseAck(Buffer.from('-NAK {"delay":5000000000}')), { kind: AckKind.Nak, delayNs: 5e9, arg: "" });
  assert.equal(parseAck(Buffer.from("-NAK 2s"))!.delayNs, 2e9);
  assert.equal(parseAck(Buffer.from("-NAK {bad"))!.delayNs, 0);
  assert.equal(parseAck(Buffer.from("+WPI"))!.kind, AckKind.Progress);
  assert.deepEqual(parseAck(Buffer.from("+TERM bad data")), { kind: AckKind.Term, delayNs: 0, arg: "bad data" });
  assert.deepEqual(parseAck(Buffer.from("+NXT 5")), { kind: AckKind.Next, delayNs: 0, arg: "5" });
  assert.equal(parseAck(Buffer.from("garbage")), null);
});

void test("redelivery wheel: fires in deadline order, cancel and reschedule honoured", () => {
  const w = new RedeliveryWheel(50);
  w.schedule(3, 100);
  w.schedule(1, 100);
  w.schedule(2, 300);
  w.schedule(4, 120);
  w.cancel(4);
  const out: number[] = [];
  w.expire(99, out);
  assert.deepEqual(out, []);
  w.expire(100, out);
  assert.deepEqual(out, [1, 3]);
  w.schedule(2, 1000); // rescheduled later
  w.expire(500, out);
  assert.deepEqual(out, [1, 3]);
  w.expire(100_000, out);
  assert.deepEqual(out, [1, 3, 2]);
  assert.equal(w.size, 0);
});

void test("ticker: one clock timer drives every registered tickable until it drops out", () => {
  const clock = new ManualClock();
  const t = new Ticker(clock, () => assert.fail("no errors expected"), 50);
  let a = 0;
  let b = 0;
  t.want({ tick: () => ++a < 3 });
  t.want({ tick: () => ++b < 10 });
  clock.advance(1000);
  assert.equal(a, 3);
  assert.equal(b, 10);
  assert.equal(t.size, 0);
});

void test("ticker: wakeAt brings the one timer forward to a precise deadline, without adding timers", () => {
  const clock = new ManualClock();
  const t = new Ticker(clock, () => assert.fail("no errors expected"), 50);
  const at: number[] = [];
  const tk = { tick: (now: number) => (at.push(now), at.length < 4) };
  t.want(tk);
  t.wakeAt(tk, 7); // earlier than the first tick: fires at 7, not 50
  t.wakeAt(tk, 30); // later than the armed deadline: no change
  clock.advance(7);
  assert.deepEqual(at, [7]);
  t.wakeAt(tk, 20); // before the next regular tick at 57
  clock.advance(200);
  assert.deepEqual(at, [7, 20, 70, 120]);
  assert.equal(t.size, 0);
});

void test("pull request parsing: empty, bare number, JSON, bad JSON", () => {
  assert.deepEqual(parsePullRequest(Buffer.alloc(0)), { ok: true, req: { batch: 1, maxBytes: 0, expiresNs: 0, noWait: false, hbMs: 0, pg: null } });
  const n = parsePullRequest(Buffer.from("7"));
  assert.ok(n.ok && n.req.batch === 7);
  const j = parsePullRequest(Buffer.from('{"batch":10,"expires":1000000000,"no_wait":true,"idle_heartbeat":500000000,"max_bytes":99}'));
  assert.ok(j.ok);
  assert.deepEqual(j.req, { batch: 10, maxBytes: 99, expiresNs: 1e9, noWait: true, hbMs: 500, pg: { group: "", minPending: 0, minAckPending: 0, id: "", priority: 0 } });
  assert.equal(parsePullRequest(Buffer.from("{bad")).ok, false);
});

void test("waiting list: bounded, FIFO with rotation and sweep", () => {
  const mk = (reply: string): PullRequest => ({ reply, batch: 1, maxBytes: 0, expiresAtMs: 0, noWait: false, hbMs: 0, lastMs: 0, delivered: 0, pg: null });
  const w = new WaitingList(2);
  w.push(mk("a"));
  w.push(mk("b"));
  assert.ok(w.isFull());
  w.rotate();
  assert.equal(w.peek()!.reply, "b");
  w.sweep((r) => r.reply === "b");
  assert.equal(w.length, 1);
  assert.equal(w.peek()!.reply, "a");
});

void test("ack subject timestamps print the exact decimal of the double, as BigInt does", () => {
  const base = Date.UTC(2026, 11, 3) * 1e6;
  const cases = [0, 1, 2 ** 53 - 1, 2 ** 53, 2 ** 53 + 2, 1e18, 1e18 - 256, 1e18 + 1e9 - 128, 4e18, 3.99e18, 9.2e18];
  for (let i = 0; i < 20000; i++) cases.push(base + i * 977.3 + (i % 13) * 1e9, base + i * 1e9 - 64, base + i * 1e9 + 64);
  for (const t of cases) assert.equal(tsString(t), BigInt(Math.round(t)).toString(), String(t));
  // The cached seconds part must follow the input, also backwards.
  assert.equal(tsString(base + 5e9), BigInt(base + 5e9).toString());
  assert.equal(tsString(base + 1e9), BigInt(base + 1e9).toString());
});

void test("ascending: distinct sequences in order, dense (bitmap) or sparse (sort)", async () => {
  const { ascending } = await import("../../src/consumer/core.js");
  assert.deepEqual(ascending([]), []);
  assert.deepEqual(ascending([7]), [7]);
  assert.deepEqual(ascending([5, 3, 9, 4]), [3, 4, 5, 9]);
  assert.deepEqual(ascending([1e12, 3, 5e9]), [3, 5e9, 1e12]);
  const dense = Array.from({ length: 1000 }, (_, i) => 1000 + ((i * 7919) % 1000) * 3);
  assert.deepEqual(ascending(dense), [...dense].sort((a, b) => a - b));
});
