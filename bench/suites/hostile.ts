// Hostile clients (issue 14): how much one client can slow everyone else down, how fast
// connections are accepted, and what an idle connection costs. Raw sockets throughout.
//
// The bystander rows: one authenticated connection keeps a PING in flight (a new one 2 ms
// after each PONG) while one other client does something heavy; p50/p99 of its round trips
// are the server's event-loop lag as a client sees it.

import { randomBytes } from "node:crypto";
import { fork } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";
import net from "node:net";
import { connectRaw, HSock, handshake, RemoteBystander, type Creds } from "../lib/hostile.js";
import { sleep } from "../lib/load.js";
import { freePort, HOST, ServerProc, waitForListen } from "../lib/servers.js";
import { wsUpgrade } from "../lib/ws.js";
import type { BenchOptions, CaseContext, CaseDef, MetricDef, SuiteDef } from "../lib/types.js";
import type { Requester } from "../lib/request.js";
import { SYNC_INTERVAL_NOTE, syncIntervalCase } from "../lib/variant.js";

const MB = 1024 * 1024;
const CREDS: Creds = { user: "bench", pass: "hostile" };

const BYSTANDER_METRICS: MetricDef[] = [
  { label: "bystander PING p50", unit: "ms", better: "lower" },
  { label: "bystander PING p99", unit: "ms", better: "lower" },
  { label: "bystander PING p99, first run", unit: "ms", better: "lower" },
  { label: "bystander PING p99, worst run", unit: "ms", better: "lower" },
  { label: "load done in", unit: "ms", better: "lower" },
];

/** Runs of each bystander case, one after another on the same server. */
const RUNS = 5;

/** run RUNS times: each metric is the median run's, and the p99 of the first run and of the
 *  worst are kept beside it. One run's p99 is its worst two or three pings (a load of
 *  100-500 ms, a ping every ~2 ms), so single runs of the same case swung 2-5x on either
 *  server (nats-server 2.4-29.7 ms on one case); the first run is where a fresh tsnats runs
 *  code V8 has not optimised yet. */
function repeated(run: (ctx: CaseContext) => Promise<Record<string, number>>): (ctx: CaseContext) => Promise<Record<string, number>> {
  return async (ctx) => {
    const runs: Record<string, number>[] = [];
    for (let i = 0; i < RUNS; i++) runs.push(await run(ctx));
    const out: Record<string, number> = {};
    for (const k of Object.keys(runs[0]!)) out[k] = median(runs.map((r) => r[k]!));
    const p99s = runs.map((r) => r["bystander PING p99"]!);
    out["bystander PING p99, first run"] = p99s[0]!;
    out["bystander PING p99, worst run"] = Math.max(...p99s);
    return out;
  };
}

/** repeated() for a case that needs a server of another configuration: started once for the
 *  case, and its RUNS runs all go to it, as the other cases' runs go to the shared server. */
function repeatedOwn<S extends { proc: ServerProc }>(
  start: (ctx: CaseContext) => Promise<S>,
  run: (ctx: CaseContext, s: S) => Promise<Record<string, number>>,
): (ctx: CaseContext) => Promise<Record<string, number>> {
  return async (ctx) => {
    const s = await start(ctx);
    try {
      return await repeated((c) => run(c, s))(ctx);
    } finally {
      await s.proc.stop();
    }
  };
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >>> 1;
  return s.length % 2 === 1 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

/** Runs load while a bystander (a process of its own) on port pings; the bystander's
 *  p50/p99 and the load's time. */
async function underLoad(port: number, creds: Creds | null, load: () => Promise<void>): Promise<Record<string, number>> {
  const by = await RemoteBystander.start(port, creds);
  try {
    await sleep(100); // a few round trips before the load
    const t0 = performance.now();
    await load();
    const ms = performance.now() - t0;
    await sleep(100); // and after: a server still busy with the load shows here
    const r = await by.stop();
    return { "bystander PING p50": r.p50, "bystander PING p99": r.p99, "load done in": ms };
  } finally {
    by.kill();
  }
}

/** $JS.API.STREAM.CREATE of cfg; throws the API's error. */
async function createStream(req: Requester, cfg: { name: string; [k: string]: unknown }, timeoutMs = 60_000): Promise<void> {
  const r = await req.request(`$JS.API.STREAM.CREATE.${cfg.name}`, JSON.stringify(cfg), timeoutMs);
  const body = JSON.parse(r.payload.toString("utf8")) as { error?: { description?: string } };
  if (body.error !== undefined) throw new Error(`stream create: ${body.error.description ?? "error"}`);
}

/** (a) One client creates a stream with 10,000 subjects. */
async function streamCreate(ctx: CaseContext): Promise<Record<string, number>> {
  const req = await ctx.requester();
  const subjects = Array.from({ length: 10_000 }, (_, i) => `hostile.s.${i}`);
  const cfg = { name: "HOSTILE", subjects, storage: "memory", retention: "limits", num_replicas: 1 };
  try {
    return await underLoad(ctx.server.port, null, () => createStream(req, cfg, 120_000));
  } finally {
    await req.request("$JS.API.STREAM.DELETE.HOSTILE", "", 60_000).catch(() => undefined);
  }
}

/** One client sends 5,000 STREAM.INFO requests (a stream with 100 subjects) in one write;
 *  done at the last reply. */
function infoBurst(ctx: CaseContext): Promise<Record<string, number>> {
  const subjects = Array.from({ length: 100 }, (_, i) => `hostile.i.${i}`);
  return burstOnStream(ctx, { name: "HINFO", subjects, storage: "memory" }, "_HI", 5000, (i) => `PUB $JS.API.STREAM.INFO.HINFO _HI.${i} 0\r\n\r\n`);
}

/** Makes stream cfg, then one raw client subscribed to `<inbox>.*` writes n requests
 *  (pub(i), reply `<inbox>.<i>`) in one write, under load; done at the n-th reply. */
async function burstOnStream(ctx: CaseContext, cfg: { name: string; [k: string]: unknown }, inbox: string, n: number, pub: (i: number) => string): Promise<Record<string, number>> {
  const req = await ctx.requester();
  await createStream(req, cfg);
  const c = await connectRaw(ctx.server.port, null);
  c.s.write(`SUB ${inbox}.* 1\r\n`);
  const parts: string[] = [];
  for (let i = 0; i < n; i++) parts.push(pub(i));
  const batch = Buffer.from(parts.join(""));
  try {
    return await underLoad(ctx.server.port, null, async () => {
      const all = replies(c, `MSG ${inbox}.`, n);
      c.write(batch);
      await all;
    });
  } finally {
    c.destroy();
    await req.request(`$JS.API.STREAM.DELETE.${cfg.name}`, "", 60_000).catch(() => undefined);
  }
}

/** Resolves once n frames starting with needle came on c (counted as they come). */
function replies(c: HSock, needle: string, n: number): Promise<void> {
  let got = 0;
  let tail = "";
  return new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`only ${got} of ${n} replies`)), 120_000);
    const onData = (d: string): void => {
      const t = tail + d;
      let i = t.indexOf(needle);
      let last = 0;
      while (i >= 0) {
        got++;
        last = i + needle.length;
        i = t.indexOf(needle, last);
      }
      tail = t.slice(Math.max(last, t.length - needle.length));
      if (got >= n) {
        clearTimeout(timer);
        c.s.off("data", onData);
        resolve();
      }
    };
    c.s.on("data", onData);
  });
}

/** One client writes 10,000 PUBs (16 B, with reply subjects) to a file stream in one write;
 *  done at the last PubAck. */
function jsPubFlood(ctx: CaseContext): Promise<Record<string, number>> {
  return burstOnStream(ctx, { name: "HFLOOD", subjects: ["hostile.f.>"], storage: "file" }, "_HF", 10_000, (i) => `PUB hostile.f.${i % 100} _HF.${i} 16\r\n0123456789abcdef\r\n`);
}

/** One client fills a memory stream: 500,000 PUBs (100 B, no reply subject), written 5,000
 *  at a time as the socket drains; done once STREAM.INFO counts them all (nats-server stores
 *  a stream's messages off the client's read, so a PONG would come early). */
async function memFill(ctx: CaseContext): Promise<Record<string, number>> {
  const n = 500_000;
  const req = await ctx.requester();
  const cfg = { name: "HMEM", subjects: ["hostile.m.>"], storage: "memory" };
  await createStream(req, cfg);
  const c = await connectRaw(ctx.server.port, null);
  const pay = "x".repeat(100);
  const batches: Buffer[] = [];
  for (let i = 0; i < n; i += 5000) {
    const parts: string[] = [];
    for (let k = i; k < i + 5000; k++) parts.push(`PUB hostile.m.${k % 100} 100\r\n${pay}\r\n`);
    batches.push(Buffer.from(parts.join("")));
  }
  const stored = async (): Promise<number> => {
    const r = await req.request("$JS.API.STREAM.INFO.HMEM", "", 60_000);
    return (JSON.parse(r.payload.toString("utf8")) as { state?: { messages?: number } }).state?.messages ?? 0;
  };
  try {
    return await underLoad(ctx.server.port, null, async () => {
      for (const b of batches) if (!c.s.write(b)) await new Promise<void>((r) => c.s.once("drain", () => r()));
      const until = Date.now() + 120_000;
      while ((await stored()) < n) {
        if (Date.now() > until) throw new Error("the memory stream did not count every message in 120 s");
        await new Promise((r) => setTimeout(r, 20));
      }
    });
  } finally {
    c.destroy();
    await req.request("$JS.API.STREAM.DELETE.HMEM", "", 60_000).catch(() => undefined);
  }
}

/** (b) One client sends 100,000 SUBs in one write, then PING; done at its PONG. */
async function subFlood(ctx: CaseContext): Promise<Record<string, number>> {
  const c = await connectRaw(ctx.server.port, null);
  const parts: string[] = [];
  for (let i = 0; i < 100_000; i++) parts.push(`SUB hostile.sub.${i} ${i + 1}\r\n`);
  const batch = Buffer.from(parts.join("") + "PING\r\n");
  try {
    return await underLoad(ctx.server.port, null, async () => {
      c.write(batch);
      if (!(await c.until((t) => t.includes("PONG\r\n"), 120_000))) throw new Error(`no PONG after the SUBs: ${c.text.slice(0, 120)}`);
    });
  } finally {
    c.destroy();
  }
}

/** One client's 10 PUBs (16 B, in one write) to a subject another client subscribed 100,000
 *  times; done at the publisher's PONG (after every fan-out). */
async function fanout(ctx: CaseContext): Promise<Record<string, number>> {
  const a = await connectRaw(ctx.server.port, null);
  const b = await connectRaw(ctx.server.port, null);
  const parts: string[] = [];
  for (let i = 0; i < 100_000; i++) parts.push(`SUB hostile.fan ${i + 1}\r\n`);
  a.write(parts.join("") + "PING\r\n");
  try {
    if (!(await a.until((t) => t.includes("PONG\r\n"), 120_000))) throw new Error("no PONG after the SUBs");
    const pubs = Buffer.from("PUB hostile.fan 16\r\n0123456789abcdef\r\n".repeat(10) + "PING\r\n");
    return await underLoad(ctx.server.port, null, async () => {
      b.write(pubs);
      if (!(await b.until((t) => t.includes("PONG\r\n"), 120_000))) throw new Error("no PONG after the PUBs");
    });
  } finally {
    a.destroy();
    b.destroy();
  }
}

/** (c) 500 unauthenticated sockets each send `PUB x 1048576` + 1 MiB, on a server with auth. */
async function authServer(ctx: CaseContext): Promise<{ proc: ServerProc }> {
  const proc = await ServerProc.start({
    name: ctx.server.name,
    jetstream: false,
    config: `authorization {\n  user: "${CREDS.user}"\n  password: "${CREDS.pass}"\n}\n`,
  });
  return { proc };
}

async function unauthFlood(_ctx: CaseContext, { proc }: { proc: ServerProc }): Promise<Record<string, number>> {
  const frame = Buffer.concat([Buffer.from(`PUB x ${MB}\r\n`), randomBytes(MB), Buffer.from("\r\n")]);
  const rss0 = proc.rssBytes();
  let peak = rss0;
  const sampler = setInterval(() => (peak = Math.max(peak, proc.rssBytes())), 50);
  try {
    const r = await underLoad(proc.port, CREDS, async () => {
      const socks = await Promise.all(Array.from({ length: 500 }, () => HSock.open(proc.port)));
      await Promise.all(socks.map((s) => s.until((t) => t.includes("\r\n"), 30_000)));
      for (const s of socks) s.write(frame);
      // Done when the server has closed every one of them.
      const closed = await Promise.all(socks.map((s) => s.until(() => s.closed, 60_000)));
      for (const s of socks) s.destroy();
      const open = closed.filter((x) => !x).length;
      if (open > 0) throw new Error(`${open} unauthenticated sockets still open after 60 s`);
    });
    return { ...r, "server RSS growth (peak)": (peak - rss0) / MB };
  } finally {
    clearInterval(sampler);
  }
}

/** Connections accepted per second: N sockets opened at once, each INFO, CONNECT, PING, PONG,
 *  by a generator process of its own (lib/accept-child.ts, fresh for each server). `earlier`
 *  bursts of N (opened, then closed) come before the measured one: 0 measures a server's
 *  first big burst (a reconnect storm after a restart), 3 a server that has seen a few (its
 *  accept path compiled by the JIT). */
async function acceptRate(ctx: CaseContext, n: number, earlier = 0): Promise<Record<string, number>> {
  const server = ctx.server;
  const entry = path.join(path.dirname(fileURLToPath(import.meta.url)), "..", "lib", "accept-child.js");
  const child = fork(entry, [String(server.port), String(n), String(earlier)], { stdio: ["ignore", "inherit", "inherit", "ipc"] });
  const next = (ms: number): Promise<string> =>
    new Promise<string>((resolve, reject) => {
      const t = setTimeout(() => reject(new Error("accept generator: no answer")), ms);
      child.once("message", (m) => {
        clearTimeout(t);
        resolve(String(m));
      });
      child.once("exit", () => reject(new Error("accept generator exited")));
    });
  try {
    const ready = await next(120_000);
    if (ready !== "ready") throw new Error(`accept generator: ${ready}`);
    const cpu0 = server.cpuSeconds();
    const done = next(120_000);
    child.send("go");
    const r = JSON.parse(await done) as { ms?: number; error?: string };
    if (r.ms === undefined) throw new Error(`accept generator: ${r.error ?? "no result"}`);
    const cpu = server.cpuSeconds() - cpu0;
    await sleep(500);
    return { "connections/s": n / (r.ms / 1000), "all ready in": r.ms, "server CPU µs/conn": (cpu * 1e6) / n };
  } finally {
    if (child.exitCode === null) child.kill("SIGKILL");
  }
}

/** RSS per idle authenticated connection: a fresh server, n connections, 2 s idle. */
/** 2,000 connected clients destroy their sockets at once (the server gets 2,000 EOFs in a
 *  turn or two); done at a new connection's PONG after that. */
async function closeStorm(ctx: CaseContext, n: number): Promise<Record<string, number>> {
  const socks: HSock[] = [];
  for (let i = 0; i < n; i += 200) socks.push(...(await Promise.all(Array.from({ length: Math.min(200, n - i) }, () => connectRaw(ctx.server.port, null)))));
  return underLoad(ctx.server.port, null, async () => {
    for (const s of socks) s.destroy();
    const after = await connectRaw(ctx.server.port, null);
    after.destroy();
  });
}

/** The same over WebSocket: a server started for the case with a plain websocket listener;
 *  n clients upgrade (200 at a time) and then destroy their sockets at once; done at a new
 *  (plain) connection's PONG after that. */
async function wsServer(ctx: CaseContext): Promise<{ proc: ServerProc; wsPort: number }> {
  const wsPort = await freePort();
  const proc = await ServerProc.start({
    name: ctx.server.name,
    jetstream: false,
    config: `websocket {\n  listen: "${HOST}:${wsPort}"\n  no_tls: true\n}\n`,
  });
  try {
    await waitForListen(wsPort, 10_000);
  } catch (e) {
    await proc.stop();
    throw e;
  }
  return { proc, wsPort };
}

async function wsCloseStorm(_ctx: CaseContext, { proc, wsPort }: { proc: ServerProc; wsPort: number }, n: number): Promise<Record<string, number>> {
  const socks: net.Socket[] = [];
  try {
    const one = async (): Promise<void> => {
      const s = net.connect({ host: HOST, port: wsPort });
      socks.push(s);
      s.on("error", () => undefined);
      await new Promise<void>((resolve, reject) => {
        s.once("connect", resolve);
        s.once("error", reject);
      });
      await wsUpgrade(s, HOST, wsPort);
    };
    for (let i = 0; i < n; i += 200) await Promise.all(Array.from({ length: Math.min(200, n - i) }, one));
    return await underLoad(proc.port, null, async () => {
      for (const s of socks) s.destroy();
      const after = await connectRaw(proc.port, null);
      after.destroy();
    });
  } finally {
    for (const s of socks) s.destroy();
  }
}

async function rssPerIdle(ctx: CaseContext, n: number): Promise<Record<string, number>> {
  const proc = await ServerProc.start({
    name: ctx.server.name,
    jetstream: false,
    config: `authorization {\n  user: "${CREDS.user}"\n  password: "${CREDS.pass}"\n}\n`,
  });
  try {
    await sleep(1000);
    const rss0 = proc.rssBytes();
    const socks: HSock[] = [];
    // In batches of 100, as clients of a real fleet arrive, not all in one burst.
    for (let i = 0; i < n; i += 100) {
      const batch = await Promise.all(Array.from({ length: Math.min(100, n - i) }, () => HSock.open(proc.port)));
      await Promise.all(batch.map((s) => handshake(s, CREDS)));
      socks.push(...batch);
    }
    await sleep(2000);
    const rss1 = proc.rssBytes();
    for (const s of socks) s.destroy();
    return { "RSS per idle connection": (rss1 - rss0) / n, "server RSS, empty": rss0 / MB };
  } finally {
    await proc.stop();
  }
}

export const hostileSuite: SuiteDef = {
  name: "hostile",
  jetstream: true,
  notes: [
    "Bystander rows: one connection, in a process of its own (not the load generator's), keeps a PING in flight (a new one 2 ms after each PONG) from 100 ms before the load until 100 ms after it; p50/p99 of its round trips. Each bystander case runs 5 times in a row on the same server: every row is the median run's value, and beside it the p99 of the first run (on a fresh tsnats, code V8 has not optimised yet) and of the worst run. Goal: p99 at most 2x nats-server's; bar: under 50 ms.",
    "stream create: one client sends $JS.API.STREAM.CREATE.HOSTILE with 10,000 literal subjects (memory storage); load done = its reply.",
    "STREAM.INFO burst: one client writes 5,000 $JS.API.STREAM.INFO requests for a memory stream with 100 subjects in one write; load done = the last reply.",
    "100k SUBs: one client writes 100,000 SUB lines and a PING in one write; load done = its PONG.",
    "fan-out: one client subscribes 100,000 times to one subject; another writes 10 PUBs (16 B) to it and a PING in one write; load done = that PING's PONG (1M deliveries, 36 MB to the subscriber, which the bench reads).",
    "memory stream fill: one client writes 500,000 PUBs (100 B, no reply subject, 100 subjects) to a memory stream, 5,000 per write as its socket drains; load done = STREAM.INFO counts 500,000 (polled every 20 ms).",
    "PUB flood to a file stream: one client writes 10,000 PUBs (16 B, each with its reply subject) to a file stream's subjects in one write; load done = the last PubAck. Its first run is the suite's first JetStream publish, so on tsnats it runs mostly unoptimised code while V8 compiles the publish path on a second thread (the \"first run\" row).",
    "unauthenticated flood: a server started for the case (its 5 runs on it) with authorization { user, password }; 500 sockets read INFO and each writes PUB x 1048576 with its 1 MiB payload without CONNECT; load done = the server closed all 500. The bystander is authenticated. RSS growth is the server's peak VmRSS over the case minus before (sampled every 50 ms).",
    "close storm: 2,000 connected clients (opened 200 at a time beforehand) destroy their sockets in one turn; load done = a new connection's PONG after that.",
    "WebSocket close storm: a server started for the case (its 5 runs on it) with websocket { listen, no_tls: true }; 2,000 clients upgrade (200 at a time) and destroy their sockets in one turn; the bystander is on the client port; load done = a new connection's PONG after that.",
    "accept rate: after a warm-up burst of N/4 connections, N sockets opened at once, each INFO, CONNECT, PING, PONG; the rate is N / time until the last PONG (the generator's own work included: a Node process of its own, fresh for each server, so that neither server is measured with a generator the other one warmed). The second accept case opens and closes three bursts of N before the measured one (a server past its first burst: its accept path compiled).",
    "RSS per idle connection: a fresh server with authorization; 1,000 connections (batches of 100) authenticate and stay idle; VmRSS 2 s later minus before, / 1,000. Go and V8 count differently: indicative.",
    SYNC_INTERVAL_NOTE,
  ],
  cases(_opts: BenchOptions): CaseDef[] {
    return [
      {
        name: "RSS per idle connection (1,000)",
        metrics: [
          { label: "RSS per idle connection", unit: "B", better: "lower" },
          { label: "server RSS, empty", unit: "MB", better: "lower" },
        ],
        run: (c) => rssPerIdle(c, 1000),
      },
      {
        name: "accept 2,000 connections at once",
        metrics: [
          { label: "connections/s", unit: "conns/s", better: "higher" },
          { label: "all ready in", unit: "ms", better: "lower" },
          { label: "server CPU µs/conn", unit: "µs", better: "lower" },
        ],
        run: (c) => acceptRate(c, 2000),
      },
      {
        name: "accept 2,000 connections at once, after three such bursts",
        metrics: [
          { label: "connections/s", unit: "conns/s", better: "higher" },
          { label: "all ready in", unit: "ms", better: "lower" },
          { label: "server CPU µs/conn", unit: "µs", better: "lower" },
        ],
        run: (c) => acceptRate(c, 2000, 3),
      },
      { name: "while 2,000 connected clients close at once", metrics: BYSTANDER_METRICS, run: repeated((c) => closeStorm(c, 2000)) },
      { name: "while 2,000 WebSocket clients close at once", metrics: BYSTANDER_METRICS, run: repeatedOwn(wsServer, (c, srv) => wsCloseStorm(c, srv, 2000)) },
      { name: "while one client creates a 10k-subject stream", metrics: BYSTANDER_METRICS, run: repeated(streamCreate) },
      { name: "while one client sends 5,000 STREAM.INFO in one write", metrics: BYSTANDER_METRICS, run: repeated(infoBurst) },
      { name: "while one client sends 100k SUBs in one write", metrics: BYSTANDER_METRICS, run: repeated(subFlood) },
      { name: "while one client's 10 PUBs fan out to 100k subscriptions", metrics: BYSTANDER_METRICS, run: repeated(fanout) },
      { name: "while one client sends 10,000 PUBs to a file stream in one write", metrics: BYSTANDER_METRICS, run: repeated(jsPubFlood) },
      // Like for like: nats-server's default answers a publish after the write, fsyncing every
      // 2 minutes (2.9.10 has no sync_interval: always to compare the other way).
      syncIntervalCase("while one client sends 10,000 PUBs to a file stream in one write", BYSTANDER_METRICS, repeated(jsPubFlood)),
      { name: "while one client fills a memory stream with 500,000 messages", metrics: BYSTANDER_METRICS, run: repeated(memFill) },
      {
        name: "while 500 unauthenticated sockets send PUB x 1 MiB",
        metrics: [...BYSTANDER_METRICS, { label: "server RSS growth (peak)", unit: "MB", better: "lower" }],
        run: repeatedOwn(authServer, unauthFlood),
      },
    ];
  },
};
