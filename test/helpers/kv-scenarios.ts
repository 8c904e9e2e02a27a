// KV scenarios with @nats-io/kv 3.x, shared by the e2e suite (tsnats in-process), the crash
// suite (tsnats child, SIGKILL) and the interop suite (nats-server vs tsnats). Each scenario
// asserts what must hold on any server and returns a transcript of what a client can observe
// (values, revisions, operations, watch sequences, normalised stream config), so that the
// interop suite can compare the transcripts of two servers field by field.

import assert from "node:assert/strict";
import type { NatsConnection } from "@nats-io/transport-node";
import { jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import { Kvm, KvWatchInclude, type KV, type KvEntry, type KvOptions } from "@nats-io/kv";

export interface KvEnv {
  readonly nc: NatsConnection;
  readonly kvm: Kvm;
  readonly jsm: JetStreamManager;
}

export async function kvEnv(nc: NatsConnection): Promise<KvEnv> {
  return { nc, kvm: new Kvm(nc), jsm: await jetstreamManager(nc) };
}

export type Transcript = Record<string, unknown>;

export interface KvScenario {
  readonly name: string;
  /** Lowest nats-server version that has every feature the scenario uses. */
  readonly since: "2.9" | "2.10" | "2.11";
  run(env: KvEnv): Promise<Transcript>;
}

/** What a client sees of one entry (no timestamps: they differ between runs). */
export interface SeenEntry {
  key: string;
  rev: number;
  op: string;
  value: string;
}

export function seen(e: KvEntry): SeenEntry {
  return { key: e.key, rev: e.revision, op: e.operation, value: e.string() };
}

interface Stoppable<T> extends AsyncIterable<T> {
  stop(err?: Error): void;
}

/** Up to `n` items from an iterator, stopping it after `n` or after `boundMs`. */
export async function take<T>(it: Stoppable<T>, n: number, boundMs = 5000): Promise<T[]> {
  const out: T[] = [];
  const t = setTimeout(() => it.stop(), boundMs);
  try {
    if (n > 0) {
      for await (const x of it) {
        out.push(x);
        if (out.length >= n) break;
      }
    }
  } finally {
    clearTimeout(t);
    it.stop();
  }
  return out;
}

/** Everything an iterator yields until it ends by itself (keys, history) within a bound. */
export async function drain<T>(it: Stoppable<T>, boundMs = 5000): Promise<T[]> {
  const out: T[] = [];
  let timedOut = false;
  const t = setTimeout(() => {
    timedOut = true;
    it.stop();
  }, boundMs);
  try {
    for await (const x of it) out.push(x);
  } finally {
    clearTimeout(t);
  }
  assert.ok(!timedOut, `iterator did not end within ${boundMs}ms (got ${out.length} items)`);
  return out;
}

import { until } from "./until.js";
export { until };

/** The err_code of a JetStream API error (nats.js exposes it as `code`). */
export function apiCode(e: unknown): number | string | undefined {
  const x = e as { apiError?: () => { err_code?: number }; code?: unknown };
  if (typeof x.apiError === "function") return x.apiError().err_code;
  return typeof x.code === "number" || typeof x.code === "string" ? x.code : undefined;
}

export async function failure(p: Promise<unknown>): Promise<{ code: number | string | undefined; message: string }> {
  try {
    await p;
  } catch (e) {
    return { code: apiCode(e), message: (e as Error).message };
  }
  return assert.fail("expected the operation to fail");
}

// Stream config fields that legitimately differ between servers or runs, or that only newer
// servers report; the rest of what the client created must be identical.
const CONFIG_SKIP = new Set([
  "created",
  "metadata",
  "consumer_limits",
  "allow_msg_ttl",
  "subject_delete_marker_ttl",
  "allow_msg_counter",
  "allow_atomic",
  "allow_msg_schedules",
  "persist_mode",
  "compression",
  "first_seq",
  "subject_transforms",
  "allow_batched",
]);

export function normConfig(cfg: object): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(cfg)) {
    if (CONFIG_SKIP.has(k)) continue;
    if (k === "sources" || k === "mirror") {
      out[k] = JSON.parse(JSON.stringify(v, (kk: string, vv: unknown) => (kk === "subject_transforms" ? undefined : vv)));
      continue;
    }
    out[k] = v;
  }
  return out;
}

const enc = (s: string): string => s;

async function history(kv: KV, key?: string): Promise<SeenEntry[]> {
  const it = await kv.history(key === undefined ? {} : { key });
  return (await drain(it)).map(seen);
}

async function keys(kv: KV, filter?: string | string[]): Promise<string[]> {
  return (await drain(await kv.keys(filter))).sort();
}

async function getSeen(kv: KV, key: string, revision?: number): Promise<SeenEntry | null> {
  const e = await kv.get(key, revision === undefined ? undefined : { revision });
  return e === null ? null : seen(e);
}

/** The part of a bucket that must survive a restart unchanged. */
export async function snapshotBucket(kv: KV): Promise<Transcript> {
  const st = await kv.status();
  const all = await history(kv);
  const last: Record<string, SeenEntry | null> = {};
  for (const e of all) last[e.key] = await getSeen(kv, e.key);
  return {
    keys: await keys(kv),
    history: all,
    last,
    values: st.values,
    history_setting: st.history,
    state: { first_seq: st.streamInfo.state.first_seq, last_seq: st.streamInfo.state.last_seq, messages: st.streamInfo.state.messages },
  };
}

// ---------- scenarios ----------

const basics: KvScenario = {
  name: "put, get, create, update, delete, purge, history",
  since: "2.9",
  async run({ kvm }) {
    const kv = await kvm.create("basics", { history: 5 });
    const t: Transcript = {};
    t["put1"] = await kv.put("a", "1");
    t["get1"] = await getSeen(kv, "a");
    assert.deepEqual(t["get1"], { key: "a", rev: 1, op: "PUT", value: "1" });
    t["missing"] = await getSeen(kv, "nope");
    assert.equal(t["missing"], null);

    const exists = await failure(kv.create("a", "again"));
    assert.equal(exists.code, 10071);
    assert.match(exists.message, /wrong last sequence: 1/);
    t["create_exists"] = exists.code;
    t["create_b"] = await kv.create("b", enc("b1"));
    assert.equal(t["create_b"], 2);

    t["update_a"] = await kv.update("a", "2", 1);
    assert.equal(t["update_a"], 3);
    const wrong = await failure(kv.update("a", "3", 1));
    assert.equal(wrong.code, 10071);
    assert.match(wrong.message, /wrong last sequence: 3/);
    t["update_wrong"] = wrong.code;
    const stale = await failure(kv.put("a", "x", { previousSeq: 2 }));
    assert.equal(stale.code, 10071);

    await kv.put("a", "4");
    t["get_rev1"] = await getSeen(kv, "a", 1);
    assert.deepEqual(t["get_rev1"], { key: "a", rev: 1, op: "PUT", value: "1" });
    // A revision of another key is not this key's value.
    t["get_rev_other"] = await getSeen(kv, "a", 2);
    assert.equal(t["get_rev_other"], null);

    await kv.delete("a");
    t["after_delete"] = await getSeen(kv, "a");
    assert.equal((t["after_delete"] as SeenEntry).op, "DEL");
    t["keys_after_delete"] = await keys(kv);
    assert.deepEqual(t["keys_after_delete"], ["b"]);
    // create succeeds over a delete marker (the client retries with the marker's revision).
    t["create_over_delete"] = await kv.create("a", "5");
    assert.equal((await kv.get("a"))?.string(), "5");

    t["history_a"] = await history(kv, "a");
    assert.deepEqual(
      (t["history_a"] as SeenEntry[]).map((e) => `${e.op}:${e.value}`),
      ["PUT:1", "PUT:2", "PUT:4", "DEL:", "PUT:5"],
    );
    await kv.put("b", "b2");
    await kv.purge("a");
    t["history_a_purged"] = await history(kv, "a");
    assert.deepEqual(
      (t["history_a_purged"] as SeenEntry[]).map((e) => e.op),
      ["PURGE"],
      "a purge keeps only its marker",
    );
    t["after_purge"] = await getSeen(kv, "a");
    assert.equal((t["after_purge"] as SeenEntry).op, "PURGE");
    t["create_over_purge"] = await kv.create("a", "6");
    t["history_all"] = await history(kv);
    // An update is conditional on the key's last revision, whatever other keys do.
    const lastA = (await kv.get("a"))!.revision;
    await kv.put("b", "b3");
    t["update_after_other"] = await kv.update("a", "7", lastA);
    // delete with a previous revision guard
    const delWrong = await failure(kv.delete("a", { previousSeq: lastA }));
    assert.equal(delWrong.code, 10071);
    await kv.delete("a", { previousSeq: t["update_after_other"] as number });
    t["final"] = await snapshotBucket(kv);
    const si = await kv.status();
    t["config"] = normConfig(si.streamInfo.config);
    return t;
  },
};

const keysScenario: KvScenario = {
  name: "keys, filtered keys, deleted keys left out",
  since: "2.10",
  async run({ kvm }) {
    const kv = await kvm.create("keys", { history: 3 });
    const t: Transcript = {};
    t["empty"] = await keys(kv);
    assert.deepEqual(t["empty"], []);
    for (const k of ["x.y.z", "x.y.w", "x.q", "a-b", "c_d", "e/f", "g=h", "x.gone", "purged"]) {
      await kv.put(k, k);
      await kv.put(k, `${k}!`);
    }
    await kv.delete("x.gone");
    await kv.purge("purged");
    t["all"] = await keys(kv);
    assert.deepEqual(t["all"], ["a-b", "c_d", "e/f", "g=h", "x.q", "x.y.w", "x.y.z"]);
    t["x.>"] = await keys(kv, "x.>");
    assert.deepEqual(t["x.>"], ["x.q", "x.y.w", "x.y.z"]);
    t["x.*"] = await keys(kv, "x.*");
    assert.deepEqual(t["x.*"], ["x.q"]);
    t["x.y.*"] = await keys(kv, "x.y.*");
    assert.deepEqual(t["x.y.*"], ["x.y.w", "x.y.z"]);
    t["multi"] = await keys(kv, ["x.y.z", "a-b", "nothing.*"]);
    assert.deepEqual(t["multi"], ["a-b", "x.y.z"]);
    // A watch on several keys (filter_subjects, 2.10).
    const w = await kv.watch({ key: ["x.q", "a-b"], include: KvWatchInclude.UpdatesOnly });
    await kv.put("x.q", "new");
    await kv.put("c_d", "other");
    await kv.put("a-b", "new");
    t["watch_multi"] = (await take(w, 2)).map(seen);
    assert.deepEqual(
      (t["watch_multi"] as SeenEntry[]).map((e) => e.key),
      ["x.q", "a-b"],
    );
    t["none"] = await keys(kv, "zzz.>");
    assert.deepEqual(t["none"], []);
    t["history_x_gt"] = await history(kv, "x.>");
    const st = await kv.status();
    t["values"] = st.values;
    assert.equal(st.values, 21, "7 keys x 2 + x.gone (2 + DEL) + the purge marker + 3 puts");
    return t;
  },
};

const watchScenario: KvScenario = {
  name: "watch: last values, from a revision, updates only, ignoring deletes, with history",
  since: "2.9",
  async run({ kvm }) {
    const kv = await kvm.create("watch", { history: 10 });
    const t: Transcript = {};
    // An empty bucket: the watcher starts with updates only.
    const w0 = await kv.watch();
    await kv.put("k1", "v1"); // rev 1
    await kv.put("k2", "v2"); // rev 2
    await kv.put("k1", "v1b"); // rev 3
    const first = await take(w0, 3);
    t["empty_then_updates"] = first.map((e) => ({ ...seen(e), isUpdate: e.isUpdate }));
    assert.deepEqual(
      first.map((e) => [e.key, e.revision, e.isUpdate]),
      [
        ["k1", 1, true],
        ["k2", 2, true],
        ["k1", 3, true],
      ],
    );
    await kv.delete("k2"); // rev 4
    await kv.put("k3", "v3"); // rev 5

    // Default: the last value per key, then updates.
    const w1 = await kv.watch();
    const initial = await take(w1, 3);
    t["last_values"] = initial.map((e) => ({ ...seen(e), isUpdate: e.isUpdate }));
    assert.deepEqual(
      initial.map((e) => [e.key, e.revision, e.operation]),
      [
        ["k1", 3, "PUT"],
        ["k2", 4, "DEL"],
        ["k3", 5, "PUT"],
      ],
    );
    assert.equal(initial[2]?.isUpdate, true, "the last initial entry marks the end of the initial data");

    const w2 = await kv.watch({ include: KvWatchInclude.AllHistory });
    const all = await take(w2, 5);
    t["all_history"] = all.map(seen);
    assert.deepEqual(
      all.map((e) => e.revision),
      [1, 2, 3, 4, 5],
    );

    const w3 = await kv.watch({ resumeFromRevision: 3 });
    const resumed = await take(w3, 3);
    t["from_revision_3"] = resumed.map(seen);
    assert.deepEqual(
      resumed.map((e) => e.revision),
      [3, 4, 5],
    );

    const w4 = await kv.watch({ include: KvWatchInclude.UpdatesOnly });
    const w5 = await kv.watch({ ignoreDeletes: true });
    const w6 = await kv.watch({ key: "k1" });
    const w7 = await kv.watch({ key: "k1", include: KvWatchInclude.UpdatesOnly, headers_only: true });
    await kv.put("k1", "v1c"); // rev 6
    await kv.delete("k3"); // rev 7
    await kv.put("k4", "v4"); // rev 8
    await kv.purge("k1"); // rev 9
    const updates = await take(w4, 4);
    t["updates_only"] = updates.map(seen);
    assert.deepEqual(
      updates.map((e) => [e.key, e.revision, e.operation]),
      [
        ["k1", 6, "PUT"],
        ["k3", 7, "DEL"],
        ["k4", 8, "PUT"],
        ["k1", 9, "PURGE"],
      ],
    );
    // Ignoring deletes: initial k1(3), k3(5) (k2 is deleted), then updates without the DEL.
    const noDel = await take(w5, 5);
    t["ignore_deletes"] = noDel.map(seen);
    assert.deepEqual(
      noDel.map((e) => [e.key, e.revision]),
      [
        ["k1", 3],
        ["k3", 5],
        ["k1", 6],
        ["k4", 8],
        ["k1", 9],
      ],
    );
    const one = await take(w6, 3);
    t["one_key"] = one.map(seen);
    assert.deepEqual(
      one.map((e) => e.revision),
      [3, 6, 9],
    );
    const meta = await take(w7, 2);
    t["headers_only"] = meta.map((e) => ({ key: e.key, rev: e.revision, op: e.operation, len: e.value.length, length: e.length }));
    assert.deepEqual(
      meta.map((e) => [e.key, e.revision, e.value.length]),
      [
        ["k1", 6, 0],
        ["k1", 9, 0],
      ],
    );
    assert.equal(meta[0]?.length, 3, "headers-only entries carry the value size");
    return t;
  },
};

const statusScenario: KvScenario = {
  name: "status and bucket config",
  since: "2.9",
  async run({ kvm, jsm }) {
    const opts: Partial<KvOptions> = {
      history: 7,
      ttl: 3600_000,
      maxValueSize: 1024,
      max_bytes: 1 << 20,
      description: "a bucket",
      storage: "file" as KvOptions["storage"],
    };
    const kv = await kvm.create("status", opts);
    await kv.put("a", "hello");
    await kv.put("b", "world!");
    const st = await kv.status();
    const t: Transcript = {
      bucket: st.bucket,
      values: st.values,
      history: st.history,
      ttl: st.ttl,
      storage: st.storage,
      replicas: st.replicas,
      description: st.description,
      maxBytes: st.max_bytes,
      maxValueSize: st.maxValueSize,
      size: st.size,
      config: normConfig(st.streamInfo.config),
    };
    assert.equal(st.bucket, "status");
    assert.equal(st.values, 2);
    assert.equal(st.history, 7);
    assert.equal(st.ttl, 3600_000);
    assert.equal(st.replicas, 1);
    assert.ok(st.size > 0);
    const c = st.streamInfo.config;
    assert.deepEqual(c.subjects, ["$KV.status.>"]);
    assert.equal(c.max_msgs_per_subject, 7);
    assert.equal(c.allow_rollup_hdrs, true);
    assert.equal(c.allow_direct, true);
    assert.equal(c.discard, "new");
    assert.equal(c.max_msg_size, 1024);
    assert.equal(c.max_bytes, 1 << 20);
    // duplicate_window is capped by max_age's 2m default: left to the server to fill in.
    assert.equal(c.duplicate_window, 120_000_000_000);
    // A value over max_value_size is refused.
    const big = await failure(kv.put("big", "x".repeat(2000)));
    t["too_big"] = big.code;
    assert.equal(big.code, 10054);
    // Listing buckets.
    const names: string[] = [];
    for await (const s of await kvm.list()) names.push(s.bucket);
    t["listed"] = names.includes("status");
    assert.ok(names.includes("status"));
    const opened = await kvm.open("status");
    t["opened_get"] = (await opened.get("b"))?.string();
    assert.equal(t["opened_get"], "world!");
    // A short TTL makes the server shrink duplicate_window to it.
    const short = await kvm.create("status_short", { ttl: 30_000 });
    t["short_dup"] = (await short.status()).streamInfo.config.duplicate_window;
    assert.equal(t["short_dup"], 30_000_000_000);
    // Destroy.
    t["destroyed"] = await short.destroy();
    const gone = await failure(jsm.streams.info("KV_status_short"));
    t["destroyed_info"] = gone.code;
    assert.equal(gone.code, 10059);
    return t;
  },
};

const bucketTtl: KvScenario = {
  name: "bucket TTL (max_age) expires values",
  since: "2.9",
  async run({ kvm }) {
    const kv = await kvm.create("ttl", { ttl: 1000 });
    await kv.put("a", "1");
    await kv.put("b", "2");
    const t: Transcript = { before: await keys(kv) };
    assert.deepEqual(t["before"], ["a", "b"]);
    await until("values to age out", async () => (await kv.status()).values === 0);
    t["after_get"] = await getSeen(kv, "a");
    assert.equal(t["after_get"], null);
    t["after_keys"] = await keys(kv);
    assert.deepEqual(t["after_keys"], []);
    // Revisions keep counting after expiry; create works again.
    t["create_again"] = await kv.create("a", "3");
    assert.equal(t["create_again"], 3);
    return t;
  },
};

const perKeyTtl: KvScenario = {
  name: "per-key TTL (Nats-TTL) and subject delete markers",
  since: "2.11",
  async run({ kvm, jsm }) {
    const kv = await kvm.create("keyttl", { markerTTL: 2000, history: 5 });
    const t: Transcript = {};
    const si = await jsm.streams.info("KV_keyttl");
    assert.equal(si.config.allow_msg_ttl, true);
    assert.equal(si.config.subject_delete_marker_ttl, 2_000_000_000);
    assert.equal(si.config.allow_rollup_hdrs, true);
    const w = await kv.watch({ include: KvWatchInclude.UpdatesOnly, key: "short" });
    t["create_ttl"] = await kv.create("short", "s", "1s");
    await kv.put("long", "l");
    // The marker the server writes when the key's last message expires reads as a PURGE.
    const events = await take(w, 2, 15000);
    t["watch"] = events.map((e) => ({ key: e.key, op: e.operation }));
    assert.deepEqual(t["watch"], [
      { key: "short", op: "PUT" },
      { key: "short", op: "PURGE" },
    ]);
    const marker = await kv.get("short");
    assert.equal(marker?.operation, "PURGE");
    // (nats.js 3.4 keys() looks only at KV-Operation, so it still lists a key whose marker
    // carries just Nats-Marker-Reason, as it does against nats-server.)
    // create over the marker works (the marker is a purge).
    t["create_over_marker"] = (await kv.create("short", "again")) > 0;
    // The marker itself goes away after subject_delete_marker_ttl.
    await kv.delete("short");
    await kv.create("gone", "g", "1s");
    await until("the marker to appear", async () => (await kv.get("gone"))?.operation === "PURGE", 15000);
    await until("the marker to age out", async () => (await kv.get("gone")) === null, 15000);
    t["gone_history"] = await history(kv, "gone");
    assert.deepEqual(t["gone_history"], []);
    // purge with a TTL: the purge marker itself expires.
    await kv.put("p", "1");
    await kv.purge("p", { ttl: "1s" });
    await until("purge marker with TTL to expire", async () => (await kv.get("p")) === null, 15000);
    // A Nats-TTL on a bucket without allow_msg_ttl is refused.
    const plain = await kvm.create("keyttl_plain");
    const refused = await failure(plain.create("k", "v", "1s"));
    t["ttl_disabled"] = refused.code;
    assert.equal(refused.code, 10166);
    return t;
  },
};

const mirrorSources: KvScenario = {
  name: "mirrored buckets",
  since: "2.9",
  async run({ kvm, nc }) {
    const t: Transcript = {};
    const src = await kvm.create("msrc", { history: 3 });
    await src.put("a", "1");
    await src.put("b", "2");
    await src.put("a", "3");
    await src.delete("b");
    // nats.js 3.x addresses a mirror bucket's keys as $KV.<mirror bucket>.* (it is meant for a
    // mirror of the same bucket in another domain), so the copied messages are checked at the
    // stream level: same sequences, same subjects, direct get on the mirror.
    const mir = await kvm.create("mmir", { history: 3, mirror: { name: "msrc" } });
    await until("mirror to catch up", async () => (await mir.status()).values === 4);
    const direct = async (subj: string): Promise<Transcript> => {
      const m = await nc.request(`$JS.API.DIRECT.GET.KV_mmir.${subj}`, "", { timeout: 2000 });
      return { seq: m.headers?.get("Nats-Sequence"), op: m.headers?.get("KV-Operation") ?? "", data: m.string(), status: m.headers?.code ?? 0 };
    };
    t["mirror_a"] = await direct("$KV.msrc.a");
    assert.deepEqual(t["mirror_a"], { seq: "3", op: "", data: "3", status: 0 });
    t["mirror_b"] = await direct("$KV.msrc.b");
    assert.deepEqual(t["mirror_b"], { seq: "4", op: "DEL", data: "", status: 0 });
    await src.put("c", "later");
    await until("mirror to copy a later write", async () => (await direct("$KV.msrc.c"))["data"] === "later");
    const ms = await mir.status();
    t["mirror_config"] = normConfig(ms.streamInfo.config);
    assert.equal(ms.streamInfo.config.mirror_direct, true);
    assert.deepEqual(ms.streamInfo.config.mirror, { name: "KV_msrc" });
    return t;
  },
};

const sources: KvScenario = {
  name: "sourced buckets",
  since: "2.10",
  async run({ kvm }) {
    const t: Transcript = {};
    const s1 = await kvm.create("ms1");
    const s2 = await kvm.create("ms2");
    await s1.put("one", "1");
    await s2.put("two", "2");
    await s1.put("shared", "from-s1");
    const agg = await kvm.create("magg", { sources: [{ name: "ms1" }, { name: "ms2" }] });
    await until("sources to arrive", async () => (await agg.status()).values === 3);
    await s2.put("shared", "from-s2");
    await until("the later write to arrive", async () => (await agg.get("shared"))?.string() === "from-s2");
    t["agg_keys"] = await keys(agg);
    assert.deepEqual(t["agg_keys"], ["one", "shared", "two"]);
    t["agg_one"] = (await agg.get("one"))?.string();
    assert.equal(t["agg_one"], "1");
    const ac = (await agg.status()).streamInfo.config;
    assert.deepEqual(ac.sources?.[0]?.subject_transforms, [{ src: "$KV.ms1.>", dest: "$KV.magg.>" }]);
    t["agg_config"] = normConfig(ac);
    return t;
  },
};

export const KV_SCENARIOS: readonly KvScenario[] = [basics, keysScenario, watchScenario, statusScenario, bucketTtl, perKeyTtl, mirrorSources, sources];

/** Buckets with content written before a crash and checked after it. */
export async function crashWrites(kvm: Kvm): Promise<void> {
  const kv = await kvm.create("crash", { history: 4 });
  for (let i = 0; i < 50; i++) await kv.put(`k${i % 10}`, `v${i}`);
  await kv.delete("k3");
  await kv.purge("k4");
  await kv.create("fresh", "f");
  const ttl = await kvm.create("crash_ttl", { ttl: 3_600_000, history: 2 });
  await ttl.put("t", "1");
  await ttl.put("t", "2");
  await ttl.put("t", "3");
}
