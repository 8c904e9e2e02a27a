// Mirrors and sources of a stream led elsewhere (src/jetstream/remote-source.ts): four tsnats
// servers; the origin (R1, created after its mirror) lives on n1 only, an R3 mirror and an R3 source (filtered) on
// n2..n4, so neither can read the origin's store: their leaders consume it over the cluster
// and store what they get through their Raft groups. Publishes go on while the mirror's leader
// steps down and then is SIGKILLed; afterwards every replica of the mirror holds exactly the
// origin's messages at the origin's sequences, and the source holds each filtered message
// once.

import { test } from "node:test";
import assert from "node:assert/strict";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { jetstream } from "@nats-io/jetstream";
import { FaultRig } from "../faults/rig.js";
import { until } from "../helpers/until.js";

async function req(nc: NatsConnection, subject: string, body: unknown = ""): Promise<Record<string, unknown>> {
  const r = await nc.request(subject, typeof body === "string" ? body : JSON.stringify(body), { timeout: 5000 });
  return r.json();
}

/** The leader the live servers agree on, waited for (a /jsz answer can be slow under load). */
async function leaderOf(rig: FaultRig, stream: string, not = ""): Promise<string> {
  let l = "";
  await until(`a leader of ${stream}${not !== "" ? ` other than ${not}` : ""}`, async () => {
    l = await rig.streamLeader(stream);
    return l !== "" && l !== not;
  }, 20_000);
  return l;
}

/** STREAM.LEADER.STEPDOWN until it succeeds: it is refused while no other replica was heard
 *  from lately or a transfer does not complete in time, which a loaded machine can cause. */
async function stepdown(nc: NatsConnection, stream: string): Promise<void> {
  let last: Record<string, unknown> = {};
  try {
    await until(`a stepdown of ${stream}`, async () => {
      last = await req(nc, `$JS.API.STREAM.LEADER.STEPDOWN.${stream}`).catch((e: unknown) => ({ thrown: String(e) }));
      return last["success"] === true;
    }, 30_000);
  } catch (e) {
    throw new Error(`${(e as Error).message}: last answer ${JSON.stringify(last)}`);
  }
}

async function state(nc: NatsConnection, stream: string): Promise<{ messages: number; last_seq: number }> {
  const i = await req(nc, `$JS.API.STREAM.INFO.${stream}`).catch(() => ({}) as Record<string, unknown>);
  return (i["state"] as { messages: number; last_seq: number } | undefined) ?? { messages: -1, last_seq: -1 };
}

// Once intermittent under load (2 of ~10 runs): after the SIGKILL of the copies' leader the
// source stopped short of the origin. Two causes were fixed (remote-source.ts restarting a
// feed past a gap; a copy leading again without restarting its reader from the store,
// copyEpoch); no stall since in 8 loaded runs and 7 clean-clone CIs.
void test("mirror and source (R3) of an origin held on another server: consumed over the cluster, through leader changes and a SIGKILL", async (t) => {
  const rig = await FaultRig.start({ n: 4, net: "mesh", prefix: "tsnats-mirror-", tags: (i) => [i === 0 ? "role:origin" : "role:copy"] });
  let nc: NatsConnection | null = null;
  try {
    await rig.waitMetaLeader();
    nc = await connect({ servers: rig.urls(), noRandomize: true });
    // The mirror first: its origin does not exist yet, and its leader keeps trying.
    const m = await req(nc, "$JS.API.STREAM.CREATE.MIRROR", { name: "MIRROR", num_replicas: 3, mirror: { name: "ORIGIN" }, placement: { tags: ["role:copy"] } });
    assert.equal(m["error"], undefined, JSON.stringify(m));
    const o = await req(nc, "$JS.API.STREAM.CREATE.ORIGIN", { name: "ORIGIN", subjects: ["o.>"], num_replicas: 1, placement: { tags: ["role:origin"] } });
    assert.equal(o["error"], undefined, JSON.stringify(o));
    const s = await req(nc, "$JS.API.STREAM.CREATE.SRC", { name: "SRC", subjects: ["src.>"], num_replicas: 3, sources: [{ name: "ORIGIN", filter_subject: "o.a" }], placement: { tags: ["role:copy"] } });
    assert.equal(s["error"], undefined, JSON.stringify(s));
    const js = jetstream(nc);
    let n = 0;
    const publish = async (k: number): Promise<void> => {
      for (let i = 0; i < k; i++, n++) {
        await until("a publish to ORIGIN", () => js.publish(n % 2 === 0 ? "o.a" : "o.b", `m${n}`, { msgID: `m${n}` }).then(() => true, () => false));
      }
    };
    await publish(40);
    await until("the mirror has the origin's 40 messages", async () => (await state(nc!, "MIRROR")).last_seq === 40, 20_000);
    await until("the source has the 20 on o.a", async () => (await state(nc!, "SRC")).messages === 20, 20_000);

    // A stepdown of the mirror and of the source: the new leaders go on from their stores.
    const ml = await leaderOf(rig, "MIRROR");
    await stepdown(nc, "MIRROR");
    await stepdown(nc, "SRC");
    await leaderOf(rig, "MIRROR", ml);
    await publish(40);
    await until("the mirror has 80", async () => (await state(nc!, "MIRROR")).last_seq === 80, 20_000);

    // SIGKILL of the mirror's leader while publishes go on; it comes back as a follower.
    const ml2 = await leaderOf(rig, "MIRROR");
    const ki = rig.index(ml2);
    await rig.kill(ki);
    await publish(40);
    await rig.startNode(ki);
    await until("the mirror has 120", async () => (await state(nc!, "MIRROR")).last_seq === 120, 30_000);
    await until("the source has the 60 on o.a", async () => (await state(nc!, "SRC")).messages === 60, 30_000);
    // Right after the restart an INFO may meet an election (an error answer): ask until one answers.
    let info: Record<string, unknown> = {};
    await until("a STREAM.INFO answer for MIRROR", async () => {
      info = await req(nc!, "$JS.API.STREAM.INFO.MIRROR").catch(() => ({ error: "no answer" }));
      return info["error"] === undefined;
    }, 20_000);
    const mi = info["mirror"] as { name: string; lag: number };
    assert.equal(mi.name, "ORIGIN");
    t.diagnostic(`mirror info: ${JSON.stringify(mi)}`);

    const copies = [1, 2, 3];
    await rig.waitConverged("MIRROR", copies);
    await rig.waitConverged("SRC", copies);
    await nc.close();
    nc = null;
    for (let i = 0; i < 4; i++) await rig.stopNode(i);
    const origin = await rig.readReplica(0, "ORIGIN");
    assert.equal(origin.size, 120);
    for (const i of copies) {
      const mir = await rig.readReplica(i, "MIRROR");
      assert.deepEqual([...mir.entries()], [...origin.entries()], `${rig.nodes[i]!.name}'s mirror copy is the origin`);
      const src = await rig.readReplica(i, "SRC");
      const vals = [...src.values()].map(([subj, d]) => `${subj} ${d}`);
      const want = [...origin.values()].filter(([subj]) => subj === "o.a").map(([subj, d]) => `${subj} ${d}`);
      assert.deepEqual(vals, want, `${rig.nodes[i]!.name}'s source copy`);
    }
  } catch (e) {
    process.stderr.write(rig.logs());
    throw e;
  } finally {
    await nc?.close();
    await rig.close();
  }
});

void test("mirror (R3) of an R3 origin on the same servers: only the mirror's leader copies, through its Raft group; replicas identical after a stepdown", async () => {
  const rig = await FaultRig.start({ n: 3, net: "mesh", prefix: "tsnats-mirror-local-" });
  let nc: NatsConnection | null = null;
  try {
    await rig.waitMetaLeader();
    nc = await connect({ servers: rig.urls(), noRandomize: true });
    const o = await req(nc, "$JS.API.STREAM.CREATE.ORIGIN", { name: "ORIGIN", subjects: ["o.>"], num_replicas: 3 });
    assert.equal(o["error"], undefined, JSON.stringify(o));
    const m = await req(nc, "$JS.API.STREAM.CREATE.MIRROR", { name: "MIRROR", num_replicas: 3, mirror: { name: "ORIGIN" } });
    assert.equal(m["error"], undefined, JSON.stringify(m));
    const js = jetstream(nc);
    let n = 0;
    const publish = async (k: number): Promise<void> => {
      for (let i = 0; i < k; i++, n++) await until("a publish to ORIGIN", () => js.publish(`o.${n % 3}`, `m${n}`, { msgID: `m${n}` }).then(() => true, () => false));
    };
    await publish(30);
    await until("the mirror has 30", async () => (await state(nc!, "MIRROR")).last_seq === 30, 20_000);
    // Clustered STREAM.INFO names the stream and its mirrors (nats-server's alternates).
    const alts = (await req(nc, "$JS.API.STREAM.INFO.ORIGIN"))["alternates"] as Array<{ name: string; cluster: string }> | undefined;
    assert.deepEqual(alts, [{ name: "ORIGIN", cluster: "faults" }, { name: "MIRROR", cluster: "faults" }]);
    assert.equal((await req(nc, "$JS.API.STREAM.INFO.MIRROR"))["alternates"], undefined, "a stream nothing mirrors has none");
    await stepdown(nc, "MIRROR");
    await publish(30);
    await until("the mirror has 60", async () => (await state(nc!, "MIRROR")).last_seq === 60, 20_000);
    const all = [0, 1, 2];
    await rig.waitConverged("MIRROR", all);
    await rig.waitConverged("ORIGIN", all);
    await nc.close();
    nc = null;
    for (const i of all) await rig.stopNode(i);
    const origin = await rig.readReplica(0, "ORIGIN");
    assert.equal(origin.size, 60);
    for (const i of all) assert.deepEqual([...(await rig.readReplica(i, "MIRROR")).entries()], [...origin.entries()], `${rig.nodes[i]!.name}'s mirror copy`);
  } catch (e) {
    process.stderr.write(rig.logs());
    throw e;
  } finally {
    await nc?.close();
    await rig.close();
  }
});
