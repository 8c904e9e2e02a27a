// A stream leader SIGSTOPped while publishes and KV compare-and-set writes are in flight (some
// sit in its socket buffers, some are proposed and not committed), a new leader elected that
// takes writes, then the old one SIGCONTed. Every reply any attempt got, also one arriving
// after the client gave up on it, must agree with what the replicas finally store: a PubAck
// names the sequence that holds that message, an error is for a message that is not stored,
// no message id is stored twice, and the replicas are identical.

import { test } from "node:test";
import assert from "node:assert/strict";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { jetstreamManager } from "@nats-io/jetstream";
import { FaultRig } from "../faults/rig.js";
import { judgeReplies, KvCasWriters, StreamWriters, type Reply } from "../faults/replies.js";
import { until } from "../helpers/until.js";

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

const CYCLES = Number(process.env["PAUSE_CYCLES"] ?? 4);

function acksSince(replies: Reply[], t: number): number {
  let n = 0;
  for (const r of replies) if (r.at > t && (r.kind === "ack" || r.kind === "dup")) n++;
  return n;
}

void test("faults: a SIGSTOPped leader resumed after a new leader took writes answers nothing that contradicts what is stored (publishes with msg ids, KV CAS)", async (t) => {
  const rig = await FaultRig.start({ n: 3, net: "mesh", prefix: "tsnats-pause-" });
  const conns: NatsConnection[] = [];
  let sw: StreamWriters | null = null;
  let kw: KvCasWriters | null = null;
  const events: string[] = [];
  const log = (s: string): void => {
    events.push(`${new Date().toISOString().slice(11, 23)} ${s}`);
    t.diagnostic(s);
  };
  try {
    await rig.waitMetaLeader();
    const admin = await connect({ servers: rig.urls(), noRandomize: true });
    try {
      const jsm = await jetstreamManager(admin);
      await jsm.streams.add({ name: "PAUSE", subjects: ["p.>"], num_replicas: 3, duplicate_window: 120_000_000_000 });
      // A KV bucket's stream shape, every revision kept so each acked write can be found.
      await jsm.streams.add({ name: "KV_pk", subjects: ["$KV.pk.>"], num_replicas: 3, max_msgs_per_subject: -1, allow_rollup_hdrs: true, deny_delete: true, allow_direct: true });
    } finally {
      await admin.close();
    }
    for (let i = 0; i < rig.nodes.length; i++) {
      // Each connection starts on a different server, and stays there (no reconnect elsewhere
      // while the leader is paused: its buffered requests reach it when it resumes).
      const urls = rig.urls().map((_, j) => rig.url((i + j) % rig.nodes.length));
      conns.push(await connect({ servers: urls, noRandomize: true, reconnectTimeWait: 100, maxReconnectAttempts: -1 }));
    }
    sw = new StreamWriters({ conns, perConn: 2, subject: (w) => `p.${w}`, attemptMs: 5000 }, "s");
    kw = new KvCasWriters({ conns, bucket: "pk", keys: 3, perConn: 2, attemptMs: 5000 }, "k");
    sw.start();
    kw.start();
    const leaderOf = async (stream: string, not = ""): Promise<string> => {
      let l = "";
      await until(`a leader for ${stream}`, async () => {
        l = await rig.streamLeader(stream);
        return l !== "" && l !== not;
      }, 20_000);
      return l;
    };
    const progress = async (what: string, stream: string, n: number, since: number): Promise<void> => {
      const rs = (): Reply[] => (stream === "PAUSE" ? sw!.replies : kw!.replies);
      await until(`${n} acks on ${stream} ${what}`, () => acksSince(rs(), since) >= n, 30_000);
    };
    await progress("at the start", "PAUSE", 20, 0);
    await progress("at the start", "KV_pk", 20, 0);
    for (let c = 0; c < CYCLES; c++) {
      const stream = c % 2 === 0 ? "PAUSE" : "KV_pk";
      const old = await leaderOf(stream);
      const oi = rig.index(old);
      log(`leaders: PAUSE ${await rig.streamLeader("PAUSE")}, KV_pk ${await rig.streamLeader("KV_pk")}`);
      await progress("before the pause", stream, 10, performance.now());
      rig.pause(oi);
      const t0 = performance.now();
      log(`SIGSTOP ${old} (leader of ${stream}) at ${Math.round(t0)}`);
      const others = rig.live();
      let next = "";
      await until(`a new leader of ${stream} among the others`, async () => {
        next = await rig.streamLeader(stream, others);
        return next !== "" && next !== old;
      }, 20_000);
      log(`new leader ${next} after ${Math.round(performance.now() - t0)} ms`);
      await progress("from the new leader", stream, 20, performance.now());
      // Paused long enough for the others to drop its routes (ping_interval 1s, ping_max 2)
      // in some cycles, not in others.
      const pauseMs = c % 4 < 2 ? 1500 : 5000;
      const left = pauseMs - (performance.now() - t0);
      if (left > 0) await sleep(left);
      rig.resume(oi);
      log(`SIGCONT ${old} after ${Math.round(performance.now() - t0)} ms, at ${Math.round(performance.now())}`);
      let seen = "";
      await until(`${old} follows a new leader of ${stream}`, async () => {
        const d = await rig.streamAt(oi, stream);
        const l = d?.cluster?.leader ?? "";
        seen = d === null ? "no /jsz answer" : `leader "${l}"`;
        return l !== "" && l !== old;
      }, 20_000).catch((e: Error) => {
        throw new Error(`${e.message} (last seen at ${old}: ${seen})`);
      });
      await progress("after the resume", stream, 20, performance.now());
    }
    await sw.stop();
    await kw.stop();
    // Late replies of the last attempts have had their attempt's time to arrive.
    const all = rig.nodes.map((_, i) => i);
    await rig.waitConverged("PAUSE", all, 60_000);
    await rig.waitConverged("KV_pk", all, 60_000);
    for (const nc of conns) await nc.close();
    conns.length = 0;
    for (const i of all) await rig.stopNode(i);
    const problems: string[] = [];
    for (const [stream, replies, perAttempt] of [["PAUSE", sw.replies, false], ["KV_pk", kw.replies, true]] as const) {
      const copies = [];
      for (const i of all) copies.push(await rig.readReplica(i, stream));
      const first = copies[0]!;
      copies.forEach((c, i) => {
        if (JSON.stringify([...c]) !== JSON.stringify([...first])) problems.push(`${stream}: ${rig.nodes[i]!.name}'s copy differs from ${rig.nodes[0]!.name}'s (${c.size} vs ${first.size} messages)`);
      });
      const seen = new Set<string>();
      for (const [seq, [, v]] of first) {
        if (seen.has(v)) problems.push(`${stream}: ${v} stored twice (again at ${seq})`);
        seen.add(v);
      }
      const kinds: Record<string, number> = {};
      for (const r of replies) kinds[r.kind === "err" ? `err ${r.code}` : r.kind] = (kinds[r.kind === "err" ? `err ${r.code}` : r.kind] ?? 0) + 1;
      t.diagnostic(`${stream}: ${first.size} stored, replies ${JSON.stringify(kinds)}`);
      problems.push(...judgeReplies(replies, first, perAttempt).map((p) => `${stream}: ${p}`));
    }
    assert.deepEqual(problems.slice(0, 30), [], `events:\n${events.join("\n")}`);
  } catch (e) {
    // The servers' logs and the events, for a failure before the judging above.
    process.stderr.write(`events:\n${events.join("\n")}\n${rig.logs()}\n`);
    throw e;
  } finally {
    await sw?.stop().catch(() => undefined);
    await kw?.stop().catch(() => undefined);
    sw?.close();
    kw?.close();
    for (const nc of conns) await nc.close().catch(() => undefined);
    await rig.close();
  }
});
