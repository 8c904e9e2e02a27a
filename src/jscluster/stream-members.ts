// A replicated stream's membership (STREAM.PEER.REMOVE, SERVER.REMOVE, lame duck): the meta
// group assigns the members; the group's Raft voters follow them one single-server change at
// a time, driven by the leader (a new member first as a learner, promoted once caught up); a
// leader hands leadership over before it leaves or shuts down.

import { jsErr, JsApiError } from "../contracts/errors.js";
import type { RaftHost } from "../raft/host.js";
import type { RaftNode } from "../raft/node.js";
import { ProgressState } from "../raft/progress.js";
import { NONE, RaftError, Role } from "../raft/types.js";
import type { Clock, TimerHandle } from "../runtime/clock.js";
import type { Logger } from "../runtime/log.js";
import { serverHash } from "./placement.js";

/** While voters differ from the assigned members, the leader retries a change this often. */
const RECONCILE_MS = 50;
/** A lame-duck leader hands over only to a peer heard from within this long. */
const HANDOFF_HEARD_MS = 1000;
/** A replica not heard from for this long is not current (nats-server lostQuorumInterval). */
const CURRENT_WINDOW_MS = 10_000;
/** A learner this many entries behind the commit (one append window) is caught up. */
const LEARNER_LAG = 256;
/** A stepdown fails if leadership has not moved after this long. */
const STEPDOWN_TIMEOUT_MS = 3000;

interface PendingStepdown {
  resolve(): void;
  reject(e: Error): void;
  timer: TimerHandle;
}

export interface MembersHost {
  readonly host: RaftHost;
  readonly clock: Clock;
  readonly log: Logger;
  /** The Raft group's name. */
  readonly group: string;
  /** This server's peer id. */
  readonly self: string;
  closed(): boolean;
  /** False while the voters must not change yet (a group still being seeded). */
  canChange?(): boolean;
}

export class GroupMembers {
  /** The members the meta group assigned (the target of the voters). */
  private peers: string[];
  private timer: TimerHandle | null = null;
  private stepdowns: PendingStepdown[] = [];

  constructor(private readonly h: MembersHost, peers: readonly string[]) {
    this.peers = [...peers];
  }

  /** The assigned members. */
  get assigned(): readonly string[] {
    return this.peers;
  }

  /** The Raft voters now. */
  get voters(): string[] {
    return this.h.host.status(this.h.group)?.voters ?? [...this.peers];
  }

  /** The other servers that may hold the stream: voters and assigned members. */
  others(): string[] {
    return [...new Set([...this.voters, ...this.peers])].filter((p) => p !== this.h.self);
  }

  /** The meta group assigned these members (every replica hears it; the leader acts). */
  assign(peers: readonly string[]): void {
    this.peers = [...peers];
    this.reconcile();
  }

  /**
   * On the leader, while the Raft voters differ from the assigned members: one single-server
   * change at a time (the Raft refuses another until the last one committed, and any before
   * the term's no-op committed; retried every RECONCILE_MS). Removals of other servers come
   * first (a removed server is often dead: the group shrinks to what is alive, then grows with
   * the new server catching up by the log or a snapshot plus range catch-up), then additions,
   * then this server's own removal (it then hands leadership over with TimeoutNow).
   */
  reconcile(): void {
    const h = this.h;
    if (h.closed() || this.timer !== null || h.canChange?.() === false) return;
    const node = h.host.node(h.group);
    if (node === undefined || node.role !== Role.Leader || node.failed !== null) return;
    const voters = node.voters;
    const learners = node.learners;
    const extra = voters.filter((v) => !this.peers.includes(v));
    const missing = this.peers.filter((v) => !voters.includes(v));
    const strays = learners.filter((l) => !this.peers.includes(l));
    if (extra.length === 0 && missing.length === 0 && strays.length === 0) return;
    const drop = extra.find((v) => v !== h.self);
    let next = voters;
    let nextL = learners.filter((l) => this.peers.includes(l));
    let what = "";
    if (drop !== undefined) next = voters.filter((v) => v !== drop);
    else if (strays.length > 0) what = `learners [${learners.join(", ")}] -> [${nextL.join(", ")}]`;
    else if (missing.length > 0) {
      // A new member joins as a learner (replicated to, not counted: the group keeps its
      // quorum while it catches up) and becomes a voter once it holds what was committed.
      const m = missing[0]!;
      if (!learners.includes(m)) {
        nextL = [...nextL, m];
        what = `learner ${m} added`;
      } else if (this.caughtUp(node, m)) {
        next = [...voters, m];
        nextL = nextL.filter((l) => l !== m);
      } else nextL = learners;
    } else next = voters.filter((v) => v !== h.self);
    if (what === "" && next !== voters) what = `voters [${voters.join(", ")}] -> [${next.join(", ")}]`;
    try {
      if (what !== "" && !node.confPending && h.host.proposeConfChange(h.group, next, nextL) > 0) {
        h.log.info(`stream group ${h.group}: ${what}`);
      }
    } catch (e) {
      if (!(e instanceof RaftError)) throw e;
    }
    this.timer = h.clock.setTimer(() => {
      this.timer = null;
      this.reconcile();
    }, RECONCILE_MS);
  }

  /** A learner holds (nearly) everything committed: at most one append window behind. */
  private caughtUp(node: RaftNode, learner: string): boolean {
    const st = node.status().progress.find((p) => p.id === learner);
    return st !== undefined && st.state === ProgressState.Replicate && st.match + LEARNER_LAG >= node.log.committed;
  }

  /** Lame duck or shutdown: a leader hands leadership to a peer heard from lately (the most
   *  caught up); resolves once another leads, or at once when there is none to take it. */
  handOff(boundMs: number): Promise<void> {
    const h = this.h;
    const st = h.host.status(h.group);
    if (h.closed() || st === undefined || st.role !== Role.Leader) return Promise.resolve();
    const now = h.clock.monoMs();
    let target = "";
    let best = -1;
    for (const p of st.progress) {
      if (p.id === h.self || !st.voters.includes(p.id)) continue;
      const seen = h.host.lastHeardMs(p.id);
      if (seen < 0 || now - seen > HANDOFF_HEARD_MS) continue;
      if (p.match > best) {
        best = p.match;
        target = p.id;
      }
    }
    if (target === "") return Promise.resolve();
    try {
      h.host.transferLeader(h.group, target);
    } catch {
      return Promise.resolve();
    }
    h.log.info(`stream group ${h.group}: handing leadership to ${target}`);
    return this.whileLeading(now + boundMs, 10, null);
  }

  /** This server is no longer assigned: resolves on the leader once its own removal
   *  committed and it handed leadership over, so the others need not wait out an election
   *  timeout; on a follower once the leader stopped replicating to it (it lost its leader)
   *  or its log says it is not a voter, since until then the leader may need its
   *  acknowledgement to commit the change that removes another (R3→R1: [A,B,S]→[B,S] needs
   *  B). Bounded by boundMs. */
  leave(boundMs: number): Promise<void> {
    const h = this.h;
    const end = h.clock.monoMs() + boundMs;
    return new Promise((resolve) => {
      const check = (): void => {
        const n = h.host.node(h.group);
        if (h.closed() || n === undefined || n.failed !== null || h.clock.monoMs() >= end) return resolve();
        if (n.role === Role.Leader) this.reconcile();
        else if (n.lead === NONE || !n.voters.includes(h.self)) return resolve();
        h.clock.setTimer(check, 20);
      };
      check();
    });
  }

  /** Heard from the group's leader within the window nats-server calls current. */
  isCurrent(): boolean {
    return this.h.host.isCurrent(this.h.group, CURRENT_WINDOW_MS);
  }

  /** STREAM.LEADER.STEPDOWN on the leader: hand leadership to the most caught-up active
   *  peer; resolves once another replica leads (leaderMoved). */
  stepdown(): Promise<void> {
    const h = this.h;
    const st = h.host.status(h.group);
    // The most caught-up active peers; one of them at random, as nats-server picks (a fixed
    // order would never move leadership to some of them).
    let best = -1;
    let tied: string[] = [];
    for (const p of st?.progress ?? []) {
      if (p.id === h.self || !p.active || !st!.voters.includes(p.id)) continue;
      if (p.match > best) {
        best = p.match;
        tied = [p.id];
      } else if (p.match === best) tied.push(p.id);
    }
    const target = tied.length === 0 ? "" : tied[h.host.randomInt(tied.length)]!;
    if (target === "") return Promise.reject(new JsApiError(jsErr("JSRaftGeneralErrF", { err: "no replicas to transfer leadership to" })));
    return new Promise<void>((resolve, reject) => {
      const timer = h.clock.setTimer(() => {
        const i = this.stepdowns.findIndex((p) => p.timer === timer);
        if (i < 0) return;
        this.stepdowns.splice(i, 1);
        reject(new JsApiError(jsErr("JSRaftGeneralErrF", { err: "leadership transfer timed out" })));
      }, STEPDOWN_TIMEOUT_MS);
      this.stepdowns.push({ resolve, reject, timer });
      try {
        h.host.transferLeader(h.group, target);
      } catch (e) {
        h.clock.clearTimer(timer);
        this.stepdowns.pop();
        reject(new JsApiError(jsErr("JSRaftGeneralErrF", { err: (e as Error).message })));
      }
    });
  }

  /** Another replica leads now: the stepdowns asked are done. */
  leaderMoved(): void {
    const done = this.stepdowns;
    this.stepdowns = [];
    for (const p of done) {
      this.h.clock.clearTimer(p.timer);
      p.resolve();
    }
  }

  refuseStepdowns(err: Error): void {
    for (const p of this.stepdowns) {
      this.h.clock.clearTimer(p.timer);
      p.reject(err);
    }
    this.stepdowns = [];
  }

  /** nats-server's STREAM.INFO `cluster` block without `name`; `selfCurrent`: this replica's
   *  store reflects what it applied (not catching up); `catchingUp`: a peer still copying
   *  messages (not current, whatever its log). */
  clusterInfo(leader: string, leaderSinceMs: number, selfCurrent: boolean, catchingUp: (peer: string) => boolean = () => false): Record<string, unknown> {
    const h = this.h;
    const out: Record<string, unknown> = { raft_group: h.group };
    if (leader !== "") {
      out["leader"] = leader;
      out["leader_since"] = new Date(leaderSinceMs).toISOString();
    }
    const st = h.host.status(h.group);
    const now = h.clock.monoMs();
    const self = h.self;
    const leading = st !== undefined && st.role === Role.Leader && leader === self;
    const match = new Map<string, number>();
    if (leading) for (const p of st.progress) match.set(p.id, p.match);
    const replicas: Record<string, unknown>[] = [];
    for (const name of this.peers) {
      if (name === (leader !== "" ? leader : self)) continue;
      const r: Record<string, unknown> = { name, current: false, active: 0 };
      if (name === self) {
        r["current"] = st !== undefined && st.failed === null && st.applied >= st.commit && leader !== "" && selfCurrent;
      } else {
        const seen = h.host.lastHeardMs(name);
        const ago = seen < 0 ? -1 : now - seen;
        if (ago < 0 || ago >= CURRENT_WINDOW_MS) r["offline"] = true;
        r["active"] = ago < 0 ? 0 : Math.round(ago * 1_000_000);
        if (leading && st !== undefined) {
          const m = match.get(name) ?? 0;
          r["current"] = ago >= 0 && ago < CURRENT_WINDOW_MS && m >= st.commit && !catchingUp(name);
          if (st.commit > m) r["lag"] = st.commit - m;
        }
      }
      r["peer"] = serverHash(name);
      replicas.push(r);
    }
    if (replicas.length > 0) out["replicas"] = replicas;
    return out;
  }

  close(): void {
    if (this.timer !== null) this.h.clock.clearTimer(this.timer);
    this.timer = null;
  }

  /** Resolves once this replica no longer leads (or the group closed, or `end` passed),
   *  checking every `everyMs` and running `each` at every check. */
  private whileLeading(end: number, everyMs: number, each: (() => void) | null): Promise<void> {
    const h = this.h;
    return new Promise((resolve) => {
      const check = (): void => {
        const s = h.host.status(h.group);
        if (h.closed() || s === undefined || s.role !== Role.Leader || h.clock.monoMs() >= end) return resolve();
        each?.();
        h.clock.setTimer(check, everyMs);
      };
      check();
    });
  }
}
