// WebSocket clients, as nats-server's websocket listener: an HTTP/1.1 upgrade (RFC 6455
// section 4), then the NATS protocol carried in frames, with permessage-deflate (RFC 7692)
// when configured and offered by the client.
//
// The pieces:
//   WsFrameDecoder  frames in, payload bytes out. Unmasks in place in the read buffer it is
//                   given (the shared read buffer of src/runtime/net.ts) and hands the payload
//                   on as views of it: no copy, no per-frame allocation. Only a header or a
//                   control payload split across reads is copied (at most 14 / 125 bytes), and
//                   the parts of a compressed message until it is whole (bounded).
//   WsConn          the ClientConn a Client talks to: each write() becomes one binary frame
//                   (the header and the bytes go out in one writev), end() sends the close
//                   frame nats-server would send for the close reason. Before the upgrade it
//                   reads the HTTP request.
//   WsListener      the TCP listener; it hands upgraded connections to Server.acceptWebSocket.

import net from "node:net";
import { EventEmitter } from "node:events";
import { createHash } from "node:crypto";
import { isUtf8 } from "node:buffer";
import { endianness } from "node:os";
import zlib from "node:zlib";
import tls from "node:tls";
import { adoptAccepted, LISTEN_BACKLOG } from "../runtime/net.js";
import { buildTls, peerIdentities, peerRejection, serverSocketOptions, tlsCipherName, tlsVersionName, type TlsSetup } from "./tls.js";
import { CloseReason, type Client, type ClientConn } from "./client.js";
import { CLOSE_LINGER_MS } from "./conn.js";
import type { Logger } from "../runtime/log.js";
import type { Clock, TimerHandle } from "../runtime/clock.js";
import type { ServerOptions, WebSocketOptions } from "./options.js";

/** What the websocket side needs of the server (server.ts implements it). */
export interface WsHost {
  readonly log: Logger;
  readonly opts: ServerOptions;
  readonly clock: Clock;
  flushDirty(): void;
  /** A connection past its upgrade becomes a Client; null when refused. */
  acceptWebSocket(conn: WsConn): Client | null;
}

const WS_GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";

export const OP_CONT = 0;
export const OP_TEXT = 1;
export const OP_BINARY = 2;
export const OP_CLOSE = 8;
export const OP_PING = 9;
export const OP_PONG = 10;

export const CLOSE_NORMAL = 1000;
export const CLOSE_GOING_AWAY = 1001;
export const CLOSE_PROTOCOL_ERROR = 1002;
export const CLOSE_NO_STATUS = 1005;
export const CLOSE_ABNORMAL = 1006;
export const CLOSE_INVALID_PAYLOAD = 1007;
export const CLOSE_POLICY_VIOLATION = 1008;
export const CLOSE_MESSAGE_TOO_BIG = 1009;
export const CLOSE_INTERNAL_ERROR = 1011;

const MAX_CONTROL_PAYLOAD = 125;
/** nats-server does not compress smaller writes. */
const COMPRESS_THRESHOLD = 64;
/** The HTTP upgrade request, headers included. */
const MAX_REQUEST_BYTES = 16 * 1024;
const PMC_RESPONSE = "Sec-WebSocket-Extensions: permessage-deflate; server_no_context_takeover; client_no_context_takeover\r\n";
const DEFLATE_TAIL = Buffer.from([0x00, 0x00, 0xff, 0xff]);
const LITTLE_ENDIAN = endianness() === "LE";

export function wsAcceptKey(key: string): string {
  return createHash("sha1").update(key + WS_GUID).digest("base64");
}

/** The close status nats-server sends for a close reason (wsEnqueueCloseMessage). */
export function closeStatusFor(reason: string): number {
  switch (reason) {
    case CloseReason.ClientClosed:
      return CLOSE_NORMAL;
    case CloseReason.AuthTimeout:
    case CloseReason.AuthViolation:
    case CloseReason.SlowConsumerPending:
    case CloseReason.SlowConsumerDeadline:
    case CloseReason.MaxConnections:
    case CloseReason.MaxControlLine:
      return CLOSE_POLICY_VIOLATION;
    case CloseReason.ProtocolViolation:
      return CLOSE_PROTOCOL_ERROR;
    case CloseReason.MaxPayload:
      return CLOSE_MESSAGE_TOO_BIG;
    case CloseReason.ServerShutdown:
    case CloseReason.LameDuck:
      return CLOSE_GOING_AWAY;
    case CloseReason.ReadError:
    case CloseReason.WriteError:
    case CloseReason.StaleConnection:
      return CLOSE_ABNORMAL;
    default:
      return CLOSE_INTERNAL_ERROR;
  }
}

/** A close frame's payload: the status, then the text cut to fit a control frame. */
export function closePayload(status: number, body: string | Buffer): Buffer {
  let b = typeof body === "string" ? Buffer.from(body, "utf8") : body;
  if (b.length > MAX_CONTROL_PAYLOAD - 2) b = Buffer.concat([b.subarray(0, MAX_CONTROL_PAYLOAD - 5), Buffer.from("...")]);
  const out = Buffer.allocUnsafe(2 + b.length);
  out.writeUInt16BE(status, 0);
  b.copy(out, 2);
  return out;
}

/** An unmasked frame header (servers do not mask) for a payload of len bytes. */
export function frameHeader(op: number, compressed: boolean, len: number): Buffer {
  const b0 = 0x80 | op | (compressed ? 0x40 : 0);
  let h: Buffer;
  if (len <= 125) {
    h = Buffer.allocUnsafe(2);
    h[1] = len;
  } else if (len < 65536) {
    h = Buffer.allocUnsafe(4);
    h[1] = 126;
    h.writeUInt16BE(len, 2);
  } else {
    h = Buffer.allocUnsafe(10);
    h[1] = 127;
    h.writeUInt32BE(Math.floor(len / 2 ** 32), 2);
    h.writeUInt32BE(len >>> 0, 6);
  }
  h[0] = b0;
  return h;
}

// ---- frame decoding ----

/** Where a WsFrameDecoder sends what it decodes. Buffers are valid only during the call. */
export interface WsSink {
  /** Message bytes (a data frame's payload or part of it, or a whole inflated message). */
  wsData(b: Buffer): void;
  /** A ping, pong or close frame, whole. */
  wsControl(op: number, payload: Buffer): void;
  /** A protocol error: decoding has stopped; the connection is to be closed with status. */
  wsFail(status: number, reason: string): void;
}

/** The bytes a frame header takes, from its second byte. */
function headerSize(b1: number): number {
  const l = b1 & 0x7f;
  return 2 + (l === 126 ? 2 : l === 127 ? 8 : 0) + ((b1 & 0x80) !== 0 ? 4 : 0);
}

export class WsFrameDecoder {
  stopped = false;
  private readonly hdr = Buffer.alloc(14);
  private hdrHave = 0;
  private inPayload = false;
  private rem = 0;
  private op = 0;
  private masked = false;
  private readonly key = Buffer.alloc(4);
  private kpos = 0;
  /** Inside a fragmented message: the next data frame must be a continuation. */
  private msgOpen = false;
  /** The current message is compressed (RSV1 on its first frame). */
  private compressed = false;
  private readonly ctl = Buffer.alloc(MAX_CONTROL_PAYLOAD);
  private ctlHave = 0;
  private zparts: Buffer[] = [];
  private zbytes = 0;

  /**
   * requireMask: clients must mask (RFC 6455 5.1) unless they asked for no masking.
   * inflate: permessage-deflate was negotiated. maxMessage: the bound on a compressed
   * message, before and after inflating (uncompressed frames are streamed to the parser,
   * which has its own limits).
   */
  constructor(
    private readonly sink: WsSink,
    readonly requireMask: boolean,
    readonly inflate: boolean,
    readonly maxMessage: number,
  ) {}

  /** Bytes this decoder holds between reads (header, control payload, compressed parts). */
  heldBytes(): number {
    return this.hdrHave + this.ctlHave + this.zbytes;
  }

  /** Decodes buf, unmasking its payloads in place. */
  feed(buf: Buffer): void {
    let i = 0;
    const n = buf.length;
    while (i < n && !this.stopped) {
      if (!this.inPayload) {
        i = this.header(buf, i, n);
        continue;
      }
      const take = Math.min(this.rem, n - i);
      const end = i + take;
      if (this.masked) this.kpos = unmask(buf, i, end, this.key, this.kpos);
      this.rem -= take;
      const last = this.rem === 0;
      if (last) this.inPayload = false;
      if (this.op >= OP_CLOSE) {
        buf.copy(this.ctl, this.ctlHave, i, end);
        this.ctlHave += take;
        if (last) this.sink.wsControl(this.op, this.ctl.subarray(0, this.ctlHave));
      } else if (this.compressed) {
        this.zbytes += take;
        if (this.zbytes > this.maxMessage) {
          this.fail(CLOSE_MESSAGE_TOO_BIG, "compressed message too big");
          return;
        }
        this.zparts.push(Buffer.from(buf.subarray(i, end)));
        if (last && !this.msgOpen) this.inflateMessage();
      } else {
        this.sink.wsData(buf.subarray(i, end));
      }
      i = end;
    }
  }

  private header(buf: Buffer, i: number, n: number): number {
    if (this.hdrHave === 0 && n - i >= 2) {
      const need = headerSize(buf[i + 1]!);
      if (n - i >= need) {
        this.parseHeader(buf, i);
        return i + need;
      }
    }
    // A header split across reads: gather it (at most 14 bytes).
    while (i < n) {
      this.hdr[this.hdrHave++] = buf[i++]!;
      if (this.hdrHave >= 2 && this.hdrHave === headerSize(this.hdr[1]!)) {
        this.hdrHave = 0;
        this.parseHeader(this.hdr, 0);
        break;
      }
    }
    return i;
  }

  private parseHeader(h: Buffer, p: number): void {
    const b0 = h[p]!;
    const b1 = h[p + 1]!;
    const fin = (b0 & 0x80) !== 0;
    const rsv1 = (b0 & 0x40) !== 0;
    const op = b0 & 0x0f;
    const masked = (b1 & 0x80) !== 0;
    if (this.requireMask && !masked) return this.fail(CLOSE_PROTOCOL_ERROR, "mask bit missing");
    let len = b1 & 0x7f;
    let q = p + 2;
    if (len === 126) {
      len = h.readUInt16BE(q);
      q += 2;
    } else if (len === 127) {
      const hi = h.readUInt32BE(q);
      // RFC 6455: the most significant bit must be 0; beyond 2^53 a number is no length.
      if (hi > 0x1fffff) return this.fail(CLOSE_PROTOCOL_ERROR, "invalid frame length");
      len = hi * 2 ** 32 + h.readUInt32BE(q + 4);
      q += 8;
    }
    switch (op) {
      case OP_CLOSE:
      case OP_PING:
      case OP_PONG:
        if (len > MAX_CONTROL_PAYLOAD) return this.fail(CLOSE_PROTOCOL_ERROR, `control frame length bigger than maximum allowed of ${MAX_CONTROL_PAYLOAD} bytes`);
        if (!fin) return this.fail(CLOSE_PROTOCOL_ERROR, "control frame does not have final bit set");
        if (rsv1) return this.fail(CLOSE_PROTOCOL_ERROR, "compressed control frame");
        break;
      case OP_TEXT:
      case OP_BINARY:
        if (this.msgOpen) return this.fail(CLOSE_PROTOCOL_ERROR, "new message started before final frame for previous message was received");
        if (rsv1 && !this.inflate) return this.fail(CLOSE_PROTOCOL_ERROR, "compressed frame without negotiated compression");
        this.msgOpen = !fin;
        this.compressed = rsv1;
        break;
      case OP_CONT:
        if (!this.msgOpen || rsv1) return this.fail(CLOSE_PROTOCOL_ERROR, "invalid continuation frame");
        this.msgOpen = !fin;
        break;
      default:
        return this.fail(CLOSE_PROTOCOL_ERROR, `unknown opcode ${op}`);
    }
    this.op = op;
    this.masked = masked;
    if (masked) {
      h.copy(this.key, 0, q, q + 4);
      this.kpos = 0;
    }
    this.rem = len;
    this.ctlHave = 0;
    if (len > 0) {
      this.inPayload = true;
      return;
    }
    // An empty frame is done at once.
    if (op >= OP_CLOSE) this.sink.wsControl(op, this.ctl.subarray(0, 0));
    else if (this.compressed && !this.msgOpen) this.inflateMessage();
  }

  private inflateMessage(): void {
    const parts = this.zparts;
    parts.push(DEFLATE_TAIL);
    this.zparts = [];
    this.zbytes = 0;
    this.compressed = false;
    let out: Buffer;
    try {
      out = zlib.inflateRawSync(Buffer.concat(parts), { finishFlush: zlib.constants.Z_SYNC_FLUSH, maxOutputLength: this.maxMessage });
    } catch (err) {
      const tooBig = (err as { code?: string }).code === "ERR_BUFFER_TOO_LARGE";
      this.fail(tooBig ? CLOSE_MESSAGE_TOO_BIG : CLOSE_PROTOCOL_ERROR, tooBig ? "decompressed message too big" : "invalid compressed data");
      return;
    }
    if (out.length > 0) this.sink.wsData(out);
  }

  private fail(status: number, reason: string): void {
    this.stopped = true;
    this.zparts = [];
    this.zbytes = 0;
    this.sink.wsFail(status, reason);
  }
}

/** XORs buf[start, end) with the key from key position kpos; returns the next position.
 *  Four bytes at a time over the aligned middle. */
export function unmask(buf: Buffer, start: number, end: number, key: Buffer, kpos: number): number {
  let i = start;
  if (LITTLE_ENDIAN && end - start >= 32) {
    while (((buf.byteOffset + i) & 3) !== 0) buf[i++]! ^= key[kpos++ & 3]!;
    const words = (end - i) >>> 2;
    const k = kpos & 3;
    const kw = key[k]! | (key[(k + 1) & 3]! << 8) | (key[(k + 2) & 3]! << 16) | (key[(k + 3) & 3]! << 24);
    const w = new Int32Array(buf.buffer, buf.byteOffset + i, words);
    for (let j = 0; j < words; j++) w[j]! ^= kw;
    i += words * 4;
  }
  for (; i < end; i++) buf[i]! ^= key[kpos++ & 3]!;
  return kpos & 3;
}

// ---- the HTTP upgrade ----

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
function httpError(status: number): string {
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

interface AllowedOrigin {
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

// ---- the connection ----

/** A client connection over WebSocket: the ClientConn of its Client. Emits 'drain', 'error'
 *  and 'close' from its socket, like a net.Socket. */
export class WsConn extends EventEmitter implements ClientConn, WsSink {
  client: Client | null = null;
  private decoder: WsFrameDecoder | null = null;
  private head: Buffer | null = null;
  private timer: TimerHandle | null = null;
  private compress = false;
  private closeSent = false;
  /** The close frame end() sends: set by a peer's close (the echo) or a protocol error. */
  private closeStatus = 0;
  private closeBody: string | Buffer = "";
  readonly socket: net.Socket;
  /** wss: the negotiated TLS version and cipher suite ("" for ws). */
  tlsVersion = "";
  tlsCipher = "";
  /** wss with verify_and_map: the certificate's identities. */
  certIdentities: string[] = [];

  constructor(
    raw: net.Socket,
    private readonly server: WsHost,
    private readonly listener: WsListener,
  ) {
    super();
    const t = listener.tls;
    if (t === null) this.socket = adoptAccepted(raw, (chunk) => this.onChunk(chunk));
    else {
      // wss: the TLS handshake first, then the HTTP upgrade over it (the handshake timeout
      // below covers both).
      const ts = new tls.TLSSocket(raw, serverSocketOptions(t));
      this.socket = ts;
      ts.on("secure", () => {
        const bad = peerRejection(ts, t.opts, t.opts.verify);
        if (bad !== null) {
          this.server.log.error(`${this.remote()} - websocket TLS handshake error: ${bad}`);
          ts.destroy();
          return;
        }
        this.tlsVersion = tlsVersionName(ts);
        this.tlsCipher = tlsCipherName(ts);
        if (t.opts.verifyAndMap) this.certIdentities = peerIdentities(ts);
      });
      ts.on("data", (chunk: Buffer) => this.onChunk(chunk));
    }
    this.socket.setNoDelay(true);
    const w = server.opts.websocket!;
    if (w.handshakeTimeoutMs > 0) {
      this.timer = server.clock.setTimer(() => {
        this.server.log.debug(`${this.remote()} - websocket handshake error: handshake timeout`);
        this.socket.destroy();
      }, w.handshakeTimeoutMs);
    }
    this.socket.on("drain", () => this.emit("drain"));
    this.socket.on("error", (err) => {
      if (this.client !== null) this.emit("error", err);
    });
    this.socket.on("close", () => {
      if (this.timer !== null) this.server.clock.clearTimer(this.timer);
      this.listener.forget(this);
      if (this.client !== null) this.emit("close");
    });
  }

  get writableLength(): number {
    return this.socket.writableLength;
  }
  get destroyed(): boolean {
    return this.socket.destroyed;
  }
  get remoteAddress(): string | undefined {
    return this.socket.remoteAddress;
  }
  get remotePort(): number | undefined {
    return this.socket.remotePort;
  }

  private remote(): string {
    return `${this.socket.remoteAddress ?? ""}:${this.socket.remotePort ?? 0}`;
  }

  /** One binary frame for what the Client hands over (one flush): the header goes out with
   *  the bytes in one writev, the bytes themselves are not copied. */
  write(data: Buffer | string): boolean {
    if (this.closeSent || this.socket.destroyed) return true;
    const b = typeof data === "string" ? Buffer.from(data, "utf8") : data;
    if (this.compress && b.length > COMPRESS_THRESHOLD) {
      const z = zlib.deflateRawSync(b, { level: 1, finishFlush: zlib.constants.Z_SYNC_FLUSH });
      const p = z.subarray(0, z.length - 4); // RFC 7692 7.2.1: without the 00 00 ff ff tail
      return this.writeFrame(frameHeader(OP_BINARY, true, p.length), p);
    }
    return this.writeFrame(frameHeader(OP_BINARY, false, b.length), b);
  }

  private writeFrame(h: Buffer, b: Buffer): boolean {
    const s = this.socket;
    s.cork();
    s.write(h);
    const ok = s.write(b);
    s.uncork();
    return ok;
  }

  private writeControl(op: number, payload: Buffer): void {
    if (this.socket.destroyed) return;
    const f = Buffer.allocUnsafe(2 + payload.length);
    f[0] = 0x80 | op;
    f[1] = payload.length;
    payload.copy(f, 2);
    this.socket.write(f);
  }

  /** Sends the close frame (once): the one set by a peer's close or a protocol error, else
   *  the one nats-server sends for the client's close reason. */
  private sendClose(): void {
    if (this.closeSent) return;
    this.closeSent = true;
    let status = this.closeStatus;
    let body = this.closeBody;
    if (status === 0) {
      const reason = this.client?.closeReason ?? "";
      status = closeStatusFor(reason);
      body = reason;
    }
    this.writeControl(OP_CLOSE, closePayload(status, body));
  }

  end(cb?: () => void): void {
    if (this.socket.destroyed) return;
    this.sendClose();
    this.socket.end(cb);
  }

  /** A closed client takes no more input (Client.close); a yielded one waits a turn. */
  pause(): void {
    this.socket.pause();
  }

  resume(): void {
    if (!this.socket.destroyed) this.socket.resume();
  }

  destroy(): void {
    this.socket.destroy();
  }

  /** Refuses the connection after the upgrade, without a Client (max_connections). */
  refuse(err: string, status: number, reason: string): void {
    this.socket.write(frameHeader(OP_BINARY, false, err.length));
    this.socket.write(err);
    this.closeStatus = status;
    this.closeBody = reason;
    this.end();
    this.server.clock.setTimer(() => this.socket.destroy(), CLOSE_LINGER_MS);
  }

  // ---- reading ----

  private onChunk(chunk: Buffer): void {
    const d = this.decoder;
    if (d !== null) {
      d.feed(chunk);
      this.server.flushDirty();
      return;
    }
    this.onHandshakeData(chunk);
  }

  wsData(b: Buffer): void {
    const c = this.client;
    if (c !== null && !c.closed) c.onData(b);
  }

  wsControl(op: number, payload: Buffer): void {
    if (op === OP_PING) {
      if (!this.closeSent) this.writeControl(OP_PONG, payload);
      return;
    }
    if (op !== OP_CLOSE) return; // a pong
    // The peer closes: echo its status (nats-server sends 1005 when there was none), after
    // whatever the client still has to send, then close as Client Closed.
    let status = CLOSE_NO_STATUS;
    let body: string | Buffer = "";
    if (payload.length >= 2) {
      status = payload.readUInt16BE(0);
      if (payload.length > 2) {
        body = Buffer.from(payload.subarray(2));
        if (!isUtf8(body)) {
          status = CLOSE_INVALID_PAYLOAD;
          body = "invalid utf8 body in close frame";
        }
      }
    }
    this.decoder!.stopped = true;
    this.closeStatus = status;
    this.closeBody = body;
    this.client?.close(CloseReason.ClientClosed);
  }

  wsFail(status: number, reason: string): void {
    const c = this.client;
    this.server.log.debug(`${c !== null ? c.label() : this.remote()} - websocket protocol error: ${reason}`);
    this.closeStatus = status;
    this.closeBody = reason;
    if (c !== null) c.close(CloseReason.ReadError);
    else this.end();
  }

  private onHandshakeData(chunk: Buffer): void {
    // The chunk is in the shared read buffer: keep a copy.
    this.head = this.head === null ? Buffer.from(chunk) : Buffer.concat([this.head, chunk]);
    const head = this.head;
    const end = head.indexOf("\r\n\r\n", 0, "latin1");
    if (end < 0) {
      if (head.length > MAX_REQUEST_BYTES) this.handshakeError(431, "request headers too large");
      return;
    }
    if (end + 4 > MAX_REQUEST_BYTES) return this.handshakeError(431, "request headers too large");
    this.head = null;
    if (end + 4 < head.length) return this.handshakeError(400, "client sent data before handshake is complete");
    this.upgrade(head.toString("latin1", 0, end));
  }

  private handshakeError(status: number, reason: string): void {
    this.server.log.error(`${this.remote()} - websocket handshake error: ${reason}`);
    if (this.timer !== null) this.server.clock.clearTimer(this.timer);
    this.head = null;
    this.socket.end(httpError(status));
    this.server.clock.setTimer(() => this.socket.destroy(), CLOSE_LINGER_MS);
  }

  /** RFC 6455 4.2.1, in nats-server's order (wsUpgrade). */
  private upgrade(text: string): void {
    const r = parseRequest(text);
    if (r === null) return this.handshakeError(400, "malformed HTTP request");
    if (r.method !== "GET") return this.handshakeError(405, "request method must be GET");
    if (header(r, "host") === "") return this.handshakeError(400, "'Host' missing in request");
    if (!headerHasToken(r, "upgrade", "websocket")) return this.handshakeError(400, "invalid value for header 'Upgrade'");
    if (!headerHasToken(r, "connection", "Upgrade")) return this.handshakeError(400, "invalid value for header 'Connection'");
    const key = header(r, "sec-websocket-key");
    if (key === "") return this.handshakeError(400, "key missing");
    if (!headerHasToken(r, "sec-websocket-version", "13")) return this.handshakeError(400, "invalid version");
    const w = this.server.opts.websocket!;
    const bad = checkOrigin(w, this.listener.allowedOrigins, r);
    if (bad !== null) return this.handshakeError(403, `origin not allowed: ${bad}`);
    // nats-server serves leaf nodes and MQTT on these paths; tsnats has neither.
    if (r.path.startsWith("/leafnode") || r.path.startsWith("/mqtt")) return this.handshakeError(400, `${r.path.split("?")[0]} connections are not supported`);
    this.compress = w.compression && offersDeflate(r);
    const noMasking = header(r, "nats-no-masking").toLowerCase() === "true";
    let res = `HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${wsAcceptKey(key)}\r\n`;
    if (this.compress) res += PMC_RESPONSE;
    if (noMasking) res += "Nats-No-Masking: true\r\n";
    this.socket.write(res + "\r\n");
    if (this.timer !== null) this.server.clock.clearTimer(this.timer);
    this.timer = null;
    const o = this.server.opts;
    const maxMessage = Math.max(8 * 1024 * 1024, 2 * o.maxPayloadBytes + o.maxControlLineBytes);
    this.decoder = new WsFrameDecoder(this, !noMasking, this.compress, maxMessage);
    this.listener.forget(this);
    this.client = this.server.acceptWebSocket(this);
  }
}

// ---- the listener ----

export class WsListener {
  readonly allowedOrigins: Map<string, AllowedOrigin>;
  /** wss: the certificates (websocket.tls); null for ws. */
  tls: TlsSetup | null;
  private readonly pending = new Set<WsConn>();
  private boundPort = 0;

  private constructor(
    private readonly server: WsHost,
    private readonly tcp: net.Server,
    readonly opts: WebSocketOptions,
  ) {
    this.allowedOrigins = allowedOriginsMap(opts.allowedOrigins);
    this.tls = opts.tls !== null ? buildTls(opts.tls) : null;
  }

  get port(): number {
    return this.boundPort;
  }

  static async start(server: WsHost, opts: WebSocketOptions): Promise<WsListener> {
    const srv = net.createServer({ noDelay: true, pauseOnConnect: true });
    const l = new WsListener(server, srv, opts);
    srv.on("connection", (raw: net.Socket) => l.accept(raw));
    const port = opts.port < 0 ? 0 : opts.port;
    await new Promise<void>((resolve, reject) => {
      srv.once("error", reject);
      srv.listen({ host: opts.host, port, exclusive: true, backlog: LISTEN_BACKLOG }, () => {
        srv.off("error", reject);
        resolve();
      });
    });
    srv.on("error", (err) => server.log.error(`Websocket listener error: ${err.message}`));
    const addr = srv.address();
    l.boundPort = typeof addr === "object" && addr ? addr.port : port;
    server.log.info(`Listening for websocket clients on ${l.tls !== null ? "wss" : "ws"}://${opts.host}:${l.boundPort}`);
    if (l.tls === null) server.log.warn("Websocket not configured with TLS. DO NOT USE IN PRODUCTION!");
    return l;
  }

  private accept(raw: net.Socket): void {
    if (!this.tcp.listening) {
      raw.destroy();
      return;
    }
    this.pending.add(new WsConn(raw, this.server, this));
  }

  /** conn is past its handshake, or gone. */
  forget(conn: WsConn): void {
    this.pending.delete(conn);
  }

  /** Stops accepting; connections still in their handshake are dropped. */
  close(): void {
    this.tcp.close();
    for (const c of this.pending) c.destroy();
    this.pending.clear();
  }
}
