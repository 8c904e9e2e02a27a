// Replicated consumers (issue 18) across three tsnats processes with the official client: a
// durable of an R3 stream keeps its acks and pending deliveries through a stepdown and a
// SIGKILL of the leader (its ledger operations travel in the stream's Raft log); AckSync is
// answered after the ack committed; a waiting pull gets 409 Leadership Change; CONSUMER.INFO
// has the group's cluster block; CONSUMER.LEADER.STEPDOWN moves it; consume() goes on
// through leader changes (20 in CI, 50 with TSNATS_LEADER_CHANGES=50) with nothing lost and
// nothing acked delivered again. A last_per_subject durable resumes its first phase on a new
// stream leader (the phase's end travels with the consumer's config).

import { test } from "node:test";
import assert from "node:assert/strict";
import { connect, createInbox, type Msg, type NatsConnection } from "@nats-io/transport-node";
import { jetstream, jetstreamManager, AckPolicy, DeliverPolicy } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import { Objm } from "@nats-io/obj";
import { live, req, startRig, stopRig, agreedLeader, type Rig } from "../helpers/jscluster-rig.js";
import { until } from "../helpers/until.js";

interface ClusterBlock {
  name?: string;
  leader?: string;
  replicas?: Array<{ name: string; current: boolean }>;
}

async function streamLeader(nc: NatsConnection, stream: string): Promise<string> {
  const i = await req(nc, `$JS.API.STREAM.INFO.${stream}`).catch(() => ({}) as Record<string, unknown>);
  return (i["cluster"] as ClusterBlock | undefined)?.leader ?? "";
}

/** STREAM.LEADER.STEPDOWN asked on `ask`, then (watching on `watch`) a leader other than the
 *  one before. */
async function stepDownStream(ask: NatsConnection, watch: NatsConnection, stream: string): Promise<void> {
  const before = await streamLeader(watch, stream);
  const sd = await req(ask, `$JS.API.STREAM.LEADER.STEPDOWN.${stream}`);
  assert.equal(sd["success"], true, JSON.stringify(sd));
  await until(`the leader of ${stream} moved`, async () => {
    const l = await streamLeader(watch, stream);
    return l !== "" && l !== before;
  });
}

async function consumerInfo(nc: NatsConnection, stream: string, name: string): Promise<Record<string, unknown>> {
  return req(nc, `$JS.API.CONSUMER.INFO.${stream}.${name}`).catch(() => ({ error: "timeout" }));
}

async function connectAll(rig: Rig): Promise<NatsConnection[]> {
  const out: NatsConnection[] = [];
  for (const p of live(rig)) out.push(await connect({ servers: p.url, maxReconnectAttempts: -1 }));
  return out;
}

/** A three-server rig with a meta leader and a connection to each server; both go after fn. */
async function withRig(prefix: string, fn: (rig: Rig, ncs: NatsConnection[]) => Promise<void>): Promise<void> {
  const rig = await startRig(prefix);
  const ncs: NatsConnection[] = [];
  try {
    await until("a meta leader", async () => (await agreedLeader(rig)) !== "", 20_000);
    ncs.push(...(await connectAll(rig)));
    await fn(rig, ncs);
  } finally {
    for (const c of ncs) await c.close().catch(() => undefined);
    await stopRig(rig);
  }
}

void test("replicated durable: acks and pending survive a stepdown and a SIGKILL; AckSync after commit; 409 Leadership Change; cluster block", () =>
  withRig("jsc-cons-", async (rig, ncs) => {
    const [ncA, ncB, ncC] = ncs as [NatsConnection, NatsConnection, NatsConnection];
    const jsm = await jetstreamManager(ncA);
    await jsm.streams.add({ name: "WORK", subjects: ["work.>"], num_replicas: 3 });
    const js = jetstream(ncA);
    for (let i = 0; i < 100; i++) await js.publish("work.a", `w${i}`);
    await jsm.consumers.add("WORK", { durable_name: "worker", ack_policy: AckPolicy.Explicit, ack_wait: 2_000_000_000 });
    await jsm.consumers.add("WORK", { durable_name: "idle", ack_policy: AckPolicy.Explicit, filter_subject: "work.none" });

    // 40 acked with AckSync (answered once the ack committed), 10 delivered and left pending.
    const acked = new Set<string>();
    const worker = await jetstream(ncB).consumers.get("WORK", "worker");
    for await (const m of await worker.fetch({ max_messages: 40, expires: 5000 })) {
      assert.equal(await m.ackAck(), true);
      acked.add(m.string());
    }
    assert.equal(acked.size, 40);
    const pending: string[] = [];
    for await (const m of await worker.fetch({ max_messages: 10, expires: 5000 })) pending.push(m.string());
    assert.deepEqual(pending, Array.from({ length: 10 }, (_, i) => `w${40 + i}`));

    let info = await consumerInfo(ncC, "WORK", "worker");
    assert.equal(info["num_ack_pending"], 10, JSON.stringify(info));
    assert.equal((info["ack_floor"] as { stream_seq: number }).stream_seq, 40);
    const cl = info["cluster"] as ClusterBlock;
    const lead0 = await streamLeader(ncA, "WORK");
    assert.equal(cl.name, "jsc");
    assert.equal(cl.leader, lead0);
    assert.equal(cl.replicas?.length, 2, JSON.stringify(cl));

    // A pull waiting on the idle consumer; the stepdown ends it with 409 Leadership Change.
    const inbox = createInbox();
    const statuses: string[] = [];
    const sub = ncB.subscribe(inbox, {
      callback: (_e: Error | null, m: Msg) => {
        if (m.headers !== undefined) statuses.push(`${m.headers.code} ${m.headers.description}`);
      },
    });
    ncB.publish("$JS.API.CONSUMER.MSG.NEXT.WORK.idle", JSON.stringify({ batch: 5, expires: 30_000_000_000 }), { reply: inbox });
    await until("the pull is waiting", async () => (await consumerInfo(ncA, "WORK", "idle"))["num_waiting"] === 1);

    const sd = await req(ncC, "$JS.API.CONSUMER.LEADER.STEPDOWN.WORK.worker");
    assert.deepEqual(sd, { type: "io.nats.jetstream.api.v1.consumer_leader_stepdown_response", success: true });
    await until("a new leader", async () => {
      const l = await streamLeader(ncA, "WORK");
      return l !== "" && l !== lead0;
    });
    await until("409 Leadership Change for the waiting pull", async () => statuses.includes("409 Leadership Change"));
    sub.unsubscribe();

    // The new leader's durable: the same ack floor, the same ten pending.
    await until("worker on the new leader with its state", async () => {
      info = await consumerInfo(ncA, "WORK", "worker");
      return info["error"] === undefined && info["num_ack_pending"] === 10;
    });
    assert.equal((info["ack_floor"] as { stream_seq: number }).stream_seq, 40);
    assert.equal((info["delivered"] as { stream_seq: number }).stream_seq, 50);

    // SIGKILL of the leader: the two others go on from the same state.
    const lead1 = await streamLeader(ncA, "WORK");
    const ki = rig.names.indexOf(lead1);
    rig.procs[ki]!.proc.kill("SIGKILL");
    await rig.procs[ki]!.stop();
    rig.procs[ki] = null;
    const others = ncs.filter((_, i) => i !== ki);
    const nc = others[0]!;
    await until("a leader after the SIGKILL", async () => {
      const l = await streamLeader(nc, "WORK");
      return l !== "" && l !== lead1;
    }, 20_000);

    // Everything not acked arrives (the ten pending again after their ack wait); nothing acked.
    const seen = new Set<string>();
    const again: string[] = [];
    await until("w40..w99 all delivered after the SIGKILL", async () => {
      const c = await jetstream(nc).consumers.get("WORK", "worker").catch(() => null);
      if (c === null) return false;
      for await (const m of await c.fetch({ max_messages: 60, expires: 2500 })) {
        const s = m.string();
        if (acked.has(s)) again.push(s);
        seen.add(s);
        await m.ackAck().catch(() => false);
      }
      return seen.size === 60;
    }, 30_000);
    assert.deepEqual(again, [], "acked messages delivered again");
    for (let i = 40; i < 100; i++) assert.ok(seen.has(`w${i}`), `w${i} lost`);
  }),
);

// Issue 18 asks for 50 consumer-leader changes: TSNATS_LEADER_CHANGES=50 (about 85 s on the
// 2-core box: after each change consume() waits for two missed heartbeats of 500 ms before it
// pulls from the new leader, as against nats-server). CI runs 20 (about 35 s).
const LEADER_CHANGES = Number(process.env["TSNATS_LEADER_CHANGES"] ?? 20);

void test(`replicated durable: consume() through ${LEADER_CHANGES} consumer-leader changes while jobs are published: 0 lost, 0 acked-then-redelivered`, async (t) => {
  const rig = await startRig("jsc-cons2-");
  const ncs: NatsConnection[] = [];
  let publishing = true;
  try {
    await until("a meta leader", async () => (await agreedLeader(rig)) !== "", 20_000);
    ncs.push(...(await connectAll(rig)));
    const [ncA, ncB, ncC] = ncs as [NatsConnection, NatsConnection, NatsConnection];
    const jsm = await jetstreamManager(ncA);
    await jsm.streams.add({ name: "JOBS", subjects: ["jobs.>"], num_replicas: 3 });
    await jsm.consumers.add("JOBS", { durable_name: "w", ack_policy: AckPolicy.Explicit, ack_wait: 2_000_000_000 });
    const js = jetstream(ncA);
    /** Jobs whose PubAck came (a job is retried with its msg id until one does). */
    const stored = new Set<string>();
    const pub = (async () => {
      for (let i = 0; publishing || i < 50; i++) {
        const job = `j${i}`;
        for (;;) {
          try {
            await js.publish("jobs.x", job, { msgID: job, timeout: 2000 });
            stored.add(job);
            break;
          } catch {
            // no responders or a timeout during an election: the same msg id again
          }
        }
        // a trickle the worker keeps up with, so that leader changes land while work is in flight
        await new Promise((r) => setTimeout(r, 10));
      }
    })();

    // Judged when a message arrives (the callback form: no client-side buffer in between): a
    // job arriving after the server confirmed its ack (AckSync) was sent after that ack
    // committed (both come from the leader over the same route), which must not happen. A
    // redelivery the server sent before the ack reached it is not that, however late the
    // client gets round to it.
    const ackedOk = new Set<string>();
    const redelivered: string[] = [];
    const seen = new Set<string>();
    const c = await jetstream(ncB).consumers.get("JOBS", "w");
    const it = await c.consume({
      max_messages: 50,
      expires: 1000,
      callback: (m) => {
        const s = m.string();
        if (ackedOk.has(s)) redelivered.push(`${s} (delivery count ${m.info.deliveryCount})`);
        seen.add(s);
        void m.ackAck({ timeout: 2000 }).then(
          (ok) => ok && ackedOk.add(s),
          () => undefined,
        );
      },
    });
    let changes = 0;
    let before = "";
    await until("a stream leader", async () => (before = await streamLeader(ncC, "JOBS")) !== "", 20_000);
    while (changes < LEADER_CHANGES) {
      const r = await req(ncC, "$JS.API.CONSUMER.LEADER.STEPDOWN.JOBS.w").catch(() => ({}) as Record<string, unknown>);
      if (r["success"] !== true) continue;
      await until("the leader moved", async () => {
        const l = await streamLeader(ncC, "JOBS");
        if (l === "" || l === before) return false;
        before = l;
        return true;
      });
      changes++;
      // work goes on under each leader
      const target = ackedOk.size + 1;
      await until("a job acked under the new leader", () => ackedOk.size >= target, 20_000);
    }
    publishing = false;
    await pub;
    await until("every stored job acked", async () => [...stored].every((j) => ackedOk.has(j)), 60_000);
    it.stop();
    const lost = [...stored].filter((j) => !seen.has(j));
    t.diagnostic(`${changes} leader changes, ${stored.size} jobs stored, ${seen.size} delivered, ${lost.length} lost, ${redelivered.length} acked-then-redelivered`);
    assert.equal(changes, LEADER_CHANGES);
    assert.deepEqual(lost, [], "stored jobs never delivered");
    assert.deepEqual(redelivered, [], "acked jobs delivered again");
    const info = await consumerInfo(ncA, "JOBS", "w");
    assert.equal(info["num_ack_pending"], 0);
    assert.equal((info["ack_floor"] as { stream_seq: number }).stream_seq, stored.size);
  } finally {
    publishing = false;
    for (const c of ncs) await c.close().catch(() => undefined);
    await stopRig(rig);
  }
});

/** Stream sequences a pull consumer hands out until `want` have come (each acked; the last
 *  of each batch with AckSync, so every ack before it has committed). */
async function pullSeqs(nc: NatsConnection, stream: string, name: string, want: number, ms = 30_000): Promise<number[]> {
  const got: number[] = [];
  await until(`${want} from ${stream} > ${name}`, async () => {
    const c = await jetstream(nc).consumers.get(stream, name).catch(() => null);
    if (c === null) return false;
    const batch = await c.fetch({ max_messages: Math.min(1000, want - got.length), expires: 2000 }).catch(() => null);
    if (batch === null) return false;
    let last: { ackAck(): Promise<boolean> } | null = null;
    for await (const m of batch) {
      got.push(m.seq);
      if (last !== null) (last as unknown as { ack(): void }).ack();
      last = m;
    }
    if (last !== null) await last.ackAck().catch(() => false);
    return got.length >= want;
  }, ms);
  return got;
}

// Sequences: `a` subjects once (1..A), then `b` subjects twice (A+1..A+B, A+B+1..A+2B). The
// last-per-subject start is 1..A and A+B+1..A+2B; the first round of `b` is never delivered.
for (const [label, A, B] of [["30 subjects", 20, 10], ["4,300 subjects (the start built over turns)", 2_300, 2_000]] as const) {
  void test(`replicated last_per_subject durable over ${label}: a new stream leader resumes the first phase where it stood`, () =>
    withRig("jsc-lps-", async (_rig, ncs) => {
      const [ncA, ncB, ncC] = ncs as [NatsConnection, NatsConnection, NatsConnection];
      const jsm = await jetstreamManager(ncA);
      await jsm.streams.add({ name: "LPS", subjects: ["lps.>"], num_replicas: 3 });
      const js = jetstream(ncA);
      const acks: Array<Promise<unknown>> = [];
      for (let i = 0; i < A; i++) acks.push(js.publish(`lps.a.${i}`, "a"));
      for (let r = 0; r < 2; r++) for (let i = 0; i < B; i++) acks.push(js.publish(`lps.b.${i}`, `b${r}`));
      await Promise.all(acks);
      await jsm.consumers.add("LPS", { durable_name: "last", ack_policy: AckPolicy.Explicit, deliver_policy: DeliverPolicy.LastPerSubject, filter_subject: "lps.>", ack_wait: 30_000_000_000 });
      const after = (await js.publish("lps.after", "later")).seq;
      assert.equal(after, A + 2 * B + 1);

      const first = Math.floor(A / 2);
      const got = await pullSeqs(ncB, "LPS", "last", first);
      assert.deepEqual(got, Array.from({ length: first }, (_, i) => i + 1));

      await stepDownStream(ncC, ncA, "LPS");

      // The rest of the first phase (none of the first round of b), then the later message.
      const rest = await pullSeqs(ncB, "LPS", "last", A - first + B + 1);
      const want = [...Array.from({ length: A - first }, (_, i) => first + i + 1), ...Array.from({ length: B }, (_, i) => A + B + i + 1), after];
      assert.equal(rest.length, want.length);
      assert.deepEqual(rest, want);
      const info = await consumerInfo(ncC, "LPS", "last");
      assert.equal(info["num_pending"], 0, JSON.stringify(info));
      assert.equal((info["ack_floor"] as { stream_seq: number }).stream_seq, after);
    }),
  );
}

void test("KV and object store with 3 replicas: CAS, history and TTL from any server, a watcher through leader changes, replicas in status", async () => {
  const rig = await startRig("jsc-kv-");
  const ncs: NatsConnection[] = [];
  try {
    await until("a meta leader", async () => (await agreedLeader(rig)) !== "", 20_000);
    ncs.push(...(await connectAll(rig)));
    const [ncA, ncB, ncC] = ncs as [NatsConnection, NatsConnection, NatsConnection];
    const kvA = await new Kvm(ncA).create("orders", { replicas: 3, history: 5, ttl: 60_000 });
    const kvB = await new Kvm(ncB).open("orders");
    const kvC = await new Kvm(ncC).open("orders");
    const st = await kvC.status();
    assert.equal(st.replicas, 3);
    assert.equal(st.history, 5);
    assert.equal(st.ttl, 60_000);

    // A watcher on C sees every update, in order, through two stepdowns.
    const seenUpdates: string[] = [];
    const w = await kvC.watch({ key: "o.*" });
    const watching = (async () => {
      for await (const e of w) if (e.operation === "PUT") seenUpdates.push(`${e.key}=${e.string()}`);
    })();

    const r1 = await kvB.put("o.1", "new");
    await assert.rejects(kvA.update("o.1", "stale", r1 + 10), /wrong last sequence/);
    const r2 = await kvA.update("o.1", "paid", r1);
    assert.equal((await kvC.get("o.1"))?.string(), "paid");
    assert.equal((await kvC.get("o.1"))?.revision, r2);
    await assert.rejects(kvB.create("o.1", "again"), /wrong last sequence|key exists/);

    for (let k = 0; k < 2; k++) {
      await stepDownStream(ncB, ncA, "KV_orders");
      await until(`put ${k} after the stepdown`, () => kvA.put(`o.${k + 2}`, `v${k}`).then(() => true, () => false));
    }
    const r3 = await kvC.update("o.1", "shipped", r2);
    assert.ok(r3 > r2);
    const hist: string[] = [];
    for await (const e of await kvB.history({ key: "o.1" })) hist.push(e.string());
    assert.deepEqual(hist, ["new", "paid", "shipped"]);
    await until("the watcher saw every update", async () => seenUpdates.includes("o.1=shipped"), 40_000).catch((e: unknown) => {
      throw new Error(`${(e as Error).message}: ${seenUpdates.join(",")}`);
    });
    assert.deepEqual(
      seenUpdates.filter((u) => u.startsWith("o.1=")),
      ["o.1=new", "o.1=paid", "o.1=shipped"],
    );
    assert.ok(seenUpdates.includes("o.2=v0") && seenUpdates.includes("o.3=v1"), seenUpdates.join(","));
    w.stop();
    await watching;

    // An object store of three replicas: put on A, read on C, again after a stepdown.
    const osA = await new Objm(ncA).create("files", { replicas: 3 });
    const data = Buffer.alloc(300 * 1024);
    for (let i = 0; i < data.length; i++) data[i] = (i * 31) & 0xff;
    await osA.putBlob({ name: "blob" }, data);
    const osC = await new Objm(ncC).open("files");
    assert.ok(Buffer.from((await osC.getBlob("blob"))!).equals(data));
    assert.equal((await osC.status()).replicas, 3);
    const before = await streamLeader(ncA, "OBJ_files");
    assert.equal((await req(ncC, "$JS.API.STREAM.LEADER.STEPDOWN.OBJ_files"))["success"], true);
    await until("the object store's leader moved", async () => {
      const l = await streamLeader(ncA, "OBJ_files");
      return l !== "" && l !== before;
    });
    assert.ok(Buffer.from((await osC.getBlob("blob"))!).equals(data));
  } finally {
    for (const c of ncs) await c.close().catch(() => undefined);
    await stopRig(rig);
  }
});
