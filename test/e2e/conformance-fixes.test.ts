// Regressions found by running the nats.js v3 test suite against tsnats (each test names
// the upstream test it stands for). Official clients only; servers are tsnats children or
// in-process servers on 127.0.0.1 with random ports.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect, errors } from "@nats-io/transport-node";
import { AckPolicy, jetstream, jetstreamManager, JetStreamApiError } from "@nats-io/jetstream";
import { Kvm, type KvEntry } from "@nats-io/kv";
import { startServer } from "../../src/index.js";
import { startTsnatsChild, type ChildServer } from "../helpers/core-child.js";
import { within } from "../helpers/core-wait.js";

const dirs: string[] = [];
const children: ChildServer[] = [];

function tempDir(tag: string): string {
  const d = mkdtempSync(join(tmpdir(), `tsnats-e2e-conf-${tag}-`));
  dirs.push(d);
  return d;
}

async function child(args: string[]): Promise<ChildServer> {
  const c = await startTsnatsChild(args);
  children.push(c);
  return c;
}

after(async () => {
  for (const c of children) await c.stop();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

// nats.js "kv - watcher on server restart": a KV watcher is an ordered push consumer with a
// 30 s heartbeat, so the client notices a lost consumer only after a minute. nats-server keeps
// ephemeral consumers of file streams on disk and brings them back at start; the client's
// resubscription after reconnecting then receives new entries at once.
void test("ephemeral push consumer (KV watcher) survives SIGKILL + restart on the same port", async () => {
  const sd = tempDir("watch");
  let srv = await child(["-a", "127.0.0.1", "-p", "-1", "-js", "-sd", sd]);
  const port = srv.port;
  const nc = await connect({ servers: srv.url, reconnectTimeWait: 100, maxReconnectAttempts: -1 });
  try {
    const kv = await new Kvm(jetstream(nc)).create("A");
    const iter = await kv.watch();
    const first = (async (): Promise<KvEntry | null> => {
      for await (const e of iter) return e;
      return null;
    })();
    const jsm = await jetstreamManager(nc);
    const before = await jsm.consumers.list("KV_A").next();
    assert.equal(before.length, 1);
    assert.equal(before[0]!.config.durable_name, undefined, "the watcher is an ephemeral");

    srv.proc.kill("SIGKILL");
    assert.equal(await srv.exited, "SIGKILL");
    srv = await child(["-a", "127.0.0.1", "-p", String(port), "-js", "-sd", sd]);

    // The consumer is back before any client asks for it (requests may fail until the
    // client has reconnected).
    let after: typeof before | null = null;
    for (let i = 0; i < 20 && after === null; i++) {
      after = await jsm.consumers.list("KV_A").next().catch(() => null);
    }
    assert.ok(after !== null, "consumer list after restart");
    assert.deepEqual(
      after.map((c) => c.name),
      before.map((c) => c.name),
    );
    assert.equal(after[0]!.config.durable_name, undefined, "still an ephemeral after recovery");

    let put = false;
    for (let i = 0; i < 20 && !put; i++) {
      put = await kv.put("hello", "world").then(
        () => true,
        () => false,
      );
    }
    assert.ok(put, "put after restart");
    // Far below the client's own recovery (two missed 30 s heartbeats).
    const e = await within(first, "watcher entry after restart", 10_000);
    assert.ok(e !== null);
    assert.equal(e.key, "hello");
    assert.equal(e.string(), "world");
    iter.stop();
  } finally {
    await nc.close();
  }
});

// nats.js "jsm - stream consumer limits" and "jsm - consumer pedantic": a stream's
// consumer_limits fill max_ack_pending and inactive_threshold of every consumer that leaves
// them unset (durables and any ack policy too); in pedantic mode leaving them unset is an error.
void test("stream consumer_limits are the defaults of its consumers; pedantic mode wants them set", async () => {
  const srv = await startServer({ host: "127.0.0.1", port: 0, jetstream: { enabled: true, storeDir: tempDir("climits") } });
  const nc = await connect({ servers: srv.url });
  try {
    const jsm = await jetstreamManager(nc);
    await jsm.streams.add({
      name: "L",
      subjects: ["l"],
      storage: "memory",
      consumer_limits: { max_ack_pending: 20, inactive_threshold: 60e9 },
    } as Parameters<typeof jsm.streams.add>[0]);
    const durable = await jsm.consumers.add("L", { durable_name: "d" });
    assert.equal(durable.config.max_ack_pending, 20);
    assert.equal(durable.config.inactive_threshold, 60e9);
    const explicit = await jsm.consumers.add("L", { name: "e", ack_policy: AckPolicy.Explicit, inactive_threshold: 10e9 });
    assert.equal(explicit.config.max_ack_pending, 20);
    assert.equal(explicit.config.inactive_threshold, 10e9);
    await assert.rejects(
      jsm.consumers.add("L", { name: "p", ack_policy: AckPolicy.Explicit, inactive_threshold: 10e9 }, { pedantic: true }),
      (e: unknown) =>
        e instanceof JetStreamApiError &&
        e.code === 10157 &&
        e.message === "pedantic mode: max_ack_pending must be set if it's configured in stream limits",
    );
    await assert.rejects(
      jsm.consumers.add("L", { name: "p", ack_policy: AckPolicy.Explicit, max_ack_pending: 5 }, { pedantic: true }),
      (e: unknown) => e instanceof JetStreamApiError && e.code === 10157 && e.message.includes("inactive_threshold must be set"),
    );
    const ok = await jsm.consumers.add("L", { name: "p", ack_policy: AckPolicy.Explicit, max_ack_pending: 5, inactive_threshold: 1e9 }, { pedantic: true });
    assert.equal(ok.config.max_ack_pending, 5);
  } finally {
    await nc.close();
    await srv.close();
  }
});

// nats.js "jsmsg - no ack consumer is ackAck 503": since nats-server 2.11 an ack-none consumer
// does not subscribe to its ack subjects, so an ack sent as a request gets no responders.
void test("ack-none consumer: ackAck gets no responders; an explicit-ack consumer confirms", async () => {
  const srv = await startServer({ host: "127.0.0.1", port: 0, jetstream: { enabled: true, storeDir: tempDir("acknone") } });
  const nc = await connect({ servers: srv.url });
  try {
    const jsm = await jetstreamManager(nc);
    await jsm.streams.add({ name: "N", subjects: ["n.>"], storage: "memory" } as Parameters<typeof jsm.streams.add>[0]);
    const js = jetstream(nc);
    await js.publish("n.a");
    await jsm.consumers.add("N", { durable_name: "none", ack_policy: AckPolicy.None });
    await jsm.consumers.add("N", { durable_name: "exp", ack_policy: AckPolicy.Explicit });
    const none = await (await js.consumers.get("N", "none")).next({ expires: 2000 });
    assert.ok(none !== null);
    await assert.rejects(none.ackAck({ timeout: 2000 }), (e: unknown) => e instanceof errors.RequestError && e.isNoResponders());
    const exp = await (await js.consumers.get("N", "exp")).next({ expires: 2000 });
    assert.ok(exp !== null);
    assert.equal(await exp.ackAck({ timeout: 2000 }), true);
  } finally {
    await nc.close();
    await srv.close();
  }
});
