// `tsnats bench ...` in the style of `nats bench`: core pub/sub, JetStream publish and
// consume, and KV put/get, reporting msgs/sec, bytes/sec and latency percentiles.
import { Option, type Command } from "commander";
import type { NatsConnection } from "@nats-io/transport-node";
import { jetstream } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import { jsApi } from "./api.js";
import { openConnection, settingsOf, type ConnSettings } from "./connect.js";
import { CliError, comma, commaf, ibytes, out } from "./output.js";
import { parseBytes, parseIntStrict } from "./parse.js";
import { progressBar, type Progress } from "./progress.js";

interface BenchOpts {
  clients: string;
  msgs: string;
  size: string;
  progress?: boolean;
  stream: string;
  consumer: string;
  batch: string;
  storage: string;
  replicas: string;
  maxbytes: string;
  purge?: boolean;
  create?: boolean;
  bucket: string;
  acks: string;
}

interface Sample {
  msgs: number;
  bytes: number;
  startNs: bigint;
  endNs: bigint;
  /** Per-operation latencies in microseconds, when the operation is a round trip. */
  latUs: number[];
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return 0;
  const idx = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[idx] ?? 0;
}

function rateOf(s: Sample): { rate: number; bps: number } {
  const secs = Math.max(1e-9, Number(s.endNs - s.startNs) / 1e9);
  return { rate: s.msgs / secs, bps: s.bytes / secs };
}

function statLine(s: Sample): string {
  const { rate, bps } = rateOf(s);
  let line = `${comma(Math.round(rate))} msgs/sec ~ ${ibytes(bps)}/sec`;
  if (s.latUs.length > 0) {
    const l = [...s.latUs].sort((a, b) => a - b);
    const avg = l.reduce((a, b) => a + b, 0) / l.length;
    const us = (n: number): string => `${commaf(n, 2)}us`;
    line +=
      ` ~ min: ${us(l[0] ?? 0)} ~ avg: ${us(avg)} ~ max: ${us(l[l.length - 1] ?? 0)}` +
      ` ~ P50: ${us(percentile(l, 50))} ~ P90: ${us(percentile(l, 90))} ~ P99: ${us(percentile(l, 99))} ~ P99.9: ${us(percentile(l, 99.9))}`;
  }
  return line;
}

function report(name: string, samples: Sample[]): void {
  out();
  if (samples.length === 1 && samples[0] !== undefined) {
    out(`NATS ${name} stats: ${statLine(samples[0])}`);
    return;
  }
  samples.forEach((s, i) => out(`  [${i + 1}] ${statLine(s)} (${comma(s.msgs)} msgs)`));
  const all: Sample = {
    msgs: samples.reduce((a, s) => a + s.msgs, 0),
    bytes: samples.reduce((a, s) => a + s.bytes, 0),
    startNs: samples.reduce((a, s) => (s.startNs < a ? s.startNs : a), samples[0]?.startNs ?? 0n),
    endNs: samples.reduce((a, s) => (s.endNs > a ? s.endNs : a), 0n),
    latUs: samples.flatMap((s) => s.latUs),
  };
  out();
  out(`NATS ${name} aggregated stats: ${statLine(all)}`);
}

function split(total: number, clients: number): number[] {
  const base = Math.floor(total / clients);
  return Array.from({ length: clients }, (_, i) => base + (i < total % clients ? 1 : 0));
}

interface Plan {
  settings: ConnSettings;
  clients: number;
  msgs: number;
  size: number;
  payload: Uint8Array;
  bar: Progress;
}

function plan(cmd: Command, o: BenchOpts, label: string): Plan {
  const clients = parseIntStrict(o.clients, "clients");
  const msgs = parseIntStrict(o.msgs, "msgs");
  const size = parseBytes(o.size, "size");
  if (clients < 1 || msgs < 1 || size < 0) throw new CliError("--clients and --msgs must be at least 1");
  return {
    settings: settingsOf(cmd),
    clients,
    msgs,
    size,
    payload: new Uint8Array(size).fill(0x61),
    bar: progressBar(label, msgs, o.progress !== false),
  };
}

async function withClients(p: Plan, fn: (nc: NatsConnection, count: number, idx: number) => Promise<Sample>): Promise<Sample[]> {
  const conns: NatsConnection[] = [];
  try {
    for (let i = 0; i < p.clients; i++) conns.push(await openConnection(p.settings, `tsnats-bench-${i}`));
    const counts = split(p.msgs, p.clients);
    return await Promise.all(conns.map((nc, i) => fn(nc, counts[i] ?? 0, i)));
  } finally {
    p.bar.done();
    for (const nc of conns) await nc.drain().catch(() => nc.close());
  }
}

const FLUSH_EVERY = 1000;

async function corePub(nc: NatsConnection, subject: string, count: number, p: Plan): Promise<Sample> {
  const startNs = process.hrtime.bigint();
  for (let i = 0; i < count; i++) {
    nc.publish(subject, p.payload);
    p.bar.tick();
    // Flushing now and then keeps the client's buffer bounded and measures what the server took.
    if (i % FLUSH_EVERY === FLUSH_EVERY - 1) await nc.flush();
  }
  await nc.flush();
  return { msgs: count, bytes: count * p.size, startNs, endNs: process.hrtime.bigint(), latUs: [] };
}

async function coreSub(nc: NatsConnection, subject: string, count: number, p: Plan, ready: () => void): Promise<Sample> {
  let startNs = 0n;
  let bytes = 0;
  let n = 0;
  const sub = nc.subscribe(subject, { max: count });
  await nc.flush();
  ready();
  for await (const m of sub) {
    if (n === 0) startNs = process.hrtime.bigint();
    n++;
    bytes += m.data.length;
    p.bar.tick();
    if (n >= count) break;
  }
  return { msgs: n, bytes, startNs, endNs: process.hrtime.bigint(), latUs: [] };
}

async function ensureStream(nc: NatsConnection, s: ConnSettings, o: BenchOpts, subject: string): Promise<void> {
  const exists = await jsApi(nc, `$JS.API.STREAM.INFO.${o.stream}`, undefined, s.timeoutMs).then(
    () => true,
    () => false,
  );
  if (!exists || o.create === true) {
    const cfg = {
      name: o.stream,
      subjects: [subject],
      storage: o.storage,
      num_replicas: parseIntStrict(o.replicas, "replicas"),
      max_bytes: parseBytes(o.maxbytes, "maxbytes"),
      retention: "limits",
      discard: "old",
    };
    await jsApi(nc, `$JS.API.STREAM.${exists ? "UPDATE" : "CREATE"}.${o.stream}`, cfg, s.timeoutMs);
  }
  if (o.purge === true) await jsApi(nc, `$JS.API.STREAM.PURGE.${o.stream}`, undefined, s.timeoutMs);
}

async function jsPub(nc: NatsConnection, subject: string, count: number, p: Plan, batch: number): Promise<Sample> {
  const js = jetstream(nc, { timeout: p.settings.timeoutMs });
  const lat: number[] = [];
  const startNs = process.hrtime.bigint();
  if (batch <= 1) {
    for (let i = 0; i < count; i++) {
      const t0 = process.hrtime.bigint();
      await js.publish(subject, p.payload);
      lat.push(Number(process.hrtime.bigint() - t0) / 1000);
      p.bar.tick();
    }
  } else {
    for (let i = 0; i < count; i += batch) {
      const n = Math.min(batch, count - i);
      const t0 = process.hrtime.bigint();
      await Promise.all(Array.from({ length: n }, () => js.publish(subject, p.payload)));
      // One latency per batch, spread over its messages: the time each waited for its ack.
      const per = Number(process.hrtime.bigint() - t0) / 1000;
      for (let k = 0; k < n; k++) lat.push(per);
      p.bar.tick(n);
    }
  }
  return { msgs: count, bytes: count * p.size, startNs, endNs: process.hrtime.bigint(), latUs: lat };
}

async function jsConsume(nc: NatsConnection, o: BenchOpts, count: number, p: Plan): Promise<Sample> {
  const js = jetstream(nc, { timeout: p.settings.timeoutMs });
  const batch = parseIntStrict(o.batch, "batch");
  await jsApi(
    nc,
    `$JS.API.CONSUMER.CREATE.${o.stream}.${o.consumer}`,
    { stream_name: o.stream, config: { durable_name: o.consumer, ack_policy: o.acks, deliver_policy: "all", max_ack_pending: batch * 10 } },
    p.settings.timeoutMs,
  );
  const c = await js.consumers.get(o.stream, o.consumer);
  const startNs = process.hrtime.bigint();
  let n = 0;
  let bytes = 0;
  const lat: number[] = [];
  while (n < count) {
    const t0 = process.hrtime.bigint();
    const it = await c.fetch({ max_messages: Math.min(batch, count - n), expires: 2000 });
    let got = 0;
    for await (const m of it) {
      got++;
      n++;
      bytes += m.data.length;
      if (o.acks !== "none") m.ack();
      p.bar.tick();
    }
    if (got === 0) break;
    const per = Number(process.hrtime.bigint() - t0) / 1000 / got;
    for (let k = 0; k < got; k++) lat.push(per);
  }
  await nc.flush();
  return { msgs: n, bytes, startNs, endNs: process.hrtime.bigint(), latUs: lat };
}

function benchFlags(cmd: Command): Command {
  return cmd
    .option("--clients <n>", "Number of concurrent clients", "1")
    .option("--msgs <n>", "Number of messages to publish or subscribe to", "100000")
    .option("--size <bytes>", "Size of the test messages", "128B")
    .option("--progress", "Enable the progress bar (default)")
    .option("--no-progress", "Disable the progress bar");
}

function jsFlags(cmd: Command): Command {
  return benchFlags(cmd)
    .option("--stream <name>", "The name of the stream to create or use", "benchstream")
    .option("--create", "Create or update the stream first")
    .addOption(new Option("--storage <type>", "JetStream storage (memory/file) for the stream").choices(["memory", "file"]).default("file"))
    .option("--replicas <n>", "Number of replicas for the stream", "1")
    .option("--maxbytes <bytes>", "The maximum size of the stream or KV bucket in bytes", "1GB")
    .option("--purge", "Purge the stream before running");
}

function header(kind: string, detail: Record<string, string | number>): void {
  const parts = Object.entries(detail).map(([k, v]) => `${k}=${typeof v === "number" ? comma(v) : v}`);
  out(`Starting ${kind} benchmark [${parts.join(", ")}]`);
}

export function registerBench(program: Command): void {
  const bench = program.command("bench").description("Benchmark utility");

  benchFlags(bench.command("pub <subject>").description("Publish Core NATS messages")).action(async (subject: string, o: BenchOpts, cmd: Command) => {
    const p = plan(cmd, o, "Publishing");
    header("Core NATS publisher", { subject, msgs: p.msgs, msgsize: ibytes(p.size), clients: p.clients });
    report("Core NATS publisher", await withClients(p, (nc, n) => corePub(nc, subject, n, p)));
  });

  benchFlags(bench.command("sub <subject>").description("Subscribe to Core NATS messages")).action(async (subject: string, o: BenchOpts, cmd: Command) => {
    const p = plan(cmd, o, "Receiving");
    header("Core NATS subscriber", { subject, msgs: p.msgs, clients: p.clients });
    let readyCount = 0;
    const ready = (): void => {
      readyCount++;
      if (readyCount === p.clients) process.stderr.write("Subscribers ready\n");
    };
    // Every subscriber receives every message, as with `nats bench sub`.
    const samples = await withClients({ ...p, msgs: p.msgs * p.clients }, (nc) => coreSub(nc, subject, p.msgs, p, ready));
    report("Core NATS subscriber", samples);
  });

  const js = bench.command("js").description("JetStream benchmark commands");
  const jspub = js.command("pub").description("Publish JetStream messages");
  for (const mode of ["sync", "async"] as const) {
    const c = jsFlags(jspub.command(`${mode} <subject>`, mode === "sync" ? { isDefault: true } : {}).description(`Use ${mode === "sync" ? "synchronous" : "asynchronous"} JetStream publish`));
    if (mode === "async") c.option("--batch <n>", "Sets the number of asynchronous operations per batch", "500");
    c.action(async (subject: string, o: BenchOpts & { batch: string }, cmd: Command) => {
      const p = plan(cmd, o, "Publishing");
      const batch = mode === "async" ? parseIntStrict(o.batch, "batch") : 1;
      const admin = await openConnection(p.settings, "tsnats-bench-admin");
      try {
        await ensureStream(admin, p.settings, o, subject);
      } finally {
        await admin.close();
      }
      header(`JetStream ${mode} publisher`, { subject, stream: o.stream, msgs: p.msgs, msgsize: ibytes(p.size), clients: p.clients, batch });
      report(`JetStream ${mode} publisher`, await withClients(p, (nc, n) => jsPub(nc, subject, n, p, batch)));
    });
  }

  benchFlags(js.command("consume").alias("ordered").description("Consume JetStream messages from a durable pull consumer"))
    .option("--stream <name>", "The name of the stream to use", "benchstream")
    .option("--consumer <name>", "Specify the durable consumer name to use", "natscli-bench")
    .option("--batch <n>", "Sets the max number of messages fetched at once", "500")
    .addOption(new Option("--acks <mode>", "Acknowledgement mode for the consumer").choices(["explicit", "none", "all"]).default("explicit"))
    .action(async (o: BenchOpts, cmd: Command) => {
      const p = plan(cmd, o, "Consuming");
      header("JetStream consumer", { stream: o.stream, consumer: o.consumer, msgs: p.msgs, clients: p.clients, batch: o.batch, acks: o.acks });
      const samples = await withClients(p, (nc, n) => jsConsume(nc, o, n, p));
      const admin = await openConnection(p.settings, "tsnats-bench-admin");
      await jsApi(admin, `$JS.API.CONSUMER.DELETE.${o.stream}.${o.consumer}`, undefined, p.settings.timeoutMs).catch(() => undefined);
      await admin.close();
      report("JetStream consumer", samples);
    });

  const kv = bench.command("kv").description("KV benchmark commands");
  for (const op of ["put", "get"] as const) {
    benchFlags(kv.command(op).description(op === "put" ? "Put values into a KV bucket" : "Get values from a KV bucket"))
      .option("--bucket <name>", "The bucket to use", "benchbucket")
      .addOption(new Option("--storage <type>", "JetStream storage (memory/file) for the bucket").choices(["memory", "file"]).default("file"))
      .option("--replicas <n>", "Number of replicas for the bucket", "1")
      .action(async (o: BenchOpts, cmd: Command) => {
        const p = plan(cmd, o, op === "put" ? "Putting" : "Getting");
        header(`KV ${op}`, { bucket: o.bucket, msgs: p.msgs, msgsize: ibytes(p.size), clients: p.clients });
        const samples = await withClients(p, async (nc, n, idx) => {
          const store = await new Kvm(nc).create(o.bucket, {
            storage: o.storage === "memory" ? "memory" : "file",
            replicas: parseIntStrict(o.replicas, "replicas"),
          } as Parameters<Kvm["create"]>[1]);
          const lat: number[] = [];
          const startNs = process.hrtime.bigint();
          let bytes = 0;
          for (let i = 0; i < n; i++) {
            const key = `${idx}.${i}`;
            const t0 = process.hrtime.bigint();
            if (op === "put") {
              await store.put(key, p.payload);
              bytes += p.size;
            } else {
              const e = await store.get(key);
              bytes += e?.length ?? 0;
            }
            lat.push(Number(process.hrtime.bigint() - t0) / 1000);
            p.bar.tick();
          }
          return { msgs: n, bytes, startNs, endNs: process.hrtime.bigint(), latUs: lat };
        });
        report(`KV ${op}`, samples);
      });
  }
}
