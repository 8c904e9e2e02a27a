import { test } from "node:test";
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { join } from "node:path";
import { FlagError, configCheck, parseServerFlags, usageText } from "../../src/server/flags.js";

const FIXTURES = fileURLToPath(new URL("../../../test/fixtures/config/", import.meta.url));

void test("no flags", () => {
  assert.deepEqual(parseServerFlags([]), {
    patch: {},
    configFile: "",
    checkConfig: false,
    showVersion: false,
    showHelp: false,
    signal: "",
  });
});

void test("server flags, short and long, space and = forms", () => {
  const f = parseServerFlags(["-a", "127.0.0.1", "-p=4333", "--name", "srv", "-m", "8333", "-P", "/tmp/p.pid", "--ports_file_dir=/tmp"]);
  assert.deepEqual(f.patch, { host: "127.0.0.1", port: 4333, serverName: "srv", httpPort: 8333, pidFile: "/tmp/p.pid", portsFileDir: "/tmp" });
  const g = parseServerFlags(["--addr=0.0.0.0", "--port", "1", "--server_name=x", "--http_port=2", "--pid", "q", "-net", "h"]);
  assert.deepEqual(g.patch, { host: "h", port: 1, serverName: "x", httpPort: 2, pidFile: "q" });
});

void test("-p -1 means a random port", () => {
  assert.equal(parseServerFlags(["-p", "-1"]).patch.port, -1);
  assert.equal(parseServerFlags(["-m", "-1"]).patch.httpPort, -1);
});

void test("config and -t", () => {
  const f = parseServerFlags(["-c", "a.conf", "-t"]);
  assert.equal(f.configFile, "a.conf");
  assert.equal(f.patch.configFile, "a.conf");
  assert.equal(f.checkConfig, true);
  assert.equal(parseServerFlags(["--config=b.conf"]).configFile, "b.conf");
});

void test("logging flags", () => {
  assert.deepEqual(parseServerFlags(["-D"]).patch, { debug: true });
  assert.deepEqual(parseServerFlags(["-V"]).patch, { trace: true });
  assert.deepEqual(parseServerFlags(["-VV"]).patch, { trace: true });
  assert.deepEqual(parseServerFlags(["-DV"]).patch, { debug: true, trace: true });
  assert.deepEqual(parseServerFlags(["-DVV"]).patch, { debug: true, trace: true });
  assert.deepEqual(parseServerFlags(["--debug", "--trace"]).patch, { debug: true, trace: true });
  assert.deepEqual(parseServerFlags(["-T=false"]).patch, { logTime: false });
  assert.deepEqual(parseServerFlags(["--logtime"]).patch, { logTime: true });
  assert.deepEqual(parseServerFlags(["-l", "/tmp/x.log"]).patch, { logFile: "/tmp/x.log" });
  assert.deepEqual(parseServerFlags(["--log=/tmp/y.log"]).patch, { logFile: "/tmp/y.log" });
});

void test("jetstream and auth flags", () => {
  assert.deepEqual(parseServerFlags(["-js", "-sd", "/data"]).patch, { jetstream: { enabled: true, storeDir: "/data" } });
  assert.deepEqual(parseServerFlags(["--jetstream", "--store_dir=/d"]).patch, { jetstream: { enabled: true, storeDir: "/d" } });
  assert.deepEqual(parseServerFlags(["--user", "u", "--pass", "p", "--auth=t"]).patch, { authorization: { user: "u", password: "p", token: "t" } });
});

void test("version, help, signal", () => {
  assert.equal(parseServerFlags(["-v"]).showVersion, true);
  assert.equal(parseServerFlags(["--version"]).showVersion, true);
  assert.equal(parseServerFlags(["-h"]).showHelp, true);
  assert.equal(parseServerFlags(["--help"]).showHelp, true);
  assert.equal(parseServerFlags(["-sl", "reload=123"]).signal, "reload=123");
  assert.equal(parseServerFlags(["--signal=stop"]).signal, "stop");
});

void test("bad flags are FlagErrors with clear messages", () => {
  const bad = (argv: string[], re: RegExp): void => {
    assert.throws(() => parseServerFlags(argv), (err: unknown) => {
      assert.ok(err instanceof FlagError);
      assert.match(err.message, re);
      return true;
    });
  };
  bad(["--bogus"], /^flag provided but not defined: -bogus$/);
  bad(["-x=1"], /flag provided but not defined: -x/);
  bad(["-p"], /^flag needs an argument: -p$/);
  bad(["-p", "abc"], /invalid value "abc" for flag -port/);
  bad(["-D=maybe"], /invalid boolean value "maybe"/);
  bad(["stray"], /unexpected argument "stray"/);
  bad(["---p"], /bad flag syntax/);
  bad(["-js", "--", "x"], /unexpected argument "x"/);
});

void test("flags win over the config file when merged after it", async () => {
  const { mergeOptions } = await import("../../src/server/options.js");
  const { loadConfigFile } = await import("../../src/server/config/to-options.js");
  const file = loadConfigFile(join(FIXTURES, "launcher.conf"), {});
  const flags = parseServerFlags(["-p", "4999", "-sd", "/other"]);
  const opts = mergeOptions(file.patch, flags.patch);
  assert.equal(opts.port, 4999);
  assert.equal(opts.jetstream.storeDir, "/other");
  assert.equal(opts.jetstream.enabled, true);
  assert.equal(opts.host, "127.0.0.1");
});

void test("usage text lists the supported flags", () => {
  const u = usageText();
  for (const f of ["--addr", "--port", "--server_name", "--http_port", "--config", "-t", "--pid", "--log", "--debug", "--trace", "-DV", "--logtime", "--ports_file_dir", "--jetstream", "--store_dir", "--user", "--pass", "--auth", "--version", "--help"]) {
    assert.ok(u.includes(f), `usage mentions ${f}`);
  }
});

void test("configCheck: valid, syntax error, unknown field", () => {
  const ok = configCheck(join(FIXTURES, "launcher.conf"), {});
  assert.equal(ok.valid, true);
  assert.match(ok.message, /launcher\.conf is valid \(sha256:[0-9a-f]{64}\)$/);
  assert.equal(ok.warnings.length, 1); // leafnodes (websocket and server_tags are read now)
  const syn = configCheck(join(FIXTURES, "bad-syntax.conf"), {});
  assert.equal(syn.valid, false);
  assert.match(syn.message, /bad-syntax\.conf:5:17: /);
  const unk = configCheck(join(FIXTURES, "unknown-key.conf"), {});
  assert.equal(unk.valid, false);
  assert.match(unk.message, /unknown-key\.conf:5:5: unknown field "bogus_key"/);
  const missing = configCheck(join(FIXTURES, "nope.conf"), {});
  assert.equal(missing.valid, false);
  assert.match(missing.message, /error opening config file/);
});

void test("cluster flags: --cluster (listen and its credentials), --cluster_name, --routes, --no_advertise, --cluster_advertise", () => {
  const f = parseServerFlags(["--cluster", "nats://ru:rp@127.0.0.1:6222", "--cluster_name", "c1", "--routes", "nats-route://127.0.0.1:6223, nats://h:6224", "--no_advertise", "--cluster_advertise", "10.0.0.1:6222"]);
  assert.deepEqual(f.patch.cluster, { host: "127.0.0.1", port: 6222, user: "ru", password: "rp", name: "c1", routes: ["nats-route://127.0.0.1:6223", "nats://h:6224"], noAdvertise: true, advertise: "10.0.0.1:6222" });
  assert.throws(() => parseServerFlags(["--cluster", "6222"]), FlagError);
  assert.deepEqual(parseServerFlags(["-cluster", "nats://127.0.0.1:-1"]).patch.cluster, { host: "127.0.0.1", port: -1 });
  assert.deepEqual(parseServerFlags(["-cluster", "nats://[::1]:6222"]).patch.cluster, { host: "::1", port: 6222 });
  assert.throws(() => parseServerFlags(["--routes", "nope"]), FlagError);
  assert.equal(parseServerFlags(["--client_advertise", "nats.example.net:4333"]).patch.clientAdvertise, "nats.example.net:4333");
});
