// The WebSocket opening handshake (RFC 6455 section 4), as nats-server's wsUpgrade: the
// HTTP/1.1 upgrade request read as text and answered, the origin checks, and the options
// checks done at start. No socket here: WsConn (websocket.ts) reads the request and writes
// the answer.

import { createHash } from "node:crypto";
import type { ServerOptions, WebSocketOptions } from "./options.js";

const WS_GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
/** The HTTP upgrade request, headers included. */
export const MAX_REQUEST_BYTES = 16 * 1024;
const PMC_RESPONSE = "Sec-WebSocket-Extensions: permessage-deflate; server_no_context_takeover; client_no_context_takeover\r\n";

export function wsAcceptKey(key: string): string {
  return createHash("sha1").update(key + WS_GUID).digest("base64");
}

interface UpgradeRequest {
  method: string;
  path: string;
  headers: Map<string, string[]>; // lower-case names
}

function parseRequest(head: string): UpgradeRequest | null {
  const lines = head.split("\r\n");
  const m = /^([!#$%&'*+.^_`|~0-9A-Za-z-]+) (\S+) HTTP\/1\.\d$/.exec(lines[0] ?? "");
  if (!m) return null;
  const headers = new Map<string, string[]>();
  for (let i = 1; i < lines.length; i++) {
    const line = lines[i]!;
    if (line === "") continue;
    const c = line.indexOf(":");
    if (c <= 0) return null;
    const name = line.slice(0, c).trim().toLowerCase();
    const value = line.slice(c + 1).trim();
    const list = headers.get(name);
    if (list) list.push(value);
    else headers.set(name, [value]);
  }
  return { method: m[1]!, path: m[2]!, headers };
}

function header(r: UpgradeRequest, name: string): string {
  return r.headers.get(name)?.[0] ?? "";
}

/** A comma-separated token list header holds `value` (case-insensitive). */
function headerHasToken(r: UpgradeRequest, name: string, value: string): boolean {
  const v = value.toLowerCase();
  for (const h of r.headers.get(name) ?? []) for (const t of h.split(",")) if (t.trim().toLowerCase() === v) return true;
  return false;
}

function offersDeflate(r: UpgradeRequest): boolean {
  for (const h of r.headers.get("sec-websocket-extensions") ?? []) {
    for (const ext of h.split(",")) {
      for (const p of ext.split(";")) if (p.trim().toLowerCase() === "permessage-deflate") return true;
    }
  }
  return false;
}

const STATUS_TEXT: Record<number, string> = {
  400: "Bad Request",
  403: "Forbidden",
  405: "Method Not Allowed",
  431: "Request Header Fields Too Large",
};

/** Go's http.Error reply, as nats-server's wsReturnHTTPError sends it. */
export function httpError(status: number): string {
  const text = STATUS_TEXT[status] ?? "Error";
  const body = `${text}\n`;
  return (
    `HTTP/1.1 ${status} ${text}\r\nContent-Type: text/plain; charset=utf-8\r\nSec-Websocket-Version: 13\r\n` +
    `X-Content-Type-Options: nosniff\r\nDate: ${new Date().toUTCString()}\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`
  );
}

/** host and port (default 80, or 443 for TLS) of "host[:port]" or "[v6]:port", lower-case. */
function hostAndPort(hostport: string, tls: boolean): { host: string; port: string } {
  const def = tls ? "443" : "80";
  const v6 = /^\[([^\]]*)\](?::(\d*))?$/.exec(hostport);
  if (v6) return { host: v6[1]!.toLowerCase(), port: v6[2] || def };
  const c = hostport.lastIndexOf(":");
  if (c >= 0 && hostport.indexOf(":") === c) return { host: hostport.slice(0, c).toLowerCase(), port: hostport.slice(c + 1) || def };
  return { host: hostport.toLowerCase(), port: def };
}

export interface AllowedOrigin {
  scheme: string;
  port: string;
}

/** Parses allowed_origins entries (nats-server wsSetOriginOptions); throws on a bad one. */
export function allowedOriginsMap(list: string[]): Map<string, AllowedOrigin> {
  const out = new Map<string, AllowedOrigin>();
  for (const ao of list) {
    let u: URL;
    try {
      u = new URL(ao);
    } catch {
      throw new Error(`unable to parse allowed origin: ${ao}`);
    }
    const scheme = u.protocol.slice(0, -1);
    const hp = hostAndPort(u.host, scheme === "https");
    out.set(hp.host, { scheme, port: hp.port });
  }
  return out;
}

/** nats-server checkOrigin: null when allowed, else why not. No Origin header: allowed. */
function checkOrigin(o: WebSocketOptions, allowed: Map<string, AllowedOrigin>, r: UpgradeRequest): string | null {
  if (!o.sameOrigin && allowed.size === 0) return null;
  const origin = header(r, "origin") || header(r, "sec-websocket-origin");
  if (origin === "") return null;
  let u: URL;
  try {
    u = new URL(origin);
  } catch {
    return `invalid origin ${JSON.stringify(origin)}`;
  }
  const scheme = u.protocol.slice(0, -1);
  const oh = hostAndPort(u.host, scheme === "https");
  if (o.sameOrigin) {
    const rh = hostAndPort(header(r, "host"), false);
    if (oh.host !== rh.host || oh.port !== rh.port) return "not same origin";
  }
  if (allowed.size > 0) {
    const ao = allowed.get(oh.host);
    if (ao === undefined || ao.scheme !== scheme || ao.port !== oh.port) return "not in the allowed list";
  }
  return null;
}

/** Options checks done at start (nats-server validateWebsocketOptions), with what tsnats
 *  does not have yet. Returns the problem, or null. */
export function validateWebSocketOptions(o: ServerOptions): string | null {
  const w = o.websocket;
  if (w === null || w.port === 0) return null;
  if (!w.noTls && w.tls === null) return "websocket requires TLS configuration";
  if (w.jwtCookie !== "") return `websocket.jwt_cookie needs JWT authentication (trusted operators), which tsnats does not support`;
  try {
    allowedOriginsMap(w.allowedOrigins);
  } catch (err) {
    return (err as Error).message;
  }
  const a = w.authorization;
  if (a !== null && o.authorization.users.length > 0) {
    if (a.user !== "") return "websocket authentication username not compatible with presence of users/nkeys";
    if (a.token !== "") return "websocket authentication token not compatible with presence of users/nkeys";
  }
  if (w.noAuthUser !== "") {
    if (o.authorization.users.length === 0) return `no_auth_user: "${w.noAuthUser}" present, but users/nkeys are not defined`;
    if (!o.authorization.users.some((u) => u.user === w.noAuthUser)) return `no_auth_user: "${w.noAuthUser}" not present as user or nkey in authorization block or account configuration`;
  }
  return null;
}

/** How a handshake ends: refused with an HTTP status, or accepted with the 101 answer. */
export type UpgradeAnswer =
  | { readonly ok: false; readonly status: number; readonly reason: string }
  | { readonly ok: true; readonly response: string; readonly compress: boolean; readonly noMasking: boolean };

function refuse(status: number, reason: string): UpgradeAnswer {
  return { ok: false, status, reason };
}

/** RFC 6455 4.2.1, in nats-server's order (wsUpgrade): the answer to the request head
 *  `text` (without its blank line). */
export function answerUpgrade(text: string, w: WebSocketOptions, allowedOrigins: Map<string, AllowedOrigin>): UpgradeAnswer {
  const r = parseRequest(text);
  if (r === null) return refuse(400, "malformed HTTP request");
  if (r.method !== "GET") return refuse(405, "request method must be GET");
  if (header(r, "host") === "") return refuse(400, "'Host' missing in request");
  if (!headerHasToken(r, "upgrade", "websocket")) return refuse(400, "invalid value for header 'Upgrade'");
  if (!headerHasToken(r, "connection", "Upgrade")) return refuse(400, "invalid value for header 'Connection'");
  const key = header(r, "sec-websocket-key");
  if (key === "") return refuse(400, "key missing");
  if (!headerHasToken(r, "sec-websocket-version", "13")) return refuse(400, "invalid version");
  const bad = checkOrigin(w, allowedOrigins, r);
  if (bad !== null) return refuse(403, `origin not allowed: ${bad}`);
  // nats-server serves leaf nodes and MQTT on these paths; tsnats has neither.
  if (r.path.startsWith("/leafnode") || r.path.startsWith("/mqtt")) return refuse(400, `${r.path.split("?")[0]} connections are not supported`);
  const compress = w.compression && offersDeflate(r);
  const noMasking = header(r, "nats-no-masking").toLowerCase() === "true";
  let res = `HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${wsAcceptKey(key)}\r\n`;
  if (compress) res += PMC_RESPONSE;
  if (noMasking) res += "Nats-No-Masking: true\r\n";
  return { ok: true, response: res + "\r\n", compress, noMasking };
}
