// CONNECT under fuzzing (fast-check): random JSON of every shape in the known fields (and
// some that are not JSON at all) against a server with authentication. Every connection ends
// authenticated only with the right credentials; the server keeps answering a bystander's
// PING after each batch and its heap stays bounded.

import { test } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import { startServer } from "../../src/index.js";
import { RawClient } from "../helpers/core-raw.js";

const anyJson: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: "small" },
    fc.constant(null),
    fc.boolean(),
    fc.integer(),
    fc.double(),
    fc.string({ maxLength: 40 }),
    fc.array(tie("value"), { maxLength: 4 }),
    fc.dictionary(fc.string({ maxLength: 8 }), tie("value"), { maxKeys: 4 }),
  ),
})).value;

const KEYS = ["verbose", "pedantic", "tls_required", "echo", "name", "lang", "version", "protocol", "headers", "no_responders", "user", "pass", "auth_token", "nkey", "sig", "jwt", "account", "new_account"];

const connectBody: fc.Arbitrary<string> = fc.oneof(
  // An object with random values in the known fields.
  fc.dictionary(fc.constantFrom(...KEYS), anyJson, { maxKeys: 10 }).map((o) => JSON.stringify(o)),
  // Any JSON at all.
  anyJson.map((v) => JSON.stringify(v) ?? "null"),
  // Not JSON: truncated, control characters, a huge string.
  fc.string({ maxLength: 200 }),
  fc.constantFrom('{"user":', "{", "[]", '{"user":"a","pass":"b"', "\u0000\u0001", `{"name":"${"x".repeat(3000)}"}`),
);

void test("fuzzed CONNECT: never authenticated without the credentials, the server stays up and bounded", async () => {
  const s = await startServer({ host: "127.0.0.1", port: 0, authorization: { users: [{ user: "alice", password: "right-pass", permissions: null }] }, maxControlLineBytes: 4096 });
  const bystander = await RawClient.connect(s.port);
  await bystander.handshake({ verbose: false, pedantic: false, user: "alice", pass: "right-pass" });
  const heap0 = process.memoryUsage().heapUsed;
  let authenticated = 0;
  try {
    await fc.assert(
      fc.asyncProperty(fc.array(connectBody, { minLength: 1, maxLength: 8 }), async (bodies) => {
        const clients = await Promise.all(bodies.map(() => RawClient.connect(s.port)));
        for (let i = 0; i < bodies.length; i++) clients[i]!.write(`CONNECT ${bodies[i]!.replace(/\r?\n/g, " ")}\r\nPING\r\n`);
        for (let i = 0; i < clients.length; i++) {
          const c = clients[i]!;
          // Either a PONG (only with the right password) or an -ERR/close.
          const text = await c.waitFor((t) => t.includes("PONG") || t.includes("-ERR") || c.closed, "an answer", 5000).catch(() => c.text);
          if (text.includes("PONG")) {
            authenticated++;
            const parsed = JSON.parse(bodies[i]!) as Record<string, unknown>;
            assert.equal(parsed["user"], "alice", `authenticated without the user: ${bodies[i]!}`);
            assert.equal(parsed["pass"], "right-pass", `authenticated without the password: ${bodies[i]!}`);
          }
          c.socket.destroy();
        }
        await bystander.ping();
      }),
      { numRuns: 150, seed: 1312 },
    );
    // The right credentials still work.
    const good = await RawClient.connect(s.port);
    good.write('CONNECT {"user":"alice","pass":"right-pass","verbose":false}\r\nPING\r\n');
    await good.waitForText("PONG");
    good.socket.destroy();
    if (global.gc) global.gc();
    const grown = process.memoryUsage().heapUsed - heap0;
    // ~1000 connections came and went; what stays must not scale with them.
    assert.ok(grown < 64 * 1024 * 1024, `heap grew by ${grown} bytes`);
    assert.equal(authenticated, 0); // fast-check does not guess "right-pass"
  } finally {
    bystander.socket.destroy();
    await s.close();
  }
});
