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

/** Flip one byte of the payload `corrupt-test-m-0075` in the file; false if it is not there. */
function flipPayload(path: string): boolean {
  const buf = readFileSync(path);
  const at = buf.indexOf("corrupt-test-m-0075");
  if (at < 0) return false;
  buf[at + 14] = buf[at + 14]! ^ 0xff;
  writeFileSync(path, buf);
  return true;
}

interface Scenario {
  prefix: string;
  /** Stop the follower (SIGKILL or a clean stop). */
  kill: boolean;
  /** Damage the stopped follower's files; returns what the test checks was kept aside. */
  damage(storeDir: string): string;
  /** Its log line once it restarted. */
  says: RegExp;
  /** After it re-synced, more checks (with publishing from `next`); returns the total published. */
  after?(rig: FaultRig, nc: NatsConnection, js: JetStreamClient, v: number, next: number): Promise<number>;
}

/** An R3 stream, 150 messages, a follower stopped and damaged, 100 more, the follower back:
 *  it says why it re-syncs, keeps the damaged files aside, and every copy ends identical. */
async function corruptFollower(sc: Scenario): Promise<void> {
  const rig = await FaultRig.start({ n: 3, net: "mesh", prefix: sc.prefix });
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
    if (sc.kill) await rig.kill(v);
    else await rig.stopNode(v);
    const kept = sc.damage(rig.nodes[v]!.storeDir);
    await publishAll(js, 150, 250);
    await rig.startNode(v);
    const name = rig.nodes[v]!.name;
    await until(`${name} says why it re-syncs`, () => sc.says.test(rig.nodes[v]!.proc!.log()), 20_000);
    assert.ok(existsSync(kept), `the damaged files were kept aside (${kept})`);
    await publishAll(js, 250, 300);
    await rig.waitConverged("C", all, 60_000);
    const total = sc.after !== undefined ? await sc.after(rig, nc, js, v, 300) : 300;
    await nc.close();
    nc = null;
    for (const i of all) await rig.stopNode(i);
    const want = Array.from({ length: total }, (_, i) => `corrupt-test-m-${String(i).padStart(4, "0")}`);
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
}

void test("a bit flip in one server's Raft WAL: it sets the WAL aside, re-syncs from the others, ends identical and can lead", async () => {
  await corruptFollower({
    prefix: "tsnats-corrupt-",
    kill: true,
    damage: (storeDir) => {
      // A byte inside a stored payload, in the middle of the WAL (records follow it).
      const dir = raftDir(storeDir);
      const seg = readdirSync(dir).filter((n) => /^wal-\d+\.log$/.test(n)).sort()[0]!;
      assert.ok(flipPayload(join(dir, seg)), "the payload is in the first WAL segment");
      // quarantine() names the directory after the new segment: the next number.
      const next = Math.max(...readdirSync(dir).filter((n) => /^wal-\d+\.log$/.test(n)).map((n) => Number(n.slice(4, -4)))) + 1;
      return join(dir, `corrupt-${next}`, seg);
    },
    says: /WAL corrupt.*re-syncs from its peers/,
    after: async (rig, nc, js, v, next) => {
      // The server that was corrupt leads once the others step down in turn.
      const name = rig.nodes[v]!.name;
      await until(`${name} leads C`, async () => {
        const l = await rig.streamLeader("C");
        if (l === name) return true;
        if (l !== "") await nc.request("$JS.API.STREAM.LEADER.STEPDOWN.C", "", { timeout: 5000 }).catch(() => undefined);
        return false;
      }, 60_000);
      await publishAll(js, next, next + 20);
      await rig.waitConverged("C", [0, 1, 2], 60_000);
      return next + 20;
    },
  });
});

void test("a bit flip in one replica's message store: that replica sets its messages aside, re-syncs from its peers and ends identical", async () => {
  await corruptFollower({
    prefix: "tsnats-corrupt-store-",
    kill: false,
    damage: (storeDir) => {
      const msgs = join(storeDir, "jetstream", "$G", "streams", "C", "msgs");
      const hit = readdirSync(msgs).filter((n) => n.endsWith(".blk")).sort().find((f) => flipPayload(join(msgs, f)));
      assert.ok(hit !== undefined, "the payload is in a block file");
      return join(msgs, "..", "msgs.corrupt-1", hit);
    },
    says: /store damaged.*re-syncs from its peers/,
  });
});
