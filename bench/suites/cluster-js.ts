// Replicated JetStream (issue 17): three servers of the kind under test with JetStream and
// cluster {}, an R3 file stream, and
//   - async publish with a window of PubAcks in flight (16 B and 1 KiB): msgs/s, ack p50/p99;
//   - failover: SIGKILL of the stream leader, then the time until the next PubAck, with the
//     publisher (on a server that is not killed) retrying every 50 ms; the killed server is
//     restarted on the same store and the stream waits for every replica to be current before
//     the next kill;
//   - replicated consumers and KV (issue 18): pull consume with explicit acks (batch 500) from
//     a durable with 3 replicas; KV put and get on an R3 bucket (p50/p99, one at a time); the
//     servers' CPU with 1,000 idle R3 durables; catch-up MiB/s of a follower that was down
//     while --catchup-mib MiB were published, with a publisher going on during the catch-up
//     (its PubAck p99 before and during).
//
// Each case starts its own three servers and stops them after. A server that refuses R3 (or
// has no clustered JetStream) shows up as an "error: ..." cell.

import { lastTokenNumber, RawConn, statusCode, TCP } from "../lib/conn.js";
import { createConsumer, createStream, pubAckError, windowedRequests } from "../lib/js.js";
import { deadlineAfter, latencyStats, nowNs, payloadOf, sleep, waitFor } from "../lib/load.js";
import { newInboxPrefix, Requester } from "../lib/request.js";
import { freePort, HOST, ServerProc } from "../lib/servers.js";
import { RemoteBystander } from "../lib/hostile.js";
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
const RATE: MetricDef[] = [{ label: "msgs/s", unit: "msgs/s", better: "higher" }];
const KV_METRICS: MetricDef[] = [
  { label: "put p50", unit: "µs", better: "lower" },
  { label: "put p99", unit: "µs", better: "lower" },
  { label: "get p50", unit: "µs", better: "lower" },
  { label: "get p99", unit: "µs", better: "lower" },
];
const CPU_METRICS: MetricDef[] = [{ label: "CPU % of a core (3 servers)", unit: "%", better: "lower" }];
const CATCHUP_METRICS: MetricDef[] = [
  { label: "MiB/s", unit: "MiB/s", better: "higher" },
  { label: "pub p99 before", unit: "µs", better: "lower" },
  { label: "pub p99 during", unit: "µs", better: "lower" },
];
/** The publisher that goes on during the catch-up: 1 KiB messages, this many PubAcks in flight. */
const STEADY_WINDOW = 4;
const STEADY_SIZE = 1024;
const WINDOW = 256;
const CONSUME_MSGS = 50_000;
const BATCH = 500;
const IDLE_CONSUMERS = 1000;
const IDLE_SAMPLE_MS = 10_000;
/** Idle R3 streams, each its own Raft group (quiet groups, coalesced heartbeats). */
const IDLE_STREAMS = 200;
const EMPTY = Buffer.alloc(0);
const KILLS = 10;
const STREAM = "BENCHR3";
const SUBJECT = "bench.r3";
/** Messages of the R3 purge case. */
const PURGE_MSGS = 300_000;

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
  state?: { last_seq: number; messages: number };
}

class JsTrio {
  private readonly conns: RawConn[] = [];
  private constructor(
    readonly procs: ServerProc[],
    /** Monitoring ports (none unless asked for). */
    readonly httpPorts: number[],
  ) {}

  static async start(ctx: CaseContext, extra: string, monitor = false): Promise<JsTrio> {
    const clusterPorts = [await freePort(), await freePort(), await freePort()];
    const httpPorts = monitor ? [await freePort(), await freePort(), await freePort()] : [];
    const procs: ServerProc[] = [];
    try {
      for (let i = 1; i <= 3; i++) {
        const http = monitor ? `http: "${HOST}:${httpPorts[i - 1]}"\n` : "";
        procs.push(await ServerProc.start({ name: ctx.server.name, jetstream: true, config: config(i, clusterPorts, http + extra) }));
      }
    } catch (e) {
      await Promise.all(procs.map((p) => p.stop()));
      throw e;
    }
    return new JsTrio(procs, httpPorts);
  }

  /** Messages in server's JetStream stores (/jsz), -1 while it does not answer. */
  async storedMsgs(server: number): Promise<number> {
    try {
      const r = await fetch(`http://${HOST}:${this.httpPorts[server]}/jsz`, { signal: AbortSignal.timeout(2_000) });
      const j = (await r.json()) as { messages?: number };
      return j.messages ?? -1;
    } catch {
      return -1;
    }
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

async function withJsTrio<R>(ctx: CaseContext, extra: string, body: (t: JsTrio) => Promise<R>, monitor = false): Promise<R> {
  const t = await JsTrio.start(ctx, extra, monitor);
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

/** A purge of a big R3 stream: PURGE_MSGS messages (16 B) stored on every replica, then one
 *  purge keeping the newest; a bystander (a process of its own) pings a follower meanwhile.
 *  Done when every server's /jsz counts one message. */
async function r3Purge(t: JsTrio): Promise<Record<string, number>> {
  const req = await t.requester(0);
  await createR3(req);
  const leader = await waitCurrent(req, "after create");
  const pub = await t.connect(0);
  await windowedRequests(pub, { subjects: [SUBJECT], payload: payloadOf(16), window: WINDOW, maxMsgs: PURGE_MSGS, deadlineNs: deadlineAfter(600), collectLatency: false, check: (hdr) => (statusCode(hdr) !== 0 ? `status ${statusCode(hdr)}` : null) });
  const all = async (n: number): Promise<boolean> => (await Promise.all([0, 1, 2].map((i) => t.storedMsgs(i)))).every((m) => m === n);
  const until = async (n: number, boundMs: number, what: string): Promise<void> => {
    const end = performance.now() + boundMs;
    while (!(await all(n))) {
      if (performance.now() > end) throw new Error(`${what}: not within ${boundMs} ms`);
      await sleep(20);
    }
  };
  await until(PURGE_MSGS, 120_000, `${PURGE_MSGS} messages on every replica`);
  const follower = [0, 1, 2].find((i) => i !== t.indexOf(leader))!;
  const by = await RemoteBystander.start(t.procs[follower]!.port, null);
  try {
    await sleep(100);
    const t0 = performance.now();
    await req.api(`$JS.API.STREAM.PURGE.${STREAM}`, { keep: 1 }, 60_000);
    await until(1, 60_000, "the purge applied on every replica");
    const ms = performance.now() - t0;
    await sleep(100);
    const r = await by.stop();
    return { "bystander PING p50": r.p50, "bystander PING p99": r.p99, "applied everywhere in": ms };
  } finally {
    by.kill();
  }
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

/** Fill the R3 stream with n messages of size bytes from server 1. */
async function fillR3(t: JsTrio, n: number, size: number): Promise<void> {
  const pub = await t.connect(0);
  await windowedRequests(pub, { subjects: [SUBJECT], payload: payloadOf(size), window: WINDOW, maxMsgs: n, deadlineNs: Infinity, collectLatency: false, check: pubAckError });
}

/** Pull consume of CONSUME_MSGS 16 B messages with explicit acks from an R3 durable. */
async function r3Consume(t: JsTrio): Promise<Record<string, number>> {
  const req = await t.requester(0);
  await createR3(req);
  await waitCurrent(req, "after create");
  await fillR3(t, CONSUME_MSGS, 16);
  await createConsumer(req, STREAM, "pull", { ack_policy: "explicit", deliver_policy: "all", max_ack_pending: 20_000, num_replicas: 3 });
  const conn = await t.connect(0);
  const inbox = `${newInboxPrefix()}.pull`;
  const next = `$JS.API.CONSUMER.MSG.NEXT.${STREAM}.pull`;
  const body = Buffer.from(JSON.stringify({ batch: BATCH, expires: 5_000_000_000 }));
  let received = 0;
  let inBatch = 0;
  const more = (): void => conn.queuePub(next, inbox, body);
  conn.sub(inbox, (_s, reply) => {
    if (reply !== null && reply[0] === 0x24) {
      received++;
      conn.queuePub(reply, null, EMPTY);
      if (++inBatch === BATCH) {
        inBatch = 0;
        if (received < CONSUME_MSGS) more();
      }
    } else if (received < CONSUME_MSGS) {
      inBatch = 0;
      more();
    }
  });
  conn.flush();
  await conn.ping();
  const t0 = nowNs();
  more();
  more();
  conn.flush();
  await waitFor([conn], () => received >= CONSUME_MSGS, () => received, 30_000, "R3 pull consume");
  return { "msgs/s": CONSUME_MSGS / ((nowNs() - t0) / 1e9) };
}

/** KV on an R3 bucket: sequential puts (request to $KV.<b>.<k>), then sequential direct gets. */
async function r3Kv(t: JsTrio, opts: BenchOptions): Promise<Record<string, number>> {
  const req = await t.requester(0);
  const end = performance.now() + 30_000;
  for (;;) {
    try {
      await createStream(req, { name: "KV_bench", subjects: ["$KV.bench.>"], storage: "file", num_replicas: 3, max_msgs_per_subject: 1, discard: "new", allow_direct: true, allow_rollup_hdrs: true, deny_delete: true });
      break;
    } catch (e) {
      if (performance.now() > end) throw e;
      await sleep(250);
    }
  }
  const put = await t.requester(0);
  const payload = payloadOf(128);
  const puts: number[] = [];
  const stop = performance.now() + (opts.durationS * 1000) / 2;
  for (let i = 0; performance.now() < stop || puts.length < 100; i++) {
    const t0 = nowNs();
    const r = await put.request(`$KV.bench.k${i % 100}`, payload, 5_000);
    if (r.status !== 0 || r.payload.includes('"error"')) throw new Error(`put: ${r.payload.toString("utf8").slice(0, 200)}`);
    puts.push(nowNs() - t0);
  }
  const get = await t.requester(1);
  const gets: number[] = [];
  const stop2 = performance.now() + (opts.durationS * 1000) / 2;
  for (let i = 0; performance.now() < stop2 || gets.length < 100; i++) {
    const t0 = nowNs();
    const r = await get.request(`$JS.API.DIRECT.GET.KV_bench.$KV.bench.k${i % 100}`, EMPTY, 5_000);
    if (r.status !== 0) throw new Error(`get: status ${r.status}`);
    gets.push(nowNs() - t0);
  }
  const p = latencyStats(puts);
  const g = latencyStats(gets);
  return { "put p50": p.p50, "put p99": p.p99, "get p50": g.p50, "get p99": g.p99 };
}

/** CPU of the three servers over IDLE_SAMPLE_MS with IDLE_CONSUMERS idle R3 durables. */
async function idleConsumers(t: JsTrio): Promise<Record<string, number>> {
  const req = await t.requester(0);
  await createR3(req);
  await waitCurrent(req, "after create");
  // 25 creates in flight (nats-server makes a Raft group for each one)
  for (let i = 0; i < IDLE_CONSUMERS; i += 25) {
    const batch: Promise<void>[] = [];
    for (let k = i; k < Math.min(IDLE_CONSUMERS, i + 25); k++) batch.push(createConsumer(req, STREAM, `idle${k}`, { ack_policy: "explicit", num_replicas: 3 }));
    await Promise.all(batch);
  }
  await sleep(3_000); // let creation settle
  const cpu0 = t.procs.reduce((a, p) => a + p.cpuSeconds(), 0);
  const t0 = performance.now();
  await sleep(IDLE_SAMPLE_MS);
  const cpu = t.procs.reduce((a, p) => a + p.cpuSeconds(), 0) - cpu0;
  return { "CPU % of a core (3 servers)": (cpu * 1000 * 100) / (performance.now() - t0) };
}

/**
 * Publishes to the R3 stream with `window` PubAcks in flight until stop(); each PubAck's
 * round trip is kept with the time it arrived, so a percentile can be taken over a period.
 */
class SteadyPublisher {
  readonly at: number[] = [];
  readonly lat: number[] = [];
  private sent = 0;
  private done = 0;
  private going = true;
  private failure: string | null = null;
  private readonly sentAt: Float64Array;
  private readonly inbox = newInboxPrefix();
  private sid = 0;

  constructor(
    private readonly conn: RawConn,
    private readonly window: number,
    private readonly payload: Buffer,
  ) {
    this.sentAt = new Float64Array(window * 4);
  }

  async start(): Promise<void> {
    const ring = this.sentAt.length;
    this.sid = this.conn.sub(`${this.inbox}.*`, (subject, _reply, hdr, payload) => {
      const t = nowNs();
      const id = lastTokenNumber(subject);
      this.at.push(t);
      this.lat.push(t - this.sentAt[id % ring]!);
      this.done++;
      const err = pubAckError(hdr, payload);
      if (err !== null && this.failure === null) this.failure = err;
      if (this.going) this.sendOne();
    });
    this.conn.flush();
    await this.conn.ping();
    for (let k = 0; k < this.window; k++) this.sendOne();
    this.conn.flush();
  }

  private sendOne(): void {
    const id = this.sent++;
    this.sentAt[id % this.sentAt.length] = nowNs();
    this.conn.queuePub(SUBJECT, `${this.inbox}.${id}`, this.payload);
  }

  /** p99 (µs) of the PubAcks that arrived in [fromNs, toNs). */
  p99(fromNs: number, toNs: number): number {
    const xs: number[] = [];
    for (let i = 0; i < this.at.length; i++) if (this.at[i]! >= fromNs && this.at[i]! < toNs) xs.push(this.lat[i]!);
    if (xs.length === 0) throw new Error("no PubAck in the period");
    return latencyStats(xs).p99;
  }

  async stop(): Promise<void> {
    this.going = false;
    await waitFor([this.conn], () => this.done >= this.sent, () => this.done, 15_000, "steady publisher's last PubAcks");
    this.conn.unsub(this.sid);
    this.conn.flush();
    if (this.failure !== null) throw new Error(`steady publisher: ${this.failure}`);
  }
}

/** CPU of the three servers over IDLE_SAMPLE_MS with IDLE_STREAMS idle R3 streams (a Raft
 *  group each), after one publish to each. */
async function idleStreams(t: JsTrio): Promise<Record<string, number>> {
  const req = await t.requester(0);
  await createR3(req);
  for (let i = 0; i < IDLE_STREAMS; i += 10) {
    const batch: Promise<unknown>[] = [];
    for (let k = i; k < Math.min(IDLE_STREAMS, i + 10); k++) batch.push(createStream(req, { name: `IDLE${k}`, subjects: [`idle.${k}`], storage: "file", num_replicas: 3 }));
    await Promise.all(batch);
  }
  const pub = await t.requester(0);
  for (let k = 0; k < IDLE_STREAMS; k++) {
    const end = performance.now() + 10_000;
    for (;;) {
      const r = await pub.request(`idle.${k}`, payloadOf(16), 2_000).catch(() => null);
      if (r !== null && r.status === 0 && !r.payload.includes('"error"')) break;
      if (performance.now() > end) throw new Error(`no PubAck from stream IDLE${k}`);
      await sleep(100);
    }
  }
  await sleep(5_000); // let the groups settle
  const cpu0 = t.procs.reduce((a, p) => a + p.cpuSeconds(), 0);
  const t0 = performance.now();
  await sleep(IDLE_SAMPLE_MS);
  const cpu = t.procs.reduce((a, p) => a + p.cpuSeconds(), 0) - cpu0;
  return { "CPU % of a core (3 servers)": (cpu * 1000 * 100) / (performance.now() - t0) };
}

/** A follower stopped while `mib` MiB of 16 KiB messages are published, then launched again
 *  while a publisher goes on: MiB per second from its launch until every replica is current,
 *  and the publisher's PubAck p99 in the 3 s before the launch and during the catch-up. */
async function catchUp(t: JsTrio, mib: number): Promise<Record<string, number>> {
  const admin = [await t.requester(0), await t.requester(1), await t.requester(2)];
  await createR3(admin[0]!);
  const leader = await waitCurrent(admin[0]!, "after create");
  const li = t.indexOf(leader);
  const victim = (li + 1) % 3;
  const survivor = (li + 2) % 3;
  await t.procs[victim]!.kill("SIGTERM"); // its store stays for the launch
  const size = 16 * 1024;
  const n = Math.ceil((mib * 1024 * 1024) / size);
  const pub = await t.connect(survivor);
  await windowedRequests(pub, { subjects: [SUBJECT], payload: payloadOf(size), window: 64, maxMsgs: n, deadlineNs: Infinity, collectLatency: false, check: pubAckError });
  const steady = new SteadyPublisher(await t.connect(li), STEADY_WINDOW, payloadOf(STEADY_SIZE));
  await steady.start();
  const b0 = nowNs();
  await sleep(3_000);
  // What the follower must hold: every message stored before its launch. (STREAM.INFO on the
  // leader counts a follower current once its Raft log is, which may be before its store is.)
  const target = (await info(admin[li]!)).state?.messages ?? 0;
  const t0 = performance.now();
  const c0 = nowNs();
  await t.procs[victim]!.launch();
  const end = t0 + 600_000;
  while ((await t.storedMsgs(victim)) < target) {
    if (performance.now() > end) throw new Error("the follower did not catch up in 600 s");
    await sleep(50);
  }
  const secs = (performance.now() - t0) / 1000;
  const c1 = nowNs();
  await waitCurrent(admin[survivor]!, "catch-up");
  await steady.stop();
  return { "MiB/s": mib / secs, "pub p99 before": steady.p99(b0, c0), "pub p99 during": steady.p99(c0, c1) };
}

export const clusterJsSuite: SuiteDef = {
  name: "cluster-js",
  jetstream: false,
  notes: [
    "Each case starts three servers of the kind under test with JetStream and cluster { routes: [all three] } on 127.0.0.1, creates an R3 file stream (retrying while the meta group elects), waits until both followers report current, and stops the servers after; all of them and the load generator share the machine's cores.",
    `publish: from server 1 with ${WINDOW} PubAcks in flight for --duration seconds; ack p50/p99 are round trips.`,
    "Durability differs by default: tsnats fsyncs on every replica before the entry counts (PubAck = quorum fsynced); nats-server 2.9.10 syncs its stores every 2 minutes.",
    `consume: ${CONSUME_MSGS} stored 16 B messages pulled by a durable (num_replicas 3, max_ack_pending 20,000) with batches of ${BATCH}, two pulls in flight, every message acked; client on server 1.`,
    "KV: an R3 bucket's stream made as the clients make it (max_msgs_per_subject 1, allow_direct); puts one at a time from server 1 over 100 keys for half of --duration, then direct gets one at a time from server 2.",
    `idle consumers: ${IDLE_CONSUMERS} durable pull consumers with num_replicas 3 on the R3 stream, nothing published; CPU of the three server processes over ${IDLE_SAMPLE_MS / 1000} s, as % of one core.`,
    `idle streams: ${IDLE_STREAMS} R3 file streams (a Raft group each), one publish to each, 5 s to settle; CPU of the three server processes over ${IDLE_SAMPLE_MS / 1000} s, as % of one core.`,
    `catch-up: a follower stopped, --catchup-mib (default 32) MiB of 16 KiB messages published, the follower launched again; MiB/s from its launch until its /jsz counts every message stored before the launch. Meanwhile a publisher on the leader's server keeps ${STEADY_WINDOW} PubAcks of ${STEADY_SIZE} B in flight: its PubAck p99 in the 3 s before the launch and during the catch-up.`,
    `purge: ${PURGE_MSGS.toLocaleString("en-US")} messages of 16 B published from server 1 (${WINDOW} PubAcks in flight) until every server's /jsz counts them, then $JS.API.STREAM.PURGE with {"keep": 1}; a bystander in a process of its own keeps a PING in flight on a follower (a new one 2 ms after each PONG) from 100 ms before the purge until 100 ms after every /jsz counts 1 message; its p50/p99, and the time from the request to that.`,
    `failover: ${KILLS} times, SIGKILL of the stream leader (from STREAM.INFO cluster.leader) with a publisher on another server retrying every 50 ms (500 ms per try); time from the kill to the next PubAck. The killed server restarts on its store and all replicas must be current before the next kill.`,
  ],
  cases(opts: BenchOptions): CaseDef[] {
    return [
      { name: "R3 async publish, 16 B", metrics: PUBLISH_METRICS, run: (c) => withJsTrio(c, "", (t) => r3Publish(t, c.opts, 16)) },
      { name: "R3 async publish, 1 KiB", metrics: PUBLISH_METRICS, run: (c) => withJsTrio(c, "", (t) => r3Publish(t, c.opts, 1024)) },
      { name: "R3 failover: leader SIGKILL -> next PubAck", metrics: FAILOVER_METRICS, run: (c) => withJsTrio(c, "", (t) => failover(t)) },
      {
        name: "R3 purge of 300,000 messages (keep 1): a follower's bystander",
        metrics: [
          { label: "bystander PING p50", unit: "ms", better: "lower" },
          { label: "bystander PING p99", unit: "ms", better: "lower" },
          { label: "applied everywhere in", unit: "ms", better: "lower" },
        ],
        run: (c) => withJsTrio(c, "", (t) => r3Purge(t), true),
      },
      { name: `R3 pull consume, explicit ack, batch ${BATCH}, 16 B`, metrics: RATE, run: (c) => withJsTrio(c, "", (t) => r3Consume(t)) },
      { name: "R3 KV put / get, 128 B", metrics: KV_METRICS, run: (c) => withJsTrio(c, "", (t) => r3Kv(t, c.opts)) },
      { name: `${IDLE_CONSUMERS} idle R3 durables: CPU`, metrics: CPU_METRICS, run: (c) => withJsTrio(c, "", (t) => idleConsumers(t)) },
      { name: `${IDLE_STREAMS} idle R3 streams: CPU`, metrics: CPU_METRICS, run: (c) => withJsTrio(c, "", (t) => idleStreams(t)) },
      { name: `R3 follower catch-up, ${opts.catchupMib} MiB behind`, metrics: CATCHUP_METRICS, run: (c) => withJsTrio(c, "", (t) => catchUp(t, c.opts.catchupMib), true) },
    ];
  },
};
