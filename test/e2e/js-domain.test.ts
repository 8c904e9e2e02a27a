// A server with a JetStream domain, used by clients bound to it (jetstream(nc, { domain })):
// every request goes to $JS.<domain>.API.…, and KV and object store writes to
// $JS.<domain>.API.$KV.… / .$OBJ.…, which nats-server maps onto $JS.API.… and the buckets'
// own subjects. Every KV scenario runs through the domain, then an object store and a pull
// consumer do.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { AckPolicy, jetstream, jetstreamManager } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import { Objm, setSha256Backend } from "@nats-io/obj";
import { startServer, type RunningServer } from "../../src/index.js";
import { KV_SCENARIOS, type KvEnv } from "../helpers/kv-scenarios.js";

setSha256Backend("native");

const DOMAIN = "hub";
let storeDir = "";
let srv: RunningServer;
let nc: NatsConnection;
let env: KvEnv;

before(async () => {
  storeDir = mkdtempSync(join(tmpdir(), "tsnats-e2e-domain-"));
  srv = await startServer({ port: 0, host: "127.0.0.1", jetstream: { enabled: true, storeDir, domain: DOMAIN } });
  nc = await connect({ servers: srv.url });
  const js = jetstream(nc, { domain: DOMAIN });
  env = { nc, kvm: new Kvm(js), jsm: await jetstreamManager(nc, { domain: DOMAIN }) };
});

after(async () => {
  await nc.close();
  await srv.close();
  rmSync(storeDir, { recursive: true, force: true });
});

for (const s of KV_SCENARIOS) {
  void test(`through domain ${DOMAIN}: ${s.name}`, async () => {
    await s.run(env);
  });
}

void test("$JS.<domain>.API.$KV.… is the bucket's own subject: KV writes land there", async () => {
  const kv = await env.kvm.create("dom");
  assert.ok((await kv.put("a.b", "1")) > 0);
  assert.equal((await kv.get("a.b"))?.string(), "1");
  const m = await env.jsm.streams.getMessage("KV_dom", { seq: 1 });
  assert.equal(m?.subject, "$KV.dom.a.b", "stored under the bucket's own subject");
  // A raw publish to the domain form is stored in the bucket and acknowledged by it.
  const r = await nc.request(`$JS.${DOMAIN}.API.$KV.dom.raw`, "x", { timeout: 2_000 });
  assert.deepEqual(r.json(), { stream: "KV_dom", domain: DOMAIN, seq: 2 });
  assert.equal((await kv.get("raw"))?.string(), "x");
});

void test("an object store and a pull consumer through the domain", async () => {
  const js = jetstream(nc, { domain: DOMAIN });
  const os = await new Objm(js).create("domobj");
  const data = Buffer.alloc(300_000, 7);
  await os.putBlob({ name: "blob" }, data);
  const got = await os.getBlob("blob");
  assert.ok(got !== null && Buffer.from(got).equals(data));
  assert.deepEqual((await os.list()).map((o) => o.name), ["blob"]);

  await env.jsm.streams.add({ name: "DQ", subjects: ["dq.>"] });
  await env.jsm.consumers.add("DQ", { durable_name: "w", ack_policy: AckPolicy.Explicit });
  for (let i = 0; i < 3; i++) assert.equal((await js.publish("dq.x", `m${i}`)).domain, DOMAIN);
  const c = await js.consumers.get("DQ", "w");
  const it = await c.fetch({ max_messages: 3, expires: 5_000 });
  const bodies: string[] = [];
  for await (const m of it) {
    bodies.push(m.string());
    m.ack();
  }
  assert.deepEqual(bodies, ["m0", "m1", "m2"]);
});

void test("subjects under $JS.<domain>.API. that nats-server does not map find no responder", async () => {
  for (const subj of [`$JS.${DOMAIN}.API.NOPE`, `$JS.${DOMAIN}.API.INFO.x`, `$JS.${DOMAIN}.API.$KV`]) {
    await assert.rejects(nc.request(subj, "", { timeout: 2_000 }), /503|no responders/i, subj);
  }
  // The mapped ones answer, with the domain in the account info.
  const r = await nc.request(`$JS.${DOMAIN}.API.INFO`, "", { timeout: 2_000 });
  assert.equal((r.json() as { domain?: string }).domain, DOMAIN);
});
