// jetstream encryption fields in a config file: nats-server's names and cipher spellings.
import { test } from "node:test";
import assert from "node:assert/strict";
import { parseConfigText } from "../../src/server/config/parser.js";
import { ConfigProblems, toOptions, type ToOptionsResult } from "../../src/server/config/to-options.js";

function map(text: string): ToOptionsResult {
  return toOptions(parseConfigText(text, { file: "t.conf", env: {} }), { file: "t.conf" });
}

void test("jetstream key, prev_key and cipher: every spelling, no warning", () => {
  for (const [k, p] of [
    ["key", "prev_key"],
    ["ek", "prev_ek"],
    ["encryption_key", "prev_encryption_key"],
  ] as const) {
    const { patch, warnings } = map(`jetstream { ${k}: "new", ${p}: "old", cipher: aes }\n`);
    assert.deepEqual(warnings, []);
    assert.deepEqual(patch.jetstream, { enabled: true, key: "new", prevKey: "old", cipher: "aes" });
  }
  for (const c of ["chacha", "chachapoly", "ChaChaPoly", "CHACHA"]) {
    assert.equal(map(`jetstream { key: k, cipher: ${c} }\n`).patch.jetstream?.cipher, "chachapoly");
  }
  assert.equal(map("jetstream { key: k, cipher: AES }\n").patch.jetstream?.cipher, "aes");
  // no cipher: left "" here; the service then uses chachapoly (nats-server's default)
  assert.equal(map("jetstream { key: k }\n").patch.jetstream?.cipher, undefined);
});

void test("an unknown cipher is a config error", () => {
  assert.throws(() => map("jetstream { key: k, cipher: rot13 }\n"), (e: Error) => e instanceof ConfigProblems && /Unknown cipher type: "rot13"/.test(e.message));
  assert.throws(() => map("jetstream { key: 5 }\n"), ConfigProblems);
});
