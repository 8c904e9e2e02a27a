// JSON for the JetStream API with Go's integer rules. nats-server decodes requests with
// encoding/json into int64/int32/uint64 fields, so a number that is fractional, written with
// an exponent, negative for an unsigned field or outside the field's range is "invalid JSON"
// (10025). JSON.parse cannot tell: it rounds 2^63 to 9223372036854775808 and reads 1e18 as an
// integer. parseApiJson therefore scans the text once for number literals; only when some
// literal is not a plain integer of at most 15 digits (exact in a double) does it re-parse,
// turning those literals into RawNumber objects that carry the source text. The typed readers
// (goInt) then judge each field by its Go type. The normal path is one scan plus JSON.parse.

/** A number literal JSON.parse could not be trusted with, as written in the request. */
export class RawNumber {
  constructor(readonly literal: string) {}
}

/** Go's integer kinds as they appear in nats-server's request structs. */
export type GoIntKind = "int64" | "int" | "int32" | "uint64" | "time.Duration";

const MARK = "\u0000#";
const I64_MIN = -(2n ** 63n);
const I64_MAX = 2n ** 63n - 1n;
const I32_MIN = -(2n ** 31n);
const I32_MAX = 2n ** 31n - 1n;
const U64_MAX = 2n ** 64n - 1n;

/** Start/end offsets of number literals that JSON.parse may misread (outside strings). */
function unsafeNumbers(text: string): number[] {
  const out: number[] = [];
  const n = text.length;
  let i = 0;
  while (i < n) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      // A string: skip to its closing quote (one not escaped: after an even run of
      // backslashes) with indexOf, not a character at a time (a stream create with 10,000
      // subjects is ~200 KB of strings, and a cold loop over it cost milliseconds).
      let q = text.indexOf('"', i + 1);
      while (q > 0) {
        let bs = 0;
        for (let k = q - 1; text.charCodeAt(k) === 0x5c; k--) bs++;
        if ((bs & 1) === 0) break;
        q = text.indexOf('"', q + 1);
      }
      i = q < 0 ? n : q + 1;
      continue;
    }
    if (c === 0x2d || (c >= 0x30 && c <= 0x39)) {
      const start = i;
      let digits = 0;
      let plain = true;
      if (c === 0x2d) i++;
      while (i < n) {
        const d = text.charCodeAt(i);
        if (d >= 0x30 && d <= 0x39) digits++;
        else if (d === 0x2e || d === 0x65 || d === 0x45 || d === 0x2b || d === 0x2d) plain = false;
        else break;
        i++;
      }
      if (!plain || digits > 15) out.push(start, i);
      continue;
    }
    i++;
  }
  return out;
}

/** JSON.parse with RawNumber for every literal a double cannot hold exactly as an integer.
 *  Throws JSON.parse's SyntaxError on malformed text. */
export function parseApiJson(text: string): unknown {
  const spans = unsafeNumbers(text);
  if (spans.length === 0) return JSON.parse(text);
  // Validate the original text first, so a syntax error reads as JSON.parse's own.
  JSON.parse(text);
  let s = "";
  let at = 0;
  for (let k = 0; k < spans.length; k += 2) {
    const a = spans[k]!;
    const b = spans[k + 1]!;
    s += text.slice(at, a) + '"\\u0000#' + text.slice(a, b) + '"';
    at = b;
  }
  s += text.slice(at);
  return JSON.parse(s, (_k, v: unknown) =>
    typeof v === "string" && v.startsWith(MARK) ? new RawNumber(v.slice(MARK.length)) : v,
  );
}

/** Go's name for a decoded value's JSON type in "cannot unmarshal X into ..." errors. */
export function goJsonType(v: unknown): string {
  if (v === null) return "null";
  if (v instanceof RawNumber) return "number";
  if (Array.isArray(v)) return "array";
  return typeof v === "object" ? "object" : typeof v;
}

/** The message encoding/json gives for a value that does not fit the field. */
export function unmarshalMsg(v: unknown, field: string, kind: string): string {
  const what = v instanceof RawNumber ? `number ${v.literal}` : typeof v === "number" ? `number ${String(v)}` : goJsonType(v);
  return `json: cannot unmarshal ${what} into Go struct field ${field} of type ${kind}`;
}

function inRange(b: bigint, kind: GoIntKind): boolean {
  switch (kind) {
    case "int32":
      return b >= I32_MIN && b <= I32_MAX;
    case "uint64":
      return b >= 0n && b <= U64_MAX;
    case "int":
    case "int64":
    case "time.Duration":
      return b >= I64_MIN && b <= I64_MAX;
  }
}

/**
 * The integer a Go field of `kind` decodes from `v` (undefined/null: 0), or null when Go
 * would refuse it. Values beyond 2^53 come back as the nearest double (tsnats keeps
 * numbers as doubles); the range check itself is exact.
 */
export function goIntOrNull(v: unknown, kind: GoIntKind): number | null {
  if (v === undefined || v === null) return 0;
  if (typeof v === "number") {
    if (!Number.isInteger(v)) return null;
    if (Number.isSafeInteger(v)) {
      if (kind === "uint64" && v < 0) return null;
      if (kind === "int32" && (v < -2147483648 || v > 2147483647)) return null;
      return v === 0 ? 0 : v; // -0 decodes to 0

    }
    return inRange(BigInt(v), kind) ? v : null;
  }
  if (v instanceof RawNumber) {
    if (!/^-?\d+$/.test(v.literal)) return null;
    const b = BigInt(v.literal);
    return inRange(b, kind) ? Number(b) : null;
  }
  return null;
}

/** goIntOrNull, throwing `fail(message)` with encoding/json's text when Go would refuse. */
export function goInt(v: unknown, kind: GoIntKind, field: string, fail: (msg: string) => never): number {
  const n = goIntOrNull(v, kind);
  if (n === null) fail(unmarshalMsg(v, field, kind));
  return n;
}
