import { test } from "node:test";
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { join } from "node:path";
import { parseConfigText } from "../../src/server/config/parser.js";
import { ConfigProblems, loadConfigFile, toOptions, type ToOptionsResult } from "../../src/server/config/to-options.js";
import { defaultWebSocketOptions, mergeOptions } from "../../src/server/options.js";

const FIXTURES = fileURLToPath(new URL("../../../test/fixtures/config/", import.meta.url));

function map(text: string, env: Record<string, string> = {}): ToOptionsResult {
  return toOptions(parseConfigText(text, { file: "t.conf", env }), { file: "t.conf" });
}

function problems(text: string): ConfigProblems {
  try {
    map(text);
  } catch (err) {
    assert.ok(err instanceof ConfigProblems, `expected ConfigProblems, got ${String(err)}`);
    return err;
  }
  assert.fail("expected config problems");
}

void test("basic server fields", () => {
  const { patch, warnings } = map(`
listen: 127.0.0.1:4333
server_name: s1
http: "0.0.0.0:8333"
max_payload: 2MB
max_connections: 100
max_control_line: 8KB
max_pending: 10MB
ping_interval: "30s"
ping_max: 3
write_deadline: "5s"
lame_duck_duration: "1m"
lame_duck_grace_period: "5s"
pid_file: /tmp/x.pid
ports_file_dir: /tmp
logfile: /tmp/x.log
debug: true
trace: false
logtime: false
no_auth_user: guest
`);
  assert.deepEqual(warnings, []);
  assert.deepEqual(patch, {
    host: "127.0.0.1",
    port: 4333,
    serverName: "s1",
    httpHost: "0.0.0.0",
    httpPort: 8333,
    maxPayloadBytes: 2 * 1024 * 1024,
    maxConnections: 100,
    maxControlLineBytes: 8192,
    maxPendingBytes: 10 * 1024 * 1024,
    pingIntervalMs: 30_000,
    pingMax: 3,
    writeDeadlineMs: 5000,
    lameDuckDurationMs: 60_000,
    lameDuckGracePeriodMs: 5000,
    pidFile: "/tmp/x.pid",
    portsFileDir: "/tmp",
    logFile: "/tmp/x.log",
    debug: true,
    trace: false,
    logTime: false,
    noAuthUser: "guest",
  });
});

void test("aliases: host/net, port, monitor_port, log_file, pidfile, max_conn", () => {
  const { patch } = map("net: 10.0.0.1\nport: 4111\nmonitor_port: 8111\nlog_file: a.log\npidfile: p\nmax_conn: 0\n");
  assert.deepEqual(patch, { host: "10.0.0.1", port: 4111, httpPort: 8111, logFile: "a.log", pidFile: "p", maxConnections: -1 });
});

void test("listen with only a port, IPv6, and a bare number", () => {
  assert.deepEqual(map("listen: ':4555'\n").patch, { port: 4555 });
  assert.deepEqual(map('listen: "[::1]:4556"\n').patch, { host: "::1", port: 4556 });
  assert.deepEqual(map("listen: 4557\n").patch, { port: 4557 });
  assert.match(problems("listen: nope\n").message, /t\.conf:1:1: could not parse address/);
});

void test("ping_interval as seconds number warns like nats-server", () => {
  const { patch, warnings } = map("ping_interval: 20\n");
  assert.equal(patch.pingIntervalMs, 20_000);
  assert.equal(warnings.length, 1);
  assert.match(warnings[0] ?? "", /t\.conf:1:1: invalid use of field "ping_interval": ping_interval should be converted to a duration/);
});

void test("bad duration is an error with position", () => {
  assert.match(problems('\n  write_deadline: "5x"\n').message, /^t\.conf:2:3: error parsing write_deadline: time: invalid duration "5x"$/);
});

void test("authorization block", () => {
  const { patch } = map(`
authorization {
  user: a
  password: b
  token: t
  timeout: 3
}
`);
  assert.deepEqual(patch.authorization, { user: "a", password: "b", token: "t", timeoutMs: 3000 });
  const u = map(`authorization { users: [ {user: x, password: y}, {username: z, pass: w, permissions: {publish: ">"}} ], timeout: "1.5s" }\n`);
  assert.deepEqual(u.patch.authorization, {
    users: [
      { user: "x", password: "y", permissions: null },
      { user: "z", password: "w", permissions: { publish: { allow: [">"], deny: [] }, subscribe: null, response: null } },
    ],
    timeoutMs: 1500,
  });
});

void test("jetstream forms", () => {
  assert.deepEqual(map("jetstream: true\n").patch.jetstream, { enabled: true });
  assert.deepEqual(map("jetstream: false\n").patch.jetstream, { enabled: false });
  assert.deepEqual(map("jetstream: enabled\n").patch.jetstream, { enabled: true });
  assert.deepEqual(map("jetstream: disabled\n").patch.jetstream, { enabled: false });
  assert.deepEqual(
    map('jetstream { store_dir: "/data", max_mem: 1G, max_file_store: "10GB", sync_interval: "2m", domain: hub }\n').patch.jetstream,
    { enabled: true, storeDir: "/data", maxMemoryStoreBytes: 1e9, maxFileStoreBytes: 10 * 1024 ** 3, syncIntervalMs: 120_000, domain: "hub" },
  );
  // A size in a string follows nats-server's getStorageSize: the letter is a power of 1024.
  assert.deepEqual(map('jetstream { max_mem: "1G", max_file: "512M" }\n').patch.jetstream, {
    enabled: true,
    maxMemoryStoreBytes: 1024 ** 3,
    maxFileStoreBytes: 512 * 1024 ** 2,
  });
  assert.deepEqual(map("jetstream { sync: always, enabled: false }\n").patch.jetstream, { enabled: false, syncIntervalMs: "always" });
  assert.deepEqual(map("store_dir: /x\njetstream: true\n").patch.jetstream, { storeDir: "/x", enabled: true });
  assert.match(problems("jetstream: maybe\n").message, /Expected 'enabled' or 'disabled'/);
  // The API queue limit (src/jetstream/api.ts).
  assert.deepEqual(map("jetstream { request_queue_limit: 500 }\n").patch.jetstream, { enabled: true, requestQueueLimit: 500 });
  assert.deepEqual(map("jetstream { info_queue_limit: 200 }\n").patch.jetstream, { enabled: true, infoQueueLimit: 200 });
});

void test("unknown keys are errors with their position; all errors reported", () => {
  const p = problems("port: 4222\nbogus: 1\njetstream {\n    weird: 2\n}\nauthorization { users: [ {user: a, colour: red} ] }\n");
  assert.equal(p.errors.length, 3);
  assert.equal(p.errors[0]?.message, 't.conf:2:1: unknown field "bogus"');
  assert.equal(p.errors[1]?.message, 't.conf:4:5: unknown field "weird"');
  assert.match(p.errors[2]?.message ?? "", /t\.conf:6:36: unknown field "colour"/);
  assert.equal(p.message.split("\n").length, 3);
});

void test("unknown key from a fixture file carries the file name", () => {
  const path = join(FIXTURES, "unknown-key.conf");
  assert.throws(() => loadConfigFile(path, {}), (err: unknown) => {
    assert.ok(err instanceof ConfigProblems);
    assert.equal(err.message, `${path}:5:5: unknown field "bogus_key"`);
    return true;
  });
});

void test("keys used only as variables are not unknown", () => {
  const { patch } = map("PASS: secret\nauthorization { user: u, password: $PASS }\n");
  assert.equal(patch.authorization?.password, "secret");
});

void test("wrong types are errors with position", () => {
  const p = problems('port: "abc"\ndebug: 1\nserver_name: [1]\nmax_payload: "lots"\n');
  assert.deepEqual(
    p.errors.map((e) => e.message),
    [
      't.conf:1:1: expected an integer for "port", got string "abc"',
      't.conf:2:1: expected a boolean for "debug", got number 1',
      't.conf:3:1: expected a string for "server_name", got an array',
      't.conf:4:1: expected a size for "max_payload" (like 1024, 1K, 1MB), got string "lots"',
    ],
  );
});

void test("known but unsupported keys are accepted with warnings (nats.js launcher config)", () => {
  const path = join(FIXTURES, "launcher.conf");
  const { patch, warnings } = loadConfigFile(path, {});
  assert.deepEqual(patch, {
    host: "127.0.0.1",
    port: -1,
    httpHost: "127.0.0.1",
    httpPort: -1,
    jetstream: { enabled: true, maxFileStoreBytes: 1048576, maxMemoryStoreBytes: 1048576, storeDir: "/tmp/jetstream_test_abc" },
    portsFileDir: "/tmp",
    serverTags: ["id:dgkq1vs0lrj3cpl2ixzk1m"],
    authorization: { users: [{ user: "derek", password: "foobar", permissions: null }] },
    websocket: { ...defaultWebSocketOptions(), port: -1, noTls: true },
    configFile: path,
  });
  assert.equal(warnings.length, 1);
  assert.match(warnings.join("\n"), /launcher\.conf:4:1: field "leafnodes": leaf node connections are not supported by tsnats; no leaf node port is opened/);
});

void test("websocket block: nats-server's fields and aliases", () => {
  const { patch, warnings } = map(`
ws {
  listen: "127.0.0.1:8080"
  advertise: "ws.example:443"
  no_tls: true
  same_origin: true
  origins: ["https://a.example", "http://b.example:8080"]
  handshake_timeout: 5
  compress: true
  authentication { user: wu, pass: wp, timeout: 1.5 }
  no_auth_user: ""
}
`);
  assert.deepEqual(warnings, []);
  assert.deepEqual(patch.websocket, {
    ...defaultWebSocketOptions(),
    host: "127.0.0.1",
    port: 8080,
    advertise: "ws.example:443",
    noTls: true,
    sameOrigin: true,
    allowedOrigins: ["https://a.example", "http://b.example:8080"],
    handshakeTimeoutMs: 5000,
    compression: true,
    authorization: { user: "wu", password: "wp", token: "", users: [], timeoutMs: 1500, defaultPermissions: null },
  });
  const p2 = map(`websocket { port: 8081, no_tls: true, allowed_origins: "http://x", handshake_timeout: "250ms", authorization { token: t } }`).patch;
  assert.equal(p2.websocket?.port, 8081);
  assert.deepEqual(p2.websocket?.allowedOrigins, ["http://x"]);
  assert.equal(p2.websocket?.handshakeTimeoutMs, 250);
  assert.equal(p2.websocket?.authorization?.token, "t");
  assert.equal(p2.websocket?.authorization?.timeoutMs, 0); // the server's
});

void test("websocket block: TLS required unless no_tls, unsupported fields are errors naming file:line", () => {
  assert.match(problems(`websocket {\n  port: 8080\n}`).message, /t\.conf:1:1: websocket requires TLS configuration/);
  assert.match(problems(`websocket {\n  port: 8080\n  no_tls: false\n}`).message, /websocket requires TLS configuration/);
  // No port: the block is off and needs nothing.
  assert.equal(map(`websocket { compression: true }`).patch.websocket?.port, 0);
  // wss: the tls {} block of the client port's form.
  assert.match(problems(`websocket {\n  port: 8080\n  tls { cert_file: a }\n}`).message, /t\.conf:3:3: missing 'cert_file' or 'key_file' in tls config/);
  assert.equal(map(`websocket {\n  port: 8080\n  tls { cert_file: a, key_file: b, verify: true }\n}`).patch.websocket?.tls?.verify, true);
  for (const f of ["jwt_cookie: c", "user_cookie: c", "pass_cookie: c", "token_cookie: c", "headers { a: b }", 'ping_interval: "1s"']) {
    const name = f.split(/[: ]/)[0]!;
    assert.match(problems(`websocket {\n  no_tls: true\n  ${f}\n}`).message, new RegExp(`t\\.conf:3:3: field "websocket\\.${name}"`), f);
  }
  assert.match(problems(`websocket {\n  no_tls: true\n  bogus: 1\n}`).message, /t\.conf:3:3: unknown field "bogus"/);
  assert.match(problems(`websocket {\n  no_tls: true\n  authorization { users: [] }\n}`).message, /unknown field "users"/);
  assert.match(problems(`websocket {\n  no_tls: true\n  compression: "yes"\n}`).message, /expected a boolean for "compression"/);
  assert.match(problems(`websocket {\n  no_tls: true\n  allowed_origins: [1]\n}`).message, /unsupported type in array/);
  assert.match(problems(`websocket {\n  no_tls: true\n  allowed_origins: ["not a url"]\n}`).message, /unable to parse allowed origin/);
  assert.match(problems(`websocket: 1`).message, /expected a map for "websocket"/);
});

void test("include fixture maps through, and merges with flags-style patches", () => {
  const { patch, warnings } = loadConfigFile(join(FIXTURES, "main.conf"), { BOB_PASS: "pw" });
  assert.equal(patch.host, "127.0.0.1");
  assert.equal(patch.port, 4333);
  assert.equal(patch.httpPort, 8333);
  assert.equal(patch.maxPayloadBytes, 2 * 1024 * 1024);
  assert.deepEqual(patch.jetstream, {
    enabled: true,
    storeDir: "/tmp/tsnats-fixture",
    maxMemoryStoreBytes: 1e9,
    maxFileStoreBytes: 10 * 1024 ** 3,
    syncIntervalMs: "always",
  });
  assert.equal(patch.authorization?.timeoutMs, 1500);
  assert.equal(patch.authorization?.users?.[1]?.password, "pw");
  assert.equal(patch.cluster?.name, "c1");
  const opts = mergeOptions(patch, { port: 5000 });
  assert.equal(opts.port, 5000);
  assert.equal(opts.jetstream.domain, "");
  assert.equal(opts.serverName, "fixture-1");
});

void test("empty config warns", () => {
  const { patch, warnings } = map("# nothing\n");
  assert.deepEqual(patch, {});
  assert.match(warnings[0] ?? "", /config has no values or is empty/);
});
