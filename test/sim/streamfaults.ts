// The fault schedule the consumer and KV workloads of the stream simulator share
// (consumersim.ts, kvsim.ts): a StreamCluster (test/helpers/streamcluster.ts) on a manual
// clock and a seeded network, whose links are cut (both ways or one way), whose servers are
// killed and restarted (a file store may lose power: its unsynced writes vanish), whose
// streams are closed and opened again in-process, whose leaders step down, and, with
// `membership`, whose group loses a member (STREAM.PEER.REMOVE: the meta group assigns the
// other servers; the removed server's disk is wiped) and gets it back later as a new member
// that catches up by snapshot and range catch-up. A memory store is wiped by a kill or a
// reopen, so those happen only while every other member holds its state; at most a minority
// of the current voters is down at once.
//
// The workloads hook in: onStart(id) after a server (re)starts or its stream reopens,
// beforeStop(id) before a server stops or its stream closes (a process's consumers die with
// it), onReplaced(id) when a removed server comes back on a wiped disk (a new Node object).
import { GROUP as GROUP_NAME, Node, StreamCluster } from "../helpers/streamcluster.js";
import { SimFs } from "../helpers/simfs.js";

export { GROUP_NAME };

export interface FaultStats {
  kills: number;
  powerLosses: number;
  reopens: number;
  stepdowns: number;
  isolations: number;
  removals: number;
  rejoins: number;
  fullRestarts: number;
  leaderChanges: number;
}

export interface FaultHooks {
  onStart?(id: string): void;
  beforeStop?(id: string): Promise<void> | void;
  onReplaced?(id: string, n: Node): void;
}

export interface FaultOptions {
  seed: number;
  nodes: number;
  storage: "memory" | "file";
  /** Virtual ms per step (the clock advances by this, then a few event-loop turns run). */
  stepMs: number;
  membership: boolean;
  /** Extra stream config. */
  cfg?: Record<string, unknown>;
  /** Per-step fault probability. */
  faultRate?: number;
  /** A mutation for the checkers' own tests: the removed server comes back on a wiped disk
   *  under its old name without waiting for its removal to commit (amnesia). */
  unsafeRejoin?: boolean;
}

export class FaultDriver {
  readonly c: StreamCluster;
  readonly stats: FaultStats = { kills: 0, powerLosses: 0, reopens: 0, stepdowns: 0, isolations: 0, removals: 0, rejoins: 0, fullRestarts: 0, leaderChanges: 0 };
  /** Server id -> the step at which it restarts. */
  readonly down = new Map<string, number>();
  /** The server removed from the group (membership), and when it comes back. */
  out: { id: string; back: number } | null = null;
  t = 0;
  private lastLeader = "";
  private readonly trace = process.env["SIM_TRACE"] !== undefined;

  constructor(
    readonly o: FaultOptions,
    readonly hooks: FaultHooks,
  ) {
    this.c = new StreamCluster({ n: o.nodes, storage: o.storage, seed: o.seed, tickMs: 10, snapshotEntries: 48, catchupWindowBytes: 2048, net: { maxDelayMs: 4, dropRate: 0.01 }, cfg: o.cfg });
  }

  get rnd(): StreamCluster["rnd"] {
    return this.c.rnd;
  }

  get ids(): string[] {
    return this.c.ids;
  }

  /** The group's members now (all servers but the removed one). */
  members(): string[] {
    return this.out === null ? this.c.ids : this.c.ids.filter((id) => id !== this.out!.id);
  }

  node(id: string): Node {
    return this.c.node(id);
  }

  async startAll(): Promise<void> {
    for (const id of this.c.ids) await this.start(id);
  }

  async start(id: string, peers?: string[]): Promise<void> {
    await this.c.start(id, peers);
    this.hooks.onStart?.(id);
  }

  async stop(id: string, power: boolean): Promise<void> {
    await this.hooks.beforeStop?.(id);
    await this.c.stop(id, power);
  }

  async step(): Promise<void> {
    this.c.clock.advance(this.o.stepMs);
    this.t += this.o.stepMs;
    for (let i = 0; i < 3; i++) await new Promise((r) => setImmediate(r));
    const l = this.c.leaders()[0] ?? "";
    if (l !== "" && l !== this.lastLeader) {
      this.stats.leaderChanges++;
      this.lastLeader = l;
    }
  }

  private note(what: string, id: string): void {
    if (this.trace) console.log(this.t, what, id, JSON.stringify(this.c.ids.map((i) => (this.c.node(i).up ? this.c.node(i).group.debugState() : null))));
  }

  /** Whether id's state may be wiped (a memory store killed or reopened): only while every
   *  other member is up and not catching up. */
  private wipeOk(id: string): boolean {
    if (this.o.storage === "file") return true;
    // A removed server whose removal has not committed is a voter whose copy is gone.
    if (this.out !== null && !this.removalCommitted(this.out.id)) return false;
    const n = this.c.node(id);
    const mine = n.up ? Number(n.group.debugState()["applied"]) : 0;
    return this.members().every((o) => {
      if (o === id) return true;
      const x = this.c.node(o);
      return x.up && !x.group.isCatchingUp && Number(x.group.debugState()["applied"]) >= mine;
    });
  }

  /** One step's worth of faults (while faulting), and restarts that are due. */
  async faultStep(): Promise<void> {
    const rnd = this.rnd;
    const c = this.c;
    if (rnd.next() < (this.o.faultRate ?? 0.03) * (this.o.stepMs / 5)) {
      const x = rnd.next();
      const members = this.members();
      const id = members[rnd.int(members.length)]!;
      const n = c.node(id);
      const budget = Math.floor((members.length - 1) / 2);
      if (x < 0.22) {
        if (n.up && this.down.size < budget && this.wipeOk(id)) {
          const power = this.o.storage === "file" && rnd.next() < 0.5;
          this.note(power ? "power-loss" : "kill", id);
          await this.stop(id, power);
          if (power) this.stats.powerLosses++;
          else this.stats.kills++;
          this.down.set(id, this.t + 50 + rnd.int(400));
        }
      } else if (x < 0.4) {
        c.heal();
        c.isolate(id);
        this.stats.isolations++;
      } else if (x < 0.5) {
        c.heal();
        for (const o of c.ids) if (o !== id) c.cut.add(`${o}>${id}`);
      } else if (x < 0.6) {
        c.heal();
      } else if (x < 0.7) {
        if (n.up && this.wipeOk(id)) {
          this.note("reopen", id);
          await this.hooks.beforeStop?.(id);
          await c.reopenGroup(id);
          this.hooks.onStart?.(id);
          this.stats.reopens++;
        }
      } else if (x < 0.82) {
        const l = c.leaders()[0];
        if (l !== undefined) {
          c.node(l).group.stepdown().catch(() => undefined);
          this.stats.stepdowns++;
        }
      } else if (this.o.membership) {
        await this.membershipStep();
      }
    }
    await this.restartDue();
  }

  /** Remove a member (at most one out at a time, never with a server down) or bring the
   *  removed one back on a wiped disk. */
  private async membershipStep(): Promise<void> {
    const c = this.c;
    if (this.out !== null) {
      if (this.t >= this.out.back) await this.rejoin();
      return;
    }
    if (this.down.size > 0) return;
    // Only from a full group: the last re-addition committed (removing another server while
    // the group has two voters and one is empty would leave no quorum once it goes).
    const l = c.leaders()[0];
    const nd = l === undefined ? undefined : c.node(l).host.node(GROUP_NAME);
    if (nd === undefined || nd.voters.length !== c.ids.length || nd.confPending) return;
    const id = c.ids[this.rnd.int(c.ids.length)]!;
    if (!this.wipeOk(id) || !c.ids.every((o) => c.node(o).up)) return;
    const target = c.ids.filter((o) => o !== id);
    this.note("remove", id);
    // The meta op applies on every server: each replica learns the new members; the group's
    // leader changes the voters; the removed server leaves (a leader hands over first,
    // bounded), then its copy goes, and its disk with it.
    for (const o of c.ids) {
      c.node(o).peers = target;
      if (c.node(o).up) c.node(o).group.setPeers(target);
    }
    this.out = { id, back: this.t + 300 + this.rnd.int(800) };
    this.stats.removals++;
    const n = c.node(id);
    const bound = this.t + 1000;
    let left = false;
    void n.group.leave(1000).then(() => (left = true));
    while (!left && this.t < bound) await this.step();
    if (n.up) await this.stop(id, false);
    this.down.delete(id);
  }

  /** Whether the removal of id has committed (a leader's voters lack it, no change
   *  pending): only then may it come back on a wiped disk under the same name. (A server
   *  that lost its disk while the group still counts its old votes would be amnesia: the
   *  production placement gives a wiped server a new peer id for that reason.) */
  removalCommitted(id: string): boolean {
    return this.c.leaders().some((l) => {
      const nd = this.c.node(l).host.node(GROUP_NAME);
      return nd !== undefined && !nd.voters.includes(id) && !nd.confPending;
    });
  }

  /** The removed server comes back as a new member with an empty disk (once its removal
   *  committed; else later). */
  private async rejoin(): Promise<boolean> {
    const c = this.c;
    const id = this.out!.id;
    if (!this.removalCommitted(id) && this.o.unsafeRejoin !== true) {
      this.out!.back = this.t + 100;
      return false;
    }
    this.note("rejoin", id);
    const fresh = new Node(id, new SimFs());
    c.nodes.set(id, fresh);
    this.hooks.onReplaced?.(id, fresh);
    this.out = null;
    const all = c.ids;
    for (const o of all) {
      c.node(o).peers = all;
      if (o !== id && c.node(o).up) c.node(o).group.setPeers(all);
    }
    await this.start(id, all);
    this.stats.rejoins++;
    return true;
  }

  async restartDue(): Promise<void> {
    for (const [id, at] of this.down) {
      if (this.t >= at) {
        this.down.delete(id);
        this.note("start", id);
        await this.start(id);
      }
    }
  }

  /** End of the faults: links healed, every server up, the removed one back; with a file
   *  store sometimes the whole cluster goes down at once (some losing power) and comes back. */
  async heal(): Promise<void> {
    const c = this.c;
    c.heal();
    for (const id of [...this.down.keys()]) {
      this.down.delete(id);
      await this.start(id);
    }
    for (let i = 0; this.out !== null; i++) {
      if (await this.rejoin()) break;
      if (i > 2000 / this.o.stepMs) throw new Error(`the removal of ${this.out.id} did not commit within 2 s of healing\n${this.describe()}`);
      await this.step();
    }
    if (this.o.storage === "file" && this.rnd.next() < 0.25) {
      for (const id of c.ids) {
        const power = this.rnd.next() < 0.5;
        await this.stop(id, power);
        if (power) this.stats.powerLosses++;
        else this.stats.kills++;
      }
      for (const id of c.ids) await this.start(id);
      this.stats.fullRestarts++;
    }
  }

  async stopAll(): Promise<void> {
    for (const id of this.c.ids) if (this.c.node(id).up) await this.stop(id, false);
  }

  /** A one-line account of every replica (for violations). */
  describe(): string {
    return this.c.ids
      .map((id) => {
        const n = this.c.node(id);
        if (!n.up) return `${id}: down`;
        return `${id}: ${JSON.stringify(n.group.debugState())} voters ${JSON.stringify(n.group.voters)}`;
      })
      .join("\n");
  }
}
