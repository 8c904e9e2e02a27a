// Range catch-up across tsnats processes, with the official client: a follower that was down
// while more than a snapshot's worth of messages were published finds the leader's log
// compacted past it, installs the stream's state-only snapshot and pulls the missing
// messages from a peer's store in chunks under a credit (stream-catchup.ts), while a
// publisher keeps going; afterwards every replica holds the same messages.

import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { jetstream } from "@nats-io/jetstream";
import { startTsnatsChild, type ChildServer } from "../helpers/core-child.js";
import { until } from "../helpers/until.js";
import { freePort } from "../faults/rig.js";

function monPort(s: ChildServer): number {
  return Number(/Starting https? monitor on [^\s]*:(\d+)/.exec(s.log())![1]);
}

async function getJson(s: ChildServer, path: string): Promise<{ status: number; body: Record<string, unknown> }> {
  try {
    const r = await fetch(`http://127.0.0.1:${monPort(s)}${path}`, { signal: AbortSignal.timeout(2000) });
    return { status: r.status, body: (await r.json()) as Record<string, unknown> };
  } catch {
    return { status: 0, body: {} };
  }
}

async function req(nc: NatsConnection, subject: string, body: unknown = ""): Promise<Record<string, unknown>> {
  const r = await nc.request(subject, typeof body === "string" ? body : JSON.stringify(body), { timeout: 8000 });
  return r.json();
}

interface StreamInfo {
  leader: string;
  messages: number;
  lastSeq: number;
}

async function info(nc: NatsConnection, stream: string): Promise<StreamInfo> {
  const i = await req(nc, `$JS.API.STREAM.INFO.${stream}`);
  const st = (i["state"] ?? {}) as { messages?: number; last_seq?: number };
  return { leader: ((i["cluster"] ?? {}) as { leader?: string }).leader ?? "", messages: st.messages ?? -1, lastSeq: st.last_seq ?? -1 };
}

void test("catch-up: a follower behind the leader's snapshot pulls the range in chunks while publishes go on; every replica ends the same", async () => {
  const dir = mkdtempSync(join(tmpdir(), "tsnats-cu-"));
  const names = ["cu1", "cu2", "cu3"];
  const ports = [await freePort(), await freePort(), await freePort()];
  const routes = ports.map((p) => `nats-route://127.0.0.1:${p}`).join(", ");
  const confs = names.map((n, i) => {
    const f = join(dir, `${n}.conf`);
    writeFileSync(f, [`server_name: ${n}`, "listen: 127.0.0.1:-1", "http: 127.0.0.1:-1", `jetstream { store_dir: "${join(dir, n)}" }`, "cluster {", "  name: cu", `  listen: 127.0.0.1:${ports[i]}`, `  routes: [ ${routes} ]`, "}", ""].join("\n"));
    return f;
  });
  const procs: Array<ChildServer | null> = await Promise.all(confs.map((c) => startTsnatsChild(["-c", c])));
  const ncs: NatsConnection[] = [];
  try {
    for (const p of procs) ncs.push(await connect({ servers: p!.url }));
    await until("the stream created", async () => {
      const r = await req(ncs[0]!, "$JS.API.STREAM.CREATE.CU", { name: "CU", subjects: ["cu.>"], num_replicas: 3, storage: "file" }).catch(() => ({ error: "timeout" }));
      return r["error"] === undefined;
    }, 30_000);
    let si = await info(ncs[0]!, "CU");
    await until("a stream leader", async () => (si = await info(ncs[0]!, "CU")).leader !== "", 30_000);
    const li = names.indexOf(si.leader);
    const fi = (li + 1) % 3;
    await ncs[fi]!.close();
    await procs[fi]!.stop();
    procs[fi] = null;
    // More than the 64 MiB of log after which a stream group snapshots and compacts.
    const js = jetstream(ncs[li]!);
    const big = new Uint8Array(16 * 1024).fill(120);
    for (let i = 0; i < 4400; i += 50) {
      const acks = [];
      for (let k = i; k < i + 50; k++) acks.push(js.publish(`cu.big.${k % 7}`, big));
      await Promise.all(acks);
    }
    // A publisher that keeps going while the follower catches up.
    let on = true;
    let acked = 0;
    const pub = (async () => {
      for (let i = 0; on; i++) {
        const ok = await js.publish("cu.small", `s${i}`, { msgID: `s${i}`, timeout: 5000 }).then(
          () => true,
          () => false,
        );
        if (ok) acked++;
      }
    })();
    procs[fi] = await startTsnatsChild(["-c", confs[fi]!]);
    const f = procs[fi]!;
    await until("the restarted replica caught up (/healthz)", async () => (await getJson(f, "/healthz")).status === 200, 90_000);
    await until("publishes went on during and after the catch-up", () => acked >= 50, 30_000);
    assert.match(f.log(), /stream group \S+: caught up from cu\d to index \d+ \(last sequence \d+, \d+ chunks so far\)/, "it caught up by range catch-up");
    on = false;
    await pub;
    const want = await info(ncs[li]!, "CU");
    assert.ok(want.messages >= 4400 + 50, `${want.messages} messages`);
    await until("every replica holds every message", async () => {
      const js2 = await Promise.all(procs.map((p) => getJson(p!, "/jsz")));
      return js2.every((j) => j.body["messages"] === want.messages && j.body["bytes"] === js2[li]!.body["bytes"]);
    }, 30_000);
  } finally {
    for (const c of ncs) await c.close().catch(() => undefined);
    for (const p of procs) if (p !== null) await p.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});
