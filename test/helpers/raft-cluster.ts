// Three RaftHosts in one process for tests: an in-memory transport carrying binary frames
// (codec.ts), a real WAL in a directory each (NodeFs, or SimFs for power-loss tests), a
// manual clock for ticks. Servers may carry storage identities (raft/identity.ts), introduced
// to each other as HELLO does in a real cluster.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { RaftHost, type GroupApp, type RaftTransport } from "../../src/raft/host.js";
import { withIdentity } from "../../src/raft/identity.js";
import { type Entry, EntryType, RaftError, Role } from "../../src/raft/types.js";
import { ManualClock } from "../../src/runtime/clock.js";
import { type Fs, NodeFs } from "../../src/runtime/fs.js";
import { SeededRandom } from "../../src/runtime/random.js";
import { systemScheduler } from "../../src/runtime/sched.js";

const enc = new TextEncoder();
const dec = new TextDecoder();

export class Hub {
  readonly handlers = new Map<string, (from: string, frame: Uint8Array) => void>();
  readonly down = new Set<string>();
  /** Bytes a route "from>to" reports waiting (a slow link), for RaftTransport.backlog. */
  readonly backlogs = new Map<string, number>();
  transport(id: string): RaftTransport {
    return {
      send: (peer, frame) => {
        const copy = Uint8Array.from(frame);
        setImmediate(() => {
          if (this.down.has(id) || this.down.has(peer)) return;
          this.handlers.get(peer)?.(id, copy);
        });
      },
      onReceive: (h) => {
        this.handlers.set(id, h);
      },
      backlog: (peer) => this.backlogs.get(`${id}>${peer}`) ?? 0,
    };
  }
}

export class ListApp implements GroupApp {
  items: string[] = [];
  restored = 0;
  constructor(private readonly applied: (v: string) => void = () => undefined) {}
  apply(entries: Entry[]): void {
    // Deduplicated by value, as JetStream does by Nats-Msg-Id: a client retries a proposal
    // that a leader change may have dropped.
    for (const e of entries) {
      if (e.type !== EntryType.Normal) continue;
      const v = dec.decode(e.data);
      if (!this.items.includes(v)) this.items.push(v);
      this.applied(v);
    }
  }
  snapshot(): Uint8Array {
    return enc.encode(JSON.stringify(this.items));
  }
  restore(data: Uint8Array): void {
    this.restored++;
    this.items = JSON.parse(dec.decode(data)) as string[];
  }
}

export const IDS = ["s1", "s2", "s3"];

export class Cluster {
  readonly clock = new ManualClock();
  readonly hub = new Hub();
  hosts = new Map<string, RaftHost>();
  apps = new Map<string, Map<string, ListApp>>();
  /** One disk per server; NodeFs unless given (SimFs for power-loss tests). */
  readonly disks = new Map<string, Fs>();
  onApply: ((id: string, group: string, v: string) => void) | null = null;
  /** What the hosts logged (re-identifications). */
  readonly logged: string[] = [];
  /** The identities the groups were made with (their first membership pins them). */
  private readonly firstIds: Map<string, string>;
  constructor(
    readonly root: string,
    readonly groups: string[],
    diskOf: (id: string) => Fs = () => new NodeFs(),
    readonly walBudgetBytes?: number,
    /** Storage identities per server (absent: none), introduced to the others on start. */
    readonly identities?: Map<string, string>,
  ) {
    this.firstIds = new Map(identities ?? []);
    for (const id of IDS) this.disks.set(id, diskOf(id));
    for (const id of IDS) this.start(id);
  }
  start(id: string): void {
    const h = new RaftHost({
      id,
      fs: this.disks.get(id)!,
      dir: join(this.root, id),
      clock: this.clock,
      sched: systemScheduler,
      random: new SeededRandom(IDS.indexOf(id) + 7),
      transport: this.hub.transport(id),
      tickMs: 10,
      segmentBytes: 16 * 1024,
      ...(this.walBudgetBytes !== undefined ? { walBudgetBytes: this.walBudgetBytes } : {}),
      ...(this.identities !== undefined ? { identity: this.identities.get(id)! } : {}),
      log: (m) => this.logged.push(`${id}: ${m}`),
    });
    const apps = new Map<string, ListApp>();
    for (const g of this.groups) {
      const app = new ListApp((v) => this.onApply?.(id, g, v));
      apps.set(g, app);
      h.addGroup(g, this.identities !== undefined ? IDS.map((p) => withIdentity(p, this.firstIds.get(p))) : IDS, app);
    }
    this.hosts.set(id, h);
    if (this.identities !== undefined) {
      // As HELLO does: each running server learns the other's identity.
      for (const [other, oh] of this.hosts) {
        if (other === id) continue;
        oh.ids.setPeer(id, this.identities.get(id)!);
        h.ids.setPeer(other, this.identities.get(other)!);
      }
    }
    this.apps.set(id, apps);
    h.start();
  }
  stop(id: string): void {
    this.hosts.get(id)!.close();
    this.hosts.delete(id);
    this.hub.handlers.delete(id);
    // As a route closing does: its frames count again once it introduced itself.
    for (const h of this.hosts.values()) h.ids.setPeer(id, null);
  }
  leader(group: string): string | undefined {
    return [...this.hosts.entries()].find(([, h]) => h.node(group)!.role === Role.Leader)?.[0];
  }
  app(id: string, group: string): ListApp {
    return this.apps.get(id)!.get(group)!;
  }
  /** Propose values on the group's current leader, again every so often (a leader change
   *  can drop them), until every live server applied them all. */
  async proposeAll(group: string, values: string[], on?: string[]): Promise<void> {
    for (let i = 0; i < 4000; i++) {
      const live = on ?? [...this.hosts.keys()];
      if (live.every((id) => values.every((v) => this.app(id, group).items.includes(v)))) return;
      if (i % 200 === 0) {
        const l = this.leader(group);
        if (l !== undefined) {
          const have = new Set(this.app(l, group).items);
          try {
            for (const v of values) if (!have.has(v)) this.hosts.get(l)!.propose(group, enc.encode(v));
          } catch (e) {
            if (!(e instanceof RaftError)) throw e; // e.g. a transfer is under way: retry later
          }
        }
      }
      this.clock.advance(10);
      await new Promise((r) => setTimeout(r, 1));
    }
    assert.fail(`proposals to ${group} not applied everywhere`);
  }
  /** Advance virtual time (advanceMs per step; 0: none, so no election can start while
   *  slow real I/O runs) and let real I/O run until cond holds (bounded). */
  async until(what: string, cond: () => boolean, maxSteps = 4000, advanceMs = 10): Promise<void> {
    for (let i = 0; i < maxSteps; i++) {
      if (cond()) return;
      if (advanceMs > 0) this.clock.advance(advanceMs);
      await new Promise((r) => setTimeout(r, 1));
    }
    assert.fail(`timed out waiting for ${what}`);
  }
  close(): void {
    for (const id of [...this.hosts.keys()]) this.stop(id);
  }
}

/** A Cluster (NodeFs) in a fresh temporary directory for fn, closed and removed after it
 *  whatever happens; fn gets the directory too. */
export async function withTempCluster(prefix: string, groups: string[], fn: (c: Cluster, root: string) => Promise<void>, walBudgetBytes?: number, identities?: Map<string, string>): Promise<void> {
  const root = mkdtempSync(join(tmpdir(), prefix));
  const c = new Cluster(root, groups, undefined, walBudgetBytes, identities);
  try {
    await fn(c, root);
  } finally {
    c.close();
    rmSync(root, { recursive: true, force: true });
  }
}
