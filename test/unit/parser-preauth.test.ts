// Parser.awaitingConnect: only CONNECT is taken, decided at an operation's first byte, in
// whole reads and one byte at a time; the handler's opBeforeConnect may let the peer in.

import { test } from "node:test";
import assert from "node:assert/strict";
import { Parser, ProtoErrorKind, type ParserHandler } from "../../src/protocol/parser.js";

class Rec implements ParserHandler {
  readonly seen: string[] = [];
  parser: Parser | null = null;
  letIn = false;
  processConnect(json: string): void {
    this.seen.push(`connect ${json}`);
    this.parser!.awaitingConnect = false;
  }
  processPub(subject: string, _reply: string, _hdr: Buffer | null, buf: Buffer, start: number, end: number): void {
    this.seen.push(`pub ${subject} ${buf.toString("latin1", start, end)}`);
  }
  processSub(subject: string): void {
    this.seen.push(`sub ${subject}`);
  }
  processUnsub(sid: string): void {
    this.seen.push(`unsub ${sid}`);
  }
  processPing(): void {
    this.seen.push("ping");
  }
  processPong(): void {
    this.seen.push("pong");
  }
  opBeforeConnect(): boolean {
    this.seen.push("before-connect");
    if (this.letIn) this.parser!.awaitingConnect = false;
    return this.letIn;
  }
  protocolError(kind: ProtoErrorKind): void {
    this.seen.push(`error ${kind}`);
  }
}

function run(input: string, byteAtATime: boolean, letIn = false): string[] {
  const h = new Rec();
  h.letIn = letIn;
  const p = new Parser(h, { maxControlLineBytes: 64, maxPayloadBytes: 1024 });
  h.parser = p;
  p.awaitingConnect = true;
  const b = Buffer.from(input, "latin1");
  if (byteAtATime) for (let i = 0; i < b.length; i++) p.parse(b.subarray(i, i + 1));
  else p.parse(b);
  return h.seen;
}

const cases: { name: string; input: string; letIn?: boolean; expect: string[] }[] = [
  { name: "CONNECT, then anything", input: 'CONNECT {}\r\nPUB a 2\r\nhi\r\nPING\r\n', expect: ["connect {}", "pub a hi", "ping"] },
  { name: "PUB first: refused at its first byte", input: "PUB a 2000\r\n", expect: ["before-connect", `error ${ProtoErrorKind.NotConnected}`] },
  { name: "PING first", input: "PING\r\nCONNECT {}\r\n", expect: ["before-connect", `error ${ProtoErrorKind.NotConnected}`] },
  { name: "empty line first", input: "\r\nCONNECT {}\r\n", expect: ["before-connect", `error ${ProtoErrorKind.NotConnected}`] },
  { name: "a C that is not CONNECT", input: "CONNEX {}\r\n", expect: [`error ${ProtoErrorKind.UnknownOp}`] },
  { name: "CONNECT beyond the control line limit, unterminated", input: "CONNECT " + "x".repeat(80), expect: [`error ${ProtoErrorKind.MaxControlLine}`] },
  { name: "no_auth_user style: let in, the op goes on", input: "SUB a 1\r\nPING\r\n", letIn: true, expect: ["before-connect", "sub a", "ping"] },
];

for (const c of cases) {
  void test(`awaitingConnect: ${c.name} (whole)`, () => assert.deepEqual(run(c.input, false, c.letIn), c.expect));
  void test(`awaitingConnect: ${c.name} (byte at a time)`, () => assert.deepEqual(run(c.input, true, c.letIn), c.expect));
}
