// Clustered JetStream's pieces that run without sockets: the FWD frame, which server a
// $JS.API request goes to (routeOf), and three MetaGroups in one process on an in-memory peer
// channel: proposeWait answers on the leader only, placement uses what each server said in
// HELLO (tags), forward() reaches the target's onForward, and a restart replays the meta log
// as not live (nobody waits for those replies).

import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Bus } from "../../src/contracts/bus.js";
import { SystemClock } from "../../src/runtime/clock.js";
import { NodeFs } from "../../src/runtime/fs.js";
import { nullLogger } from "../../src/runtime/log.js";
import { SeededRandom } from "../../src/runtime/random.js";
import { systemScheduler } from "../../src/runtime/sched.js";
import { until } from "../helpers/until.js";
import { decodeForward, encodeForward, MetaGroup, type ForwardedRequest, type PeerChannel, type PeerEvents } from "../../src/jscluster/meta-group.js";
import type { MetaChange, MetaOp } from "../../src/jscluster/meta.js";
import { routeOf } from "../../src/jetstream/cluster-api.js";

void test("FWD frame: subject, reply, header, payload, hops and the local flag round-trip", () => {
  const cases: ForwardedRequest[] = [
    { subject: "$JS.API.STREAM.INFO.S", reply: "_INBOX.x.1", hdr: null, payload: Buffer.from("{}"), hops: 1, local: false },
    { subject: "$JS.API.STREAM.CREATE.ÄÖ", reply: "", hdr: Buffer.from("NATS/1.0\r\nA: b\r\n\r\n"), payload: Buffer.alloc(0), hops: 2, local: true },
    { subject: "s", reply: "r", hdr: Buffer.alloc(0), payload: Buffer.alloc(70_000, 7), hops: 0, local: false },
  ];
  for (const c of cases) assert.deepEqual(decodeForward(encodeForward(c)), c);
  const f = encodeForward(cases[0]!);
  assert.equal(decodeForward(f.subarray(0, 12)), null, "cut inside the subject");
  assert.equal(decodeForward(Buffer.from([0xf1, 0, 0, 0, 0, 0, 0, 0, 0, 0])), null, "not a FWD tag");
});

void test("routeOf: meta-level requests to the meta leader, stream-level ones to the stream's leader", () => {
  const r = (s: string): ReturnType<typeof routeOf> => routeOf(s.split("."));
  for (const s of ["INFO", "STREAM.CREATE.S", "STREAM.UPDATE.S", "STREAM.DELETE.S", "STREAM.NAMES", "STREAM.LIST"]) assert.deepEqual(r(s), { to: "meta" }, s);
  assert.deepEqual(r("STREAM.INFO.S"), { to: "stream", stream: "S" });
  assert.deepEqual(r("STREAM.PURGE.S"), { to: "stream", stream: "S" });
  assert.deepEqual(r("STREAM.MSG.GET.S"), { to: "stream", stream: "S" });
  assert.deepEqual(r("STREAM.MSG.DELETE.S"), { to: "stream", stream: "S" });
  assert.deepEqual(r("STREAM.LEADER.STEPDOWN.S"), { to: "stream", stream: "S" });
  assert.deepEqual(r("CONSUMER.CREATE.S.C.f.>"), { to: "stream", stream: "S" });
  assert.deepEqual(r("CONSUMER.DURABLE.CREATE.S.C"), { to: "stream", stream: "S" });
  assert.deepEqual(r("CONSUMER.INFO.S.C"), { to: "stream", stream: "S" });
  assert.deepEqual(r("CONSUMER.NAMES.S"), { to: "stream", stream: "S" });
  assert.deepEqual(r("CONSUMER.MSG.NEXT.S.C"), { to: "stream", stream: "S" });
  assert.deepEqual(r("CONSUMER.LEADER.STEPDOWN.S.C"), { to: "stream", stream: "S" });
  // Peer removal changes the assignment: the meta leader (nats-server answers it there).
  assert.deepEqual(r("STREAM.PEER.REMOVE.S"), { to: "meta" });
  assert.deepEqual(r("SERVER.REMOVE"), { to: "meta" });
  // Snapshots and restores stay with the server asked.
  assert.deepEqual(r("STREAM.SNAPSHOT.S"), { to: "local" });
  assert.deepEqual(r("STREAM.INFO"), { to: "local" });
});

class Net {
  readonly ends = new Map<string, PeerEvents>();
  open(name: string, ev: PeerEvents): PeerChannel {
    this.ends.set(name, ev);
    for (const [other, oev] of this.ends) {
      if (other === name) continue;
      queueMicrotask(() => {
        oev.peerUp?.(name);
        ev.peerUp?.(other);
      });
    }
    return {
      send: (peer, frame) => {
        const copy = Buffer.from(frame);
        setImmediate(() => this.ends.get(peer)?.frame(name, copy));
      },
      peers: () => [...this.ends.keys()].filter((n) => n !== name),
      close: () => {
        this.ends.delete(name);
        for (const ev2 of this.ends.values()) ev2.peerDown?.(name);
      },
    };
  }
}

const bus = {
  subscribe: (subject: string) => ({ subject, unsubscribe: () => undefined }),
  publish: () => undefined,
  hasInterest: () => false,
} as unknown as Bus;

function group(net: Net, dir: string, n: string, i: number, names: string[], snapshotEntries?: number): MetaGroup {
  return new MetaGroup({
    serverName: n,
    clusterName: () => "c1",
    clusterPort: () => 7000 + i,
    routes: names.map((_, j) => `nats-route://127.0.0.1:${7000 + j}`),
    dir: join(dir, n),
    bus,
    log: nullLogger,
    openChannel: (ev) => net.open(n, ev),
    clock: new SystemClock(),
    sched: systemScheduler,
    random: new SeededRandom(i + 1),
    fs: new NodeFs(),
    facts: { tags: [`az:${i % 2}`, `node:${n}`], maxStore: -1, maxMemory: -1 },
    tickMs: 20,
    ...(snapshotEntries !== undefined ? { snapshotEntries } : {}),
  });
}

void test("meta groups in one process: proposeWait, placement by HELLO tags, forward, replay after restart is not live", async () => {
  const dir = mkdtempSync(join(tmpdir(), "jsc-streams-unit-"));
  const net = new Net();
  const names = ["a", "b", "c"];
  const groups = names.map((n, i) => group(net, dir, n, i, names));
  const seen: Array<Array<{ op: MetaOp; change: MetaChange; live: boolean }>> = names.map(() => []);
  groups.forEach((g, i) => (g.onChange = (op, change, live) => seen[i]!.push({ op, change, live })));
  try {
    for (const g of groups) g.start();
    await until("one leader all agree on", () => groups.every((g) => g.started && g.leaderName !== "" && g.leaderName === groups[0]!.leaderName));
    const leader = groups.find((g) => g.isLeader)!;
    const follower = groups.find((g) => !g.isLeader)!;

    // Placement sees every server's tags (said in HELLO) and picks distinct servers.
    await until("the leader heard every server's facts", () => leader.placementPeers().every((p) => !p.offline && p.tags.length === 2));
    const one = leader.placeStream({ replicas: 1, storage: "file", maxBytes: 0, cluster: "", tags: ["node:c"] });
    assert.ok(one.ok);
    assert.deepEqual(one.group.peers, ["c"]);
    assert.match(one.group.name, /^S-R1F-/);
    const three = leader.placeStream({ replicas: 3, storage: "memory", maxBytes: 0, cluster: "", tags: [] });
    assert.ok(three.ok);
    assert.deepEqual([...three.group.peers].sort(), names);
    assert.equal(three.group.preferred, three.group.peers[0]);
    const az = leader.placeStream({ replicas: 2, storage: "file", maxBytes: 0, cluster: "", tags: ["az:0"] });
    assert.ok(az.ok);
    assert.deepEqual([...az.group.peers].sort(), ["a", "c"]);
    const none = leader.placeStream({ replicas: 1, storage: "file", maxBytes: 0, cluster: "", tags: ["node:zz"] });
    assert.deepEqual(none, { ok: false, error: "no suitable peers for placement, tags not matched ['node:zz']" });
    assert.equal(leader.placeStream({ replicas: 4, storage: "file", maxBytes: 0, cluster: "", tags: [] }).ok, false);
    assert.equal(leader.placeStream({ replicas: 1, storage: "file", maxBytes: 0, cluster: "other", tags: [] }).ok, false);

    // proposeWait: the leader gets the applied change; a follower cannot propose.
    const sa = { config: { name: "S1" }, group: one.group, created: 1, reply: "_INBOX.r" };
    const ch = await leader.proposeWait({ op: "assign_stream", sa }, 5000);
    assert.equal(ch?.kind, "stream_added");
    const dup = await leader.proposeWait({ op: "assign_stream", sa: { ...sa, config: { name: "S1", subjects: ["x"] } } }, 5000);
    assert.deepEqual(dup, { kind: "error", code: "stream_exists", description: "stream name already in use with a different configuration" });
    assert.equal(await follower.proposeWait({ op: "remove_stream", stream: "S1" }, 5000), null);
    await until("applied on every server, live", () => seen.every((l) => l.some((e) => e.change.kind === "stream_added" && e.live)));

    // forward(): the target's onForward gets the request as sent.
    const got: ForwardedRequest[] = [];
    leader.onForward = (_from, req) => got.push(req);
    const req: ForwardedRequest = { subject: "$JS.API.STREAM.INFO.S1", reply: "_INBOX.q", hdr: null, payload: Buffer.from("{}"), hops: 1, local: false };
    assert.equal(follower.forward(leader.serverName, req), true);
    assert.equal(follower.forward(follower.serverName, req), false, "not to itself");
    await until("forwarded", () => got.length === 1);
    assert.deepEqual(got[0], req);

    // Restart a server: the ops it applied before come back as not live.
    const ri = groups.indexOf(follower);
    follower.close();
    const again = group(net, dir, names[ri]!, ri, names);
    const replayed: Array<{ kind: string; live: boolean }> = [];
    again.onChange = (_op, change, live) => replayed.push({ kind: change.kind, live });
    groups[ri] = again;
    again.start();
    await until("the restarted server has the stream again", () => again.state.stream("S1") !== undefined, 15_000);
    assert.ok(replayed.length > 0 && replayed.every((r) => !r.live), JSON.stringify(replayed));
    // A new op after the restart is live there.
    await until("a leader", () => groups.some((g) => g.isLeader));
    const l2 = groups.find((g) => g.isLeader)!;
    assert.equal((await l2.proposeWait({ op: "remove_stream", stream: "S1" }, 5000))?.kind, "stream_removed");
    await until("the remove applied live on the restarted server", () => replayed.some((r) => r.kind === "stream_removed" && r.live));
  } finally {
    for (const g of groups) g.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

void test("meta snapshots: taken every N applied ops; a restarted server restores the state from its snapshot (onReset) and replays the rest", async () => {
  const dir = mkdtempSync(join(tmpdir(), "jsc-metasnap-"));
  const net = new Net();
  const names = ["a", "b", "c"];
  const groups = names.map((n, i) => group(net, dir, n, i, names, 5));
  try {
    for (const g of groups) g.start();
    await until("one leader all agree on", () => groups.every((g) => g.started && g.leaderName !== "" && g.leaderName === groups[0]!.leaderName));
    const leader = groups.find((g) => g.isLeader)!;
    for (let i = 0; i < 12; i++) {
      const ch = await leader.proposeWait({ op: "assign_stream", sa: { config: { name: `S${i}` }, group: { name: `S-R1F-${i}`, peers: [names[i % 3]!], store: "file" }, created: i } }, 5000);
      assert.equal(ch?.kind, "stream_added");
    }
    assert.equal((await leader.proposeWait({ op: "remove_stream", stream: "S3" }, 5000))?.kind, "stream_removed");
    await until("every server snapshotted", () => groups.every((g) => g.snapshots > 0 && g.state.streamCount === 11));
    const ri = groups.findIndex((g) => !g.isLeader);
    groups[ri]!.close();
    const again = group(net, dir, names[ri]!, ri, names, 5);
    let resets = 0;
    const replayed: boolean[] = [];
    again.onReset = () => resets++;
    again.onChange = (_op, _c, live) => replayed.push(live);
    groups[ri] = again;
    again.start();
    assert.equal(resets, 1, "restored from its snapshot at start");
    // Wait for the whole state, not a count: replay passes through 11 streams (S0..S10)
    // before it applies S11 and the removal of S3.
    const want = ["S0", "S1", "S10", "S11", "S2", "S4", "S5", "S6", "S7", "S8", "S9"];
    await until("the restarted server has the whole state", () => JSON.stringify(again.state.streamNames()) === JSON.stringify(want), 15_000);
    assert.deepEqual(again.state.streamNames(), want);
    assert.ok(replayed.every((l) => !l), "what followed the snapshot is replayed, not live");
  } finally {
    for (const g of groups) g.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
