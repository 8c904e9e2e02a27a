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

const READ_BUFFER_BYTES = 64 * 1024;
const shared = Buffer.allocUnsafeSlow(READ_BUFFER_BYTES);

/** True for views of the shared read buffer: they must be copied to be kept. */
export function inReadBuffer(b: Uint8Array): boolean {
  return b.buffer === shared.buffer;
}

interface HandleCarrier {
  _handle: unknown;
}

/** The bytes are only valid during the call. */
export type ChunkHandler = (chunk: Buffer) => void;

/**
 * Take over a socket accepted with pauseOnConnect: true. The returned socket emits no
 * 'data' events; every read goes to onChunk. Falls back to 'data' events when the handle
 * cannot be moved (a Node without the internals this needs).
 */
export function adoptAccepted(raw: net.Socket, onChunk: ChunkHandler): net.Socket {
  const carrier = raw as unknown as HandleCarrier;
  const handle = carrier._handle;
  if (handle === null || handle === undefined || typeof (handle as { useUserBuffer?: unknown }).useUserBuffer !== "function") {
    raw.on("data", onChunk);
    raw.resume();
    return raw;
  }
  carrier._handle = null;
  const opts = {
    handle,
    readable: true,
    writable: true,
    onread: {
      buffer: shared,
      callback: (n: number, buf: Uint8Array): boolean => {
        onChunk((buf as Buffer).subarray(0, n));
        return true;
      },
    },
  };
  const socket = new net.Socket(opts as net.SocketConstructorOpts);
  // The old socket no longer owns the handle: destroying it only releases the listener's
  // connection count.
  raw.destroy();
  return socket;
}
