// Route test servers started from config files (tsnats or nats-server), each routed to one
// seed, and the client-side pieces the route tests share: an inbox and the wait for a
// subscription's interest to cross the cluster.

import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Msg, NatsConnection } from "@nats-io/transport-node";
import { startNatsServerChild, startTsnatsChild, type ChildServer } from "./core-child.js";
import { until } from "./until.js";

export type Kind = "ts" | "ns";

export interface Node {
  kind: Kind;
  name: string;
  conf: string;
  proc: ChildServer;
  monPort: number;
}

const MON_RE = /Starting https? monitor on [^\s]*:(\d+)/;

export async function startNode(kind: Kind, name: string, conf: string): Promise<Node> {
  const proc = kind === "ts" ? await startTsnatsChild(["-c", conf]) : await startNatsServerChild(["-c", conf]);
  const m = MON_RE.exec(proc.log());
  assert.ok(m, `monitor port of ${name}`);
  return { kind, name, conf, proc, monPort: Number(m[1]) };
}

export interface SeededCluster {
  /** Server names are `<namePrefix><1..n>`. */
  namePrefix: string;
  clusterName: string;
  kinds: Kind[];
  /** Extra lines of the cluster block, tsnats servers only. */
  tsExtra?: string[];
}

/** Servers each routed to the seed (the first, whose route is to itself: a route to self,
 *  detected and dropped); fixed client ports so that the seed can restart on them. */
export async function startSeededCluster(dir: string, c: SeededCluster, seedPort: number, clientPorts: number[]): Promise<Node[]> {
  assert.equal(c.kinds.length, clientPorts.length);
  const nodes: Node[] = [];
  for (let i = 0; i < c.kinds.length; i++) {
    const name = `${c.namePrefix}${i + 1}`;
    const conf = join(dir, `${name}.conf`);
    const kind = c.kinds[i]!;
    writeFileSync(
      conf,
      [
        `server_name: ${name}`,
        `listen: 127.0.0.1:${clientPorts[i]}`,
        "http: 127.0.0.1:-1",
        "cluster {",
        `  name: ${c.clusterName}`,
        `  listen: 127.0.0.1:${i === 0 ? seedPort : -1}`,
        `  routes: [ nats-route://127.0.0.1:${seedPort} ]`,
        ...(kind === "ts" ? (c.tsExtra ?? []).map((x) => `  ${x}`) : []),
        "}",
        "",
      ].join("\n"),
    );
    nodes.push(await startNode(kind, name, conf));
  }
  return nodes;
}

/** Every message a subscription got, in order. */
export class Inbox {
  readonly msgs: Msg[] = [];
  constructor(nc: NatsConnection, subject: string, queue?: string) {
    nc.subscribe(subject, {
      ...(queue !== undefined ? { queue } : {}),
      callback: (_e, m) => {
        this.msgs.push(m);
      },
    });
  }
}

/** Interest on `from`'s server for a sentinel that `on` subscribed after its other
 *  subscriptions: once it is seen, so are they (one route carries an account's interest in
 *  order). */
export async function interestSeen(from: NatsConnection, on: NatsConnection, tag: string): Promise<void> {
  const got = new Inbox(on, `sentinel.${tag}`);
  await on.flush();
  await until(`interest of ${tag}`, async () => {
    from.publish(`sentinel.${tag}`);
    await from.flush();
    await new Promise((r) => setTimeout(r, 20));
    return got.msgs.length > 0;
  });
}
