// A cluster with a server that runs no JetStream (nats.js's "repub on 503" layout): its
// clients use JetStream through the others, as with nats-server, whose JetStream servers'
// API subscriptions are announced over routes. Here the clustered $JS.API handlers are one
// queue group across the JetStream servers: a request from the server without JetStream goes
// to one of them, a request made on a JetStream server is taken there, and each is answered
// exactly once.

import { test } from "node:test";
import assert from "node:assert/strict";
import { connect, createInbox, type NatsConnection } from "@nats-io/transport-node";
import { jetstream, jetstreamManager, AckPolicy } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import { metaLeader, startRig, stopRig } from "../helpers/jscluster-rig.js";
import { until } from "../helpers/until.js";

void test("a server without JetStream in a JetStream cluster: its clients create R3 streams, publish, consume and use KV through the others; every API request answered once", { timeout: 120_000 }, async () => {
  const names = ["a1", "b1", "c1", "n1"];
  const rig = await startRig("jsc-nojs-", names, [], "jsc", ["n1"]);
  const ncs: NatsConnection[] = [];
  try {
    const js3 = rig.procs.slice(0, 3).map((p) => p!);
    await until("a meta leader the three JetStream servers agree on", async () => {
      const ls = await Promise.all(js3.map(metaLeader));
      return ls[0] !== "" && ls.every((l) => l === ls[0]);
    }, 30_000);
    const plain = await connect({ servers: rig.procs[3]!.url });
    ncs.push(plain);
    // The JetStream servers' API interest reaches the server without JetStream.
    await until("the API answers through the server without JetStream", async () => {
      try {
        await plain.request("$JS.API.INFO", "", { timeout: 2000 });
        return true;
      } catch {
        return false;
      }
    }, 20_000);
    const jsm = await jetstreamManager(plain);

    await jsm.streams.add({ name: "NJ", subjects: ["nj.>"], num_replicas: 3 });
    const js = jetstream(plain);
    for (let i = 0; i < 50; i++) {
      const ack = await js.publish(`nj.${i % 5}`, `m${i}`, { msgID: `id-${i}` });
      assert.equal(ack.seq, i + 1);
    }
    // A retry of an acknowledged id is a duplicate, not a new message.
    assert.equal((await js.publish("nj.0", "again", { msgID: "id-3" })).duplicate, true);
    const si = await jsm.streams.info("NJ");
    assert.equal(si.state.messages, 50);
    assert.equal(si.cluster?.replicas?.length, 2);

    await jsm.consumers.add("NJ", { durable_name: "w", ack_policy: AckPolicy.Explicit });
    const c = await js.consumers.get("NJ", "w");
    const got: string[] = [];
    while (got.length < 50) {
      const batch = await c.fetch({ max_messages: 50, expires: 2000 });
      for await (const m of batch) {
        got.push(m.string());
        m.ack();
      }
    }
    assert.deepEqual(got, Array.from({ length: 50 }, (_, i) => `m${i}`));

    const kv = await new Kvm(plain).create("nojs", { replicas: 3 });
    const r1 = await kv.put("k", "v1");
    await kv.update("k", "v2", r1);
    await assert.rejects(kv.update("k", "v3", r1));
    assert.equal((await kv.get("k"))?.string(), "v2");

    // Exactly one answer per request, from a client on the server without JetStream and from
    // one on a JetStream server (which takes its own clients' requests).
    const onJs = await connect({ servers: rig.procs[0]!.url });
    ncs.push(onJs);
    for (const nc of [plain, onJs]) {
      const inbox = createInbox();
      let replies = 0;
      nc.subscribe(inbox, {
        callback: () => {
          replies++;
        },
      });
      await nc.flush();
      const N = 40;
      for (let i = 0; i < N; i++) nc.publish("$JS.API.STREAM.INFO.NJ", "", { reply: inbox });
      await until(`${N} STREAM.INFO replies`, () => replies >= N, 20_000);
      // Anything else would have come before a round trip through every server.
      for (const p of rig.procs) {
        const probe = await connect({ servers: p!.url });
        await probe.flush();
        await probe.close();
      }
      await nc.flush();
      assert.equal(replies, N, "each request answered once");
    }
  } finally {
    for (const nc of ncs) await nc.close().catch(() => {});
    await stopRig(rig);
  }
});
