// Key-Value buckets through @nats-io/kv 3.x against tsnats in-process over TCP: every scenario
// of test/helpers/kv-scenarios.ts, plus the wire details the client leans on (direct get
// headers, the config it creates).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { startServer, type RunningServer } from "../../src/index.js";
import { KV_SCENARIOS, kvEnv, type KvEnv } from "../helpers/kv-scenarios.js";

let storeDir = "";
let srv: RunningServer;
let nc: NatsConnection;
let env: KvEnv;

before(async () => {
  storeDir = mkdtempSync(join(tmpdir(), "tsnats-e2e-kv-"));
  srv = await startServer({ port: 0, host: "127.0.0.1", jetstream: { enabled: true, storeDir } });
  nc = await connect({ servers: srv.url });
  env = await kvEnv(nc);
});

after(async () => {
  await nc.close();
  await srv.close();
  rmSync(storeDir, { recursive: true, force: true });
});

for (const s of KV_SCENARIOS) {
  void test(s.name, async () => {
    await s.run(env);
  });
}

void test("direct get replies carry the headers clients build entries from", async () => {
  const kv = await env.kvm.create("wire");
  await kv.put("k", "v");
  const m = await nc.request("$JS.API.DIRECT.GET.KV_wire.$KV.wire.k", "", { timeout: 2000 });
  assert.equal(m.string(), "v");
  assert.equal(m.headers?.get("Nats-Stream"), "KV_wire");
  assert.equal(m.headers?.get("Nats-Subject"), "$KV.wire.k");
  assert.equal(m.headers?.get("Nats-Sequence"), "1");
  assert.match(m.headers?.get("Nats-Time-Stamp") ?? "", /^\d{4}-\d\d-\d\dT/);
  const miss = await nc.request("$JS.API.DIRECT.GET.KV_wire.$KV.wire.none", "", { timeout: 2000 });
  assert.equal(miss.headers?.code, 404);
  assert.equal(miss.headers?.description, "Message Not Found");
  const bySeq = await nc.request("$JS.API.DIRECT.GET.KV_wire", JSON.stringify({ seq: 1 }), { timeout: 2000 });
  assert.equal(bySeq.headers?.get("Nats-Subject"), "$KV.wire.k");
  // The non-direct fallback: STREAM.MSG.GET by last_by_subj.
  const mg = await nc.request("$JS.API.STREAM.MSG.GET.KV_wire", JSON.stringify({ last_by_subj: "$KV.wire.k" }), { timeout: 2000 });
  const body = mg.json<{ message: { subject: string; seq: number; data: string } }>();
  assert.equal(body.message.subject, "$KV.wire.k");
  assert.equal(Buffer.from(body.message.data, "base64").toString(), "v");
});

void test("reserved and invalid keys are refused by the client before the server", async () => {
  const kv = await env.kvm.create("names");
  await assert.rejects(kv.put("bad key", "v"));
  await assert.rejects(kv.put("a.*", "v"));
  await assert.rejects(env.kvm.create("bad.bucket"));
});
