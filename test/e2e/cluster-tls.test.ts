// Cluster TLS: routes with `cluster { tls {} }` are mutual TLS (the listener requires and
// verifies the peer's certificate against ca_file, the dialling side verifies the listener's),
// between tsnats servers and with nats-server 2.9.10 on the same config. A server whose
// certificate the CA did not sign gets no route.

import { test } from "node:test";
import assert from "node:assert/strict";
import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { connect, type Msg } from "@nats-io/transport-node";
import { findNatsServer, startNatsServerChild, startTsnatsChild, type ChildServer } from "../helpers/core-child.js";
import { makeCerts, type CertSet } from "../helpers/certs.js";
import { until } from "../helpers/until.js";

const ROUTE_RE = /Listening for route connections on [^\s]*:(\d+)/;
const MON_RE = /Starting https? monitor on [^\s]*:(\d+)/;

interface Srv {
  proc: ChildServer;
  routePort: number;
  monPort: number;
}

async function startSrv(kind: "ts" | "ns", certs: CertSet, name: string, seed: number, cert = certs.serverCert, key = certs.serverKey): Promise<Srv> {
  const conf = join(certs.dir, `${name}.conf`);
  writeFileSync(
    conf,
    [
      `server_name: ${name}`,
      "listen: 127.0.0.1:-1",
      "http: 127.0.0.1:-1",
      "cluster {",
      "  name: tlsc",
      "  listen: 127.0.0.1:-1",
      ...(seed > 0 ? [`  routes: [ nats-route://127.0.0.1:${seed} ]`] : []),
      `  tls { cert_file: "${cert}", key_file: "${key}", ca_file: "${certs.caCert}", timeout: 2 }`,
      "}",
      "",
    ].join("\n"),
  );
  const proc = kind === "ts" ? await startTsnatsChild(["-c", conf]) : await startNatsServerChild(["-c", conf]);
  // nats-server may report its route listener after "Server is ready".
  await until(`${name}'s route listener`, () => ROUTE_RE.test(proc.log()));
  return { proc, routePort: Number(ROUTE_RE.exec(proc.log())![1]), monPort: Number(MON_RE.exec(proc.log())![1]) };
}

async function numRoutes(s: Srv): Promise<number> {
  const r = await fetch(`http://127.0.0.1:${s.monPort}/routez`);
  return ((await r.json()) as { num_routes: number }).num_routes;
}

async function flows(from: Srv, to: Srv): Promise<void> {
  const a = await connect({ servers: from.proc.url });
  const b = await connect({ servers: to.proc.url });
  try {
    const got: Msg[] = [];
    b.subscribe("tls.route", {
      callback: (_e, m) => {
        got.push(m);
      },
    });
    await b.flush();
    await until("a message over the TLS route", async () => {
      a.publish("tls.route", "x");
      await a.flush();
      await new Promise((r) => setTimeout(r, 20));
      return got.length > 0;
    });
  } finally {
    await a.close();
    await b.close();
  }
}

for (const kinds of [["ts", "ts"], ["ns", "ts"], ["ts", "ns"]] as ("ts" | "ns")[][]) {
  const needsNs = kinds.includes("ns");
  void test(`cluster TLS: ${kinds.join(" seed, ")} dialling`, { skip: needsNs && findNatsServer() === null ? "nats-server is not on PATH" : false }, async () => {
    const certs = makeCerts();
    const srvs: Srv[] = [];
    try {
      srvs.push(await startSrv(kinds[0]!, certs, "s1", 0));
      srvs.push(await startSrv(kinds[1]!, certs, "s2", srvs[0]!.routePort));
      await until("the TLS route", async () => (await numRoutes(srvs[0]!)) === 1 && (await numRoutes(srvs[1]!)) === 1);
      await flows(srvs[0]!, srvs[1]!);
      await flows(srvs[1]!, srvs[0]!);
      // A certificate from another CA: no route, and the good one stays.
      const rogue = certs.client("rogue", "/CN=rogue", "IP:127.0.0.1", true);
      const bad = await startSrv("ts", certs, "s3", srvs[0]!.routePort, rogue.cert, rogue.key);
      srvs.push(bad);
      await until("the refused handshake", () => /handshake|certificate|tls/i.test(srvs[0]!.proc.log().split("\n").filter((l) => /ERR/.test(l)).join("\n")));
      assert.equal(await numRoutes(bad), 0);
      assert.equal(await numRoutes(srvs[0]!), 1);
    } finally {
      await Promise.all(srvs.map((s) => s.proc.stop()));
      rmSync(certs.dir, { recursive: true, force: true });
    }
  });
}
