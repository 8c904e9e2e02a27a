// nkey users: the official client signs the INFO nonce (nkeyAuthenticator); a wrong seed, an
// unknown nkey, a bad or missing signature are refused like a bad password; an nkey user's
// permissions apply; nkey and password users share one list; a reload keeps them working.
// Raw sockets check the nonce itself: present (15 characters, one per connection) only when
// nkey users are configured.

import { test } from "node:test";
import assert from "node:assert/strict";
import { connect, errors, nkeyAuthenticator, type NatsConnection } from "@nats-io/transport-node";
import { createUser, type KeyPair } from "@nats-io/nkeys";
import { startServer, type RunningServer, type OptionsPatch } from "../../src/index.js";
import { mergeOptions, type UserEntry } from "../../src/server/options.js";
import type { Permissions } from "../../src/server/permissions.js";
import { RawClient } from "../helpers/core-raw.js";
import { Collector } from "../helpers/core-wait.js";
import { until } from "../helpers/until.js";

const P = (p: Partial<Permissions>): Permissions => ({ publish: null, subscribe: null, response: null, ...p });

const alice = createUser();
const bob = createUser();
const stranger = createUser();
const nkeyUser = (kp: KeyPair, permissions: Permissions | null = null): UserEntry => ({ user: kp.getPublicKey(), password: "", nkey: kp.getPublicKey(), permissions });

async function withServer(opts: OptionsPatch, fn: (s: RunningServer) => Promise<void>): Promise<void> {
  const s = await startServer({ host: "127.0.0.1", port: 0, ...opts });
  try {
    await fn(s);
  } finally {
    await s.close();
  }
}

const asNkey = (s: RunningServer, kp: KeyPair): Promise<NatsConnection> =>
  connect({ servers: s.url, authenticator: nkeyAuthenticator(kp.getSeed()), maxReconnectAttempts: 0, reconnect: false });

/** Connects, round-trips one message, closes. */
async function works(nc: NatsConnection): Promise<void> {
  try {
    const col = new Collector(nc.subscribe("nk.ok"));
    await nc.flush();
    nc.publish("nk.ok", "x");
    await col.waitCount(1);
  } finally {
    await nc.close();
  }
}

async function refused(p: () => Promise<NatsConnection>): Promise<void> {
  await assert.rejects(p, (err: unknown) => {
    assert.ok(err instanceof errors.AuthorizationError || /Authorization Violation/i.test(String(err)), `got ${String(err)}`);
    return true;
  });
}

async function infoOf(port: number): Promise<Record<string, unknown>> {
  const c = await RawClient.connect(port);
  try {
    const text = await c.waitForText("\r\n");
    const m = /^INFO (\{.*\})\r\n/.exec(text);
    assert.ok(m, `no INFO in ${JSON.stringify(text)}`);
    return JSON.parse(m[1]!) as Record<string, unknown>;
  } finally {
    c.close();
  }
}

/** CONNECT over a raw socket; returns the client after the server answered or closed. */
async function rawConnect(port: number, fields: (nonce: string) => Record<string, unknown>): Promise<RawClient> {
  const c = await RawClient.connect(port);
  const text = await c.waitForText("\r\n");
  const info = JSON.parse(/^INFO (\{.*\})\r\n/.exec(text)![1]!) as { nonce?: string };
  c.clear();
  c.write(`CONNECT ${JSON.stringify({ verbose: false, pedantic: false, ...fields(info.nonce ?? "") })}\r\nPING\r\n`);
  await c.waitFor((t) => t.includes("PONG\r\n") || t.includes("-ERR"), "PONG or -ERR");
  return c;
}

const sign = (kp: KeyPair, nonce: string): Buffer => Buffer.from(kp.sign(Buffer.from(nonce, "latin1")));

void test("nkey user: the official client's nkeyAuthenticator connects; a wrong seed is refused", async () => {
  await withServer({ authorization: { users: [nkeyUser(alice)] } }, async (s) => {
    await works(await asNkey(s, alice));
    await refused(() => asNkey(s, stranger));
    await refused(() => connect({ servers: s.url, maxReconnectAttempts: 0, reconnect: false }));
    // The nkey is not a user name: no password gets in as it.
    await refused(() => connect({ servers: s.url, user: alice.getPublicKey(), pass: "", maxReconnectAttempts: 0, reconnect: false }));
  });
});

void test("nkey user: the connection's user is the nkey", async () => {
  await withServer({ authorization: { users: [nkeyUser(alice)] } }, async (s) => {
    const nc = await asNkey(s, alice);
    try {
      const clients = [...s.server.clients.values()];
      assert.equal(clients.length, 1);
      assert.equal(clients[0]!.user, alice.getPublicKey());
    } finally {
      await nc.close();
    }
  });
});

void test("nkey user: permissions are enforced", async () => {
  const perms = P({ publish: { allow: ["nk.>"], deny: [] }, subscribe: { allow: ["nk.>"], deny: [] } });
  await withServer({ authorization: { users: [nkeyUser(alice, perms), nkeyUser(bob)] } }, async (s) => {
    const a = await asNkey(s, alice);
    const b = await asNkey(s, bob);
    try {
      const col = new Collector(b.subscribe("other"));
      await b.flush();
      a.publish("other", "denied");
      a.publish("nk.x", "allowed");
      const denied = a.subscribe("other");
      const done = (async () => {
        for await (const m of denied) assert.fail(`unexpected message on ${m.subject}`);
      })();
      await assert.rejects(done, (err: unknown) => err instanceof errors.PermissionViolationError && err.operation === "subscription");
      await a.flush();
      await b.flush();
      assert.equal(col.msgs.length, 0);
      await works(await asNkey(s, alice)); // nk.ok is allowed
    } finally {
      await a.close();
      await b.close();
    }
  });
});

void test("mixed users list: password users and nkey users side by side", async () => {
  const users: UserEntry[] = [{ user: "pw", password: "secret", permissions: null }, nkeyUser(alice)];
  await withServer({ authorization: { users } }, async (s) => {
    await works(await asNkey(s, alice));
    await works(await connect({ servers: s.url, user: "pw", pass: "secret", maxReconnectAttempts: 0 }));
    await refused(() => connect({ servers: s.url, user: "pw", pass: "nope", maxReconnectAttempts: 0, reconnect: false }));
    await refused(() => asNkey(s, bob));
  });
});

void test("raw: INFO has a nonce (15 characters, new per connection) only when nkey users are configured", async () => {
  await withServer({ authorization: { users: [nkeyUser(alice)] } }, async (s) => {
    const [a, b] = [await infoOf(s.port), await infoOf(s.port)];
    assert.equal(a["auth_required"], true);
    assert.match(String(a["nonce"]), /^[A-Za-z0-9_-]{15}$/);
    assert.match(String(b["nonce"]), /^[A-Za-z0-9_-]{15}$/);
    assert.notEqual(a["nonce"], b["nonce"]);
  });
  await withServer({ authorization: { users: [{ user: "u", password: "p", permissions: null }] } }, async (s) => {
    assert.equal((await infoOf(s.port))["nonce"], undefined);
  });
  await withServer({}, async (s) => {
    assert.equal((await infoOf(s.port))["nonce"], undefined);
  });
});

void test("raw: a bad, missing or foreign signature gets 'Authorization Violation' and the close", async () => {
  await withServer({ authorization: { users: [nkeyUser(alice)] } }, async (s) => {
    const pk = alice.getPublicKey();
    const cases: [string, (nonce: string) => Record<string, unknown>][] = [
      ["missing sig", () => ({ nkey: pk })],
      ["garbage sig", () => ({ nkey: pk, sig: "bm90IGEgc2lnbmF0dXJl" })],
      ["signature of another nonce", () => ({ nkey: pk, sig: sign(alice, "AAAAAAAAAAAAAAA").toString("base64url") })],
      ["signed by another key", (n) => ({ nkey: pk, sig: sign(stranger, n).toString("base64url") })],
      ["unknown nkey", (n) => ({ nkey: stranger.getPublicKey(), sig: sign(stranger, n).toString("base64url") })],
      ["not a string", (n) => ({ nkey: pk, sig: [...sign(alice, n)] })],
    ];
    for (const [name, fields] of cases) {
      const c = await rawConnect(s.port, fields);
      await c.waitClosed();
      assert.equal(c.text, "-ERR 'Authorization Violation'\r\n", name);
    }
    // The right signature, raw URL base64 (the clients' form) and standard base64 with padding.
    for (const enc of ["base64url", "base64"] as const) {
      const c = await rawConnect(s.port, (n) => ({ nkey: pk, sig: sign(alice, n).toString(enc) }));
      assert.equal(c.text, "PONG\r\n", enc);
      c.close();
    }
  });
});

void test("reload: nkey users keep working; a removed nkey is disconnected; new permissions apply", async () => {
  const base = { port: 0, host: "127.0.0.1" } as const;
  await withServer({ authorization: { users: [nkeyUser(alice), nkeyUser(bob)] } }, async (s) => {
    const a = await asNkey(s, alice);
    const b = await asNkey(s, bob);
    const bClosed = b.closed();
    try {
      const perms = P({ publish: { allow: ["nk.>"], deny: [] }, subscribe: { allow: ["nk.>"], deny: [] } });
      s.server.reload(mergeOptions(base, { authorization: { users: [nkeyUser(alice, perms)] } }));
      await bClosed;
      const col = new Collector(a.subscribe("nk.after"));
      await a.flush();
      a.publish("nk.after", "x");
      await col.waitCount(1);
      assert.equal(s.server.clients.size, 1);
      await works(await asNkey(s, alice));
      await refused(() => asNkey(s, bob));
      // A reload that adds nkey users to a password-only config: new connections get a nonce.
      s.server.reload(mergeOptions(base, { authorization: { users: [{ user: "pw", password: "x", permissions: null }] } }));
      await until("alice disconnected", () => a.isClosed());
      assert.equal((await infoOf(s.port))["nonce"], undefined);
      s.server.reload(mergeOptions(base, { authorization: { users: [{ user: "pw", password: "x", permissions: null }, nkeyUser(bob)] } }));
      assert.match(String((await infoOf(s.port))["nonce"]), /^[A-Za-z0-9_-]{15}$/);
      await works(await asNkey(s, bob));
    } finally {
      await a.close();
      await b.close();
    }
  });
});
