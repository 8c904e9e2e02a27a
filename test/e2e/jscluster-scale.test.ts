// Scaling a clustered stream by STREAM.UPDATE of num_replicas (nats-server 2.10+), with the
// official client, across five tsnats processes: R1→R3→R5→R3→R1 while a publisher with
// message ids goes on; after every step each member holds every message (its own /jsz), a
// durable keeps its ack floor and pending count, and at the end nothing acknowledged is lost
// and nothing is stored twice. Then a member whose disk was wiped rejoins and catches up.

import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, rmSync } from "node:fs";
import { join } from "node:path";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { jetstream, AckPolicy } from "@nats-io/jetstream";
import { startTsnatsChild, type ChildServer } from "../helpers/core-child.js";
import { agreedLeader, monPort, msgIdPublisher, req, startRig, stopRig, type Rig } from "../helpers/jscluster-rig.js";
import { until } from "../helpers/until.js";

interface Replica {
  name: string;
  current: boolean;
}
interface ClusterBlock {
  leader?: string;
  replicas?: Replica[];
}

async function jszMessages(s: ChildServer): Promise<number> {
  try {
    const r = await fetch(`http://127.0.0.1:${monPort(s)}/jsz`, { signal: AbortSignal.timeout(2000) });
    const j = (await r.json()) as { messages?: number };
    return j.messages ?? -1;
  } catch {
    return -1;
  }
}

async function info(nc: NatsConnection, stream: string): Promise<{ cluster: ClusterBlock; messages: number; replicas: number; error?: unknown }> {
  const i = await req(nc, `$JS.API.STREAM.INFO.${stream}`).catch(() => ({}) as Record<string, unknown>);
  return {
    cluster: (i["cluster"] ?? {}) as ClusterBlock,
    messages: ((i["state"] ?? {}) as { messages?: number }).messages ?? -1,
    replicas: ((i["config"] ?? {}) as { num_replicas?: number }).num_replicas ?? -1,
    error: i["error"],
  };
}

function members(c: ClusterBlock): string[] {
  return [c.leader ?? "", ...(c.replicas ?? []).map((r) => r.name)].filter((n) => n !== "").sort();
}

async function update(nc: NatsConnection, replicas: number, storage = "file"): Promise<void> {
  const r = await req(nc, "$JS.API.STREAM.UPDATE.SC", { name: "SC", subjects: ["sc.>"], storage, num_replicas: replicas });
  assert.equal(r["error"], undefined, JSON.stringify(r));
  assert.equal((r["config"] as { num_replicas: number }).num_replicas, replicas);
}

/** Waits until the stream has `n` members, all current; returns them. */
async function settled(rig: Rig, nc: NatsConnection, n: number): Promise<string[]> {
  let got: string[] = [];
  await until(`${n} members, all current`, async () => {
    const i = await info(nc, "SC");
    got = members(i.cluster);
    return i.replicas === n && got.length === n && (i.cluster.replicas ?? []).every((r) => r.current);
  }, 30_000);
  for (const m of got) assert.ok(rig.names.includes(m), m);
  return got;
}

/** With publishes paused: every member holds the leader's messages (its own store). */
async function everyMemberHolds(rig: Rig, nc: NatsConnection, ms: string[]): Promise<number> {
  const want = (await info(nc, "SC")).messages;
  for (const m of ms) {
    const p = rig.procs[rig.names.indexOf(m)]!;
    await until(`${m} holds ${want} messages`, async () => (await jszMessages(p)) === want, 20_000);
  }
  return want;
}

async function consumerState(nc: NatsConnection): Promise<{ ackFloor: number; delivered: number; pending: number }> {
  const ci = await req(nc, "$JS.API.CONSUMER.INFO.SC.D");
  assert.equal(ci["error"], undefined, JSON.stringify(ci));
  return {
    ackFloor: (ci["ack_floor"] as { stream_seq: number }).stream_seq,
    delivered: (ci["delivered"] as { stream_seq: number }).stream_seq,
    pending: ci["num_pending"] as number,
  };
}

async function consume(nc: NatsConnection, n: number): Promise<void> {
  const js = jetstream(nc);
  const c = await js.consumers.get("SC", "D");
  let got = 0;
  while (got < n) {
    for await (const m of await c.fetch({ max_messages: n - got, expires: 2000 })) {
      await m.ackAck();
      got++;
    }
  }
}

void test("STREAM.UPDATE scales a stream R1→R3→R5→R3→R1 while publishes go on: every member holds every message, the durable keeps its state, nothing acknowledged lost or stored twice", async () => {
  const rig = await startRig("jsc-scale-", ["a1", "b1", "c1", "d1", "e1"]);
  const ncs: NatsConnection[] = [];
  try {
    await until("a meta leader", async () => (await agreedLeader(rig)) !== "", 30_000);
    for (const p of rig.procs) ncs.push(await connect({ servers: p!.url }));
    let nc = ncs[0]!;
    const created = await req(nc, "$JS.API.STREAM.CREATE.SC", { name: "SC", subjects: ["sc.>"], num_replicas: 1 });
    assert.equal(created["error"], undefined, JSON.stringify(created));
    const js = jetstream(nc);
    for (let i = 0; i < 200; i++) await js.publish("sc.seed", `s${i}`, { msgID: `s${i}` });
    const jsm = await js.jetstreamManager();
    await jsm.consumers.add("SC", { durable_name: "D", ack_policy: AckPolicy.Explicit });
    await consume(nc, 30);
    assert.deepEqual(await consumerState(nc), { ackFloor: 30, delivered: 30, pending: 170 });
    const r1 = members((await info(nc, "SC")).cluster);
    assert.equal(r1.length, 1);
    // The server holding the stream restarts later: requests and publishes go through others.
    const si = rig.names.indexOf(r1[0]!);
    const others = rig.names.map((_, i) => i).filter((i) => i !== si);
    nc = ncs[others[0]!]!;
    const pub = msgIdPublisher(ncs[others[others.length - 1]!]!, "sc.x", "p");
    await until("publishes acknowledged", () => pub.count() >= 30, 20_000);

    // R1 → R3: the plain copy seeds a group; the new members get all 200+ messages.
    await update(nc, 3);
    const r3 = await settled(rig, nc, 3);
    assert.ok(r3.includes(r1[0]!), "the server that held the stream stays a member");
    await until("publishes go on at R3", () => pub.count() >= 60, 20_000);
    await pub.pause();
    let total = await everyMemberHolds(rig, nc, r3);
    const s3 = await consumerState(nc);
    assert.deepEqual({ ackFloor: s3.ackFloor, delivered: s3.delivered }, { ackFloor: 30, delivered: 30 });
    assert.equal(s3.pending, total - 30);
    pub.resume();

    // The server that seeded the group restarts: the meta log replayed skips the plain copy
    // it held before and opens the group from its snapshot (not seeded again).
    assert.match(rig.procs[si]!.log(), /seeded with the stream's \d+ messages/);
    await ncs[si]!.close();
    await rig.procs[si]!.stop();
    rig.procs[si] = await startTsnatsChild(["-c", rig.confs[si]!]);
    ncs[si] = await connect({ servers: rig.procs[si]!.url });
    assert.deepEqual(await settled(rig, nc, 3), r3);
    assert.doesNotMatch(rig.procs[si]!.log(), /seeded with/, "the group was not seeded again");
    const nr = pub.count();
    await until("publishes go on after the restart", () => pub.count() >= nr + 30, 20_000);
    await pub.pause();
    total = await everyMemberHolds(rig, nc, r3);
    assert.equal((await consumerState(nc)).ackFloor, 30);
    pub.resume();

    // R3 → R5.
    await update(ncs[others[1]!]!, 5);
    const r5 = await settled(rig, nc, 5);
    for (const m of r3) assert.ok(r5.includes(m));
    const n5 = pub.count();
    await until("publishes go on at R5", () => pub.count() >= n5 + 30, 20_000);
    await pub.pause();
    total = await everyMemberHolds(rig, nc, r5);
    await consume(nc, 20);
    const s5 = await consumerState(nc);
    assert.deepEqual({ ackFloor: s5.ackFloor, pending: s5.pending }, { ackFloor: 50, pending: total - 50 });
    pub.resume();

    // R5 → R3: two members leave and delete their copies.
    await update(ncs[others[2]!]!, 3);
    const back3 = await settled(rig, nc, 3);
    for (const m of rig.names.filter((n) => !back3.includes(n))) {
      await until(`${m} deleted its copy`, () => !existsSync(join(rig.dir, m, "jetstream", "$G", "streams", "SC")), 20_000);
    }
    const n3 = pub.count();
    await until("publishes go on back at R3", () => pub.count() >= n3 + 30, 20_000);
    await pub.pause();
    total = await everyMemberHolds(rig, nc, back3);
    pub.resume();

    // R3 → R1: the survivor keeps every message and the durable.
    await update(ncs[si]!, 1);
    let last: string[] = [];
    await until("one member left", async () => {
      const i = await info(nc, "SC");
      last = members(i.cluster);
      return i.replicas === 1 && last.length === 1 && i.cluster.replicas === undefined;
    }, 30_000);
    const n1 = pub.count();
    await until("publishes go on at R1", () => pub.count() >= n1 + 30, 20_000);
    const acked = await pub.stop();
    total = (await info(nc, "SC")).messages;
    const s1 = await consumerState(nc);
    assert.deepEqual({ ackFloor: s1.ackFloor, pending: s1.pending }, { ackFloor: 50, pending: total - 50 });
    for (const m of back3.filter((n) => n !== last[0])) {
      await until(`${m} deleted its copy`, () => !existsSync(join(rig.dir, m, "jetstream", "$G", "streams", "SC")), 20_000);
    }

    // Every message, each once: the 200 from before the first scale and every acked publish.
    const js2 = jetstream(nc);
    const ci = await (await js2.jetstreamManager()).consumers.add("SC", { ack_policy: AckPolicy.None, inactive_threshold: 30_000_000_000 });
    const c = await js2.consumers.get("SC", ci.name);
    const seen: string[] = [];
    while (seen.length < total) {
      let k = 0;
      for await (const m of await c.fetch({ max_messages: 500, expires: 2000 })) {
        seen.push(m.string());
        k++;
      }
      if (k === 0) break;
    }
    assert.equal(seen.length, total);
    assert.equal(new Set(seen).size, seen.length, "a message stored twice");
    for (let i = 0; i < 200; i++) assert.ok(seen.includes(`s${i}`), `s${i} lost`);
    assert.deepEqual([...acked].filter((id) => !seen.includes(id)), [], "acknowledged publishes missing");
  } finally {
    for (const c of ncs) await c.close().catch(() => undefined);
    await stopRig(rig);
  }
});

void test("a member whose disk was wiped rejoins as a new member under its name (a new storage identity) and catches up: current again, every message, and it then counts for quorum", async () => {
  const rig = await startRig("jsc-wipe-");
  const ncs: Array<NatsConnection | null> = [];
  try {
    await until("a meta leader", async () => (await agreedLeader(rig)) !== "", 30_000);
    for (const p of rig.procs) ncs.push(await connect({ servers: p!.url }));
    const created = await req(ncs[0]!, "$JS.API.STREAM.CREATE.WR", { name: "WR", subjects: ["wr.>"], num_replicas: 3 });
    assert.equal(created["error"], undefined, JSON.stringify(created));
    let ci = await info(ncs[0]!, "WR");
    await until("a stream leader", async () => (ci = await info(ncs[0]!, "WR")).cluster.leader !== undefined);
    const leader = ci.cluster.leader!;
    const li = rig.names.indexOf(leader);
    const js = jetstream(ncs[li]!);
    const acks = [];
    for (let i = 0; i < 300; i++) acks.push(js.publish("wr.a", `a${i}`));
    await Promise.all(acks);
    const fi = rig.names.findIndex((n) => n !== leader);
    const f = rig.names[fi]!;
    await ncs[fi]!.close();
    ncs[fi] = null;
    await rig.procs[fi]!.stop();
    rig.procs[fi] = null;
    rmSync(join(rig.dir, f), { recursive: true, force: true });
    const more = [];
    for (let i = 0; i < 100; i++) more.push(js.publish("wr.b", `b${i}`));
    await Promise.all(more);
    const want = (await info(ncs[li]!, "WR")).messages;
    assert.equal(want, 400);
    rig.procs[fi] = await startTsnatsChild(["-c", rig.confs[fi]!]);
    const p = rig.procs[fi]!;
    await until("the wiped member holds every message", async () => (await jszMessages(p)) === want, 40_000);
    await until("the wiped member is current", async () => {
      const c = (await info(ncs[li]!, "WR")).cluster;
      return (c.replicas ?? []).some((r) => r.name === f && r.current);
    }, 20_000);
    // It goes on replicating.
    await js.publish("wr.c", "c");
    await until("the rejoined member has the new message", async () => (await jszMessages(p)) === want + 1, 10_000);
    // It came back as a new member: the leaders of the stream group and of the meta group
    // replaced its old storage identity by the new one.
    const logs = rig.procs.map((q) => q?.log() ?? "").join("\n");
    assert.match(logs, new RegExp(`raft group S-[^:]+: ${f} came back with a new storage identity`));
    assert.match(logs, new RegExp(`raft group _meta_: ${f} came back with a new storage identity`));
    // And it counts: with the stream's leader killed, it and the third server elect a leader
    // (of the stream and of the meta group) and take publishes.
    const ti = rig.names.findIndex((n) => n !== leader && n !== f);
    await ncs[li]!.close();
    ncs[li] = null;
    rig.procs[li]!.proc.kill("SIGKILL");
    await rig.procs[li]!.exited;
    rig.procs[li] = null;
    const js2 = jetstream(ncs[fi] ?? (ncs[fi] = await connect({ servers: p.url })));
    await until("a new stream leader among the wiped member and the third server", async () => {
      try {
        const c = (await info(ncs[ti]!, "WR")).cluster;
        return c.leader === f || c.leader === rig.names[ti];
      } catch {
        return false;
      }
    }, 20_000);
    const ack = await js2.publish("wr.d", "d");
    assert.equal(ack.seq, want + 2);
    await until("a meta leader among the two", async () => (await agreedLeader(rig)) !== "", 20_000);
    const made = await req(ncs[ti]!, "$JS.API.STREAM.CREATE.WR2", { name: "WR2", subjects: ["wr2.>"], num_replicas: 1 });
    assert.equal(made["error"], undefined, JSON.stringify(made));
  } finally {
    for (const c of ncs) await c?.close().catch(() => undefined);
    await stopRig(rig);
  }
});

void test("a memory stream scales R1→R3→R1 keeping its messages and its durable (the store changes hands in memory)", async () => {
  const rig = await startRig("jsc-scalem-");
  const ncs: NatsConnection[] = [];
  try {
    await until("a meta leader", async () => (await agreedLeader(rig)) !== "", 30_000);
    for (const p of rig.procs) ncs.push(await connect({ servers: p!.url }));
    const nc = ncs[0]!;
    const created = await req(nc, "$JS.API.STREAM.CREATE.SC", { name: "SC", subjects: ["sc.>"], storage: "memory", num_replicas: 1 });
    assert.equal(created["error"], undefined, JSON.stringify(created));
    const js = jetstream(nc);
    for (let i = 0; i < 100; i++) await js.publish("sc.m", `m${i}`, { msgID: `m${i}` });
    const jsm = await js.jetstreamManager();
    await jsm.consumers.add("SC", { durable_name: "D", ack_policy: AckPolicy.Explicit, mem_storage: true });
    await consume(nc, 10);
    await update(nc, 3, "memory");
    const r3 = await settled(rig, nc, 3);
    assert.equal(await everyMemberHolds(rig, nc, r3), 100);
    assert.deepEqual(await consumerState(nc), { ackFloor: 10, delivered: 10, pending: 90 });
    // A duplicate of a message id stored before the scale is still one.
    const dup = await js.publish("sc.m", "again", { msgID: "m5" });
    assert.equal(dup.duplicate, true);
    await update(ncs[1]!, 1, "memory");
    await until("one member left", async () => {
      const i = await info(nc, "SC");
      return i.replicas === 1 && members(i.cluster).length === 1 && i.cluster.replicas === undefined;
    }, 30_000);
    assert.equal((await info(nc, "SC")).messages, 100);
    assert.deepEqual(await consumerState(nc), { ackFloor: 10, delivered: 10, pending: 90 });
    await js.publish("sc.m", "after");
    assert.equal((await info(nc, "SC")).messages, 101);
  } finally {
    for (const c of ncs) await c.close().catch(() => undefined);
    await stopRig(rig);
  }
});
