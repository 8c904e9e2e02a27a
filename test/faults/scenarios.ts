// Fault scenarios over a FaultRig: publishers (or KV clients) run while a nemesis hurts the
// stream's leader again and again; then every fault is healed, every server brought back, the
// replicas converge, the servers stop, and each one's copy is read from its own store and
// judged: nothing acknowledged lost, no message id stored twice, no sequence acknowledged for
// two different messages (two leaders acking the same sequence), every replica the same.

import { connect } from "@nats-io/transport-node";
import { jetstreamManager } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import { FaultRig } from "./rig.js";
import { Publishers, KvWorkload, type KvOp } from "./workload.js";
import { checkQueue, type QueueResult } from "../checkers/queue.js";
import { checkLinearizable, kvModel, type CheckResult } from "../checkers/linearizable.js";
import { until } from "../helpers/until.js";

/** kill: SIGKILL the leader, restart it after a while. killall: SIGKILL every server at once,
 *  restart them all. pause: SIGSTOP the leader, SIGCONT it
 *  later. isolate: block every route link of the leader (loopback mesh). partition: drop its
 *  packets to and from the others (network namespaces). */
export type Fault = "kill" | "killall" | "pause" | "isolate" | "partition" | "peerremove";

export interface StreamScenario {
  n: number;
  replicas: number;
  net: "mesh" | "netns";
  faults: Fault[];
  /** How long the nemesis runs. */
  seconds: number;
  /** How long a server stays down, paused or cut off. */
  faultMs: number;
  /** Quiet time between faults. */
  quietMs: number;
  writers: number;
  /** Kill this many servers at once on "kill" (the leader and others). */
  killAtOnce?: number;
  /** Vary each fault's length: faultMs, 2x, 4x in turn (long runs: a 10 s SIGSTOP). */
  vary?: boolean;
  log?: (s: string) => void;
}

export interface StreamReport {
  events: string[];
  failoversMs: number[];
  queue: QueueResult;
  perReplica: QueueResult[];
  /** Sequences acked for more than one message id. */
  seqConflicts: string[];
  /** Acked ids whose acked sequence holds something else on the replicas. */
  seqMismatches: string[];
  /** Replicas whose contents differ from the first one: "name: how". */
  divergent: string[];
  /** Messages refused by every attempt but stored. */
  failedButStored: string[];
  stored: number;
  outcomes: Record<string, number>;
  /** Publishes that failed for good, with their attempts' errors. */
  failed: string[];
  /** The servers' logs (tails), for a failure report. */
  logs: string;
}

const STREAM = "FAULTS";

/** The leader every live server agrees on, waiting for one (bounded). */
async function waitLeader(rig: FaultRig, stream: string, boundMs = 20_000, not = ""): Promise<string> {
  let l = "";
  await until(`a leader for ${stream}`, async () => {
    l = await rig.streamLeader(stream);
    return l !== "" && l !== not;
  }, boundMs);
  return l;
}

async function nemesis(rig: FaultRig, sc: StreamScenario, stream: string, pubs: Publishers | null, events: string[], failovers: number[]): Promise<void> {
  const end = Date.now() + sc.seconds * 1000;
  const log = (s: string): void => {
    events.push(`${new Date().toISOString().slice(11, 23)} ${s}`);
    sc.log?.(s);
  };
  for (let k = 0; Date.now() < end; k++) {
    const fault = sc.faults[k % sc.faults.length]!;
    const leader = await waitLeader(rig, stream);
    const li = rig.index(leader);
    const faultMs = sc.vary === true ? sc.faultMs * 2 ** (Math.floor(k / sc.faults.length) % 3) : sc.faultMs;
    switch (fault) {
      case "killall": {
        const all = rig.nodes.map((_, i) => i);
        await Promise.all(all.map((v) => rig.kill(v)));
        log(`SIGKILL every server (leader ${leader})`);
        await sleep(faultMs / 2);
        for (const v of all) await rig.startNode(v);
        log("restarted every server");
        const next = await waitLeader(rig, stream, 30_000).catch(() => "");
        log(`leader after the restart ${next || "(none)"}`);
        break;
      }
      case "kill": {
        const victims = [li];
        for (let j = 1; j < (sc.killAtOnce ?? 1); j++) victims.push(rig.nodes.findIndex((_, x) => !victims.includes(x) && rig.nodes[x]!.proc !== null));
        await Promise.all(victims.map((v) => rig.kill(v)));
        // From the moment the processes are gone (acks already sent do not count).
        const t = performance.now();
        log(`SIGKILL ${victims.map((v) => rig.nodes[v]!.name).join(", ")} (leader ${leader})`);
        const next = await waitLeader(rig, stream, 20_000, leader).catch(() => "");
        log(`new leader ${next || "(none)"}`);
        if (pubs !== null) {
          await until("a PubAck after the kill", () => pubs.firstAckAfter(t) !== null, 20_000).catch(() => undefined);
          const a = pubs.firstAckAfter(t);
          if (a !== null) failovers.push(Math.round(a - t));
        }
        await sleep(faultMs);
        for (const v of victims) await rig.startNode(v);
        log(`restarted ${victims.map((v) => rig.nodes[v]!.name).join(", ")}`);
        break;
      }
      case "pause": {
        rig.pause(li);
        log(`SIGSTOP ${leader} for ${faultMs} ms`);
        await sleep(faultMs);
        rig.resume(li);
        log(`SIGCONT ${leader}`);
        break;
      }
      case "isolate": {
        rig.mesh!.isolate(leader);
        log(`isolate ${leader} (route links stalled) for ${faultMs} ms`);
        await sleep(faultMs);
        // Alternate: deliver what was held (a long stall), or reset (a partition ending in resets).
        const reset = k % 2 === 1;
        rig.mesh!.heal(reset);
        log(`heal ${leader}${reset ? " (connections reset)" : ""}`);
        break;
      }
      case "peerremove": {
        // Jepsen's NATS scenario: a member (a follower, then the leader, in turn) is cut off
        // and STREAM.PEER.REMOVE'd while cut off; publishes go on; then the link heals.
        const members = await streamMembers(rig, stream);
        const target = k % 2 === 0 ? (members.find((m) => m !== leader) ?? leader) : leader;
        const ti = rig.index(target);
        const others = rig.nodes.map((_, i) => i).filter((i) => i !== ti);
        if (rig.tnet !== null) rig.tnet.partition([[ti], others]);
        else rig.mesh!.isolate(target);
        log(`cut off ${target} (of ${members.join(",")}, leader ${leader}) and remove it from ${stream}`);
        const nc = await connect({ servers: rig.urls()[others.find((i) => rig.nodes[i]!.proc !== null)!]!, noRandomize: true });
        try {
          const r = await nc.request(`$JS.API.STREAM.PEER.REMOVE.${stream}`, JSON.stringify({ peer: target }), { timeout: 15_000 });
          log(`peer remove ${target}: ${r.string().slice(0, 160)}`);
        } catch (e) {
          log(`peer remove ${target}: ${(e as Error).message}`);
        } finally {
          await nc.close();
        }
        await sleep(faultMs);
        rig.tnet?.heal();
        rig.mesh?.heal();
        log(`heal ${target}; members now ${(await streamMembers(rig, stream)).join(",")}`);
        break;
      }
      case "partition": {
        const others = rig.nodes.map((_, i) => i).filter((i) => i !== li);
        rig.tnet!.partition([[li], others]);
        log(`partition ${leader} | ${others.map((i) => rig.nodes[i]!.name).join(",")} for ${faultMs} ms`);
        await sleep(faultMs);
        rig.tnet!.heal();
        log(`heal ${leader}`);
        break;
      }
    }
    await sleep(sc.quietMs);
    log(`leader now ${await rig.streamLeader(stream)}`);
  }
}

/** The stream's members as its leader's copy reports them (leader first). */
async function streamMembers(rig: FaultRig, stream: string): Promise<string[]> {
  const leader = await waitLeader(rig, stream);
  const d = await rig.streamAt(rig.index(leader), stream);
  return [leader, ...(d?.cluster?.replicas ?? []).map((r) => r.name)];
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** Heal every fault and bring every server back. */
async function healAll(rig: FaultRig): Promise<void> {
  rig.mesh?.heal();
  rig.tnet?.heal();
  for (let i = 0; i < rig.nodes.length; i++) {
    const nd = rig.nodes[i]!;
    if (nd.paused) rig.resume(i);
    if (nd.proc === null) await rig.startNode(i);
  }
}

export async function runStreamScenario(sc: StreamScenario): Promise<StreamReport> {
  const rig = await FaultRig.start({ n: sc.n, net: sc.net, prefix: "tsnats-faults-" });
  const events: string[] = [];
  const failovers: number[] = [];
  let pubs: Publishers | null = null;
  try {
    await rig.waitMetaLeader();
    const nc = await connect({ servers: rig.urls(), noRandomize: true });
    try {
      const jsm = await jetstreamManager(nc);
      const created = await jsm.streams.add({ name: STREAM, subjects: ["f.>"], num_replicas: sc.replicas, duplicate_window: 120_000_000_000 });
      if (created.config.num_replicas !== sc.replicas) throw new Error("replicas");
    } finally {
      await nc.close();
    }
    await waitLeader(rig, STREAM);
    pubs = new Publishers({ urls: rig.urls(), writers: sc.writers, subject: (w) => `f.${w}`, attempts: 8, timeoutMs: 2000, gapMs: 0 });
    await pubs.start();
    await until("the first PubAck", () => pubs!.stats.ackTimes.length > 0, 20_000);
    await nemesis(rig, sc, STREAM, pubs, events, failovers);
    await healAll(rig);
    events.push("healed");
    // Some publishes after the heal, then stop the writers.
    const n0 = pubs.stats.ackTimes.length;
    await until("PubAcks after the heal", () => pubs!.stats.ackTimes.length > n0 + 10, 30_000);
    await pubs.stop();
    // After peer removals only the stream's members hold it.
    const which = sc.faults.includes("peerremove") ? (await streamMembers(rig, STREAM)).map((m) => rig.index(m)) : rig.nodes.map((_, i) => i);
    events.push(`judged on ${which.map((i) => rig.nodes[i]!.name).join(",")}`);
    return await judgeStream(rig, pubs, STREAM, events, failovers, which);
  } catch (e) {
    await pubs?.stop().catch(() => undefined);
    (e as Error).message += `\nevents:\n${events.join("\n")}\nlogs:\n${rig.logs()}`;
    throw e;
  } finally {
    await rig.close();
  }
}

async function judgeStream(rig: FaultRig, pubs: Publishers, stream: string, events: string[], failovers: number[], all: number[]): Promise<StreamReport> {
  await rig.waitConverged(stream, all, 60_000);
  for (const i of all) await rig.stopNode(i);
  const copies = [];
  for (const i of all) copies.push(await rig.readReplica(i, stream));
  const first = copies[0]!;
  const divergent: string[] = [];
  copies.forEach((c, i) => {
    if (i === 0) return;
    if (c.size !== first.size) divergent.push(`${rig.nodes[i]!.name}: ${c.size} messages, ${rig.nodes[0]!.name} ${first.size}`);
    for (const [seq, [subj, data]] of first) {
      const o = c.get(seq);
      if (o === undefined || o[0] !== subj || o[1] !== data) {
        divergent.push(`${rig.nodes[i]!.name}: seq ${seq} is ${JSON.stringify(o)}, ${rig.nodes[0]!.name} has ${data}`);
        break;
      }
    }
  });
  const reads = (c: Map<number, [string, string]>): string[] => [...c.values()].map((x) => x[1]);
  const queue = checkQueue(pubs.history(reads(first)));
  const perReplica = copies.map((c) => checkQueue(pubs.history(reads(c))));
  const bySeq = new Map<number, Set<string>>();
  const seqMismatches: string[] = [];
  const failedButStored: string[] = [];
  const storedValues = new Set(reads(first));
  const outcomes: Record<string, number> = {};
  for (const r of pubs.stats.records) {
    outcomes[r.outcome] = (outcomes[r.outcome] ?? 0) + 1;
    if (r.outcome === "fail" && storedValues.has(r.value)) failedButStored.push(`${r.value} (${r.errors.join(",")})`);
    for (const s of r.seqs) {
      let set = bySeq.get(s);
      if (set === undefined) bySeq.set(s, (set = new Set()));
      set.add(r.value);
      for (const c of copies) {
        const got = c.get(s);
        if (got?.[1] !== r.value) {
          seqMismatches.push(`${r.value} acked as seq ${s}, a replica holds ${JSON.stringify(got)}`);
          break;
        }
      }
    }
    if (new Set(r.seqs).size > 1) seqMismatches.push(`${r.value} acked with different sequences ${r.seqs.join(",")}`);
  }
  const seqConflicts = [...bySeq].filter(([, v]) => v.size > 1).map(([s, v]) => `seq ${s}: ${[...v].join(", ")}`);
  return { events, failoversMs: failovers, queue, perReplica, seqConflicts, seqMismatches, divergent, failedButStored, stored: first.size, outcomes, failed: pubs.stats.records.filter((r) => r.outcome !== "ok").map((r) => `${r.value}: ${r.outcome} (${r.errors.join(",")})`), logs: rig.logs() };
}

// ---- KV ----

export interface KvScenario {
  n: number;
  net: "mesh" | "netns";
  faults: Fault[];
  seconds: number;
  faultMs: number;
  quietMs: number;
  clients: number;
  keys: number;
  seed: number;
  log?: (s: string) => void;
}

export interface KvReport {
  events: string[];
  ops: number;
  unknown: number;
  result: CheckResult;
  errors: string[];
  /** Writes of the failing key left out of the history (refused, or 503), with why. */
  dropped: Array<{ op: KvOp; why: string; at: number }>;
  /** The failing key's operations (when not linearizable). */
  history: KvOp[];
}

export async function runKvScenario(sc: KvScenario): Promise<KvReport> {
  const rig = await FaultRig.start({ n: sc.n, net: sc.net, prefix: "tsnats-faults-kv-" });
  const events: string[] = [];
  let wl: KvWorkload | null = null;
  try {
    await rig.waitMetaLeader();
    const nc = await connect({ servers: rig.urls(), noRandomize: true });
    try {
      await new Kvm(nc).create("reg", { replicas: 3, history: 1 });
    } finally {
      await nc.close();
    }
    await waitLeader(rig, "KV_reg");
    wl = new KvWorkload({ urls: rig.urls(), bucket: "reg", clients: sc.clients, keys: sc.keys, timeoutMs: 2000, seed: sc.seed });
    await wl.start();
    await until("the first KV writes", () => wl!.ops.some((o) => o.ret !== Infinity && o.input.f !== "get"), 20_000);
    await nemesis(rig, { ...sc, n: sc.n, replicas: 3, writers: 0 }, "KV_reg", null, events, []);
    await healAll(rig);
    const n0 = wl.ops.length;
    await until("KV ops after the heal", () => wl!.ops.length > n0 + 20, 30_000);
    await wl.stop();
    const result = checkLinearizable(kvModel, wl.ops);
    return { events, errors: wl.errors, ops: wl.ops.length, unknown: wl.ops.filter((o) => o.ret === Infinity).length, result, history: result.ok ? [] : wl.ops.filter((o) => o.part === result.badPart), dropped: result.ok ? [] : wl.dropped.filter((d) => d.op.part === result.badPart) };
  } catch (e) {
    await wl?.stop().catch(() => undefined);
    (e as Error).message += `\nevents:\n${events.join("\n")}\nlogs:\n${rig.logs()}`;
    throw e;
  } finally {
    await rig.close();
  }
}

