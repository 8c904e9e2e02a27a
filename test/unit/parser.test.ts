// Every fixture is parsed whole, one byte at a time, and at seeded random split points;
// the handler calls must be the same each way (STYLE.md convention 1).

import { test } from "node:test";
import assert from "node:assert/strict";
import { Parser, ProtoErrorKind, parseSize, type ParserHandler, type ParserLimits } from "../../src/protocol/parser.js";

type Call = readonly (string | number | null)[];

class Recorder implements ParserHandler {
  readonly calls: Call[] = [];
  processConnect(json: string): void {
    this.calls.push(["connect", json]);
  }
  processPub(subject: string, reply: string, hdr: Buffer | null, buf: Buffer, start: number, end: number): void {
    // Buffers are only valid during the call: copy them out.
    this.calls.push(["pub", subject, reply, hdr === null ? null : hdr.toString("latin1"), buf.toString("latin1", start, end)]);
  }
  processSub(subject: string, queue: string, sid: string): void {
    this.calls.push(["sub", subject, queue, sid]);
  }
  processUnsub(sid: string, max: number): void {
    this.calls.push(["unsub", sid, max]);
  }
  processPing(): void {
    this.calls.push(["ping"]);
  }
  processPong(): void {
    this.calls.push(["pong"]);
  }
  protocolError(kind: ProtoErrorKind): void {
    this.calls.push(["error", kind]);
  }
}

interface Fixture {
  name: string;
  input: string;
  expect: Call[];
  headers?: boolean;
  limits?: Partial<ParserLimits>;
}

const LIMITS: ParserLimits = { maxControlLineBytes: 4096, maxPayloadBytes: 1024 * 1024 };
const HDR = "NATS/1.0\r\nA: b\r\n\r\n"; // 18 bytes

const fixtures: Fixture[] = [
  { name: "CONNECT", input: 'CONNECT {"verbose":false,"pedantic":false}\r\n', expect: [["connect", '{"verbose":false,"pedantic":false}']] },
  { name: "CONNECT with extra blanks", input: "CONNECT \t {}  \r\n", expect: [["connect", "{}"]] },
  { name: "PUB without reply", input: "PUB foo 5\r\nhello\r\n", expect: [["pub", "foo", "", null, "hello"]] },
  { name: "PUB with reply", input: "PUB foo.bar _INBOX.1 2\r\nhi\r\n", expect: [["pub", "foo.bar", "_INBOX.1", null, "hi"]] },
  { name: "PUB zero-length payload", input: "PUB foo 0\r\n\r\n", expect: [["pub", "foo", "", null, ""]] },
  { name: "PUB payload holding CRLF and protocol words", input: "PUB foo 13\r\nPING\r\nPUB x\r\n\r\nPING\r\n", expect: [["pub", "foo", "", null, "PING\r\nPUB x\r\n"], ["ping"]] },
  { name: "PUB binary payload", input: "PUB b 4\r\n\x00\xff\r\n\r\n", expect: [["pub", "b", "", null, "\x00\xff\r\n"]] },
  { name: "HPUB without reply", headers: true, input: `HPUB foo 18 23\r\n${HDR}hello\r\n`, expect: [["pub", "foo", "", HDR, "hello"]] },
  { name: "HPUB with reply", headers: true, input: `HPUB foo r.1 18 20\r\n${HDR}hi\r\n`, expect: [["pub", "foo", "r.1", HDR, "hi"]] },
  { name: "HPUB headers only", headers: true, input: `HPUB foo 18 18\r\n${HDR}\r\n`, expect: [["pub", "foo", "", HDR, ""]] },
  { name: "HPUB zero header length", headers: true, input: "HPUB foo 0 2\r\nhi\r\n", expect: [["pub", "foo", "", null, "hi"]] },
  { name: "SUB", input: "SUB foo.* 1\r\n", expect: [["sub", "foo.*", "", "1"]] },
  { name: "SUB with queue", input: "SUB foo.> workers 22\r\n", expect: [["sub", "foo.>", "workers", "22"]] },
  { name: "UNSUB", input: "UNSUB 1\r\n", expect: [["unsub", "1", 0]] },
  { name: "UNSUB with max", input: "UNSUB 7 10\r\n", expect: [["unsub", "7", 10]] },
  { name: "PING and PONG", input: "PING\r\nPONG\r\n", expect: [["ping"], ["pong"]] },
  { name: "LF-only line endings", input: "PING\nSUB a 1\nPUB a 1\nx\r\n", expect: [["ping"], ["sub", "a", "", "1"], ["pub", "a", "", null, "x"]] },
  {
    name: "case-insensitive verbs",
    headers: true,
    input: "ping\r\nPoNg\r\nconnect {}\r\nsub a q 1\r\nunSub 1 2\r\npub a 1\r\nx\r\nhpub a 0 1\r\ny\r\n",
    expect: [["ping"], ["pong"], ["connect", "{}"], ["sub", "a", "q", "1"], ["unsub", "1", 2], ["pub", "a", "", null, "x"], ["pub", "a", "", null, "y"]],
  },
  {
    name: "tabs and repeated blanks between arguments",
    input: "PUB\tfoo\t\t3\r\nabc\r\nSUB  foo \t q\t 9 \r\nUNSUB\t9\t1\r\n",
    expect: [["pub", "foo", "", null, "abc"], ["sub", "foo", "q", "9"], ["unsub", "9", 1]],
  },
  {
    // The fast path reuses the last subject when the same bytes and a space follow.
    name: "repeated, extended, shortened and tab-separated subjects",
    input: "PUB foo.bar 1\r\na\r\nPUB foo.bar 1\r\nb\r\nPUB foo.barx 1\r\nc\r\nPUB foo.ba 1\r\nd\r\nPUB foo.ba\t1\r\ne\r\nPUB foo.ba r 1\r\nf\r\n",
    expect: [
      ["pub", "foo.bar", "", null, "a"],
      ["pub", "foo.bar", "", null, "b"],
      ["pub", "foo.barx", "", null, "c"],
      ["pub", "foo.ba", "", null, "d"],
      ["pub", "foo.ba", "", null, "e"],
      ["pub", "foo.ba", "r", null, "f"],
    ],
  },
  { name: "control byte inside a subject", input: "PUB a\x01b 1\r\nx\r\nPUB a\x01b 1\r\ny\r\n", expect: [["pub", "a\x01b", "", null, "x"], ["pub", "a\x01b", "", null, "y"]] },
  { name: "+OK, INFO and -ERR from a client are ignored", input: "+OK\r\nINFO {}\r\n-ERR 'x'\r\nPING\r\n", expect: [["ping"]] },
  {
    name: "pipelined operations",
    input: "SUB a 1\r\nPUB a 1\r\n1\r\nPUB a r 2\r\n22\r\nUNSUB 1\r\nPING\r\n",
    expect: [["sub", "a", "", "1"], ["pub", "a", "", null, "1"], ["pub", "a", "r", null, "22"], ["unsub", "1", 0], ["ping"]],
  },
  {
    name: "control line of exactly the limit is accepted",
    limits: { maxControlLineBytes: 16 },
    input: "SUB abcdefghij 1\r\nPING\r\n", // 16 bytes before CRLF
    expect: [["sub", "abcdefghij", "", "1"], ["ping"]],
  },
  // ---- errors: nothing after the error is parsed ----
  { name: "unknown op", input: "PING\r\nFOO bar\r\nPING\r\n", expect: [["ping"], ["error", ProtoErrorKind.UnknownOp]] },
  { name: "unknown op sharing a prefix", input: "PUBX a 1\r\nx\r\n", expect: [["error", ProtoErrorKind.UnknownOp]] },
  { name: "empty line", input: "\r\nPING\r\n", expect: [["error", ProtoErrorKind.UnknownOp]] },
  { name: "payload not followed by CRLF", input: "PUB a 2\r\nabc\r\nPING\r\n", expect: [["error", ProtoErrorKind.UnknownOp]] },
  {
    name: "control line over the limit (terminated)",
    limits: { maxControlLineBytes: 16 },
    input: "PING\r\nSUB abcdefghijk 1\r\nPING\r\n",
    expect: [["ping"], ["error", ProtoErrorKind.MaxControlLine]],
  },
  {
    name: "control line over the limit (never terminated)",
    limits: { maxControlLineBytes: 16 },
    input: "PING\r\nPUB " + "x".repeat(64),
    expect: [["ping"], ["error", ProtoErrorKind.MaxControlLine]],
  },
  { name: "payload over max_payload", limits: { maxPayloadBytes: 8 }, input: "PUB a 9\r\n123456789\r\nPING\r\n", expect: [["error", ProtoErrorKind.MaxPayload]] },
  { name: "payload at max_payload", limits: { maxPayloadBytes: 8 }, input: "PUB a 8\r\n12345678\r\n", expect: [["pub", "a", "", null, "12345678"]] },
  { name: "HPUB over max_payload", headers: true, limits: { maxPayloadBytes: 20 }, input: `HPUB a 18 21\r\n${HDR}abc\r\n`, expect: [["error", ProtoErrorKind.MaxPayload]] },
  { name: "PUB bad size", input: "PUB a b1\r\nx\r\n", expect: [["error", ProtoErrorKind.BadArgs]] },
  { name: "PUB negative size", input: "PUB a -1\r\n", expect: [["error", ProtoErrorKind.BadArgs]] },
  { name: "PUB missing size", input: "PUB a\r\n", expect: [["error", ProtoErrorKind.BadArgs]] },
  { name: "PUB too many arguments", input: "PUB a b c 1\r\nx\r\n", expect: [["error", ProtoErrorKind.BadArgs]] },
  { name: "HPUB bad size", headers: true, input: "HPUB a x 2\r\nhi\r\n", expect: [["error", ProtoErrorKind.BadArgs]] },
  { name: "HPUB header length over total", headers: true, input: "HPUB a 10 5\r\n12345\r\n", expect: [["error", ProtoErrorKind.BadArgs]] },
  { name: "HPUB missing total", headers: true, input: "HPUB a 5\r\n", expect: [["error", ProtoErrorKind.BadArgs]] },
  { name: "HPUB before headers were negotiated", input: `PING\r\nHPUB a 18 18\r\n${HDR}\r\n`, expect: [["ping"], ["error", ProtoErrorKind.HeadersNotNegotiated]] },
  { name: "SUB missing sid", input: "SUB a\r\n", expect: [["error", ProtoErrorKind.BadArgs]] },
  { name: "SUB too many arguments", input: "SUB a q 1 2\r\n", expect: [["error", ProtoErrorKind.BadArgs]] },
  // nats-server parseSize gives -1 for a max it cannot read, and processUnsub then
  // unsubscribes at once: no protocol error, the connection stays.
  { name: "UNSUB bad max", input: "UNSUB 1 x\r\n", expect: [["unsub", "1", -1]] },
  { name: "UNSUB negative max", input: "UNSUB 1 -3\r\n", expect: [["unsub", "1", -1]] },
  { name: "UNSUB without sid", input: "UNSUB\r\n", expect: [["error", ProtoErrorKind.BadArgs]] },
];

function run(f: Fixture, chunks: Buffer[]): Call[] {
  const r = new Recorder();
  const p = new Parser(r, { ...LIMITS, ...f.limits });
  p.headers = f.headers === true;
  for (const c of chunks) p.parse(c);
  return r.calls;
}

// mulberry32: a tiny seeded PRNG so a failing split replays exactly.
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function randomSplits(buf: Buffer, rnd: () => number): Buffer[] {
  const out: Buffer[] = [];
  let i = 0;
  while (i < buf.length) {
    const len = 1 + Math.floor(rnd() * Math.max(1, Math.min(buf.length - i, 12)));
    // Each chunk is a fresh copy, so the parser cannot rely on earlier chunks staying put.
    out.push(Buffer.from(buf.subarray(i, i + len)));
    i += len;
  }
  return out;
}

for (const f of fixtures) {
  void test(`parser: ${f.name}`, () => {
    const buf = Buffer.from(f.input, "latin1");
    assert.deepEqual(run(f, [buf]), f.expect, "whole");
    const bytes: Buffer[] = [];
    for (let i = 0; i < buf.length; i++) bytes.push(Buffer.from([buf[i]!]));
    assert.deepEqual(run(f, bytes), f.expect, "one byte at a time");
    for (let seed = 1; seed <= 25; seed++) {
      assert.deepEqual(run(f, randomSplits(buf, prng(seed))), f.expect, `random splits, seed ${seed}`);
    }
  });
}

void test("parser: a chunk reused by the caller after parse() does not corrupt a pending frame", () => {
  const r = new Recorder();
  const p = new Parser(r, LIMITS);
  const chunk = Buffer.from("PUB a 4\r\nab");
  p.parse(chunk);
  chunk.fill(0x21); // the socket layer may hand the same memory out again
  p.parse(Buffer.from("cd\r\nSUB x 1"));
  p.parse(Buffer.from("\r\n"));
  assert.deepEqual(r.calls, [
    ["pub", "a", "", null, "abcd"],
    ["sub", "x", "", "1"],
  ]);
});

void test("parser: stop() halts parsing", () => {
  const r = new Recorder();
  const p = new Parser(r, LIMITS);
  p.parse(Buffer.from("PING\r\n"));
  p.stop();
  p.parse(Buffer.from("PING\r\n"));
  assert.deepEqual(r.calls, [["ping"]]);
});

void test("parser: headers turned on by CONNECT apply to the rest of the same read", () => {
  const rec = new Recorder();
  const p: Parser = new Parser(
    {
      processConnect: (json) => {
        rec.processConnect(json);
        p.headers = true;
      },
      processPub: (s, rep, hdr, b, start, end) => rec.processPub(s, rep, hdr, b, start, end),
      processSub: (s, q, sid) => rec.processSub(s, q, sid),
      processUnsub: (sid, m) => rec.processUnsub(sid, m),
      processPing: () => rec.processPing(),
      processPong: () => rec.processPong(),
      protocolError: (k) => rec.protocolError(k),
    },
    LIMITS,
  );
  p.parse(Buffer.from(`CONNECT {"headers":true}\r\nHPUB a 18 18\r\n${HDR}\r\n`));
  assert.deepEqual(rec.calls, [
    ["connect", '{"headers":true}'],
    ["pub", "a", "", HDR, ""],
  ]);
});

void test("parseSize: non-negative decimal integers only", () => {
  assert.equal(parseSize("0"), 0);
  assert.equal(parseSize("1048576"), 1048576);
  for (const s of ["", "-1", "+1", "1.5", "1e3", "0x10", " 1", "a", "9".repeat(16)]) assert.equal(parseSize(s), -1, JSON.stringify(s));
});
