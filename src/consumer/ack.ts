// The ack subject of every delivery (ADR-15, v1 layout, 9 tokens):
//   $JS.ACK.<stream>.<consumer>.<delivery count>.<stream seq>.<consumer seq>.<ts ns>.<pending>
// and the ack payloads clients publish to it. Built by plain concatenation, once per delivery.

import { NS_SPLIT, splitNs } from "../protocol/ackreply.js";

export const ACK_PREFIX = "$JS.ACK.";

export function ackSubject(prefix: string, dc: number, sseq: number, cseq: number, tsNs: number, pending: number): string {
  // prefix = "$JS.ACK.<stream>.<consumer>." computed once per consumer.
  return prefix + dc + "." + sseq + "." + cseq + "." + tsString(tsNs) + "." + pending;
}

// The seconds part of the last timestamp formatted: deliveries close in time share it.
let lastSec = -1;
let lastSecStr = "";
const ZEROS = "000000000";

/** An int64 ns timestamp without exponent notation: the exact decimal of the double (numbers
 *  above 2^53 lose the last digits), as BigInt would print it, without a BigInt per delivery. */
export function tsString(tsNs: number): string {
  if (Number.isSafeInteger(tsNs)) return String(tsNs);
  const t = Math.round(tsNs);
  if (!Number.isFinite(t)) return BigInt(t).toString(); // junk: throws, as it always did
  splitNs(t);
  const sec = NS_SPLIT.sec;
  if (sec >= 4e9) return BigInt(t).toString(); // past 2096: the slow way
  if (sec !== lastSec) {
    lastSec = sec;
    lastSecStr = String(sec);
  }
  const n = String(NS_SPLIT.ns);
  return lastSecStr + ZEROS.slice(n.length) + n;
}

/** Reads "<delivery count>.<stream seq>.<consumer seq>.<ts>.<pending>" (what follows a
 *  consumer's own "$JS.ACK.<stream>.<consumer>.") one character code at a time, from a string
 *  or straight from a read buffer; keeps the first three numbers. */
export class AckTail {
  dc = 0;
  sseq = 0;
  cseq = 0;
  private field = 0;
  private v = 0;
  private any = false;

  begin(): void {
    this.field = 0;
    this.v = 0;
    this.any = false;
  }

  /** False when c cannot be next (not a digit, an empty number, a sixth number). */
  step(c: number): boolean {
    if (c === 0x2e) {
      if (!this.any || this.field === 4) return false;
      if (this.field === 0) this.dc = this.v;
      else if (this.field === 1) this.sseq = this.v;
      else if (this.field === 2) this.cseq = this.v;
      this.field++;
      this.v = 0;
      this.any = false;
      return true;
    }
    const d = c - 48;
    if (d < 0 || d > 9) return false;
    this.v = this.v * 10 + d;
    this.any = true;
    return true;
  }

  /** Whether what was read is exactly five numbers. */
  end(): boolean {
    return this.any && this.field === 4;
  }
}

export interface AckTokens {
  stream: string;
  consumer: string;
  dc: number;
  sseq: number;
  cseq: number;
  tsNs: number;
  pending: number;
}

/** Parse a v1 (9 tokens) or v2 (11+ tokens) ack subject; null when it is not one. Runs
 *  once per ack: one scan for the dots, digits read in place (no split, no regex). */
export function parseAckSubject(subject: string): AckTokens | null {
  if (!subject.startsWith(ACK_PREFIX)) return null;
  // Dot positions after "$JS.ACK." (at most the 12 we can use).
  const dots = DOTS;
  let nd = 0;
  let total = 0;
  for (let i = ACK_PREFIX.length; i < subject.length; i++) {
    if (subject.charCodeAt(i) === 0x2e) {
      if (nd < dots.length) dots[nd++] = i;
      total++;
    }
  }
  const tokens = total + 3; // "$JS" "ACK" and one more than the dots after them
  let first: number; // index in dots of the dot ending the stream token
  if (tokens === 9) first = 0;
  else if (tokens >= 11) first = 2;
  else return null;
  const streamStart = first === 0 ? ACK_PREFIX.length : dots[first - 1]! + 1;
  const stream = subject.slice(streamStart, dots[first]!);
  const consumer = subject.slice(dots[first]! + 1, dots[first + 1]!);
  const dc = digits(subject, dots[first + 1]! + 1, dots[first + 2]!);
  const sseq = digits(subject, dots[first + 2]! + 1, dots[first + 3]!);
  const cseq = digits(subject, dots[first + 3]! + 1, dots[first + 4]!);
  const tsNs = digits(subject, dots[first + 4]! + 1, dots[first + 5]!);
  const pendEnd = first + 6 < nd ? dots[first + 6]! : subject.length;
  const pending = digits(subject, dots[first + 5]! + 1, pendEnd);
  if (dc < 0 || sseq < 0 || cseq < 0 || tsNs < 0 || pending < 0) return null;
  return { stream, consumer, dc, sseq, cseq, tsNs, pending };
}

const DOTS: number[] = new Array<number>(12).fill(0);

/** The decimal number in s[from, to), or -1 when empty or not all digits. */
function digits(s: string, from: number, to: number): number {
  if (to <= from) return -1;
  let v = 0;
  for (let i = from; i < to; i++) {
    const c = s.charCodeAt(i) - 48;
    if (c < 0 || c > 9) return -1;
    v = v * 10 + c;
  }
  // Beyond 2^53 the running product rounds differently from Number(); use that instead.
  return v <= Number.MAX_SAFE_INTEGER ? v : Number(s.slice(from, to));
}

export const AckKind = {
  Ack: "ack",
  Nak: "nak",
  Progress: "progress",
  Term: "term",
  Next: "next",
} as const;
export type AckKind = (typeof AckKind)[keyof typeof AckKind];

export interface AckMsg {
  kind: AckKind;
  /** -NAK delay in ns (0 = none). */
  delayNs: number;
  /** +TERM reason or +NXT request body. */
  arg: string;
}

const UNIT_NS: Record<string, number> = { ns: 1, us: 1e3, "µs": 1e3, "μs": 1e3, ms: 1e6, s: 1e9, m: 60e9, h: 3600e9 };

function parseDurationNs(s: string): number {
  const re = /(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)/gy;
  let total = 0;
  re.lastIndex = 0;
  if (s.length === 0) return Number.NaN;
  while (re.lastIndex < s.length) {
    const m = re.exec(s);
    if (!m) return Number.NaN;
    total += Number(m[1]) * UNIT_NS[m[2]!]!;
  }
  return total;
}

const PLAIN_ACK: Readonly<AckMsg> = Object.freeze({ kind: AckKind.Ack, delayNs: 0, arg: "" });

/** Decode an ack payload; null for an unknown one (nats-server ignores it). The result is
 *  read-only (the common +ACK is one shared object). */
export function parseAck(payload: Buffer): Readonly<AckMsg> | null {
  const n = payload.length;
  if (n === 0) return PLAIN_ACK;
  const c0 = payload[0];
  // Fast paths for the common literal payloads.
  if (c0 === 0x2b /* + */) {
    if (n === 4 && payload[1] === 0x41 && payload[2] === 0x43 && payload[3] === 0x4b) return PLAIN_ACK;
  }
  const s = payload.toString("utf8");
  const word = s.length >= 4 ? s.slice(0, 4) : s;
  const rest = s.slice(4).trim();
  switch (word) {
    case "+ACK":
    case "+OK":
      return { kind: AckKind.Ack, delayNs: 0, arg: "" };
    case "+WPI":
      return { kind: AckKind.Progress, delayNs: 0, arg: "" };
    case "+NXT":
      return { kind: AckKind.Next, delayNs: 0, arg: rest };
    case "+TER":
      if (!s.startsWith("+TERM")) return null;
      return { kind: AckKind.Term, delayNs: 0, arg: s.slice(5).trim() };
    case "-NAK": {
      let delay = 0;
      if (rest.length > 0) {
        if (rest.startsWith("{")) {
          try {
            const o = JSON.parse(rest) as { delay?: unknown };
            if (typeof o.delay === "number" && o.delay > 0) delay = o.delay;
          } catch {
            delay = 0; // an invalid delay is a plain NAK, as in nats-server
          }
        } else {
          const d = parseDurationNs(rest);
          if (Number.isFinite(d) && d > 0) delay = d;
        }
      }
      return { kind: AckKind.Nak, delayNs: delay, arg: "" };
    }
    default:
      if (s === "+OK") return { kind: AckKind.Ack, delayNs: 0, arg: "" };
      return null;
  }
}
