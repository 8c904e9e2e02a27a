// Authentication with the official client: user/password (plain and bcrypt), token, a
// users list, no_auth_user; failures get 'Authorization Violation'; a client that never
// sends CONNECT gets 'Authentication Timeout'.

import { test } from "node:test";
import assert from "node:assert/strict";
import bcrypt from "bcryptjs";
import { connect, errors } from "@nats-io/transport-node";
import { startServer, type RunningServer, type OptionsPatch } from "../../src/index.js";
import { RawClient } from "../helpers/core-raw.js";
import { Collector } from "../helpers/core-wait.js";

async function withServer(opts: OptionsPatch, fn: (s: RunningServer) => Promise<void>): Promise<void> {
  const s = await startServer({ host: "127.0.0.1", port: 0, ...opts });
  try {
    await fn(s);
  } finally {
    await s.close();
  }
}

/** Connects, round-trips one message, closes. */
async function works(url: string, opts: Parameters<typeof connect>[0]): Promise<void> {
  const nc = await connect({ servers: url, maxReconnectAttempts: 0, ...opts });
  try {
    const col = new Collector(nc.subscribe("auth.ok"));
    await nc.flush();
    nc.publish("auth.ok", "x");
    await col.waitCount(1);
  } finally {
    await nc.close();
  }
}

async function refused(url: string, opts: Parameters<typeof connect>[0]): Promise<void> {
  await assert.rejects(
    () => connect({ servers: url, maxReconnectAttempts: 0, reconnect: false, ...opts }),
    (err: unknown) => {
      assert.ok(err instanceof errors.AuthorizationError || /Authorization Violation/i.test(String(err)), `got ${String(err)}`);
      return true;
    },
  );
}

void test("user/password, plain text", async () => {
  await withServer({ authorization: { user: "alice", password: "s3cret" } }, async (s) => {
    await works(s.url, { user: "alice", pass: "s3cret" });
    await refused(s.url, { user: "alice", pass: "wrong" });
    await refused(s.url, { user: "bob", pass: "s3cret" });
    await refused(s.url, {});
  });
});

void test("user/password, bcrypt hash", async () => {
  const hash = bcrypt.hashSync("s3cret", 4);
  await withServer({ authorization: { user: "alice", password: hash } }, async (s) => {
    await works(s.url, { user: "alice", pass: "s3cret" });
    await refused(s.url, { user: "alice", pass: hash }); // the hash itself is not the password
    await refused(s.url, { user: "alice", pass: "S3cret" });
  });
});

void test("token", async () => {
  await withServer({ authorization: { token: "tok-123" } }, async (s) => {
    await works(s.url, { token: "tok-123" });
    await refused(s.url, { token: "tok-124" });
    await refused(s.url, { user: "tok-123", pass: "tok-123" });
  });
});

void test("users list with plain and bcrypt passwords, and no_auth_user", async () => {
  const users = [
    { user: "a", password: "pa", permissions: null },
    { user: "b", password: bcrypt.hashSync("pb", 4), permissions: null },
  ];
  await withServer({ authorization: { users } }, async (s) => {
    await works(s.url, { user: "a", pass: "pa" });
    await works(s.url, { user: "b", pass: "pb" });
    await refused(s.url, { user: "a", pass: "pb" });
    await refused(s.url, { user: "c", pass: "pc" });
    await refused(s.url, {});
  });
  await withServer({ authorization: { users }, noAuthUser: "a" }, async (s) => {
    await works(s.url, {});
    await refused(s.url, { user: "b", pass: "wrong" });
  });
});

void test("raw: INFO says auth_required; wrong credentials and ops before CONNECT are refused and closed", async () => {
  await withServer({ authorization: { user: "u", password: "p" } }, async (s) => {
    const a = await RawClient.connect(s.port);
    await a.waitForText("\r\n");
    assert.match(a.text, /"auth_required":true/);
    a.write('CONNECT {"verbose":false,"pedantic":false,"user":"u","pass":"nope"}\r\nPING\r\n');
    await a.waitClosed();
    assert.match(a.text, /-ERR 'Authorization Violation'\r\n$/);

    const b = await RawClient.connect(s.port);
    await b.waitForText("\r\n");
    b.write("SUB foo 1\r\n");
    await b.waitClosed();
    assert.match(b.text, /-ERR 'Authorization Violation'\r\n$/);

    const c = await RawClient.connect(s.port);
    await c.handshake({ verbose: false, pedantic: false, user: "u", pass: "p" });
    c.close();
  });
});

void test("raw: a client that never sends CONNECT gets 'Authentication Timeout'", async () => {
  await withServer({ authorization: { token: "t", timeoutMs: 200 } }, async (s) => {
    const idle = await RawClient.connect(s.port);
    const good = await RawClient.connect(s.port);
    await good.handshake({ verbose: false, pedantic: false, auth_token: "t" });
    await idle.waitClosed();
    assert.match(idle.text, /-ERR 'Authentication Timeout'\r\n$/);
    await good.ping(); // the authenticated client is untouched
    good.close();
  });
});
