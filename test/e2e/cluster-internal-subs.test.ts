// Internal subscriptions that take part in the cluster (Bus.subscribe with cluster: true):
// server B runs in this process (the embedding API is the test hook), A is a tsnats child
// process and C a nats-server 2.9 child (when one is installed), all routed to B. A client's
// publish on A (or C) reaches B's internal cluster subscription, never a local-only one; a
// queue group spread over B's internal members and a client on A takes each message exactly
// once; an internal responder on B answers requests from A; its unsubscribe withdraws the
// interest (A's client then gets no responders).

import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect, type Msg, type NatsConnection } from "@nats-io/transport-node";
import { startServer, type RunningServer } from "../../src/index.js";
import { defaultClusterOptions } from "../../src/server/options.js";
import { findNatsServer, startNatsServerChild, startTsnatsChild, type ChildServer } from "../helpers/core-child.js";
import { until } from "../helpers/until.js";

function childConf(dir: string, name: string, routePort: number, extra: string[]): string {
  const conf = join(dir, `${name}.conf`);
  writeFileSync(conf, [`server_name: ${name}`, "listen: 127.0.0.1:-1", "cluster {", "  name: ic", "  listen: 127.0.0.1:-1", `  routes: [ nats-route://127.0.0.1:${routePort} ]`, ...extra, "}", ""].join("\n"));
  return conf;
}

interface Rig {
  b: RunningServer;
  children: ChildServer[];
  ncs: NatsConnection[];
  dir: string;
}

async function rig(withNats: boolean, pooled: boolean): Promise<Rig> {
  const dir = mkdtempSync(join(tmpdir(), "routeadv-ic-"));
  const b = await startServer({ host: "127.0.0.1", port: 0, serverName: "B", cluster: { ...defaultClusterOptions(), name: "ic", host: "127.0.0.1", port: -1, poolSize: pooled ? 3 : 0 } });
  const routePort = b.server.cluster!.port;
  const children = [await startTsnatsChild(["-c", childConf(dir, "A", routePort, pooled ? ["  pool_size: 3"] : [])])];
  if (withNats) children.push(await startNatsServerChild(["-c", childConf(dir, "C", routePort, [])]));
  // Route connections: a pool of 3 to a pooling tsnats server, one to nats-server.
  const want = pooled ? 3 + (withNats ? 1 : 0) : children.length;
  await until("routes to B", () => (b.server.cluster!.routez({ subs: false })["num_routes"] as number) === want, 20_000);
  const ncs = await Promise.all(children.map((c) => connect({ servers: c.url })));
  return { b, children, ncs, dir };
}

async function teardown(r: Rig): Promise<void> {
  await Promise.all(r.ncs.map((nc) => nc.close()));
  await Promise.all(r.children.map((c) => c.stop()));
  await r.b.close();
  rmSync(r.dir, { recursive: true, force: true });
}

/** Publish `subject` from nc until seen() (B's interest has reached nc's server). */
async function reach(nc: NatsConnection, subject: string, seen: () => boolean): Promise<void> {
  await until(`interest in ${subject} seen from the client's server`, async () => {
    nc.publish(subject, "sentinel");
    await nc.flush();
    await new Promise((r) => setTimeout(r, 20));
    return seen();
  });
}

async function scenario(withNats: boolean, pooled = false): Promise<void> {
  const r = await rig(withNats, pooled);
  const srv = r.b.server;
  try {
    const [a] = r.ncs;
    // Plain: a cluster subscription and a local-only one on the same subjects.
    const clustered: string[] = [];
    const local: string[] = [];
    const cs = srv.subscribe("ic.plain.>", (subject, _reply, _hdr, payload) => clustered.push(`${subject}:${payload.toString()}`), "", false, { cluster: true });
    const ls = srv.subscribe("ic.plain.>", (subject) => local.push(subject));
    for (const [i, nc] of r.ncs.entries()) {
      await reach(nc, `ic.plain.s${i}`, () => clustered.some((x) => x.startsWith(`ic.plain.s${i}:`)));
      for (let k = 0; k < 50; k++) nc.publish(`ic.plain.m${i}`, String(k));
      await nc.flush();
      await until(`server ${i}'s client publishes at B`, () => clustered.filter((x) => x.startsWith(`ic.plain.m${i}:`)).length === 50);
      assert.deepEqual(
        clustered.filter((x) => x.startsWith(`ic.plain.m${i}:`)),
        Array.from({ length: 50 }, (_, k) => `ic.plain.m${i}:${k}`),
        "in order, once each",
      );
    }
    assert.deepEqual(local, [], "a local-only internal subscription takes nothing from routes");
    srv.publish("ic.plain.here", "", null, Buffer.from("x"));
    assert.deepEqual(local, ["ic.plain.here"], "but still what is published on its own server");

    // Queue: two internal members on B, one client member on A: each message exactly once.
    const q: Record<string, string[]> = { b1: [], b2: [], a: [] };
    const qs1 = srv.subscribe("ic.work", (_s, _r, _h, p) => q["b1"]!.push(p.toString()), "g", false, { cluster: true });
    const qs2 = srv.subscribe("ic.work", (_s, _r, _h, p) => q["b2"]!.push(p.toString()), "g", false, { cluster: true });
    a!.subscribe("ic.work", { queue: "g", callback: (_e, m: Msg) => {
        q["a"]!.push(m.string());
      },
    });
    await a!.flush();
    const sent: string[] = [];
    const total = (): number => q["b1"]!.length + q["b2"]!.length + q["a"]!.length;
    await reach(a!, "ic.work", () => q["b1"]!.length + q["b2"]!.length > 0);
    const base = total();
    for (let k = 0; k < 200; k++) {
      a!.publish("ic.work", `w${k}`);
      sent.push(`w${k}`);
    }
    await a!.flush();
    await until("queue deliveries", () => total() >= base + 200);
    // A round trip A -> B after the last publish: nothing more is in flight.
    await reach(a!, "ic.plain.done", () => clustered.some((x) => x.startsWith("ic.plain.done:")));
    assert.equal(total(), base + 200, "each message once");
    const got = new Set([...q["b1"]!, ...q["b2"]!, ...q["a"]!].filter((x) => x.startsWith("w")));
    assert.equal(got.size, 200);
    assert.ok(q["b1"]!.length > 0 && q["b2"]!.length > 0 && q["a"]!.length > 0, `every member takes part ${JSON.stringify([q["b1"]!.length, q["b2"]!.length, q["a"]!.length])}`);

    // A queue group with members on A only counts as queue interest on B (push consumers'
    // deliver groups).
    assert.equal(srv.hasQueueInterest("ic.dg", "dg"), false);
    a!.subscribe("ic.dg", { queue: "dg", callback: () => undefined });
    await until("A's deliver group seen from B", () => srv.hasQueueInterest("ic.dg", "dg"));
    assert.equal(srv.hasQueueInterest("ic.dg", "other"), false);

    // Request/reply: an internal responder on B answers clients on every server.
    const resp = srv.subscribe("ic.svc", (_s, reply, _h, p) => srv.publish(reply, "", null, Buffer.from(`echo:${p.toString()}`)), "", false, { cluster: true });
    for (const nc of r.ncs) {
      await until("the responder's interest", async () => {
        try {
          return (await nc.request("ic.svc", "hi", { timeout: 1000 })).string() === "echo:hi";
        } catch {
          return false;
        }
      });
    }
    // Unsubscribed: the interest is withdrawn (RS-), so A's client hears "no responders".
    resp.unsubscribe();
    await until("RS- reached A", async () => {
      try {
        await a!.request("ic.svc", "x", { timeout: 1000 });
        return false;
      } catch (err) {
        return /503|no responders/i.test(`${(err as { code?: string }).code ?? ""} ${(err as Error).message}`);
      }
    });
    cs.unsubscribe();
    ls.unsubscribe();
    qs1.unsubscribe();
    qs2.unsubscribe();
  } finally {
    await teardown(r);
  }
}

void test("cluster internal subscriptions: tsnats B (embedded) with a tsnats A", async () => {
  await scenario(false);
});

void test("cluster internal subscriptions: also with a nats-server 2.9 peer", { skip: findNatsServer() === null ? "nats-server not installed" : false }, async () => {
  await scenario(true);
});

void test("cluster internal subscriptions: over pooled routes (pool_size 3), with a nats-server 2.9 peer too", { skip: findNatsServer() === null ? "nats-server not installed" : false }, async () => {
  await scenario(true, true);
});
