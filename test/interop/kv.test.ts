// The KV scenarios of test/helpers/kv-scenarios.ts against nats-server and tsnats, with
// @nats-io/kv 3.x on both; the transcripts (values, revisions, operations, history, watch
// sequences, the normalised stream config the client created) must be identical. Scenarios
// that need a newer server than the installed nats-server run against tsnats only.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { haveNatsServer as haveNats, startJsPair, type JsPair } from "../helpers/interop-js.js";
import { KV_SCENARIOS, kvEnv, type KvEnv, type KvScenario } from "../helpers/kv-scenarios.js";

let pair: JsPair | null = null;
let envRef: KvEnv;
let envOurs: KvEnv;
let refVersion = "0.0.0";

before(async () => {
  if (!haveNats) return;
  pair = await startJsPair("tsnats-interop-kv-");
  refVersion = pair.refVersion;
  envRef = await kvEnv(pair.ncRef);
  envOurs = await kvEnv(pair.ncOurs);
});

after(async () => {
  await pair?.close();
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
