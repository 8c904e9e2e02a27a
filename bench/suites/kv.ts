// Key-value: put (JetStream publish to $KV.<b>.<key>, PubAck awaited) and get (direct get
// of the last message on the key's subject). Raw sockets; the bucket is created with a plain
// $JS.API.STREAM.CREATE carrying the stream config the KV clients use.

import { statusCode } from "../lib/conn.js";
import { createStream, pubAckError, streamInfo, windowedRequests } from "../lib/js.js";
import { deadlineAfter, latencyStats, payloadOf } from "../lib/load.js";
import type { Requester } from "../lib/request.js";
import { SYNC_INTERVAL_NOTE, syncIntervalCase } from "../lib/variant.js";
import type { BenchOptions, CaseContext, CaseDef, MetricDef, SuiteDef } from "../lib/types.js";

const BUCKET = "bench";
const STREAM = `KV_${BUCKET}`;
const KEYS = 1000;
const WINDOW = 256;

const METRICS: MetricDef[] = [
  { label: "ops/s", unit: "ops/s", better: "higher" },
  { label: "p50", unit: "µs", better: "lower" },
  { label: "p99", unit: "µs", better: "lower" },
  // Server CPU (all threads) per operation: the work, which a busy machine changes less than
  // it changes ops/s.
  { label: "server CPU µs/op", unit: "µs", better: "lower" },
];

const keys = Array.from({ length: KEYS }, (_, i) => `k${i}`);
const putSubjects = keys.map((k) => `$KV.${BUCKET}.${k}`);
const getSubjects = keys.map((k) => `$JS.API.DIRECT.GET.${STREAM}.$KV.${BUCKET}.${k}`);
const EMPTY = Buffer.alloc(0);

async function ensureBucket(req: Requester): Promise<void> {
  try {
    await streamInfo(req, STREAM);
    return;
  } catch {
    /* missing: create it */
  }
  await createStream(req, {
    name: STREAM,
    subjects: [`$KV.${BUCKET}.>`],
    retention: "limits",
    max_consumers: -1,
    max_msgs_per_subject: 1,
    max_msgs: -1,
    max_bytes: -1,
    max_age: 0,
    max_msg_size: -1,
    storage: "file",
    discard: "new",
    num_replicas: 1,
    duplicate_window: 120_000_000_000,
    allow_rollup_hdrs: true,
    deny_delete: true,
    deny_purge: false,
    allow_direct: true,
    mirror_direct: false,
  });
}

function directGetError(hdr: Buffer | null): string | null {
  const st = statusCode(hdr);
  if (st === 0 && hdr !== null) return null;
  if (st === 503) return "no responders (allow_direct not honoured?)";
  if (st === 404) return "key not found";
  return hdr === null ? "reply without headers" : `status ${st}`;
}

async function put(ctx: CaseContext, window: number): Promise<Record<string, number>> {
  await ensureBucket(await ctx.requester());
  const conn = await ctx.connect("detail");
  const cpu0 = ctx.server.cpuSeconds();
  const r = await windowedRequests(conn, {
    subjects: putSubjects,
    payload: payloadOf(16),
    window,
    maxMsgs: Infinity,
    deadlineNs: deadlineAfter(ctx.opts.durationS),
    collectLatency: true,
    check: pubAckError,
  });
  const cpu = ctx.server.cpuSeconds() - cpu0;
  const { p50, p99 } = latencyStats(r.lat);
  return { "ops/s": r.done / (r.ns / 1e9), p50, p99, "server CPU µs/op": (cpu * 1e6) / r.done };
}

async function get(ctx: CaseContext, window: number): Promise<Record<string, number>> {
  await ensureBucket(await ctx.requester());
  const conn = await ctx.connect("detail");
  // Every key must exist before measuring gets.
  await windowedRequests(conn, {
    subjects: putSubjects,
    payload: payloadOf(16),
    window: WINDOW,
    maxMsgs: KEYS,
    deadlineNs: Infinity,
    collectLatency: false,
    check: pubAckError,
  });
  const cpu0 = ctx.server.cpuSeconds();
  const r = await windowedRequests(conn, {
    subjects: getSubjects,
    payload: EMPTY,
    window,
    maxMsgs: Infinity,
    deadlineNs: deadlineAfter(ctx.opts.durationS),
    collectLatency: true,
    check: (hdr) => directGetError(hdr),
  });
  const cpu = ctx.server.cpuSeconds() - cpu0;
  const { p50, p99 } = latencyStats(r.lat);
  return { "ops/s": r.done / (r.ns / 1e9), p50, p99, "server CPU µs/op": (cpu * 1e6) / r.done };
}

export const kvSuite: SuiteDef = {
  name: "kv",
  jetstream: true,
  notes: [
    `Raw TCP sockets. Bucket ${BUCKET} = stream ${STREAM} (file, R1, max_msgs_per_subject 1, allow_direct, allow_rollup_hdrs, deny_delete, discard new), ${KEYS} keys used round-robin, 16 B values.`,
    "put = PUB $KV.bench.<key> with a reply subject, PubAck awaited; get = request to $JS.API.DIRECT.GET.KV_bench.$KV.bench.<key> (a 404 counts as an error).",
    `Sequential = 1 in flight; windowed = ${WINDOW} in flight. Latency = time from sending a request to its reply.`,
    SYNC_INTERVAL_NOTE,
  ],
  cases(_opts: BenchOptions): CaseDef[] {
    return [
      { name: "kv put, sequential", metrics: METRICS, run: (c) => put(c, 1) },
      { name: `kv put, ${WINDOW} in flight`, metrics: METRICS, run: (c) => put(c, WINDOW) },
      { name: "kv get, sequential", metrics: METRICS, run: (c) => get(c, 1) },
      { name: `kv get, ${WINDOW} in flight`, metrics: METRICS, run: (c) => get(c, WINDOW) },
      syncIntervalCase("kv put, sequential", METRICS, (c) => put(c, 1)),
      syncIntervalCase(`kv put, ${WINDOW} in flight`, METRICS, (c) => put(c, WINDOW)),
    ];
  },
};
