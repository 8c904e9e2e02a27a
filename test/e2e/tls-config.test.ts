// The tsnats-server process with nats-server's config files and flags: a `tls {}` block and
// the --tls flags give a TLS port the official client uses; new certificates are picked up on
// SIGHUP; a config with a setting tsnats does not implement makes the process exit non-zero
// with the file, line and field (and -t says it is invalid). nats-server 2.9.10, when on PATH,
// gets the same TLS config file and the same client.

import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { copyFileSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect, type ConnectionOptions } from "@nats-io/transport-node";
import { findNatsServer, startNatsServerChild, startTsnatsChild, TSNATS_BIN, type ChildServer } from "../helpers/core-child.js";
import { makeCerts } from "../helpers/certs.js";
import { Collector } from "../helpers/core-wait.js";
import { until } from "../helpers/until.js";

const certs = makeCerts();

async function roundTrip(url: string, opts: Partial<ConnectionOptions>): Promise<string> {
  const nc = await connect({ servers: url, maxReconnectAttempts: 0, reconnect: false, timeout: 5000, ...opts });
  try {
    const col = new Collector(nc.subscribe("cfg.tls"));
    await nc.flush();
    nc.publish("cfg.tls", "x");
    await col.waitCount(1);
    return String(nc.info?.tls_required ?? false);
  } finally {
    await nc.close();
  }
}

function confFile(text: string): string {
  const dir = mkdtempSync(join(tmpdir(), "tsnats-tlsconf-"));
  const f = join(dir, "server.conf");
  writeFileSync(f, text);
  return f;
}

const tlsConf = (cert: string, key: string, ca: string, extra = ""): string => `listen: "127.0.0.1:-1"\ntls {\n  cert_file: "${cert}"\n  key_file: "${key}"\n  ca_file: "${ca}"\n  timeout: 2\n${extra}}\n`;

async function withChild(start: () => Promise<ChildServer>, fn: (s: ChildServer) => Promise<void>): Promise<void> {
  const s = await start();
  try {
    await fn(s);
  } finally {
    await s.stop();
  }
}

void test("a tls {} block: TLS clients connect, a client without TLS does not (tsnats and nats-server alike)", async () => {
  const conf = confFile(tlsConf(certs.serverCert, certs.serverKey, certs.caCert));
  const servers: Array<[string, () => Promise<ChildServer>]> = [["tsnats", () => startTsnatsChild(["-c", conf])]];
  if (findNatsServer() !== null) servers.push(["nats-server", () => startNatsServerChild(["-c", conf])]);
  for (const [name, start] of servers) {
    await withChild(start, async (s) => {
      assert.equal(await roundTrip(s.url, { tls: { caFile: certs.caCert } }), "true", name);
      await assert.rejects(() => roundTrip(s.url, { tls: null }), `${name}: a client that refuses TLS must not connect`);
    });
  }
});

void test("verify: true in the file, client certificates required (differential)", async () => {
  const alice = certs.client("cfg-alice", "/CN=alice");
  const conf = confFile(tlsConf(certs.serverCert, certs.serverKey, certs.caCert, "  verify: true\n"));
  const servers: Array<[string, () => Promise<ChildServer>]> = [["tsnats", () => startTsnatsChild(["-c", conf])]];
  if (findNatsServer() !== null) servers.push(["nats-server", () => startNatsServerChild(["-c", conf])]);
  for (const [name, start] of servers) {
    await withChild(start, async (s) => {
      await roundTrip(s.url, { tls: { caFile: certs.caCert, certFile: alice.cert, keyFile: alice.key } });
      await assert.rejects(() => roundTrip(s.url, { tls: { caFile: certs.caCert } }), `${name}: no client certificate must be refused`);
    });
  }
});

void test("flags: --tls --tlscert --tlskey, and --tlsverify --tlscacert", async () => {
  await withChild(
    () => startTsnatsChild(["-a", "127.0.0.1", "-p", "-1", "--tls", "--tlscert", certs.serverCert, "--tlskey", certs.serverKey]),
    async (s) => {
      assert.equal(await roundTrip(s.url, { tls: { caFile: certs.caCert } }), "true");
    },
  );
  const bob = certs.client("flag-bob", "/CN=bob");
  await withChild(
    () => startTsnatsChild(["-a", "127.0.0.1", "-p", "-1", "--tlsverify", "--tlscert", certs.serverCert, "--tlskey", certs.serverKey, "--tlscacert", certs.caCert]),
    async (s) => {
      await roundTrip(s.url, { tls: { caFile: certs.caCert, certFile: bob.cert, keyFile: bob.key } });
      await assert.rejects(() => roundTrip(s.url, { tls: { caFile: certs.caCert } }));
    },
  );
});

void test("SIGHUP loads new certificates for new connections", async () => {
  const other = makeCerts(); // a second CA and server certificate
  const dir = mkdtempSync(join(tmpdir(), "tsnats-reload-"));
  const cert = join(dir, "server.pem");
  const key = join(dir, "server-key.pem");
  copyFileSync(certs.serverCert, cert);
  copyFileSync(certs.serverKey, key);
  const conf = confFile(tlsConf(cert, key, certs.caCert));
  await withChild(
    () => startTsnatsChild(["-c", conf]),
    async (s) => {
      await roundTrip(s.url, { tls: { caFile: certs.caCert } });
      copyFileSync(other.serverCert, cert);
      copyFileSync(other.serverKey, key);
      s.proc.kill("SIGHUP");
      await until("the reload", () => s.log().includes("Reloaded server configuration"), 10_000);
      await roundTrip(s.url, { tls: { caFile: other.caCert } });
      await assert.rejects(() => roundTrip(s.url, { tls: { caFile: certs.caCert } }), "the old CA must no longer verify the server");
    },
  );
});

void test("settings tsnats does not implement stop the process with file, line and field; -t calls the file invalid", () => {
  const cases: Array<[string, RegExp]> = [
    ['port: -1\naccounts {\n  A { users: [ { user: a, password: b } ] }\n}\n', /server\.conf:2:1: field "accounts" is not supported/],
    ['port: -1\noperator: "/x/op.jwt"\n', /server\.conf:2:1: field "operator" is not supported/],
    ['port: -1\njetstream {\n  limits { max_ha_assets: 1 }\n}\n', /server\.conf:3:3: field "jetstream\.limits" is not supported/],
    ['port: -1\nauthorization {\n  users: [ { user: a, password: "s3cret-key", account: A } ]\n}\n', /server\.conf:3:\d+: field "authorization\.users\.account" is not supported/],
    ['port: -1\nauthorization {\n  auth_callout { issuer: x }\n}\n', /server\.conf:3:3: field "authorization\.auth_callout" is not supported/],
    ['port: -1\ntls {\n  cert_file: "/nope/c.pem"\n  key_file: "/nope/k.pem"\n}\n', /certificate/],
  ];
  for (const [text, re] of cases) {
    const conf = confFile(text);
    const run = spawnSync(process.execPath, [TSNATS_BIN, "-c", conf], { encoding: "utf8", timeout: 15_000 });
    assert.notEqual(run.status, 0, `started with: ${text}`);
    assert.match(run.stderr + run.stdout, re);
    // No secret in the error output.
    assert.ok(!(run.stderr + run.stdout).includes("s3cret-key"), "the key must not be printed");
    if (!text.includes("/nope/")) {
      const check = spawnSync(process.execPath, [TSNATS_BIN, "-t", "-c", conf], { encoding: "utf8", timeout: 15_000 });
      assert.notEqual(check.status, 0, `-t accepted: ${text}`);
    }
  }
});
