// Membership of a replicated stream's group (STREAM.PEER.REMOVE, SERVER.REMOVE): the meta
// group assigns new members to every replica (StreamGroup.setPeers); the leader changes the
// Raft voters one server at a time; the new server catches up (by the log, or a snapshot plus
// range catch-up); publishes go on and no acknowledged one is lost; a leader that is removed
// hands leadership over without an election timeout.
import { test } from "node:test";
import assert from "node:assert/strict";
import { StreamCluster } from "../helpers/streamcluster.js";

const sorted = (a: readonly string[]): string[] => [...a].sort();

for (const storage of ["file", "memory"] as const) {
  void test(`stream group members (${storage}): a follower replaced by a new server while publishes go on`, async () => {
    const c = new StreamCluster({ n: 4, storage, members: ["n1", "n2", "n3"], snapshotEntries: 16 });
    await c.startAll();
    try {
      const l = await c.leader();
      for (let i = 0; i < 40; i++) c.pub(l.id, `r.${i % 3}`, `a${i}`, `a${i}`);
      await c.until(() => l.acks.size === 40, "40 acks");
      const gone = ["n1", "n2", "n3"].find((id) => id !== l.id)!;
      const target = ["n1", "n2", "n3", "n4"].filter((id) => id !== gone);
      // The meta op applies on every server: the removed one leaves (a follower: once the
      // leader stopped replicating to it, bounded).
      for (const id of ["n1", "n2", "n3"]) c.node(id).group.setPeers(target);
      let left = false;
      void c.node(gone).group.leave(1000).then(() => (left = true));
      await c.until(() => left, "the removed follower left");
      await c.stop(gone);
      await c.start("n4", target);
      for (let i = 0; i < 40; i++) c.pub(l.id, `r.${i % 3}`, `b${i}`, `b${i}`);
      await c.until(() => sorted(l.group.voters).join() === sorted(target).join(), "the voters are the new members");
      await c.until(() => l.acks.size === 80, "80 acks");
      await c.until(() => c.contents("n4").size === 80, "n4 caught up");
      for (const id of target) assert.deepEqual(c.contents(id), c.contents(l.id), `${id} holds what the leader holds`);
      // Acked publishes are all there, in order.
      const vals = [...c.contents("n4").values()].map((v) => v.split("|")[1]);
      assert.deepEqual(vals.slice(0, 40), Array.from({ length: 40 }, (_, i) => `a${i}`));
      // The group survives the loss of one of the new members: n4 counts.
      const other = target.find((id) => id !== l.id && id !== "n4")!;
      await c.stop(other);
      c.pub(l.id, "r.z", "z", "z");
      await c.until(() => l.acks.has("z"), "a publish commits with the leader and n4");
      assert.equal(c.node(l.id).group.clusterInfo()["replicas"] !== undefined, true);
    } finally {
      await c.stopAll();
    }
  });
}

void test("stream group members: removing the leader hands leadership over (TimeoutNow), the new leader adds the replacement", async () => {
  const c = new StreamCluster({ n: 4, storage: "file", members: ["n1", "n2", "n3"] });
  await c.startAll();
  try {
    const l = await c.leader();
    for (let i = 0; i < 20; i++) c.pub(l.id, "r.a", `a${i}`, `a${i}`);
    await c.until(() => l.acks.size === 20, "20 acks");
    const target = ["n1", "n2", "n3", "n4"].filter((id) => id !== l.id);
    await c.start("n4", target);
    for (const id of ["n1", "n2", "n3"]) c.node(id).group.setPeers(target);
    let left = false;
    void c.node(l.id).group.leave(5000).then(() => (left = true));
    // Few ticks: leadership moves by TimeoutNow once the removal committed, not by an
    // election timeout (10-20 ticks) after the leader went silent.
    await c.until(() => left, "the old leader left", 200);
    await c.stop(l.id);
    const l2 = await c.leader(l.id);
    await c.until(() => sorted(l2.group.voters).join() === sorted(target).join(), "voters are the new members");
    c.pub(l2.id, "r.a", "after", "after");
    await c.until(() => l2.acks.has("after"), "publish after");
    await c.until(() => c.contents("n4").size === 21, "n4 caught up");
    for (const id of target) assert.deepEqual(c.contents(id), c.contents(l2.id));
  } finally {
    await c.stopAll();
  }
});

void test("stream group health: a restarted follower is not current until it caught up (then it holds everything)", async () => {
  const c = new StreamCluster({ n: 3, storage: "file", snapshotEntries: 16 });
  await c.startAll();
  try {
    const l = await c.leader();
    await c.until(() => c.ids.every((id) => c.node(id).group.healthError() === ""), "all current");
    const f = c.ids.find((id) => id !== l.id)!;
    await c.stop(f);
    for (let i = 0; i < 100; i++) c.pub(l.id, "r.a", `a${i}`, `a${i}`);
    await c.until(() => l.acks.size === 100, "100 acks");
    await c.start(f);
    // Right after the restart it has not heard from the leader, nor caught up.
    assert.notEqual(c.node(f).group.healthError(), "");
    await c.until(() => c.node(f).group.healthError() === "", "the follower is current again");
    // Current means caught up: it holds what the leader holds, now.
    assert.deepEqual(c.contents(f), c.contents(l.id));
  } finally {
    await c.stopAll();
  }
});

void test("stream group hand-off (lame duck): leadership moves by TimeoutNow, within fewer ticks than an election timeout", async () => {
  const c = new StreamCluster({ n: 3, storage: "memory" });
  await c.startAll();
  try {
    const l = await c.leader();
    for (let i = 0; i < 10; i++) c.pub(l.id, "r.a", `a${i}`, `a${i}`);
    await c.until(() => l.acks.size === 10, "10 acks");
    // Let every follower be heard from (heartbeat answers).
    for (let i = 0; i < 3; i++) await c.step();
    l.host.setObserver(true);
    const done = l.group.handOff(5000);
    let ticks = 0;
    // The election timeout is 10-20 ticks: a new leader within 5 came by TimeoutNow.
    await c.until(() => {
      ticks++;
      return c.leaders().some((id) => id !== l.id);
    }, "a new leader", 5);
    await done;
    assert.ok(ticks <= 5);
    const l2 = c.node(c.leaders().find((id) => id !== l.id)!);
    c.pub(l2.id, "r.a", "after", "after");
    await c.until(() => l2.acks.has("after"), "a publish on the new leader");
    // The old leader (an observer now) does not take leadership back.
    for (let i = 0; i < 60; i++) await c.step();
    assert.equal(l.group.isLeader, false);
  } finally {
    await c.stopAll();
  }
});

void test("memory stream whose every replica restarted: it goes on (empty up to the latest snapshot, sequence kept), replicas identical", async () => {
  const c = new StreamCluster({ n: 3, storage: "memory", snapshotEntries: 16 });
  await c.startAll();
  try {
    const l = await c.leader();
    for (let i = 0; i < 60; i++) c.pub(l.id, `r.${i % 3}`, `a${i}`, `a${i}`, [["Nats-Msg-Id", `a${i}`]]);
    await c.until(() => l.acks.size === 60 && c.ids.every((id) => c.node(id).store.state().lastSeq === 60), "60 everywhere");
    await c.until(() => c.ids.every((id) => (c.node(id).host.status(c.node(id).group.name)?.firstIndex ?? 0) > 1), "every replica snapshotted");
    await c.stopAll();
    for (const id of c.ids) await c.start(id);
    const l2 = await c.leader();
    await c.until(() => c.ids.every((id) => c.node(id).group.healthError() === ""), "every replica current");
    const last = l2.store.state().lastSeq;
    assert.ok(last >= 48 && last <= 60, `the sequence was kept (last ${last})`);
    for (const id of c.ids) assert.equal(c.node(id).store.state().lastSeq, last, `${id} last seq`);
    assert.ok(c.contents(l2.id).size <= 44, "the messages up to the latest snapshot are gone");
    c.pub(l2.id, "r.z", "after", "after");
    await c.until(() => l2.acks.has("after") && c.ids.every((id) => c.node(id).store.state().lastSeq === last + 1), "a publish after");
    assert.deepEqual(l2.acks.get("after"), [{ stream: "R", seq: last + 1 }]);
    const ref = c.contents(l2.id);
    for (const id of c.ids) assert.deepEqual(c.contents(id), ref, `${id} holds what the leader holds`);
  } finally {
    await c.stopAll();
  }
});
