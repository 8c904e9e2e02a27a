// Parsing of the value formats natscli accepts on its command line.
import { CliError } from "./output.js";

const UNIT_NS: Record<string, number> = {
  ns: 1,
  us: 1e3,
  "µs": 1e3,
  ms: 1e6,
  s: 1e9,
  m: 60e9,
  h: 3600e9,
  d: 86400e9,
  w: 7 * 86400e9,
  M: 30 * 86400e9,
  y: 365 * 86400e9,
};

/**
 * Durations like "24h", "1d3h5m2s", "500ms", "1y"; a bare number is seconds
 * (natscli's fisk.ParseDuration also accepts d, w, M and y). Returns nanoseconds.
 */
export function parseDuration(input: string, what = "duration"): number {
  const s = input.trim();
  if (s === "" || s === "0") return 0;
  if (/^-?\d+(\.\d+)?$/.test(s)) return Math.round(Number(s) * 1e9);
  let rest = s;
  let neg = false;
  if (rest.startsWith("-")) {
    neg = true;
    rest = rest.slice(1);
  }
  let total = 0;
  const re = /^(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h|d|w|M|y)/;
  while (rest.length > 0) {
    const m = re.exec(rest);
    if (m === null) throw new CliError(`invalid ${what} "${input}"`);
    const unit = UNIT_NS[m[2] ?? ""];
    if (unit === undefined) throw new CliError(`invalid ${what} "${input}"`);
    total += Number(m[1]) * unit;
    rest = rest.slice(m[0].length);
  }
  return Math.round(neg ? -total : total);
}

/** Byte sizes like "1GB", "256MiB", "10K" (all binary, as natscli does); negative means unlimited (-1). */
export function parseBytes(input: string, what = "size"): number {
  const s = input.trim();
  if (s === "") return -1;
  if (s.startsWith("-")) return -1;
  if (/^\d+$/.test(s)) return Number(s);
  const m = /^(\d+)\s*([a-zA-Z]+)$/.exec(s);
  if (m === null) throw new CliError(`invalid ${what} specification ${input}`);
  const shifts: Record<string, number> = { B: 0, K: 10, KB: 10, KIB: 10, M: 20, MB: 20, MIB: 20, G: 30, GB: 30, GIB: 30, T: 40, TB: 40, TIB: 40 };
  const shift = shifts[(m[2] ?? "").toUpperCase()];
  if (shift === undefined) throw new CliError(`invalid ${what} specification ${input}`);
  return Number(m[1]) * Math.pow(2, shift);
}

export function parseIntStrict(input: string, what: string): number {
  const s = input.trim();
  if (!/^-?\d+$/.test(s)) throw new CliError(`invalid ${what} "${input}": expected an integer`);
  return Number(s);
}

/** "a,b c" -> ["a","b","c"]: natscli splits subject lists on commas and spaces. */
export function splitList(values: string | string[] | undefined): string[] {
  if (values === undefined) return [];
  const arr = Array.isArray(values) ? values : [values];
  return arr.flatMap((v) => v.split(/[\s,]+/)).filter((v) => v !== "");
}

/** "K:V" header flags. */
export function parseHeaderFlags(values: string[] | undefined): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  for (const h of values ?? []) {
    const i = h.indexOf(":");
    if (i <= 0) throw new CliError(`invalid header "${h}": expected K:V`);
    out.push([h.slice(0, i).trim(), h.slice(i + 1).trim()]);
  }
  return out;
}

/** "k=v" metadata flags. */
export function parseKeyValues(values: string[] | undefined): Record<string, string> | undefined {
  if (values === undefined || values.length === 0) return undefined;
  const out: Record<string, string> = {};
  for (const kv of values) {
    const i = kv.indexOf("=");
    if (i <= 0) throw new CliError(`invalid metadata "${kv}": expected key=value`);
    out[kv.slice(0, i)] = kv.slice(i + 1);
  }
  return out;
}

/** Commander collector for repeatable flags. */
export function collect(value: string, previous: string[] | undefined): string[] {
  return [...(previous ?? []), value];
}
