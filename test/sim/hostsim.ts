// A deterministic simulation one level up from sim.ts: N RaftHosts (the production driver:
// shared WAL, group commit, binary codec) on simulated disks, with a manual clock, a manual
// scheduler and a seeded in-memory network. Faults: delay, drop, partitions and power loss
// on any subset of servers (unsynced WAL writes lost or torn). After healing, every server
// must hold the same applied sequence, containing every acknowledged publish.
import { RaftHost, type GroupApp, type RaftTransport } from "../../src/raft/host.js";
import { type Entry, EntryType, RaftError, Role } from "../../src/raft/types.js";
import { ManualClock } from "../../src/runtime/clock.js";
import { SeededRandom } from "../../src/runtime/random.js";
import { ManualScheduler, type Scheduler } from "../../src/runtime/sched.js";
import { SimFs } from "../helpers/simfs.js";

/** SimFs whose fsync completes on a later turn of the manual scheduler (not setImmediate). */
class SchedFs extends SimFs {
  constructor(private readonly sched: Scheduler) {
    super();
  }
  override fsync(fd: number, cb: (err: Error | null) => void): void {
    // The WAL never writes while its fsync is in flight, so syncing at completion time
    // covers exactly the writes issued before the call.
    this.sched.nextTurn(() => {
      try {
        this.fsyncSync(fd);
      } catch (e) {
        cb(e as Error);
        return;
      }
      cb(null);
    });
  }
  override fsyncDir(path: string, cb: (err: Error | null) => void): void {
    this.sched.nextTurn(() => {
      this.fsyncDirSync(path);
      cb(null);
    });
  }
}

const enc = new TextEncoder();
const dec = new TextDecoder();
const GROUP = "S-R3F-sim";

class PubApp implements GroupApp {
  items: string[] = [];
  seen = new Set<string>();
  restores = 0;
  constructor(private readonly onApply: (v: string) => void) {}
  apply(entries: Entry[]): void {
    for (const e of entries) {
      if (e.type !== EntryType.Normal) continue;
      const v = dec.decode(e.data);
      if (!this.seen.has(v)) {
        this.seen.add(v);
        this.items.push(v);
      }
      this.onApply(v);
    }
  }
  snapshot(): Uint8Array {
    return enc.encode(this.items.join("\n"));
  }
  restore(data: Uint8Array): void {
    this.restores++;
    const s = dec.decode(data);
    this.items = s.length > 0 ? s.split("\n") : [];
    this.seen = new Set(this.items);
  }
}

export interface HostSimResult {
  seed: number;
  nodes: number;
  violation: string | null;
  acked: number;
  powerLosses: number;
  fsyncs: number;
  snapshots: number;
}

export function runHostSeed(seed: number, nodes: number, faultMs = 3000, healMs = 3000): HostSimResult {
  const rnd = new SeededRandom(seed * 7919 + nodes);
  const clock = new ManualClock();
  const sched = new ManualScheduler();
  const ids = Array.from({ length: nodes }, (_, i) => `s${i + 1}`);
  const disks = new Map(ids.map((id) => [id, new SchedFs(sched)]));
  const handlers = new Map<string, (from: string, f: Uint8Array) => void>();
  const hosts = new Map<string, RaftHost>();
  const apps = new Map<string, PubApp>();
  const blocked = new Set<string>();
  let dropRate = 0.02;
  const proposedBy = new Map<string, string>();
  const acked = new Set<string>();
  const canon: string[] = [];
  let powerLosses = 0;
  let fsyncs = 0;
  let snapshots = 0;
  let violation: string | null = null;

  const transport = (id: string): RaftTransport => ({
    send(peer, frame) {
      if (blocked.has(`${id}>${peer}`) || rnd.next() < dropRate) return;
      const copy = Uint8Array.from(frame);
      clock.setTimer(() => handlers.get(peer)?.(id, copy), 1 + rnd.int(8));
    },
    onReceive(h) {
      handlers.set(id, h);
    },
  });

  const checked = new Map<PubApp, [number, number]>();
  const checkCanon = (id: string): void => {
    const app = apps.get(id)!;
    const items = app.items;
    // Only what was applied since the last check (a restore replaces the array: recheck).
    const [restores, n] = checked.get(app) ?? [0, 0];
    checked.set(app, [app.restores, items.length]);
    for (let k = restores !== app.restores || n > items.length ? 0 : n; k < items.length; k++) {
      if (k >= canon.length) canon.push(items[k]!);
      else if (canon[k] !== items[k]) throw new Error(`${id} applied ${items[k]} at ${k}, canonical ${canon[k]}`);
    }
  };

  const start = (id: string): void => {
    const app = new PubApp((v) => {
      if (proposedBy.get(v) === id) acked.add(v);
    });
    apps.set(id, app);
    const h = new RaftHost({ id, fs: disks.get(id)!, dir: `/d/${id}`, clock, sched, random: new SeededRandom(rnd.int(2 ** 30)), transport: transport(id), tickMs: 10, segmentBytes: 8192 });
    h.addGroup(GROUP, ids, app);
    hosts.set(id, h);
    h.start();
  };
  const stop = (id: string): void => {
    const h = hosts.get(id)!;
    fsyncs += h.wal.stats.fsyncs;
    h.close();
    hosts.delete(id);
    handlers.delete(id);
  };

  for (const id of ids) start(id);
  let next = 0;
  try {
    for (let t = 0; t < faultMs + healMs; t++) {
      const faulting = t < faultMs;
      if (t === faultMs) {
        blocked.clear();
        dropRate = 0;
      }
      // Client: publish on the leader every ms while t < faultMs + healMs / 2.
      if (t < faultMs + healMs / 2) {
        for (const [id, h] of hosts) {
          if (h.node(GROUP)!.role !== Role.Leader) continue;
          const v = `p${next++}`;
          try {
            h.propose(GROUP, enc.encode(v));
            proposedBy.set(v, id);
          } catch (e) {
            if (!(e instanceof RaftError)) throw e;
          }
        }
      }
      if (faulting && rnd.next() < 0.004) {
        const x = rnd.next();
        if (x < 0.4) {
          // Power loss on a random subset (up to all): unsynced WAL writes vanish or tear.
          const victims = ids.filter(() => rnd.next() < 0.6);
          for (const id of victims) {
            if (!hosts.has(id)) continue;
            disks.get(id)!.crash({ tear: rnd.next() < 0.7, random: () => rnd.next() });
            stop(id);
            powerLosses++;
          }
          for (const id of victims) if (!hosts.has(id)) start(id);
        } else if (x < 0.7) {
          blocked.clear();
          const side = new Set(ids.filter(() => rnd.next() < 0.5));
          for (const a of ids) for (const b of ids) if (side.has(a) !== side.has(b)) blocked.add(`${a}>${b}`);
        } else if (x < 0.85) {
          blocked.clear();
        } else {
          const id = ids[rnd.int(ids.length)]!;
          const h = hosts.get(id)!;
          if (h.node(GROUP)!.log.applied > h.node(GROUP)!.log.snapIndex + 50) {
            h.snapshot(GROUP);
            snapshots++;
          }
        }
      }
      clock.advance(1);
      sched.runUntilIdle();
      for (const id of hosts.keys()) checkCanon(id);
    }
    const ref = apps.get(ids[0]!)!.items;
    for (const id of ids) {
      const items = apps.get(id)!.items;
      if (items.length !== ref.length) {
        const st = ids.map((i) => JSON.stringify(hosts.get(i)!.status(GROUP))).join("\n");
        throw new Error(`${id} applied ${items.length}, ${ids[0]} ${ref.length} after healing\n${st}`);
      }
      for (const v of acked) if (!apps.get(id)!.seen.has(v)) throw new Error(`acked ${v} missing on ${id}`);
    }
    if (acked.size === 0) throw new Error("nothing was acknowledged");
  } catch (e) {
    violation = (e as Error).stack ?? String(e);
  }
  for (const id of [...hosts.keys()]) stop(id);
  return { seed, nodes, violation, acked: acked.size, powerLosses, fsyncs, snapshots };
}
