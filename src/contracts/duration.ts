// Durations as Go prints them (time.Duration.String()), for the wire and the monitor.

/** Go's time.Duration.String() for a duration in nanoseconds. */
export function goDuration(nsIn: number): string {
  let ns = Math.round(nsIn);
  if (ns === 0) return "0s";
  const sign = ns < 0 ? "-" : "";
  ns = Math.abs(ns);
  if (ns < 1_000) return `${sign}${ns}ns`;
  if (ns < 1_000_000) return `${sign}${fixed(ns, 1_000, 3)}µs`;
  if (ns < 1_000_000_000) return `${sign}${fixed(ns, 1_000_000, 6)}ms`;
  const h = Math.floor(ns / 3_600_000_000_000);
  let rem = ns - h * 3_600_000_000_000;
  const m = Math.floor(rem / 60_000_000_000);
  rem -= m * 60_000_000_000;
  let out = sign;
  if (h > 0) out += `${h}h`;
  if (h > 0 || m > 0) out += `${m}m`;
  return `${out}${fixed(rem, 1_000_000_000, 9)}s`;
}

function fixed(v: number, unit: number, digits: number): string {
  const whole = Math.floor(v / unit);
  const frac = v - whole * unit;
  if (frac === 0) return String(whole);
  return `${whole}.${String(frac).padStart(digits, "0").replace(/0+$/, "")}`;
}
