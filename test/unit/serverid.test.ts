import { test } from "node:test";
import assert from "node:assert/strict";
import { createServer, fromPublic } from "@nats-io/nkeys";
import { newServerId, serverPublicNkey } from "../../src/server/serverid.js";

void test("server ids are server public nkeys that the nkeys package accepts", () => {
  const seen = new Set<string>();
  for (let i = 0; i < 50; i++) {
    const id = newServerId();
    assert.match(id, /^N[A-Z2-7]{55}$/);
    assert.equal(fromPublic(id).getPublicKey(), id, "prefix and checksum valid");
    seen.add(id);
  }
  assert.equal(seen.size, 50);
});

void test("serverPublicNkey encodes a key exactly as the nkeys package does", () => {
  for (let i = 0; i < 20; i++) {
    const kp = createServer();
    const id = kp.getPublicKey();
    assert.equal(serverPublicNkey(decodeRaw(id)), id);
  }
});

/** The 32 key bytes of a public nkey (base32, without the prefix byte and the checksum). */
function decodeRaw(id: string): Uint8Array {
  const alpha = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
  const out: number[] = [];
  let acc = 0;
  let bits = 0;
  for (const ch of id) {
    acc = (acc << 5) | alpha.indexOf(ch);
    bits += 5;
    if (bits >= 8) {
      out.push((acc >>> (bits - 8)) & 0xff);
      bits -= 8;
    }
    acc &= (1 << bits) - 1;
  }
  return Uint8Array.from(out.slice(1, 33));
}
