// JetStream publish (sync and windowed), store footprint and recovery after SIGKILL.
// Raw sockets throughout; the API calls are plain JSON requests.

import { createStream, deleteStream, fileStreamConfig, pubAckError, streamInfo, windowedRequests } from "../lib/js.js";
import { deadlineAfter, latencyStats, payloadOf, sleep } from "../lib/load.js";
import { dirBytes } from "../lib/servers.js";
import { ENCRYPTED_NOTE, SYNC_INTERVAL_NOTE, encryptedCase, syncIntervalCase } from "../lib/variant.js";
import type { BenchOptions, CaseContext, CaseDef, MetricDef, SuiteDef } from "../lib/types.js";

const STREAM = "BENCH";
const SUBJECTS = ["bench.js.>"];

const PUB_METRICS: MetricDef[] = [
  { label: "msgs/s", unit: "msgs/s", better: "higher" },
  { label: "ack p50", unit: "µs", better: "lower" },
  { label: "ack p99", unit: "µs", better: "lower" },
  // Server CPU (all threads) per message: the work each server does, which a busy machine's
  // scheduling does not change much, unlike msgs/s.
  { label: "server CPU µs/msg", unit: "µs", better: "lower" },
];

export const FILL_WINDOW = 1024;
const IDLE_SAMPLES = 20; // seconds of idle RSS sampling after the fill

async function jsPublish(ctx: CaseContext, size: number, window: number): Promise<Record<string, number>> {
  const req = await ctx.requester();
  await deleteStream(req, STREAM);
  await createStream(req, fileStreamConfig(STREAM, SUBJECTS));
  const conn = await ctx.connect("detail");
  try {
    const cpu0 = ctx.server.cpuSeconds();
    const r = await windowedRequests(conn, {
      subjects: [`bench.js.p${size}`],
      payload: payloadOf(size),
      window,
      maxMsgs: Infinity,
      deadlineNs: deadlineAfter(ctx.opts.durationS),
      collectLatency: true,
      check: pubAckError,
    });
    const cpu = ctx.server.cpuSeconds() - cpu0;
    const { p50, p99 } = latencyStats(r.lat);
    return { "msgs/s": r.done / (r.ns / 1e9), "ack p50": p50, "ack p99": p99, "server CPU µs/msg": (cpu * 1e6) / r.done };
  } finally {
    await deleteStream(req, STREAM);
  }
}

async function waitForCount(ctx: CaseContext, n: number, boundMs: number): Promise<number> {
  // A fresh connection per attempt: right after a restart the first ones may be refused.
  const deadline = performance.now() + boundMs;
  let last = "no answer";
  for (;;) {
    try {
      const req = await ctx.requester();
      for (;;) {
        const info = await streamInfo(req, STREAM, 5_000);
        if (info.state.messages === n) return performance.now();
        last = `${info.state.messages} of ${n} messages`;
        if (performance.now() > deadline) break;
        await sleep(20);
      }
    } catch (e) {
      last = e instanceof Error ? e.message : String(e);
    }
    if (performance.now() > deadline) throw new Error(`after ${boundMs} ms: ${last}`);
    await sleep(20);
  }
}

/** Subjects the store case spreads its messages over: one, or a KV-like many with a few
 *  messages each, where per-subject state is what holding the messages costs. */
export const MANY_SUBJECTS = 100_000;

function storeSubjects(count: number): string[] {
  if (count === 1) return ["bench.js.store"];
  return Array.from({ length: count }, (_, i) => `bench.js.k.${i}`);
}

async function storeAndRecover(ctx: CaseContext, subjectCount: number): Promise<Record<string, number>> {
  const n = ctx.opts.msgs;
  const server = await ctx.freshServer(); // clean store, nothing else in memory
  const req = await ctx.requester();
  await createStream(req, fileStreamConfig(STREAM, SUBJECTS));
  await sleep(500);
  const rss0 = server.rssBytes();

  const conn = await ctx.connect("detail");
  const fill = await windowedRequests(conn, {
    subjects: storeSubjects(subjectCount),
    payload: payloadOf(16),
    window: FILL_WINDOW,
    maxMsgs: n,
    deadlineNs: Infinity,
    collectLatency: false,
    check: pubAckError,
  });
  const info = await streamInfo(req, STREAM);
  if (info.state.messages !== n) throw new Error(`stream holds ${info.state.messages} of ${n} messages after fill`);
  await sleep(1000);
  const rss1 = server.rssBytes();
  // The fill's garbage (a runtime's heap grown during the burst) is returned to the OS over
  // time: the lowest RSS while idle for a while is what holding the messages costs.
  let rssIdle = rss1;
  for (let i = 0; i < IDLE_SAMPLES; i++) {
    await sleep(1000);
    rssIdle = Math.min(rssIdle, server.rssBytes());
  }
  const disk = dirBytes(server.storeDir);

  await server.kill("SIGKILL");
  const t0 = performance.now();
  await server.launch();
  const t1 = await waitForCount(ctx, n, 120_000);
  // A server that recovered the messages has no publish garbage: its growth over an empty
  // server (rss0) is the memory of the stored messages alone.
  await sleep(1000);
  const rssRecovered = server.rssBytes();
  return {
    "fill msgs/s": fill.done / (fill.ns / 1e9),
    "RSS/msg": (rss1 - rss0) / n,
    "RSS/msg idle": (rssIdle - rss0) / n,
    "RSS/msg recovered": (rssRecovered - rss0) / n,
    "disk/msg": disk / n,
    "recovery": t1 - t0,
  };
}

const STORE_METRICS: MetricDef[] = [
  { label: "fill msgs/s", unit: "msgs/s", better: "higher" },
  { label: "RSS/msg", unit: "bytes", better: "lower" },
  { label: "RSS/msg idle", unit: "bytes", better: "lower" },
  { label: "RSS/msg recovered", unit: "bytes", better: "lower" },
  { label: "disk/msg", unit: "bytes", better: "lower" },
  { label: "recovery", unit: "ms", better: "lower" },
];

function storeCase(name: string, subjectCount: number): CaseDef {
  return { name, metrics: STORE_METRICS, run: (c) => storeAndRecover(c, subjectCount) };
}

export const jsSuite: SuiteDef = {
  name: "js",
  jetstream: true,
  notes: [
    "Raw TCP sockets (not @nats-io/jetstream): JetStream publish = PUB with a unique reply subject per message, answered by a PubAck.",
    `Stream: file storage, R1, subjects bench.js.>; recreated for every publish case. Sync = 1 in flight; async = 256 in flight.`,
    `Store case: a fresh server, ${FILL_WINDOW} publishes in flight to fill; RSS from /proc/<pid>/status before the fill and 1 s after it ("RSS/msg"), its lowest over ${IDLE_SAMPLES} s idle after that ("idle"), and 1 s after the recovery below ("recovered"), each minus the empty server's; disk = apparent bytes under the store dir. The second store case spreads the messages round-robin over ${MANY_SUBJECTS.toLocaleString("en-US")} subjects (10 each at the default --msgs), so both servers hold per-subject state: there the bytes per message are a cost per message, where with one subject they are mostly the runtime's fixed cost of having run recovery.`,
    "Recovery: SIGKILL, restart on the same store dir and port, time until $JS.API.STREAM.INFO reports every message (includes process start).",
    SYNC_INTERVAL_NOTE,
    ENCRYPTED_NOTE,
  ],
  cases(opts: BenchOptions): CaseDef[] {
    const n = opts.msgs.toLocaleString("en-US");
    return [
      { name: "js pub sync, 16 B", metrics: PUB_METRICS, run: (c) => jsPublish(c, 16, 1) },
      { name: "js pub sync, 1 KiB", metrics: PUB_METRICS, run: (c) => jsPublish(c, 1024, 1) },
      { name: "js pub async (256 in flight), 16 B", metrics: PUB_METRICS, run: (c) => jsPublish(c, 16, 256) },
      { name: "js pub async (256 in flight), 1 KiB", metrics: PUB_METRICS, run: (c) => jsPublish(c, 1024, 256) },
      syncIntervalCase("js pub sync, 16 B", PUB_METRICS, (c) => jsPublish(c, 16, 1)),
      syncIntervalCase("js pub async (256 in flight), 16 B", PUB_METRICS, (c) => jsPublish(c, 16, 256)),
      syncIntervalCase("js pub async (256 in flight), 1 KiB", PUB_METRICS, (c) => jsPublish(c, 1024, 256)),
      encryptedCase("js pub sync, 16 B", "chachapoly", PUB_METRICS, (c) => jsPublish(c, 16, 1)),
      encryptedCase("js pub async (256 in flight), 16 B", "chachapoly", PUB_METRICS, (c) => jsPublish(c, 16, 256)),
      encryptedCase("js pub async (256 in flight), 1 KiB", "chachapoly", PUB_METRICS, (c) => jsPublish(c, 1024, 256)),
      encryptedCase("js pub async (256 in flight), 1 KiB", "aes", PUB_METRICS, (c) => jsPublish(c, 1024, 256)),
      storeCase(`store ${n} × 16 B`, 1),
      storeCase(`store ${n} × 16 B over ${MANY_SUBJECTS.toLocaleString("en-US")} subjects`, MANY_SUBJECTS),
    ];
  },
};

