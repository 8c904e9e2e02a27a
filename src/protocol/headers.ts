// NATS message headers: "NATS/1.0[ <status>[ <description>]]\r\n(Key: Value\r\n)*\r\n".
// Keys keep their case on the wire; lookups here are case-sensitive like nats-server's
// (it reads canonical names such as "Nats-Msg-Id"), with a case-insensitive fallback.

const CRLF = "\r\n";
const PREFIX = "NATS/1.0";

export interface ParsedHeaders {
  status: number; // 0 when the first line carries no status
  description: string;
  /** Ordered key/value pairs; a key may repeat. */
  entries: [string, string][];
}

export function parseHeaders(hdr: Buffer | null): ParsedHeaders {
  const out: ParsedHeaders = { status: 0, description: "", entries: [] };
  if (!hdr || hdr.length === 0) return out;
  const text = hdr.toString("utf8");
  const lines = text.split(CRLF);
  const first = lines[0] ?? "";
  if (first.startsWith(PREFIX)) {
    const rest = first.slice(PREFIX.length).trim();
    if (rest.length > 0) {
      const sp = rest.indexOf(" ");
      const code = sp < 0 ? rest : rest.slice(0, sp);
      const n = Number.parseInt(code, 10);
      if (Number.isFinite(n)) {
        out.status = n;
        out.description = sp < 0 ? "" : rest.slice(sp + 1).trim();
      }
    }
  }
  for (let i = 1; i < lines.length; i++) {
    const line = lines[i]!;
    if (line.length === 0) continue;
    const c = line.indexOf(":");
    if (c <= 0) continue;
    out.entries.push([line.slice(0, c).trim(), line.slice(c + 1).trim()]);
  }
  return out;
}

/** First value of `key` (exact case first, then case-insensitive), or undefined. */
export function headerValue(h: ParsedHeaders, key: string): string | undefined {
  for (const [k, v] of h.entries) if (k === key) return v;
  const lk = key.toLowerCase();
  for (const [k, v] of h.entries) if (k.toLowerCase() === lk) return v;
  return undefined;
}

/** Fast check without a full parse: the value of one header in a raw block. */
export function getHeader(hdr: Buffer | null, key: string): string | undefined {
  if (!hdr || hdr.length === 0) return undefined;
  if (hdr.indexOf(key, 0, "latin1") < 0 && hdr.indexOf(key.toLowerCase(), 0, "latin1") < 0) {
    // Fall back to a full parse only when the key might be present in another case.
    const text = hdr.toString("latin1").toLowerCase();
    if (text.indexOf(key.toLowerCase()) < 0) return undefined;
  }
  return headerValue(parseHeaders(hdr), key);
}

export function encodeHeaders(
  entries: Iterable<readonly [string, string]>,
  status = 0,
  description = "",
): Buffer {
  let s = PREFIX;
  if (status > 0) {
    s += " " + String(status);
    if (description) s += " " + description;
  }
  s += CRLF;
  for (const [k, v] of entries) s += k + ": " + v + CRLF;
  s += CRLF;
  return Buffer.from(s, "utf8");
}

/** A status-only header block, e.g. statusHeaders(503) or statusHeaders(404, "No Messages"). */
export function statusHeaders(
  status: number,
  description = "",
  entries: Iterable<readonly [string, string]> = [],
): Buffer {
  return encodeHeaders(entries, status, description);
}

/** Return a copy of `hdr` with `key` removed (all occurrences), or null if nothing remains. */
export function removeHeader(hdr: Buffer | null, key: string): Buffer | null {
  if (!hdr) return null;
  const p = parseHeaders(hdr);
  const lk = key.toLowerCase();
  const kept = p.entries.filter(([k]) => k.toLowerCase() !== lk);
  if (kept.length === 0 && p.status === 0) return null;
  return encodeHeaders(kept, p.status, p.description);
}

/** Return `hdr` with extra entries appended (creating a block when hdr is null). */
export function appendHeaders(hdr: Buffer | null, extra: Iterable<readonly [string, string]>): Buffer {
  const p = parseHeaders(hdr);
  const all: [string, string][] = [...p.entries];
  for (const e of extra) all.push([e[0], e[1]]);
  return encodeHeaders(all, p.status, p.description);
}
