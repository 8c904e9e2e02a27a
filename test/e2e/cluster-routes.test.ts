// Cluster routes end to end: three server processes started from config files, every one
// routing to one seed, with the official client. The same scenarios run on three tsnats
// servers and on mixed clusters with nats-server 2.9.10 (the seed a nats-server, then the
// seed a tsnats): full mesh from one seed route, fan-out and wildcards, queue groups exactly
// once cluster-wide, request/reply and no-responders across servers, headers, and a kill -9
// of the seed and its restart on the same ports (routes re-form, interest comes back).

import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect, headers, type NatsConnection } from "@nats-io/transport-node";
import { findNatsServer } from "../helpers/core-child.js";
import { freePort } from "../faults/rig.js";
import { until } from "../helpers/until.js";
import { interestSeen, Inbox, startNode, startSeededCluster, type Kind, type Node } from "../helpers/route-nodes.js";

async function routez(n: Node): Promise<{ num_routes: number; routes: { remote_id: string }[] }> {
  const r = await fetch(`http://127.0.0.1:${n.monPort}/routez`);
  return (await r.json()) as { num_routes: number; routes: { remote_id: string }[] };
}

async function fullMesh(nodes: Node[]): Promise<void> {
  await until(
    "a full mesh",
    async () => {
      for (const n of nodes) if ((await routez(n)).num_routes !== nodes.length - 1) return false;
      return true;
    },
    20_000,
  );
}

/** Servers n1.., each with one route: to the seed (the first). */
function startCluster(dir: string, kinds: Kind[], seedPort: number, clientPorts: number[]): Promise<Node[]> {
  return startSeededCluster(dir, { namePrefix: "n", clusterName: "rt", kinds }, seedPort, clientPorts);
}

async function scenarios(nodes: Node[], dir: string): Promise<void> {
  await fullMesh(nodes);
  const [c1, c2, c3] = await Promise.all(nodes.map((n) => connect({ servers: n.proc.url, maxReconnectAttempts: -1, reconnectTimeWait: 100 })));
  const ncs = [c1!, c2!, c3!];
  try {
    // connect_urls: every server's client URL.
    await until("connect_urls of the cluster", () => (c1!.info?.connect_urls?.length ?? 0) >= 3);

    // Fan-out and wildcards: each matching subscription once, however many match on a server.
    const f2a = new Inbox(c2!, "fan.*");
    const f2b = new Inbox(c2!, "fan.>");
    const f3 = new Inbox(c3!, "fan.>");
    const f1 = new Inbox(c1!, "fan.x");
    const other = new Inbox(c3!, "fan.y.*");
    await interestSeen(c1!, c2!, "fan2");
    await interestSeen(c1!, c3!, "fan3");
    for (let i = 0; i < 20; i++) c1!.publish("fan.x", String(i));
    await c1!.flush();
    await until("fan-out", () => f2a.msgs.length === 20 && f2b.msgs.length === 20 && f3.msgs.length === 20 && f1.msgs.length === 20);
    assert.deepEqual(f3.msgs.map((m) => m.string()), Array.from({ length: 20 }, (_, i) => String(i)));
    assert.equal(other.msgs.length, 0);

    // Queue groups: each message exactly once across the cluster.
    const q1 = new Inbox(c1!, "work", "g");
    const q2a = new Inbox(c2!, "work", "g");
    const q2b = new Inbox(c2!, "work", "g");
    const q3 = new Inbox(c3!, "work", "g");
    const plain3 = new Inbox(c3!, "work");
    await interestSeen(c1!, c2!, "q2");
    await interestSeen(c1!, c3!, "q3");
    await interestSeen(c2!, c1!, "q1");
    await interestSeen(c2!, c3!, "q3b");
    const N = 300;
    for (let i = 0; i < N; i++) c1!.publish("work", String(i));
    for (let i = 0; i < N; i++) c2!.publish("work", String(N + i));
    await c1!.flush();
    await c2!.flush();
    const qs = [q1, q2a, q2b, q3];
    const total = (): number => qs.reduce((a, q) => a + q.msgs.length, 0);
    await until("queue deliveries", () => total() >= 2 * N && plain3.msgs.length === 2 * N);
    // Nothing more arrives: a round trip through every server after the last publish.
    await interestSeen(c1!, c3!, "qdone3");
    await interestSeen(c2!, c1!, "qdone1");
    assert.equal(total(), 2 * N);
    const seen = new Set(qs.flatMap((q) => q.msgs.map((m) => m.string())));
    assert.equal(seen.size, 2 * N);
    for (const q of qs) assert.ok(q.msgs.length > 0, "every member takes part");

    // Request/reply across servers, and no responders.
    c3!.subscribe("svc.echo", {
      callback: (_e, m) => {
        m.respond(`echo:${m.string()}`);
      },
    });
    await interestSeen(c1!, c3!, "svc");
    const rep = await c1!.request("svc.echo", "hi", { timeout: 5000 });
    assert.equal(rep.string(), "echo:hi");
    await assert.rejects(c2!.request("svc.nobody", "x", { timeout: 5000 }), (err: Error & { code?: string }) => /503|no responders/i.test(`${err.code ?? ""} ${err.message}`));

    // Headers across a route.
    const h3 = new Inbox(c3!, "hdr.x");
    await interestSeen(c1!, c3!, "hdr");
    const h = headers();
    h.set("X-Route", "yes");
    c1!.publish("hdr.x", "payload", { headers: h });
    await until("header message", () => h3.msgs.length === 1);
    assert.equal(h3.msgs[0]!.headers?.get("X-Route"), "yes");
    assert.equal(h3.msgs[0]!.string(), "payload");

    if (nodes.some((n) => n.kind === "ns") && nodes.some((n) => n.kind === "ts")) await sameShapes(nodes);

    // kill -9 the seed, then start it again on the same ports: routes re-form and the
    // interest of the other servers is known to it again. c1, which was given only the
    // seed's URL, fails over to a server it learned from connect_urls.
    const seed = nodes[0]!;
    const seedUrl = `127.0.0.1:${seed.proc.port}`;
    assert.equal(c1!.getServer(), seedUrl);
    seed.proc.proc.kill("SIGKILL");
    await seed.proc.exited;
    await until("c1 fails over to another server", () => !c1!.isClosed() && c1!.getServer() !== seedUrl && c1!.getServer() !== "");
    const fo = new Inbox(c3!, "failover.x");
    await interestSeen(c1!, c3!, "fo");
    c1!.publish("failover.x", "moved");
    await until("c1 publishes from its new server", () => fo.msgs.length === 1);
    await until("the others see the seed gone", async () => (await routez(nodes[1]!)).num_routes === 1 && (await routez(nodes[2]!)).num_routes === 1);
    const back = await startNode(seed.kind, seed.name, seed.conf);
    nodes[0] = back;
    await fullMesh(nodes);
    const after = new Inbox(c2!, "after.kill");
    await c2!.flush();
    const fresh = await connect({ servers: back.proc.url });
    ncs.push(fresh);
    await interestSeen(fresh, c2!, "after2");
    fresh.publish("after.kill", "again");
    await until("message from the restarted seed", () => after.msgs.length === 1);

    // kill -9 a server that only has implicit routes to the third: when it comes back (its
    // route port is a new one), the seed's gossip brings the third to it again.
    const n3 = nodes[2]!;
    n3.proc.proc.kill("SIGKILL");
    await n3.proc.exited;
    await until("the others see n3 gone", async () => (await routez(nodes[0]!)).num_routes === 1 && (await routez(nodes[1]!)).num_routes === 1);
    nodes[2] = await startNode(n3.kind, n3.name, n3.conf);
    await fullMesh(nodes);
    const c3b = await connect({ servers: nodes[2].proc.url });
    ncs.push(c3b);
    await interestSeen(c3b, c2!, "after3");
    const after3 = new Inbox(c3b, "after.n3");
    await interestSeen(c2!, c3b, "after3b");
    c2!.publish("after.n3", "back");
    await until("a message to the restarted n3", () => after3.msgs.length === 1);
    void dir;
  } finally {
    await Promise.all(ncs.map((nc) => nc.close().catch(() => undefined)));
  }
}

/** /routez route entries and the /varz cluster block of a tsnats server have every field a
 *  nats-server 2.9 server shows (tsnats adds remote_name, as 2.10 does). */
async function sameShapes(nodes: Node[]): Promise<void> {
  const ns = nodes.find((n) => n.kind === "ns")!;
  const ts = nodes.find((n) => n.kind === "ts")!;
  const get = async (n: Node, path: string): Promise<Record<string, unknown>> => (await (await fetch(`http://127.0.0.1:${n.monPort}${path}`)).json()) as Record<string, unknown>;
  // RTTs are measured after the first ping, about a second after a route is up.
  await until("route RTTs", async () => {
    for (const n of [ns, ts]) for (const r of (await get(n, "/routez")).routes as Record<string, unknown>[]) if (r["rtt"] === undefined) return false;
    return true;
  });
  const [rzN, rzT, vzN, vzT] = [await get(ns, "/routez?subs=1"), await get(ts, "/routez?subs=1"), await get(ns, "/varz"), await get(ts, "/varz")];
  const keys = (o: unknown): string[] => Object.keys(o as object).sort();
  const missing = (a: string[], b: string[]): string[] => a.filter((k) => !b.includes(k));
  assert.deepEqual(missing(keys(rzN), keys(rzT)), [], "/routez top level");
  const rN = (rzN["routes"] as Record<string, unknown>[])[0]!;
  const rT = (rzT["routes"] as Record<string, unknown>[])[0]!;
  assert.deepEqual(missing(keys(rN), keys(rT)), [], "/routez route entry");
  for (const k of keys(rN)) assert.equal(typeof rT[k], typeof rN[k], `/routez ${k}`);
  assert.deepEqual(missing(keys(vzN["cluster"]), keys(vzT["cluster"])), [], "/varz cluster");
  assert.equal(vzT["routes"], vzN["routes"]);
}

async function runCluster(kinds: Kind[]): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "tsnats-routes-"));
  const seedPort = await freePort();
  const clientPorts = [await freePort(), await freePort(), await freePort()];
  let nodes: Node[] = [];
  try {
    nodes = await startCluster(dir, kinds, seedPort, clientPorts);
    await scenarios(nodes, dir);
    for (const n of nodes) if (n.kind === "ts") assert.doesNotMatch(n.proc.log(), /Route closed: (?!stale)/, `${n.name} closed no route for bad input`);
  } catch (err) {
    for (const n of nodes) process.stderr.write(`---- ${n.name} (${n.kind}) ----\n${n.proc.log().slice(-6000)}\n`);
    throw err;
  } finally {
    await Promise.all(nodes.map((n) => n.proc.stop()));
    rmSync(dir, { recursive: true, force: true });
  }
}

void test("three tsnats servers: mesh from one seed, fan-out, queue groups, request/reply, headers, kill -9 and restart", async () => {
  await runCluster(["ts", "ts", "ts"]);
});

void test("five tsnats servers: a full mesh from one seed, fan-out and a queue group exactly once", async () => {
  const dir = mkdtempSync(join(tmpdir(), "tsnats-routes5-"));
  const seedPort = await freePort();
  const ports = [await freePort(), await freePort(), await freePort(), await freePort(), await freePort()];
  let nodes: Node[] = [];
  const ncs: NatsConnection[] = [];
  try {
    nodes = await startCluster(dir, ["ts", "ts", "ts", "ts", "ts"], seedPort, ports);
    await fullMesh(nodes);
    for (const n of nodes) ncs.push(await connect({ servers: n.proc.url }));
    const plain = ncs.map((nc) => new Inbox(nc, "five.>"));
    const group = ncs.map((nc) => new Inbox(nc, "five.q", "workers"));
    for (let i = 1; i < 5; i++) await interestSeen(ncs[0]!, ncs[i]!, `five${i}`);
    for (let i = 0; i < 100; i++) ncs[0]!.publish("five.q", String(i));
    await ncs[0]!.flush();
    await until("five-way fan-out", () => plain.every((p) => p.msgs.length === 100));
    await until("the queue group", () => group.reduce((a, g) => a + g.msgs.length, 0) >= 100);
    for (let i = 1; i < 5; i++) await interestSeen(ncs[0]!, ncs[i]!, `five-done${i}`);
    assert.equal(group.reduce((a, g) => a + g.msgs.length, 0), 100);
  } finally {
    await Promise.all(ncs.map((nc) => nc.close().catch(() => undefined)));
    await Promise.all(nodes.map((n) => n.proc.stop()));
    rmSync(dir, { recursive: true, force: true });
  }
});

void test("mixed: a nats-server 2.9 seed with two tsnats servers", { skip: findNatsServer() === null ? "nats-server is not on PATH" : false }, async () => {
  await runCluster(["ns", "ts", "ts"]);
});

void test("mixed: a tsnats seed with a nats-server 2.9 and another tsnats", { skip: findNatsServer() === null ? "nats-server is not on PATH" : false }, async () => {
  await runCluster(["ts", "ns", "ts"]);
});
