// The replicated stream under faults (test/helpers/streamcluster.ts: StreamGroups on
// RaftHosts, simulated disks, a seeded network with delay and loss). A client publishes with
// unique Nats-Msg-Ids to whichever replica takes publishes and retries unanswered ones with
// the same id; meanwhile links are cut (both ways or one way), servers are killed and
// restarted (and, for file stores, lose power: unsynced writes vanish), streams are closed
// and opened again on a running server, leaders step down, messages are deleted, a subject
// is purged (keeping its newest few), and file-store clusters sometimes restart whole at the
// heal. A memory store is wiped by a kill or a reopen, so those happen only while every
// other replica holds its state. After healing, every replica must hold the same messages at
// the same sequences, every acknowledged message where its PubAck said, and no message twice.
//
// Ticks and frame delays come from a manual clock; fsyncs and PubAck flushes run on real
// event-loop turns with no I/O behind them, so a seed replays the same way.
import { GROUP as GROUP_NAME, StreamCluster } from "../helpers/streamcluster.js";

export interface StreamSimResult {
  seed: number;
  nodes: number;
  storage: "memory" | "file";
  violation: string | null;
  published: number;
  acked: number;
  kills: number;
  powerLosses: number;
  reopens: number;
  catchups: number;
  /** Purge entries applied over more than one turn (summed over replicas). */
  pacedPurges: number;
  fullRestarts: number;
  leaderChanges: number;
}

interface Msg {
  id: string;
  subject: string;
  data: string;
  sentAt: number;
  attempts: number;
  ackSeq: number;
}

export async function runStreamSeed(seed: number, nodes: number, storage: "memory" | "file", faultMs = 3000, healMs = 4000): Promise<StreamSimResult> {
  // Purges are applied 2 sequences a step, one step a turn: each spans many turns, with
  // publishes, snapshots, catch-ups, kills and reopens landing in the middle of it.
  const c = new StreamCluster({ n: nodes, storage, seed, tickMs: 10, snapshotEntries: 64, catchupWindowBytes: 2048, net: { maxDelayMs: 4, dropRate: 0.01 }, purgeStepSeqs: 2, purgeTurnSteps: 1 });
  const rnd = c.rnd;
  const res: StreamSimResult = { seed, nodes, storage, violation: null, published: 0, acked: 0, kills: 0, powerLosses: 0, reopens: 0, catchups: 0, pacedPurges: 0, fullRestarts: 0, leaderChanges: 0 };
  const msgs: Msg[] = [];
  const byToken = new Map<string, Msg>();
  const deleted = new Set<number>();
  let purged = false;
  const down = new Map<string, number>(); // id -> restart time
  let lastLeader = "";
  let t = 0;
  const step = async (): Promise<void> => {
    c.clock.advance(1);
    t++;
    for (let i = 0; i < 3; i++) await new Promise((r) => setImmediate(r));
  };
  const collectAcks = (): void => {
    for (const id of c.ids) {
      const n = c.node(id);
      if (n.acks.size === 0) continue;
      for (const [tok, list] of n.acks) {
        const m = byToken.get(tok);
        if (m === undefined) continue;
        for (const a of list) {
          if (a.error !== undefined) continue;
          if (m.ackSeq !== 0 && m.ackSeq !== a.seq) throw new Error(`${m.id} acked at ${m.ackSeq} and at ${a.seq}`);
          m.ackSeq = a.seq;
        }
      }
      n.acks.clear();
    }
  };
  const publish = (m: Msg): void => {
    const takers = c.ids.filter((id) => c.node(id).up && c.node(id).stream.ingesting);
    if (takers.length === 0) return; // no responders
    const id = takers[rnd.int(takers.length)]!;
    const tok = `${m.id}_${m.attempts++}`;
    byToken.set(tok, m);
    m.sentAt = t;
    c.pub(id, m.subject, m.data, tok, [["Nats-Msg-Id", m.id]]);
  };

  await c.startAll();
  try {
    const end = faultMs + healMs;
    for (; t < end; ) {
      const faulting = t < faultMs;
      if (t === faultMs) {
        c.heal();
        for (const id of [...down.keys()]) {
          down.delete(id);
          await c.start(id);
        }
        if (storage === "file" && rnd.next() < 0.3) {
          // The whole cluster goes down at once (some servers losing power) and comes back.
          for (const id of c.ids) {
            res.catchups += c.node(id).group.catchups;
            res.pacedPurges += c.node(id).group.pacedPurges;
            const power = rnd.next() < 0.5;
            await c.stop(id, power);
            if (power) res.powerLosses++;
            else res.kills++;
          }
          for (const id of c.ids) await c.start(id);
          res.fullRestarts++;
        }
      }
      // New messages while faulting and a little after; retries until acknowledged.
      if (t < faultMs + healMs / 3 && rnd.next() < 0.5) {
        const m: Msg = { id: `m${msgs.length}`, subject: `r.${rnd.int(4)}`, data: `d${msgs.length}`, sentAt: t, attempts: 0, ackSeq: 0 };
        msgs.push(m);
        res.published++;
        publish(m);
      }
      if (t % 50 === 0) for (const m of msgs) if (m.ackSeq === 0 && t - m.sentAt > 300) publish(m);
      if (faulting && rnd.next() < 0.006) {
        const x = rnd.next();
        const id = c.ids[rnd.int(c.ids.length)]!;
        const n = c.node(id);
        // A memory store loses everything on a kill or reopen: like a disk lost, at most a
        // minority at a time, and only while every other replica holds its state.
        const wipeOk = storage === "file" || c.ids.every((o) => o === id || (c.node(o).up && !c.node(o).group.isCatchingUp));
        if (x < 0.25 && n.up && down.size < Math.floor((nodes - 1) / 2) && wipeOk) {
          const power = storage === "file" && rnd.next() < 0.5;
          if (process.env["SIM_TRACE"]) console.log(t, "stop", id, power, JSON.stringify(c.ids.map((i) => c.node(i).up ? c.node(i).group.debugState() : null)));
          res.catchups += n.group.catchups;
          res.pacedPurges += n.group.pacedPurges;
          await c.stop(id, power);
          if (power) res.powerLosses++;
          else res.kills++;
          down.set(id, t + 50 + rnd.int(400));
        } else if (x < 0.45) {
          c.heal();
          c.isolate(id);
        } else if (x < 0.55) {
          c.heal();
          for (const o of c.ids) if (o !== id) c.cut.add(`${o}>${id}`);
        } else if (x < 0.65) {
          c.heal();
        } else if (x < 0.75) {
          // The stream closed and opened again inside the process (as after a full disk).
          if (n.up && wipeOk) {
            if (process.env["SIM_TRACE"]) console.log(t, "reopen", id, JSON.stringify(c.ids.map((i) => c.node(i).up ? c.node(i).group.debugState() : null)));
            res.catchups += n.group.catchups;
            res.pacedPurges += n.group.pacedPurges;
            await c.reopenGroup(id);
            res.reopens++;
          }
        } else if (x < 0.85) {
          const l = c.leaders()[0];
          if (l !== undefined) c.node(l).group.stepdown().catch(() => undefined);
        } else {
          const l = c.leaders()[0];
          const last = l === undefined ? 0 : c.node(l).store.state().lastSeq;
          if (l !== undefined && last > 0 && rnd.next() < 0.5) {
            const seq = 1 + rnd.int(last);
            deleted.add(seq);
            c.node(l).group.deleteMsg(seq, rnd.next() < 0.5).catch(() => undefined);
          } else if (l !== undefined) {
            // Purges keep the newest of r.3 only (r.3's acked messages may then be gone).
            purged = true;
            const req = rnd.next() < 0.5 ? { filter: "r.3", keep: rnd.int(20) } : { filter: "r.3", seq: 1 + rnd.int(last + 1) };
            c.node(l).group.purge(req).catch(() => undefined);
          }
        }
      }
      for (const [id, at] of down) {
        if (t >= at) {
          down.delete(id);
          await c.start(id);
        }
      }
      await step();
      collectAcks();
      const l = c.leaders()[0] ?? "";
      if (l !== "" && l !== lastLeader) {
        res.leaderChanges++;
        lastLeader = l;
      }
    }
    // Drain: every message acknowledged, every replica at the same place.
    const settled = (full: boolean): boolean => {
      collectAcks();
      if (msgs.some((m) => m.ackSeq === 0)) return false;
      const lasts = c.ids.map((id) => c.node(id).store.state().lastSeq);
      return lasts.every((x) => x === lasts[0]) && (!full || c.ids.every((id) => sameContents(c, id, c.ids[0]!)));
    };
    for (let i = 0; i < 20_000 && !settled(i % 100 === 0); i++) {
      if (i % 50 === 0) for (const m of msgs) if (m.ackSeq === 0 && t - m.sentAt > 300) publish(m);
      await step();
    }
    if (!settled(true)) {
      const missing = msgs.filter((m) => m.ackSeq === 0).length;
      const lasts = c.ids.map((id) => `${id}:${c.node(id).store.state().lastSeq}${c.node(id).group.isTakingPublishes ? "*" : ""}`);
      const ref0 = c.contents(c.ids[0]!);
      const diffs = c.ids.slice(1).map((id) => {
        const x = c.contents(id);
        const d: string[] = [];
        for (const [k, v] of ref0) if (x.get(k) !== v) d.push(`-${k}:${v}`);
        for (const [k, v] of x) if (ref0.get(k) !== v) d.push(`+${k}:${v}`);
        return `${id} against ${c.ids[0]}: ${d.length} differ ${d.slice(0, 8).join(" ")}`;
      });
      const states = c.ids.map((id) => `${id}: ${JSON.stringify(c.node(id).group.debugState())} raft ${JSON.stringify({ ...c.node(id).host.status(GROUP_NAME), progress: undefined })}`).concat(diffs);
      throw new Error(`did not settle: ${missing} unacknowledged, last seqs ${lasts.join(" ")}\n${states.join("\n")}`);
    }
    res.acked = msgs.length;
    for (const id of c.ids) {
      res.catchups += c.node(id).group.catchups;
      res.pacedPurges += c.node(id).group.pacedPurges;
    }
    const ref = c.contents(c.ids[0]!);
    const seen = new Map<string, number>();
    for (const [seq, v] of ref) {
      const data = v.split("|")[1]!;
      const prev = seen.get(data);
      if (prev !== undefined) throw new Error(`${data} stored twice, at ${prev} and ${seq}`);
      seen.set(data, seq);
    }
    for (const m of msgs) {
      if (deleted.has(m.ackSeq) || (purged && m.subject === "r.3")) continue;
      const held = ref.get(m.ackSeq);
      if (held === undefined || held.split("|")[1] !== m.data) throw new Error(`acked ${m.id} at ${m.ackSeq} but the store holds ${held}`);
    }
  } catch (e) {
    res.violation = (e as Error).stack ?? String(e);
  }
  await c.stopAll();
  return res;
}

function sameContents(c: StreamCluster, a: string, b: string): boolean {
  if (a === b) return true;
  const x = c.contents(a);
  const y = c.contents(b);
  if (x.size !== y.size) return false;
  for (const [k, v] of x) if (y.get(k) !== v) return false;
  const sa = c.node(a).store.state();
  const sb = c.node(b).store.state();
  return sa.firstSeq === sb.firstSeq || sa.msgs === 0;
}
