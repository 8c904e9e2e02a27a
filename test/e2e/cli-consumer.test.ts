// `tsnats consumer ...` run as a child process against nats-server and tsnats.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { TARGETS, cleanupCliEnv, makeCliEnv, runCli, spawnCli, startServer, type CliEnv, type RunningServer } from "../helpers/cli.js";

for (const target of TARGETS) {
  void describe(`tsnats CLI consumers against ${target.name}`, { skip: target.skip }, () => {
    let server: RunningServer;
    let env: CliEnv;
    before(async () => {
      server = await startServer(target.name);
      env = makeCliEnv(server.url);
      const add = await runCli(env, ["stream", "add", "JOBS", "--subjects", "jobs.>", "--defaults"]);
      assert.equal(add.code, 0, add.stderr);
      const pub = await runCli(env, ["pub", "jobs.new", "job {{Count}}", "--count", "5"]);
      assert.equal(pub.code, 0, pub.stderr);
    });
    after(async () => {
      await server?.stop();
      if (env !== undefined) cleanupCliEnv(env);
    });

    void it("adds a pull consumer with --defaults and shows natscli's info layout", async () => {
      const r = await runCli(env, ["consumer", "add", "JOBS", "WORKER", "--pull", "--defaults", "--filter", "jobs.>", "--max-deliver", "5", "--wait", "10s"]);
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stdout, /^Information for Consumer JOBS > WORKER created /);
      assert.match(r.stdout, /^ +Pull Mode: true$/m);
      assert.match(r.stdout, /^ +Filter Subject: jobs\.>$/m);
      assert.match(r.stdout, /^ +Ack Policy: Explicit$/m);
      assert.match(r.stdout, /^ +Ack Wait: 10s$/m);
      assert.match(r.stdout, /^ +Maximum Deliveries: 5$/m);
      assert.match(r.stdout, /^ +Unprocessed Messages: 5$/m);
    });

    void it("next --ack, --nak, --term and --count", async () => {
      const one = await runCli(env, ["consumer", "next", "JOBS", "WORKER"]);
      assert.equal(one.code, 0, one.stderr);
      assert.match(one.stdout, /subj: jobs\.new \/ tries: 1 \/ cons seq: 1 \/ str seq: 1 \/ pending: 4/);
      assert.match(one.stdout, /^job 1$/m);
      assert.match(one.stdout, /^Acknowledged message$/m);
      const nak = await runCli(env, ["consumer", "next", "JOBS", "WORKER", "--nak"]);
      assert.equal(nak.code, 0, nak.stderr);
      assert.match(nak.stdout, /^Negative Acknowledged message$/m);
      const redo = await runCli(env, ["consumer", "next", "JOBS", "WORKER", "--raw"]);
      assert.equal(redo.stdout.trim(), "job 2", "a NAKed message is redelivered next");
      const term = await runCli(env, ["consumer", "next", "JOBS", "WORKER", "--term"]);
      assert.equal(term.code, 0, term.stderr);
      assert.match(term.stdout, /Terminated message/);
      const two = await runCli(env, ["consumer", "next", "JOBS", "WORKER", "--count", "2", "--raw"]);
      assert.deepEqual(two.stdout.trim().split("\n"), ["job 4", "job 5"]);
      const info = await runCli(env, ["consumer", "info", "JOBS", "WORKER", "--json"]);
      const ci = JSON.parse(info.stdout) as { num_pending: number; num_ack_pending: number; delivered: { stream_seq: number } };
      assert.equal(ci.num_pending, 0);
      assert.equal(ci.num_ack_pending, 0);
      assert.equal(ci.delivered.stream_seq, 5);
      const empty = await runCli(env, ["--timeout", "1s", "consumer", "next", "JOBS", "WORKER"]);
      assert.notEqual(empty.code, 0);
      assert.match(empty.stderr, /no message received/);
    });

    void it("adds a push consumer and sub --durable receives nothing new; ls, report, state, edit, copy, rm", async () => {
      const push = await runCli(env, ["consumer", "add", "JOBS", "PUSHER", "--target", "deliver.jobs", "--deliver", "last", "--defaults"]);
      assert.equal(push.code, 0, push.stderr);
      assert.match(push.stdout, /^ +Delivery Subject: deliver\.jobs$/m);
      assert.match(push.stdout, /^ +Deliver Policy: Last$/m);
      assert.match(push.stdout, /^ +Ack Policy: None$/m);
      assert.match(push.stdout, /^ +Active Interest: No interest$/m);
      const ls = await runCli(env, ["consumer", "ls", "JOBS"]);
      assert.equal(ls.code, 0, ls.stderr);
      assert.match(ls.stdout, /│ PUSHER +│/);
      assert.match(ls.stdout, /│ WORKER +│/);
      const names = await runCli(env, ["consumer", "ls", "JOBS", "--names"]);
      assert.deepEqual(names.stdout.trim().split("\n"), ["PUSHER", "WORKER"]);
      const rep = await runCli(env, ["consumer", "report", "JOBS"]);
      assert.equal(rep.code, 0, rep.stderr);
      assert.match(rep.stdout, /│ PUSHER +│ Push/);
      assert.match(rep.stdout, /│ WORKER +│ Pull/);
      const st = await runCli(env, ["consumer", "state", "JOBS", "WORKER"]);
      assert.match(st.stdout, /^State for Consumer JOBS > WORKER created /);
      const ed = await runCli(env, ["consumer", "edit", "JOBS", "WORKER", "--description", "the worker", "-f"]);
      assert.equal(ed.code, 0, ed.stderr);
      assert.match(ed.stdout, /^ +Description: the worker$/m);
      const cp = await runCli(env, ["consumer", "copy", "JOBS", "WORKER", "WORKER2"]);
      assert.equal(cp.code, 0, cp.stderr);
      assert.match(cp.stdout, /^Information for Consumer JOBS > WORKER2 /);
      const rm = await runCli(env, ["consumer", "rm", "JOBS", "WORKER2", "-f"]);
      assert.equal(rm.code, 0, rm.stderr);
      const gone = await runCli(env, ["consumer", "info", "JOBS", "WORKER2"]);
      assert.notEqual(gone.code, 0);
      assert.match(gone.stderr, /consumer not found \(10014\)/);
    });

    void it("sub --durable consumes and acks through an existing pull consumer", async () => {
      await runCli(env, ["consumer", "add", "JOBS", "SUBBER", "--pull", "--defaults"]);
      const r = await runCli(env, ["sub", "--stream", "JOBS", "--durable", "SUBBER", "--count", "5"]);
      assert.equal(r.code, 0, r.stderr);
      assert.equal((r.stdout.match(/Received JetStream message: stream: JOBS seq: \d/g) ?? []).length, 5);
      const info = await runCli(env, ["consumer", "info", "JOBS", "SUBBER", "--json"]);
      const ci = JSON.parse(info.stdout) as { num_pending: number; ack_floor: { stream_seq: number } };
      assert.equal(ci.num_pending, 0);
      const sub = spawnCli(env, ["sub", "--stream", "JOBS", "--new", "--count", "1"]);
      await sub.waitFor("stderr", "Subscribing to JetStream Stream");
      const pub = await runCli(env, ["pub", "jobs.late", "late job"]);
      assert.equal(pub.code, 0, pub.stderr);
      const res = await sub.done;
      assert.equal(res.code, 0, res.stderr);
      assert.match(res.stdout, /subject: jobs\.late/);
      assert.match(res.stdout, /^late job$/m);
    });

    void it("sub --all, --last, --since, --start-sequence and --last-per-subject read the stream", async () => {
      const all = await runCli(env, ["sub", "jobs.new", "--all", "--count", "2"]);
      assert.equal(all.code, 0, all.stderr);
      assert.match(all.stdout, /^\[#1\] Received JetStream message: stream: JOBS seq: 1 \/ pending: \d+ \/ subject: jobs\.new /m);
      assert.match(all.stdout, /^job 1$/m);
      assert.match(all.stdout, /^job 2$/m);
      const last = await runCli(env, ["sub", "--stream", "JOBS", "--last", "--count", "1", "--raw"]);
      assert.equal(last.code, 0, last.stderr);
      assert.equal(last.stdout.trim(), "late job");
      const since = await runCli(env, ["sub", "--stream", "JOBS", "--since", "1h", "--count", "1", "--raw"]);
      assert.equal(since.stdout.trim(), "job 1");
      const seq = await runCli(env, ["sub", "--stream", "JOBS", "--start-sequence", "3", "--count", "1", "--raw"]);
      assert.equal(seq.stdout.trim(), "job 3");
      const lps = await runCli(env, ["sub", "--stream", "JOBS", "--last-per-subject", "-T", "--raw"]);
      assert.equal(lps.code, 0, lps.stderr);
      assert.deepEqual(lps.stdout.trim().split("\n").sort(), ["job 5", "late job"]);
    });

    void it("pause and resume (needs a 2.11 server) report clearly either way", async () => {
      const p = await runCli(env, ["consumer", "pause", "JOBS", "WORKER", "1h", "-f"]);
      if (p.code === 0) {
        assert.match(p.stdout, /^Paused JOBS > WORKER until /);
        const info = await runCli(env, ["consumer", "info", "JOBS", "WORKER"]);
        assert.match(info.stdout, /Paused Until Deadline: .* remaining\)/);
        const r = await runCli(env, ["consumer", "resume", "JOBS", "WORKER", "-f"]);
        assert.equal(r.code, 0, r.stderr);
        assert.match(r.stdout, /^Consumer JOBS > WORKER was resumed/);
      } else {
        // nats-server 2.9/2.10 have no pause API: the request gets no JSON answer in time.
        assert.match(p.stderr, /^tsnats: error: /);
      }
      const notPaused = await runCli(env, ["consumer", "resume", "JOBS", "PUSHER", "-f"]);
      assert.notEqual(notPaused.code, 0);
      assert.match(notPaused.stderr, /consumer is not paused/);
    });

    void it("bad consumer input gives clear errors", async () => {
      const noStream = await runCli(env, ["consumer", "add", "NOPE", "C", "--pull", "--defaults"]);
      assert.notEqual(noStream.code, 0);
      assert.match(noStream.stderr, /stream not found \(10059\)/);
      const noName = await runCli(env, ["consumer", "add", "JOBS", "--pull", "--defaults"]);
      assert.notEqual(noName.code, 0);
      assert.match(noName.stderr, /Consumer name is required/);
      const badAck = await runCli(env, ["consumer", "add", "JOBS", "X", "--ack", "maybe", "--defaults"]);
      assert.notEqual(badAck.code, 0);
      assert.match(badAck.stderr, /--ack.*maybe.*invalid/);
      const both = await runCli(env, ["consumer", "next", "JOBS", "WORKER", "--term", "--ack"]);
      assert.notEqual(both.code, 0);
      assert.match(both.stderr, /can not both Acknowledge and Terminate/);
    });
  });
}
