// The route protocol parser (nats-server 2.9 parser.go for ROUTER connections, route.go
// processRoutedMsgArgs / processRemoteSub / processRemoteUnsub): a state machine over the
// bytes of each read. Control lines are found with one native indexOf; RMSG/HMSG payloads
// are handed out as views into the read buffer and copied only when a frame spans two reads.
// Anything malformed stops the parser and reports once through onError: the route is closed,
// nothing else is touched.
//
// Operations:
//   INFO {json}            CONNECT {json}          PING   PONG   +OK   -ERR 'text'
//   RS+ <acc> <subj> [<queue> <weight>]           RS- <acc> <subj> [<queue>]
//   LS+ <origin> <acc> <subj> [<queue> <weight>]  LS- <origin> <acc> <subj> [<queue>]
//   RMSG <acc> <subj> [<reply>] <size>            RMSG <acc> <subj> (+ <reply> | '|') <q>... <size>
//   HMSG <acc> <subj> [<reply>] <hsize> <size>    HMSG <acc> <subj> (+ <reply> | '|') <q>... <hsize> <size>
//   LMSG <origin> <acc> <subj> ...                (as RMSG, with the leaf origin cluster first)
// On a route pinned to one account (nats-server 2.10 `cluster { accounts }`) the account is
// implied and left out of RS+/RS-/RMSG/HMSG (after the origin for LS+/LS-/LMSG): `account`.

import { PayloadReader } from "../protocol/payload.js";

export interface RouteParserHandler {
  onInfo(json: string): void;
  onConnect(json: string): void;
  onPing(): void;
  onPong(): void;
  onErr(text: string): void;
  /** RS+ / LS+; queue "" for a plain subscription (weight 0). */
  onSub(acc: string, subject: string, queue: string, weight: number): void;
  /** RS- / LS-. */
  onUnsub(acc: string, subject: string, queue: string): void;
  /** RMSG / HMSG / LMSG: the payload is buf[start, end) (headers excluded), valid only
   *  during the call. queues: null for none. */
  onMsg(acc: string, subject: string, reply: string, queues: string[] | null, hdr: Buffer | null, buf: Buffer, start: number, end: number): void;
  /** The route must be closed; nothing more is parsed. */
  onError(reason: string): void;
}

export interface RouteParserLimits {
  maxControlLineBytes: number;
  maxPayloadBytes: number;
}

const S_CONTROL = 0;
const S_PAYLOAD = 1;
const LF = 10;
const CR = 13;

export class RouteParser {
  /** The account a pinned route implies ("" : each operation names its own). */
  account = "";
  private state = S_CONTROL;
  private partialLine: Buffer | null = null;
  private stopped = false;
  /** The handler asked to stop after the current operation (yieldTurn): what is left of the
   *  read, and whatever arrives until resume(), waits in `rest`. */
  private yielded = false;
  private rest: Buffer | null = null;
  // The message whose payload is being collected.
  private mAcc = "";
  private mSubject = "";
  private mReply = "";
  private mQueues: string[] | null = null;
  private mHdr = -1; // -1: no headers
  private readonly payload = new PayloadReader();

  constructor(
    private readonly h: RouteParserHandler,
    private readonly limits: RouteParserLimits,
  ) {}

  stop(): void {
    this.stopped = true;
    this.rest = null;
  }

  /** Called by the handler during an operation (a routed message delivered over several
   *  turns): parse nothing after it until resume(). The bytes not parsed yet are copied (the
   *  read buffer is Node's), at most a read's worth plus what arrives before the route's
   *  socket pauses. */
  yieldTurn(): void {
    this.yielded = true;
  }

  /** Whether parsing is held until resume() (the route then pauses its socket). */
  get isYielded(): boolean {
    return this.yielded;
  }

  /** Parses what was held back; true when it yielded again. */
  resume(): boolean {
    if (!this.yielded) return false;
    this.yielded = false;
    const r = this.rest;
    this.rest = null;
    if (r !== null && !this.stopped) this.parse(r);
    return this.yielded;
  }

  get isStopped(): boolean {
    return this.stopped;
  }

  parse(buf: Buffer): void {
    if (this.yielded) {
      if (!this.stopped) this.rest = this.rest === null ? Buffer.from(buf) : Buffer.concat([this.rest, buf]);
      return;
    }
    let i = 0;
    const n = buf.length;
    while (i < n && !this.stopped && !this.yielded) {
      if (this.state === S_CONTROL) {
        const nl = buf.indexOf(LF, i);
        if (nl < 0) {
          const have = (this.partialLine?.length ?? 0) + n - i;
          if (have > this.limits.maxControlLineBytes) return this.fail("maximum control line exceeded");
          const rest = Buffer.from(buf.subarray(i, n));
          this.partialLine = this.partialLine === null ? rest : Buffer.concat([this.partialLine, rest]);
          return;
        }
        let line = buf;
        let ls = i;
        let end = nl;
        if (this.partialLine !== null) {
          line = Buffer.concat([this.partialLine, buf.subarray(i, nl)]);
          this.partialLine = null;
          ls = 0;
          end = line.length;
        }
        i = nl + 1;
        if (end > ls && line[end - 1] === CR) end--;
        if (end - ls > this.limits.maxControlLineBytes) return this.fail("maximum control line exceeded");
        this.control(line, ls, end);
      } else {
        const next = this.payload.take(buf, i, n);
        if (next < 0) return this.fail("payload not followed by CRLF");
        i = next;
        const data = this.payload.done();
        if (data !== null) {
          this.state = S_CONTROL;
          this.deliver(data, this.payload.start, this.payload.end);
        }
      }
    }
    // Yielded after a message (never inside a payload or a partial line): keep the rest.
    if (this.yielded && !this.stopped && i < n) this.rest = Buffer.from(buf.subarray(i));
  }

  private deliver(buf: Buffer, start: number, end: number): void {
    let hdr: Buffer | null = null;
    if (this.mHdr >= 0) {
      hdr = buf.subarray(start, start + this.mHdr);
      start += this.mHdr;
    }
    this.h.onMsg(this.mAcc, this.mSubject, this.mReply, this.mQueues, hdr, buf, start, end);
  }

  private fail(reason: string): void {
    if (this.stopped) return;
    this.stopped = true;
    this.partialLine = null;
    this.payload.clear();
    this.h.onError(reason);
  }

  private control(b: Buffer, s: number, e: number): void {
    // Routed messages are nearly every line: "RMSG " is tested by its bytes.
    if (e - s > 5 && b[s] === 0x52 && b[s + 1] === 0x4d && b[s + 2] === 0x53 && b[s + 3] === 0x47 && b[s + 4] === 0x20) return this.msgArgs("RMSG", b, s + 5, e);
    // The operation name: up to the first space or tab.
    let o = s;
    while (o < e && b[o] !== 32 && b[o] !== 9) o++;
    const op = b.toString("latin1", s, o).toUpperCase();
    let a = o;
    while (a < e && (b[a] === 32 || b[a] === 9)) a++;
    switch (op) {
      case "RMSG":
      case "HMSG":
      case "LMSG":
        return this.msgArgs(op, b, a, e);
      case "RS+":
      case "LS+":
        return this.subArgs(op === "LS+", b, a, e);
      case "RS-":
      case "LS-":
        return this.unsubArgs(op === "LS-", b, a, e);
      case "PING":
        if (a !== e) return this.fail("PING takes no arguments");
        return this.h.onPing();
      case "PONG":
        if (a !== e) return this.fail("PONG takes no arguments");
        return this.h.onPong();
      case "INFO":
        return this.h.onInfo(b.toString("utf8", a, e));
      case "CONNECT":
        return this.h.onConnect(b.toString("utf8", a, e));
      case "+OK":
        return;
      case "-ERR":
        return this.h.onErr(b.toString("utf8", a, e));
      case "":
        if (a === e) return; // an empty line between operations is tolerated
        return this.fail("unknown protocol operation");
      default:
        return this.fail(`unknown protocol operation ${JSON.stringify(op.slice(0, 32))}`);
    }
  }

  private msgArgs(op: string, b: Buffer, s: number, e: number): void {
    const args = splitArgs(b, s, e);
    let off = 0;
    if (op === "LMSG") {
      if (args.length < 1) return this.fail(`${op}: missing origin`);
      off = 1; // the leaf origin cluster: delivery does not need it
    }
    if (this.account !== "") args.splice(off, 0, this.account);
    const hdrs = op === "HMSG";
    const sizes = hdrs ? 2 : 1;
    const n = args.length - off;
    if (n < 2 + sizes) return this.fail(`${op}: parse error`);
    let reply = "";
    let queues: string[] | null = null;
    if (n === 3 + sizes) {
      reply = args[off + 2]!;
    } else if (n > 3 + sizes) {
      const ind = args[off + 2]!;
      let q0: number;
      if (ind === "+") {
        reply = args[off + 3]!;
        q0 = off + 4;
      } else if (ind === "|") {
        q0 = off + 3;
      } else return this.fail(`${op}: bad or missing reply indicator`);
      queues = args.slice(q0, args.length - sizes);
      if (queues.length === 0) return this.fail(`${op}: parse error`);
    }
    const size = parseSize(args[args.length - 1]!);
    const hsize = hdrs ? parseSize(args[args.length - 2]!) : -1;
    if (size < 0 || (hdrs && (hsize < 0 || hsize > size))) return this.fail(`${op}: bad or missing size`);
    if (size > this.limits.maxPayloadBytes) return this.fail(`${op}: payload of ${size} bytes over the limit`);
    const acc = args[off]!;
    const subject = args[off + 1]!;
    if (acc.length === 0 || subject.length === 0) return this.fail(`${op}: parse error`);
    this.mAcc = acc;
    this.mSubject = subject;
    this.mReply = reply;
    this.mQueues = queues;
    this.mHdr = hsize;
    this.payload.begin(size);
    this.state = S_PAYLOAD;
  }

  private subArgs(origin: boolean, b: Buffer, s: number, e: number): void {
    const args = splitArgs(b, s, e);
    const off = origin ? 1 : 0;
    if (this.account !== "" && args.length >= off) args.splice(off, 0, this.account);
    const n = args.length - off;
    if (n === 2) return this.h.onSub(args[off]!, args[off + 1]!, "", 0);
    if (n === 4) {
      const w = parseSize(args[off + 3]!);
      if (w < 0) return this.fail("RS+: bad queue weight");
      return this.h.onSub(args[off]!, args[off + 1]!, args[off + 2]!, w);
    }
    return this.fail("RS+: parse error");
  }

  private unsubArgs(origin: boolean, b: Buffer, s: number, e: number): void {
    const args = splitArgs(b, s, e);
    const off = origin ? 1 : 0;
    if (this.account !== "" && args.length >= off) args.splice(off, 0, this.account);
    const n = args.length - off;
    if (n === 2) return this.h.onUnsub(args[off]!, args[off + 1]!, "");
    if (n === 3) return this.h.onUnsub(args[off]!, args[off + 1]!, args[off + 2]!);
    return this.fail("RS-: parse error");
  }
}

/** Arguments separated by spaces or tabs (nats-server splitArg). */
function splitArgs(b: Buffer, s: number, e: number): string[] {
  const out: string[] = [];
  let start = -1;
  for (let i = s; i < e; i++) {
    const c = b[i];
    if (c === 32 || c === 9 || c === CR || c === LF) {
      if (start >= 0) {
        out.push(token(b, start, i));
        start = -1;
      }
    } else if (start < 0) start = i;
  }
  if (start >= 0) out.push(token(b, start, e));
  return out;
}

/** b[s, e) as a latin1 string; the global account's name without a new string. */
function token(b: Buffer, s: number, e: number): string {
  if (e - s === 2 && b[s] === 0x24 && b[s + 1] === 0x47) return "$G";
  return b.toString("latin1", s, e);
}

/** A decimal size, or -1 (nats-server parseSize: digits only, at most 9 of them). */
function parseSize(s: string): number {
  const n = s.length;
  if (n === 0 || n > 9) return -1;
  let v = 0;
  for (let i = 0; i < n; i++) {
    const c = s.charCodeAt(i) - 48;
    if (c < 0 || c > 9) return -1;
    v = v * 10 + c;
  }
  return v;
}
