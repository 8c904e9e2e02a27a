// Connection options: --user/--password and --token, from flags, environment and contexts.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { TARGETS, cleanupCliEnv, makeCliEnv, runCli, startServer, type CliEnv, type RunningServer } from "../helpers/cli.js";

for (const target of TARGETS) {
  void describe(`tsnats CLI authentication against ${target.name}`, { skip: target.skip }, () => {
    let userServer: RunningServer;
    let tokenServer: RunningServer;
    let env: CliEnv;
    let tokenEnv: CliEnv;
    before(async () => {
      userServer = await startServer(target.name, ["--user", "alice", "--pass", "s3cret"]);
      tokenServer = await startServer(target.name, ["--auth", "t0ken"]);
      env = makeCliEnv(userServer.url);
      tokenEnv = makeCliEnv(tokenServer.url);
    });
    after(async () => {
      await userServer?.stop();
      await tokenServer?.stop();
      if (env !== undefined) cleanupCliEnv(env);
      if (tokenEnv !== undefined) cleanupCliEnv(tokenEnv);
    });

    void it("--user and --password, NATS_USER/NATS_PASSWORD, and a saved context", async () => {
      const denied = await runCli(env, ["pub", "x", "y"]);
      assert.notEqual(denied.code, 0);
      assert.match(denied.stderr, /^tsnats: error: could not connect to .*: .*(authorization|Authorization)/);
      const ok = await runCli(env, ["--user", "alice", "--password", "s3cret", "pub", "x", "y"]);
      assert.equal(ok.code, 0, ok.stderr);
      const wrong = await runCli(env, ["--user", "alice", "--password", "nope", "pub", "x", "y"]);
      assert.notEqual(wrong.code, 0);
      const viaEnv = await runCli(env, ["pub", "x", "y"], { extraEnv: { NATS_USER: "alice", NATS_PASSWORD: "s3cret" } });
      assert.equal(viaEnv.code, 0, viaEnv.stderr);
      const saved = await runCli(env, ["--user", "alice", "--password", "s3cret", "context", "add", "authed", "--select"]);
      assert.equal(saved.code, 0, saved.stderr);
      assert.match(saved.stdout, /Password: \*+/);
      assert.doesNotMatch(saved.stdout, /s3cret/);
      const viaCtx = await runCli(env, ["pub", "x", "y"], { noServerFlag: true });
      assert.equal(viaCtx.code, 0, viaCtx.stderr);
    });

    void it("--token and NATS_TOKEN", async () => {
      const denied = await runCli(tokenEnv, ["pub", "x", "y"]);
      assert.notEqual(denied.code, 0);
      const ok = await runCli(tokenEnv, ["--token", "t0ken", "pub", "x", "y"]);
      assert.equal(ok.code, 0, ok.stderr);
      const viaEnv = await runCli(tokenEnv, ["pub", "x", "y"], { extraEnv: { NATS_TOKEN: "t0ken" } });
      assert.equal(viaEnv.code, 0, viaEnv.stderr);
    });
  });
}
