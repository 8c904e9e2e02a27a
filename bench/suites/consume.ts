// Consuming a stored stream: pull with explicit acks, push without and with acks.
// Raw sockets; the fill step uses the same windowed JetStream publish as the js suite.

import type { RawConn } from "../lib/conn.js";
import {
  createConsumer,
  createStream,
  deleteConsumer,
  deleteStream,
  fileStreamConfig,
  pubAckError,
  streamInfo,
  windowedRequests,
} from "../lib/js.js";
import { nowNs, payloadOf, waitFor } from "../lib/load.js";
import { newInboxPrefix } from "../lib/request.js";
import type { BenchOptions, CaseContext, CaseDef, MetricDef, SuiteDef } from "../lib/types.js";

const RATE: MetricDef[] = [{ label: "msgs/s", unit: "msgs/s", better: "higher" }];
// Server CPU (all threads) per message consumed: the work, which a busy machine changes less
// than it changes msgs/s.
const RATE_CPU: MetricDef[] = [...RATE, { label: "server CPU µs/msg", unit: "µs", better: "lower" }];
const FILL_WINDOW = 1024;
const BATCH = 500;
const PULLS_IN_FLIGHT = 2;
const PULL_EXPIRES_NS = 5_000_000_000;
// Larger than any window we keep open, so the server's default (1000) is not what is measured.
const MAX_ACK_PENDING = 20_000;
const EMPTY = Buffer.alloc(0);
const DOLLAR = 0x24;

function streamName(size: number): string {
  return `CONSUME_${size}`;
}

/** The workload: --msgs stored messages of each size (1M by default). */
function countFor(opts: BenchOptions, _size: number): number {
  return opts.msgs;
}

async function fill(ctx: CaseContext, size: number, others: number[]): Promise<Record<string, number>> {
  const req = await ctx.requester();
  for (const o of others) await deleteStream(req, streamName(o)); // keep the server's footprint to one stream
  const name = streamName(size);
  await deleteStream(req, name);
  await createStream(req, fileStreamConfig(name, [`bench.consume.${size}`]));
  const n = countFor(ctx.opts, size);
  const conn = await ctx.connect("detail");
  const r = await windowedRequests(conn, {
    subjects: [`bench.consume.${size}`],
    payload: payloadOf(size),
    window: FILL_WINDOW,
    maxMsgs: n,
    deadlineNs: Infinity,
    collectLatency: false,
    check: pubAckError,
  });
  const info = await streamInfo(req, name);
  if (info.state.messages !== n) throw new Error(`stream holds ${info.state.messages} of ${n}`);
  return { "msgs/s": r.done / (r.ns / 1e9) };
}

async function storedCount(ctx: CaseContext, size: number): Promise<number> {
  const req = await ctx.requester();
  const info = await streamInfo(req, streamName(size));
  const n = countFor(ctx.opts, size);
  if (info.state.messages !== n) throw new Error(`stream holds ${info.state.messages} of ${n} (fill failed?)`);
  return n;
}

async function pull(ctx: CaseContext, size: number): Promise<Record<string, number>> {
  const n = await storedCount(ctx, size);
  const stream = streamName(size);
  const durable = `pull_${size}`;
  const req = await ctx.requester();
  await deleteConsumer(req, stream, durable);
  await createConsumer(req, stream, durable, {
    ack_policy: "explicit",
    deliver_policy: "all",
    max_ack_pending: MAX_ACK_PENDING,
  });
  try {
    const conn = await ctx.connect("detail");
    const inbox = `${newInboxPrefix()}.pull`;
    const nextSubject = `$JS.API.CONSUMER.MSG.NEXT.${stream}.${durable}`;
    const pullBody = Buffer.from(JSON.stringify({ batch: BATCH, expires: PULL_EXPIRES_NS }));
    let received = 0;
    let inBatch = 0;
    const requestMore = (): void => conn.queuePub(nextSubject, inbox, pullBody);
    conn.sub(inbox, (_s, reply) => {
      if (reply !== null && reply[0] === DOLLAR) {
        received++;
        conn.queuePub(reply, null, EMPTY); // empty payload = +ACK
        if (++inBatch === BATCH) {
          inBatch = 0;
          if (received < n) requestMore();
        }
      } else if (received < n) {
        // A status (408 expired, 409 ...) ends one request: replace it.
        inBatch = 0;
        requestMore();
      }
    });
    conn.flush();
    await conn.ping();
    const cpu0 = ctx.server.cpuSeconds();
    const t0 = nowNs();
    for (let k = 0; k < PULLS_IN_FLIGHT; k++) requestMore();
    conn.flush();
    await waitFor([conn], () => received >= n, () => received, 15_000, "pull consume");
    const ns = nowNs() - t0;
    await conn.ping(); // the last acks have reached the server
    const cpu = ctx.server.cpuSeconds() - cpu0;
    return { "msgs/s": n / (ns / 1e9), "server CPU µs/msg": (cpu * 1e6) / n };
  } finally {
    await deleteConsumer(req, stream, durable);
  }
}

async function push(ctx: CaseContext, size: number, ack: "none" | "explicit"): Promise<Record<string, number>> {
  const n = await storedCount(ctx, size);
  const stream = streamName(size);
  const durable = `push_${ack}_${size}`;
  const req = await ctx.requester();
  await deleteConsumer(req, stream, durable);
  const deliver = `${newInboxPrefix()}.push`;
  let conn: RawConn;
  let received: () => number;
  if (ack === "none") {
    conn = await ctx.connect("count");
    conn.sub(deliver);
    received = () => conn.received;
  } else {
    conn = await ctx.connect("detail");
    let count = 0;
    const c = conn;
    c.sub(deliver, (_s, reply) => {
      count++;
      if (reply !== null) c.queuePub(reply, null, EMPTY);
    });
    received = () => count;
  }
  conn.flush();
  await conn.ping();
  try {
    const cpu0 = ctx.server.cpuSeconds();
    const t0 = nowNs();
    // Delivery starts as soon as the consumer exists, so the clock starts before the create.
    await createConsumer(req, stream, durable, {
      deliver_subject: deliver,
      ack_policy: ack,
      deliver_policy: "all",
      ...(ack === "explicit" ? { max_ack_pending: MAX_ACK_PENDING } : {}),
    });
    await waitFor([conn], () => received() >= n, received, 15_000, "push consume");
    const ns = nowNs() - t0;
    if (ack === "explicit") await conn.ping(); // the last acks have reached the server
    const cpu = ctx.server.cpuSeconds() - cpu0;
    return { "msgs/s": n / (ns / 1e9), "server CPU µs/msg": (cpu * 1e6) / n };
  } finally {
    await deleteConsumer(req, stream, durable);
  }
}

export const consumeSuite: SuiteDef = {
  name: "consume",
  jetstream: true,
  notes: [
    "Raw TCP sockets (not @nats-io/jetstream). Streams are file storage, R1, filled with 1024 JetStream publishes in flight.",
    `Pull: durable, ack_policy explicit, max_ack_pending ${MAX_ACK_PENDING}; ${PULLS_IN_FLIGHT} requests of batch ${BATCH} in flight, a new one every ${BATCH} messages; each message acked with an empty publish to its reply subject.`,
    "Push: durable with deliver_subject; ack none counts frames only, ack explicit acks each message. Clock starts before CONSUMER.CREATE.",
    "Both sizes store --msgs messages (1 KiB x 1M = 1 GiB on disk; the other stream is deleted first).",
  ],
  cases(opts: BenchOptions): CaseDef[] {
    const cases: CaseDef[] = [];
    for (const [size, label, other] of [
      [16, "16 B", 1024],
      [1024, "1 KiB", 16],
    ] as const) {
      const n = countFor(opts, size).toLocaleString("en-US");
      cases.push(
        { name: `fill ${n} × ${label} (js publish)`, metrics: RATE, run: (c) => fill(c, size, [other]) },
        { name: `pull, explicit ack, batch ${BATCH}, ${label}`, metrics: RATE_CPU, run: (c) => pull(c, size) },
        { name: `push, ack none, ${label}`, metrics: RATE_CPU, run: (c) => push(c, size, "none") },
        { name: `push, ack explicit, ${label}`, metrics: RATE_CPU, run: (c) => push(c, size, "explicit") },
      );
    }
    return cases;
  },
};
