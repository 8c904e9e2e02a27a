// Route pooling and pinned accounts (nats-server 2.10's pool_size and cluster { accounts }):
// three tsnats server processes with pool_size 3 hold 2 x 3 route connections each (/routez),
// the global account's traffic on the slot its name hashes to, every message delivered
// exactly once, and the pools refill after the seed is killed and restarted; a route pinned
// to $G carries that account alone; mixed with nats-server 2.9.10 (which does not pool) a
// tsnats server keeps one route to it and pools toward the other tsnats server. In-process:
// the tsnats peer channel (Raft's) over a route pinned to $SYS.

import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { findNatsServer } from "../helpers/core-child.js";
import { until } from "../helpers/until.js";
import { freePort } from "../faults/rig.js";
import { interestSeen, Inbox, startNode, startSeededCluster, type Kind, type Node } from "../helpers/route-nodes.js";
import { poolIndex } from "../../src/cluster/pool.js";
import { startServer, type RunningServer } from "../../src/index.js";
import { defaultClusterOptions } from "../../src/server/options.js";
import { RoutePeerTransport, type PeerHandler, type PeerRoutes } from "../../src/cluster/peer-transport.js";
import { systemScheduler } from "../../src/runtime/sched.js";

interface RouteEntry {
  rid: number;
  remote_id: string;
  remote_name: string;
  account?: string;
  tsnats_pool_idx?: number;
  in_msgs: number;
  out_msgs: number;
}

async function getJson(n: Node, path: string): Promise<Record<string, unknown>> {
  return (await (await fetch(`http://127.0.0.1:${n.monPort}${path}`)).json()) as Record<string, unknown>;
}

async function routes(n: Node): Promise<RouteEntry[]> {
  return (await getJson(n, "/routez")).routes as RouteEntry[];
}

interface Layout {
  kinds: Kind[];
  /** The cluster block's extra lines for tsnats servers. */
  tsExtra: string[];
}

/** Servers p1.. each routed to the seed (the first). */
function startCluster(dir: string, l: Layout, seedPort: number, clientPorts: number[]): Promise<Node[]> {
  return startSeededCluster(dir, { namePrefix: "p", clusterName: "pool", kinds: l.kinds, tsExtra: l.tsExtra }, seedPort, clientPorts);
}

/** Route connections a server should have to each peer (by server id: nats-server 2.9's
 *  /routez has no remote_name). */
async function meshOf(nodes: Node[], want: (from: Node, to: Node) => number): Promise<void> {
  await until(
    "the route connections",
    async () => {
      const ids = await Promise.all(nodes.map(async (n) => (await getJson(n, "/varz"))["server_id"] as string));
      for (const n of nodes) {
        const rs = await routes(n);
        for (const [i, o] of nodes.entries()) {
          if (o === n) continue;
          if (rs.filter((r) => r.remote_id === ids[i]).length !== want(n, o)) return false;
        }
      }
      return true;
    },
    30_000,
  );
}

/** Fan-out, queue groups and request/reply across the cluster, each message exactly once. */
async function traffic(ncs: NatsConnection[], tag: string): Promise<void> {
  const [c1, c2, c3] = ncs as [NatsConnection, NatsConnection, NatsConnection];
  const p2 = new Inbox(c2, `pool.${tag}.x`);
  const p3 = new Inbox(c3, `pool.${tag}.>`);
  const q = [new Inbox(c1, `work.${tag}`, "g"), new Inbox(c2, `work.${tag}`, "g"), new Inbox(c3, `work.${tag}`, "g")];
  for (const [i, nc] of ncs.entries()) for (const [j, other] of ncs.entries()) if (i !== j) await interestSeen(nc, other, `${tag}.${i}${j}`);
  const N = 200;
  for (let i = 0; i < N; i++) c1.publish(`pool.${tag}.x`, String(i));
  for (let i = 0; i < N; i++) ncs[i % 3]!.publish(`work.${tag}`, String(i));
  await Promise.all(ncs.map((nc) => nc.flush()));
  const total = (): number => q.reduce((a, x) => a + x.msgs.length, 0);
  await until("deliveries", () => p2.msgs.length >= N && p3.msgs.length >= N && total() >= N);
  // A round trip through every pair after the last publish: nothing more is in flight.
  for (const [i, nc] of ncs.entries()) for (const [j, other] of ncs.entries()) if (i !== j) await interestSeen(nc, other, `${tag}.done${i}${j}`);
  assert.deepEqual(p2.msgs.map((m) => m.string()), Array.from({ length: N }, (_, i) => String(i)), "plain: in order, once each");
  assert.equal(p3.msgs.length, N);
  assert.equal(total(), N, "queue group: each message once cluster-wide");
  assert.equal(new Set(q.flatMap((x) => x.msgs.map((m) => m.string()))).size, N);
  c3.subscribe(`svc.${tag}`, {
    callback: (_e, m) => {
      m.respond(`echo:${m.string()}`);
    },
  });
  await interestSeen(c1, c3, `${tag}.svc`);
  assert.equal((await c1.request(`svc.${tag}`, "hi", { timeout: 5000 })).string(), "echo:hi");
}

async function withCluster(l: Layout, body: (nodes: Node[], dir: string, seedPort: number, clientPorts: number[]) => Promise<void>): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "routeadv-pool-"));
  const seedPort = await freePort();
  const clientPorts = [await freePort(), await freePort(), await freePort()];
  let nodes: Node[] = [];
  try {
    nodes = await startCluster(dir, l, seedPort, clientPorts);
    await body(nodes, dir, seedPort, clientPorts);
    for (const n of nodes) if (n.kind === "ts") assert.doesNotMatch(n.proc.log(), /Route closed: (?!stale)/, `${n.name} closed no route for bad input`);
  } catch (err) {
    for (const n of nodes) process.stderr.write(`---- ${n.name} (${n.kind}) ----\n${n.proc.log().slice(-6000)}\n`);
    throw err;
  } finally {
    await Promise.all(nodes.map((n) => n.proc.stop()));
    rmSync(dir, { recursive: true, force: true });
  }
}

void test("pool_size 3: 2 x 3 routes per server, $G on its hashed slot, exactly-once delivery, pools refill after kill -9", async () => {
  await withCluster({ kinds: ["ts", "ts", "ts"], tsExtra: ["pool_size: 3"] }, async (nodes) => {
    await meshOf(nodes, () => 3);
    const before = await routes(nodes[0]!);
    process.stdout.write(`# /routez of p1 (pool_size 3): ${JSON.stringify(before.map((r) => ({ rid: r.rid, remote: r.remote_name, pool_idx: r.tsnats_pool_idx })))}\n`);
    for (const n of nodes) {
      const rs = await routes(n);
      assert.equal(rs.length, 6);
      for (const o of nodes) if (o !== n) assert.deepEqual(rs.filter((r) => r.remote_name === o.name).map((r) => r.tsnats_pool_idx).sort(), [0, 1, 2], `${n.name} -> ${o.name} slots`);
    }
    const vz = await getJson(nodes[0]!, "/varz");
    assert.equal((vz["cluster"] as Record<string, unknown>)["pool_size"], 3);
    const ncs = await Promise.all(nodes.map((n) => connect({ servers: n.proc.url, maxReconnectAttempts: -1, reconnectTimeWait: 100 })));
    try {
      await traffic(ncs, "a");
      // The global account's interest and messages use the slot its name hashes to.
      const g = poolIndex(3, "$G");
      for (const n of nodes) for (const r of await routes(n)) if (r.tsnats_pool_idx !== g) assert.equal(r.out_msgs + r.in_msgs, 0, `${n.name} rid ${r.rid} (slot ${r.tsnats_pool_idx}) carried no $G message`);
      // kill -9 the seed and start it again on the same ports: the pools fill again.
      const seed = nodes[0]!;
      seed.proc.proc.kill("SIGKILL");
      await seed.proc.exited;
      await until("the others see the seed gone", async () => (await routes(nodes[1]!)).filter((r) => r.remote_name === "p1").length === 0);
      nodes[0] = await startNode("ts", seed.name, seed.conf);
      await meshOf(nodes, () => 3);
      await until("c1 reconnected", () => !ncs[0]!.isClosed() && ncs[0]!.getServer() !== "");
      await traffic(ncs, "b");
    } finally {
      await Promise.all(ncs.map((nc) => nc.close()));
    }
  });
});

void test("pinned account: a route per peer dedicated to $G (no account on the wire) carries all of its traffic", async () => {
  await withCluster({ kinds: ["ts", "ts", "ts"], tsExtra: ["pool_size: 2", 'accounts: [ "$G" ]'] }, async (nodes) => {
    await meshOf(nodes, () => 3);
    for (const n of nodes) {
      const rs = await routes(n);
      for (const o of nodes) {
        if (o === n) continue;
        const to = rs.filter((r) => r.remote_name === o.name);
        assert.deepEqual(to.map((r) => r.account ?? `slot${r.tsnats_pool_idx}`).sort(), ["$G", "slot0", "slot1"], `${n.name} -> ${o.name}`);
      }
    }
    const ncs = await Promise.all(nodes.map((n) => connect({ servers: n.proc.url })));
    try {
      await traffic(ncs, "p");
      for (const n of nodes) {
        for (const r of await routes(n)) {
          if (r.account === "$G") assert.ok(r.out_msgs > 0 && r.in_msgs > 0, `${n.name}: the pinned route to ${r.remote_name} carried the messages`);
          else assert.equal(r.out_msgs + r.in_msgs, 0, `${n.name}: pooled route to ${r.remote_name} carried none`);
        }
      }
    } finally {
      await Promise.all(ncs.map((nc) => nc.close()));
    }
  });
});

const NO_NS = findNatsServer() === null ? "nats-server not installed" : false;

for (const kinds of [["ns", "ts", "ts"], ["ts", "ns", "ts"]] as Kind[][]) {
  void test(`mixed with nats-server 2.9 (${kinds.join(",")}): one route to it, a pool of 3 between the tsnats servers`, { skip: NO_NS }, async () => {
    await withCluster({ kinds, tsExtra: ["pool_size: 3"] }, async (nodes) => {
      await meshOf(nodes, (a, b) => (a.kind === "ts" && b.kind === "ts" ? 3 : 1));
      const ns = nodes.find((n) => n.kind === "ns")!;
      assert.equal((await getJson(ns, "/routez"))["num_routes"], 2);
      const ncs = await Promise.all(nodes.map((n) => connect({ servers: n.proc.url })));
      try {
        await traffic(ncs, "m");
      } finally {
        await Promise.all(ncs.map((nc) => nc.close()));
      }
    });
  });
}

class Frames implements PeerHandler {
  readonly got: string[] = [];
  frame(from: string, frame: Buffer): void {
    this.got.push(`${from}:${frame.toString()}`);
  }
}

void test("tsnats peer frames over a route pinned to $SYS", async () => {
  const cluster = { ...defaultClusterOptions(), name: "sys", host: "127.0.0.1", port: -1, poolSize: 2, accounts: ["$SYS"] };
  const a: RunningServer = await startServer({ host: "127.0.0.1", port: 0, serverName: "a", cluster });
  const b: RunningServer = await startServer({ host: "127.0.0.1", port: 0, serverName: "b", cluster: { ...cluster, routes: [`nats-route://127.0.0.1:${a.server.cluster!.port}`] } });
  const fa = new Frames();
  const fb = new Frames();
  const ta = new RoutePeerTransport(a.server.cluster as unknown as PeerRoutes, systemScheduler, fa);
  const tb = new RoutePeerTransport(b.server.cluster as unknown as PeerRoutes, systemScheduler, fb);
  try {
    const rz = (s: RunningServer): RouteEntry[] => s.server.cluster!.routez({ subs: false })["routes"] as RouteEntry[];
    await until("2 pooled + 1 pinned route each way", () => rz(a).length === 3 && rz(b).length === 3 && rz(a).some((r) => r.account === "$SYS") && rz(b).some((r) => r.account === "$SYS"));
    for (let i = 0; i < 20; i++) ta.send("b", Buffer.from(`ab${i}`));
    tb.send("a", Buffer.from("ba"));
    await until("frames both ways", () => fb.got.length === 20 && fa.got.length === 1);
    assert.deepEqual(fb.got, Array.from({ length: 20 }, (_, i) => `a:ab${i}`));
    assert.deepEqual(fa.got, ["b:ba"]);
    const sysA = rz(a).find((r) => r.account === "$SYS")!;
    const sysB = rz(b).find((r) => r.account === "$SYS")!;
    assert.ok(sysA.in_msgs >= 1 && sysB.in_msgs >= 1, "the frames came over the $SYS routes");
    for (const r of [...rz(a), ...rz(b)]) if (r.account === undefined) assert.equal(r.in_msgs, 0, "none over the pooled routes");
  } finally {
    ta.close();
    tb.close();
    await b.close();
    await a.close();
  }
});
