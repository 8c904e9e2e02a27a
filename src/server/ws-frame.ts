// WebSocket framing (RFC 6455 section 5), with the inflating half of permessage-deflate
// (RFC 7692): the codec under WsConn (websocket.ts), with no socket in it.
//
//   WsFrameDecoder  frames in, payload bytes out. Unmasks in place in the read buffer it is
//                   given (the shared read buffer of src/runtime/net.ts) and hands the payload
//                   on as views of it: no copy, no per-frame allocation. Only a header or a
//                   control payload split across reads is copied (at most 14 / 125 bytes), and
//                   the parts of a compressed message until it is whole (bounded).
//   frameHeader     the header of a frame the server sends (servers do not mask).
//   closePayload    a close frame's payload.

import { endianness } from "node:os";
import zlib from "node:zlib";

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
const DEFLATE_TAIL = Buffer.from([0x00, 0x00, 0xff, 0xff]);
const LITTLE_ENDIAN = endianness() === "LE";

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
