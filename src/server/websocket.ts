// WebSocket clients, as nats-server's websocket listener: an HTTP/1.1 upgrade (RFC 6455
// section 4), then the NATS protocol carried in frames, with permessage-deflate (RFC 7692)
// when configured and offered by the client.
//
// The pieces:
//   ws-frame.ts     WsFrameDecoder (frames in, payload bytes out, unmasked in place in the
//                   shared read buffer), frameHeader, closePayload: the codec.
//   ws-upgrade.ts   the opening handshake (answerUpgrade), origin and options checks.
//   WsConn          the ClientConn a Client talks to: each write() becomes one binary frame
//                   (the header and the bytes go out in one writev), end() sends the close
//                   frame nats-server would send for the close reason. Before the upgrade it
//                   reads the HTTP request.
//   WsListener      the TCP listener; it hands upgraded connections to Server.acceptWebSocket.

import net from "node:net";
import { EventEmitter } from "node:events";
import { isUtf8 } from "node:buffer";
import zlib from "node:zlib";
import tls from "node:tls";
import { adoptAccepted, LISTEN_BACKLOG } from "../runtime/net.js";
import { buildTls, peerIdentities, peerRejection, serverSocketOptions, tlsCipherName, tlsVersionName, type TlsSetup } from "./tls.js";
import { CloseReason, type Client, type ClientConn } from "./client.js";
import { CLOSE_LINGER_MS } from "./conn.js";
import type { Logger } from "../runtime/log.js";
import type { Clock, TimerHandle } from "../runtime/clock.js";
import type { ServerOptions, WebSocketOptions } from "./options.js";
import {
  CLOSE_ABNORMAL,
  CLOSE_GOING_AWAY,
  CLOSE_INTERNAL_ERROR,
  CLOSE_INVALID_PAYLOAD,
  CLOSE_MESSAGE_TOO_BIG,
  CLOSE_NO_STATUS,
  CLOSE_NORMAL,
  CLOSE_POLICY_VIOLATION,
  CLOSE_PROTOCOL_ERROR,
  closePayload,
  frameHeader,
  OP_BINARY,
  OP_CLOSE,
  OP_PING,
  OP_PONG,
  WsFrameDecoder,
  type WsSink,
} from "./ws-frame.js";
import { allowedOriginsMap, answerUpgrade, httpError, MAX_REQUEST_BYTES, type AllowedOrigin } from "./ws-upgrade.js";

/** What the websocket side needs of the server (server.ts implements it). */
export interface WsHost {
  readonly log: Logger;
  readonly opts: ServerOptions;
  readonly clock: Clock;
  flushDirty(): void;
  /** A connection past its upgrade becomes a Client; null when refused. */
  acceptWebSocket(conn: WsConn): Client | null;
}

/** nats-server does not compress smaller writes. */
const COMPRESS_THRESHOLD = 64;

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
    if (t === null) {
      this.socket = adoptAccepted(raw, this);
      // The listener allows half-open sockets (a client's EOF is paced by the acceptor once
      // it is a Client): one that ends during its handshake is let go after what we wrote.
      this.socket.on("end", () => {
        if (this.client === null) this.socket.end();
      });
    } else {
      // A TLS socket takes allowHalfOpen from the socket it wraps: off, so that it ends and
      // closes at its peer's EOF (only plain sockets are paced).
      raw.allowHalfOpen = false;
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
  get readableEnded(): boolean {
    return this.socket.readableEnded;
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

  /** A read of the plain socket (ChunkReader: adoptAccepted). */
  onRead(chunk: Buffer): void {
    this.onChunk(chunk);
  }

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

  /** The answer to the upgrade request (ws-upgrade.ts); past it, frames. */
  private upgrade(text: string): void {
    const w = this.server.opts.websocket!;
    const a = answerUpgrade(text, w, this.listener.allowedOrigins);
    if (!a.ok) return this.handshakeError(a.status, a.reason);
    this.compress = a.compress;
    this.socket.write(a.response);
    if (this.timer !== null) this.server.clock.clearTimer(this.timer);
    this.timer = null;
    const o = this.server.opts;
    const maxMessage = Math.max(8 * 1024 * 1024, 2 * o.maxPayloadBytes + o.maxControlLineBytes);
    this.decoder = new WsFrameDecoder(this, !a.noMasking, this.compress, maxMessage);
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
    // Half-open: 2,000 clients that close at once are not all torn down in the read phase
    // that brings their EOFs (Acceptor.peerEnded closes them a slice per turn).
    const srv = net.createServer({ noDelay: true, pauseOnConnect: true, allowHalfOpen: true });
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