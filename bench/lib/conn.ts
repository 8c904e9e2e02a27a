// A raw NATS client connection for load generation. It is deliberately not the official
// client: the load generator must cost far less than the server under test, so publishing
// writes pre-encoded frames in big chunks and the subscriber side only scans control lines.
//
// Two receive modes:
// - "count": MSG/HMSG frames are counted; the payload is skipped by its size without being
//   looked at, even when it spans several reads.
// - "detail": each frame is split into subject / sid / reply / header / payload views and
//   handed to the handler registered for its sid.
//
// Three transports, all ending in one Duplex the parser reads: plain TCP; TLS (INFO read in
// plaintext on the TCP socket, then the socket upgraded with node:tls); WebSocket (ws.ts: an
// HTTP upgrade, then each write one binary frame, the server's frame payloads read as a stream).

import net from "node:net";
import type { Duplex } from "node:stream";
import tls from "node:tls";
import { wsUpgrade } from "./ws.js";

const LF = 0x0a;
const SPACE = 0x20;
const CH_M = 0x4d;
const CH_H = 0x48;
const CH_P = 0x50;
const CH_I = 0x49;
const CH_MINUS = 0x2d;

const CONNECT_JSON =
  '{"verbose":false,"pedantic":false,"headers":true,"no_responders":true,"protocol":1}';

export type MsgHandler = (
  subject: Buffer,
  reply: Buffer | null,
  hdr: Buffer | null,
  payload: Buffer,
) => void;

export type ConnMode = "count" | "detail";

export type Transport =
  | { kind: "tcp" }
  /** Upgrade to TLS after the plaintext INFO, checking the name `servername`. `context` is made
   *  once (tls.createSecureContext({ ca })): making one per connection costs the generator
   *  ~0.5 ms, as much as the server's side of a handshake. */
  | { kind: "tls"; context: tls.SecureContext; servername: string }
  /** A WebSocket to ws://<host>:<port>/ (the websocket listener's port), no extensions. */
  | { kind: "ws"; port: number };

export const TCP: Transport = { kind: "tcp" };

export interface ConnectOptions {
  port: number;
  host: string;
  mode: ConnMode;
  handshakeTimeoutMs: number;
  /** Plain TCP when left out. For "ws" the transport names the port (`port` is not used). */
  transport?: Transport;
}

export class ConnClosedError extends Error {
  readonly code = "CONN_CLOSED";
}

const OUT_INITIAL_BYTES = 64 * 1024;

export class RawConn {
  /** A net.Socket, a tls.TLSSocket or a WebSocket stream. */
  readonly socket: Duplex;
  readonly mode: ConnMode;
  /** MSG + HMSG frames received. */
  received = 0;
  /** Payload bytes (headers included) of received frames. */
  receivedBytes = 0;
  /** -ERR lines seen, in order. */
  readonly errors: string[] = [];
  closed = false;
  /** Called once after every socket read has been parsed (and queued output flushed). */
  onProgress: (() => void) | null = null;

  private readonly handlers = new Map<number, MsgHandler>();
  private partial: Buffer | null = null;
  private skipBytes = 0;
  private readonly pongWaiters: Array<{ resolve: () => void; reject: (e: Error) => void }> = [];
  private readonly drainWaiters: Array<{ resolve: () => void; reject: (e: Error) => void }> = [];
  private readonly infoWaiters: Array<() => void> = [];
  private infoSeen = false;
  private out: Buffer = Buffer.allocUnsafe(OUT_INITIAL_BYTES);
  private outLen = 0;
  private nextSid = 1;
  // Token boundaries of the current control line, reused to avoid allocation per frame.
  private readonly tok: number[] = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];

  private constructor(socket: Duplex, mode: ConnMode, infoSeen: boolean) {
    this.socket = socket;
    this.mode = mode;
    this.infoSeen = infoSeen;
    socket.on("data", (chunk: Buffer) => this.onData(chunk));
    socket.on("drain", () => {
      const ws = this.drainWaiters.splice(0);
      for (const w of ws) w.resolve();
    });
    socket.on("error", () => {
      /* surfaced through close */
    });
    socket.on("close", () => this.onClose());
  }

  static async connect(o: ConnectOptions): Promise<RawConn> {
    const transport = o.transport ?? TCP;
    let socket: Duplex | null = null;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`handshake timeout after ${o.handshakeTimeoutMs} ms`)), o.handshakeTimeoutMs);
    });
    let conn: RawConn;
    try {
      switch (transport.kind) {
        case "tcp": {
          const tcp = net.connect({ port: o.port, host: o.host });
          tcp.setNoDelay(true);
          socket = tcp;
          conn = new RawConn(tcp, o.mode, false);
          await Promise.race([conn.waitInfo(), timeout]);
          break;
        }
        case "tls": {
          // The server sends INFO (tls_required) in plaintext and waits for the ClientHello.
          const tcp = net.connect({ port: o.port, host: o.host });
          tcp.setNoDelay(true);
          socket = tcp;
          const info = await Promise.race([readInfoLine(tcp), timeout]);
          if (!info.includes('"tls_required":true')) throw new Error(`server did not ask for TLS: ${info.slice(0, 120)}`);
          const secure = tls.connect({ socket: tcp, secureContext: transport.context, servername: transport.servername });
          socket = secure;
          conn = new RawConn(secure, o.mode, true);
          await Promise.race([secureConnected(secure), timeout]);
          break;
        }
        case "ws": {
          const tcp = net.connect({ port: transport.port, host: o.host });
          tcp.setNoDelay(true);
          socket = tcp;
          const ws = await Promise.race([wsUpgrade(tcp, o.host, transport.port), timeout]);
          socket = ws;
          conn = new RawConn(ws, o.mode, false);
          await Promise.race([conn.waitInfo(), timeout]);
          break;
        }
      }
      socket.write(`CONNECT ${CONNECT_JSON}\r\nPING\r\n`);
      await Promise.race([conn.waitPong(), timeout]);
    } catch (e) {
      socket?.destroy();
      throw e;
    } finally {
      clearTimeout(timer);
    }
    if (conn.errors.length > 0) {
      socket.destroy();
      throw new Error(`server refused connection: ${conn.errors[0]}`);
    }
    return conn;
  }

  /** Subscribe; the handler is used only in detail mode. Returns the sid. */
  sub(subject: string, handler: MsgHandler | null = null, queue = ""): number {
    const sid = this.nextSid++;
    if (handler !== null) this.handlers.set(sid, handler);
    this.queueAscii(queue === "" ? `SUB ${subject} ${sid}\r\n` : `SUB ${subject} ${queue} ${sid}\r\n`);
    return sid;
  }

  unsub(sid: number): void {
    this.handlers.delete(sid);
    this.queueAscii(`UNSUB ${sid}\r\n`);
  }

  /** Append ASCII protocol text to the gather buffer; sent by flush(). */
  queueAscii(s: string): void {
    this.ensureOut(s.length);
    this.outLen += this.out.write(s, this.outLen, "latin1");
  }

  queueBytes(b: Buffer): void {
    this.ensureOut(b.length);
    this.outLen += b.copy(this.out, this.outLen);
  }

  /** Queue `PUB subject [reply] len\r\npayload\r\n`. */
  queuePub(subject: string | Buffer, reply: string | Buffer | null, payload: Buffer): void {
    const sl = typeof subject === "string" ? subject.length : subject.length;
    const rl = reply === null ? 0 : reply.length;
    this.ensureOut(sl + rl + payload.length + 32);
    const o = this.out;
    let n = this.outLen;
    n += o.write("PUB ", n, "latin1");
    n += typeof subject === "string" ? o.write(subject, n, "latin1") : subject.copy(o, n);
    o[n++] = SPACE;
    if (reply !== null) {
      n += typeof reply === "string" ? o.write(reply, n, "latin1") : reply.copy(o, n);
      o[n++] = SPACE;
    }
    n += o.write(`${payload.length}\r\n`, n, "latin1");
    n += payload.copy(o, n);
    o[n++] = 0x0d;
    o[n++] = LF;
    this.outLen = n;
  }

  /** Send everything queued. Returns false when the socket asked us to wait for drain. */
  flush(): boolean {
    if (this.outLen === 0 || this.closed) return true;
    const b = Buffer.from(this.out.subarray(0, this.outLen));
    this.outLen = 0;
    return this.socket.write(b);
  }

  /** Write a buffer that the caller will not modify afterwards (may be written many times). */
  write(b: Buffer): boolean {
    if (this.closed) throw new ConnClosedError("connection closed");
    return this.socket.write(b);
  }

  waitDrain(): Promise<void> {
    if (this.closed) return Promise.reject(new ConnClosedError("connection closed"));
    if (!this.socket.writableNeedDrain) return Promise.resolve();
    return new Promise((resolve, reject) => this.drainWaiters.push({ resolve, reject }));
  }

  /** PING and wait for the PONG: the server has processed everything sent before it. */
  async ping(timeoutMs = 60_000): Promise<void> {
    this.queueAscii("PING\r\n");
    this.flush();
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        this.waitPong(),
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new Error(`no PONG within ${timeoutMs} ms`)), timeoutMs);
        }),
      ]);
    } finally {
      clearTimeout(timer);
    }
  }

  close(): void {
    if (!this.closed) this.socket.destroy();
  }

  private waitInfo(): Promise<void> {
    if (this.infoSeen) return Promise.resolve();
    return new Promise((resolve) => this.infoWaiters.push(resolve));
  }

  private waitPong(): Promise<void> {
    if (this.closed) return Promise.reject(new ConnClosedError("connection closed"));
    return new Promise((resolve, reject) => this.pongWaiters.push({ resolve, reject }));
  }

  private ensureOut(extra: number): void {
    if (this.outLen + extra <= this.out.length) return;
    let size = this.out.length * 2;
    while (size < this.outLen + extra) size *= 2;
    const bigger = Buffer.allocUnsafe(size);
    this.out.copy(bigger, 0, 0, this.outLen);
    this.out = bigger;
  }

  private onClose(): void {
    this.closed = true;
    const err = new ConnClosedError(
      this.errors.length > 0 ? `connection closed: ${this.errors[this.errors.length - 1]}` : "connection closed",
    );
    for (const w of this.pongWaiters.splice(0)) w.reject(err);
    for (const w of this.drainWaiters.splice(0)) w.reject(err);
    this.onProgress?.();
  }

  private onData(chunk: Buffer): void {
    let buf = chunk;
    let i = 0;
    if (this.skipBytes > 0) {
      if (chunk.length <= this.skipBytes) {
        this.skipBytes -= chunk.length;
        this.afterData();
        return;
      }
      i = this.skipBytes;
      this.skipBytes = 0;
    }
    if (this.partial !== null) {
      buf = Buffer.concat([this.partial, i > 0 ? chunk.subarray(i) : chunk]);
      i = 0;
      this.partial = null;
    }
    const n = buf.length;
    const detail = this.mode === "detail";
    while (i < n) {
      const lf = buf.indexOf(LF, i);
      if (lf < 0) {
        this.partial = buf.subarray(i);
        break;
      }
      const c = buf[i];
      if (c === CH_M || c === CH_H) {
        // The last token of MSG and HMSG is the total size (headers + payload).
        let p = lf - 2;
        let size = 0;
        let mul = 1;
        while (p > i && buf[p] !== SPACE) {
          size += (buf[p]! - 48) * mul;
          mul *= 10;
          p--;
        }
        const payloadStart = lf + 1;
        const end = payloadStart + size + 2;
        if (!detail) {
          this.received++;
          this.receivedBytes += size;
          if (end > n) {
            this.skipBytes = end - n;
            i = n;
            break;
          }
          i = end;
          continue;
        }
        if (end > n) {
          this.partial = buf.subarray(i);
          break;
        }
        this.received++;
        this.receivedBytes += size;
        this.dispatch(buf, i, lf - 1, payloadStart, size, c === CH_H);
        i = end;
      } else if (c === CH_P) {
        if (buf[i + 1] === CH_I) {
          this.queueAscii("PONG\r\n");
        } else {
          const w = this.pongWaiters.shift();
          w?.resolve();
        }
        i = lf + 1;
      } else if (c === CH_MINUS) {
        this.errors.push(buf.toString("latin1", i, lf - 1));
        i = lf + 1;
      } else {
        if (c === CH_I && !this.infoSeen) {
          this.infoSeen = true;
          for (const w of this.infoWaiters.splice(0)) w();
        }
        i = lf + 1; // INFO, +OK
      }
    }
    this.afterData();
  }

  private afterData(): void {
    this.flush();
    this.onProgress?.();
  }

  private dispatch(buf: Buffer, start: number, eol: number, ps: number, size: number, hasHdr: boolean): void {
    const t = this.tok;
    let count = 0;
    let j = start;
    while (j < eol && count < 8) {
      while (j < eol && buf[j] === SPACE) j++;
      if (j >= eol) break;
      t[count * 2] = j;
      while (j < eol && buf[j] !== SPACE) j++;
      t[count * 2 + 1] = j;
      count++;
    }
    let sid = 0;
    for (let k = t[4]!; k < t[5]!; k++) sid = sid * 10 + (buf[k]! - 48);
    const handler = this.handlers.get(sid);
    if (handler === undefined) return;
    const subject = buf.subarray(t[2]!, t[3]!);
    let reply: Buffer | null = null;
    let hdrLen = 0;
    if (hasHdr) {
      if (count === 6) reply = buf.subarray(t[6]!, t[7]!);
      const hi = (count - 2) * 2;
      for (let k = t[hi]!; k < t[hi + 1]!; k++) hdrLen = hdrLen * 10 + (buf[k]! - 48);
    } else if (count === 5) {
      reply = buf.subarray(t[6]!, t[7]!);
    }
    const hdr = hasHdr ? buf.subarray(ps, ps + hdrLen) : null;
    handler(subject, reply, hdr, buf.subarray(ps + hdrLen, ps + size));
  }
}

/** Read the first line (INFO) off a fresh TCP socket, leaving nothing unread behind it. */
function readInfoLine(socket: net.Socket): Promise<string> {
  return new Promise((resolve, reject) => {
    let buf = "";
    const done = (err: Error | null): void => {
      socket.off("data", onData);
      socket.off("error", onError);
      socket.off("close", onClose);
      if (err !== null) reject(err);
      else resolve(buf);
    };
    const onData = (d: Buffer): void => {
      buf += d.toString("latin1");
      const lf = buf.indexOf("\n");
      if (lf < 0) return;
      if (lf !== buf.length - 1) return done(new Error("bytes after INFO before the TLS handshake"));
      done(null);
    };
    const onError = (e: Error): void => done(e);
    const onClose = (): void => done(new Error("connection closed before INFO"));
    socket.on("data", onData);
    socket.on("error", onError);
    socket.on("close", onClose);
  });
}

function secureConnected(socket: tls.TLSSocket): Promise<void> {
  return new Promise((resolve, reject) => {
    const done = (err: Error | null): void => {
      socket.off("secureConnect", onSecure);
      socket.off("error", onError);
      socket.off("close", onClose);
      if (err !== null) reject(err);
      else resolve();
    };
    const onSecure = (): void => done(null);
    const onError = (e: Error): void => done(new Error(`TLS handshake: ${e.message}`));
    const onClose = (): void => done(new Error("connection closed during the TLS handshake"));
    socket.on("secureConnect", onSecure);
    socket.on("error", onError);
    socket.on("close", onClose);
  });
}

/** Parse the decimal number after the last '.' of a subject view (our per-request inbox token). */
export function lastTokenNumber(subject: Buffer): number {
  let v = 0;
  let mul = 1;
  for (let k = subject.length - 1; k >= 0; k--) {
    const c = subject[k]!;
    if (c === 0x2e) break;
    v += (c - 48) * mul;
    mul *= 10;
  }
  return v;
}

/** A header block's status code ("NATS/1.0 408 ..." -> 408), 0 when there is none. */
export function statusCode(hdr: Buffer | null): number {
  if (hdr === null || hdr.length < 12) return 0;
  // "NATS/1.0" is 8 bytes; a status follows after one space.
  if (hdr[8] !== SPACE) return 0;
  const a = hdr[9]! - 48;
  const b = hdr[10]! - 48;
  const c = hdr[11]! - 48;
  if (a < 0 || a > 9 || b < 0 || b > 9 || c < 0 || c > 9) return 0;
  return a * 100 + b * 10 + c;
}
