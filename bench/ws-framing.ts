// Server-side WebSocket frame decoding in one process: tsnats' own decoder
// (src/server/websocket.ts WsFrameDecoder) against the `ws` package's Receiver, on the same
// masked byte stream cut into 64 KiB reads, as a socket delivers it. The question issue 13
// asked: does our own framing or `ws` serve the hot path better?
//
//   npx tsc -p tsconfig.json && node dist/bench/ws-framing.js

import { randomBytes } from "node:crypto";
import * as wsmod from "ws";
import { WsFrameDecoder, type WsSink } from "../src/server/ws-frame.js";

function maskedFrame(payload: Buffer): Buffer {
  const len = payload.length;
  const ext = len <= 125 ? 0 : len <= 0xffff ? 2 : 8;
  const h = Buffer.alloc(2 + ext + 4);
  h[0] = 0x82;
  if (ext === 0) h[1] = 0x80 | len;
  else if (ext === 2) {
    h[1] = 0x80 | 126;
    h.writeUInt16BE(len, 2);
  } else {
    h[1] = 0x80 | 127;
    h.writeBigUInt64BE(BigInt(len), 2);
  }
  const key = randomBytes(4);
  key.copy(h, 2 + ext);
  const body = Buffer.alloc(len);
  for (let i = 0; i < len; i++) body[i] = payload[i]! ^ key[i & 3]!;
  return Buffer.concat([h, body]);
}

/** A stream of `frames` frames of `size` bytes each, cut into 64 KiB reads. */
function stream(size: number, frames: number): Buffer[] {
  const payload = Buffer.alloc(size, "PUB bench.x 16\r\n0123456789abcdef\r\n");
  const one = maskedFrame(payload);
  const all = Buffer.concat(Array.from({ length: frames }, () => one));
  const reads: Buffer[] = [];
  for (let i = 0; i < all.length; i += 65536) reads.push(all.subarray(i, Math.min(all.length, i + 65536)));
  return reads;
}

function timeOurs(reads: Buffer[]): { ns: number; bytes: number } {
  let bytes = 0;
  const sink: WsSink = {
    wsData: (b) => (bytes += b.length),
    wsControl: () => undefined,
    wsFail: (s, r) => {
      throw new Error(`decoder failed: ${s} ${r}`);
    },
  };
  const d = new WsFrameDecoder(sink, true, false, 64 * 1024 * 1024);
  // Our decoder unmasks in place: feed copies, as each socket read is a fresh buffer.
  const copies = reads.map((r) => Buffer.from(r));
  const t0 = process.hrtime.bigint();
  for (const r of copies) d.feed(r);
  return { ns: Number(process.hrtime.bigint() - t0), bytes };
}

/** ws's Receiver (a Writable parsing frames): exported at run time, not in @types/ws. */
interface WsReceiver {
  on(ev: "message", fn: (data: Buffer | Buffer[]) => void): void;
  write(b: Buffer, cb: (err?: Error | null) => void): void;
}
const Receiver = (wsmod as unknown as { Receiver: new (o: { isServer: boolean; maxPayload: number }) => WsReceiver }).Receiver;

async function timeWs(reads: Buffer[]): Promise<{ ns: number; bytes: number }> {
  let bytes = 0;
  const r = new Receiver({ isServer: true, maxPayload: 64 * 1024 * 1024 });
  r.on("message", (data: Buffer | Buffer[]) => {
    bytes += Array.isArray(data) ? data.reduce((s, b) => s + b.length, 0) : data.length;
  });
  const copies = reads.map((b) => Buffer.from(b));
  const t0 = process.hrtime.bigint();
  for (const c of copies) {
    await new Promise<void>((resolve, reject) => r.write(c, (err?: Error | null) => (err ? reject(err) : resolve())));
  }
  return { ns: Number(process.hrtime.bigint() - t0), bytes };
}

async function main(): Promise<void> {
  const rows: string[] = ["| frame size | tsnats decoder MB/s | ws Receiver MB/s | ratio |", "|---:|---:|---:|---:|"];
  for (const [size, frames] of [
    [64, 200_000],
    [1024, 40_000],
    [256 * 1024, 200],
  ] as const) {
    const reads = stream(size, frames);
    let ours = 0;
    let theirs = 0;
    for (let round = 0; round < 5; round++) {
      const a = timeOurs(reads);
      const b = await timeWs(reads);
      if (a.bytes !== size * frames || b.bytes !== size * frames) throw new Error("byte count mismatch");
      if (round >= 2) {
        ours += a.ns;
        theirs += b.ns;
      }
    }
    const mb = (3 * size * frames) / 1e6;
    const o = mb / (ours / 1e9);
    const t = mb / (theirs / 1e9);
    rows.push(`| ${size} B | ${o.toFixed(0)} | ${t.toFixed(0)} | ${(o / t).toFixed(2)}× |`);
  }
  process.stdout.write(rows.join("\n") + "\n");
}

void main();
