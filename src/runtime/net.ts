// Client sockets that read into one shared buffer instead of a new one per read.
//
// A plain net.Socket gets a fresh 64 KiB ArrayBuffer from Node for every read: at a few
// GB/s that is tens of thousands of allocations a second for the GC to reclaim, and the
// kernel copies into cold memory each time. Node can read into a caller's buffer instead
// (the `onread` option), but only for sockets it constructs: so the listener pauses each
// accepted socket and its handle is moved into a new Socket that has `onread`. That relies on
// the `handle` constructor option, which is how net.Server itself builds accepted sockets
// (undocumented, stable since Node 12; checked by the e2e suites on every run).
//
// Every adopted socket reads into the same buffer: reads run one at a time on the event
// loop, and `onChunk` must be done with the bytes when it returns (copy what you keep).

import net from "node:net";
import { readFileSync } from "node:fs";

/**
 * The accept queue length to listen with: the kernel's limit (net.core.somaxconn), as Go's
 * net.Listen uses (nats-server's listeners get it that way). Node's default is 511: a burst
 * of connections beyond what the queue holds overflows it, the kernel drops the handshakes'
 * last ACKs (ListenOverflows), and those clients wait for a SYN-ACK retransmit, 1 s and
 * then 2, 4, ... later: 2,000 connections opened at once took 3 s instead of 0.1 s.
 */
export const LISTEN_BACKLOG: number = (() => {
  try {
    const n = Number(readFileSync("/proc/sys/net/core/somaxconn", "utf8").trim());
    // listen(2) clamps larger values to somaxconn anyway; 65535 is what the kernel caps it at.
    if (Number.isInteger(n) && n > 0) return Math.min(n, 65535);
  } catch {
    /* not Linux: the value Go falls back to */
  }
  return 4096;
})();

const READ_BUFFER_BYTES = 64 * 1024;
const shared = Buffer.allocUnsafeSlow(READ_BUFFER_BYTES);

/** True for views of the shared read buffer: they must be copied to be kept. */
export function inReadBuffer(b: Uint8Array): boolean {
  return b.buffer === shared.buffer;
}

interface HandleCarrier {
  _handle: unknown;
}

/** The handle method the user-buffer read path needs (StreamBase::UseUserBuffer). */
interface UserBufferHandle {
  useUserBuffer(buf: Uint8Array): void;
}

/** The symbols a Socket constructed with `onread` keeps its buffer and callback under
 *  (lib/net.js kBuffer, kBufferCb), found once on a probe socket; null when this Node does
 *  not have them. */
const onreadSymbols: { buffer: symbol; callback: symbol } | null = (() => {
  try {
    const probe = new net.Socket({ onread: { buffer: Buffer.alloc(1), callback: () => true } } as net.SocketConstructorOpts);
    const syms = Object.getOwnPropertySymbols(probe);
    const buffer = syms.find((y) => y.description === "kBuffer");
    const callback = syms.find((y) => y.description === "kBufferCb");
    probe.destroy();
    return buffer !== undefined && callback !== undefined ? { buffer, callback } : null;
  } catch {
    return null;
  }
})();

/** Where an adopted socket's reads go: kept on the socket under a symbol, so that every
 *  socket shares one read callback (`this` is the socket) instead of a closure and its
 *  context per connection. The bytes are only valid during the call. */
export interface ChunkReader {
  onRead(chunk: Buffer): void;
}

const kReader = Symbol("tsnats.chunkReader");

interface ReaderSlot {
  [kReader]?: ChunkReader;
}

/** The reads of socket (adopted, or about to be) go to reader from now on. */
export function setChunkReader(socket: net.Socket, reader: ChunkReader): void {
  (socket as unknown as ReaderSlot)[kReader] = reader;
}

// Node calls the onread callback as a method of the socket (stream[kBufferCb](n, buf)), and
// 'data' listeners with the socket as `this`.
function userBufferRead(this: ReaderSlot, n: number, buf: Uint8Array): boolean {
  this[kReader]?.onRead((buf as Buffer).subarray(0, n));
  return true;
}

function dataRead(this: ReaderSlot, chunk: Buffer): void {
  this[kReader]?.onRead(chunk);
}

/**
 * Take over a socket accepted with pauseOnConnect: true. The returned socket emits no
 * 'data' events; every read goes to reader.onRead (null: the reader is set with
 * setChunkReader before the turn ends, once the caller has made it around the socket).
 *
 * The accepted socket itself is given what the `onread` option would have set (the shared
 * buffer and the callback, under the symbols found on a probe socket) and its handle reads
 * into the shared buffer: no second Socket per connection (a whole Socket made and destroyed
 * per accept was a tenth of the accept path's CPU, and its garbage). Without those symbols
 * the handle is moved into a new Socket constructed with `onread`; without a handle that
 * can read into a user buffer, plain 'data' events.
 */
export function adoptAccepted(raw: net.Socket, reader: ChunkReader | null): net.Socket {
  const carrier = raw as unknown as HandleCarrier;
  const handle = carrier._handle;
  if (handle === null || handle === undefined || typeof (handle as { useUserBuffer?: unknown }).useUserBuffer !== "function") {
    if (reader !== null) setChunkReader(raw, reader);
    raw.on("data", dataRead);
    raw.resume();
    return raw;
  }
  if (onreadSymbols !== null) {
    const slots = raw as unknown as Record<symbol, unknown>;
    slots[onreadSymbols.buffer] = shared;
    slots[onreadSymbols.callback] = userBufferRead;
    if (reader !== null) setChunkReader(raw, reader);
    (handle as UserBufferHandle).useUserBuffer(shared);
    raw.resume();
    return raw;
  }
  carrier._handle = null;
  const opts = {
    handle,
    readable: true,
    writable: true,
    onread: { buffer: shared, callback: userBufferRead },
  };
  const socket = new net.Socket(opts as net.SocketConstructorOpts);
  if (reader !== null) setChunkReader(socket, reader);
  // The old socket no longer owns the handle: destroying it only releases the listener's
  // connection count.
  raw.destroy();
  return socket;
}
