// The outbound half every connection shares (a client's, a websocket client's, a route's):
// one growable buffer that deliveries are encoded into, a dirty flag so that a read's worth
// of messages becomes one socket write when the owner flushes, the idle-buffer release, the
// write-blocked clock for write_deadline, and the close that pushes out what is buffered and
// lets the socket go. Client (client.ts) and Route (src/cluster/route.ts) extend it.

import type { Clock } from "../runtime/clock.js";

/** What a connection writes to: a net.Socket, a tls.TLSSocket, or a WebSocket adapter
 *  (src/server/websocket.ts) that frames what is written. */
export interface ConnSocket {
  write(data: Buffer | string): boolean;
  /** cb (when the transport has one): everything written has been handed to the peer. */
  end(cb?: () => void): void;
  destroy(): void;
  /** Stop reading (a closed connection takes no more input, a yielded parser waits for a
   *  later turn); optional for adapters. */
  pause?(): void;
  /** Read again after pause() (a yielded parser is done). */
  resume?(): void;
  readonly writableLength: number;
  readonly destroyed: boolean;
  /** The peer's EOF has been read (a net.Socket's readableEnded); optional for adapters. */
  readonly readableEnded?: boolean;
  readonly remoteAddress?: string | undefined;
  readonly remotePort?: number | undefined;
}

/** A connection with no outbound buffer yet. */
export const NO_OUT = Buffer.alloc(0);
// A socket that kept the last buffer (backpressure) is given a new one of at least this.
const INITIAL_OUT_BYTES = 32 * 1024;
// A buffer handed to a socket that could not take it at once is replaced by one of at most
// this size (a burst that grew the buffer need not pin that much per connection).
const MAX_REALLOC_OUT_BYTES = 1024 * 1024;
/** A closed connection's socket is destroyed at the latest this long after close(). */
export const CLOSE_LINGER_MS = 1000;
/** After our last bytes and FIN are out, a socket whose peer has not ended is kept (paused)
 *  this long before it is destroyed: destroying it with the peer's bytes unread sends a RST,
 *  and a RST that reaches the peer before it has read the -ERR makes its kernel drop it. */
export const CLOSE_AFTER_FIN_MS = 50;

export abstract class Conn {
  // outbound: none until something is queued; the first buffer is firstOutBytes, doubled as
  // needed.
  protected out: Buffer = NO_OUT;
  protected outLen = 0;
  /** Set by flush(), cleared by releaseIdleBuffer(): bytes went out since the last tick. */
  private outUsed = false;
  dirty = false;
  /** When a write last found the socket full (0: it is not); write_deadline counts from it. */
  writeBlockedSinceMs = 0;
  closed = false;

  constructor(
    public socket: ConnSocket,
    private readonly firstOutBytes: number,
  ) {}

  /** The owner's clock (the server's Clock). */
  protected abstract nowMs(): number;
  /** Put this connection on its owner's dirty list (flushDirty/flushRoutes calls flush()). */
  protected abstract scheduleFlush(): void;
  /** Whether what flush() writes is traced, and how. */
  protected abstract tracingOut(): boolean;
  protected abstract traceOut(chunk: Buffer): void;

  /** Pending outbound bytes: our buffer plus what the socket still holds. */
  pendingBytes(): number {
    return this.outLen + this.socket.writableLength;
  }

  /** Room for need more bytes at outLen. */
  protected grow(need: number): void {
    let cap = this.out.length === 0 ? this.firstOutBytes : this.out.length * 2;
    while (cap < this.outLen + need) cap *= 2;
    const next = Buffer.allocUnsafe(cap);
    this.out.copy(next, 0, 0, this.outLen);
    this.out = next;
  }

  queueRaw(b: Buffer): void {
    if (this.closed) return;
    if (this.outLen + b.length > this.out.length) this.grow(b.length);
    b.copy(this.out, this.outLen);
    this.outLen += b.length;
    this.markDirty();
  }

  /** Encoded straight into the outbound buffer (no Buffer made for it: two per accepted
   *  connection, its INFOs). */
  queueString(s: string): void {
    if (this.closed) return;
    const n = Buffer.byteLength(s, "utf8");
    if (this.outLen + n > this.out.length) this.grow(n);
    this.outLen += this.out.write(s, this.outLen, "utf8");
    this.markDirty();
  }

  protected markDirty(): void {
    if (!this.dirty) {
      this.dirty = true;
      this.scheduleFlush();
    }
  }

  /** Hand the buffered bytes to the socket. Called by the owner's flush. */
  flush(): void {
    this.dirty = false;
    if (this.closed || this.outLen === 0) return;
    const chunk = this.out.subarray(0, this.outLen);
    this.outLen = 0;
    this.outUsed = true;
    if (this.tracingOut()) this.traceOut(chunk);
    const socket = this.socket;
    const ok = socket.write(chunk);
    // Nothing left in the socket means the kernel took the bytes during write(): the buffer
    // is ours again. Otherwise the socket holds on to it and we continue in a new one.
    if (socket.writableLength !== 0) this.out = Buffer.allocUnsafe(Math.max(INITIAL_OUT_BYTES, Math.min(this.out.length, MAX_REALLOC_OUT_BYTES)));
    if (!ok && this.writeBlockedSinceMs === 0) this.writeBlockedSinceMs = this.nowMs();
  }

  /** The owner's timer, once per tick: a connection that sent nothing since the last call
   *  lets its outbound buffer go (the next queued bytes allocate a small one again). */
  releaseIdleBuffer(): void {
    if (this.outUsed) this.outUsed = false;
    else if (this.outLen === 0 && this.out !== NO_OUT) this.out = NO_OUT;
  }

  onDrain(): void {
    this.writeBlockedSinceMs = 0;
  }

  /** Drop what is buffered and write text straight to the socket, past the outbound bound
   *  (the best-effort -ERR of a slow consumer). */
  protected writeBypassing(text: string): void {
    this.outLen = 0;
    try {
      this.socket.write(text);
    } catch {
      /* socket already broken */
    }
  }

  /** On close: push out what is buffered (an -ERR, a PONG) and drop the buffer. */
  protected writeRemaining(): void {
    if (this.outLen > 0 && !this.socket.destroyed) this.socket.write(this.out.subarray(0, this.outLen));
    this.outLen = 0;
    this.out = NO_OUT;
  }

  /** On close: read nothing more and let the socket go CLOSE_AFTER_FIN_MS after its last
   *  bytes are out (the peer reads them before the reset), at the latest after
   *  CLOSE_LINGER_MS (a peer that never reads). */
  protected release(clock: Clock): void {
    const s = this.socket;
    if (s.destroyed) return;
    // The peer has gone and the kernel took every byte: nothing to wait for.
    if (s.readableEnded === true && s.writableLength === 0) {
      s.destroy();
      return;
    }
    s.pause?.();
    s.end(() => {
      if (s.destroyed) return;
      if (s.readableEnded === true) s.destroy();
      else clock.setTimer(() => s.destroy(), CLOSE_AFTER_FIN_MS, true);
    });
    clock.setTimer(() => s.destroy(), CLOSE_LINGER_MS);
  }
}

/** Where a routed message came from (Router.routeRange enforces the one-hop rule with it). */
export const Origin = {
  /** An internal publisher (JetStream): no connection. */
  Internal: 0,
  Client: 1,
  Route: 2,
} as const;
export type OriginKind = (typeof Origin)[keyof typeof Origin];
