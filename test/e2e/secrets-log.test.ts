// Secrets never logged: a server started with -DV (debug and trace) sees CONNECTs with a
// password, a token, an nkey signature, wrong credentials and a CONNECT split across reads;
// its whole log (stderr) holds none of those secrets, and [REDACTED] where they were.

import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect } from "@nats-io/transport-node";
import { createUser } from "@nats-io/nkeys";
import { RawClient } from "../helpers/core-raw.js";
import { startTsnatsChild, type ChildServer } from "../helpers/core-child.js";
import { until } from "../helpers/until.js";

const PASSWORD = "pw-Secret-4711";
const WRONG_PASSWORD = "pw-Wrong-0815";
const SPLIT_PASSWORD = "pw-Split-2342";
const TOKEN = "tok-Secret-9876";
const WRONG_TOKEN = "tok-Wrong-1234";

/** A raw CONNECT (and PING); resolves once the server answered or closed. */
async function rawConnect(port: number, fields: (nonce: string) => Record<string, unknown>, pieces = 1): Promise<void> {
  const c = await RawClient.connect(port);
  c.socket.setNoDelay(true);
  try {
    const text = await c.waitForText("\r\n");
    const info = JSON.parse(/^INFO (\{.*\})\r\n/.exec(text)![1]!) as { nonce?: string };
    const line = `CONNECT ${JSON.stringify({ verbose: false, pedantic: false, ...fields(info.nonce ?? "") })}\r\nPING\r\n`;
    const step = Math.ceil(line.length / pieces);
    for (let i = 0; i < line.length; i += step) {
      c.write(line.slice(i, i + step));
      // One write per read: wait until the server has the piece (it answers nothing yet, so
      // a PING cannot be used); a socket drain means the kernel took it.
      await new Promise<void>((r) => (c.socket.writableLength === 0 ? setImmediate(r) : c.socket.once("drain", () => r())));
    }
    await c.waitFor((t) => t.includes("PONG") || t.includes("-ERR"), "an answer");
  } finally {
    c.close();
  }
}

async function withChild(args: string[], fn: (s: ChildServer) => Promise<void>): Promise<string> {
  const s = await startTsnatsChild(["-a", "127.0.0.1", "-p", "-1", "-DV", ...args]);
  try {
    await fn(s);
  } finally {
    await s.stop();
  }
  // The process may exit before its last output is read.
  await until("the whole log", () => s.log().includes("Server Exiting"));
  return s.log();
}

void test("trace with users and nkeys: passwords and signatures never appear; [REDACTED] does", async () => {
  const kp = createUser();
  const dir = mkdtempSync(join(tmpdir(), "tsnats-secrets-"));
  const conf = join(dir, "s.conf");
  writeFileSync(conf, `authorization {\n  users: [\n    { user: u, password: "${PASSWORD}" }\n    { user: s, password: "${SPLIT_PASSWORD}" }\n    { nkey: ${kp.getPublicKey()} }\n  ]\n}\n`);
  const sigs: string[] = [];
  try {
    const log = await withChild(["-c", conf], async (s) => {
      const nc = await connect({ servers: s.url, user: "u", pass: PASSWORD, maxReconnectAttempts: 0 });
      await nc.flush();
      await nc.close();
      await rawConnect(s.port, () => ({ user: "u", pass: WRONG_PASSWORD }));
      await rawConnect(s.port, () => ({ user: "s", pass: SPLIT_PASSWORD }), 7);
      await rawConnect(s.port, (nonce) => {
        const sig = Buffer.from(kp.sign(Buffer.from(nonce, "latin1"))).toString("base64url");
        sigs.push(sig);
        return { nkey: kp.getPublicKey(), sig };
      });
      await rawConnect(s.port, () => {
        const sig = Buffer.alloc(64, 7).toString("base64url");
        sigs.push(sig);
        return { nkey: kp.getPublicKey(), sig };
      });
    });
    assert.match(log, /<<- \[CONNECT /, "the CONNECTs are traced");
    assert.match(log, /"pass":"\[REDACTED\]"/);
    assert.match(log, /"sig":"\[REDACTED\]"/);
    assert.match(log, /authentication error - User "u"/);
    for (const secret of [PASSWORD, WRONG_PASSWORD, SPLIT_PASSWORD, ...sigs]) {
      assert.ok(!log.includes(secret), `the log shows ${secret}`);
    }
    // Nor any piece of the split password long enough to mean something.
    assert.ok(!log.includes(SPLIT_PASSWORD.slice(0, 6)) && !log.includes(SPLIT_PASSWORD.slice(-6)), "a piece of the split password is logged");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

void test("trace with a token: neither the right nor a wrong token appears", async () => {
  const log = await withChild(["--auth", TOKEN], async (s) => {
    const nc = await connect({ servers: s.url, token: TOKEN, maxReconnectAttempts: 0 });
    await nc.flush();
    await nc.close();
    await rawConnect(s.port, () => ({ auth_token: WRONG_TOKEN }));
  });
  assert.match(log, /"auth_token":"\[REDACTED\]"/);
  for (const secret of [TOKEN, WRONG_TOKEN]) assert.ok(!log.includes(secret), `the log shows ${secret}`);
});
