// Parser.yieldTurn: the handler stops parsing after an operation; the rest of the read and
// whatever arrives before resume() are kept and parsed in order afterwards.

import { test } from "node:test";
import assert from "node:assert/strict";
import { PUB_CHECK_EVERY, Parser, type ParserHandler, type ProtoErrorKind } from "../../src/protocol/parser.js";

type Call = readonly (string | number | null)[];

class Yielder implements ParserHandler {
  readonly calls: Call[] = [];
  parser!: Parser;
  /** Yield after every `every`-th SUB/UNSUB. */
  constructor(private readonly every: number) {}
  private ops = 0;
  private spend(): void {
    if (++this.ops % this.every === 0) this.parser.yieldTurn();
  }
  processConnect(json: string): void {
    this.calls.push(["connect", json]);
  }
  processPub(subject: string, reply: string, hdr: Buffer | null, buf: Buffer, start: number, end: number): void {
    this.calls.push(["pub", subject, reply, hdr === null ? null : hdr.toString("latin1"), buf.toString("latin1", start, end)]);
  }
  processSub(subject: string, queue: string, sid: string): void {
    this.calls.push(["sub", subject, queue, sid]);
    this.spend();
  }
  processUnsub(sid: string, max: number): void {
    this.calls.push(["unsub", sid, max]);
    this.spend();
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

const LIMITS = { maxControlLineBytes: 4096, maxPayloadBytes: 1024 * 1024 };

function stream(): string {
  let s = 'CONNECT {"verbose":false}\r\n';
  for (let i = 0; i < 50; i++) {
    s += `SUB foo.${i} ${i}\r\n`;
    if (i % 7 === 0) s += `PUB foo.${i} 5\r\nhello\r\n`;
    if (i % 11 === 0) s += `UNSUB ${i} 3\r\nPING\r\n`;
  }
  return s;
}

function reference(input: string): Call[] {
  const h = new Yielder(Number.MAX_SAFE_INTEGER);
  h.parser = new Parser(h, LIMITS);
  h.parser.parse(Buffer.from(input, "latin1"));
  return h.calls;
}

void test("yielding keeps every operation, in order, whatever the read sizes", () => {
  const input = stream();
  const want = reference(input);
  for (const every of [1, 2, 5, 13]) {
    for (const chunk of [1, 7, 64, 100000]) {
      const h = new Yielder(every);
      const p = new Parser(h, LIMITS);
      h.parser = p;
      const buf = Buffer.from(input, "latin1");
      let turns = 0;
      for (let i = 0; i < buf.length; i += chunk) {
        // Reads go on arriving while yielded (a transport that pauses late); copy from a
        // reused buffer, as the shared read buffer is.
        const scratch = Buffer.alloc(Math.min(chunk, buf.length - i));
        buf.copy(scratch, 0, i, i + scratch.length);
        p.parse(scratch);
        scratch.fill(0x58); // the read buffer is reused: the parser must have copied
        if (p.isYielded && i % 3 === 0) {
          while (p.resume()) turns++;
        }
      }
      while (p.resume()) turns++;
      assert.equal(p.isYielded, false);
      assert.deepEqual(h.calls, want, `every=${every} chunk=${chunk}`);
      if (every <= 5 && chunk === 100000) assert.ok(turns > 0, "expected it to yield more than once");
    }
  }
});

void test("nothing is parsed after a yield until resume", () => {
  const h = new Yielder(2);
  const p = new Parser(h, LIMITS);
  h.parser = p;
  p.parse(Buffer.from("SUB a 1\r\nSUB b 2\r\nSUB c 3\r\nPING\r\n"));
  assert.deepEqual(h.calls, [["sub", "a", "", "1"], ["sub", "b", "", "2"]]);
  assert.equal(p.isYielded, true);
  p.parse(Buffer.from("PUB x 2\r\nhi\r\n"));
  assert.equal(h.calls.length, 2);
  assert.equal(p.resume(), false);
  assert.deepEqual(h.calls.slice(2), [["sub", "c", "", "3"], ["ping"], ["pub", "x", "", null, "hi"]]);
});

void test("stop() while yielded drops what was held", () => {
  const h = new Yielder(1);
  const p = new Parser(h, LIMITS);
  h.parser = p;
  p.parse(Buffer.from("SUB a 1\r\nSUB b 2\r\n"));
  p.stop();
  assert.equal(p.resume(), false);
  p.parse(Buffer.from("PING\r\n"));
  assert.deepEqual(h.calls, [["sub", "a", "", "1"]]);
});

/** Yields at every pubsRead (each PUB_CHECK_EVERY published messages). */
class PubYielder extends Yielder {
  checks = 0;
  constructor() {
    super(Number.MAX_SAFE_INTEGER);
  }
  pubsRead(): void {
    this.checks++;
    this.calls.push(["check"]);
    this.parser.yieldTurn();
  }
}

void test("pubsRead comes after every PUB_CHECK_EVERY messages (PUB, HPUB, split frames); a yield there keeps the rest in order", () => {
  const parts: string[] = ['CONNECT {"verbose":false,"headers":true}\r\n'];
  const n = PUB_CHECK_EVERY * 5 + 3;
  for (let i = 0; i < n; i++) {
    if (i % 3 === 0) parts.push(`HPUB h.${i} 12 14\r\nNATS/1.0\r\n\r\nhi\r\n`);
    else parts.push(`PUB p.${i % 7} r.${i} ${String(i).length}\r\n${i}\r\n`);
    if (i % 50 === 0) parts.push("PING\r\n");
  }
  const input = parts.join("");
  for (const chunk of [1, 13, 4096, 1 << 20]) {
    const h = new PubYielder();
    const p = new Parser(h, LIMITS);
    p.headers = true;
    h.parser = p;
    const buf = Buffer.from(input, "latin1");
    for (let i = 0; i < buf.length; i += chunk) {
      const scratch = Buffer.from(buf.subarray(i, i + chunk));
      p.parse(scratch);
      scratch.fill(0x58);
    }
    let turns = 0;
    while (p.resume()) turns++;
    const pubs = h.calls.filter((c) => c[0] === "pub").length;
    assert.equal(pubs, n, `chunk=${chunk}`);
    assert.equal(h.checks, Math.floor(n / PUB_CHECK_EVERY), `chunk=${chunk}`);
    // Each check right after a multiple of PUB_CHECK_EVERY messages; nothing lost or reordered.
    let seen = 0;
    for (const c of h.calls) {
      if (c[0] === "pub") seen++;
      if (c[0] === "check") assert.equal(seen % PUB_CHECK_EVERY, 0);
    }
    const ref = new Yielder(Number.MAX_SAFE_INTEGER);
    ref.parser = new Parser(ref, LIMITS);
    ref.parser.headers = true;
    ref.parser.parse(Buffer.from(input, "latin1"));
    assert.deepEqual(
      h.calls.filter((c) => c[0] !== "check"),
      ref.calls,
      `chunk=${chunk}`,
    );
    if (chunk === 1 << 20) assert.ok(turns >= 4, `${turns} resumes`);
  }
});
