// Cluster routes at the edges: bad input on the route port closes that connection only (the
// established route and the clients go on), route authorization, two servers with the same
// server_name, and the async INFO clients get when a server joins or leaves.

import { test } from "node:test";
import assert from "node:assert/strict";
import net from "node:net";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect, type Msg, type NatsConnection } from "@nats-io/transport-node";
import { startTsnatsChild, type ChildServer } from "../helpers/core-child.js";
import { until } from "../helpers/until.js";

const ROUTE_RE = /Listening for route connections on [^\s]*:(\d+)/;
const MON_RE = /Starting https? monitor on [^\s]*:(\d+)/;

interface Srv {
  proc: ChildServer;
  routePort: number;
  monPort: number;
}

async function startSrv(dir: string, name: string, cluster: string[], extra: string[] = []): Promise<Srv> {
  const conf = join(dir, `${name}-${Math.random().toString(36).slice(2)}.conf`);
  writeFileSync(conf, [`server_name: ${name}`, "listen: 127.0.0.1:-1", "http: 127.0.0.1:-1", ...extra, "cluster {", "  name: edge", ...cluster.map((l) => `  ${l}`), "}", ""].join("\n"));
  const proc = await startTsnatsChild(["-c", conf]);
  return { proc, routePort: Number(ROUTE_RE.exec(proc.log())![1]), monPort: Number(MON_RE.exec(proc.log())![1]) };
}

async function numRoutes(s: Srv): Promise<number> {
  const r = await fetch(`http://127.0.0.1:${s.monPort}/routez`);
  return ((await r.json()) as { num_routes: number }).num_routes;
}

/** Opens a raw TCP connection to the route port, writes text, resolves with what came back
 *  once the server closed it (bounded). */
function rawRoute(port: number, text: string, boundMs = 8000): Promise<{ data: string; closed: boolean }> {
  return new Promise((resolve) => {
    const s = net.connect(port, "127.0.0.1");
    let data = "";
    const t = setTimeout(() => {
      s.destroy();
      resolve({ data, closed: false });
    }, boundMs);
    s.on("data", (d) => (data += d.toString("latin1")));
    s.on("connect", () => {
      if (text !== "") s.write(text);
    });
    s.on("error", () => undefined);
    s.on("close", () => {
      clearTimeout(t);
      resolve({ data, closed: true });
    });
  });
}

async function roundTrip(pub: NatsConnection, sub: NatsConnection, subject: string): Promise<void> {
  const got: Msg[] = [];
  const s = sub.subscribe(subject, {
    callback: (_e, m) => {
      got.push(m);
    },
  });
  await sub.flush();
  await until(`a message on ${subject} across the route`, async () => {
    pub.publish(subject, "x");
    await pub.flush();
    await new Promise((r) => setTimeout(r, 20));
    return got.length > 0;
  });
  s.unsubscribe();
}

void test("bad input on the route port closes that connection only; the route and the clients go on", async () => {
  const dir = mkdtempSync(join(tmpdir(), "tsnats-routes-edge-"));
  const a = await startSrv(dir, "a", ["listen: 127.0.0.1:-1", "authorization { timeout: 0.5 }"]);
  const b = await startSrv(dir, "b", ["listen: 127.0.0.1:-1", `routes: [ nats-route://127.0.0.1:${a.routePort} ]`]);
  const ca = await connect({ servers: a.proc.url });
  const cb = await connect({ servers: b.proc.url });
  try {
    await until("the route", async () => (await numRoutes(a)) === 1);
    await roundTrip(ca, cb, "edge.before");
    const CONNECT = 'CONNECT {"echo":true,"verbose":false,"pedantic":false,"headers":true,"name":"NFAKE","cluster":"edge","lnoc":true}\r\n';
    const INFO = 'INFO {"server_id":"NFAKE","server_name":"fake","cluster":"edge","host":"127.0.0.1","port":1,"headers":true}\r\n';
    // Garbage.
    assert.ok((await rawRoute(a.routePort, "\x00\x01garbage here\r\n")).closed);
    // A client on the route port.
    const wrong = await rawRoute(a.routePort, 'CONNECT {"lang":"node","version":"3"}\r\n');
    assert.ok(wrong.closed);
    assert.match(wrong.data, /-ERR 'attempted to connect to route port'/);
    // A route that never sends CONNECT (the authorization timeout here is 0.5 s).
    const silent = await rawRoute(a.routePort, "");
    assert.ok(silent.closed);
    assert.match(silent.data, /^INFO \{/);
    // Messages before CONNECT, an oversize frame, a bad size, a cluster name that differs.
    assert.ok((await rawRoute(a.routePort, "RMSG $G foo 2\r\nhi\r\n")).closed);
    assert.ok((await rawRoute(a.routePort, CONNECT + INFO + "RMSG $G foo 999999999\r\n")).closed);
    assert.ok((await rawRoute(a.routePort, CONNECT + INFO + "RMSG $G foo + r q x\r\n")).closed);
    const other = await rawRoute(a.routePort, CONNECT.replace('"edge"', '"other"'));
    assert.ok(other.closed);
    assert.match(other.data, /cluster name "other" does not match "edge"/);
    // An account tsnats does not have (nats-server always announces $SYS): ignored, the
    // connection stays until we leave.
    const sys = await rawRoute(a.routePort, CONNECT + INFO + "RS+ $SYS $SYS.REQ.SERVER.PING\r\nRMSG $SYS x 1\r\nx\r\nPING\r\n", 800);
    assert.equal(sys.closed, false);
    assert.match(sys.data, /PONG/);
    // The real route and the clients did not notice (the fake one goes once we hang up).
    await until("only the real route left", async () => (await numRoutes(a)) === 1);
    await roundTrip(ca, cb, "edge.after");
    await roundTrip(cb, ca, "edge.after2");
  } finally {
    await ca.close();
    await cb.close();
    await Promise.all([a.proc.stop(), b.proc.stop()]);
    rmSync(dir, { recursive: true, force: true });
  }
});

void test("route authorization: the wrong password makes no route, the right one does", async () => {
  const dir = mkdtempSync(join(tmpdir(), "tsnats-routes-auth-"));
  const a = await startSrv(dir, "a", ["listen: 127.0.0.1:-1", "authorization { user: ruser, password: rpass }"]);
  const bad = await startSrv(dir, "bad", ["listen: 127.0.0.1:-1", `routes: [ nats-route://ruser:nope@127.0.0.1:${a.routePort} ]`]);
  try {
    await until("the refusal logged", () => /authentication error/.test(a.proc.log()));
    assert.equal(await numRoutes(a), 0);
    const good = await startSrv(dir, "good", ["listen: 127.0.0.1:-1", `routes: [ nats-route://ruser:rpass@127.0.0.1:${a.routePort} ]`]);
    try {
      await until("the route with credentials", async () => (await numRoutes(good)) === 1);
      assert.equal(await numRoutes(bad), 0);
      assert.doesNotMatch(a.proc.log() + bad.proc.log() + good.proc.log(), /rpass/);
    } finally {
      await good.proc.stop();
    }
  } finally {
    await Promise.all([a.proc.stop(), bad.proc.stop()]);
    rmSync(dir, { recursive: true, force: true });
  }
});

void test("two servers with the same server_name: an error on both sides, and no route", async () => {
  const dir = mkdtempSync(join(tmpdir(), "tsnats-routes-dup-"));
  const a = await startSrv(dir, "twin", ["listen: 127.0.0.1:-1"]);
  const b = await startSrv(dir, "twin", ["listen: 127.0.0.1:-1", `routes: [ nats-route://127.0.0.1:${a.routePort} ]`]);
  try {
    await until("the duplicate name reported on both sides", () => /Remote server has a duplicate name: "twin"/.test(a.proc.log()) && /Remote server has a duplicate name: "twin"/.test(b.proc.log()));
    assert.equal(await numRoutes(a), 0);
    assert.equal(await numRoutes(b), 0);
  } finally {
    await Promise.all([a.proc.stop(), b.proc.stop()]);
    rmSync(dir, { recursive: true, force: true });
  }
});

void test("clients get an async INFO with connect_urls when a server joins, leaves, or enters lame duck mode; no_advertise keeps them out", async () => {
  const dir = mkdtempSync(join(tmpdir(), "tsnats-routes-info-"));
  const a = await startSrv(dir, "a", ["listen: 127.0.0.1:-1"]);
  const nc = await connect({ servers: a.proc.url });
  try {
    assert.equal(nc.info?.connect_urls?.length ?? 0, 1);
    const b = await startSrv(dir, "b", ["listen: 127.0.0.1:-1", `routes: [ nats-route://127.0.0.1:${a.routePort} ]`]);
    const bUrl = `127.0.0.1:${b.proc.port}`;
    await until("b's URL announced", () => (nc.info?.connect_urls ?? []).includes(bUrl));
    await b.proc.stop();
    await until("b's URL withdrawn", () => !(nc.info?.connect_urls ?? []).includes(bUrl));
    // Lame duck mode: the peer says so over the route, and its URL is withdrawn while it
    // still runs (its lame duck period here is long).
    const d = await startSrv(dir, "d", ["listen: 127.0.0.1:-1", `routes: [ nats-route://127.0.0.1:${a.routePort} ]`], ["lame_duck_duration: 60s", "lame_duck_grace_period: 30s"]);
    const dUrl = `127.0.0.1:${d.proc.port}`;
    try {
      await until("d's URL announced", () => (nc.info?.connect_urls ?? []).includes(dUrl));
      d.proc.proc.kill("SIGUSR2");
      await until("d's URL withdrawn in lame duck mode", () => !(nc.info?.connect_urls ?? []).includes(dUrl));
      assert.equal(d.proc.proc.exitCode, null, "d still runs");
    } finally {
      d.proc.proc.kill("SIGKILL");
      await d.proc.exited;
    }
    const hidden = await startSrv(dir, "c", ["listen: 127.0.0.1:-1", "no_advertise: true", `routes: [ nats-route://127.0.0.1:${a.routePort} ]`]);
    try {
      await until("the route to c", async () => (await numRoutes(a)) === 1);
      const nc2 = await connect({ servers: hidden.proc.url });
      assert.deepEqual(nc2.info?.connect_urls ?? [], []);
      await nc2.close();
    } finally {
      await hidden.proc.stop();
    }
  } finally {
    await nc.close();
    await a.proc.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});

void test("flags: --cluster, --cluster_name and --routes make a route without a config file", async () => {
  const a = await startTsnatsChild(["-a", "127.0.0.1", "-p", "-1", "-m", "-1", "--server_name", "fa", "--cluster", "nats://127.0.0.1:-1", "--cluster_name", "flags"]);
  const aRoute = Number(ROUTE_RE.exec(a.log())![1]);
  const b = await startTsnatsChild(["-a", "127.0.0.1", "-p", "-1", "--server_name", "fb", "--cluster", "nats://127.0.0.1:-1", "--cluster_name", "flags", "--routes", `nats-route://127.0.0.1:${aRoute}`]);
  try {
    const mon = Number(MON_RE.exec(a.log())![1]);
    await until("the route from flags", async () => ((await (await fetch(`http://127.0.0.1:${mon}/routez`)).json()) as { num_routes: number }).num_routes === 1);
  } finally {
    await Promise.all([a.stop(), b.stop()]);
  }
});

void test("route permissions: only importable interest is announced, only exportable interest is taken", async () => {
  const dir = mkdtempSync(join(tmpdir(), "tsnats-routes-perms-"));
  const a = await startSrv(dir, "pa", ["listen: 127.0.0.1:-1", 'permissions { import: "imp.>", export: "exp.>" }']);
  const b = await startSrv(dir, "pb", ["listen: 127.0.0.1:-1", `routes: [ nats-route://127.0.0.1:${a.routePort} ]`]);
  const ca = await connect({ servers: a.proc.url });
  const cb = await connect({ servers: b.proc.url });
  try {
    await until("the route", async () => (await numRoutes(a)) === 1);
    const seen: string[] = [];
    const rec = (_e: Error | null, m: Msg): void => {
      seen.push(`${m.subject}`);
    };
    // On a: imp.> may be imported (announced), other.> not.
    ca.subscribe("other.x", { callback: rec });
    ca.subscribe("imp.x", { callback: rec });
    // On b: exp.> is exported by a (a takes b's interest), nope.> not.
    cb.subscribe("nope.y", { callback: rec });
    cb.subscribe("exp.y", { callback: rec });
    await ca.flush();
    await cb.flush();
    await until("imp.x from b reaches a", async () => {
      cb.publish("other.x");
      cb.publish("imp.x");
      await cb.flush();
      await new Promise((r) => setTimeout(r, 20));
      return seen.includes("imp.x");
    });
    await until("exp.y from a reaches b", async () => {
      ca.publish("nope.y");
      ca.publish("exp.y");
      await ca.flush();
      await new Promise((r) => setTimeout(r, 20));
      return seen.includes("exp.y");
    });
    assert.ok(!seen.includes("other.x"), "a did not announce other.x");
    assert.ok(!seen.includes("nope.y"), "a did not take b's interest in nope.y");
  } finally {
    await ca.close();
    await cb.close();
    await Promise.all([a.proc.stop(), b.proc.stop()]);
    rmSync(dir, { recursive: true, force: true });
  }
});
