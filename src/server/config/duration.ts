// Go-style duration strings ("500ms", "1m30s", "1.5h", "-2s", "0") -> milliseconds.
//
// Exported API:
//   parseDurationMs(text) -> number   (throws Error with Go's wording on bad input)
//
// nats-server reads durations with Go's time.ParseDuration, so accept the same units:
// ns, us (µs, μs), ms, s, m, h. The result may be fractional (e.g. "1500us" = 1.5).

const UNIT_MS: Record<string, number> = {
  ns: 1e-6,
  us: 1e-3,
  "µs": 1e-3,
  "μs": 1e-3,
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
};

const PART_RE = /^(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)/;

export function parseDurationMs(text: string): number {
  let s = text;
  let sign = 1;
  if (s.startsWith("-") || s.startsWith("+")) {
    if (s[0] === "-") sign = -1;
    s = s.slice(1);
  }
  if (s === "0") return 0;
  if (s === "") throw new Error(`time: invalid duration "${text}"`);
  let total = 0;
  while (s.length > 0) {
    const m = PART_RE.exec(s);
    if (!m) {
      if (/^\d+(\.\d*)?$/.test(s)) throw new Error(`time: missing unit in duration "${text}"`);
      throw new Error(`time: invalid duration "${text}"`);
    }
    total += Number(m[1]) * (UNIT_MS[m[2] ?? ""] ?? 0);
    s = s.slice(m[0].length);
  }
  return sign * total;
}
