// The meta group's state machine and replica placement (src/jscluster/): deterministic apply,
// op codec and snapshots; nats-server's placement rules and error text.

import { test } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import { MetaState, encodeMetaOp, decodeMetaOp, type MetaOp, type StreamAssignment } from "../../src/jscluster/meta.js";
import { selectPeers, groupName, peerId, type PeerInfo } from "../../src/jscluster/placement.js";
import { SeededRandom } from "../../src/runtime/random.js";

function sa(name: string, peers: string[], subjects: string[] = [name]): StreamAssignment {
  return { config: { name, subjects, num_replicas: peers.length }, group: { name: `S-R${peers.length}F-${name}`, peers, store: "file" }, created: 1 };
}

void test("meta: streams and consumers are assigned, updated and removed; refusals change nothing", () => {
  const m = new MetaState();
  assert.equal(m.apply({ op: "assign_stream", sa: sa("ORDERS", ["a", "b", "c"]) }).kind, "stream_added");
  // The same assignment again (a retried proposal) is a no-op; another config is refused.
  assert.equal(m.apply({ op: "assign_stream", sa: sa("ORDERS", ["a", "b", "c"]) }).kind, "noop");
  const clash = m.apply({ op: "assign_stream", sa: sa("ORDERS", ["a", "b", "c"], ["other"]) });
  assert.equal(clash.kind, "error");
  assert.deepEqual(m.stream("ORDERS")!.config.subjects, ["ORDERS"]);
  const ca = { stream: "ORDERS", name: "worker", config: { durable_name: "worker" }, group: { name: "C-R3F-w", peers: ["a", "b", "c"], store: "file" as const }, created: 2 };
  assert.equal(m.apply({ op: "assign_consumer", ca }).kind, "consumer_added");
  assert.equal(m.apply({ op: "assign_consumer", ca: { ...ca, stream: "NOPE" } }).kind, "error");
  assert.deepEqual(m.consumerNames("ORDERS"), ["worker"]);
  const upd = m.apply({ op: "update_stream", sa: sa("ORDERS", ["a", "b", "c"], ["orders.>"]) });
  assert.equal(upd.kind, "stream_updated");
  assert.deepEqual(m.stream("ORDERS")!.config.subjects, ["orders.>"]);
  // The consumer survives a stream update.
  assert.ok(m.consumer("ORDERS", "worker"));
  const gone = m.apply({ op: "remove_peer", peer: "b" });
  assert.deepEqual(gone, { kind: "peer_removed", peer: "b", groups: ["S-R3F-ORDERS", "C-R3F-w"] });
  assert.deepEqual(m.stream("ORDERS")!.group.peers, ["a", "c"]);
  assert.deepEqual(m.groupsOf("a").map((g) => g.name), ["S-R3F-ORDERS", "C-R3F-w"]);
  assert.equal(m.apply({ op: "remove_consumer", stream: "ORDERS", name: "worker" }).kind, "consumer_removed");
  assert.equal(m.apply({ op: "remove_consumer", stream: "ORDERS", name: "worker" }).kind, "error");
  assert.equal(m.apply({ op: "remove_stream", stream: "ORDERS" }).kind, "stream_removed");
  assert.equal(m.apply({ op: "remove_stream", stream: "ORDERS" }).kind, "error");
  assert.equal(m.streamCount, 0);
});

const peerArb = fc.constantFrom("a", "b", "c", "d", "e");
const nameArb = fc.constantFrom("S1", "S2", "S3");
const opArb: fc.Arbitrary<MetaOp> = fc.oneof(
  fc.record({ name: nameArb, peers: fc.uniqueArray(peerArb, { minLength: 1, maxLength: 3 }), subj: fc.constantFrom("x", "y") }).map((r) => ({ op: "assign_stream" as const, sa: sa(r.name, r.peers, [r.subj]) })),
  fc.record({ name: nameArb, peers: fc.uniqueArray(peerArb, { minLength: 1, maxLength: 3 }) }).map((r) => ({ op: "update_stream" as const, sa: sa(r.name, r.peers, ["z"]) })),
  nameArb.map((name) => ({ op: "remove_stream" as const, stream: name })),
  fc.record({ s: nameArb, c: fc.constantFrom("c1", "c2"), g: fc.constantFrom("g1", "g2") }).map((r) => ({
    op: "assign_consumer" as const,
    ca: { stream: r.s, name: r.c, config: {}, group: { name: r.g, peers: ["a", "b"], store: "file" as const }, created: 0 },
  })),
  fc.record({ s: nameArb, c: fc.constantFrom("c1", "c2") }).map((r) => ({ op: "remove_consumer" as const, stream: r.s, name: r.c })),
  peerArb.map((peer) => ({ op: "remove_peer" as const, peer })),
);

void test("meta: replicas applying the same ops (through the codec) agree, and a snapshot restores the same state", () => {
  fc.assert(
    fc.property(fc.array(opArb, { maxLength: 60 }), fc.nat(60), (ops, cut) => {
      const a = new MetaState();
      const b = new MetaState();
      const changes: string[] = [];
      for (const op of ops) {
        changes.push(a.apply(structuredClone(op)).kind);
        b.apply(decodeMetaOp(encodeMetaOp(op)));
      }
      assert.deepEqual(a.snapshot(), b.snapshot());
      // A replica that restored a snapshot taken part way and applied the rest agrees too.
      const c0 = new MetaState();
      const k = Math.min(cut, ops.length);
      for (const op of ops.slice(0, k)) c0.apply(structuredClone(op));
      const c = MetaState.restore(c0.snapshot());
      for (const op of ops.slice(k)) c.apply(structuredClone(op));
      assert.deepEqual(c.snapshot(), a.snapshot());
      return changes.length === ops.length;
    }),
    { numRuns: 300 },
  );
});

void test("meta: a corrupt op is an error, never skipped", () => {
  const good = encodeMetaOp({ op: "remove_stream", stream: "X" });
  assert.throws(() => decodeMetaOp(good.subarray(0, 1)));
  const wrongType = Buffer.from(good);
  wrongType[0] = 99;
  assert.throws(() => decodeMetaOp(wrongType), /unknown type/);
  const mismatch = Buffer.from(good);
  mismatch[0] = 1;
  assert.throws(() => decodeMetaOp(mismatch), /disagree/);
  assert.throws(() => decodeMetaOp(Buffer.concat([good.subarray(0, 5), Buffer.from("}")])));
});

function peer(id: string, extra: Partial<PeerInfo> = {}): PeerInfo {
  return { id, name: id, cluster: "c1", tags: [], offline: false, maxStore: 1e12, maxMemory: 1e9, usedStore: 0, usedMemory: 0, ...extra };
}
const noLoad = { streams: new Map<string, number>(), ha: new Map<string, number>() };

void test("placement: distinct peers in the cluster, most free storage first, HA balance for replicated streams", () => {
  const rnd = new SeededRandom(1);
  const peers = [peer("a", { usedStore: 5e11 }), peer("b"), peer("c", { usedStore: 1e11 }), peer("x", { cluster: "other" })];
  const r1 = selectPeers({ replicas: 1, cluster: "c1", tags: [], storage: "file", maxBytes: 0 }, peers, noLoad, rnd);
  assert.deepEqual(r1, { ok: true, peers: ["b"] });
  const r3 = selectPeers({ replicas: 3, cluster: "c1", tags: [], storage: "file", maxBytes: 0 }, peers, noLoad, rnd);
  assert.ok(r3.ok);
  assert.deepEqual([...r3.peers].sort(), ["a", "b", "c"]);
  // Replicated: the peer with fewest HA assets goes first whatever its storage.
  const load = { streams: new Map([["b", 4]]), ha: new Map([["b", 4], ["c", 1]]) };
  const r2 = selectPeers({ replicas: 2, cluster: "c1", tags: [], storage: "file", maxBytes: 0 }, peers, load, rnd);
  assert.deepEqual(r2, { ok: true, peers: ["a", "c"] });
  // Existing peers are kept first (scale up).
  const up = selectPeers({ replicas: 3, cluster: "c1", tags: [], storage: "file", maxBytes: 0, existing: ["c"] }, peers, noLoad, rnd);
  assert.ok(up.ok && up.peers[0] === "c" && new Set(up.peers).size === 3);
  const r4 = selectPeers({ replicas: 4, cluster: "c1", tags: [], storage: "file", maxBytes: 0 }, peers, noLoad, rnd);
  assert.deepEqual(r4, { ok: false, error: "no suitable peers for placement" });
});

void test("placement: tags, exclusions, unique tags, storage and offline peers, with nats-server's error text", () => {
  const rnd = new SeededRandom(7);
  const peers = [
    peer("a", { tags: ["az:1", "ssd"] }),
    peer("b", { tags: ["az:1"] }),
    peer("c", { tags: ["az:2", "ssd"] }),
    peer("d", { tags: ["az:3", "!jetstream"] }),
  ];
  const ssd = selectPeers({ replicas: 2, cluster: "c1", tags: ["ssd"], storage: "file", maxBytes: 0 }, peers, noLoad, rnd);
  assert.ok(ssd.ok);
  assert.deepEqual([...ssd.peers].sort(), ["a", "c"]);
  const none = selectPeers({ replicas: 3, cluster: "c1", tags: ["ssd"], storage: "file", maxBytes: 0 }, peers, noLoad, rnd);
  assert.deepEqual(none, { ok: false, error: "no suitable peers for placement, exclude tag set, tags not matched ['ssd']" });
  // Case-insensitive, as nats-server's (the config lower-cases server_tags; nats.js's
  // "streams - mirrors" places by a server's tags as written, e.g. "id:2DcuyEUU...").
  const upper = selectPeers({ replicas: 2, cluster: "c1", tags: ["SSD"], storage: "file", maxBytes: 0 }, peers, noLoad, rnd);
  assert.ok(upper.ok);
  assert.deepEqual([...upper.peers].sort(), ["a", "c"]);
  const notSsd = selectPeers({ replicas: 1, cluster: "c1", tags: ["!ssd"], storage: "file", maxBytes: 0 }, peers, noLoad, rnd);
  assert.deepEqual(notSsd, { ok: true, peers: ["b"] });
  // unique_tag az: at most one replica per availability zone; b and a share az:1.
  const uniq = selectPeers({ replicas: 3, cluster: "c1", tags: [], storage: "file", maxBytes: 0, uniqueTagPrefix: "az:" }, peers, noLoad, rnd);
  assert.equal(uniq.ok, false);
  assert.match((uniq as { error: string }).error, /server tag not unique/);
  const uniq2 = selectPeers({ replicas: 2, cluster: "c1", tags: [], storage: "file", maxBytes: 0, uniqueTagPrefix: "az:" }, peers, noLoad, rnd);
  assert.ok(uniq2.ok && uniq2.peers.includes("c"));
  const big = selectPeers({ replicas: 1, cluster: "c1", tags: [], storage: "memory", maxBytes: 2e9 }, peers, noLoad, rnd);
  assert.deepEqual(big, { ok: false, error: "no suitable peers for placement, exclude tag set, insufficient storage" });
  // Two of three offline: no quorum for an R3.
  const off = [peer("a"), peer("b", { offline: true }), peer("c", { offline: true })];
  const r = selectPeers({ replicas: 3, cluster: "c1", tags: [], storage: "file", maxBytes: 0 }, off, noLoad, rnd);
  assert.deepEqual(r, { ok: false, error: "no suitable peers for placement, peer offline" });
  assert.deepEqual(selectPeers({ replicas: 1, cluster: "c1", tags: [], storage: "file", maxBytes: 0 }, [], noLoad, rnd), {
    ok: false,
    error: "no suitable peers for placement, jetstream not enabled in cluster",
  });
});

void test("group names and peer ids have nats-server's shapes; peer ids are stable and differ after a wiped disk", () => {
  const rnd = new SeededRandom(3);
  assert.match(groupName("S", 3, "file", rnd), /^S-R3F-[A-Za-z0-9]{8}$/);
  assert.match(groupName("C", 1, "memory", rnd), /^C-R1M-[A-Za-z0-9]{8}$/);
  assert.equal(peerId("n1", "uuid-1"), peerId("n1", "uuid-1"));
  assert.notEqual(peerId("n1", "uuid-1"), peerId("n1", "uuid-2"));
  assert.match(peerId("n1", "uuid-1"), /^[0-9a-z]{8}$/);
});
