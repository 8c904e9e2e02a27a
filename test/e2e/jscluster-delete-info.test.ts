// Right after STREAM.DELETE of an R3 stream has replied, STREAM.INFO of it to any server must
// answer nats-server's 404 / 10059 "stream not found": not the stream (a server that has not
// applied the delete yet), not another error. Likewise right after STREAM.CREATE replied,
// every server answers INFO with the stream. Three tsnats servers; the delete goes to each
// server in turn, the INFO requests to all three at once as soon as its reply is in.

import { test } from "node:test";
import assert from "node:assert/strict";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { FaultRig } from "../faults/rig.js";

async function req(nc: NatsConnection, subject: string, body: unknown = ""): Promise<Record<string, unknown>> {
  const r = await nc.request(subject, typeof body === "string" ? body : JSON.stringify(body), { timeout: 5000 });
  return r.json();
}

const ROUNDS = Number(process.env["DELETE_INFO_ROUNDS"] ?? 12);

void test("STREAM.INFO right after STREAM.CREATE / STREAM.DELETE of an R3 stream: the stream / 10059 on every server", async () => {
  const rig = await FaultRig.start({ n: 3, net: "mesh", prefix: "tsnats-delinfo-" });
  const conns: NatsConnection[] = [];
  try {
    await rig.waitMetaLeader();
    for (let i = 0; i < 3; i++) conns.push(await connect({ servers: rig.url(i) }));
    const bad: string[] = [];
    for (let k = 0; k < ROUNDS; k++) {
      const name = `DI${k}`;
      const via = conns[k % 3]!;
      const c = await req(via, `$JS.API.STREAM.CREATE.${name}`, { name, subjects: [`di${k}.>`], num_replicas: 3 });
      assert.equal(c["error"], undefined, JSON.stringify(c));
      // Right after the create replied, every server knows the stream.
      const made = await Promise.all(conns.map((nc) => req(nc, `$JS.API.STREAM.INFO.${name}`).catch((e: unknown): Record<string, unknown> => ({ thrown: String(e) }))));
      made.forEach((j, i) => {
        if ((j["config"] as { name?: string } | undefined)?.name !== name) bad.push(`round ${k} (created via ${rig.nodes[k % 3]!.name}): INFO at ${rig.nodes[i]!.name} answered ${JSON.stringify(j).slice(0, 200)}`);
      });
      for (let m = 0; m < 3; m++) {
        const a = await req(via, `di${k}.x`, `m${m}`);
        assert.equal(a["error"], undefined, JSON.stringify(a));
      }
      // Every server answers INFO with the stream before the delete.
      for (const nc of conns) assert.equal(((await req(nc, `$JS.API.STREAM.INFO.${name}`))["config"] as { name?: string } | undefined)?.name, name);
      const d = await req(via, `$JS.API.STREAM.DELETE.${name}`);
      assert.equal(d["success"], true, JSON.stringify(d));
      const infos = await Promise.all(conns.map((nc) => req(nc, `$JS.API.STREAM.INFO.${name}`).catch((e: unknown): Record<string, unknown> => ({ thrown: String(e) }))));
      infos.forEach((j, i) => {
        const err = j["error"] as { code?: number; err_code?: number } | undefined;
        if (err?.code !== 404 || err.err_code !== 10059) bad.push(`round ${k} (deleted via ${rig.nodes[k % 3]!.name}): INFO at ${rig.nodes[i]!.name} answered ${JSON.stringify(j).slice(0, 200)}`);
      });
    }
    assert.deepEqual(bad, []);
  } finally {
    for (const nc of conns) await nc.close().catch(() => undefined);
    await rig.close();
  }
});
