// `tsnats kv ...` and `tsnats object ...` run as child processes against nats-server and tsnats.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { TARGETS, cleanupCliEnv, makeCliEnv, runCli, spawnCli, startServer, type CliEnv, type RunningServer } from "../helpers/cli.js";

for (const target of TARGETS) {
  void describe(`tsnats CLI kv and object against ${target.name}`, { skip: target.skip }, () => {
    let server: RunningServer;
    let env: CliEnv;
    let dir: string;
    before(async () => {
      server = await startServer(target.name);
      env = makeCliEnv(server.url);
      dir = fs.mkdtempSync(path.join(os.tmpdir(), "tsnats-cli-obj-"));
    });
    after(async () => {
      await server?.stop();
      if (env !== undefined) cleanupCliEnv(env);
      if (dir !== undefined) fs.rmSync(dir, { recursive: true, force: true });
    });

    void it("kv add, put, get, create, update, history, ls, status", async () => {
      const add = await runCli(env, ["kv", "add", "CONFIG", "--history", "5"]);
      assert.equal(add.code, 0, add.stderr);
      assert.match(add.stdout, /^Information for Key-Value Store Bucket CONFIG created /);
      assert.match(add.stdout, /^ +History Kept: 5$/m);
      const put = await runCli(env, ["kv", "put", "CONFIG", "color", "red"]);
      assert.equal(put.code, 0, put.stderr);
      assert.equal(put.stdout.trim(), "red");
      const fromStdin = await runCli(env, ["kv", "put", "CONFIG", "shape"], { input: "circle" });
      assert.equal(fromStdin.code, 0, fromStdin.stderr);
      const get = await runCli(env, ["kv", "get", "CONFIG", "color"]);
      assert.equal(get.code, 0, get.stderr);
      assert.match(get.stdout, /^CONFIG > color revision: 1 created @ .*\n\nred\n/);
      const raw = await runCli(env, ["kv", "get", "CONFIG", "shape", "--raw"]);
      assert.equal(raw.stdout, "circle");
      const created = await runCli(env, ["kv", "create", "CONFIG", "size", "big"]);
      assert.equal(created.code, 0, created.stderr);
      const dup = await runCli(env, ["kv", "create", "CONFIG", "size", "small"]);
      assert.notEqual(dup.code, 0, "create on an existing key fails");
      assert.match(dup.stderr, /^tsnats: error: .*wrong last sequence/);
      const upd = await runCli(env, ["kv", "update", "CONFIG", "color", "blue", "1"]);
      assert.equal(upd.code, 0, upd.stderr);
      const stale = await runCli(env, ["kv", "update", "CONFIG", "color", "green", "1"]);
      assert.notEqual(stale.code, 0, "update with a stale revision fails");
      const hist = await runCli(env, ["kv", "history", "CONFIG", "color"]);
      assert.equal(hist.code, 0, hist.stderr);
      assert.match(hist.stdout, /History for CONFIG > color/);
      assert.match(hist.stdout, /│ color +│ 1 +│ PUT .*│ red/);
      assert.match(hist.stdout, /│ color +│ 4 +│ PUT .*│ blue/);
      const rev = await runCli(env, ["kv", "get", "CONFIG", "color", "--revision", "1", "--raw"]);
      assert.equal(rev.stdout, "red");
      const keys = await runCli(env, ["kv", "ls", "CONFIG"]);
      assert.deepEqual(keys.stdout.trim().split("\n"), ["color", "shape", "size"]);
      const buckets = await runCli(env, ["kv", "ls"]);
      assert.match(buckets.stdout, /Key-Value Buckets/);
      assert.match(buckets.stdout, /│ CONFIG +│/);
      const st = await runCli(env, ["kv", "status", "CONFIG"]);
      assert.equal(st.code, 0, st.stderr);
      assert.match(st.stdout, /^ +JetStream Stream: KV_CONFIG$/m);
      const streams = await runCli(env, ["stream", "ls"]);
      assert.match(streams.stdout, /No Streams defined, pass -a to include system streams/);
    });

    void it("kv watch, del, purge and rm", async () => {
      const w = spawnCli(env, ["kv", "watch", "CONFIG", "color", "--count", "2"]);
      await w.waitFor("stdout", "PUT CONFIG > color: blue");
      const del = await runCli(env, ["kv", "del", "CONFIG", "color", "-f"]);
      assert.equal(del.code, 0, del.stderr);
      const res = await w.done;
      assert.equal(res.code, 0, res.stderr);
      assert.match(res.stdout, /DELETE CONFIG > color/);
      const gone = await runCli(env, ["kv", "get", "CONFIG", "color"]);
      assert.notEqual(gone.code, 0);
      assert.match(gone.stderr, /key not found/);
      const purge = await runCli(env, ["kv", "purge", "CONFIG", "shape", "-f"]);
      assert.equal(purge.code, 0, purge.stderr);
      const hist = await runCli(env, ["kv", "history", "CONFIG", "shape"]);
      assert.match(hist.stdout, /PURGE/);
      assert.doesNotMatch(hist.stdout, /circle/);
      const rm = await runCli(env, ["kv", "rm", "CONFIG", "-f"]);
      assert.equal(rm.code, 0, rm.stderr);
      const none = await runCli(env, ["kv", "get", "CONFIG", "size"]);
      assert.notEqual(none.code, 0);
      assert.match(none.stderr, /stream not found \(10059\)/);
    });

    void it("object add, put, ls, info, get, rm", async () => {
      const add = await runCli(env, ["object", "add", "FILES", "--description", "some files"]);
      assert.equal(add.code, 0, add.stderr);
      assert.match(add.stdout, /^Information for Object Store Bucket FILES created /);
      const src = path.join(dir, "report.txt");
      const body = "line\n".repeat(50_000);
      fs.writeFileSync(src, body);
      const put = await runCli(env, ["object", "put", "FILES", src]);
      assert.equal(put.code, 0, put.stderr);
      assert.match(put.stdout, /^Object information for FILES > report\.txt$/m);
      assert.match(put.stdout, /^ +Size: 244 KiB$/m);
      assert.match(put.stdout, /^ +Digest: SHA-256 [0-9a-f]{64}$/m);
      const ls = await runCli(env, ["object", "ls", "FILES"]);
      assert.match(ls.stdout, /│ report\.txt +│ 244 KiB/);
      const buckets = await runCli(env, ["object", "ls"]);
      assert.match(buckets.stdout, /│ FILES +│ some files/);
      const info = await runCli(env, ["object", "info", "FILES", "report.txt"]);
      assert.equal(info.code, 0, info.stderr);
      assert.match(info.stdout, /^ +Chunks: \d+$/m);
      const out = path.join(dir, "copy.txt");
      const get = await runCli(env, ["object", "get", "FILES", "report.txt", "-O", out]);
      assert.equal(get.code, 0, get.stderr);
      assert.match(get.stdout, /^Wrote: 244 KiB to /);
      assert.equal(fs.readFileSync(out, "utf8"), body);
      const rm = await runCli(env, ["object", "rm", "FILES", "report.txt", "-f"]);
      assert.equal(rm.code, 0, rm.stderr);
      assert.match(rm.stdout, /^Removed FILES > report\.txt$/m);
      const missing = await runCli(env, ["object", "get", "FILES", "report.txt", "-O", out, "-f"]);
      assert.notEqual(missing.code, 0);
      assert.match(missing.stderr, /object not found/);
      const rmb = await runCli(env, ["object", "rm", "FILES", "-f"]);
      assert.equal(rmb.code, 0, rmb.stderr);
      const noBucket = await runCli(env, ["object", "info", "FILES"]);
      assert.notEqual(noBucket.code, 0);
      assert.match(noBucket.stderr, /stream not found \(10059\)/);
    });
  });
}
