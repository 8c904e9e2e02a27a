// The KV scenarios of test/helpers/kv-scenarios.ts against nats-server and tsnats, with
// @nats-io/kv 3.x on both; the transcripts (values, revisions, operations, history, watch
// sequences, the normalised stream config the client created) must be identical. Scenarios
// that need a newer server than the installed nats-server run against tsnats only.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { startServer, type RunningServer } from "../../src/index.js";
import { findNatsServer, startNatsServerChild, type ChildServer } from "../helpers/core-child.js";
import { KV_SCENARIOS, kvEnv, type KvEnv, type KvScenario } from "../helpers/kv-scenarios.js";

const haveNats = findNatsServer() !== null;
const dirs: string[] = [];
let ref: ChildServer | null = null;
let ours: RunningServer | null = null;
let ncRef: NatsConnection;
let ncOurs: NatsConnection;
let envRef: KvEnv;
let envOurs: KvEnv;
let refVersion = "0.0.0";

function tmp(): string {
  const d = mkdtempSync(join(tmpdir(), "tsnats-interop-kv-"));
  dirs.push(d);
  return d;
}

before(async () => {
  if (!haveNats) return;
  ref = await startNatsServerChild(["-a", "127.0.0.1", "-p", "-1", "-js", "-sd", tmp()]);
  ours = await startServer({ port: 0, host: "127.0.0.1", jetstream: { enabled: true, storeDir: tmp() } });
  ncRef = await connect({ servers: ref.url });
  ncOurs = await connect({ servers: ours.url });
  refVersion = ncRef.info?.version ?? "0.0.0";
  envRef = await kvEnv(ncRef);
  envOurs = await kvEnv(ncOurs);
});

after(async () => {
  if (!haveNats) return;
  await ncRef.close();
  await ncOurs.close();
  await ref?.stop();
  await ours?.close();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function atLeast(version: string, since: KvScenario["since"]): boolean {
  const [a = 0, b = 0] = version.split(".").map(Number);
  const [x = 0, y = 0] = since.split(".").map(Number);
  return a > x || (a === x && b >= y);
}

for (const s of KV_SCENARIOS) {
  void test(s.name, { skip: !haveNats && "nats-server not installed" }, async (t) => {
    if (!atLeast(refVersion, s.since)) {
      // Still run it against tsnats, so the scenario's own assertions hold.
      t.diagnostic(`nats-server ${refVersion} predates ${s.since}: tsnats only`);
      await s.run(envOurs);
      return;
    }
    const a = await s.run(envRef);
    const b = await s.run(envOurs);
    assert.deepEqual(b, a);
  });
}
