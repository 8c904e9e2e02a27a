// `tsnats` messaging, account/server, bench, contexts and terminal prompts, run as child
// processes against nats-server and tsnats.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import {
  HAVE_SCRIPT,
  TARGETS,
  cleanupCliEnv,
  makeCliEnv,
  runCli,
  runCliPty,
  spawnCli,
  startServer,
  type CliEnv,
  type RunningServer,
} from "../helpers/cli.js";

const NO_PTY = HAVE_SCRIPT ? undefined : "util-linux `script` is not installed, prompts cannot be driven";

for (const target of TARGETS) {
  void describe(`tsnats CLI messaging, server, bench and contexts against ${target.name}`, { skip: target.skip }, () => {
    let server: RunningServer;
    let env: CliEnv;
    before(async () => {
      server = await startServer(target.name);
      env = makeCliEnv(server.url);
    });
    after(async () => {
      await server?.stop();
      if (env !== undefined) cleanupCliEnv(env);
    });

    void it("sub prints what pub sends, with headers; --queue and --headers-only", async () => {
      const sub = spawnCli(env, ["sub", "greet.*", "--count", "2"]);
      await sub.waitFor("stderr", "Subscribing on greet.*");
      const q = spawnCli(env, ["sub", "greet.*", "--queue", "workers", "--headers-only", "--count", "2"]);
      await q.waitFor("stderr", "Subscribing on greet.* in group workers");
      assert.equal((await runCli(env, ["pub", "greet.a", "hello", "-H", "Lang:en"])).code, 0);
      assert.equal((await runCli(env, ["pub", "greet.b", "world"])).code, 0);
      const r = await sub.done;
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stdout, /^\[#1\] Received on "greet\.a"\nLang: en\n\nhello\n/m);
      assert.match(r.stdout, /^\[#2\] Received on "greet\.b"\nworld\n/m);
      const qr = await q.done;
      assert.equal(qr.code, 0, qr.stderr);
      assert.match(qr.stdout, /Lang: en/);
      assert.doesNotMatch(qr.stdout, /hello/);
    });

    void it("req gets the reply from reply (echo and fixed body); no responders is an error", async () => {
      const echo = spawnCli(env, ["reply", "svc.echo", "--count", "1"]);
      await echo.waitFor("stderr", 'Listening on "svc.echo"');
      const r1 = await runCli(env, ["req", "svc.echo", "ping"]);
      assert.equal(r1.code, 0, r1.stderr);
      assert.match(r1.stderr, /Sending request on "svc\.echo"/);
      assert.match(r1.stderr, /Received with rtt /);
      assert.equal(r1.stdout.trim(), "ping");
      assert.equal((await echo.done).code, 0);
      const fixed = spawnCli(env, ["reply", "svc.fixed", "pong {{Count}}", "--count", "1"]);
      await fixed.waitFor("stderr", "Listening on");
      const r2 = await runCli(env, ["req", "svc.fixed", "anything", "--raw"]);
      assert.equal(r2.stdout.trim(), "pong 1");
      await fixed.done;
      const none = await runCli(env, ["req", "svc.nobody", "x"]);
      assert.notEqual(none.code, 0);
      assert.match(none.stderr, /no responders/i);
    });

    void it("account info, server ping, server info and server check jetstream", async () => {
      await runCli(env, ["stream", "add", "ACCT", "--subjects", "acct.>", "--defaults"]);
      const a = await runCli(env, ["account", "info"]);
      assert.equal(a.code, 0, a.stderr);
      assert.match(a.stdout, /^Account Information$/m);
      assert.match(a.stdout, /^ +Connected Server Version: \d+\.\d+\.\d+/m);
      assert.match(a.stdout, /^JetStream Account Information:$/m);
      assert.match(a.stdout, /^ +Streams: 1 of Unlimited$/m);
      const aj = await runCli(env, ["account", "info", "--json"]);
      const parsed = JSON.parse(aj.stdout) as { jetstream: { streams: number } };
      assert.equal(parsed.jetstream.streams, 1);
      const p = await runCli(env, ["server", "ping"]);
      assert.equal(p.code, 0, p.stderr);
      assert.match(p.stdout, /rtt=/);
      assert.match(p.stdout, /---- ping statistics ----\n1 replies max: /);
      const i = await runCli(env, ["server", "info"]);
      assert.equal(i.code, 0, i.stderr);
      assert.match(i.stdout, /^Server information for /);
      assert.match(i.stdout, /^ +Enabled: true$/m);
      const c = await runCli(env, ["server", "check", "jetstream"]);
      assert.equal(c.code, 0, c.stderr);
      assert.match(c.stdout, /^JetStream OK .*streams=1 /);
    });

    void it("bench pub, sub, js pub, js consume and kv print rates and latency percentiles", async () => {
      const pub = await runCli(env, ["bench", "pub", "bench.core", "--msgs", "2000", "--size", "64"]);
      assert.equal(pub.code, 0, pub.stderr);
      assert.match(pub.stdout, /^NATS Core NATS publisher stats: [\d,]+ msgs\/sec ~ .*\/sec$/m);
      const sub = spawnCli(env, ["bench", "sub", "bench.fan", "--msgs", "500"]);
      await sub.waitFor("stderr", "Subscribers ready");
      assert.equal((await runCli(env, ["bench", "pub", "bench.fan", "--msgs", "500"])).code, 0);
      const sr = await sub.done;
      assert.equal(sr.code, 0, sr.stderr);
      assert.match(sr.stdout, /^NATS Core NATS subscriber stats: [\d,]+ msgs\/sec/m);
      const js = await runCli(env, ["bench", "js", "pub", "bench.js", "--msgs", "200", "--create", "--purge", "--storage", "memory"]);
      assert.equal(js.code, 0, js.stderr);
      assert.match(js.stdout, /^NATS JetStream sync publisher stats: [\d,]+ msgs\/sec ~ .* ~ P50: [\d.,]+us ~ P90: .* ~ P99: [\d.,]+us/m);
      const asy = await runCli(env, ["bench", "js", "pub", "async", "bench.js", "--msgs", "300", "--batch", "100", "--clients", "2"]);
      assert.equal(asy.code, 0, asy.stderr);
      assert.match(asy.stdout, /aggregated stats: [\d,]+ msgs\/sec/);
      const con = await runCli(env, ["bench", "js", "consume", "--msgs", "500", "--batch", "100"]);
      assert.equal(con.code, 0, con.stderr);
      assert.match(con.stdout, /^NATS JetStream consumer stats: [\d,]+ msgs\/sec .* P99: /m);
      const kvput = await runCli(env, ["bench", "kv", "put", "--msgs", "100", "--storage", "memory"]);
      assert.equal(kvput.code, 0, kvput.stderr);
      assert.match(kvput.stdout, /^NATS KV put stats: .* P99: /m);
      const kvget = await runCli(env, ["bench", "kv", "get", "--msgs", "100", "--storage", "memory"]);
      assert.equal(kvget.code, 0, kvget.stderr);
      assert.match(kvget.stdout, /^NATS KV get stats: .* P99: /m);
    });

    void it("contexts: add --select, ls, info, used without --server, NATS_URL, rm", async () => {
      const add = await runCli(env, ["context", "add", "local", "--description", "test server", "--select"]);
      assert.equal(add.code, 0, add.stderr);
      assert.match(add.stdout, /^NATS Configuration Context "local"/);
      assert.match(add.stdout, new RegExp(`Server URLs: ${server.url.replace(/[.]/g, "\\.")}`));
      const ls = await runCli(env, ["context", "ls"]);
      assert.match(ls.stdout, /local\*/);
      assert.match(ls.stdout, /test server/);
      const info = await runCli(env, ["context", "info"], { noServerFlag: true });
      assert.match(info.stdout, /Description: test server/);
      const viaCtx = await runCli(env, ["server", "check", "jetstream"], { noServerFlag: true });
      assert.equal(viaCtx.code, 0, viaCtx.stderr);
      await runCli(env, ["context", "add", "broken", "--server", "nats://127.0.0.1:1"], { noServerFlag: true });
      const sel = await runCli(env, ["context", "select", "broken"], { noServerFlag: true });
      assert.equal(sel.code, 0, sel.stderr);
      const fails = await runCli(env, ["--timeout", "1s", "server", "check", "jetstream"], { noServerFlag: true });
      assert.notEqual(fails.code, 0, "the selected context points at a closed port");
      const envWins = await runCli(env, ["server", "check", "jetstream"], { noServerFlag: true, extraEnv: { NATS_URL: server.url } });
      assert.equal(envWins.code, 0, "NATS_URL beats the context");
      const named = await runCli(env, ["--context", "local", "server", "check", "jetstream"], { noServerFlag: true });
      assert.equal(named.code, 0, named.stderr);
      const rm = await runCli(env, ["context", "rm", "broken", "-f"], { noServerFlag: true });
      assert.equal(rm.code, 0, rm.stderr);
      const unknown = await runCli(env, ["context", "select", "broken"], { noServerFlag: true });
      assert.notEqual(unknown.code, 0);
      assert.match(unknown.stderr, /unknown context "broken"/);
    });

    void it("prompts on a terminal for the stream name and subjects", { skip: NO_PTY }, async () => {
      const r = await runCliPty(
        env,
        [
          "stream", "add", "--storage", "file", "--replicas", "1", "--retention", "limits", "--discard", "old",
          "--max-msgs", "-1", "--max-msgs-per-subject", "-1", "--max-bytes", "-1", "--max-age", "-1", "--max-msg-size", "-1",
          "--dupe-window", "2m", "--no-allow-rollup", "--no-deny-delete", "--no-deny-purge",
        ],
        [
          { prompt: "? Stream Name", reply: "PROMPTED" },
          { prompt: "? Subjects", reply: "prompted.>" },
        ],
      );
      assert.equal(r.code, 0, r.stdout);
      assert.match(r.stdout, /Stream PROMPTED was created/);
      assert.match(r.stdout, /Subjects: prompted\.>/);
    });

    void it("asks every stream question natscli asks, taking defaults and choices by name or number", { skip: NO_PTY }, async () => {
      const r = await runCliPty(env, ["stream", "add"], [
        { prompt: "? Stream Name", reply: "ASKED" },
        { prompt: "? Subjects", reply: "asked.one, asked.two" },
        { prompt: "? Storage", reply: "memory" },
        { prompt: "? Replication", reply: "" },
        { prompt: "? Retention Policy", reply: "2" },
        { prompt: "? Discard Policy", reply: "new" },
        { prompt: "? Stream Messages Limit", reply: "1000" },
        { prompt: "? Per Subject Messages Limit", reply: "" },
        { prompt: "? Total Stream Size", reply: "1MB" },
        { prompt: "? Message TTL", reply: "1h" },
        { prompt: "? Max Message Size", reply: "" },
        { prompt: "? Duplicate tracking time window", reply: "" },
        { prompt: "? Allow message Roll-ups", reply: "y" },
        { prompt: "? Allow message deletion", reply: "n" },
        { prompt: "? Allow purging subjects or the entire stream", reply: "" },
      ]);
      assert.equal(r.code, 0, r.stdout);
      assert.match(r.stdout, /Stream ASKED was created/);
      assert.match(r.stdout, /Subjects: asked\.one, asked\.two/);
      assert.match(r.stdout, /Storage: Memory/);
      assert.match(r.stdout, /Retention: Interest/);
      assert.match(r.stdout, /Discard Policy: New/);
      assert.match(r.stdout, /Maximum Messages: 1,000/);
      assert.match(r.stdout, /Maximum Bytes: 1\.0 MiB/);
      assert.match(r.stdout, /Maximum Age: 1h0m0s/);
      assert.match(r.stdout, /Allows Rollups: true/);
      assert.match(r.stdout, /Allows Msg Delete: false/);
      assert.match(r.stdout, /Allows Purge: true/);
    });

    void it("asks the consumer questions and confirms deletes on a terminal; --defaults never asks", { skip: NO_PTY }, async () => {
      const c = await runCliPty(env, ["consumer", "add", "ASKED"], [
        { prompt: "? Consumer name", reply: "ASKEDC" },
        { prompt: "? Delivery target", reply: "" },
        { prompt: "? Start policy", reply: "" },
        { prompt: "? Acknowledgment policy", reply: "" },
        { prompt: "? Replay policy", reply: "" },
        { prompt: "? Filter Stream by subjects", reply: "asked.one" },
        { prompt: "? Maximum Allowed Deliveries", reply: "3" },
        { prompt: "? Maximum Acknowledgments Pending", reply: "" },
        { prompt: "? Deliver headers only", reply: "" },
        { prompt: "? Add a Retry Backoff Policy", reply: "" },
      ]);
      assert.equal(c.code, 0, c.stdout);
      assert.match(c.stdout, /Information for Consumer ASKED > ASKEDC/);
      assert.match(c.stdout, /Filter Subject: asked\.one/);
      assert.match(c.stdout, /Maximum Deliveries: 3/);
      const rm = await runCliPty(env, ["consumer", "rm", "ASKED", "ASKEDC"], [{ prompt: "Really delete Consumer ASKED > ASKEDC", reply: "y" }]);
      assert.equal(rm.code, 0, rm.stdout);
      const gone = await runCli(env, ["consumer", "info", "ASKED", "ASKEDC"]);
      assert.notEqual(gone.code, 0);
      const keep = await runCliPty(env, ["stream", "rm", "ASKED"], [{ prompt: "Really delete Stream ASKED", reply: "n" }]);
      assert.equal(keep.code, 0, keep.stdout);
      assert.equal((await runCli(env, ["stream", "info", "ASKED"])).code, 0, "answering no keeps the stream");
      const quiet = await runCliPty(env, ["stream", "add", "QUIET", "--subjects", "quiet.>", "--defaults"], []);
      assert.equal(quiet.code, 0, quiet.stdout);
      assert.doesNotMatch(quiet.stdout, /^\? /m);
      assert.match(quiet.stdout, /Stream QUIET was created/);
    });
  });
}
