// src/jscluster/meta-group.ts: the boot size (configured routes plus this server, its own
// route URL and duplicates counted once), nats-server's peer ids, and three MetaGroups in one
// process on an in-memory peer channel with real WALs.

import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Bus, InternalHandler } from "../../src/contracts/bus.js";
import { SystemClock } from "../../src/runtime/clock.js";
import { NodeFs } from "../../src/runtime/fs.js";
import { nullLogger } from "../../src/runtime/log.js";
import { SeededRandom } from "../../src/runtime/random.js";
import { systemScheduler } from "../../src/runtime/sched.js";
import { until } from "../helpers/until.js";
import { expectedClusterSize, MetaGroup, serverHash, type PeerChannel, type PeerEvents } from "../../src/jscluster/meta-group.js";

void test("expected meta size: routes + self, own URL and duplicates once, bad URLs ignored", () => {
  assert.equal(expectedClusterSize([], 7000), 1);
  assert.equal(expectedClusterSize(["nats-route://127.0.0.1:7001", "nats-route://127.0.0.1:7002"], 7000), 3);
  // nats-server style: every server lists all of them, itself included.
  assert.equal(expectedClusterSize(["nats-route://127.0.0.1:7000", "nats-route://127.0.0.1:7001", "nats-route://localhost:7002"], 7000), 3);
  assert.equal(expectedClusterSize(["nats-route://127.0.0.1:7001", "nats-route://localhost:7001", "nats-route://u:p@127.0.0.1:7001"], 7000), 2);
  assert.equal(expectedClusterSize(["nats-route://10.0.0.5:7000", "::not a url::"], 7000), 2);
  // Own port not known yet: nothing is taken for self.
  assert.equal(expectedClusterSize(["nats-route://127.0.0.1:7000"], 0), 2);
});

void test("peer ids: nats-server's hash of the server name", () => {
  // What a nats-server 2.9.10 cluster of n1, n2, n3 shows in /jsz meta_cluster.
  assert.equal(serverHash("n1"), "fjFyEjc1");
  assert.equal(serverHash("n2"), "44jzkV9D");
  assert.equal(serverHash("n3"), "BXScrY9i");
});

// ---- three MetaGroups in one process, on an in-memory peer channel ----

class Net {
  readonly ends = new Map<string, PeerEvents>();
  readonly down = new Set<string>();
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
        if (this.down.has(name) || this.down.has(peer)) return;
        const copy = Buffer.from(frame);
        setImmediate(() => this.ends.get(peer)?.frame(name, copy));
      },
      peers: () => [...this.ends.keys()].filter((n) => n !== name && !this.down.has(n)),
      close: () => this.ends.delete(name),
    };
  }
}

function fakeBus(published: Array<{ subject: string; body: unknown }>): { bus: Bus; handlers: Map<string, InternalHandler> } {
  const handlers = new Map<string, InternalHandler>();
  const bus = {
    subscribe(subject: string, h: InternalHandler) {
      handlers.set(subject, h);
      return { subject, unsubscribe: () => handlers.delete(subject) };
    },
    publish(subject: string, _reply: string, _hdr: Buffer | null, payload: Buffer) {
      published.push({ subject, body: JSON.parse(payload.toString()) });
    },
    hasInterest: () => false,
  } as unknown as Bus;
  return { bus, handlers };
}

void test("meta groups in one process: bootstrap by hello, one leader, proposals applied everywhere, stepdown forwarded to the leader", async () => {
  const dir = mkdtempSync(join(tmpdir(), "jscluster-mg-"));
  const net = new Net();
  const names = ["a", "b", "c"];
  const published: Array<Array<{ subject: string; body: unknown }>> = names.map(() => []);
  const buses = names.map((_, i) => fakeBus(published[i]!));
  const clock = new SystemClock();
  const groups = names.map(
    (n, i) =>
      new MetaGroup({
        serverName: n,
        clusterName: () => "c1",
        clusterPort: () => 7000 + i,
        routes: names.map((_, j) => `nats-route://127.0.0.1:${7000 + j}`),
        dir: join(dir, n),
        bus: buses[i]!.bus,
        log: nullLogger,
        openChannel: (ev) => net.open(n, ev),
        clock,
        sched: systemScheduler,
        random: new SeededRandom(i + 1),
        fs: new NodeFs(),
        tickMs: 20,
      }),
  );
  try {
    for (const g of groups) g.start();
    await until("one leader all agree on", () => groups.every((g) => g.started && g.leaderName !== "" && g.leaderName === groups[0]!.leaderName));
    const leader = groups.find((g) => g.isLeader)!;
    assert.equal(groups.filter((g) => g.isLeader).length, 1);
    assert.deepEqual(leader.jszInfo()["cluster_size"], 3);
    leader.propose({ op: "assign_stream", sa: { config: { name: "S1" }, group: { name: "S-R1F-x", peers: ["b"], store: "file" }, created: 1 } });
    await until("applied on every server", () => groups.every((g) => g.state.stream("S1")?.group.peers[0] === "b"));
    // A stepdown asked of a follower is answered once, by the leader, after the move.
    const fi = groups.findIndex((g) => !g.isLeader);
    const li = groups.indexOf(leader);
    buses[fi]!.handlers.get("$JS.API.META.LEADER.STEPDOWN")!("$JS.API.META.LEADER.STEPDOWN", "_INBOX.sd", null, Buffer.alloc(0));
    await until("the stepdown answered", () => published[li]!.length === 1);
    assert.deepEqual(published[li]![0], { subject: "_INBOX.sd", body: { type: "io.nats.jetstream.api.v1.meta_leader_stepdown_response", success: true } });
    assert.equal(published[fi]!.length, 0);
    const old = names[li]!;
    await until("a new leader all agree on", () => groups.every((g) => g.leaderName !== "" && g.leaderName !== old && g.leaderName === groups[0]!.leaderName));
  } finally {
    for (const g of groups) g.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
