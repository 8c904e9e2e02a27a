// The `tsnats` CLI as a user runs it: the JetStream guide's four lines and the stream
// commands, each against nats-server (when installed) and against tsnats.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { TARGETS, cleanupCliEnv, makeCliEnv, runCli, startServer, type CliEnv, type RunningServer } from "../helpers/cli.js";

for (const target of TARGETS) {
  void describe(`tsnats CLI streams against ${target.name}`, { skip: target.skip }, () => {
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

    void it("runs the guide's four lines with nats' output", async () => {
      const add = await runCli(env, [
        "stream", "add", "ORDERS", "--subjects", "orders.>", "--storage", "file", "--retention", "limits",
        "--max-age", "24h", "--replicas", "1", "--defaults",
      ]);
      assert.equal(add.code, 0, add.stderr);
      assert.match(add.stdout, /^Stream ORDERS was created\n\nInformation for Stream ORDERS created \d{4}-\d\d-\d\d \d\d:\d\d:\d\d\n/);
      assert.match(add.stdout, /^ +Subjects: orders\.>$/m);
      assert.match(add.stdout, /^ +Storage: File$/m);
      assert.match(add.stdout, /^ +Retention: Limits$/m);
      assert.match(add.stdout, /^ +Maximum Age: 1d0h0m0s$/m);
      assert.match(add.stdout, /^ +Messages: 0$/m);

      const pub = await runCli(env, ["pub", "orders.created", '{"order_id":"order-123","status":"created"}']);
      assert.equal(pub.code, 0, pub.stderr);
      assert.match(pub.stderr, /Published 43 bytes to "orders\.created"/);

      const info = await runCli(env, ["stream", "info", "ORDERS"]);
      assert.equal(info.code, 0, info.stderr);
      assert.match(info.stdout, /^Information for Stream ORDERS created /);
      assert.match(info.stdout, /^State:$/m);
      assert.match(info.stdout, /^ +Messages: 1$/m);
      assert.match(info.stdout, /^ +First Sequence: 1 @ /m);
      assert.match(info.stdout, /^ +Last Sequence: 1 @ /m);

      const view = await runCli(env, ["stream", "view", "ORDERS"]);
      assert.equal(view.code, 0, view.stderr);
      assert.match(view.stdout, /^\[1\] Subject: orders\.created Received: /m);
      assert.ok(view.stdout.includes('{"order_id":"order-123","status":"created"}'), view.stdout);
      assert.match(view.stderr, /Reached apparent end of data/);
    });

    void it("stream info --json prints the API's StreamInfo", async () => {
      const r = await runCli(env, ["stream", "info", "ORDERS", "--json"]);
      assert.equal(r.code, 0, r.stderr);
      const info = JSON.parse(r.stdout) as { config: { name: string; max_age: number }; state: { messages: number } };
      assert.equal(info.config.name, "ORDERS");
      assert.equal(info.config.max_age, 24 * 3600 * 1e9);
      assert.equal(info.state.messages, 1);
    });

    void it("stream ls, report, state, get and get --last-for", async () => {
      const ls = await runCli(env, ["stream", "ls"]);
      assert.equal(ls.code, 0, ls.stderr);
      assert.match(ls.stdout, /│ ORDERS +│/);
      const names = await runCli(env, ["stream", "ls", "--names"]);
      assert.equal(names.stdout.trim(), "ORDERS");
      const rep = await runCli(env, ["stream", "report"]);
      assert.equal(rep.code, 0, rep.stderr);
      assert.match(rep.stdout, /Stream Report/);
      assert.match(rep.stdout, /│ ORDERS +│ File/);
      const st = await runCli(env, ["stream", "state", "ORDERS"]);
      assert.match(st.stdout, /^State for Stream ORDERS created /);
      const get = await runCli(env, ["stream", "get", "ORDERS", "1"]);
      assert.equal(get.code, 0, get.stderr);
      assert.match(get.stdout, /^Item: ORDERS#1 received .* on Subject orders\.created/);
      assert.ok(get.stdout.includes('"order-123"'));
      const last = await runCli(env, ["stream", "get", "ORDERS", "--last-for", "orders.created", "--json"]);
      assert.equal(last.code, 0, last.stderr);
      const m = JSON.parse(last.stdout) as { seq: number; subject: string; data: string };
      assert.equal(m.seq, 1);
      assert.equal(Buffer.from(m.data, "base64").toString(), '{"order_id":"order-123","status":"created"}');
    });

    void it("pub --count with a {{Count}} template and --header, then view --subject, --raw and paging", async () => {
      const pub = await runCli(env, ["pub", "orders.bulk", "order {{Count}}", "--count", "3", "-H", "X-Test:yes"]);
      assert.equal(pub.code, 0, pub.stderr);
      const view = await runCli(env, ["stream", "view", "ORDERS", "--subject", "orders.bulk", "--raw"]);
      assert.equal(view.code, 0, view.stderr);
      assert.deepEqual(view.stdout.trim().split("\n"), ["order 1", "order 2", "order 3"]);
      const page = await runCli(env, ["stream", "view", "ORDERS", "2"]);
      assert.equal(page.code, 0, page.stderr);
      assert.equal((page.stdout.match(/^\[\d+\] Subject:/gm) ?? []).length, 2);
      const hdr = await runCli(env, ["stream", "view", "ORDERS", "--id", "2", "1"]);
      assert.match(hdr.stdout, /^\[2\] Subject: orders\.bulk/m);
      assert.match(hdr.stdout, /^ {2}X-Test: yes$/m);
      const since = await runCli(env, ["stream", "view", "ORDERS", "--since", "1h", "--raw", "--subject", "orders.created"]);
      assert.ok(since.stdout.includes("order-123"), since.stdout);
    });

    void it("pub --jetstream reports the stored sequence", async () => {
      const r = await runCli(env, ["pub", "orders.js", "hello", "--jetstream"]);
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stderr, /Stored in Stream: ORDERS Sequence: 5/);
    });

    void it("rmm, purge --subject / --keep / --seq", async () => {
      const rmm = await runCli(env, ["stream", "rmm", "ORDERS", "5", "-f"]);
      assert.equal(rmm.code, 0, rmm.stderr);
      const gone = await runCli(env, ["stream", "get", "ORDERS", "5"]);
      assert.notEqual(gone.code, 0);
      assert.match(gone.stderr, /no message found \(10037\)/);
      const ps = await runCli(env, ["stream", "purge", "ORDERS", "-f", "--subject", "orders.bulk", "--keep", "1"]);
      assert.equal(ps.code, 0, ps.stderr);
      assert.match(ps.stdout, /^Purged 2 messages from ORDERS/);
      assert.match(ps.stdout, /^State for Stream ORDERS/m);
      const pseq = await runCli(env, ["stream", "purge", "ORDERS", "-f", "--seq", "2"]);
      assert.equal(pseq.code, 0, pseq.stderr);
      assert.match(pseq.stdout, /^Purged 1 messages from ORDERS/);
      const bad = await runCli(env, ["stream", "purge", "ORDERS", "-f", "--seq", "2", "--keep", "1"]);
      assert.notEqual(bad.code, 0);
      assert.match(bad.stderr, /sequence and keep cannot be combined/);
    });

    void it("edit, copy, seal and rm", async () => {
      const dry = await runCli(env, ["stream", "edit", "ORDERS", "--description", "all orders", "--dry-run"]);
      assert.equal(dry.code, 0, dry.stderr);
      assert.match(dry.stdout, /description: \(unset\) -> "all orders"/);
      const noForce = await runCli(env, ["stream", "edit", "ORDERS", "--description", "all orders"]);
      assert.notEqual(noForce.code, 0, "editing without --force off a terminal must refuse");
      const ed = await runCli(env, ["stream", "edit", "ORDERS", "--description", "all orders", "--max-msgs", "100", "-f"]);
      assert.equal(ed.code, 0, ed.stderr);
      assert.match(ed.stdout, /^Stream ORDERS was updated/);
      assert.match(ed.stdout, /^ +Description: all orders$/m);
      assert.match(ed.stdout, /^ +Maximum Messages: 100$/m);
      const cp = await runCli(env, ["stream", "copy", "ORDERS", "ORDERS2", "--subjects", "orders2.>"]);
      assert.equal(cp.code, 0, cp.stderr);
      assert.match(cp.stdout, /^Stream ORDERS2 was created/);
      assert.match(cp.stdout, /^ +Subjects: orders2\.>$/m);
      const seal = await runCli(env, ["stream", "seal", "ORDERS2", "-f"]);
      assert.equal(seal.code, 0, seal.stderr);
      assert.match(seal.stdout, /^ +Sealed: true$/m);
      const rm = await runCli(env, ["stream", "rm", "ORDERS2", "-f"]);
      assert.equal(rm.code, 0, rm.stderr);
      const after = await runCli(env, ["stream", "info", "ORDERS2"]);
      assert.notEqual(after.code, 0);
    });

    void it("add --config FILE, --output and --validate", async () => {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), "tsnats-cli-cfgfile-"));
      try {
        const out = path.join(dir, "s.json");
        const o = await runCli(env, ["stream", "add", "FROMFILE", "--subjects", "ff.*", "--storage", "memory", "--defaults", "--output", out]);
        assert.equal(o.code, 0, o.stderr);
        const saved = JSON.parse(fs.readFileSync(out, "utf8")) as { name: string; storage: string };
        assert.equal(saved.name, "FROMFILE");
        assert.equal(saved.storage, "memory");
        const v = await runCli(env, ["stream", "add", "--config", out, "--validate"]);
        assert.equal(v.code, 0, v.stderr);
        assert.match(v.stdout, /Configuration is a valid Stream/);
        const c = await runCli(env, ["stream", "add", "--config", out]);
        assert.equal(c.code, 0, c.stderr);
        assert.match(c.stdout, /^Stream FROMFILE was created/);
        assert.match(c.stdout, /^ +Storage: Memory$/m);
        const again = await runCli(env, ["stream", "add", "--config", out, "--subjects", "other.*"]);
        assert.notEqual(again.code, 0);
        assert.match(again.stderr, /tsnats: error: .*\(10058\)/);
      } finally {
        fs.rmSync(dir, { recursive: true, force: true });
      }
    });

    void it("backup and restore a stream over the network", async () => {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), "tsnats-cli-backup-"));
      try {
        await runCli(env, ["stream", "add", "BK", "--subjects", "bk.>", "--defaults"]);
        const pub = await runCli(env, ["pub", "bk.x", "msg {{Count}}", "--count", "25"]);
        assert.equal(pub.code, 0, pub.stderr);
        const b = await runCli(env, ["stream", "backup", "BK", path.join(dir, "bk")]);
        assert.equal(b.code, 0, b.stderr);
        assert.match(b.stdout, /Starting backup of Stream "BK"/);
        assert.match(b.stdout, /Received .* chunks for stream "BK"/);
        assert.ok(fs.statSync(path.join(dir, "bk", "stream.tar.s2")).size > 0);
        const rm = await runCli(env, ["stream", "rm", "BK", "-f"]);
        assert.equal(rm.code, 0, rm.stderr);
        const r = await runCli(env, ["stream", "restore", path.join(dir, "bk")]);
        assert.equal(r.code, 0, r.stderr);
        assert.match(r.stdout, /Restored stream "BK"/);
        assert.match(r.stdout, /^ +Messages: 25$/m);
        const again = await runCli(env, ["stream", "restore", path.join(dir, "bk")]);
        assert.notEqual(again.code, 0);
        assert.match(again.stderr, /already exist/);
      } finally {
        fs.rmSync(dir, { recursive: true, force: true });
      }
    });

    void it("unknown streams and bad flags give a clear error and a non-zero exit", async () => {
      const nf = await runCli(env, ["stream", "info", "NOPE"]);
      assert.equal(nf.code, 1);
      assert.equal(nf.stderr.trim(), "tsnats: error: stream not found (10059)");
      const bad = await runCli(env, ["stream", "add", "X", "--bogus"]);
      assert.notEqual(bad.code, 0);
      assert.match(bad.stderr, /unknown option '--bogus'/);
      const badChoice = await runCli(env, ["stream", "add", "X", "--storage", "disk", "--defaults", "--subjects", "x"]);
      assert.notEqual(badChoice.code, 0);
      assert.match(badChoice.stderr, /--storage.*disk.*invalid/);
      const badDur = await runCli(env, ["stream", "add", "X", "--subjects", "x", "--max-age", "soon", "--defaults"]);
      assert.notEqual(badDur.code, 0);
      assert.match(badDur.stderr, /invalid maximum age limit "soon"/);
      const noName = await runCli(env, ["stream", "add", "--subjects", "x", "--defaults"]);
      assert.notEqual(noName.code, 0);
      assert.match(noName.stderr, /Stream Name is required/);
      const noRm = await runCli(env, ["stream", "rm", "ORDERS"]);
      assert.notEqual(noRm.code, 0, "rm off a terminal without --force must refuse");
      const stillThere = await runCli(env, ["stream", "info", "ORDERS"]);
      assert.equal(stillThere.code, 0);
      const unknownCmd = await runCli(env, ["strem", "ls"]);
      assert.notEqual(unknownCmd.code, 0);
      assert.match(unknownCmd.stderr, /unknown command 'strem'/);
    });
  });
}
