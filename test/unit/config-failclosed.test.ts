// Fail closed: every security-relevant (or behaviour-changing) setting of nats-server's
// config reference either works in tsnats or stops it at startup with an error naming the
// file, line and field. A table over the field names, so a new field cannot slip into the
// warnings by accident.

import { test } from "node:test";
import assert from "node:assert/strict";
import { parseConfigText } from "../../src/server/config/parser.js";
import { ConfigProblems, IGNORED_TOP_LEVEL, REFUSED_TOP_LEVEL, toOptions } from "../../src/server/config/to-options.js";

const FILE = "/etc/tsnats/test.conf";

function map(text: string): ReturnType<typeof toOptions> {
  return toOptions(parseConfigText(text, { file: FILE }), { file: FILE });
}

/** Asserts the config text is refused, with an error on `line` naming `field`. */
function refused(text: string, line: number, field: string): void {
  assert.throws(
    () => map(text),
    (err: unknown) => {
      assert.ok(err instanceof ConfigProblems, `expected ConfigProblems, got ${String(err)}`);
      const re = new RegExp(`^${FILE.replace(/\//g, "\\/")}:${line}:\\d+: .*${field.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}`, "m");
      assert.match(err.message, re);
      return true;
    },
    `not refused: ${text}`,
  );
}

// Security settings tsnats implements: they map to options, no warning.
const WORKS: Array<[string, (r: ReturnType<typeof toOptions>) => void]> = [
  ["authorization { user: a, password: b }", (r) => assert.equal(r.patch.authorization?.user, "a")],
  ["authorization { token: t }", (r) => assert.equal(r.patch.authorization?.token, "t")],
  ["authorization { users: [ { user: a, password: b, permissions: { publish: x } } ] }", (r) => assert.equal(r.patch.authorization?.users?.length, 1)],
  ["authorization { users: [ { user: a, password: b } ] }\nno_auth_user: a", (r) => assert.equal(r.patch.noAuthUser, "a")],
  ["tls { cert_file: c.pem, key_file: k.pem, verify: true, timeout: 3 }", (r) => assert.equal(r.patch.tls?.verify, true)],
  ["tls { cert_file: c.pem, key_file: k.pem, verify_and_map: true }", (r) => assert.equal(r.patch.tls?.verifyAndMap, true)],
  ["tls { cert_file: c.pem, key_file: k.pem, handshake_first: true }", (r) => assert.equal(r.patch.tls?.handshakeFirst, true)],
  ["tls { cert_file: c.pem, key_file: k.pem, handshake_first: \"300ms\" }", (r) => assert.equal(r.patch.tls?.handshakeFirstFallbackMs, 300)],
  ["tls { cert_file: c.pem, key_file: k.pem, cipher_suites: [TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256], curve_preferences: [CurveP256, X25519] }", (r) => assert.deepEqual(r.patch.tls?.curvePreferences, ["CurveP256", "X25519"])],
  ["tls { cert_file: c.pem, key_file: k.pem, pinned_certs: [\"" + "a".repeat(64) + "\"] }", (r) => assert.equal(r.patch.tls?.pinnedCerts?.length, 1)],
  ["tls { cert_file: c.pem, key_file: k.pem }\nallow_non_tls: true", (r) => assert.equal(r.patch.allowNonTls, true)],
  ["tls { cert_file: c.pem, key_file: k.pem }\nhttps: \"127.0.0.1:8443\"", (r) => assert.equal(r.patch.httpsPort, 8443)],
  ["authorization { users: [ { user: a, password: b, allowed_connection_types: [standard, WebSocket] } ] }", (r) => assert.deepEqual(r.patch.authorization?.users?.[0]?.connectionTypes, ["STANDARD", "WEBSOCKET"])],
  ["max_connections: 10", (r) => assert.equal(r.patch.maxConnections, 10)],
  ["max_control_line: 1024", (r) => assert.equal(r.patch.maxControlLineBytes, 1024)],
  ["max_payload: 1024", (r) => assert.equal(r.patch.maxPayloadBytes, 1024)],
];

for (const [text, check] of WORKS) {
  void test(`works: ${text.replace(/\n/g, "; ")}`, () => {
    const r = map(text);
    check(r);
    assert.deepEqual(r.warnings, []);
  });
}

void test("every refused top-level field stops the server, naming file, line and field", () => {
  assert.ok(REFUSED_TOP_LEVEL.size >= 30);
  for (const key of REFUSED_TOP_LEVEL.keys()) {
    // Line 2: the error must point at the field, not at the file.
    refused(`port: 4222\n${key}: {}\n`, 2, `"${key}"`);
    refused(`port: 4222\n${key}: "x"\n`, 2, `"${key}"`);
  }
});

void test("the security settings named by nats-server's reference are never mere warnings", () => {
  const mustNotWarn = [
    "tls", "accounts", "operator", "resolver", "trusted_keys", "trusted", "system_account", "mappings",
    "authorization", "no_auth_user", "allow_non_tls", "ocsp", "proxies", "default_sentinel",
  ];
  for (const k of mustNotWarn) assert.ok(!IGNORED_TOP_LEVEL.has(k), `${k} must not be a warning`);
});

// Nested fields that are refused; the line is where the field is.
const NESTED: Array<[string, number, string]> = [
  ["authorization {\n  auth_callout { issuer: x }\n}", 2, "authorization.auth_callout"],
  ["authorization {\n  users: [\n    { user: a, password: b, account: A }\n  ]\n}", 3, "authorization.users.account"],
  ["authorization {\n  users: [\n    { user: a, password: b, allowed_connection_types: [STANDARD, BOGUS] }\n  ]\n}", 3, 'unknown connection type "BOGUS"'],
  ["authorization {\n  users: [\n    { user: a, password: b, proxy_required: true }\n  ]\n}", 3, "proxy_required"],
  ["jetstream {\n  limits { max_ha_assets: 1 }\n}", 2, "jetstream.limits"],
  ["jetstream {\n  tpm { keys_file: x }\n}", 2, "jetstream.tpm"],
  ["tls {\n  cert_file: c.pem\n  key_file: k.pem\n  cert_store: WindowsCurrentUser\n}", 4, "tls.cert_store"],
  ["tls {\n  cert_file: c.pem\n  key_file: k.pem\n  ocsp_peer: true\n}", 4, "tls.ocsp_peer"],
  ["tls {\n  cert_file: c.pem\n  key_file: k.pem\n  certs: [ { cert_file: a, key_file: b } ]\n}", 4, "tls.certs"],
  ["tls {\n  cert_file: c.pem\n  key_file: k.pem\n  connection_rate_limit: \"10\"\n}", 4, "connection_rate_limit' wrong type"],
  ["tls {\n  cert_file: c.pem\n  key_file: k.pem\n  verify_cert_and_check_known_urls: true\n}", 4, "verify_cert_and_check_known_urls"],
  ["tls {\n  cert_file: c.pem\n  key_file: k.pem\n  bogus: 1\n}", 4, "bogus"],
  ["tls {\n  cert_file: c.pem\n  key_file: k.pem\n  min_version: \"1.1\"\n}", 4, "unsupported TLS version"],
  ["tls {\n  cert_file: c.pem\n  key_file: k.pem\n  cipher_suites: [TLS_RSA_WITH_AES_128_CBC_SHA]\n}", 1, "insecure cipher suites"],
  ["tls {\n  cert_file: c.pem\n  key_file: k.pem\n  cipher_suites: [NOPE]\n}", 4, "unrecognized cipher NOPE"],
  ["tls {\n  cert_file: c.pem\n  key_file: k.pem\n  curve_preferences: [X25519MLKEM768]\n}", 4, "X25519MLKEM768"],
  ["tls {\n  verify: true\n}", 1, "cert_file"],
  ["cluster {\n  listen: 127.0.0.1:6222\n  compression: s2_fast\n}", 3, "cluster.compression"],
  ["cluster {\n  listen: 127.0.0.1:6222\n  accounts: [A]\n}", 3, "cluster.accounts"],
  ["leafnodes {\n  remotes: [ { url: \"nats://x:7422\" } ]\n}", 2, "leafnodes.remotes"],
  ["gateway {\n  name: A\n  gateways: [ { name: B, url: \"nats://x:7222\" } ]\n}", 3, "gateway.gateways"],
];

for (const [text, line, field] of NESTED) {
  void test(`refused: ${field}`, () => refused(text, line, field));
}

void test("listeners tsnats does not open are warnings that say so (the nats.js launcher writes leafnodes { listen })", () => {
  const r = map("leafnodes {\n  listen: 127.0.0.1:-1\n}\nmqtt { port: 1883 }\ncluster { name: c1, listen: 127.0.0.1:-1 }\n");
  assert.equal(r.warnings.length, 2);
  assert.match(r.warnings[0]!, /:1:1: field "leafnodes": leaf node connections are not supported by tsnats; no leaf node port is opened/);
  assert.match(r.warnings[1]!, /:4:1: field "mqtt": MQTT connections/);
});

void test("cluster block: nats-server's fields map to options; pooling and pinned accounts, no compression", () => {
  const r = map(
    'cluster {\n  name: c1\n  listen: 127.0.0.1:6222\n  routes: [ nats-route://u:p@127.0.0.1:6223, "nats://h2:6224" ]\n  authorization { user: u, password: p, timeout: 3 }\n  advertise: "10.0.0.1:6222"\n  no_advertise: true\n  connect_retries: 5\n  pool_size: -1\n  compression: off\n}\n',
  );
  const c = r.patch.cluster!;
  assert.equal(c.name, "c1");
  assert.equal(c.host, "127.0.0.1");
  assert.equal(c.port, 6222);
  assert.deepEqual(c.routes, ["nats-route://u:p@127.0.0.1:6223", "nats://h2:6224"]);
  assert.equal(c.user, "u");
  assert.equal(c.password, "p");
  assert.equal(c.authTimeoutMs, 3000);
  assert.equal(c.advertise, "10.0.0.1:6222");
  assert.equal(c.noAdvertise, true);
  assert.equal(c.connectRetries, 5);
  assert.equal(c.poolSize, -1);
  // Route pooling and pinned accounts (nats-server 2.10); tsnats pins only $G and $SYS.
  const pooled = map("cluster {\n  listen: 127.0.0.1:6222\n  pool_size: 4\n  accounts: [ \"$SYS\", \"$G\" ]\n}\n").patch.cluster!;
  assert.equal(pooled.poolSize, 4);
  assert.deepEqual(pooled.accounts, ["$SYS", "$G"]);
  assert.throws(() => map("cluster {\n  listen: 127.0.0.1:6222\n  pool_size: -1\n  accounts: [ \"$G\" ]\n}\n"), /pool_size cannot be negative if pinned accounts are specified/);
  assert.throws(() => map("cluster {\n  listen: 127.0.0.1:6222\n  accounts: [ \"$G\", \"$G\" ]\n}\n"), /duplicate account name/);
  assert.throws(() => map("cluster {\n  listen: 127.0.0.1:6222\n  pool_size: -2\n}\n"), /pool_size must be/);
  // client_advertise is what other servers tell clients about this one: no longer ignored.
  const top = map("client_advertise: \"nats.example.net:4333\"\n");
  assert.equal(top.patch.clientAdvertise, "nats.example.net:4333");
  assert.deepEqual(top.warnings, []);
});

void test("cluster permissions: import and export (publish and subscribe to nats-server); allow_responses is an error", () => {
  const r = map("cluster {\n  listen: 127.0.0.1:6222\n  permissions { import: \"imp.>\", export: { allow: [\"exp.>\"], deny: [\"exp.secret\"] } }\n}\n");
  const p = r.patch.cluster!.permissions!;
  assert.deepEqual(p.publish, { allow: ["imp.>"], deny: [] });
  assert.deepEqual(p.subscribe, { allow: ["exp.>"], deny: ["exp.secret"] });
  assert.throws(() => map("cluster {\n  listen: 127.0.0.1:6222\n  permissions { import: a, allow_responses: true }\n}\n"), /do not support dynamic responses/);
});

void test("cluster: a route that is not a URL, and tokens or users in its authorization, are errors", () => {
  assert.throws(() => map("cluster {\n  listen: 127.0.0.1:6222\n  routes: [ \"nope\" ]\n}\n"), /:3:.*error parsing route url/);
  assert.throws(() => map("cluster {\n  listen: 127.0.0.1:6222\n  authorization { token: t }\n}\n"), /does not support tokens/);
});

void test("harmless fields stay warnings and change nothing", () => {
  const r = map("logfile_size_limit: 1MB\nprof_port: 6060\nmax_closed_clients: 100\n");
  assert.equal(r.warnings.length, 3);
  assert.deepEqual(r.patch, {});
});

void test("server_tags and jetstream.unique_tag are read (lower-cased, trimmed, deduplicated: nats-server's TagList)", () => {
  const r = map('server_tags: [ "AZ:1", " ssd ", "az:1" ]\njetstream { unique_tag: "AZ:" }\n');
  assert.deepEqual(r.warnings, []);
  assert.deepEqual(r.patch.serverTags, ["az:1", "ssd"]);
  assert.equal(r.patch.jetstream?.uniqueTag, "az:");
  assert.deepEqual(map("server_tags: single\n").patch.serverTags, ["single"]);
  assert.throws(() => map("server_tags: [ 1 ]\n"), /error parsing tags/);
});

void test("a secret of the wrong type is not echoed in the config error", () => {
  for (const text of ["authorization { user: a, password: 918273645 }", "authorization { token: 918273645 }", "jetstream { key: 918273645 }", "authorization { users: [ { user: a, pass: 918273645 } ] }"]) {
    assert.throws(
      () => map(text),
      (err: unknown) => {
        assert.ok(err instanceof ConfigProblems);
        assert.ok(!err.message.includes("918273645"), err.message);
        assert.match(err.message, /expected a string/);
        return true;
      },
    );
  }
});
