// RaftHost on three servers: an in-memory transport carrying binary frames (codec.ts), a real
// WAL in a temp directory each, a manual clock for ticks. Elects, commits, survives restart
// from the WAL and snapshots; plus codec round trips.
import { test } from "node:test";
import assert from "node:assert/strict";
import { Cluster, IDS, withTempCluster } from "../helpers/raft-cluster.js";
import { decodeMessage, encodeMessage } from "../../src/raft/codec.js";
import { EntryType, MsgType, Role, emptyMessage } from "../../src/raft/types.js";
import { SimFs } from "../helpers/simfs.js";
import { SeededRandom } from "../../src/runtime/random.js";

const enc = new TextEncoder();

void test("codec: every message field round-trips; malformed frames are refused", () => {
  const m = emptyMessage(MsgType.App, "s1", "s2", 7);
  m.logTerm = 6;
  m.index = 2 ** 40;
  m.commit = 99;
  m.reject = true;
  m.rejectHint = 5;
  m.context = enc.encode("ctx");
  m.entries = [
    { term: 7, index: 2 ** 40 + 1, type: EntryType.Normal, data: enc.encode("hello") },
    { term: 7, index: 2 ** 40 + 2, type: EntryType.Noop, data: new Uint8Array(0) },
  ];
  m.snapshot = { index: 10, term: 3, voters: IDS, data: enc.encode("snap") };
  const f = encodeMessage("S-R3F-xyz", m);
  const d = decodeMessage(f);
  assert.ok(!(d instanceof Error));
  assert.equal(d.group, "S-R3F-xyz");
  assert.deepEqual(d.msg, m);
  const plain = emptyMessage(MsgType.Heartbeat, "a", "b", 1);
  assert.deepEqual((decodeMessage(encodeMessage("g", plain)) as { msg: unknown }).msg, plain);
  for (let cut = 0; cut < f.length; cut += 7) assert.ok(decodeMessage(f.subarray(0, cut)) instanceof Error, `cut at ${cut}`);
  const bad = Buffer.from(f);
  bad[1] = 99;
  assert.ok(decodeMessage(bad) instanceof Error);
});

void test("codec: random and mutated frames never throw", () => {
  const rnd = new SeededRandom(5);
  const m = emptyMessage(MsgType.App, "s1", "s2", 3);
  m.entries = [{ term: 3, index: 9, type: EntryType.Normal, data: enc.encode("abc") }];
  m.context = enc.encode("c");
  const good = encodeMessage("g", m);
  for (let i = 0; i < 5000; i++) {
    let f: Uint8Array;
    if (i % 2 === 0) {
      f = new Uint8Array(rnd.int(80));
      for (let k = 0; k < f.length; k++) f[k] = rnd.int(256);
      f[0] = 1;
    } else {
      f = Uint8Array.from(good);
      for (let k = 0; k < 3; k++) f[rnd.int(f.length)] = rnd.int(256);
    }
    const d = decodeMessage(f);
    if (!(d instanceof Error)) assert.equal(typeof d.group, "string");
  }
});

void test("host: three servers elect a leader per group, commit proposals, and recover from the WAL", async () => {
  await withTempCluster("raft-host-", ["meta", "S-R3F-a"], async (c) => {
    await c.until("leaders", () => c.leader("meta") !== undefined && c.leader("S-R3F-a") !== undefined);
    const values = Array.from({ length: 200 }, (_, i) => `m${i}`);
    await c.proposeAll("S-R3F-a", values);
    await c.proposeAll("meta", ["assign"]);
    const l = c.leader("S-R3F-a")!;
    for (const id of IDS) assert.deepEqual([...c.app(id, "S-R3F-a").items].sort(), [...values].sort());
    for (const id of IDS) assert.deepEqual(c.app(id, "S-R3F-a").items, c.app(l, "S-R3F-a").items, "same order everywhere");
    // Group commit: far fewer fsyncs than entries written.
    const w = c.hosts.get(l)!.wal.stats;
    assert.ok(w.fsyncs < w.records, `fsyncs ${w.fsyncs} records ${w.records}`);

    // Every server restarts from its WAL: the state machines are rebuilt from the log.
    for (const id of IDS) c.stop(id);
    for (const id of IDS) c.start(id);
    await c.until("reapplied", () => IDS.every((id) => c.app(id, "S-R3F-a").items.length === 200));
    await c.proposeAll("S-R3F-a", ["after"]);
    for (const id of IDS) assert.equal(c.app(id, "S-R3F-a").items.length, 201);
    for (const id of IDS) assert.equal(c.app(id, "meta").items.length, 1);
  });
});

void test("host: snapshots compact the WAL; a server that was down catches up by snapshot", async () => {
  await withTempCluster("raft-host-", ["g"], async (c) => {
    await c.until("leader", () => c.leader("g") !== undefined);
    const l = c.leader("g")!;
    const lagger = IDS.find((id) => id !== l)!;
    c.stop(lagger);
    const big = "x".repeat(500);
    const others = IDS.filter((id) => id !== lagger);
    // Two rounds, so that the second round's WAL write starts a new segment (a segment
    // rotates at a write once it is past segmentBytes).
    const values = Array.from({ length: 100 }, (_, i) => `${i}:${big}`);
    await c.proposeAll("g", values.slice(0, 50));
    await c.proposeAll("g", values);
    const l2 = c.leader("g")!;
    const lh = c.hosts.get(l2)!;
    const segsBefore = lh.wal.segmentNames().length;
    assert.ok(segsBefore > 1);
    for (const id of others) c.hosts.get(id)!.snapshot("g");
    await c.until("segments released", () => lh.wal.segmentNames().length < segsBefore);
    assert.ok(lh.node("g")!.log.firstIndex() > 100);
    // The lagging server comes back and is below the leader's log start: snapshot install.
    c.start(lagger);
    await c.until("lagger caught up", () => c.app(lagger, "g").items.length === 100);
    assert.equal(c.app(lagger, "g").restored, 1);
    // And a restart of the leader restores from its snapshot file, then the log after it.
    c.stop(l2);
    c.start(l2);
    assert.equal(c.app(l2, "g").restored, 1);
    await c.until("leader restored", () => c.app(l2, "g").items.length === 100);
  });
});

void test("host: power loss on all three servers (unsynced writes lost or torn) loses nothing acknowledged", async () => {
  const sims = new Map(IDS.map((id) => [id, new SimFs()]));
  const c = new Cluster("/data", ["S-R3F-p"], (id) => sims.get(id)!);
  const acked = new Set<string>();
  // A publish is acknowledged once applied on the server that proposed it (its leader).
  const proposedBy = new Map<string, string>();
  c.onApply = (id, _g, v) => {
    if (proposedBy.get(v) === id) acked.add(v);
  };
  const rnd = new SeededRandom(99);
  let next = 0;
  try {
    for (let round = 0; round < 4; round++) {
      await c.until("leader", () => c.leader("S-R3F-p") !== undefined);
      // Keep proposing while time runs, so the power cut lands in the middle of writes.
      const steps = 50 + rnd.int(150);
      for (let i = 0; i < steps; i++) {
        const l = c.leader("S-R3F-p");
        if (l !== undefined) {
          for (let k = 0; k < 3; k++) {
            const v = `v${next++}`;
            try {
              c.hosts.get(l)!.propose("S-R3F-p", enc.encode(v));
              proposedBy.set(v, l);
            } catch {
              // not leader any more: the client would retry elsewhere
            }
          }
        }
        c.clock.advance(10);
        await new Promise((r) => setImmediate(r));
      }
      for (const id of IDS) {
        const h = c.hosts.get(id)!;
        assert.ok(h.wal.stats.fsyncs <= h.stats.walSyncs, "at most one WAL fsync per processing turn");
      }
      assert.ok(acked.size > 0, "some publishes were acknowledged before the cut");
      for (const id of IDS) {
        sims.get(id)!.crash({ tear: rnd.next() < 0.7, random: () => rnd.next() });
        c.stop(id);
      }
      for (const id of IDS) c.start(id);
      await c.until("every acked publish is back on every server", () =>
        IDS.every((id) => [...acked].every((v) => c.app(id, "S-R3F-p").items.includes(v))),
      );
      for (const id of IDS) assert.equal(c.hosts.get(id)!.node("S-R3F-p")!.failed, null, `${id} recovered cleanly`);
    }
    // The three state machines agree.
    await c.until("converged", () => IDS.every((id) => c.app(id, "S-R3F-p").items.length === c.app("s1", "S-R3F-p").items.length));
    for (const id of IDS) assert.deepEqual(c.app(id, "S-R3F-p").items, c.app("s1", "S-R3F-p").items);
  } finally {
    c.close();
  }
});

void test("host: a bit flip in a synced WAL record: that server sets its WAL aside, neither votes nor leads until it re-synced from the others, then takes part again", async () => {
  const sims = new Map(IDS.map((id) => [id, new SimFs()]));
  const c = new Cluster("/data", ["g", "h"], (id) => sims.get(id)!);
  try {
    await c.proposeAll("g", ["a", "b", "c", "d"]);
    await c.proposeAll("h", ["x"]);
    const victim = IDS.find((id) => c.leader("g") !== id)!;
    const healthy = IDS.filter((id) => id !== victim);
    c.stop(victim);
    const dir = `/data/${victim}`;
    const seg = sims.get(victim)!.readdir(dir).filter((n) => n.startsWith("wal-")).sort()[0]!;
    // A byte in the middle of the first segment, with records after it: corruption, not a tail.
    sims.get(victim)!.corrupt(`${dir}/${seg}`, 40);
    await c.proposeAll("g", ["e"], healthy);
    // The victim comes back while only one healthy server runs: it must not help elect
    // anyone (it may have voted in a term it no longer remembers), so there is no leader.
    // (The leader stopped: a leader still running would simply go on with the victim as a
    // follower, which is safe: its acknowledgements are of entries it now holds.)
    const h2 = c.leader("g")!;
    const h1 = healthy.find((id) => id !== h2)!;
    c.stop(h2);
    c.start(victim);
    const vh = c.hosts.get(victim)!;
    assert.notEqual(vh.quarantined, "", "the corrupt segments were moved aside");
    assert.ok(sims.get(victim)!.readdir(vh.quarantined).includes(seg));
    for (const g of ["g", "h"]) {
      const st = vh.node(g)!.status();
      assert.equal(st.failed, null);
      assert.equal(st.recovering, true, `${g} recovering`);
      assert.equal(st.lastIndex, 0, `${g} starts blank`);
    }
    for (let i = 0; i < 300; i++) {
      c.clock.advance(10);
      await new Promise((r) => setTimeout(r, 1));
    }
    assert.equal(c.leader("g"), undefined, "no leader with one healthy server and a recovering one");
    assert.equal(c.hosts.get(h1)!.node("g")!.role !== Role.Leader, true);
    // The second healthy server back: a leader, the victim catches up and takes part again.
    c.start(h2);
    await c.proposeAll("g", ["f"]);
    await c.until("the victim caught up", () => !vh.node("g")!.recovering && !vh.node("h")!.recovering);
    assert.deepEqual(c.app(victim, "g").items, c.app(h1, "g").items);
    assert.deepEqual(c.app(victim, "h").items, ["x"]);
    // It can lead again.
    const l = c.leader("g")!;
    if (l !== victim) c.hosts.get(l)!.transferLeader("g", victim);
    await c.until("the victim leads g", () => c.leader("g") === victim);
    await c.proposeAll("g", ["g1"]);
    // Restarted once more, it recovers from its new WAL cleanly (the reset was durable).
    c.stop(victim);
    c.start(victim);
    const again = c.hosts.get(victim)!;
    assert.equal(again.quarantined, "");
    assert.equal(again.node("g")!.recovering, false);
    await c.proposeAll("g", ["g2"]);
    assert.deepEqual(c.app(victim, "g").items, c.app(h1, "g").items);
  } finally {
    c.close();
  }
});

void test("host: an unreadable snapshot file: that group alone re-syncs (file kept aside), the others recover from the WAL", async () => {
  const sims = new Map(IDS.map((id) => [id, new SimFs()]));
  const c = new Cluster("/data", ["g", "h"], (id) => sims.get(id)!);
  try {
    await c.proposeAll("g", ["a", "b"]);
    await c.proposeAll("h", ["x"]);
    const victim = IDS.find((id) => c.leader("g") !== id)!;
    c.hosts.get(victim)!.snapshot("g");
    await c.proposeAll("g", ["c"]);
    c.stop(victim);
    const dir = `/data/${victim}`;
    const snap = sims.get(victim)!.readdir(dir).find((n) => n.startsWith("snap-"))!;
    sims.get(victim)!.corrupt(`${dir}/${snap}`, 30);
    c.start(victim);
    const vh = c.hosts.get(victim)!;
    assert.equal(vh.quarantined, "");
    assert.equal(vh.node("g")!.recovering, true);
    assert.equal(vh.node("h")!.recovering, false, "the other group recovered from the WAL");
    assert.ok(sims.get(victim)!.readdir(dir).includes(`${snap}.corrupt`));
    await c.proposeAll("g", ["d"]);
    await c.until("g re-synced", () => !vh.node("g")!.recovering);
    assert.deepEqual(c.app(victim, "g").items, ["a", "b", "c", "d"]);
    // One more entry: its fsync also makes the "caught up" record durable.
    await c.proposeAll("g", ["e"]);
    c.stop(victim);
    c.start(victim);
    assert.equal(c.hosts.get(victim)!.node("g")!.recovering, false, "the reset was durable: a clean recovery now");
  } finally {
    c.close();
  }
});

void test("host: over its WAL budget, the groups whose entries keep the oldest segment snapshot, the segment goes, and a restart recovers from snapshot plus log", async () => {
  const budget = 48 * 1024;
  await withTempCluster("raft-budget-", ["g", "h"], async (c) => {
    const pad = "x".repeat(500);
    await c.proposeAll("h", ["h-only"]);
    for (let k = 0; k < 8; k++) await c.proposeAll("g", Array.from({ length: 25 }, (_, i) => `${k}-${i}-${pad}`));
    // 200 entries of ~0.5 KiB in 16 KiB segments: well past the budget without snapshots.
    await c.until("every WAL back within its budget (plus the live segment)", () =>
      IDS.every((id) => c.hosts.get(id)!.wal.totalBytes() <= budget + 16 * 1024),
    );
    for (const id of IDS) {
      const h = c.hosts.get(id)!;
      assert.ok(h.forcedSnapshots > 0, `${id} forced snapshots`);
      assert.notEqual(h.node("g")!.snapshot, null, `${id} snapshotted g`);
    }
    const victim = IDS.find((id) => c.leader("g") !== id)!;
    c.stop(victim);
    c.start(victim);
    await c.proposeAll("g", ["after"]);
    assert.deepEqual(c.app(victim, "g").items, c.app(c.leader("g")!, "g").items);
    assert.deepEqual(c.app(victim, "h").items, ["h-only"]);
  }, budget);
});

void test("host: a deleted group's WAL records no longer keep segments, and it is gone after a restart", async () => {
  await withTempCluster("raft-delete-", ["g", "gone"], async (c) => {
    const pad = "y".repeat(500);
    await c.proposeAll("gone", Array.from({ length: 60 }, (_, i) => `${i}-${pad}`));
    for (const id of IDS) c.hosts.get(id)!.deleteGroup("gone");
    for (let k = 0; k < 4; k++) await c.proposeAll("g", Array.from({ length: 20 }, (_, i) => `${k}-${i}-${pad}`));
    for (const id of IDS) c.hosts.get(id)!.snapshot("g");
    await c.until("the old segments released", () => IDS.every((id) => c.hosts.get(id)!.wal.segmentNames().length <= 2));
    const id = IDS[0]!;
    c.stop(id);
    c.start(id);
    assert.deepEqual(c.hosts.get(id)!.wal.recoveredGroups().get("gone")?.entries ?? [], []);
  });
});

void test("host: a route is shared fairly between groups: past a peer's per-turn share, one group's appends wait and another group's append goes first", async () => {
  await withTempCluster("raft-fair-", ["big", "small"], async (c) => {
    await c.proposeAll("big", ["b0"]);
    await c.proposeAll("small", ["s0"]);
    // Both groups led by the same server.
    const l = c.leader("big")!;
    if (c.leader("small") !== l) c.hosts.get(c.leader("small")!)!.transferLeader("small", l);
    await c.until("one leader for both groups", () => c.leader("small") === l);
    // A new leader probes each follower (one append in flight until it answers): one more
    // entry applied everywhere puts f in the replicating state for both groups, so that s1
    // below is sent at once and not after a probe answer that a loaded machine may delay
    // past the whole big backlog.
    await c.proposeAll("small", ["s0b"]);
    assert.equal(c.leader("small"), l, "the small group's leader moved while settling");
    assert.equal(c.leader("big"), l, "the big group's leader moved while settling");
    const f = IDS.find((id) => id !== l)!;
    // Record the appends f receives, in order.
    const seen: string[] = [];
    const inner = c.hub.handlers.get(f)!;
    c.hub.handlers.set(f, (from, frame) => {
      const d = decodeMessage(frame);
      if (!(d instanceof Error) && d.msg.type === MsgType.App && d.msg.entries.length > 0) seen.push(d.group);
      inner(from, frame);
    });
    const h = c.hosts.get(l)!;
    const before = h.stats.bulkDeferred;
    // Twelve 512 KiB entries in one turn (6 MiB, past the 4 MiB share), then one small one.
    const big = new Uint8Array(512 * 1024).fill(7);
    for (let i = 0; i < 12; i++) h.propose("big", big);
    h.propose("small", enc.encode("s1"));
    // Virtual time stands still while the 6 MiB are written and synced (slow on a loaded
    // machine): no election timer may fire and move leadership under the test.
    await c.until("f has both", () => c.app(f, "small").items.includes("s1") && c.app(f, "big").items.length >= 2, 20_000, 0);
    await c.until("every big entry at f", () => seen.filter((g) => g === "big").length >= 12, 20_000, 0);
    assert.ok(h.stats.bulkDeferred > before, "some appends waited for a later turn");
    const firstSmall = seen.indexOf("small");
    const lastBig = seen.lastIndexOf("big");
    assert.ok(firstSmall >= 0 && firstSmall < lastBig, `the small group's append went before the big group's backlog (${seen.join(",")})`);
  });
});

void test("host: a route with a big backlog (a slow link) gets no more appends until it drains, while heartbeats still reach it", async () => {
  await withTempCluster("raft-backlog-", ["g"], async (c) => {
    await c.proposeAll("g", ["a"]);
    const l = c.leader("g")!;
    const [f, o] = IDS.filter((id) => id !== l) as [string, string];
    const h = c.hosts.get(l)!;
    const term = h.node("g")!.term;
    const before = h.stats.bulkDeferred;
    c.hub.backlogs.set(`${l}>${f}`, 16 * 1024 * 1024);
    h.propose("g", enc.encode("x"));
    await c.until("the other follower applied x", () => c.app(o, "g").items.includes("x"));
    // Many election timeouts of virtual time: f hears heartbeats, but no append.
    for (let i = 0; i < 100; i++) {
      c.clock.advance(10);
      await new Promise((r) => setTimeout(r, 1));
    }
    assert.ok(h.stats.bulkDeferred > before, "the append to f waited");
    assert.deepEqual(c.app(f, "g").items, ["a"], "f got nothing new over the full route");
    const fn = c.hosts.get(f)!.node("g")!;
    assert.equal(fn.lead, l, "f still follows the leader (heartbeats passed)");
    assert.equal(fn.term, term, "and never campaigned");
    // The link drains: what waited goes out.
    c.hub.backlogs.delete(`${l}>${f}`);
    await c.until("f applied x", () => c.app(f, "g").items.includes("x"));
  });
});
