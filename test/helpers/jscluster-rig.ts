// Three tsnats processes with JetStream in one cluster (tags node:<name>), started from
// nats-server-syntax config files, for the clustered JetStream e2e tests.

import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { NatsConnection } from "@nats-io/transport-node";
import { jetstream } from "@nats-io/jetstream";
import { startTsnatsChild, type ChildServer } from "./core-child.js";
import { until } from "./until.js";

// Ports below the ephemeral range (test/faults/rig.ts): a released ephemeral port can be
// taken by another server's listen(0) (a monitor on -1) before ours binds it.
import { freePort } from "../faults/rig.js";
export { freePort };

export function monPort(s: ChildServer): number {
  return Number(/Starting https? monitor on [^\s]*:(\d+)/.exec(s.log())![1]);
}

/** The server's /jsz; {} when it does not answer (2 s bound). */
export async function jsz(s: ChildServer): Promise<Record<string, unknown>> {
  try {
    const r = await fetch(`http://127.0.0.1:${monPort(s)}/jsz`, { signal: AbortSignal.timeout(2000) });
    return (await r.json()) as Record<string, unknown>;
  } catch {
    return {};
  }
}

export async function metaLeader(s: ChildServer): Promise<string> {
  return ((await jsz(s))["meta_cluster"] as { leader?: string } | undefined)?.leader ?? "";
}

export async function req(nc: NatsConnection, subject: string, body: unknown = "", timeout = 5000): Promise<Record<string, unknown>> {
  const r = await nc.request(subject, typeof body === "string" ? body : JSON.stringify(body), { timeout });
  return r.json();
}

export interface Rig {
  dir: string;
  names: string[];
  confs: string[];
  procs: Array<ChildServer | null>;
}

/** Servers `names` (tags node:<name>) in cluster `clusterName`, each config file ending with
 *  the `extra` lines before its cluster block, started one after the other; JetStream on
 *  all but `withoutJetStream`. */
export async function startRig(prefix: string, names = ["a1", "b1", "c1"], extra: string[] = [], clusterName = "jsc", withoutJetStream: string[] = []): Promise<Rig> {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  const ports: number[] = [];
  for (let i = 0; i < names.length; i++) ports.push(await freePort());
  const routes = ports.map((p) => `nats-route://127.0.0.1:${p}`).join(", ");
  const confs = names.map((n, i) => {
    const f = join(dir, `${n}.conf`);
    writeFileSync(
      f,
      [
        `server_name: ${n}`,
        "listen: 127.0.0.1:-1",
        "http: 127.0.0.1:-1",
        `server_tags: ["node:${n}"]`,
        ...(withoutJetStream.includes(n) ? [] : [`jetstream { store_dir: "${join(dir, n)}" }`]),
        ...extra,
        "cluster {",
        `  name: ${clusterName}`,
        `  listen: 127.0.0.1:${ports[i]}`,
        `  routes: [ ${routes} ]`,
        "}",
        "",
      ].join("\n"),
    );
    return f;
  });
  const procs: Array<ChildServer | null> = [];
  for (const c of confs) procs.push(await startTsnatsChild(["-c", c]));
  return { dir, names, confs, procs };
}

export function live(r: Rig): ChildServer[] {
  return r.procs.filter((p): p is ChildServer => p !== null);
}

export async function stopRig(r: Rig): Promise<void> {
  for (const p of live(r)) await p.stop();
  rmSync(r.dir, { recursive: true, force: true });
}

/** Starts the rig and waits (bound `ms`) for a meta leader every server agrees on. */
export async function startRigWithLeader(prefix: string, names?: string[], extra?: string[], ms = 30_000): Promise<Rig> {
  const rig = await startRig(prefix, names, extra);
  await until("a meta leader every server agrees on", async () => (await agreedLeader(rig)) !== "", ms);
  return rig;
}

export async function agreedLeader(r: Rig): Promise<string> {
  const ls = await Promise.all(live(r).map(metaLeader));
  return ls[0] !== "" && ls.every((l) => l === ls[0]) ? ls[0]! : "";
}

/** Publishes `<idPrefix><n>` with that msg id until stopped, retrying each until
 *  acknowledged; pausable. stop() gives the acknowledged ids. */
export function msgIdPublisher(nc: NatsConnection, subject: string, idPrefix: string) {
  const js = jetstream(nc);
  const acked = new Set<string>();
  let on = true;
  let paused = false;
  const idle: { fn: (() => void) | null } = { fn: null };
  const run = (async () => {
    for (let i = 0; on; i++) {
      while (paused && on) {
        idle.fn?.();
        await new Promise((r) => setTimeout(r, 10));
      }
      const id = `${idPrefix}${i}`;
      for (;;) {
        const ok = await js.publish(subject, id, { msgID: id, timeout: 2000 }).then(() => true, () => false);
        if (ok) break;
        if (!on) return;
        await new Promise((r) => setTimeout(r, 50));
      }
      acked.add(id);
    }
  })();
  return {
    count: () => acked.size,
    /** Resolves once no publish is in flight. */
    pause: () =>
      new Promise<void>((resolve) => {
        paused = true;
        idle.fn = () => {
          idle.fn = null;
          resolve();
        };
      }),
    resume: () => {
      paused = false;
    },
    stop: async () => {
      on = false;
      paused = false;
      await run;
      return acked;
    },
  };
}
