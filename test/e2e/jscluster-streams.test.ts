// Streams through the meta group across three tsnats processes (src/jetstream/cluster-api.ts):
// a create sent to any server is placed by the meta leader (here by placement tags, on a
// server other than the one asked), answered by the server holding it; INFO, publish, a
// consumer and its pulls work from any server; names come from the meta state; delete from
// any server removes it everywhere; placement that cannot be met answers 10005; a restarted
// server opens the streams assigned to it again; with no meta leader a create answers 10008.

import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { jetstream, jetstreamManager, AckPolicy } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import { startTsnatsChild, type ChildServer } from "../helpers/core-child.js";
import { agreedLeader, live, metaLeader, monPort, req, startRig, stopRig } from "../helpers/jscluster-rig.js";
import { until } from "../helpers/until.js";

void test("clustered streams: R1 placed by tags, used from every server, deleted from any, restarted from meta state", async () => {
  const rig = await startRig("jsc-streams-");
  const ncs: NatsConnection[] = [];
  try {
    await until("a meta leader", async () => (await agreedLeader(rig)) !== "", 20_000);
    // Create from a1, placed on b1 by its tag.
    const [pa, pb, pc] = rig.procs as ChildServer[];
    const ncA = await connect({ servers: pa!.url });
    const ncB = await connect({ servers: pb!.url });
    const ncC = await connect({ servers: pc!.url });
    ncs.push(ncA, ncB, ncC);
    const created = await req(ncA, "$JS.API.STREAM.CREATE.ORDERS", {
      name: "ORDERS",
      subjects: ["orders.>"],
      num_replicas: 1,
      placement: { tags: ["node:b1"] },
    });
    assert.equal(created["type"], "io.nats.jetstream.api.v1.stream_create_response", JSON.stringify(created));
    assert.equal(created["error"], undefined, JSON.stringify(created));
    assert.equal(created["did_create"], true);
    assert.equal((created["config"] as { name: string }).name, "ORDERS");
    // Only b1 holds it on disk.
    assert.ok(existsSync(join(rig.dir, "b1", "jetstream", "$G", "streams", "ORDERS", "meta.json")));
    assert.ok(!existsSync(join(rig.dir, "a1", "jetstream", "$G", "streams", "ORDERS")));
    assert.ok(!existsSync(join(rig.dir, "c1", "jetstream", "$G", "streams", "ORDERS")));

    // Publish from every server: the stream's subscriptions are announced over routes.
    const pubs = [jetstream(ncB), jetstream(ncA), jetstream(ncC)];
    await until("b1's interest in orders.> reached a1 and c1", async () => {
      const r = await Promise.all([ncA, ncC].map((nc) => nc.request("orders.probe", "", { timeout: 1000 }).then(() => true, () => false)));
      return r.every((x) => x);
    });
    await req(ncB, "$JS.API.STREAM.PURGE.ORDERS");
    // The probes above were stored too (as many as the wait took): the orders' sequences
    // follow them, so the last one is taken from its ack.
    let lastOrderSeq = 0;
    for (let i = 0; i < 5; i++) {
      const ack = await pubs[i % 3]!.publish(`orders.${i}`, `o${i}`);
      assert.equal(ack.stream, "ORDERS");
      lastOrderSeq = ack.seq;
    }
    // INFO from every server: the same state, the cluster block names b1.
    for (const nc of [ncA, ncB, ncC]) {
      const info = await req(nc, "$JS.API.STREAM.INFO.ORDERS");
      assert.equal(info["error"], undefined, JSON.stringify(info));
      assert.equal((info["state"] as { messages: number }).messages, 5);
      assert.deepEqual(info["cluster"], { name: "jsc", leader: "b1" });
    }
    // Names and account info come from the meta state, on any server.
    for (const nc of [ncA, ncC]) {
      const names = await req(nc, "$JS.API.STREAM.NAMES");
      assert.deepEqual(names["streams"], ["ORDERS"]);
      const ai = await req(nc, "$JS.API.INFO");
      assert.equal(ai["streams"], 1);
    }
    // LIST gathers each stream's info from its leader (b1), asked of c1.
    const list = await req(ncC, "$JS.API.STREAM.LIST");
    assert.equal(list["total"], 1);
    const li = (list["streams"] as Array<{ config: { name: string }; state: { messages: number }; cluster: { leader: string } }>)[0]!;
    assert.equal(li.config.name, "ORDERS");
    assert.equal(li.state.messages, 5);
    assert.equal(li.cluster.leader, "b1");
    assert.equal(list["missing"], undefined);
    // Stepdown of an R1 stream: nothing to move, success (as nats-server).
    assert.deepEqual(await req(ncA, "$JS.API.STREAM.LEADER.STEPDOWN.ORDERS"), { type: "io.nats.jetstream.api.v1.stream_leader_stepdown_response", success: true });
    // MSG.GET from c1.
    const got = await req(ncC, "$JS.API.STREAM.MSG.GET.ORDERS", { seq: lastOrderSeq - 2 });
    assert.equal((got["message"] as { subject: string }).subject, "orders.2");
    // A consumer made from a1 lives on b1; pulls and acks from a1 reach it.
    const jsmA = await jetstreamManager(ncA);
    const ci = await jsmA.consumers.add("ORDERS", { durable_name: "proc", ack_policy: AckPolicy.Explicit });
    assert.equal(ci.name, "proc");
    const c = await jetstream(ncA).consumers.get("ORDERS", "proc");
    const batch = await c.fetch({ max_messages: 5, expires: 3000 });
    const seen: string[] = [];
    for await (const m of batch) {
      seen.push(m.subject);
      await m.ackAck();
    }
    assert.deepEqual(seen, ["orders.0", "orders.1", "orders.2", "orders.3", "orders.4"]);
    const cinfo = await jsmA.consumers.info("ORDERS", "proc");
    assert.equal(cinfo.ack_floor.stream_seq, lastOrderSeq);
    assert.equal(cinfo.num_ack_pending, 0);

    // The same create again from c1: answered with the existing stream's info.
    const again = await req(ncC, "$JS.API.STREAM.CREATE.ORDERS", { name: "ORDERS", subjects: ["orders.>"], num_replicas: 1, placement: { tags: ["node:b1"] } });
    assert.equal(again["error"], undefined, JSON.stringify(again));
    assert.equal((again["state"] as { messages: number }).messages, 5);
    // Overlapping subjects with a stream held elsewhere: refused by the meta leader.
    const overlap = await req(ncA, "$JS.API.STREAM.CREATE.OTHER", { name: "OTHER", subjects: ["orders.x"] });
    assert.equal((overlap["error"] as { err_code: number }).err_code, 10065);
    // Placement that cannot be met: 10005.
    const noPeers = await req(ncA, "$JS.API.STREAM.CREATE.NOPE", { name: "NOPE", subjects: ["nope"], placement: { tags: ["node:zz"] } });
    assert.equal((noPeers["error"] as { err_code: number; description: string }).err_code, 10005);
    assert.match((noPeers["error"] as { description: string }).description, /no suitable peers for placement/);
    // Not assigned: 10059 from any server.
    const missing = await req(ncA, "$JS.API.STREAM.INFO.MISSING");
    assert.equal((missing["error"] as { err_code: number }).err_code, 10059);

    // A second stream on c1, then restart c1: it comes back from the meta state.
    const s2 = await req(ncB, "$JS.API.STREAM.CREATE.EVENTS", { name: "EVENTS", subjects: ["events.>"], placement: { tags: ["node:c1"] } });
    assert.equal(s2["error"], undefined, JSON.stringify(s2));
    await jetstream(ncC).publish("events.1", "e1");
    await ncC.close();
    ncs.splice(ncs.indexOf(ncC), 1);
    await rig.procs[2]!.stop();
    // A stream directory the meta state does not know (left from before clustering, say):
    // not opened, not announced, and never deleted.
    const ghost = join(rig.dir, "c1", "jetstream", "$G", "streams", "GHOST");
    mkdirSync(join(ghost, "msgs"), { recursive: true });
    writeFileSync(join(ghost, "meta.json"), JSON.stringify({ created: "2026-01-01T00:00:00Z", created_ns: 1, config: { name: "GHOST", subjects: ["ghost.>"], storage: "file" } }));
    rig.procs[2] = await startTsnatsChild(["-c", rig.confs[2]!]);
    const ncC2 = await connect({ servers: rig.procs[2]!.url });
    ncs.push(ncC2);
    await until("EVENTS is back on c1 with its message", async () => {
      const i = await req(ncA, "$JS.API.STREAM.INFO.EVENTS").catch(() => ({}) as Record<string, unknown>);
      return (i["state"] as { messages?: number } | undefined)?.messages === 1;
    }, 20_000);

    // Delete from c1 (not the holder): gone everywhere, its directory removed on b1.
    await until("the restarted server knows the meta leader", async () => (await agreedLeader(rig)) !== "", 15_000);
    assert.ok(existsSync(join(ghost, "meta.json")), "an unassigned stream directory is left alone");
    assert.equal(((await req(ncC2, "$JS.API.STREAM.INFO.GHOST"))["error"] as { err_code: number }).err_code, 10059);
    assert.equal((await ncC2.request("ghost.1", "x", { timeout: 1000 }).catch((e: Error) => e)) instanceof Error, true, "nothing takes its subjects");
    const del = await req(ncC2, "$JS.API.STREAM.DELETE.ORDERS");
    assert.deepEqual(del, { type: "io.nats.jetstream.api.v1.stream_delete_response", success: true });
    await until("ORDERS removed from b1's disk", () => !existsSync(join(rig.dir, "b1", "jetstream", "$G", "streams", "ORDERS")));
    const gone = await req(ncB, "$JS.API.STREAM.INFO.ORDERS");
    assert.equal((gone["error"] as { err_code: number }).err_code, 10059);
    const names = await req(ncB, "$JS.API.STREAM.NAMES");
    assert.deepEqual(names["streams"], ["EVENTS"]);

    // SIGKILL of the meta leader: the two others elect one; a create asked of either works.
    for (const nc of ncs.splice(0)) await nc.close();
    const ml = await agreedLeader(rig);
    const mi = rig.names.indexOf(ml);
    rig.procs[mi]!.proc.kill("SIGKILL");
    await rig.procs[mi]!.exited;
    rig.procs[mi] = null;
    await until("the survivors elect a meta leader", async () => {
      const l = await agreedLeader(rig);
      return l !== "" && l !== ml;
    }, 20_000);
    const survivor = live(rig)[0]!;
    const ncS = await connect({ servers: survivor.url });
    ncs.push(ncS);
    const after = await req(ncS, "$JS.API.STREAM.CREATE.AFTER", { name: "AFTER", subjects: ["after"] });
    assert.equal(after["error"], undefined, JSON.stringify(after));
    const afterInfo = await req(ncS, "$JS.API.STREAM.INFO.AFTER");
    assert.notEqual((afterInfo["cluster"] as { leader: string }).leader, ml, "placed on a server that is up");

    // Only one server left: no meta leader; a create answers 503/10008.
    for (const nc of ncs.splice(0)) await nc.close();
    const lone = survivor;
    for (const p of live(rig)) {
      if (p === lone) continue;
      await p.stop();
      rig.procs[rig.procs.indexOf(p)] = null;
    }
    await until("no meta leader on the lone server", async () => (await metaLeader(lone)) === "", 15_000);
    const ncL = await connect({ servers: lone.url });
    ncs.push(ncL);
    const r = await req(ncL, "$JS.API.STREAM.CREATE.LATE", { name: "LATE", subjects: ["late"] });
    assert.deepEqual(r["error"], { code: 503, err_code: 10008, description: "JetStream system temporarily unavailable" });
  } finally {
    for (const nc of ncs) await nc.close().catch(() => undefined);
    await stopRig(rig);
  }
});

/** Resolves once every server has heard of nc's subscriptions made so far: a flush only tells
 *  nc's own server, and another server may publish (an advisory) before the route's RS+ reaches
 *  it. A probe subscription made after them travels behind them on each route, so once a
 *  publish to it from every other connection comes back, they are known everywhere. */
async function interestEverywhere(nc: NatsConnection, others: NatsConnection[]): Promise<void> {
  const probe = `probe.${Math.random().toString(36).slice(2)}`;
  const from = new Set<number>();
  const sub = nc.subscribe(`${probe}.*`, { callback: (_e, m) => void from.add(Number(m.subject.slice(probe.length + 1))) });
  await nc.flush();
  try {
    await until("interest on every server", async () => {
      for (let i = 0; i < others.length; i++) if (!from.has(i)) others[i]!.publish(`${probe}.${i}`);
      for (const o of others) await o.flush();
      await nc.flush();
      return from.size === others.length;
    }, 10_000);
  } finally {
    sub.unsubscribe();
  }
}

interface ClusterBlock {
  name: string;
  raft_group?: string;
  leader?: string;
  leader_since?: string;
  replicas?: Array<{ name: string; current: boolean; active: number; peer: string; lag?: number; offline?: boolean }>;
}

void test("clustered streams: R3 created from any server, published to and read from every server, stepdown, purge, delete everywhere", async (t) => {
  const rig = await startRig("jsc-r3-");
  const ncs: NatsConnection[] = [];
  try {
    await until("a meta leader", async () => (await agreedLeader(rig)) !== "", 20_000);
    for (const p of rig.procs) ncs.push(await connect({ servers: p!.url }));
    const [ncA, ncB, ncC] = ncs as [NatsConnection, NatsConnection, NatsConnection];
    const advisories: string[] = [];
    ncA.subscribe("$JS.EVENT.ADVISORY.STREAM.*.R3S", { callback: (_e, m) => void advisories.push(m.subject) });
    await interestEverywhere(ncA, [ncB, ncC]);
    const created = await req(ncC, "$JS.API.STREAM.CREATE.R3S", { name: "R3S", subjects: ["r3.>"], num_replicas: 3 });
    assert.equal(created["error"], undefined, JSON.stringify(created));
    assert.equal(created["did_create"], true);
    assert.equal((created["config"] as { num_replicas: number }).num_replicas, 3);
    for (const n of rig.names) assert.ok(existsSync(join(rig.dir, n, "jetstream", "$G", "streams", "R3S", "meta.json")), n);
    // The same create again, asked of another server: the stream's leader answers with its info.
    const again0 = await req(ncA, "$JS.API.STREAM.CREATE.R3S", { name: "R3S", subjects: ["r3.>"], num_replicas: 3 });
    assert.equal(again0["error"], undefined, JSON.stringify(again0));
    assert.equal((again0["config"] as { num_replicas: number }).num_replicas, 3);
    // More replicas than servers: refused (scaling itself is jscluster-scale.test.ts); other
    // updates apply on every replica.
    const upR = await req(ncB, "$JS.API.STREAM.UPDATE.R3S", { name: "R3S", subjects: ["r3.>"], num_replicas: 5 });
    assert.equal((upR["error"] as { err_code: number }).err_code, 10005);
    const up = await req(ncB, "$JS.API.STREAM.UPDATE.R3S", { name: "R3S", subjects: ["r3.>"], num_replicas: 3, max_msgs: 1000 });
    assert.equal(up["error"], undefined, JSON.stringify(up));
    assert.equal((up["config"] as { max_msgs: number }).max_msgs, 1000);

    const info0 = await req(ncA, "$JS.API.STREAM.INFO.R3S");
    const cl0 = info0["cluster"] as ClusterBlock;
    assert.equal(cl0.name, "jsc");
    assert.match(cl0.raft_group ?? "", /^S-R3F-/);
    assert.ok(rig.names.includes(cl0.leader ?? ""), JSON.stringify(cl0));
    assert.equal(typeof cl0.leader_since, "string");
    assert.deepEqual(cl0.replicas!.map((r) => r.name).sort(), rig.names.filter((n) => n !== cl0.leader));

    // Publishes from every server reach the leader; each PubAck after commit.
    await until("the leader's interest in r3.> reached every server", async () => {
      const r = await Promise.all(ncs.map((nc) => nc.request("r3.probe", "", { timeout: 1000 }).then(() => true, () => false)));
      return r.every((x) => x);
    });
    const before = ((await req(ncA, "$JS.API.STREAM.INFO.R3S"))["state"] as { messages: number }).messages;
    for (let i = 0; i < 30; i++) {
      const ack = await jetstream(ncs[i % 3]!).publish(`r3.${i % 4}`, `m${i}`);
      assert.equal(ack.stream, "R3S");
    }
    for (const nc of ncs) {
      const i = await req(nc, "$JS.API.STREAM.INFO.R3S");
      assert.equal((i["state"] as { messages: number }).messages, before + 30);
    }
    await until("both followers current", async () => {
      const c = (await req(ncB, "$JS.API.STREAM.INFO.R3S"))["cluster"] as ClusterBlock;
      return (c.replicas ?? []).length === 2 && c.replicas!.every((r) => r.current);
    });

    // One created and one updated advisory, not one per replica.
    for (const nc of ncs) await nc.flush();
    assert.deepEqual(advisories, ["$JS.EVENT.ADVISORY.STREAM.CREATED.R3S", "$JS.EVENT.ADVISORY.STREAM.UPDATED.R3S"]);

    // A durable consumer made from c1 runs on the leader; b1 fetches and acks through it.
    const jsmC = await jetstreamManager(ncC);
    await jsmC.consumers.add("R3S", { durable_name: "d3", ack_policy: AckPolicy.Explicit, filter_subject: "r3.1" });
    const r3c = await req(ncA, "$JS.API.CONSUMER.DURABLE.CREATE.R3S.rep3", { stream_name: "R3S", config: { durable_name: "rep3", num_replicas: 3 } });
    assert.equal(r3c["error"], undefined, JSON.stringify(r3c));
    const r5c = await req(ncA, "$JS.API.CONSUMER.DURABLE.CREATE.R3S.rep5", { stream_name: "R3S", config: { durable_name: "rep5", num_replicas: 5 } });
    assert.equal((r5c["error"] as { err_code: number }).err_code, 10126);
    const restore = await req(ncA, "$JS.API.STREAM.RESTORE.R3S", { config: { name: "R3S" } });
    assert.equal((restore["error"] as { err_code: number }).err_code, 10036);
    const d3 = await jetstream(ncB).consumers.get("R3S", "d3");
    const got: string[] = [];
    for await (const m of await d3.fetch({ max_messages: 5, expires: 3000 })) {
      got.push(m.string());
      await m.ackAck();
    }
    assert.deepEqual(got, ["m1", "m5", "m9", "m13", "m17"]);

    // Stepdown, asked of any server: another replica leads, and publishes go on.
    const sd = await req(ncB, "$JS.API.STREAM.LEADER.STEPDOWN.R3S");
    assert.deepEqual(sd, { type: "io.nats.jetstream.api.v1.stream_leader_stepdown_response", success: true });
    let next = "";
    await until("a new stream leader", async () => {
      next = ((await req(ncA, "$JS.API.STREAM.INFO.R3S"))["cluster"] as ClusterBlock | undefined)?.leader ?? ""; // an error while leadership moves: no block
      return next !== "" && next !== cl0.leader;
    });
    const js = jetstream(ncA);
    let acked = false;
    await until("a publish after the stepdown is acknowledged", async () => {
      acked = await js.publish("r3.after", "x").then(() => true, () => false);
      return acked;
    });
    // The new leader runs the durable from its replicas' copy of its state (issue 18): the
    // five acked messages stay acked and delivery goes on after them.
    let d3info: Record<string, unknown> = {};
    await until("d3 on the new stream leader", async () => {
      d3info = await req(ncA, "$JS.API.CONSUMER.INFO.R3S.d3");
      return d3info["error"] === undefined;
    });
    assert.equal((d3info["config"] as { filter_subject: string }).filter_subject, "r3.1");
    assert.ok((d3info["ack_floor"] as { stream_seq: number }).stream_seq >= 18, JSON.stringify(d3info["ack_floor"])); // m17 is sequence 18
    assert.equal(d3info["num_ack_pending"], 0);
    assert.equal((d3info["cluster"] as ClusterBlock).leader, next);
    const again: string[] = [];
    for await (const m of await (await jetstream(ncC).consumers.get("R3S", "d3")).fetch({ max_messages: 2, expires: 3000 })) {
      again.push(m.string());
      m.ack();
    }
    assert.deepEqual(again, ["m21", "m25"]);

    // Purge through the group: every replica applies it.
    const pr = await req(ncC, "$JS.API.STREAM.PURGE.R3S", { filter: "r3.0" });
    assert.equal(pr["success"], true);
    assert.ok((pr["purged"] as number) > 0);

    // A follower stops; publishes go on with two of three; it restarts, opens its copy from the
    // meta state and catches up (its own /jsz counts the messages it holds).
    const lead = ((await req(ncA, "$JS.API.STREAM.INFO.R3S"))["cluster"] as ClusterBlock).leader!;
    const fi = rig.names.findIndex((n) => n !== lead && n !== "a1");
    await ncs[fi]!.close();
    await rig.procs[fi]!.stop();
    rig.procs[fi] = null;
    for (let i = 0; i < 10; i++) await jetstream(ncA).publish("r3.late", `late${i}`);
    const want = ((await req(ncA, "$JS.API.STREAM.INFO.R3S"))["state"] as { messages: number }).messages;
    rig.procs[fi] = await startTsnatsChild(["-c", rig.confs[fi]!]);
    ncs[fi] = await connect({ servers: rig.procs[fi]!.url });
    await until("the restarted replica holds every message", async () => {
      try {
        const r = await fetch(`http://127.0.0.1:${monPort(rig.procs[fi]!)}/jsz`, { signal: AbortSignal.timeout(2000) });
        const j = (await r.json()) as { streams: number; messages: number };
        return j.streams === 1 && j.messages === want;
      } catch {
        return false;
      }
    }, 20_000);

    // SIGKILL of the stream leader: the other two elect one, publishes and the durable go on
    // there; the killed server comes back as a follower.
    const lead2 = ((await req(ncs[0]!, "$JS.API.STREAM.INFO.R3S"))["cluster"] as ClusterBlock).leader!;
    const ki = rig.names.indexOf(lead2);
    const other = ncs[(ki + 1) % 3]!;
    await ncs[ki]!.close();
    const killedAt = performance.now();
    rig.procs[ki]!.proc.kill("SIGKILL");
    await rig.procs[ki]!.exited;
    rig.procs[ki] = null;
    let lead3 = "";
    await until("a new stream leader after SIGKILL", async () => {
      const i = await req(other, "$JS.API.STREAM.INFO.R3S").catch(() => ({}) as Record<string, unknown>);
      lead3 = (i["cluster"] as ClusterBlock | undefined)?.leader ?? "";
      return lead3 !== "" && lead3 !== lead2;
    }, 20_000);
    await until("a publish after the SIGKILL is acknowledged", () => jetstream(other).publish("r3.1", "after-kill").then(() => true, () => false), 20_000);
    t.diagnostic(`SIGKILL of the R3 stream leader -> next PubAck: ${Math.round(performance.now() - killedAt)} ms`);
    await until("d3 on the leader after the SIGKILL", async () => (await req(other, "$JS.API.CONSUMER.INFO.R3S.d3").catch(() => ({ error: 1 })))["error"] === undefined);
    rig.procs[ki] = await startTsnatsChild(["-c", rig.confs[ki]!]);
    ncs[ki] = await connect({ servers: rig.procs[ki]!.url });
    await until("the killed server knows the meta leader again", async () => (await agreedLeader(rig)) !== "", 20_000);

    // Delete from any server: every replica's directory goes.
    const delAdv: string[] = [];
    ncs[1]!.subscribe("$JS.EVENT.ADVISORY.STREAM.DELETED.R3S", { callback: (_e, m) => void delAdv.push(m.subject) });
    await interestEverywhere(ncs[1]!, [ncs[0]!, ncs[2]!]);
    const del = await req(ncs[1]!, "$JS.API.STREAM.DELETE.R3S");
    assert.equal(del["success"], true, JSON.stringify(del));
    for (const n of rig.names) {
      await until(`R3S removed on ${n}`, () => !existsSync(join(rig.dir, n, "jetstream", "$G", "streams", "R3S")));
    }
    const gone = await req(ncs[2]!, "$JS.API.STREAM.INFO.R3S");
    // One deleted advisory, not one per replica.
    for (const nc of ncs) await nc.flush();
    assert.deepEqual(delAdv, ["$JS.EVENT.ADVISORY.STREAM.DELETED.R3S"]);
    assert.equal((gone["error"] as { err_code: number }).err_code, 10059);
  } finally {
    for (const nc of ncs) await nc.close().catch(() => undefined);
    await stopRig(rig);
  }
});

void test("clustered streams: a KV bucket with 3 replicas, written and read from different servers", async () => {
  const rig = await startRig("jsc-kv-");
  const ncs: NatsConnection[] = [];
  try {
    await until("a meta leader", async () => (await agreedLeader(rig)) !== "", 20_000);
    for (const p of rig.procs) ncs.push(await connect({ servers: p!.url }));
    const kvA = await new Kvm(ncs[0]!).create("cfg", { replicas: 3, history: 3 });
    const kvB = await new Kvm(ncs[1]!).open("cfg");
    const kvC = await new Kvm(ncs[2]!).open("cfg");
    await until("the bucket's leader takes writes from b1", () => kvB.put("probe", "1").then(() => true, () => false));
    for (let i = 0; i < 20; i++) {
      const w = [kvA, kvB, kvC][i % 3]!;
      const r = [kvA, kvB, kvC][(i + 1) % 3]!;
      const rev = await w.put(`k${i % 5}`, `v${i}`);
      // Read-your-write from another server: every replica answers direct gets, so wait for it.
      await until(`k${i % 5} rev ${rev} visible`, async () => (await r.get(`k${i % 5}`))?.revision === rev);
    }
    const e = await kvC.get("k4");
    assert.equal(e?.string(), "v19");
    const hist: string[] = [];
    for await (const h of await kvA.history({ key: "k0" })) hist.push(h.string());
    assert.deepEqual(hist, ["v5", "v10", "v15"]);
    const st = await kvB.status();
    assert.equal(st.replicas, 3);
  } finally {
    for (const nc of ncs) await nc.close().catch(() => undefined);
    await stopRig(rig);
  }
});
