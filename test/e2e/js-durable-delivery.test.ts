// A file stream delivers a message to consumers only after the fsync that makes it durable,
// and after its PubAck: on one connection that both publishes and consumes, each PubAck
// arrives before the consumer's copy of that message (nats.js "kv - initialized watch with
// modifications" closes the connection once the watcher has every entry; the last put's
// PubAck must already be there).
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect } from "@nats-io/transport-node";
import { jetstreamManager, AckPolicy } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import { startServer } from "../../src/index.js";
import { until } from "../helpers/until.js";

const dirs: string[] = [];
after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});
function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), "tsnats-e2e-durable-"));
  dirs.push(d);
  return d;
}

void test("file stream: a publisher's PubAck arrives before the push and pull deliveries of its message", async () => {
  const srv = await startServer({ host: "127.0.0.1", port: 0, jetstream: { enabled: true, storeDir: tempDir() } });
  const nc = await connect({ servers: srv.url });
  try {
    const jsm = await jetstreamManager(nc);
    await jsm.streams.add({ name: "D", subjects: ["d.>"], storage: "file" } as Parameters<typeof jsm.streams.add>[0]);
    await jsm.consumers.add("D", { durable_name: "push", deliver_subject: "dlv.push", ack_policy: AckPolicy.None });
    await jsm.consumers.add("D", { durable_name: "pull", ack_policy: AckPolicy.None });
    const N = 50;
    const log: string[] = [];
    // Message i is "m<i>" and gets sequence i (the stream starts empty).
    nc.subscribe("ack.>", {
      callback: (_e, m) => {
        log.push(`ack ${(JSON.parse(m.string()) as { seq: number }).seq}`);
      },
    });
    nc.subscribe("dlv.push", {
      callback: (_e, m) => {
        log.push(`push ${m.string().slice(1)}`);
      },
    });
    nc.subscribe("dlv.pull", {
      callback: (_e, m) => {
        if (m.data.length > 0) log.push(`pull ${m.string().slice(1)}`);
      },
    });
    nc.publish("$JS.API.CONSUMER.MSG.NEXT.D.pull", JSON.stringify({ batch: N, expires: 10e9 }), { reply: "dlv.pull" });
    await nc.flush();
    for (let i = 1; i <= N; i++) {
      nc.publish(`d.${i % 3}`, `m${i}`, { reply: `ack.${i}` });
      // Several rounds of one or more publishes: some share a read and an fsync, some not.
      if (i % 7 === 0) await nc.flush();
    }
    await until(`${3 * N} acks and deliveries (got ${log.length})`, () => log.length >= 3 * N, 5000);
    for (let seq = 1; seq <= N; seq++) {
      const a = log.indexOf(`ack ${seq}`);
      assert.ok(a >= 0, `ack ${seq}`);
      assert.ok(a < log.indexOf(`push ${seq}`), `PubAck ${seq} before its push delivery`);
      assert.ok(a < log.indexOf(`pull ${seq}`), `PubAck ${seq} before its pull delivery`);
    }
  } finally {
    await nc.close();
    await srv.close();
  }
});

// The nats.js scenario itself: the watcher on the putting connection sees every entry, then
// the connection closes at once; no put may still wait for its PubAck (it would reject).
void test("kv (file): closing as soon as a watcher on the same connection has the last entry fails no put", async () => {
  const srv = await startServer({ host: "127.0.0.1", port: 0, jetstream: { enabled: true, storeDir: tempDir() } });
  const nc = await connect({ servers: srv.url });
  try {
    const kv = await new Kvm(nc).create("W");
    const N = 40;
    const w = await kv.watch();
    const seen = (async () => {
      let n = 0;
      for await (const e of w) {
        if (e.operation === "PUT" && ++n === N) break;
      }
    })();
    const puts: Promise<unknown>[] = [];
    for (let i = 1; i <= N; i++) puts.push(kv.put(`k${i}`, `v${i}`));
    await seen;
    await nc.close();
    const failed = (await Promise.allSettled(puts)).filter((r) => r.status === "rejected");
    assert.equal(failed.length, 0, `puts rejected: ${failed.map((r) => String((r as PromiseRejectedResult).reason)).join("; ")}`);
  } finally {
    if (!nc.isClosed()) await nc.close();
    await srv.close();
  }
});
