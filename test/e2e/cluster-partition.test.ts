// Routes under network faults, multi-process: three tsnats servers in their own network
// namespaces cut by nftables drops (silent loss), and two on loopback through a TCP proxy that
// stalls. A cut route is found stale by its pings and closed; the sides keep serving their own
// clients; after the heal the routes come back by themselves and messages cross again.

import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { startTsnatsChild, startTsnatsChildInNetns, type ChildServer } from "../helpers/core-child.js";
import { TestNet, netnsAvailable } from "../helpers/netns.js";
import { TcpProxy } from "../helpers/tcp-proxy.js";
import { until } from "../helpers/until.js";

async function numRoutes(host: string, monPort: number): Promise<number> {
  const r = await fetch(`http://${host}:${monPort}/routez`, { signal: AbortSignal.timeout(2000) });
  return ((await r.json()) as { num_routes: number }).num_routes;
}

/** Whether a message published on pub reaches sub (subscribed first), within a bound. */
async function crosses(pub: NatsConnection, sub: NatsConnection, subject: string, waitMs: number): Promise<boolean> {
  const s = sub.subscribe(subject);
  await sub.flush();
  let got = false;
  const done = (async () => {
    for await (const _ of s) {
      got = true;
      break;
    }
  })();
  const deadline = Date.now() + waitMs;
  while (!got && Date.now() < deadline) {
    pub.publish(subject, "x");
    await pub.flush();
    await new Promise((r) => setTimeout(r, 100));
  }
  s.unsubscribe();
  await done;
  return got;
}

const noNetns = netnsAvailable();

void test("partition: three servers in network namespaces; a cut server's routes go stale and close, and come back after the heal", { skip: noNetns ?? false }, async () => {
  const net = new TestNet(3);
  const dir = mkdtempSync(join(tmpdir(), "tsnats-partition-"));
  const procs: ChildServer[] = [];
  const ncs: NatsConnection[] = [];
  try {
    for (let i = 0; i < 3; i++) {
      const conf = join(dir, `n${i}.conf`);
      const a = net.addrs[i]!;
      writeFileSync(
        conf,
        [
          `server_name: n${i}`,
          `listen: ${a}:4222`,
          `http: ${a}:8222`,
          "ping_interval: 1",
          "ping_max: 2",
          "cluster {",
          "  name: part",
          `  listen: ${a}:6222`,
          `  routes: [ nats-route://${net.addrs[0]}:6222 ]`,
          "}",
          "",
        ].join("\n"),
      );
      procs.push(await startTsnatsChildInNetns(net.nodes[i]!, a, ["-c", conf]));
    }
    const routes = (i: number): Promise<number> => numRoutes(net.addrs[i]!, 8222);
    await until("a full mesh", async () => (await routes(0)) === 2 && (await routes(1)) === 2 && (await routes(2)) === 2, 20_000);
    for (const p of procs) ncs.push(await connect({ servers: p.url }));
    assert.ok(await crosses(ncs[0]!, ncs[2]!, "part.before", 5000), "n0 -> n2 before the cut");

    net.partition([[0, 1], [2]]);
    await until("n2's routes found stale", async () => (await routes(0)) === 1 && (await routes(1)) === 1 && (await routes(2)) === 0, 20_000);
    // The majority side still routes between its members; n2 serves its own clients.
    assert.ok(await crosses(ncs[0]!, ncs[1]!, "part.majority", 5000), "n0 -> n1 during the cut");
    assert.ok(await crosses(ncs[2]!, ncs[2]!, "part.local", 2000), "n2 local during the cut");
    assert.equal(await crosses(ncs[0]!, ncs[2]!, "part.cut", 1500), false, "nothing crosses the cut");

    net.heal();
    await until("the mesh again after the heal", async () => (await routes(0)) === 2 && (await routes(1)) === 2 && (await routes(2)) === 2, 30_000);
    assert.ok(await crosses(ncs[0]!, ncs[2]!, "part.after", 5000), "n0 -> n2 after the heal");
  } catch (err) {
    for (const [i, p] of procs.entries()) process.stderr.write(`---- n${i} ----\n${p.log().slice(-3000)}\n`);
    throw err;
  } finally {
    await Promise.all(ncs.map((nc) => nc.close().catch(() => undefined)));
    await Promise.all(procs.map((p) => p.stop()));
    net.destroy();
    rmSync(dir, { recursive: true, force: true });
  }
});

void test("stall: a route through a proxy that stops forwarding goes stale, closes, and re-forms once bytes flow again", async () => {
  const dir = mkdtempSync(join(tmpdir(), "tsnats-stall-"));
  const conf = (name: string, routes: string[]): string => {
    const f = join(dir, `${name}.conf`);
    writeFileSync(f, [`server_name: ${name}`, "listen: 127.0.0.1:-1", "http: 127.0.0.1:-1", "ping_interval: 1", "ping_max: 2", "cluster {", "  name: stall", "  listen: 127.0.0.1:-1", `  routes: [ ${routes.join(", ")} ]`, "}", ""].join("\n"));
    return f;
  };
  const a = await startTsnatsChild(["-c", conf("a", [])]);
  const aRoute = Number(/Listening for route connections on [^\s]*:(\d+)/.exec(a.log())![1]);
  const proxy = new TcpProxy("127.0.0.1", aRoute);
  await proxy.start();
  const b = await startTsnatsChild(["-c", conf("b", [`nats-route://127.0.0.1:${proxy.port}`])]);
  const mon = (s: ChildServer): number => Number(/Starting https? monitor on [^\s]*:(\d+)/.exec(s.log())![1]);
  const ncA = await connect({ servers: a.url });
  const ncB = await connect({ servers: b.url });
  try {
    await until("the route", async () => (await numRoutes("127.0.0.1", mon(a))) === 1 && (await numRoutes("127.0.0.1", mon(b))) === 1);
    assert.ok(await crosses(ncB, ncA, "stall.before", 5000));
    proxy.stall();
    await until("the stalled route closed on both sides", async () => (await numRoutes("127.0.0.1", mon(a))) === 0 && (await numRoutes("127.0.0.1", mon(b))) === 0, 20_000);
    assert.match(b.log() + a.log(), /Stale Connection|stale/i);
    proxy.cut();
    proxy.resume();
    await until("the route re-formed", async () => (await numRoutes("127.0.0.1", mon(a))) === 1 && (await numRoutes("127.0.0.1", mon(b))) === 1, 20_000);
    assert.ok(await crosses(ncB, ncA, "stall.after", 5000));
  } finally {
    await ncA.close();
    await ncB.close();
    await b.stop();
    await proxy.close();
    await a.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});
