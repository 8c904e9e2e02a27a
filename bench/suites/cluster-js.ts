// Replicated JetStream (issue 17): three servers of the kind under test with JetStream and
// cluster {}, an R3 file stream, and
//   - async publish with a window of PubAcks in flight (16 B and 1 KiB): msgs/s, ack p50/p99;
//   - failover: SIGKILL of the stream leader, then the time until the next PubAck, with the
//     publisher (on a server that is not killed) retrying every 50 ms; the killed server is
//     restarted on the same store and the stream waits for every replica to be current before
//     the next kill.
//
// Each case starts its own three servers and stops them after. A server that refuses R3 (or
// has no clustered JetStream) shows up as an "error: ..." cell.

import { RawConn, statusCode, TCP } from "../lib/conn.js";
import { createStream, windowedRequests } from "../lib/js.js";
import { deadlineAfter, latencyStats, payloadOf, sleep } from "../lib/load.js";
import { Requester } from "../lib/request.js";
import { freePort, HOST, ServerProc } from "../lib/servers.js";
import type { BenchOptions, CaseContext, CaseDef, MetricDef, SuiteDef } from "../lib/types.js";

const PUBLISH_METRICS: MetricDef[] = [
  { label: "msgs/s", unit: "msgs/s", better: "higher" },
  { label: "ack p50", unit: "µs", better: "lower" },
  { label: "ack p99", unit: "µs", better: "lower" },
];
const FAILOVER_METRICS: MetricDef[] = [
  { label: "p50", unit: "ms", better: "lower" },
  { label: "max", unit: "ms", better: "lower" },
];
const WINDOW = 256;
const KILLS = 10;
const STREAM = "BENCHR3";
const SUBJECT = "bench.r3";

function config(i: number, clusterPorts: number[], extra: string): string {
  const routes = clusterPorts.map((p) => `"nats-route://${HOST}:${p}"`).join(", ");
  return (
    `server_name: bench-js-${i}\n` +
    `cluster {\n  name: benchjs\n  listen: "${HOST}:${clusterPorts[i - 1]}"\n  routes: [ ${routes} ]\n}\n` +
    extra
  );
}

interface MetaInfo {
  cluster?: { leader?: string; replicas?: Array<{ name: string; current: boolean }> };
  state?: { last_seq: number };
}

class JsTrio {
  private readonly conns: RawConn[] = [];
  private constructor(readonly procs: ServerProc[]) {}

  static async start(ctx: CaseContext, extra: string): Promise<JsTrio> {
    const clusterPorts = [await freePort(), await freePort(), await freePort()];
    const procs: ServerProc[] = [];
    try {
      for (let i = 1; i <= 3; i++) {
        procs.push(await ServerProc.start({ name: ctx.server.name, jetstream: true, config: config(i, clusterPorts, extra) }));
      }
    } catch (e) {
      await Promise.all(procs.map((p) => p.stop()));
      throw e;
    }
    return new JsTrio(procs);
  }

  async connect(server: number): Promise<RawConn> {
    const c = await RawConn.connect({ port: this.procs[server]!.port, host: HOST, mode: "detail", handshakeTimeoutMs: 10_000, transport: TCP });
    this.conns.push(c);
    return c;
  }

  async requester(server: number): Promise<Requester> {
    return new Requester(await this.connect(server));
  }

  indexOf(serverName: string): number {
    const m = /^bench-js-(\d)$/.exec(serverName);
    return m === null ? -1 : Number(m[1]) - 1;
  }

  async stop(): Promise<void> {
    for (const c of this.conns.splice(0)) c.close();
    await Promise.all(this.procs.map((p) => p.stop()));
  }
}

/** Create the R3 stream, retrying while the meta group elects its first leader (bounded). */
async function createR3(req: Requester): Promise<void> {
  const end = performance.now() + 30_000;
  for (;;) {
    try {
      await createStream(req, { name: STREAM, subjects: [SUBJECT], storage: "file", num_replicas: 3 });
      return;
    } catch (e) {
      const msg = (e as Error).message;
      // 10008 (meta group leaderless) or 10005 (peers not all known yet) right after start.
      if (performance.now() > end || !/10008|10005|temporarily unavailable|no suitable peers|timed out|no responders/.test(msg)) throw e;
      await sleep(250);
    }
  }
}

async function info(req: Requester): Promise<MetaInfo> {
  return req.api<MetaInfo>(`$JS.API.STREAM.INFO.${STREAM}`, undefined, 2_000);
}

/** Wait (bounded) until the stream has a leader and every replica reports current. */
async function waitCurrent(req: Requester, what: string): Promise<string> {
  const end = performance.now() + 60_000;
  let last = "";
  for (;;) {
    try {
      const i = await info(req);
      const leader = i.cluster?.leader ?? "";
      const reps = i.cluster?.replicas ?? [];
      if (leader !== "" && reps.length === 2 && reps.every((r) => r.current)) return leader;
      last = JSON.stringify(i.cluster ?? {});
    } catch (e) {
      last = (e as Error).message;
    }
    if (performance.now() > end) throw new Error(`${what}: replicas not current in 60 s (${last})`);
    await sleep(100);
  }
}

async function withJsTrio<R>(ctx: CaseContext, extra: string, body: (t: JsTrio) => Promise<R>): Promise<R> {
  const t = await JsTrio.start(ctx, extra);
  try {
    return await body(t);
  } finally {
    await t.stop();
  }
}

/** Async publish with WINDOW PubAcks in flight from server 1 to the R3 stream. */
async function r3Publish(t: JsTrio, opts: BenchOptions, size: number): Promise<Record<string, number>> {
  const req = await t.requester(0);
  await createR3(req);
  await waitCurrent(req, "after create");
  const pub = await t.connect(0);
  const r = await windowedRequests(pub, {
    subjects: [SUBJECT],
    payload: payloadOf(size),
    window: WINDOW,
    maxMsgs: Infinity,
    deadlineNs: deadlineAfter(opts.durationS),
    collectLatency: true,
    check: (hdr, payload) => {
      const st = statusCode(hdr);
      if (st !== 0) return `status ${st}`;
      return payload.includes('"error"') ? payload.toString("utf8").slice(0, 200) : null;
    },
  });
  const lat = latencyStats(r.lat);
  return { "msgs/s": r.done / (r.ns / 1e9), "ack p50": lat.p50, "ack p99": lat.p99 };
}

/** Publish until one PubAck arrives; each try waits at most 500 ms, tries are 50 ms apart. */
async function nextAck(req: Requester, payload: Buffer, boundMs: number): Promise<void> {
  const end = performance.now() + boundMs;
  for (;;) {
    try {
      const r = await req.request(SUBJECT, payload, 500);
      if (r.status === 0 && !r.payload.includes('"error"')) return;
    } catch {
      /* timed out: the old leader lost quorum, or no leader yet */
    }
    if (performance.now() > end) throw new Error(`no PubAck within ${boundMs} ms of the kill`);
    await sleep(50);
  }
}

async function failover(t: JsTrio): Promise<Record<string, number>> {
  const admin: Requester[] = [await t.requester(0), await t.requester(1), await t.requester(2)];
  await createR3(admin[0]!);
  let leader = await waitCurrent(admin[0]!, "after create");
  const payload = payloadOf(16);
  const times: number[] = [];
  for (let k = 0; k < KILLS; k++) {
    const victim = t.indexOf(leader);
    if (victim < 0) throw new Error(`unknown leader name ${leader}`);
    const survivor = (victim + 1) % 3;
    const pubReq = await t.requester(survivor);
    await nextAck(pubReq, payload, 10_000); // the path works before the kill
    const t0 = performance.now();
    await t.procs[victim]!.kill("SIGKILL");
    await nextAck(pubReq, payload, 30_000);
    times.push(performance.now() - t0);
    await t.procs[victim]!.launch();
    admin[victim] = await t.requester(victim);
    leader = await waitCurrent(admin[survivor]!, `after kill ${k + 1}`);
  }
  times.sort((a, b) => a - b);
  return { p50: times[Math.floor(times.length / 2)]!, max: times[times.length - 1]! };
}

export const clusterJsSuite: SuiteDef = {
  name: "cluster-js",
  jetstream: false,
  notes: [
    "Each case starts three servers of the kind under test with JetStream and cluster { routes: [all three] } on 127.0.0.1, creates an R3 file stream (retrying while the meta group elects), waits until both followers report current, and stops the servers after; all of them and the load generator share the machine's cores.",
    `publish: from server 1 with ${WINDOW} PubAcks in flight for --duration seconds; ack p50/p99 are round trips.`,
    "Durability differs by default: tsnats fsyncs on every replica before the entry counts (PubAck = quorum fsynced); nats-server 2.9.10 syncs its stores every 2 minutes.",
    `failover: ${KILLS} times, SIGKILL of the stream leader (from STREAM.INFO cluster.leader) with a publisher on another server retrying every 50 ms (500 ms per try); time from the kill to the next PubAck. The killed server restarts on its store and all replicas must be current before the next kill.`,
  ],
  cases(_opts: BenchOptions): CaseDef[] {
    return [
      { name: "R3 async publish, 16 B", metrics: PUBLISH_METRICS, run: (c) => withJsTrio(c, "", (t) => r3Publish(t, c.opts, 16)) },
      { name: "R3 async publish, 1 KiB", metrics: PUBLISH_METRICS, run: (c) => withJsTrio(c, "", (t) => r3Publish(t, c.opts, 1024)) },
      { name: "R3 failover: leader SIGKILL -> next PubAck", metrics: FAILOVER_METRICS, run: (c) => withJsTrio(c, "", (t) => failover(t)) },
    ];
  },
};
