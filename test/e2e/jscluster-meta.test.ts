// The JetStream meta group across tsnats processes (src/jscluster/meta-group.ts): three
// servers with cluster + jetstream elect one meta leader that all of them report in /jsz
// meta_cluster; $JS.API.META.LEADER.STEPDOWN (sent to a follower) moves it; SIGKILL of the
// leader lets the other two elect another; the killed server restarts from its WAL and
// follows the same leader; with one server left there is no leader and stepdown answers
// 503/10008. Without a cluster, /jsz has no meta_cluster. A create that reaches a server
// while there is no meta leader waits for one and goes through it.

import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { jetstream } from "@nats-io/jetstream";
import { startTsnatsChild, type ChildServer } from "../helpers/core-child.js";
import { agreedLeader as rigLeader, freePort, jsz, metaLeader, req, startRig, startRigWithLeader, stopRig } from "../helpers/jscluster-rig.js";
import { until } from "../helpers/until.js";
import { serverHash } from "../../src/jscluster/meta-group.js";

interface Meta {
  name?: string;
  leader?: string;
  peer?: string;
  replicas?: Array<{ name: string; current: boolean; active: number; peer: string; offline?: boolean }>;
  cluster_size?: number;
}

async function meta(s: ChildServer): Promise<Meta | undefined> {
  return (await jsz(s))["meta_cluster"] as Meta | undefined;
}

/** The leader every given server reports, once they all agree on one; "" otherwise. */
async function agreedLeader(servers: ChildServer[]): Promise<string> {
  const ls = await Promise.all(servers.map(async (s) => (await meta(s))?.leader ?? ""));
  return ls[0] !== "" && ls.every((l) => l === ls[0]) ? ls[0]! : "";
}

void test("meta group: 3 servers elect one leader; stepdown moves it; SIGKILL of the leader elects another; the killed server rejoins from its WAL", async (t) => {
  const names = ["m1", "m2", "m3"];
  const rig = await startRig("jscluster-meta-", names, [], "metatest");
  const { procs, confs } = rig;
  const live = (): ChildServer[] => procs.filter((p): p is ChildServer => p !== null);
  try {
    let leader = "";
    await until("one meta leader all three agree on", async () => (leader = await agreedLeader(live())) !== "", 20_000);
    assert.ok(names.includes(leader));
    const li = names.indexOf(leader);
    const m = (await meta(procs[li]!))!;
    assert.equal(m.name, "metatest");
    assert.equal(m.cluster_size, 3);
    // nats-server's peer ids for these names (its getHash), as a 2.9.10 cluster shows them.
    const hash: Record<string, string> = { m1: serverHash("m1"), m2: serverHash("m2"), m3: serverHash("m3") };
    assert.equal(m.peer, hash[leader]);
    assert.deepEqual(m.replicas!.map((r) => r.name).sort(), names.filter((n) => n !== leader));
    for (const r of m.replicas!) {
      assert.equal(r.peer, hash[r.name]);
      assert.equal(typeof r.active, "number");
    }
    // As in 2.9.10, followers show the leader but no replicas.
    for (let i = 0; i < 3; i++) {
      if (i === li) continue;
      assert.deepEqual(await meta(procs[i]!), { name: "metatest", leader, peer: hash[leader], cluster_size: 3 });
    }
    await until("the leader sees both replicas current", async () => ((await meta(procs[li]!))!.replicas ?? []).every((r) => r.current));

    // Stepdown, asked of a follower: the leader answers after leadership moved.
    const follower = procs[(li + 1) % 3]!;
    const nc = await connect({ servers: follower.url });
    try {
      const r = await nc.request("$JS.API.META.LEADER.STEPDOWN", "", { timeout: 5000 });
      assert.deepEqual(r.json(), { type: "io.nats.jetstream.api.v1.meta_leader_stepdown_response", success: true });
    } finally {
      await nc.close();
    }
    let next = "";
    await until("a new leader after stepdown", async () => (next = await agreedLeader(live())) !== "" && next !== leader, 10_000);

    // SIGKILL of the leader: the other two elect one of themselves.
    const ki = names.indexOf(next);
    const killed = procs[ki]!;
    const killedAt = performance.now();
    killed.proc.kill("SIGKILL");
    await killed.exited;
    procs[ki] = null;
    let third = "";
    await until("the two survivors elect a leader", async () => (third = await agreedLeader(live())) !== "" && third !== next, 15_000);
    t.diagnostic(`SIGKILL of the meta leader -> both survivors report a new leader: ${Math.round(performance.now() - killedAt)} ms`);

    // Restart from the WAL: it follows the leader the others have.
    procs[ki] = await startTsnatsChild(["-c", confs[ki]!]);
    assert.match(procs[ki]!.log(), /meta group recovered with peers \[m1, m2, m3\]/);
    await until("the restarted server follows the same leader", async () => (await agreedLeader(live())) === third, 15_000);

    // Only one server left: no leader, and stepdown answers 503/10008.
    const last = names.indexOf(third) === 0 ? 1 : 0;
    for (let i = 0; i < 3; i++) {
      if (i === last) continue;
      procs[i]!.proc.kill("SIGKILL");
      await procs[i]!.exited;
      procs[i] = null;
    }
    await until("the lone server has no leader", async () => (await meta(procs[last]!))?.leader === undefined, 15_000);
    const nc2 = await connect({ servers: procs[last]!.url });
    try {
      const r = await nc2.request("$JS.API.META.LEADER.STEPDOWN", "", { timeout: 5000 });
      assert.deepEqual(r.json(), {
        type: "io.nats.jetstream.api.v1.meta_leader_stepdown_response",
        error: { code: 503, err_code: 10008, description: "JetStream system temporarily unavailable" },
      });
    } finally {
      await nc2.close();
    }
  } finally {
    await stopRig(rig);
  }
});

void test("meta group: JetStream without a cluster has no meta_cluster in /jsz", async () => {
  const dir = mkdtempSync(join(tmpdir(), "jscluster-meta-solo-"));
  const conf = join(dir, "solo.conf");
  writeFileSync(conf, ["server_name: solo", "listen: 127.0.0.1:-1", "http: 127.0.0.1:-1", `jetstream { store_dir: "${join(dir, "js")}" }`, ""].join("\n"));
  const s = await startTsnatsChild(["-c", conf]);
  try {
    const j = await jsz(s);
    assert.equal(j["meta_cluster"], undefined);
    assert.equal(typeof j["streams"], "number");
  } finally {
    await s.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});

void test("meta group: a STREAM.CREATE that reaches a server while there is no meta leader waits for one and is created through the meta group (never as a local stream)", async () => {
  const rig = await startRig("jscluster-meta-wait-", ["w1", "w2", "w3"], [], "waittest");
  try {
    await until("a meta leader", async () => (await rigLeader(rig)) !== "", 30_000);
    // w1 alone: no meta leader.
    for (const i of [1, 2]) {
      await rig.procs[i]!.stop();
      rig.procs[i] = null;
    }
    await until("w1 without a meta leader", async () => (await metaLeader(rig.procs[0]!)) === "", 30_000);
    const nc = await connect({ servers: rig.procs[0]!.url });
    try {
      // The create waits on w1 while w2 comes back and the two elect a leader (either of
      // them); a 503 (the election took longer than the wait) is retried.
      let answer: Record<string, unknown> = {};
      const first = nc.request("$JS.API.STREAM.CREATE.WAITED", JSON.stringify({ name: "WAITED", subjects: ["waited.>"], num_replicas: 2 }), { timeout: 10_000 });
      rig.procs[1] = await startTsnatsChild(["-c", rig.confs[1]!]);
      answer = (await first).json();
      await until("a created answer", async () => {
        if (answer["error"] === undefined) return true;
        assert.equal((answer["error"] as { err_code: number }).err_code, 10008, JSON.stringify(answer));
        answer = (await nc.request("$JS.API.STREAM.CREATE.WAITED", JSON.stringify({ name: "WAITED", subjects: ["waited.>"], num_replicas: 2 }), { timeout: 10_000 })).json();
        return false;
      }, 30_000);
      assert.equal((answer["config"] as { num_replicas: number }).num_replicas, 2);
      // It exists in the meta state: w2 (which never saw the request) knows it and its group.
      const nc2 = await connect({ servers: rig.procs[1]!.url });
      try {
        await until("STREAM.INFO from w2 with a cluster block", async () => {
          const info = (await nc2.request("$JS.API.STREAM.INFO.WAITED", "", { timeout: 5000 })).json<Record<string, unknown>>();
          const c = info["cluster"] as { leader?: string } | undefined;
          return info["error"] === undefined && c?.leader !== undefined && c.leader !== "";
        }, 30_000);
      } finally {
        await nc2.close();
      }
    } finally {
      await nc.close();
    }
  } finally {
    await stopRig(rig);
  }
});

void test("meta group: a new JetStream server that joins a running cluster is admitted (a learner, then a voter) and takes replicas; a server taken out by SERVER.REMOVE is not admitted again by itself", async () => {
  const rig = await startRigWithLeader("jsc-join-");
  let d: ChildServer | null = null;
  const ncs: NatsConnection[] = [];
  try {
    const nc = await connect({ servers: rig.procs[0]!.url });
    ncs.push(nc);
    const before = await req(nc, "$JS.API.STREAM.CREATE.J1", { name: "J1", subjects: ["j1.>"], num_replicas: 3 });
    assert.equal(before["error"], undefined, JSON.stringify(before));
    // A fourth server with routes to the three.
    const conf0 = readFileSync(rig.confs[0]!, "utf8");
    const routes = /routes: \[([^\]]*)\]/.exec(conf0)![1]!;
    const port = await freePort();
    const f = join(rig.dir, "d1.conf");
    writeFileSync(f, ["server_name: d1", "listen: 127.0.0.1:-1", "http: 127.0.0.1:-1", 'server_tags: ["node:d1"]', `jetstream { store_dir: "${join(rig.dir, "d1")}" }`, "cluster {", "  name: jsc", `  listen: 127.0.0.1:${port}`, `  routes: [ ${routes}, nats-route://127.0.0.1:${port} ]`, "}", ""].join("\n"));
    d = await startTsnatsChild(["-c", f]);
    const dd = d;
    const leaderServer = async (): Promise<ChildServer | undefined> => {
      const l = await rigLeader(rig);
      return l === "" ? undefined : (rig.procs[rig.names.indexOf(l)] ?? undefined);
    };
    // The leader's /jsz counts four voters, and the new server follows that leader.
    await until("the new server is a meta voter", async () => {
      const ls = await leaderServer();
      if (ls === undefined) return false;
      const mc = (await jsz(ls))["meta_cluster"] as { cluster_size?: number; replicas?: Array<{ name: string }> } | undefined;
      return (mc?.replicas ?? []).some((r) => r.name === "d1") && (await metaLeader(dd)) === (await rigLeader(rig));
    }, 30_000);
    assert.match(dd.log(), /meta group joined/);
    // It takes replicas: an R4 stream needs all four servers.
    const r4 = await req(nc, "$JS.API.STREAM.CREATE.J4", { name: "J4", subjects: ["j4.>"], num_replicas: 4 });
    assert.equal(r4["error"], undefined, JSON.stringify(r4));
    const js = jetstream(nc);
    await js.publish("j4.a", "x");
    const nd = await connect({ servers: dd.url });
    ncs.push(nd);
    await until("the stream's INFO on the new server lists four members", async () => {
      const i = await req(nd, "$JS.API.STREAM.INFO.J4").catch(() => ({}) as Record<string, unknown>);
      const c = i["cluster"] as { leader?: string; replicas?: Array<{ name: string }> } | undefined;
      return c?.leader !== undefined && (c.replicas ?? []).length === 3 && (i["state"] as { messages?: number } | undefined)?.messages === 1;
    }, 20_000);
    // SERVER.REMOVE of the new server (still running): out of the meta group, and it stays out.
    const removed = await req(nc, "$JS.API.SERVER.REMOVE", { peer: "d1" }, 15_000);
    assert.equal(removed["error"], undefined, JSON.stringify(removed));
    const voters = async (): Promise<string[]> => {
      const ls = await leaderServer();
      const mc = ls === undefined ? undefined : ((await jsz(ls))["meta_cluster"] as { leader?: string; replicas?: Array<{ name: string }> } | undefined);
      return mc === undefined ? [] : [mc.leader ?? "", ...(mc.replicas ?? []).map((r) => r.name)];
    };
    await until("d1 out of the meta group", async () => !(await voters()).includes("d1") && (await voters()).length === 3, 20_000);
    // Several admission rounds later it is still out.
    const until2 = Date.now() + 2000;
    while (Date.now() < until2) {
      assert.ok(!(await voters()).includes("d1"), "a removed server was admitted again");
      await new Promise((r) => setTimeout(r, 250));
    }
  } finally {
    for (const c of ncs) await c.close().catch(() => undefined);
    await d?.stop();
    await stopRig(rig);
  }
});
