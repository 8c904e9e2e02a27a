// A raw WebSocket client for framing tests: sends the upgrade request with chosen headers,
// writes frames byte by byte as told (masked or not, fragmented, any opcode), and decodes what
// the server sends (unmasked frames) into the NATS text and the control frames seen.

import net from "node:net";
import zlib from "node:zlib";
import { randomBytes } from "node:crypto";
import assert from "node:assert/strict";
import { until } from "./until.js";

export interface FrameOpts {
  fin?: boolean;
  mask?: boolean;
  rsv1?: boolean;
}

export interface ServerFrame {
  op: number;
  fin: boolean;
  rsv1: boolean;
  payload: Buffer;
}

/** One frame as a client would send it (masked unless mask: false). */
export function frame(op: number, payload: Buffer | string, o: FrameOpts = {}): Buffer {
  const p = typeof payload === "string" ? Buffer.from(payload) : Buffer.from(payload);
  const mask = o.mask ?? true;
  const b0 = ((o.fin ?? true) ? 0x80 : 0) | (o.rsv1 ? 0x40 : 0) | op;
  let h: Buffer;
  if (p.length <= 125) h = Buffer.from([b0, p.length]);
  else if (p.length < 65536) {
    h = Buffer.from([b0, 126, 0, 0]);
    h.writeUInt16BE(p.length, 2);
  } else {
    h = Buffer.alloc(10);
    h[0] = b0;
    h[1] = 127;
    h.writeUInt32BE(Math.floor(p.length / 2 ** 32), 2);
    h.writeUInt32BE(p.length >>> 0, 6);
  }
  if (!mask) return Buffer.concat([h, p]);
  h[1]! |= 0x80;
  const key = randomBytes(4);
  for (let i = 0; i < p.length; i++) p[i]! ^= key[i & 3]!;
  return Buffer.concat([h, key, p]);
}

export class WsRaw {
  /** The HTTP response head (status line and headers), once received. */
  response = "";
  /** The NATS protocol text received in data frames (inflated when compressed). */
  text = "";
  readonly frames: ServerFrame[] = [];
  closed = false;
  private buf = Buffer.alloc(0);
  private upgraded = false;
  /** permessage-deflate was negotiated: frames with RSV1 are inflated. */
  inflate = false;

  private constructor(readonly socket: net.Socket) {
    socket.on("data", (d: Buffer) => this.onData(d));
    socket.on("error", () => {
      /* servers closing on us are expected here */
    });
    socket.on("close", () => (this.closed = true));
  }

  static connect(port: number): Promise<WsRaw> {
    return new Promise((resolve, reject) => {
      const s = net.connect({ port, host: "127.0.0.1" });
      s.once("error", reject);
      s.once("connect", () => {
        s.off("error", reject);
        resolve(new WsRaw(s));
      });
    });
  }

  /** Connects and upgrades (waits for the 101 unless expectStatus says otherwise). */
  static async open(port: number, headers: Record<string, string> = {}, expectStatus = 101): Promise<WsRaw> {
    const c = await WsRaw.connect(port);
    c.sendUpgrade(headers);
    await c.waitResponse();
    assert.match(c.response, new RegExp(`^HTTP/1\\.1 ${expectStatus} `), c.response);
    return c;
  }

  static readonly KEY = "dGhlIHNhbXBsZSBub25jZQ==";

  /** The upgrade request; a header given as "" is left out. */
  sendUpgrade(headers: Record<string, string> = {}, method = "GET", path = "/"): void {
    const h: Record<string, string> = {
      Host: "127.0.0.1",
      Upgrade: "websocket",
      Connection: "Upgrade",
      "Sec-WebSocket-Key": WsRaw.KEY,
      "Sec-WebSocket-Version": "13",
      ...headers,
    };
    let req = `${method} ${path} HTTP/1.1\r\n`;
    for (const [k, v] of Object.entries(h)) if (v !== "") req += `${k}: ${v}\r\n`;
    this.socket.write(req + "\r\n");
  }

  write(b: Buffer | string): void {
    if (!this.closed) this.socket.write(b);
  }

  send(op: number, payload: Buffer | string, o: FrameOpts = {}): void {
    this.write(frame(op, payload, o));
  }

  /** NATS protocol bytes in one masked binary frame. */
  proto(s: string): void {
    this.send(2, s);
  }

  private onData(d: Buffer): void {
    this.buf = Buffer.concat([this.buf, d]);
    if (!this.upgraded) {
      const end = this.buf.indexOf("\r\n\r\n");
      if (end < 0) {
        // An error reply may come with its body: keep all of it as the response.
        this.response = this.buf.toString("latin1");
        return;
      }
      this.response = this.buf.toString("latin1", 0, end + 4);
      if (!this.response.startsWith("HTTP/1.1 101 ")) {
        this.response = this.buf.toString("latin1");
        return;
      }
      this.upgraded = true;
      this.inflate = /\r\nSec-WebSocket-Extensions: permessage-deflate/i.test(this.response);
      this.buf = this.buf.subarray(end + 4);
    }
    for (;;) {
      const b = this.buf;
      if (b.length < 2) return;
      let len = b[1]! & 0x7f;
      let p = 2;
      if (len === 126) {
        if (b.length < 4) return;
        len = b.readUInt16BE(2);
        p = 4;
      } else if (len === 127) {
        if (b.length < 10) return;
        len = b.readUInt32BE(2) * 2 ** 32 + b.readUInt32BE(6);
        p = 10;
      }
      assert.equal(b[1]! & 0x80, 0, "servers do not mask");
      if (b.length < p + len) return;
      const f: ServerFrame = { op: b[0]! & 0x0f, fin: (b[0]! & 0x80) !== 0, rsv1: (b[0]! & 0x40) !== 0, payload: Buffer.from(b.subarray(p, p + len)) };
      this.buf = b.subarray(p + len);
      this.frames.push(f);
      if (f.op === 1 || f.op === 2 || f.op === 0) this.text += this.decode(f).toString("latin1");
    }
  }

  private decode(f: ServerFrame): Buffer {
    if (!this.inflate || !f.rsv1) return f.payload;
    return zlib.inflateRawSync(Buffer.concat([f.payload, Buffer.from([0, 0, 0xff, 0xff])]), { finishFlush: zlib.constants.Z_SYNC_FLUSH });
  }

  waitResponse(): Promise<void> {
    return until("the HTTP response", () => this.response.includes("\r\n\r\n") || this.closed, 5000);
  }

  async waitText(re: RegExp, what = String(re)): Promise<void> {
    await until(`${what} in ${JSON.stringify(this.text.slice(-300))}`, () => re.test(this.text), 5000);
  }

  /** The server's close frame: its status and text. */
  async waitCloseFrame(): Promise<{ status: number; reason: string }> {
    await until("a close frame", () => this.frames.some((f) => f.op === 8), 5000);
    const f = this.frames.find((x) => x.op === 8)!;
    return { status: f.payload.length >= 2 ? f.payload.readUInt16BE(0) : 0, reason: f.payload.toString("utf8", 2) };
  }

  waitClosed(): Promise<void> {
    return until("the connection to close", () => this.closed, 5000);
  }

  /** Upgraded and past CONNECT: PING answered by PONG. */
  async handshakeNats(connect = "{}"): Promise<void> {
    await this.waitText(/^INFO \{.*\} ?\r\n/);
    this.proto(`CONNECT ${connect}\r\nPING\r\n`);
    await this.waitText(/PONG\r\n/);
  }

  close(): void {
    this.socket.destroy();
  }
}
