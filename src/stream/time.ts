// Time encodings on the wire: RFC 3339 with nanoseconds (Go's RFC3339Nano: trailing zeros
// of the fraction trimmed, UTC "Z"), Go duration strings (Nats-TTL), int64 ns durations.

export const ZERO_TIME = "0001-01-01T00:00:00Z";

// The "YYYY-MM-DDTHH:MM:SS" of recent whole seconds: messages read close together in time
// (a KV bucket's keys, a consumer's batch) share a few, and Date formatting costs more than
// the rest of the function.
const SEC_SLOTS = 64;
const secKey = new Float64Array(SEC_SLOTS).fill(-1);
const secText: string[] = new Array<string>(SEC_SLOTS).fill("");

/** Go time.Time JSON for a ns-since-epoch value; 0 is the zero time. */
export function rfc3339Ns(ns: number): string {
  if (ns <= 0) return ZERO_TIME;
  const sec = Math.floor(ns / 1e9);
  let frac = Math.round(ns - sec * 1e9);
  if (frac < 0) frac = 0;
  if (frac > 999_999_999) frac = 999_999_999;
  const slot = sec % SEC_SLOTS;
  let base: string;
  if (secKey[slot] === sec) base = secText[slot]!;
  else {
    base = new Date(sec * 1000).toISOString().slice(0, 19);
    secKey[slot] = sec;
    secText[slot] = base;
  }
  if (frac === 0) return base + "Z";
  // Go trims the fraction's trailing zeros.
  let width = 9;
  while (frac % 10 === 0) {
    frac /= 10;
    width--;
  }
  const f = String(frac);
  return base + (f.length < width ? ".000000000".slice(0, 1 + width - f.length) + f : "." + f) + "Z";
}

/** Parse an RFC 3339 time to ns since epoch; NaN when invalid. */
export function parseRfc3339Ns(s: string): number {
  const m = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(?:\.(\d{1,9}))?(Z|[+-]\d{2}:\d{2})$/.exec(s);
  if (!m) return Number.NaN;
  const ms = Date.parse(m[1]! + m[3]!);
  if (Number.isNaN(ms)) return Number.NaN;
  const frac = m[2] ? Number(m[2].padEnd(9, "0")) : 0;
  return ms * 1e6 + frac;
}

const UNIT_NS: Record<string, number> = {
  ns: 1,
  us: 1e3,
  "µs": 1e3,
  "μs": 1e3,
  ms: 1e6,
  s: 1e9,
  m: 60e9,
  h: 3600e9,
};

/** Go time.ParseDuration; NaN when invalid. */
export function parseGoDurationNs(s: string): number {
  if (s === "0") return 0;
  const re = /(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)/gy;
  let total = 0;
  let i = 0;
  let sign = 1;
  if (s.startsWith("-") || s.startsWith("+")) {
    sign = s[0] === "-" ? -1 : 1;
    i = 1;
  }
  if (i >= s.length) return Number.NaN;
  re.lastIndex = i;
  while (re.lastIndex < s.length) {
    const m = re.exec(s);
    if (!m) return Number.NaN;
    total += Number(m[1]) * UNIT_NS[m[2]!]!;
  }
  return sign * total;
}

/** Nats-TTL value -> seconds: -1 for "never", NaN when invalid (nats-server getMessageTTL). */
export function parseMsgTtlSec(v: string): number {
  if (v === "never") return -1;
  if (/^-?\d+$/.test(v)) {
    const n = Number(v);
    return n < 1 ? Number.NaN : n;
  }
  const ns = parseGoDurationNs(v);
  if (Number.isNaN(ns) || ns < 1e9) return Number.NaN;
  return Math.floor(ns / 1e9);
}
