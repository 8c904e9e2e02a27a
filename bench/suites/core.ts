// Core NATS: publish throughput, fan-out, request/reply latency. All raw sockets.

import type { RawConn } from "../lib/conn.js";
import { deadlineAfter, latencyStats, nowNs, payloadOf, pubFrame, publishFrames, waitFor } from "../lib/load.js";
import type { BenchOptions, CaseContext, CaseDef, MetricDef, SuiteDef } from "../lib/types.js";

export const RATE_METRICS: MetricDef[] = [
  { label: "msgs/s", unit: "msgs/s", better: "higher" },
  { label: "MB/s", unit: "MB/s", better: "higher" },
];

const LATENCY_METRICS: MetricDef[] = [
  { label: "p50", unit: "µs", better: "lower" },
  { label: "p99", unit: "µs", better: "lower" },
];

// Publisher may run at most this many delivered bytes ahead of the slowest subscriber, so a
// fast publisher measures delivery instead of getting the subscriber cut off as a slow
// consumer (nats-server's default max_pending is 64 MiB).
const AHEAD_BYTES = 32 * 1024 * 1024;

function rates(msgs: number, size: number, ns: number): Record<string, number> {
  const s = ns / 1e9;
  return { "msgs/s": msgs / s, "MB/s": (msgs * size) / 1e6 / s };
}

async function pubOnly(ctx: CaseContext, size: number): Promise<Record<string, number>> {
  const pub = await ctx.connect("count");
  const frame = pubFrame("bench.core.p", payloadOf(size));
  const t0 = nowNs();
  const sent = await publishFrames(pub, frame, { maxMsgs: Infinity, deadlineNs: deadlineAfter(ctx.opts.durationS) });
  await pub.ping(); // the server has read and routed every message
  return rates(sent, size, nowNs() - t0);
}

/** One publisher, `subs` counting subscribers on one subject, the publisher gated on the slowest
 *  subscriber; rate = received msgs/s until every subscriber has every message. */
export async function pubSub(ctx: CaseContext, size: number, subs: number): Promise<Record<string, number>> {
  const subject = `bench.core.ps${subs}`;
  const receivers: RawConn[] = [];
  for (let i = 0; i < subs; i++) {
    const c = await ctx.connect("count");
    c.sub(subject);
    c.flush();
    await c.ping();
    receivers.push(c);
  }
  const pub = await ctx.connect("count");
  const frame = pubFrame(subject, payloadOf(size));
  const deliveredFrame = frame.length + 8; // "MSG" + sid is a little longer than "PUB"
  const aheadMsgs = Math.max(1000, Math.floor(AHEAD_BYTES / deliveredFrame));
  const minReceived = (): number => receivers.reduce((m, c) => Math.min(m, c.received), Infinity);
  const totalReceived = (): number => receivers.reduce((s, c) => s + c.received, 0);

  let wake: (() => void) | null = null;
  for (const c of receivers) {
    c.onProgress = () => {
      if (wake !== null) {
        const w = wake;
        wake = null;
        w();
      }
    };
  }
  const gate = (sent: number): Promise<void> | null => {
    if (sent - minReceived() <= aheadMsgs) return null;
    return new Promise<void>((resolve, reject) => {
      const check = (): void => {
        if (sent - minReceived() <= aheadMsgs) return resolve();
        const closed = receivers.find((c) => c.closed);
        if (closed !== undefined) return reject(new Error(`subscriber closed: ${closed.errors.at(-1) ?? "?"}`));
        wake = check;
      };
      check();
    });
  };

  const t0 = nowNs();
  const sent = await publishFrames(pub, frame, {
    maxMsgs: Infinity,
    deadlineNs: deadlineAfter(ctx.opts.durationS),
    gate,
  });
  await waitFor(receivers, () => minReceived() >= sent, totalReceived, 10_000, "waiting for subscribers");
  const ns = nowNs() - t0;
  return rates(sent * subs, size, ns);
}

async function requestReply(ctx: CaseContext, size: number): Promise<Record<string, number>> {
  const payload = payloadOf(size);
  const responder = await ctx.connect("detail");
  responder.sub("bench.core.rr", (_s, reply) => {
    if (reply !== null) responder.queuePub(reply, null, payload);
  });
  responder.flush();
  await responder.ping();

  const requester = await ctx.connect("detail");
  const inbox = "_INBOX.bench.rr";
  const warm = Math.max(100, Math.floor(ctx.opts.rtt / 10));
  const total = warm + ctx.opts.rtt;
  const lat: number[] = [];
  let i = 0;
  let sentAt = 0;
  let done: (() => void) | null = null;
  const sendNext = (): void => {
    sentAt = nowNs();
    requester.queuePub("bench.core.rr", `${inbox}.${i}`, payload);
  };
  requester.sub(`${inbox}.*`, () => {
    const t = nowNs();
    if (i >= warm) lat.push(t - sentAt);
    i++;
    if (i < total) sendNext();
    else done?.();
  });
  requester.flush();
  await requester.ping();
  const finished = new Promise<void>((resolve) => (done = resolve));
  sendNext();
  requester.flush();
  await Promise.race([
    finished,
    waitFor([requester, responder], () => i >= total, () => i, 10_000, "request/reply"),
  ]);
  return latencyStats(lat);
}

export const coreSuite: SuiteDef = {
  name: "core",
  jetstream: false,
  notes: [
    "Raw TCP load generator (node:net) in one Node process: pre-encoded PUB frames in 256 KiB writes, counting-only subscribers.",
    "Throughput cases run for --duration seconds; subscriber rates count received messages; MB/s counts payload bytes only.",
    "Request/reply: one request in flight, unique reply subject per request, latency measured with process.hrtime.",
  ],
  cases(_opts: BenchOptions): CaseDef[] {
    return [
      { name: "pub only, 16 B", metrics: RATE_METRICS, run: (c) => pubOnly(c, 16) },
      { name: "pub only, 1 KiB", metrics: RATE_METRICS, run: (c) => pubOnly(c, 1024) },
      { name: "pub -> 1 sub, 16 B", metrics: RATE_METRICS, run: (c) => pubSub(c, 16, 1) },
      { name: "pub -> 1 sub, 1 KiB", metrics: RATE_METRICS, run: (c) => pubSub(c, 1024, 1) },
      { name: "pub -> 5 subs, 16 B (received)", metrics: RATE_METRICS, run: (c) => pubSub(c, 16, 5) },
      { name: "request/reply, 16 B", metrics: LATENCY_METRICS, run: (c) => requestReply(c, 16) },
    ];
  },
};
