// The client protocol parser (nats-server parser.go, nats.js parser.ts): a state machine
// over the bytes of each read. Control lines are found with one native indexOf and split
// without regexes; payloads are handed out as views into the read buffer and are copied
// only when a frame spans two reads. Limits are checked before anything is buffered.

import { PayloadReader } from "./payload.js";

export const ProtoErrorKind = {
  UnknownOp: "unknown_op",
  MaxControlLine: "max_control_line",
  MaxPayload: "max_payload",
  BadArgs: "bad_args",
  HeadersNotNegotiated: "headers_not_negotiated",
  /** An operation other than CONNECT while awaitingConnect (nats-server: Authorization
   *  Violation). */
  NotConnected: "not_connected",
} as const;
export type ProtoErrorKind = (typeof ProtoErrorKind)[keyof typeof ProtoErrorKind];

export interface ParserHandler {
  processConnect(json: string): void;
  /** The payload is buf[start, end). hdr and buf are only valid during the call: the fast
   *  path hands out the read buffer itself, so that no view is made per message. */
  processPub(subject: string, reply: string, hdr: Buffer | null, buf: Buffer, start: number, end: number): void;
  /** Optional: a plain PUB whose subject buf[s0, s1) starts with "$JS.ACK.", offered before
   *  any subject string is made; false = not taken, processPub follows. */
  processAckPub?(buf: Buffer, s0: number, s1: number, reply: string, start: number, end: number): boolean;
  processSub(subject: string, queue: string, sid: string): void;
  processUnsub(sid: string, max: number): void;
  processPing(): void;
  processPong(): void;
  /** Optional: called after every PUB_CHECK_EVERY published messages (PUB, HPUB, acks), so
   *  the handler can bound the time one read spends on them (it may yieldTurn()). */
  pubsRead?(): void;
  /** Optional: while awaitingConnect, the first byte of an operation is not a 'C'. true = the
   *  handler let the connection in without CONNECT (and cleared awaitingConnect); false or
   *  absent = protocolError(NotConnected). */
  opBeforeConnect?(): boolean;
  /** The connection must be closed; nothing more is parsed. */
  protocolError(kind: ProtoErrorKind, detail: string): void;
}

/** Published messages between two pubsRead() calls: a counter on the PUB path instead of a
 *  clock read per message. */
export const PUB_CHECK_EVERY = 64;

const NO_BYTES = Buffer.alloc(0);
const SUBJECT_CACHE_BYTES = 128;

const S_CONTROL = 0;
const S_PAYLOAD = 1;

const LF = 10;
const CR = 13;

export interface ParserLimits {
  maxControlLineBytes: number;
  maxPayloadBytes: number;
}

export class Parser {
  private state = S_CONTROL;
  private partialLine: Buffer | null = null;
  // Payload being collected across reads.
  private pSubject = "";
  private pReply = "";
  private pHdrLen = -1; // -1: PUB, otherwise HPUB header length
  private readonly payload = new PayloadReader();
  private stopped = false;
  /** The main loop's exit test: stopped, or the handler asked to yield (yieldTurn). One
   *  field for both, so yielding costs the PUB path nothing. */
  private brk = false;
  /** The handler asked to stop parsing for this turn of the event loop: what is left of the
   *  read (and whatever arrives until resume()) waits in `rest`. */
  private yielded = false;
  private rest: Buffer | null = null;
  /** Published messages left before the next pubsRead(). */
  private pubCredit = PUB_CHECK_EVERY;
  /** Set true once CONNECT negotiated headers. */
  headers = false;
  /** Set while the connection must authenticate before anything else: then every operation
   *  must be a CONNECT, which is checked at its first byte, so that nothing else (no PUB
   *  payload) is ever buffered for an unauthenticated peer. The handler clears it. Checked
   *  once per read, not per operation. */
  awaitingConnect = false;

  constructor(
    private readonly h: ParserHandler,
    private readonly limits: ParserLimits,
  ) {}

  stop(): void {
    this.stopped = true;
    this.brk = true;
    this.rest = null;
  }

  /** Called by the handler during an operation: parse nothing after it until resume(). The
   *  bytes not parsed yet are copied (the read buffer is shared), at most one read's worth
   *  plus what arrives before the transport pauses. */
  yieldTurn(): void {
    this.yielded = true;
    this.brk = true;
  }

  /** Whether parsing is held until resume() (the handler then pauses its transport). */
  get isYielded(): boolean {
    return this.yielded;
  }

  /** Parses what was held back; true when it yielded again (call again on a later turn). */
  resume(): boolean {
    if (!this.yielded) return false;
    this.yielded = false;
    this.brk = this.stopped;
    const r = this.rest;
    this.rest = null;
    if (r !== null && !this.stopped) this.parse(r);
    return this.yielded;
  }

  parse(buf: Buffer): void {
    if (this.yielded) {
      if (!this.stopped) this.rest = this.rest === null ? Buffer.from(buf) : Buffer.concat([this.rest, buf]);
      return;
    }
    let i = 0;
    if (this.awaitingConnect) {
      i = this.beforeConnect(buf);
      if (i < 0) return;
    }
    const n = buf.length;
    while (i < n && !this.brk) {
      if (this.state === S_CONTROL) {
        if (this.partialLine === null) {
          const next = this.fastPub(buf, i, n);
          if (next >= 0) {
            i = next;
            continue;
          }
        }
        const nl = buf.indexOf(LF, i);
        if (nl < 0) {
          this.keepPartial(buf, i, n);
          return;
        }
        const ls = i;
        i = nl + 1;
        if (!this.controlLine(buf, ls, nl)) return;
      } else {
        const next = this.payload.take(buf, i, n);
        if (next < 0) {
          this.fail(ProtoErrorKind.UnknownOp, "payload not followed by CRLF");
          return;
        }
        i = next;
        const data = this.payload.done();
        if (data !== null) {
          this.state = S_CONTROL;
          this.deliver(data, this.payload.start, this.payload.end);
        }
      }
    }
    // Yielded after a control line (never inside a payload or a partial line): keep the rest.
    if (this.yielded && !this.stopped && i < n) this.rest = Buffer.from(buf.subarray(i));
  }

  /**
   * Operations while awaitingConnect, one control line at a time, until the handler clears
   * the flag (CONNECT accepted) or the parser stops. Returns where the normal loop takes
   * over, or -1 when nothing is left to parse. A line is buffered across reads only when it
   * starts with 'C', and never beyond maxControlLineBytes.
   */
  private beforeConnect(buf: Buffer): number {
    const n = buf.length;
    let i = 0;
    while (i < n && this.awaitingConnect && !this.stopped) {
      if (this.partialLine === null && (buf[i]! | 0x20) !== 99) {
        if (this.h.opBeforeConnect?.() === true) break;
        this.fail(ProtoErrorKind.NotConnected, "Authorization Violation");
        return -1;
      }
      const nl = buf.indexOf(LF, i);
      if (nl < 0) {
        this.keepPartial(buf, i, n);
        return -1;
      }
      const ls = i;
      i = nl + 1;
      if (!this.controlLine(buf, ls, nl)) return -1;
    }
    return i < n && !this.stopped ? i : -1;
  }

  /**
   * The control line buf[ls, nl) (nl at its LF), after the start of it kept from earlier
   * reads if any, without its CR, to control(). False when it is over maxControlLineBytes:
   * the parser has failed.
   */
  private controlLine(buf: Buffer, ls: number, nl: number): boolean {
    let line = buf;
    let end = nl;
    if (this.partialLine) {
      line = Buffer.concat([this.partialLine, buf.subarray(ls, nl)]);
      this.partialLine = null;
      ls = 0;
      end = line.length;
    }
    if (end > ls && line[end - 1] === CR) end--;
    if (end - ls > this.limits.maxControlLineBytes) {
      this.fail(ProtoErrorKind.MaxControlLine, "maximum control line exceeded");
      return false;
    }
    this.control(line, ls, end);
    return true;
  }

  /** The start of a control line that ends in a later read, within the limit. */
  private keepPartial(buf: Buffer, i: number, n: number): void {
    const have = (this.partialLine ? this.partialLine.length : 0) + (n - i);
    // A CR that ends this read belongs to the line terminator, not to the line.
    if (have - (buf[n - 1] === CR ? 1 : 0) > this.limits.maxControlLineBytes) {
      this.fail(ProtoErrorKind.MaxControlLine, "maximum control line exceeded");
      return;
    }
    const rest = buf.subarray(i);
    this.partialLine = this.partialLine ? Buffer.concat([this.partialLine, rest]) : Buffer.from(rest);
  }

  /**
   * The common frame "PUB <subject> [reply] <size>\r\n<payload>\r\n" with single spaces, all
   * of it in this read: scanned in one pass, without indexOf or per-argument strings.
   * Returns the index after what it consumed, or -1 to let the general path handle the
   * line (anything unusual, errors, frames split across reads), which re-scans it.
   */
  private fastPub(buf: Buffer, i: number, n: number): number {
    if (i + 6 > n || buf[i + 3] !== 32) return -1;
    if ((buf[i]! | 0x20) !== 112 || (buf[i + 1]! | 0x20) !== 117 || (buf[i + 2]! | 0x20) !== 98) return -1;
    const s0 = i + 4;
    let p = s0;
    let c = 32;
    // The publisher's last subject again (bytes equal, then a space): one compare per byte
    // instead of a delimiter scan plus a compare. The cache only holds bytes above 32.
    const clen = this.lastSubjectLen;
    let same = clen > 0 && s0 + clen < n && buf[s0 + clen] === 32;
    if (same) {
      const cache = this.lastSubjectBytes;
      for (let k = 0; k < clen; k++) {
        if (cache[k] !== buf[s0 + k]) {
          same = false;
          break;
        }
      }
    }
    if (same) {
      p = s0 + clen;
    } else {
      // Space, tab, CR, LF and other control bytes all end the fast path's subject; what is
      // not a single space is left to the general path.
      while (p < n) {
        c = buf[p]!;
        if (c <= 32) break;
        p++;
      }
      if (c !== 32 || p === s0 || p >= n) return -1;
    }
    const s1 = p;
    // Second token: the reply or the size; sizes are collected while scanning.
    const t0 = ++p;
    let size = 0;
    let digits = true;
    while (p < n) {
      c = buf[p]!;
      if (c === 32 || c === 9 || c === CR || c === LF) break;
      const d = c - 48;
      if (d < 0 || d > 9) digits = false;
      else size = size * 10 + d;
      p++;
    }
    if (p >= n || p === t0) return -1;
    let r0 = 0;
    let r1 = 0;
    if (c === 32) {
      if (p - t0 > 0) {
        r0 = t0;
        r1 = p;
      }
      const z0 = ++p;
      size = 0;
      digits = true;
      while (p < n) {
        c = buf[p]!;
        if (c === CR || c === 32 || c === 9 || c === LF) break;
        const d = c - 48;
        if (d < 0 || d > 9) digits = false;
        else size = size * 10 + d;
        p++;
      }
      if (p === z0) return -1;
      if (p - z0 > 9) return -1;
    } else if (p - t0 > 9) {
      return -1;
    }
    // p is at the end of the size token: it must be CRLF, within the limits.
    if (c !== CR || !digits || p + 1 >= n || buf[p + 1] !== LF) return -1;
    if (p - i > this.limits.maxControlLineBytes || size > this.limits.maxPayloadBytes) return -1;
    const body = p + 2;
    const end = body + size;
    if (end + 2 > n || buf[end] !== CR || buf[end + 1] !== LF) return -1;
    const reply = r1 > r0 ? buf.toString("latin1", r0, r1) : "";
    // JetStream acks: unique subjects, one per message; offered as bytes first.
    if (!same && buf[s0] === 0x24 && s1 - s0 > 8 && this.h.processAckPub !== undefined && isAckPrefix(buf, s0)) {
      if (this.h.processAckPub(buf, s0, s1, reply, body, end)) {
        if (--this.pubCredit === 0) this.pubsRead();
        return end + 2;
      }
    }
    const subject = same ? this.lastSubject : this.subjectString(buf, s0, s1);
    this.h.processPub(subject, reply, null, buf, body, end);
    if (--this.pubCredit === 0) this.pubsRead();
    return end + 2;
  }

  private pubsRead(): void {
    this.pubCredit = PUB_CHECK_EVERY;
    this.h.pubsRead?.();
  }

  // The last subject seen, as bytes and as a string: publishers usually repeat subjects,
  // and reusing the string also lets the sublist cache and per-subscription caches hit by
  // identity.
  // The bytes are made on the first subject (a connection that never publishes has none;
  // a zeroed buffer per accepted connection was an allocation of its own).
  private lastSubjectBytes: Buffer = NO_BYTES;
  private lastSubjectLen = -1;
  private lastSubject = "";

  // A subject that is not the last one (fastPub compared that already); it becomes the last.
  private subjectString(buf: Buffer, s: number, e: number): string {
    const len = e - s;
    let cache = this.lastSubjectBytes;
    if (cache === NO_BYTES) cache = this.lastSubjectBytes = Buffer.allocUnsafe(SUBJECT_CACHE_BYTES);
    const str = buf.toString("latin1", s, e);
    if (len <= cache.length) {
      for (let k = 0; k < len; k++) cache[k] = buf[s + k]!;
      this.lastSubjectLen = len;
      this.lastSubject = str;
    }
    return str;
  }

  // The payload (after any header block) is buf[start, end).
  private deliver(buf: Buffer, start: number, end: number): void {
    if (this.pHdrLen <= 0) {
      this.h.processPub(this.pSubject, this.pReply, null, buf, start, end);
    } else {
      const hs = start + this.pHdrLen;
      this.h.processPub(this.pSubject, this.pReply, buf.subarray(start, hs), buf, hs, end);
    }
    if (--this.pubCredit === 0) this.pubsRead();
  }

  private fail(kind: ProtoErrorKind, detail: string): void {
    this.stopped = true;
    this.brk = true;
    this.h.protocolError(kind, detail);
  }

  // Split the arguments after the verb into `args`; returns the count.
  private readonly args: string[] = ["", "", "", "", "", ""];
  private splitArgs(line: Buffer, start: number, end: number): number {
    let count = 0;
    let i = start;
    while (i < end) {
      let c = line[i]!;
      while (i < end && (c === 32 || c === 9)) c = line[++i]!;
      if (i >= end) break;
      const s = i;
      while (i < end && c !== 32 && c !== 9) c = line[++i]!;
      if (count >= this.args.length) return count + 1; // too many; caller rejects
      this.args[count++] = line.toString("latin1", s, i);
    }
    return count;
  }

  // The line is line[ls, end) (without CRLF); `line` may be the whole read buffer.
  private control(line: Buffer, ls: number, end: number): void {
    // Verb: letters up to the first space/tab, matched case-insensitively (| 0x20).
    let v = ls;
    while (v < end && line[v] !== 32 && line[v] !== 9) v++;
    const c0 = (line[ls] ?? 0) | 0x20;
    const c1 = (line[ls + 1] ?? 0) | 0x20;
    switch (v - ls) {
      case 3: {
        const c2 = (line[ls + 2] ?? 0) | 0x20;
        if (c0 === 112 && c1 === 117 && c2 === 98) return this.pub(line, ls, v, end); // PUB
        if (c0 === 115 && c1 === 117 && c2 === 98) return this.sub(line, ls, v, end); // SUB
        if (line[ls] === 43 && c1 === 111 && c2 === 107) return; // +OK from a client is ignored
        break;
      }
      case 4: {
        const w = line.toString("latin1", ls, ls + 4).toUpperCase();
        if (w === "PING") return this.h.processPing();
        if (w === "PONG") return this.h.processPong();
        if (w === "HPUB") return this.hpub(line, ls, v, end);
        if (w === "INFO" || w === "-ERR") return; // tolerated from clients, as nats-server does
        break;
      }
      case 5:
        if (line.toString("latin1", ls, ls + 5).toUpperCase() === "UNSUB") return this.unsub(line, ls, v, end);
        break;
      case 7:
        if (line.toString("latin1", ls, ls + 7).toUpperCase() === "CONNECT") {
          return this.h.processConnect(line.toString("utf8", v, end).trim());
        }
        break;
      default:
        break;
    }
    this.fail(ProtoErrorKind.UnknownOp, "Unknown Protocol Operation");
  }

  private pub(line: Buffer, ls: number, start: number, end: number): void {
    const n = this.splitArgs(line, start, end);
    let size: number;
    if (n === 2) {
      this.pSubject = this.args[0]!;
      this.pReply = "";
      size = parseSize(this.args[1]!);
    } else if (n === 3) {
      this.pSubject = this.args[0]!;
      this.pReply = this.args[1]!;
      size = parseSize(this.args[2]!);
    } else {
      return this.fail(ProtoErrorKind.BadArgs, "processPub Parse Error: " + line.toString("latin1", ls, end));
    }
    if (size < 0) return this.fail(ProtoErrorKind.BadArgs, "processPub Bad or Missing Size: " + line.toString("latin1", ls, end));
    if (size > this.limits.maxPayloadBytes) return this.fail(ProtoErrorKind.MaxPayload, "Maximum Payload Violation");
    this.pHdrLen = -1;
    this.startPayload(size);
  }

  private hpub(line: Buffer, ls: number, start: number, end: number): void {
    if (!this.headers) return this.fail(ProtoErrorKind.HeadersNotNegotiated, "HPUB without headers support");
    const n = this.splitArgs(line, start, end);
    let hdr: number;
    let total: number;
    if (n === 3) {
      this.pSubject = this.args[0]!;
      this.pReply = "";
      hdr = parseSize(this.args[1]!);
      total = parseSize(this.args[2]!);
    } else if (n === 4) {
      this.pSubject = this.args[0]!;
      this.pReply = this.args[1]!;
      hdr = parseSize(this.args[2]!);
      total = parseSize(this.args[3]!);
    } else {
      return this.fail(ProtoErrorKind.BadArgs, "processHeaderPub Parse Error: " + line.toString("latin1", ls, end));
    }
    if (hdr < 0 || total < 0 || hdr > total) {
      return this.fail(ProtoErrorKind.BadArgs, "processHeaderPub Bad or Missing Size: " + line.toString("latin1", ls, end));
    }
    if (total > this.limits.maxPayloadBytes) return this.fail(ProtoErrorKind.MaxPayload, "Maximum Payload Violation");
    this.pHdrLen = hdr;
    this.startPayload(total);
  }

  private startPayload(total: number): void {
    this.payload.begin(total);
    this.state = S_PAYLOAD;
  }

  private sub(line: Buffer, ls: number, start: number, end: number): void {
    const n = this.splitArgs(line, start, end);
    if (n === 2) return this.h.processSub(this.args[0]!, "", this.args[1]!);
    if (n === 3) return this.h.processSub(this.args[0]!, this.args[1]!, this.args[2]!);
    this.fail(ProtoErrorKind.BadArgs, "processSub Parse Error: " + line.toString("latin1", ls, end));
  }

  private unsub(line: Buffer, ls: number, start: number, end: number): void {
    const n = this.splitArgs(line, start, end);
    if (n === 1) return this.h.processUnsub(this.args[0]!, 0);
    if (n === 2) {
      // nats-server: a max that does not parse (negative, not digits, too long) is -1,
      // which unsubscribes at once; it is not a protocol error.
      return this.h.processUnsub(this.args[0]!, parseSize(this.args[1]!));
    }
    this.fail(ProtoErrorKind.BadArgs, "processUnsub Parse Error: " + line.toString("latin1", ls, end));
  }
}

/** Decimal size, or -1 for anything that is not a non-negative integer. */
export function parseSize(s: string): number {
  if (s.length === 0 || s.length > 15) return -1;
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i) - 48;
    if (c < 0 || c > 9) return -1;
    n = n * 10 + c;
  }
  return n;
}

// "$JS.ACK." (the caller checked the '$').
function isAckPrefix(b: Buffer, i: number): boolean {
  return b[i + 1] === 0x4a && b[i + 2] === 0x53 && b[i + 3] === 0x2e && b[i + 4] === 0x41 && b[i + 5] === 0x43 && b[i + 6] === 0x4b && b[i + 7] === 0x2e;
}
