// Text formats nats-server's monitoring JSON uses: Go's RFC3339Nano timestamps, Go's
// time.Duration.String() (rtt) and nats-server's coarse uptime form ("1d2h3m4s").

/** RFC3339 with the fraction's trailing zeros trimmed, as Go's RFC3339Nano prints. */
export function rfc3339(ms: number): string {
  const iso = new Date(ms).toISOString(); // 2026-12-02T18:52:51.900Z
  const dot = iso.lastIndexOf(".");
  if (dot < 0) return iso;
  const frac = iso.slice(dot + 1, -1).replace(/0+$/, "");
  return frac.length === 0 ? `${iso.slice(0, dot)}Z` : `${iso.slice(0, dot)}.${frac}Z`;
}

/** nats-server's uptime form: whole seconds, largest unit first, years and days included. */
export function uptime(ms: number): string {
  const tsecs = Math.max(0, Math.floor(ms / 1000));
  const tmins = Math.floor(tsecs / 60);
  const thrs = Math.floor(tmins / 60);
  const tdays = Math.floor(thrs / 24);
  const tyrs = Math.floor(tdays / 365);
  const s = tsecs % 60;
  const m = tmins % 60;
  const h = thrs % 24;
  if (tyrs > 0) return `${tyrs}y${tdays % 365}d${h}h${m}m${s}s`;
  if (tdays > 0) return `${tdays}d${h}h${m}m${s}s`;
  if (thrs > 0) return `${thrs}h${m}m${s}s`;
  if (tmins > 0) return `${tmins}m${s}s`;
  return `${tsecs}s`;
}

export { goDuration } from "../contracts/duration.js";

/** Go's strconv.ParseBool accepted spellings. */
export function parseGoBool(v: string): boolean | null {
  switch (v) {
    case "1":
    case "t":
    case "T":
    case "true":
    case "TRUE":
    case "True":
      return true;
    case "0":
    case "f":
    case "F":
    case "false":
    case "FALSE":
    case "False":
      return false;
    default:
      return null;
  }
}
