// The reply subject of a JetStream delivery, "$JS.ACK.<stream>.<consumer>.<delivery count>.
// <stream seq>.<consumer seq>.<ts ns>.<pending>" (ADR-15, v1), held as its numbers so that a
// client connection can write it straight into its outbound buffer: no string is made per
// delivery unless an internal subscriber or reply tracking asks for one.

const ZEROS = "000000000";

export class AckReply {
  /** "$JS.ACK.<stream>.<consumer>." */
  readonly prefix: string;
  readonly prefixBytes: Buffer;
  dc = 0;
  sseq = 0;
  cseq = 0;
  tsNs = 0;
  pending = 0;
  private str: string | null = null;
  // tsNs split as an exact decimal: seconds and nine digits of nanoseconds.
  private tsSec = 0;
  private tsFrac = 0;
  private tsBig: string | null = null; // past 2096 or not finite: the BigInt text

  constructor(prefix: string) {
    this.prefix = prefix;
    this.prefixBytes = Buffer.from(prefix, "latin1");
  }

  /** Set the numbers of the next delivery. */
  set(dc: number, sseq: number, cseq: number, tsNs: number, pending: number): void {
    this.dc = dc;
    this.sseq = sseq;
    this.cseq = cseq;
    this.tsNs = tsNs;
    this.pending = pending;
    this.str = null;
    this.tsBig = null;
    // The exact decimal of the double, as BigInt prints it (tsString in consumer/ack.ts).
    const t = Math.round(tsNs);
    if (!Number.isFinite(t)) {
      this.tsBig = "0";
      return;
    }
    splitNs(t);
    if (NS_SPLIT.sec < 0 || NS_SPLIT.sec >= 4e9) {
      this.tsBig = BigInt(t).toString(); // before 1970 or past 2096: the slow way
      return;
    }
    this.tsSec = NS_SPLIT.sec;
    this.tsFrac = NS_SPLIT.ns;
  }

  /** The subject's length in bytes. */
  length(): number {
    const ts = this.tsBig !== null ? this.tsBig.length : this.tsSec === 0 ? digits(this.tsFrac) : digits(this.tsSec) + 9;
    return this.prefixBytes.length + digits(this.dc) + digits(this.sseq) + digits(this.cseq) + ts + digits(this.pending) + 4;
  }

  toString(): string {
    if (this.str !== null) return this.str;
    let ts: string;
    if (this.tsBig !== null) ts = this.tsBig;
    else if (this.tsSec === 0) ts = String(this.tsFrac);
    else {
      const f = String(this.tsFrac);
      ts = String(this.tsSec) + ZEROS.slice(f.length) + f;
    }
    this.str = this.prefix + this.dc + "." + this.sseq + "." + this.cseq + "." + ts + "." + this.pending;
    return this.str;
  }

  /** Write the subject at out[p...] (room for length() bytes is the caller's); returns the
   *  index after it. */
  writeTo(out: Buffer, p: number): number {
    const pb = this.prefixBytes;
    for (let i = 0; i < pb.length; i++) out[p + i] = pb[i]!;
    p += pb.length;
    p = putUint(out, p, this.dc);
    out[p++] = 0x2e;
    p = putUint(out, p, this.sseq);
    out[p++] = 0x2e;
    p = putUint(out, p, this.cseq);
    out[p++] = 0x2e;
    if (this.tsBig !== null) {
      const s = this.tsBig;
      for (let i = 0; i < s.length; i++) out[p + i] = s.charCodeAt(i);
      p += s.length;
    } else if (this.tsSec === 0) {
      p = putUint(out, p, this.tsFrac);
    } else {
      p = put9(out, putUint(out, p, this.tsSec), this.tsFrac);
    }
    out[p++] = 0x2e;
    return putUint(out, p, this.pending);
  }
}

/** Where splitNs leaves its answer (no object per call). */
export const NS_SPLIT = { sec: 0, ns: 0 };

/** An integer t as t = sec * 1e9 + ns with 0 <= ns < 1e9, exactly: the quotient may round to
 *  the next integer, and sec * 1e9 and t - sec * 1e9 are exact for |sec| < 4e9 (sec * 5^9 <
 *  2^53; the subtraction is of two doubles within a factor of two of each other). */
export function splitNs(t: number): void {
  let sec = Math.floor(t / 1e9);
  let ns = t - sec * 1e9;
  if (ns < 0) {
    sec -= 1;
    ns += 1e9;
  } else if (ns >= 1e9) {
    sec += 1;
    ns -= 1e9;
  }
  NS_SPLIT.sec = sec;
  NS_SPLIT.ns = ns;
}

/** Decimal digits of a non-negative safe integer (powers of ten are exact doubles). */
function digits(v: number): number {
  let n = 1;
  for (let t = 10; v >= t; t *= 10) n++;
  return n;
}

/** A non-negative safe integer in decimal at out[p...]; returns the index after it. Above
 *  2^31 it goes as two halves, so the digit arithmetic stays exact. */
function putUint(out: Buffer, p: number, v: number): number {
  if (v >= 0x80000000) {
    splitNs(v);
    const lo = NS_SPLIT.ns;
    p = putUint(out, p, NS_SPLIT.sec);
    return put9(out, p, lo);
  }
  const n = digits(v);
  for (let q = p + n - 1; q >= p; q--) {
    const d = (v / 10) | 0;
    out[q] = 48 + v - d * 10;
    v = d;
  }
  return p + n;
}

/** v below 1e9 as exactly nine digits, zero-padded. */
function put9(out: Buffer, p: number, v: number): number {
  for (let q = p + 8; q >= p; q--) {
    const d = (v / 10) | 0;
    out[q] = 48 + v - d * 10;
    v = d;
  }
  return p + 9;
}
