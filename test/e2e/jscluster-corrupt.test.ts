// A bit flip in one server's Raft WAL (three tsnats processes, the official client): the
// server, restarted, finds a record that fails its checksum before the tail, moves the WAL
// aside and starts its groups blank (src/raft/host.ts): it neither votes nor leads until it
// re-synced from the others. Publishes go on throughout; afterwards every replica holds the
// same messages, each acked one once, and the server that was corrupt can lead the stream.

import { test } from "node:test";
import assert from "node:assert/strict";
import { readdirSync, readFileSync, writeFileSync, existsSync } from "node:fs";
import { join } from "node:path";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { jetstream, jetstreamManager, type JetStreamClient } from "@nats-io/jetstream";
import { FaultRig } from "../faults/rig.js";
import { until } from "../helpers/until.js";

/** The directory holding a server's Raft WAL (its wal-*.log files), searched under its store. */
function raftDir(root: string): string {
  const stack = [root];
  while (stack.length > 0) {
    const d = stack.pop()!;
    const ents = readdirSync(d, { withFileTypes: true });
    if (ents.some((e) => e.isFile() && /^wal-\d+\.log$/.test(e.name))) return d;
    for (const e of ents) if (e.isDirectory()) stack.push(join(d, e.name));
  }
  throw new Error(`no Raft WAL under ${root}`);
}

async function publishAll(js: JetStreamClient, from: number, to: number): Promise<void> {
  for (let i = from; i < to; i++) {
    const id = `m-${String(i).padStart(4, "0")}`;
    await until(`publish ${id}`, () => js.publish(`c.${i % 4}`, `corrupt-test-${id}`, { msgID: id, timeout: 3000 }).then(() => true, () => false), 30_000);
  }
}

void test("a bit flip in one server's Raft WAL: it sets the WAL aside, re-syncs from the others, ends identical and can lead", async () => {
  const rig = await FaultRig.start({ n: 3, net: "mesh", prefix: "tsnats-corrupt-" });
  let nc: NatsConnection | null = null;
  try {
    await rig.waitMetaLeader();
    nc = await connect({ servers: rig.urls(), noRandomize: true });
    const jsm = await jetstreamManager(nc);
    await jsm.streams.add({ name: "C", subjects: ["c.>"], num_replicas: 3 });
    const js = jetstream(nc);
    await publishAll(js, 0, 150);
    const all = [0, 1, 2];
    await rig.waitConverged("C", all);
    let leader = "";
    await until("a leader of C", async () => (leader = await rig.streamLeader("C")) !== "", 20_000);
    const v = all.find((i) => rig.nodes[i]!.name !== leader)!;
    await rig.kill(v);
    // Flip one byte inside a stored payload, in the middle of the WAL (records follow it).
    const dir = raftDir(rig.nodes[v]!.storeDir);
    const seg = readdirSync(dir).filter((n) => /^wal-\d+\.log$/.test(n)).sort()[0]!;
    const path = join(dir, seg);
    const buf = readFileSync(path);
    const at = buf.indexOf("corrupt-test-m-0075");
    assert.ok(at > 0, "the payload is in the first WAL segment");
    buf[at + 14] = buf[at + 14]! ^ 0xff;
    writeFileSync(path, buf);
    await publishAll(js, 150, 250);
    await rig.startNode(v);
    const name = rig.nodes[v]!.name;
    await until(`${name} says it re-syncs`, () => /re-syncs from its peers/.test(rig.nodes[v]!.proc!.log()), 20_000);
    assert.ok(readdirSync(dir).some((n) => n.startsWith("corrupt-") && existsSync(join(dir, n, seg))), "the corrupt WAL was kept aside");
    await publishAll(js, 250, 300);
    await rig.waitConverged("C", all, 60_000);
    // The corrupt server leads once the others step down in turn.
    await until(`${name} leads C`, async () => {
      const l = await rig.streamLeader("C");
      if (l === name) return true;
      if (l !== "") await nc!.request("$JS.API.STREAM.LEADER.STEPDOWN.C", "", { timeout: 5000 }).catch(() => undefined);
      return false;
    }, 60_000);
    await publishAll(js, 300, 320);
    await rig.waitConverged("C", all, 60_000);
    await nc.close();
    nc = null;
    for (const i of all) await rig.stopNode(i);
    const copies = [];
    for (const i of all) copies.push(await rig.readReplica(i, "C"));
    const want = Array.from({ length: 320 }, (_, i) => `corrupt-test-m-${String(i).padStart(4, "0")}`);
    for (const [k, c] of copies.entries()) {
      assert.deepEqual([...c.values()].map(([, d]) => d), want, `${rig.nodes[k]!.name}'s copy: every acked message once, in order`);
      assert.deepEqual([...c.keys()], want.map((_, j) => j + 1), `${rig.nodes[k]!.name}'s copy: at the leader's sequences`);
    }
  } catch (e) {
    process.stderr.write(rig.logs());
    throw e;
  } finally {
    await nc?.close();
    await rig.close();
  }
});

void test("a bit flip in one replica's message store: that replica sets its messages aside, re-syncs from its peers and ends identical", async () => {
  const rig = await FaultRig.start({ n: 3, net: "mesh", prefix: "tsnats-corrupt-store-" });
  let nc: NatsConnection | null = null;
  try {
    await rig.waitMetaLeader();
    nc = await connect({ servers: rig.urls(), noRandomize: true });
    const jsm = await jetstreamManager(nc);
    await jsm.streams.add({ name: "C", subjects: ["c.>"], num_replicas: 3 });
    const js = jetstream(nc);
    await publishAll(js, 0, 150);
    const all = [0, 1, 2];
    await rig.waitConverged("C", all);
    let leader = "";
    await until("a leader of C", async () => (leader = await rig.streamLeader("C")) !== "", 20_000);
    const v = all.find((i) => rig.nodes[i]!.name !== leader)!;
    await rig.stopNode(v);
    // Flip one byte of a stored payload in the replica's message blocks.
    const msgs = join(rig.nodes[v]!.storeDir, "jetstream", "$G", "streams", "C", "msgs");
    let hit = "";
    for (const f of readdirSync(msgs).filter((n) => n.endsWith(".blk")).sort()) {
      const buf = readFileSync(join(msgs, f));
      const at = buf.indexOf("corrupt-test-m-0075");
      if (at < 0) continue;
      buf[at + 14] = buf[at + 14]! ^ 0xff;
      writeFileSync(join(msgs, f), buf);
      hit = f;
      break;
    }
    assert.notEqual(hit, "", "the payload is in a block file");
    await publishAll(js, 150, 200);
    await rig.startNode(v);
    const name = rig.nodes[v]!.name;
    await until(`${name} says its store was damaged`, () => /store damaged.*re-syncs from its peers/.test(rig.nodes[v]!.proc!.log()), 20_000);
    assert.ok(existsSync(join(rig.nodes[v]!.storeDir, "jetstream", "$G", "streams", "C", "msgs.corrupt-1", hit)), "the damaged messages were kept aside");
    await publishAll(js, 200, 220);
    await rig.waitConverged("C", all, 60_000);
    await nc.close();
    nc = null;
    for (const i of all) await rig.stopNode(i);
    const want = Array.from({ length: 220 }, (_, i) => `corrupt-test-m-${String(i).padStart(4, "0")}`);
    for (const i of all) {
      const c = await rig.readReplica(i, "C");
      assert.deepEqual([...c.values()].map(([, d]) => d), want, `${rig.nodes[i]!.name}'s copy: every acked message once, in order`);
      assert.deepEqual([...c.keys()], want.map((_, k) => k + 1), `${rig.nodes[i]!.name}'s copy: at the leader's sequences`);
    }
  } catch (e) {
    process.stderr.write(rig.logs());
    throw e;
  } finally {
    await nc?.close();
    await rig.close();
  }
});
