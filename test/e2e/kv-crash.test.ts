// KV buckets survive a SIGKILL of a tsnats child process: every acknowledged write is there
// after the restart (a PubAck leaves only after fsync), revisions go on from where they were,
// and create/update/watch/TTL behave as before the crash.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { KvWatchInclude } from "@nats-io/kv";
import { CrashableTsnats } from "../helpers/crash-child.js";
import {
  KV_SCENARIOS,
  crashWrites,
  failure,
  kvEnv,
  seen,
  snapshotBucket,
  take,
  until,
  type KvEnv,
  type SeenEntry,
  type Transcript,
} from "../helpers/kv-scenarios.js";

let srv: CrashableTsnats;

async function boot(): Promise<KvEnv> {
  return kvEnv(await srv.boot());
}

const sigkill = (): Promise<void> => srv.sigkill();

before(() => {
  srv = new CrashableTsnats("tsnats-e2e-kvcrash-");
});

after(async () => {
  await srv.dispose();
});

// Buckets whose content no longer changes once their scenario is done (the TTL buckets
// keep expiring, so they are checked separately).
const STABLE = ["basics", "keys", "watch", "status", "msrc", "mmir", "ms1", "ms2", "magg", "crash", "crash_ttl"];

void test("KV scenarios, SIGKILL, restart: every bucket as it was, and it keeps working", async () => {
  let env = await boot();
  for (const s of KV_SCENARIOS) await s.run(env);
  await crashWrites(env.kvm);
  // A key with a per-key TTL that expires after the restart: its deadline must be recovered.
  const ttlkv = await env.kvm.create("crash_keyttl", { markerTTL: 60_000 });
  await ttlkv.create("soon", "x", "3s");
  await ttlkv.put("stays", "y");
  const before: Record<string, Transcript> = {};
  for (const b of STABLE) before[b] = await snapshotBucket(await env.kvm.open(b));
  await sigkill();

  env = await boot();
  for (const b of STABLE) {
    const after = await snapshotBucket(await env.kvm.open(b));
    assert.deepEqual(after, before[b], `bucket ${b} after SIGKILL`);
  }

  const kv = await env.kvm.open("crash");
  const st = await kv.status();
  assert.equal(st.history, 4);
  const last = await kv.get("k0");
  assert.ok(last !== null);
  assert.equal(last.string(), "v40");
  // create on an existing key still fails; update with the last revision still works.
  assert.equal((await failure(kv.create("k0", "dup"))).code, 10071);
  assert.equal((await failure(kv.update("k0", "stale", last.revision - 1))).code, 10071);
  const rev = await kv.update("k0", "after", last.revision);
  assert.equal(rev, st.streamInfo.state.last_seq + 1, "revisions continue from before the crash");
  // create over the pre-crash delete and purge markers.
  assert.ok((await kv.create("k3", "back")) > rev);
  assert.ok((await kv.create("k4", "back")) > rev);
  // A watch resuming from a pre-crash revision sees the pre-crash history then the new writes.
  const pre = (before["crash"]?.["history"] as SeenEntry[]).filter((e) => e.rev >= last.revision);
  const expected = [...pre.map((e) => `${e.key}:${e.op}:${e.value}`), "k0:PUT:after", "k3:PUT:back", "k4:PUT:back"];
  const w = await kv.watch({ resumeFromRevision: last.revision, include: KvWatchInclude.AllHistory });
  const got = (await take(w, expected.length)).map(seen);
  assert.deepEqual(
    got.map((e) => `${e.key}:${e.op}:${e.value}`),
    expected,
  );
  assert.equal(got[0]?.rev, last.revision);
  // Bucket TTL config survived.
  assert.equal((await (await env.kvm.open("crash_ttl")).status()).ttl, 3_600_000);
  // The per-key TTL set before the crash still expires, with its marker.
  const tk = await env.kvm.open("crash_keyttl");
  await until("pre-crash per-key TTL to expire", async () => (await tk.get("soon"))?.operation === "PURGE", 15000);
  assert.equal((await tk.get("stays"))?.string(), "y");

  // A second crash right after more writes: nothing acknowledged is lost.
  for (let i = 0; i < 200; i++) await kv.put(`n${i % 7}`, `w${i}`);
  const before2 = await snapshotBucket(kv);
  await sigkill();
  env = await boot();
  assert.deepEqual(await snapshotBucket(await env.kvm.open("crash")), before2);
});
