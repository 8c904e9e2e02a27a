// The server's id: the public nkey of a fresh ed25519 key pair ("N" + 55 base32 characters),
// as nats-server announces in INFO. The key pair comes from node:crypto (native; the pure-JS
// generator of the nkeys package took ~50 ms and ~8 MB of garbage at every start); only the
// public half is used, and only as an id.
import { generateKeyPairSync } from "node:crypto";

const PREFIX_SERVER = 13 << 3; // the nkey prefix byte of a server public key ("N")
const B32 = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";

/** CRC-16/XMODEM (polynomial 0x1021, initial value 0), which nkeys append to their bytes. */
function crc16(b: Uint8Array): number {
  let crc = 0;
  for (let i = 0; i < b.length; i++) {
    crc ^= b[i]! << 8;
    for (let k = 0; k < 8; k++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
  }
  return crc;
}

/** RFC 4648 base32 without padding. */
function base32(b: Uint8Array): string {
  let out = "";
  let acc = 0;
  let bits = 0;
  for (let i = 0; i < b.length; i++) {
    acc = (acc << 8) | b[i]!;
    bits += 8;
    while (bits >= 5) {
      out += B32[(acc >>> (bits - 5)) & 31];
      bits -= 5;
    }
    acc &= (1 << bits) - 1;
  }
  if (bits > 0) out += B32[(acc << (5 - bits)) & 31];
  return out;
}

/** The nkey text of a server public key (32 bytes). */
export function serverPublicNkey(pub: Uint8Array): string {
  if (pub.length !== 32) throw new Error("a server public key is 32 bytes");
  const raw = new Uint8Array(35);
  raw[0] = PREFIX_SERVER;
  raw.set(pub, 1);
  const c = crc16(raw.subarray(0, 33));
  raw[33] = c & 0xff;
  raw[34] = c >>> 8;
  return base32(raw);
}

/** A new server id. */
export function newServerId(): string {
  const { publicKey } = generateKeyPairSync("ed25519");
  const jwk = publicKey.export({ format: "jwk" });
  return serverPublicNkey(Buffer.from(String(jwk.x), "base64url"));
}
