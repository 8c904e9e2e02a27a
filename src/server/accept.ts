// Taking connections in: a client socket from the listener (plain, or TLS in nats-server's
// three ways: required, allowed beside plaintext, handshake first), a websocket connection
// past its upgrade; max_connections, the TLS connection rate limit, and the sockets not yet
// released (what max_connections counts, and what shutdown waits for).

import type net from "node:net";
import tls from "node:tls";
import { peerIdentities, peerRejection, serverSocketOptions, tlsCipherName, tlsVersionName, type TlsSetup } from "./tls.js";
import { adoptAccepted, setChunkReader } from "../runtime/net.js";
import type { TimerHandle } from "../runtime/clock.js";
import { Client, CloseReason, type ClientHost } from "./client.js";
import type { WsConn } from "./websocket.js";

/** What the acceptor needs of the server (server.ts implements it). */
export interface AcceptHost extends ClientHost {
  /** Not shutting down, not in lame duck mode. */
  readonly accepting: boolean;
  readonly clients: Map<number, Client>;
  readonly tls: TlsSetup | null;
  readonly stats: ClientHost["stats"] & { totalConnections: number };
  allocCid(): number;
}

// The client a socket was registered for, kept on the socket: the socket's listeners are
// shared functions (`this` is the socket) instead of closures made per connection (five
// closures and their contexts were ~450 B of every connection's ~3 KB of heap).
const kClient = Symbol("tsnats.client");

interface ClientSlot {
  [kClient]: Client;
}

function clientOf(s: net.Socket): Client {
  return (s as unknown as ClientSlot)[kClient];
}

function onSocketDrain(this: net.Socket): void {
  clientOf(this).onDrain();
}

/** Sockets whose peer ended are closed this many per turn at most (and within
 *  PEER_END_SLICE_MS): closing one costs ~40 us of Node's stream teardown and the close(2)
 *  (on loopback the peer's side of the teardown runs in it too), and 2,000 clients that
 *  close at once arrive in one read phase, which held the loop for 80 ms. */
const PEER_ENDS_PER_TURN = 64;
const PEER_END_SLICE_MS = 2;

export class Acceptor {
  /** Accepted client sockets not yet closed (the listener no longer counts them). */
  private readonly liveSockets = new Set<net.Socket>();
  private socketsDrained: (() => void) | null = null;
  private tlsRateWindowMs = 0;
  private tlsRateCount = 0;
  /** Sockets whose peer sent EOF, waiting to be closed (closeEnded works them off). */
  private ended: net.Socket[] = [];
  private endedHead = 0;
  private endedScheduled = false;
  private readonly closeEndedBound = (): void => this.closeEnded();
  /** The listeners every registered socket shares (they need this acceptor). */
  private readonly onSocketClose: (this: net.Socket) => void;
  private readonly onSocketEnd: (this: net.Socket) => void;
  private readonly onSocketError: (this: net.Socket, err: Error) => void;

  constructor(private readonly server: AcceptHost) {
    const closed = (s: net.Socket): void => this.socketClosed(s);
    this.onSocketClose = function (this: net.Socket): void {
      closed(this);
    };
    const ended = (s: net.Socket): void => this.peerEnded(s);
    this.onSocketEnd = function (this: net.Socket): void {
      ended(this);
    };
    this.onSocketError = function (this: net.Socket, err: Error): void {
      const c = clientOf(this);
      server.log.debug(`${c.label()} - Client connection error: ${err.message}`);
      c.close(CloseReason.ReadError);
    };
  }

  /** Client sockets not yet released, closed clients' lingering ones included. */
  get socketCount(): number {
    return this.liveSockets.size;
  }

  /** Resolves when every accepted socket has closed. */
  drained(): Promise<void> {
    if (this.liveSockets.size === 0) return Promise.resolve();
    return new Promise<void>((r) => (this.socketsDrained = r));
  }

  accept(raw: net.Socket): void {
    if (!this.server.accepting) {
      raw.destroy();
      return;
    }
    // max_connections 0 in a config file arrives as -1: no limit. Sockets of closed clients
    // that are still being let go count too, so that refused peers cannot pile them up.
    const maxConns = this.server.opts.maxConnections;
    const overLimit = maxConns > 0 && this.liveSockets.size >= maxConns;
    // Over the limit on a TLS port: the refusal goes out in plaintext after INFO, before any
    // handshake, as nats-server checks the limit before TLS.
    if (this.server.tls !== null && !overLimit) {
      this.acceptTls(raw, this.server.tls);
      return;
    }
    const socket = adoptAccepted(raw, null);
    const c = this.register(socket);
    setChunkReader(socket, c);
    socket.on("drain", onSocketDrain);
    socket.on("error", this.onSocketError);
    socket.on("end", this.onSocketEnd);
    c.queueString(`INFO ${this.server.infoJson(c)}\r\n`);
    if (overLimit) {
      // As nats-server: the INFO, then the error, then the close.
      this.server.log.error(`${c.label()} - maximum connections exceeded`);
      c.sendErr("maximum connections exceeded");
      c.close(CloseReason.MaxConnections);
      return;
    }
    this.server.flushDirty();
  }

  /** A new Client over socket, counted and tracked until its socket closes. */
  private register(socket: net.Socket): Client {
    socket.setNoDelay(true);
    const cid = this.server.allocCid();
    const c = new Client(cid, socket, this.server);
    this.server.clients.set(cid, c);
    this.liveSockets.add(socket);
    this.server.stats.totalConnections++;
    if (this.server.log.debugEnabled) this.server.log.debug(`${c.label()} - Client connection created`);
    (socket as unknown as ClientSlot)[kClient] = c;
    socket.on("close", this.onSocketClose);
    return c;
  }

  /** The peer of a plain client socket sent EOF (the listener allows half-open sockets, so
   *  Node left it open): the client is closed on a later turn, a slice of such sockets per
   *  turn, as nats-server closes a connection whose read ends. */
  private peerEnded(socket: net.Socket): void {
    this.ended.push(socket);
    if (!this.endedScheduled) {
      this.endedScheduled = true;
      this.server.sched.nextTurn(this.closeEndedBound);
    }
  }

  private closeEnded(): void {
    this.endedScheduled = false;
    const clock = this.server.clock;
    const t0 = clock.monoMs();
    const q = this.ended;
    let n = 0;
    while (this.endedHead < q.length) {
      const s = q[this.endedHead]!;
      q[this.endedHead++] = undefined as unknown as net.Socket;
      const c = clientOf(s);
      // The client's close lets its socket go (Conn.release: at once when nothing is left to
      // write, else after its last bytes); a socket it no longer uses goes now. A WebSocket
      // client's socket is under its WsConn.
      if (c.socket === s || c.kind === "ws") c.close(CloseReason.ClientClosed);
      else s.destroy();
      if (++n >= PEER_ENDS_PER_TURN || ((n & 15) === 0 && clock.monoMs() - t0 >= PEER_END_SLICE_MS)) break;
    }
    if (this.endedHead < q.length) {
      this.endedScheduled = true;
      this.server.sched.nextTurn(this.closeEndedBound);
    } else {
      this.ended = [];
      this.endedHead = 0;
    }
  }

  private socketClosed(socket: net.Socket): void {
    this.liveSockets.delete(socket);
    clientOf(socket).close(CloseReason.ClientClosed);
    if (this.liveSockets.size === 0 && this.socketsDrained !== null) this.socketsDrained();
  }

  /**
   * A client on a TLS port, as nats-server's createClient does it:
   * - TLS required: INFO in plaintext (tls_required), then the client starts the handshake;
   * - allow_non_tls: INFO says tls_available, and the first byte tells (0x16: a handshake);
   * - handshake_first: the handshake first, INFO over TLS once secure; with a fallback delay,
   *   a client that sends nothing in that time gets the plaintext INFO instead.
   * A client that does not finish the handshake within tls.timeout is closed.
   */
  private acceptTls(raw: net.Socket, t: TlsSetup): void {
    const c = this.register(raw);
    // Until a TLS socket takes the connection over (it ends at its own peer's EOF), and for
    // good on a plaintext connection (allow_non_tls).
    raw.on("end", this.onSocketEnd);
    // connection_rate_limit: new TLS connections per second, refused in plaintext before any
    // handshake work (nats-server's connRateCounter).
    if (t.opts.rateLimit > 0 && !this.tlsRateAllows(t.opts.rateLimit)) {
      raw.on("error", () => undefined);
      c.queueString(`INFO ${this.server.infoJson(c)}\r\n`);
      c.sendErr("Connection throttling is active. Please try again later.");
      c.close(CloseReason.MaxConnections);
      return;
    }
    raw.on("error", (err) => {
      this.server.log.debug(`${c.label()} - Client connection error: ${err.message}`);
      c.close(CloseReason.ReadError);
    });
    const o = this.server.opts;
    const deadline = this.server.clock.setTimer(() => {
      if (c.closed || c.tlsVersion !== "") return;
      this.server.log.error(`${c.label()} - TLS handshake timeout`);
      c.close(CloseReason.TlsHandshakeError);
      raw.destroy();
    }, t.opts.timeoutMs);
    const sendInfo = (tlsRequired: boolean): void => {
      c.queueString(`INFO ${this.server.infoJson(c, false, tlsRequired)}\r\n`);
      this.server.flushDirty();
    };
    const plaintext = (first: Buffer | null): void => {
      this.server.clock.clearTimer(deadline);
      raw.on("data", (chunk: Buffer) => {
        c.onData(chunk);
        this.server.flushDirty();
      });
      if (first !== null) {
        c.onData(first);
        this.server.flushDirty();
      }
      raw.resume();
    };
    // After INFO (or before it, handshake first): wait for the first bytes and decide.
    const sniff = (): void => {
      raw.once("data", (first: Buffer) => {
        raw.pause();
        if (first[0] === 0x16) this.upgradeTls(c, raw, t, first, deadline, null);
        else plaintext(first);
      });
      raw.resume();
    };
    if (t.opts.handshakeFirst) {
      const fallback = t.opts.handshakeFirstFallbackMs;
      if (fallback <= 0) {
        this.upgradeTls(c, raw, t, null, deadline, () => sendInfo(true));
        return;
      }
      const timer = this.server.clock.setTimer(() => {
        raw.removeAllListeners("data");
        raw.pause();
        if (c.closed) return;
        // Nothing came: a client that waits for INFO, as before 2.10.
        sendInfo(!o.allowNonTls);
        if (o.allowNonTls) sniff();
        else this.upgradeTls(c, raw, t, null, deadline, null);
      }, fallback);
      raw.once("data", (first: Buffer) => {
        this.server.clock.clearTimer(timer);
        raw.pause();
        this.upgradeTls(c, raw, t, first, deadline, () => sendInfo(true));
      });
      raw.resume();
      return;
    }
    sendInfo(!o.allowNonTls);
    if (o.allowNonTls) sniff();
    else this.upgradeTls(c, raw, t, null, deadline, null);
  }

  /** One more TLS connection in this second's window, if under limit per second. */
  private tlsRateAllows(limit: number): boolean {
    const now = this.server.nowMs();
    if (now - this.tlsRateWindowMs >= 1000) {
      this.tlsRateWindowMs = now;
      this.tlsRateCount = 0;
    }
    if (this.tlsRateCount >= limit) return false;
    this.tlsRateCount++;
    return true;
  }

  /** Server-side handshake over raw (first: bytes already read from it); then the client
   *  reads and writes through the TLS socket. */
  private upgradeTls(c: Client, raw: net.Socket, t: TlsSetup, first: Buffer | null, deadline: TimerHandle, onSecure: (() => void) | null): void {
    if (c.closed) return;
    if (first !== null) raw.unshift(first);
    // A TLS socket takes allowHalfOpen from the socket it wraps: off, so that it ends and
    // closes at its peer's EOF as before (peerEnded paces only plain sockets).
    raw.allowHalfOpen = false;
    const ts = new tls.TLSSocket(raw, serverSocketOptions(t));
    c.socket = ts;
    ts.on("error", (err) => {
      if (c.tlsVersion === "") this.server.log.error(`${c.label()} - TLS handshake error: ${err.message}`);
      else this.server.log.debug(`${c.label()} - Client connection error: ${err.message}`);
      c.close(c.tlsVersion === "" ? CloseReason.TlsHandshakeError : CloseReason.ReadError);
      raw.destroy();
    });
    ts.on("secure", () => {
      this.server.clock.clearTimer(deadline);
      if (c.closed) return;
      const bad = peerRejection(ts, t.opts, t.opts.verify);
      if (bad !== null) {
        this.server.log.error(`${c.label()} - TLS handshake error: ${bad}`);
        c.close(CloseReason.TlsHandshakeError);
        ts.destroy();
        return;
      }
      c.tlsVersion = tlsVersionName(ts);
      c.tlsCipher = tlsCipherName(ts);
      if (t.opts.verifyAndMap) c.certIdentities = peerIdentities(ts);
      this.server.log.debug(`${c.label()} - TLS handshake complete`);
      this.server.log.debug(`${c.label()} - TLS version ${c.tlsVersion}, cipher suite ${c.tlsCipher}`);
      ts.on("drain", () => c.onDrain());
      // One TCP read can hold several TLS records, each a 'data' event in the same turn:
      // the writes they cause are flushed once, on setImmediate (markDirty schedules it).
      ts.on("data", (chunk: Buffer) => c.onData(chunk));
      if (onSecure !== null) onSecure();
    });
  }

  acceptWebSocket(conn: WsConn): Client | null {
    if (!this.server.accepting) {
      conn.destroy();
      return null;
    }
    const maxConns = this.server.opts.maxConnections;
    if (maxConns > 0 && this.server.clients.size >= maxConns) {
      conn.refuse("-ERR 'maximum connections exceeded'\r\n", 1008, CloseReason.MaxConnections);
      this.server.log.warn("Maximum connections exceeded");
      return null;
    }
    const cid = this.server.allocCid();
    const c = new Client(cid, conn, this.server, "ws");
    c.tlsVersion = conn.tlsVersion;
    c.tlsCipher = conn.tlsCipher;
    c.certIdentities = conn.certIdentities;
    this.server.clients.set(cid, c);
    const socket = conn.socket;
    this.liveSockets.add(socket);
    if (socket.allowHalfOpen) {
      // ws (wss sockets are not half-open): the peer's EOF closes the client a slice per
      // turn, as on the client port.
      (socket as unknown as ClientSlot)[kClient] = c;
      socket.on("end", this.onSocketEnd);
    }
    this.server.stats.totalConnections++;
    this.server.log.debug(`${c.label()} - Client connection created`);
    conn.on("drain", () => c.onDrain());
    conn.on("error", (err: Error) => {
      this.server.log.debug(`${c.label()} - Client connection error: ${err.message}`);
      c.close(CloseReason.ReadError);
    });
    conn.on("close", () => {
      this.liveSockets.delete(socket);
      c.close(CloseReason.ClientClosed);
      if (this.liveSockets.size === 0 && this.socketsDrained !== null) this.socketsDrained();
    });
    c.queueString(`INFO ${this.server.infoJson(c)}\r\n`);
    this.server.flushDirty();
    return c;
  }
}
