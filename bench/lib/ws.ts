// A minimal WebSocket client transport for the load generator (RFC 6455, binary frames, no
// extensions): an HTTP upgrade on a net.Socket, then a Duplex whose writes each go out as one
// masked binary frame and whose reads are the payloads of the server's frames, pushed as views
// of the socket's chunks (no copy, no reassembly of messages: the NATS parser does not care
// where messages end). The `ws` package does the same job at several times the CPU per byte
// (a JS masking loop, a copy of every frame that spans socket reads), which on 1 KiB messages
// cost the generator more than nats-server spent serving them.
//
// Frames carry an all-zero masking key: masked as RFC 6455 asks of a client (the server
// unmasks every byte all the same), with nothing for the generator to XOR.

import { createHash, randomBytes } from "node:crypto";
import net from "node:net";
import { Duplex } from "node:stream";

const WS_GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
const OP_CONT = 0x0;
const OP_TEXT = 0x1;
const OP_BINARY = 0x2;
const OP_CLOSE = 0x8;
const OP_PING = 0x9;
const MAX_HTTP_HEADER = 16 * 1024;

/** A frame header for `len` payload bytes, masked with a zero key. */
function frameHeader(opcode: number, len: number): Buffer {
  let h: Buffer;
  if (len < 126) {
    h = Buffer.alloc(6);
    h[1] = 0x80 | len;
  } else if (len < 65536) {
    h = Buffer.alloc(8);
    h[1] = 0x80 | 126;
    h.writeUInt16BE(len, 2);
  } else {
    h = Buffer.alloc(14);
    h[1] = 0x80 | 127;
    h.writeBigUInt64BE(BigInt(len), 2);
  }
  h[0] = 0x80 | opcode; // FIN; the mask key (last 4 bytes) stays zero
  return h;
}

export class WsStream extends Duplex {
  private readonly sock: net.Socket;
  // Frame parser state.
  private hdr: Buffer | null = null; // partial header bytes across reads
  private payloadLeft = 0;
  private opcode = 0;
  private control: Buffer[] = []; // payload of the control frame being read

  constructor(sock: net.Socket, leftover: Buffer) {
    super({ allowHalfOpen: false });
    this.sock = sock;
    sock.on("data", (b: Buffer) => this.onFrames(b));
    sock.on("error", (e) => this.destroy(e));
    sock.on("close", () => this.destroy());
    if (leftover.length > 0) this.onFrames(leftover);
  }

  override _read(): void {
    /* flowing: frames are pushed as the socket delivers them */
  }

  override _write(chunk: Buffer, _enc: BufferEncoding, cb: (e?: Error | null) => void): void {
    this.sock.cork();
    this.sock.write(frameHeader(OP_BINARY, chunk.length));
    this.sock.write(chunk, (e) => cb(e));
    this.sock.uncork();
  }

  override _destroy(err: Error | null, cb: (e: Error | null) => void): void {
    this.sock.destroy();
    cb(err);
  }

  private onFrames(chunk: Buffer): void {
    let b = chunk;
    if (this.hdr !== null) {
      // Only ever a header cut at the end of the previous read: a few bytes.
      b = Buffer.concat([this.hdr, chunk]);
      this.hdr = null;
    }
    let i = 0;
    const n = b.length;
    while (i < n) {
      if (this.payloadLeft > 0) {
        const take = Math.min(this.payloadLeft, n - i);
        const part = b.subarray(i, i + take);
        this.payloadLeft -= take;
        i += take;
        if (this.opcode === OP_BINARY || this.opcode === OP_TEXT || this.opcode === OP_CONT) this.push(part);
        else {
          this.control.push(part);
          if (this.payloadLeft === 0) this.onControl();
        }
        continue;
      }
      // A header: 2 bytes, then 0/2/8 length bytes, then 4 mask bytes when masked.
      const avail = n - i;
      if (avail < 2) {
        this.hdr = Buffer.from(b.subarray(i));
        return;
      }
      const b1 = b[i + 1]!;
      const len7 = b1 & 0x7f;
      const masked = (b1 & 0x80) !== 0;
      const hlen = 2 + (len7 === 126 ? 2 : len7 === 127 ? 8 : 0) + (masked ? 4 : 0);
      if (avail < hlen) {
        this.hdr = Buffer.from(b.subarray(i));
        return;
      }
      if (masked) {
        this.destroy(new Error("websocket: masked frame from the server"));
        return;
      }
      this.opcode = b[i]! & 0x0f;
      this.payloadLeft = len7 === 126 ? b.readUInt16BE(i + 2) : len7 === 127 ? Number(b.readBigUInt64BE(i + 2)) : len7;
      i += hlen;
      if (this.payloadLeft === 0 && this.opcode >= OP_CLOSE) this.onControl();
    }
  }

  private onControl(): void {
    const payload = Buffer.concat(this.control);
    this.control = [];
    if (this.opcode === OP_PING) {
      this.sock.write(Buffer.concat([frameHeader(0xa, payload.length), payload]));
    } else if (this.opcode === OP_CLOSE) {
      this.sock.end(Buffer.concat([frameHeader(OP_CLOSE, payload.length), payload]));
    }
  }
}

/** Upgrade a fresh TCP socket to a WebSocket (GET /, no extensions); resolves once the server
 *  answered 101 with the right Sec-WebSocket-Accept. The caller owns (and destroys) `sock`. */
export function wsUpgrade(sock: net.Socket, host: string, port: number): Promise<WsStream> {
  return new Promise((resolve, reject) => {
    const key = randomBytes(16).toString("base64");
    const accept = createHash("sha1").update(key + WS_GUID).digest("base64");
    let buf = Buffer.alloc(0);
    const cleanup = (): void => {
      sock.off("data", onData);
      sock.off("error", onError);
      sock.off("close", onClose);
    };
    const fail = (e: Error): void => {
      cleanup();
      reject(e);
    };
    const onError = (e: Error): void => fail(e);
    const onClose = (): void => fail(new Error("websocket: connection closed during the upgrade"));
    const onData = (d: Buffer): void => {
      buf = Buffer.concat([buf, d]);
      const end = buf.indexOf("\r\n\r\n");
      if (end < 0) {
        if (buf.length > MAX_HTTP_HEADER) fail(new Error("websocket: upgrade response too long"));
        return;
      }
      const head = buf.toString("latin1", 0, end);
      const status = head.split("\r\n", 1)[0]!;
      if (!/^HTTP\/1\.1 101 /.test(status)) return fail(new Error(`websocket: upgrade refused: ${status}`));
      const m = /\r\nsec-websocket-accept:\s*(\S+)/i.exec(head);
      if (m?.[1] !== accept) return fail(new Error("websocket: bad Sec-WebSocket-Accept"));
      if (/\r\nsec-websocket-extensions:/i.test(head)) return fail(new Error("websocket: server chose an extension"));
      cleanup();
      resolve(new WsStream(sock, buf.subarray(end + 4)));
    };
    sock.on("data", onData);
    sock.on("error", onError);
    sock.on("close", onClose);
    sock.write(
      `GET / HTTP/1.1\r\nHost: ${host}:${port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
        `Sec-WebSocket-Key: ${key}\r\nSec-WebSocket-Version: 13\r\n\r\n`,
    );
  });
}
