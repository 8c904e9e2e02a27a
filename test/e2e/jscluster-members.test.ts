// Membership of clustered JetStream across tsnats processes, with the official client:
// STREAM.PEER.REMOVE (a replacement placed, publishes going on, nothing acknowledged lost,
// the removed server's copy deleted), SERVER.REMOVE (the server's replicas move, the meta
// group shrinks), /healthz 503 until a restarted replica caught up, and a lame-duck stream
// leader that hands leadership over before it goes.

import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { jetstream, AckPolicy } from "@nats-io/jetstream";
import { startTsnatsChild, type ChildServer } from "../helpers/core-child.js";
import { jsz, metaLeader, monPort, msgIdPublisher, req as rigReq, startRigWithLeader, stopRig } from "../helpers/jscluster-rig.js";
import { until } from "../helpers/until.js";

const req = (nc: NatsConnection, subject: string, body: unknown = ""): Promise<Record<string, unknown>> => rigReq(nc, subject, body, 8000);

interface Replica {
  name: string;
  current: boolean;
  lag?: number;
}
interface ClusterBlock {
  leader?: string;
  replicas?: Replica[];
}

async function info(nc: NatsConnection, stream: string): Promise<{ cluster: ClusterBlock; messages: number }> {
  const i = await req(nc, `$JS.API.STREAM.INFO.${stream}`);
  return { cluster: (i["cluster"] ?? {}) as ClusterBlock, messages: ((i["state"] ?? {}) as { messages?: number }).messages ?? -1 };
}

/** Every message of the stream, read from its leader through an ephemeral consumer. */
async function readAll(nc: NatsConnection, stream: string, n: number): Promise<Set<string>> {
  const js = jetstream(nc);
  const jsm = await js.jetstreamManager();
  const ci = await jsm.consumers.add(stream, { ack_policy: AckPolicy.None, inactive_threshold: 30_000_000_000 });
  const c = await js.consumers.get(stream, ci.name);
  const got = new Set<string>();
  while (got.size < n) {
    let k = 0;
    for await (const m of await c.fetch({ max_messages: 500, expires: 2000 })) {
      got.add(m.string());
      k++;
    }
    if (k === 0) break;
  }
  return got;
}

void test("STREAM.PEER.REMOVE: a follower is replaced while publishes go on; nothing acknowledged is lost; SERVER.REMOVE moves a server's replicas and shrinks the meta group", async () => {
  const rig = await startRigWithLeader("jsm-peer-", ["a1", "b1", "c1", "d1"]);
  const ncs: NatsConnection[] = [];
  try {
    for (const p of rig.procs) ncs.push(await connect({ servers: p!.url }));
    const nc = ncs[0]!;
    const created = await req(nc, "$JS.API.STREAM.CREATE.PR", { name: "PR", subjects: ["pr.>"], num_replicas: 3 });
    assert.equal(created["error"], undefined, JSON.stringify(created));
    let ci = await info(nc, "PR");
    await until("a stream leader", async () => (ci = await info(nc, "PR")).cluster.leader !== undefined);
    const leader = ci.cluster.leader!;
    const members = [leader, ...ci.cluster.replicas!.map((r) => r.name)];
    const spare = rig.names.find((n) => !members.includes(n))!;
    const gone = ci.cluster.replicas![0]!.name;

    // Errors first: not a member, no stream, empty request.
    const nm = await req(nc, "$JS.API.STREAM.PEER.REMOVE.PR", { peer: spare });
    assert.deepEqual(nm["error"], { code: 400, err_code: 10040, description: "peer not a member" });
    const nf = await req(nc, "$JS.API.STREAM.PEER.REMOVE.NOPE", { peer: gone });
    assert.equal((nf["error"] as { err_code: number }).err_code, 10059);
    const bad = await req(nc, "$JS.API.STREAM.PEER.REMOVE.PR", {});
    assert.equal((bad["error"] as { err_code: number }).err_code, 10003);

    const pub = msgIdPublisher(ncs[rig.names.indexOf(spare)]!, "pr.x", "m");
    await until("some publishes acknowledged", () => pub.count() >= 50);
    // Asked of a server that is not the meta leader nor a member: it goes to the meta leader.
    const rm = await req(ncs[rig.names.indexOf(spare)]!, "$JS.API.STREAM.PEER.REMOVE.PR", { peer: gone });
    assert.deepEqual(rm, { type: "io.nats.jetstream.api.v1.stream_remove_peer_response", success: true });
    const want = [...members.filter((m) => m !== gone), spare].sort();
    await until("the stream's members are the new ones, all current", async () => {
      const c = (await info(nc, "PR")).cluster;
      const names = [c.leader ?? "", ...(c.replicas ?? []).map((r) => r.name)].sort();
      return JSON.stringify(names) === JSON.stringify(want) && (c.replicas ?? []).every((r) => r.current);
    }, 30_000);
    await until("the removed server deleted its copy", () => !existsSync(join(rig.dir, gone, "jetstream", "$G", "streams", "PR")), 20_000);
    const n0 = pub.count();
    await until("publishes go on after the change", () => pub.count() >= n0 + 50);
    const acked = await pub.stop();

    // Nothing acknowledged is lost (read from the leader), nothing is stored twice, and the
    // new member holds every message (its own /jsz counts what its store holds).
    const got = await readAll(nc, "PR", acked.size);
    const lost = [...acked].filter((id) => !got.has(id));
    assert.deepEqual(lost, [], "acknowledged publishes missing");
    const total = (await info(nc, "PR")).messages;
    assert.equal(total, got.size, "no duplicates");
    await until("the new member holds every message", async () => ((await jsz(rig.procs[rig.names.indexOf(spare)]!))["messages"] as number | undefined) === total, 20_000);

    // SERVER.REMOVE of a member: its replica moves to the server left out, the meta group
    // shrinks to three.
    const victim = want.find((n) => n !== spare)!;
    const unk = await req(nc, "$JS.API.SERVER.REMOVE", { peer: "nobody" });
    assert.deepEqual(unk["error"], { code: 400, err_code: 10044, description: "server is not a member of the cluster" });
    const sr = await req(ncs[rig.names.indexOf(spare)]!, "$JS.API.SERVER.REMOVE", { peer: victim });
    assert.deepEqual(sr, { type: "io.nats.jetstream.api.v1.meta_server_remove_response", success: true });
    const rest = rig.names.filter((n) => n !== victim);
    await until("the meta group has three voters", async () => {
      const m = (await jsz(rig.procs[rig.names.indexOf(spare)]!))["meta_cluster"] as { cluster_size?: number } | undefined;
      return m?.cluster_size === 3;
    });
    await until("the stream moved off the removed server", async () => {
      const c = (await info(nc, "PR")).cluster;
      const names = [c.leader ?? "", ...(c.replicas ?? []).map((r) => r.name)];
      return names.length === 3 && !names.includes(victim) && names.every((n) => rest.includes(n)) && (c.replicas ?? []).every((r) => r.current);
    }, 30_000);
    // The removed server stops; the cluster of three goes on.
    const vi = rig.names.indexOf(victim);
    await ncs[vi]!.close();
    await rig.procs[vi]!.stop();
    rig.procs[vi] = null;
    const ok = rig.names.findIndex((n, i) => i !== vi && rig.procs[i] !== null);
    await until("publishes acknowledged after the server left", () => jetstream(ncs[ok]!).publish("pr.after", "x").then(() => true, () => false), 20_000);
    const c2 = await req(ncs[ok]!, "$JS.API.STREAM.CREATE.PR2", { name: "PR2", subjects: ["pr2.>"], num_replicas: 3 });
    assert.equal(c2["error"], undefined, JSON.stringify(c2));
  } finally {
    for (const c of ncs) await c.close().catch(() => undefined);
    await stopRig(rig);
  }
});

async function healthz(s: ChildServer, q = ""): Promise<{ status: number; body: Record<string, unknown> }> {
  try {
    const r = await fetch(`http://127.0.0.1:${monPort(s)}/healthz${q}`, { signal: AbortSignal.timeout(2000) });
    return { status: r.status, body: (await r.json()) as Record<string, unknown> };
  } catch {
    return { status: 0, body: {} };
  }
}

void test("/healthz: 503 on a restarted replica until it caught up; ok means it holds every message", async () => {
  const rig = await startRigWithLeader("jsm-hz-", ["a1", "b1", "c1"]);
  const ncs: NatsConnection[] = [];
  try {
    for (const p of rig.procs) ncs.push(await connect({ servers: p!.url }));
    const created = await req(ncs[0]!, "$JS.API.STREAM.CREATE.HZ", { name: "HZ", subjects: ["hz.>"], num_replicas: 3 });
    assert.equal(created["error"], undefined, JSON.stringify(created));
    for (const p of rig.procs) await until("healthz ok everywhere", async () => (await healthz(p!)).status === 200);
    let ci = await info(ncs[0]!, "HZ");
    await until("a stream leader", async () => (ci = await info(ncs[0]!, "HZ")).cluster.leader !== undefined);
    const fi = rig.names.findIndex((n) => n !== ci.cluster.leader);
    const li = rig.names.indexOf(ci.cluster.leader!);
    await ncs[fi]!.close();
    await rig.procs[fi]!.stop();
    rig.procs[fi] = null;
    const js = jetstream(ncs[li]!);
    const body = "x".repeat(1024);
    const acks = [];
    for (let i = 0; i < 3000; i++) acks.push(js.publish("hz.a", body));
    await Promise.all(acks);
    const want = (await info(ncs[li]!, "HZ")).messages;
    rig.procs[fi] = await startTsnatsChild(["-c", rig.confs[fi]!]);
    const f = rig.procs[fi]!;
    const seen: Array<{ status: number; body: Record<string, unknown> }> = [];
    let holds = -1;
    await until("the restarted replica is healthy", async () => {
      const h = await healthz(f);
      seen.push(h);
      if (h.status !== 200) return false;
      // Healthy means caught up: it holds every message now.
      holds = ((await jsz(f))["messages"] as number | undefined) ?? -1;
      return true;
    }, 30_000);
    const bad = seen.filter((h) => h.status === 503);
    assert.ok(bad.length > 0, `503 before it caught up (saw ${JSON.stringify(seen.slice(0, 3))})`);
    assert.equal(bad[0]!.body["status"], "unavailable");
    assert.equal(bad[0]!.body["status_code"], 503);
    assert.match(String(bad[0]!.body["error"]), /^JetStream (has not established contact with a meta leader|is not current with the meta leader|stream '\$G > HZ' is not current: .+)$/);
    assert.equal(holds, want);
    // js-server-only checks the server alone; js-enabled-only that JetStream runs.
    assert.equal((await healthz(f, "?js-server-only=true")).status, 200);
    assert.equal((await healthz(f, "?js-enabled-only=true")).status, 200);
    ncs[fi] = await connect({ servers: f.url });
    const c = (await info(ncs[li]!, "HZ")).cluster;
    const r = c.replicas!.find((x) => x.name === rig.names[fi]);
    assert.equal(r?.lag ?? 0, 0);
  } finally {
    for (const c of ncs) await c.close().catch(() => undefined);
    await stopRig(rig);
  }
});

void test("lame duck of the stream (and meta) leader: leadership is handed over before it leaves; publishes go on, nothing acknowledged lost", async () => {
  const rig = await startRigWithLeader("jsm-ldm-", ["a1", "b1", "c1"], ["lame_duck_duration: 8s", "lame_duck_grace_period: 6s"]);
  const ncs: NatsConnection[] = [];
  try {
    for (const p of rig.procs) ncs.push(await connect({ servers: p!.url }));
    const created = await req(ncs[0]!, "$JS.API.STREAM.CREATE.LD", { name: "LD", subjects: ["ld.>"], num_replicas: 3 });
    assert.equal(created["error"], undefined, JSON.stringify(created));
    let ci = await info(ncs[0]!, "LD");
    await until("a stream leader", async () => (ci = await info(ncs[0]!, "LD")).cluster.leader !== undefined);
    const old = ci.cluster.leader!;
    const oi = rig.names.indexOf(old);
    const pi = (oi + 1) % 3;
    const pub = msgIdPublisher(ncs[pi]!, "ld.x", "m");
    await until("publishes acknowledged", () => pub.count() >= 50);
    const lp = rig.procs[oi]!;
    lp.proc.kill("SIGUSR2");
    let next = "";
    await until("another server leads the stream", async () => {
      next = (await info(ncs[pi]!, "LD").catch(() => ({ cluster: {} as ClusterBlock, messages: -1 }))).cluster.leader ?? "";
      return next !== "" && next !== old;
    }, 20_000);
    // Handed over while the lame duck still runs (its grace period), not after it left.
    assert.equal(lp.proc.exitCode, null, "the old leader is still running");
    assert.match(lp.log(), new RegExp(`handing leadership to ${next}`));
    await until("the meta leader is another server", async () => {
      const m = await metaLeader(rig.procs[pi]!);
      return m !== "" && m !== old;
    }, 20_000);
    const n0 = pub.count();
    await until("publishes go on", () => pub.count() >= n0 + 50, 20_000);
    const acked = await pub.stop();
    await ncs[oi]!.close().catch(() => undefined);
    await lp.exited;
    rig.procs[oi] = null;
    const got = await readAll(ncs[pi]!, "LD", acked.size);
    assert.deepEqual([...acked].filter((id) => !got.has(id)), [], "acknowledged publishes missing");
  } finally {
    for (const c of ncs) await c.close().catch(() => undefined);
    await stopRig(rig);
  }
});
