// Many groups per server (CLUSTERING.md §3.6): three RaftHosts with many groups on an
// in-memory transport and a manual clock. Heartbeats of all groups for one peer leave in one
// coalesced frame; idle groups go quiet (no Raft traffic at all, one liveness frame per peer
// per heartbeat interval); a proposal wakes a group; a quiet group whose leader's server goes
// silent or whose route closes elects a new leader.
import { test } from "node:test";
import assert from "node:assert/strict";
import { RaftHost, type GroupApp, type RaftTransport } from "../../src/raft/host.js";
import { decodeHeartbeats, encodeHeartbeats, HEARTBEATS_TAG, isCoalesced } from "../../src/raft/heartbeats.js";
import { type Entry, EntryType, MsgType, RaftError, Role, emptyMessage } from "../../src/raft/types.js";
import { ManualClock } from "../../src/runtime/clock.js";
import { SeededRandom } from "../../src/runtime/random.js";
import { systemScheduler } from "../../src/runtime/sched.js";
import { SimFs } from "../helpers/simfs.js";

const enc = new TextEncoder();
const dec = new TextDecoder();
const IDS = ["s1", "s2", "s3"];
const TICK_MS = 10;

class ListApp implements GroupApp {
  items: string[] = [];
  apply(entries: Entry[]): void {
    for (const e of entries) if (e.type === EntryType.Normal) this.items.push(dec.decode(e.data));
  }
  snapshot(): Uint8Array {
    return enc.encode(JSON.stringify(this.items));
  }
  restore(data: Uint8Array): void {
    this.items = JSON.parse(dec.decode(data)) as string[];
  }
}

class Cluster {
  readonly clock = new ManualClock();
  readonly hosts = new Map<string, RaftHost>();
  readonly apps = new Map<string, Map<string, ListApp>>();
  private readonly handlers = new Map<string, (from: string, frame: Uint8Array) => void>();
  private readonly disks = new Map<string, SimFs>();
  /** Frames each server received, by first byte. */
  readonly received = new Map<string, number>();
  constructor(
    readonly groups: string[],
    readonly electionTicks = 10,
  ) {
    for (const id of IDS) this.start(id);
  }
  private transport(id: string): RaftTransport {
    return {
      send: (peer, frame) => {
        const copy = Uint8Array.from(frame);
        setImmediate(() => {
          const h = this.handlers.get(peer);
          if (h === undefined || !this.hosts.has(id)) return;
          this.received.set(`${peer}:${copy[0]}`, (this.received.get(`${peer}:${copy[0]}`) ?? 0) + 1);
          h(id, copy);
        });
      },
      onReceive: (h) => this.handlers.set(id, h),
    };
  }
  start(id: string): void {
    let fs = this.disks.get(id);
    if (fs === undefined) this.disks.set(id, (fs = new SimFs()));
    const h = new RaftHost({ id, fs, dir: `/raft/${id}`, clock: this.clock, sched: systemScheduler, random: new SeededRandom(IDS.indexOf(id) + 3), transport: this.transport(id), tickMs: TICK_MS, electionTicks: this.electionTicks });
    const apps = new Map<string, ListApp>();
    for (const g of this.groups) {
      const app = new ListApp();
      apps.set(g, app);
      h.addGroup(g, IDS, app);
    }
    this.hosts.set(id, h);
    this.apps.set(id, apps);
    h.start();
  }
  stop(id: string): void {
    this.hosts.get(id)!.close();
    this.hosts.delete(id);
    this.handlers.delete(id);
  }
  leader(group: string): string | undefined {
    return [...this.hosts.entries()].find(([, h]) => h.node(group)!.role === Role.Leader)?.[0];
  }
  /** Advance virtual time a tick at a time, letting the transport run, until cond holds. */
  async until(what: string, cond: () => boolean, maxSteps = 3000): Promise<void> {
    for (let i = 0; i < maxSteps; i++) {
      if (cond()) return;
      await this.step();
    }
    assert.fail(`timed out waiting for ${what}`);
  }
  async step(): Promise<void> {
    this.clock.advance(TICK_MS);
    await new Promise((r) => setTimeout(r, 1));
  }
  propose(group: string, v: string): void {
    const l = this.leader(group);
    if (l === undefined) return;
    try {
      this.hosts.get(l)!.propose(group, enc.encode(v));
    } catch (e) {
      if (!(e instanceof RaftError)) throw e;
    }
  }
  has(group: string, v: string, on = [...this.hosts.keys()]): boolean {
    return on.every((id) => this.apps.get(id)!.get(group)!.items.includes(v));
  }
  allQuiet(on = [...this.hosts.keys()]): boolean {
    return this.groups.every((g) => on.every((id) => this.hosts.get(id)!.node(g)!.quiesced));
  }
  close(): void {
    for (const id of [...this.hosts.keys()]) this.stop(id);
  }
}

async function settle(c: Cluster): Promise<void> {
  await c.until("a leader per group", () => c.groups.every((g) => c.leader(g) !== undefined));
  for (const g of c.groups) c.propose(g, `${g}-1`);
  await c.until("the first proposals applied", () => {
    for (const g of c.groups) if (!c.has(g, `${g}-1`)) c.propose(g, `${g}-1`);
    return c.groups.every((g) => c.has(g, `${g}-1`));
  });
  await c.until("every group quiet", () => c.allQuiet());
}

void test("coalesced heartbeats: the frame round-trips; malformed ones are refused", () => {
  const hb = emptyMessage(MsgType.Heartbeat, "s1", "s2", 4);
  hb.commit = 7;
  hb.index = 9;
  const q = emptyMessage(MsgType.Quiesce, "s1", "s2", 4);
  q.index = 12;
  q.logTerm = 4;
  q.commit = 12;
  const resp = emptyMessage(MsgType.HeartbeatResp, "s1", "s2", 5);
  assert.ok(isCoalesced(hb) && isCoalesced(q) && isCoalesced(resp));
  const withCtx = emptyMessage(MsgType.Heartbeat, "s1", "s2", 4);
  withCtx.context = enc.encode("read");
  assert.equal(isCoalesced(withCtx), false, "a ReadIndex heartbeat goes alone");
  assert.equal(isCoalesced(emptyMessage(MsgType.App, "s1", "s2", 4)), false);
  const f = encodeHeartbeats(77, [
    { group: "S-R3F-a", m: hb },
    { group: "C-ü", m: q },
    { group: "meta", m: resp },
  ]);
  assert.equal(f[0], HEARTBEATS_TAG);
  const d = decodeHeartbeats(f, "s1", "s2");
  assert.ok(!(d instanceof Error));
  assert.equal(d.incarnation, 77);
  assert.deepEqual(
    d.items.map((x) => x.group),
    ["S-R3F-a", "C-ü", "meta"],
  );
  assert.deepEqual(d.items[0]!.m, hb);
  assert.deepEqual(d.items[1]!.m, q);
  assert.deepEqual(d.items[2]!.m, resp);
  const empty = decodeHeartbeats(encodeHeartbeats(1, []), "s1", "s2");
  assert.deepEqual(empty, { incarnation: 1, items: [] });
  for (let cut = 0; cut < f.length; cut++) assert.ok(decodeHeartbeats(f.subarray(0, cut), "s1", "s2") instanceof Error, `cut at ${cut}`);
  const bad = Buffer.from(f);
  bad[10 + 1 + 7] = MsgType.App;
  assert.ok(decodeHeartbeats(bad, "s1", "s2") instanceof Error, "only heartbeat kinds");
});

void test("host: idle groups go quiet (no Raft frames, one liveness frame per peer per interval); a proposal wakes one group", async () => {
  const groups = Array.from({ length: 40 }, (_, i) => `S-R3F-g${i}`);
  const c = new Cluster(groups);
  try {
    await settle(c);
    const before = IDS.map((id) => ({ ...c.hosts.get(id)!.stats }));
    const ticks = 100;
    for (let i = 0; i < ticks; i++) await c.step();
    for (const [k, id] of IDS.entries()) {
      const s = c.hosts.get(id)!.stats;
      assert.equal(s.framesOut, before[k]!.framesOut, `${id}: no Raft frames while quiet`);
      assert.equal(s.heartbeatsOut, before[k]!.heartbeatsOut, `${id}: no heartbeats while quiet`);
      const live = s.heartbeatFramesOut - before[k]!.heartbeatFramesOut;
      // heartbeat every 2 ticks, to 2 peers: one frame each, whatever the number of groups
      assert.ok(live >= ticks - 4 && live <= ticks + 4, `${id}: ${live} liveness frames in ${ticks} ticks`);
    }
    assert.ok(c.allQuiet(), "still quiet");
    // A proposal wakes its group only.
    c.propose(groups[3]!, "wake");
    await c.until("the proposal applied", () => c.has(groups[3]!, "wake"));
    assert.ok(groups.filter((g) => g !== groups[3]).every((g) => IDS.every((id) => c.hosts.get(id)!.node(g)!.quiesced)), "the other groups stayed quiet");
    await c.until("the woken group quiet again", () => c.allQuiet());
  } finally {
    c.close();
  }
});

void test("host: heartbeats of many groups for one peer leave in one frame per turn", async () => {
  const groups = Array.from({ length: 30 }, (_, i) => `S-R3F-h${i}`);
  const c = new Cluster(groups);
  try {
    await c.until("a leader per group", () => groups.every((g) => c.leader(g) !== undefined));
    // Keep every group busy enough not to go quiet: a proposal each every few ticks.
    const s0 = IDS.map((id) => ({ ...c.hosts.get(id)!.stats }));
    for (let i = 0; i < 40; i++) {
      if (i % 3 === 0) for (const g of groups) c.propose(g, `${g}-${i}`);
      await c.step();
    }
    let msgs = 0;
    let frames = 0;
    for (const [k, id] of IDS.entries()) {
      const s = c.hosts.get(id)!.stats;
      msgs += s.heartbeatsOut - s0[k]!.heartbeatsOut;
      frames += s.heartbeatFramesOut - s0[k]!.heartbeatFramesOut;
    }
    assert.ok(msgs > 0, "heartbeats were sent");
    assert.ok(frames * 4 < msgs, `${msgs} heartbeats and answers in ${frames} frames`);
  } finally {
    c.close();
  }
});

void test("host: a quiet group's leader server goes silent: the followers elect a new leader; a closed route does it sooner", async () => {
  const groups = ["S-R3F-q1", "S-R3F-q2", "S-R3F-q3"];
  // An election timeout of 100-200 ticks: the route-close path (~30 ticks) is much sooner.
  const c = new Cluster(groups, 100);
  try {
    await settle(c);
    // Silent (no route close seen): the liveness frames stop, the followers wake after an
    // election timeout and elect.
    const dead = c.leader(groups[0]!)!;
    c.stop(dead);
    const live = IDS.filter((id) => id !== dead);
    await c.until("a new leader", () => c.leader(groups[0]!) !== undefined, 1000);
    c.propose(groups[0]!, "after");
    await c.until("a proposal on the new leader", () => {
      if (!c.has(groups[0]!, "after", live)) c.propose(groups[0]!, "after");
      return c.has(groups[0]!, "after", live);
    });
    // Every group the dead server led has a new leader.
    await c.until("leaders everywhere", () => groups.every((g) => c.leader(g) !== undefined));
    c.start(dead);
    await c.until("quiet again with the restarted server", () => c.allQuiet(), 5000);
    // A route close: peerDown starts the election within ~300 ms (30 ticks), well before an
    // election timeout (and the liveness watch) would.
    const l2 = c.leader(groups[1]!)!;
    const others = IDS.filter((id) => id !== l2);
    c.stop(l2);
    for (const id of others) c.hosts.get(id)!.peerDown(l2);
    let steps = 0;
    await c.until("an election after the route closed", () => {
      steps++;
      return others.some((id) => c.hosts.get(id)!.node(groups[1]!)!.role !== Role.Follower);
    });
    assert.ok(steps <= 40, `the election started ${steps} ticks after the route closed`);
    await c.until("a leader after the route closed", () => c.leader(groups[1]!) !== undefined, 1000);
  } finally {
    c.close();
  }
});
