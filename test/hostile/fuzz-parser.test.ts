// The client protocol parser under fuzzing (fast-check): byte streams made of protocol
// pieces (valid and broken operations, random bytes, sizes at and over the limits) are parsed
// whole and again cut at random points. The parser never throws, never buffers beyond
// max_control_line / max_payload, stops after an error, and answers the same calls whichever
// way the stream was cut.
//
// CI size by default (a few seconds); `npm run fuzz` sets FUZZ_RUNS / FUZZ_SECONDS.

import { test } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import { Parser, type ParserHandler, type ProtoErrorKind } from "../../src/protocol/parser.js";
import { fuzzParams } from "./fuzz-params.js";

const LIMITS = { maxControlLineBytes: 256, maxPayloadBytes: 1024 };

/** Records every call (payloads copied: the parser hands out views of its input). */
class Recorder implements ParserHandler {
  readonly calls: string[] = [];
  parser: Parser | null = null;
  errored = false;
  afterError = 0;

  private rec(s: string): void {
    if (this.errored) this.afterError++;
    this.calls.push(s);
  }
  processConnect(json: string): void {
    this.rec(`CONNECT ${json}`);
    // A handler that lets the connection in clears the flag (as Client does).
    if (this.parser !== null) this.parser.awaitingConnect = false;
  }
  processPub(subject: string, reply: string, hdr: Buffer | null, buf: Buffer, start: number, end: number): void {
    this.rec(`PUB ${subject}|${reply}|${hdr === null ? "-" : hdr.toString("latin1")}|${buf.toString("latin1", start, end)}`);
  }
  processSub(subject: string, queue: string, sid: string): void {
    this.rec(`SUB ${subject}|${queue}|${sid}`);
  }
  processUnsub(sid: string, max: number): void {
    this.rec(`UNSUB ${sid}|${max}`);
  }
  processPing(): void {
    this.rec("PING");
  }
  processPong(): void {
    this.rec("PONG");
  }
  protocolError(kind: ProtoErrorKind): void {
    this.rec(`ERR ${kind}`);
    this.errored = true;
  }
}

const token = fc.stringMatching(/^[a-zA-Z0-9.*>_$-]{1,12}$/);
const size = fc.oneof(fc.integer({ min: 0, max: 40 }), fc.constantFrom(LIMITS.maxPayloadBytes, LIMITS.maxPayloadBytes + 1, 999999999, -1));

/** One piece of a stream: mostly protocol, some noise. */
const piece: fc.Arbitrary<Buffer> = fc.oneof(
  { arbitrary: fc.tuple(token, fc.option(token), fc.integer({ min: 0, max: 40 })).map(([s, r, n]) => Buffer.from(`PUB ${s} ${r === null ? "" : r + " "}${n}\r\n${"p".repeat(n)}\r\n`)), weight: 6 },
  { arbitrary: fc.tuple(token, fc.integer({ min: 0, max: 20 }), fc.integer({ min: 0, max: 20 })).map(([s, h, p]) => Buffer.from(`HPUB ${s} ${h} ${h + p}\r\n${"h".repeat(h)}${"p".repeat(p)}\r\n`)), weight: 6 },
  { arbitrary: fc.tuple(token, size).map(([s, n]) => Buffer.from(`PUB ${s} ${n}\r\n`)), weight: 1 },
  { arbitrary: fc.tuple(token, fc.option(token), token).map(([s, q, sid]) => Buffer.from(`SUB ${s} ${q === null ? "" : q + " "}${sid}\r\n`)), weight: 6 },
  { arbitrary: fc.tuple(token, fc.option(fc.integer({ min: 0, max: 99 }))).map(([sid, m]) => Buffer.from(`UNSUB ${sid}${m === null ? "" : " " + m}\r\n`)), weight: 6 },
  { arbitrary: fc.constantFrom("PING\r\n", "PONG\r\n", "ping\r\n", "PING\n", "\r\n", "+OK\r\n", "-ERR 'x'\r\n", "INFO {}\r\n", "MSG a 1 1\r\nx\r\n").map((s) => Buffer.from(s)), weight: 6 },
  { arbitrary: fc.string({ maxLength: 60 }).map((j) => Buffer.from(`CONNECT ${j}\r\n`)), weight: 1 },
  { arbitrary: fc.constantFrom("CONNECT {\"verbose\":false}\r\n", "CONNECT {\"headers\":true}\r\n").map((s) => Buffer.from(s)), weight: 6 },
  { arbitrary: fc.integer({ min: 200, max: 400 }).map((n) => Buffer.from(`SUB ${"s".repeat(n)} 1\r\n`)), weight: 1 },
  { arbitrary: fc.uint8Array({ maxLength: 64 }).map((a) => Buffer.from(a)), weight: 1 },
  { arbitrary: fc.constantFrom("P", "PU", "PUB", "PUB ", "\r", "\n", " ", "\t").map((s) => Buffer.from(s)), weight: 1 },
);

const stream = fc.record({
  pieces: fc.array(piece, { minLength: 1, maxLength: 30 }),
  cuts: fc.array(fc.nat(), { maxLength: 12 }),
  awaitingConnect: fc.boolean(),
  headers: fc.boolean(),
});

function run(bytes: Buffer, cuts: number[], awaitingConnect: boolean, headers: boolean): Recorder {
  const r = new Recorder();
  const p = new Parser(r, LIMITS);
  r.parser = p;
  p.awaitingConnect = awaitingConnect;
  p.headers = headers;
  const at = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b);
  let from = 0;
  for (const c of [...at, bytes.length]) {
    if (c <= from) continue;
    // A fresh copy per read, and the caller's view reused afterwards: as with the shared
    // read buffer, nothing may be kept without a copy.
    const chunk = Buffer.from(bytes.subarray(from, c));
    p.parse(chunk);
    chunk.fill(0);
    from = c;
    const held = p as unknown as { partialLine: Buffer | null; pBuf: Buffer | null };
    assert.ok((held.partialLine?.length ?? 0) <= LIMITS.maxControlLineBytes + 1, `partial line of ${held.partialLine?.length}`);
    assert.ok((held.pBuf?.length ?? 0) <= LIMITS.maxPayloadBytes + 2, `payload buffer of ${held.pBuf?.length}`);
  }
  return r;
}

void test("fuzzed parser: never throws, bounded buffering, nothing after an error, the same calls however the bytes are cut", () => {
  const { runs, seconds } = fuzzParams(2000);
  const seen = { runs: 0, pubs: 0, errors: 0 };
  fc.assert(
    fc.property(stream, ({ pieces, cuts, awaitingConnect, headers }) => {
      const bytes = Buffer.concat(pieces);
      const whole = run(bytes, [], awaitingConnect, headers);
      const cut = run(bytes, cuts, awaitingConnect, headers);
      assert.equal(whole.afterError, 0, "calls after a protocol error");
      assert.equal(cut.afterError, 0, "calls after a protocol error (cut)");
      assert.deepEqual(cut.calls, whole.calls);
      seen.runs++;
      if (whole.calls.some((c) => c.startsWith("PUB "))) seen.pubs++;
      if (whole.errored) seen.errors++;
    }),
    { numRuns: runs, interruptAfterTimeLimit: seconds * 1000, markInterruptAsFailure: false },
  );
  // The generator reaches both sides: streams that deliver messages and streams that fail.
  if (seen.runs >= 200) assert.ok(seen.pubs > seen.runs / 10 && seen.errors > seen.runs / 10, JSON.stringify(seen));
  console.log(`# parser fuzz: ${JSON.stringify(seen)}`);
});
