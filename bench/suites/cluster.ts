// Cluster routes (issue 16): three servers of the kind under test, each routing to the first;
// publisher on server 1, subscriber on server 2 (one route hop), and request/reply with the
// requester on server 1 and the responder on server 2.
//
// Each case starts its own three servers (the runner's single server is not used) and stops
// them after the case. Interest crosses a route asynchronously, so before measuring, a probe
// subject that the receiving side subscribed to after its real subscriptions is published
// until it arrives (one route carries a server's interest in order); the probe messages are
// then subtracted.

import { RawConn, TCP } from "../lib/conn.js";
import { deadlineAfter, latencyStats, nowNs, payloadOf, pubFrame, publishFrames, sleep, waitFor } from "../lib/load.js";
import { freePort, HOST, ServerProc } from "../lib/servers.js";
import type { BenchOptions, CaseContext, CaseDef, MetricDef, SuiteDef } from "../lib/types.js";
import { RATE_METRICS } from "./core.js";

const LATENCY_METRICS: MetricDef[] = [
  { label: "p50", unit: "µs", better: "lower" },
  { label: "p99", unit: "µs", better: "lower" },
];

const AHEAD_BYTES = 32 * 1024 * 1024;

function clusterConfig(i: number, clusterPort: number, seedPort: number): string {
  return `server_name: bench-${i}\ncluster {\n  name: bench\n  listen: "${HOST}:${clusterPort}"\n  routes: [ "nats-route://${HOST}:${seedPort}" ]\n}\n`;
}

class Trio {
  readonly conns: RawConn[] = [];
  private constructor(readonly procs: ServerProc[]) {}

  static async start(ctx: CaseContext): Promise<Trio> {
    const seed = await freePort();
    const procs: ServerProc[] = [];
    try {
      for (let i = 1; i <= 3; i++) {
        const port = i === 1 ? seed : await freePort();
        procs.push(await ServerProc.start({ name: ctx.server.name, jetstream: false, config: clusterConfig(i, port, seed) }));
      }
    } catch (e) {
      await Promise.all(procs.map((p) => p.stop()));
      throw e;
    }
    return new Trio(procs);
  }

  async connect(server: number, mode: "count" | "detail"): Promise<RawConn> {
    const c = await RawConn.connect({ port: this.procs[server]!.port, host: HOST, mode, handshakeTimeoutMs: 10_000, transport: TCP });
    this.conns.push(c);
    return c;
  }

  async stop(): Promise<void> {
    for (const c of this.conns.splice(0)) c.close();
    await Promise.all(this.procs.map((p) => p.stop()));
  }
}

/** Publish `subject` from `from` every 10 ms until `arrived()`; bounded. */
async function probe(from: RawConn, subject: string, arrived: () => boolean, what: string): Promise<void> {
  const end = performance.now() + 20_000;
  const payload = payloadOf(1);
  while (!arrived()) {
    if (performance.now() > end) throw new Error(`${what}: interest did not cross the route in 20 s`);
    from.queuePub(subject, null, payload);
    from.flush();
    await sleep(10);
  }
  await from.ping();
  // Probes already on the route arrive before anything sent after them; let them land.
  await sleep(100);
}

async function withTrio<R>(ctx: CaseContext, body: (t: Trio) => Promise<R>): Promise<R> {
  const t = await Trio.start(ctx);
  try {
    return await body(t);
  } finally {
    await t.stop();
  }
}

/** Publisher on server 1, one counting subscriber on server 2; rate = received msgs/s. */
async function routedPubSub(t: Trio, opts: BenchOptions, size: number): Promise<Record<string, number>> {
  const subject = "bench.cluster.ps";
  const sub = await t.connect(1, "count");
  sub.sub(subject);
  sub.sub("bench.cluster.probe");
  sub.flush();
  await sub.ping();
  const pub = await t.connect(0, "count");
  await probe(pub, "bench.cluster.probe", () => sub.received > 0, "pub -> sub");
  sub.received = 0;
  const frame = pubFrame(subject, payloadOf(size));
  const aheadMsgs = Math.max(1000, Math.floor(AHEAD_BYTES / (frame.length + 16)));
  let wake: (() => void) | null = null;
  sub.onProgress = () => {
    const w = wake;
    wake = null;
    w?.();
  };
  const gate = (sent: number): Promise<void> | null => {
    if (sent - sub.received <= aheadMsgs) return null;
    return new Promise<void>((resolve, reject) => {
      const check = (): void => {
        if (sent - sub.received <= aheadMsgs) return resolve();
        if (sub.closed) return reject(new Error(`subscriber closed: ${sub.errors.at(-1) ?? "?"}`));
        wake = check;
      };
      check();
    });
  };
  const t0 = nowNs();
  const sent = await publishFrames(pub, frame, { maxMsgs: Infinity, deadlineNs: deadlineAfter(opts.durationS), gate });
  await waitFor([sub, pub], () => sub.received >= sent, () => sub.received, 10_000, "waiting for the subscriber");
  const s = (nowNs() - t0) / 1e9;
  return { "msgs/s": sent / s, "MB/s": (sent * size) / 1e6 / s };
}

/** Requester on server 1, responder on server 2, one request in flight. */
async function routedRequestReply(t: Trio, opts: BenchOptions, size: number): Promise<Record<string, number>> {
  const payload = payloadOf(size);
  const responder = await t.connect(1, "detail");
  let responderProbed = false;
  responder.sub("bench.cluster.rr", (_s, reply) => {
    if (reply !== null) {
      responder.queuePub(reply, null, payload);
      responder.flush();
    }
  });
  responder.sub("bench.cluster.rrprobe", () => {
    responderProbed = true;
  });
  responder.flush();
  await responder.ping();
  const requester = await t.connect(0, "detail");
  const inbox = "_INBOX.bench.crr";
  const warm = Math.max(100, Math.floor(opts.rtt / 10));
  const total = warm + opts.rtt;
  const lat: number[] = [];
  let i = 0;
  let sentAt = 0;
  let requesterProbed = false;
  let done: (() => void) | null = null;
  const sendNext = (): void => {
    sentAt = nowNs();
    requester.queuePub("bench.cluster.rr", `${inbox}.${i}`, payload);
    requester.flush();
  };
  requester.sub(`${inbox}.*`, () => {
    const tn = nowNs();
    if (i >= warm) lat.push(tn - sentAt);
    i++;
    if (i < total) sendNext();
    else done?.();
  });
  requester.sub("bench.cluster.rqprobe", () => {
    requesterProbed = true;
  });
  requester.flush();
  await requester.ping();
  await probe(requester, "bench.cluster.rrprobe", () => responderProbed, "responder interest");
  await probe(responder, "bench.cluster.rqprobe", () => requesterProbed, "requester interest");
  const finished = new Promise<void>((resolve) => (done = resolve));
  sendNext();
  await Promise.race([finished, waitFor([requester, responder], () => i >= total, () => i, 10_000, "request/reply")]);
  return latencyStats(lat);
}

export const clusterSuite: SuiteDef = {
  name: "cluster",
  jetstream: false,
  notes: [
    "Each case starts three servers of the kind under test, cluster { listen, routes: [server 1] } (full mesh by gossip), on 127.0.0.1, and stops them after; all of them and the load generator share the machine's cores.",
    "pub -> sub: the publisher on server 1, one counting subscriber on server 2 (one route hop), gated as in core; rate = received msgs/s. Interest is probed across the route before the clock starts.",
    "request/reply: requester on server 1, raw-socket responder on server 2, one request in flight; p50/p99 round trip over --rtt requests after a warm-up (two route hops per request).",
  ],
  cases(_opts: BenchOptions): CaseDef[] {
    return [
      { name: "routed pub -> sub, 16 B", metrics: RATE_METRICS, run: (c) => withTrio(c, (t) => routedPubSub(t, c.opts, 16)) },
      { name: "routed pub -> sub, 1 KiB", metrics: RATE_METRICS, run: (c) => withTrio(c, (t) => routedPubSub(t, c.opts, 1024)) },
      { name: "routed request/reply, 16 B", metrics: LATENCY_METRICS, run: (c) => withTrio(c, (t) => routedRequestReply(t, c.opts, 16)) },
    ];
  },
};
