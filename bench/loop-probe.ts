// Bystander latency probe: one client floods the server (100k SUBs in one write, or a
// JetStream request), another PINGs every 5 ms; prints the bystander's round trips.
// Usage: node dist/bench/loop-probe.js <tsnats|nats-server> <same|distinct|unsub|wild> [n]
import net from "node:net";
import { startNatsServerChild, startTsnatsChild, type ChildServer } from "../test/helpers/core-child.js";

const T0 = performance.now();
export function mark(what: string): void {
  if (process.env["PROBE_VERBOSE"]) console.error(`${what} at ${Math.round(performance.now() - T0)} ms`);
}

function connect(port: number): Promise<net.Socket> {
  return new Promise((res, rej) => {
    const s = net.connect({ port, host: "127.0.0.1" });
    s.once("error", rej);
    s.once("connect", () => res(s));
  });
}

export interface PingStats {
  n: number;
  p50: number;
  p99: number;
  max: number;
  over10: number;
  over50: number;
}

/** PINGs every intervalMs (one outstanding at a time) until stop() resolves; RTTs in ms. */
export async function bystander(port: number, intervalMs: number, until: Promise<unknown>): Promise<PingStats> {
  const s = await connect(port);
  s.setNoDelay(true);
  let waiting: (() => void) | null = null;
  let buf = "";
  s.on("data", (d) => {
    buf += d.toString("latin1");
    let i;
    while ((i = buf.indexOf("PONG\r\n")) >= 0) {
      buf = buf.slice(i + 6);
      const w = waiting;
      waiting = null;
      w?.();
    }
  });
  s.write('CONNECT {"verbose":false,"pedantic":false}\r\n');
  const rt = (): Promise<number> =>
    new Promise((res) => {
      const t0 = performance.now();
      waiting = () => res(performance.now() - t0);
      s.write("PING\r\n");
    });
  await rt();
  let done = false;
  void until.then(() => (done = true));
  const rtts: number[] = [];
  while (!done) {
    const t0 = performance.now();
    const r = await rt();
    rtts.push(r);
    if (r > 20 && process.env["PROBE_VERBOSE"]) console.error(`slow ping at ${Math.round(t0 - T0)} ms: ${r.toFixed(1)} ms`);
    const left = intervalMs - (performance.now() - t0);
    if (left > 0) await new Promise((r) => setTimeout(r, left));
  }
  s.destroy();
  rtts.sort((a, b) => a - b);
  const q = (p: number) => rtts[Math.min(rtts.length - 1, Math.floor(p * rtts.length))] ?? 0;
  return { n: rtts.length, p50: q(0.5), p99: q(0.99), max: rtts[rtts.length - 1] ?? 0, over10: rtts.filter((x) => x > 10).length, over50: rtts.filter((x) => x > 50).length };
}

function subLines(mode: string, n: number): Buffer {
  const lines: string[] = ['CONNECT {"verbose":false,"pedantic":false}\r\n'];
  for (let i = 0; i < n; i++) {
    const subj = mode === "same" || mode === "unsub" ? "foo.bar" : mode === "wild" ? `w.${i}.*` : `foo.${i}`;
    lines.push(`SUB ${subj} ${i + 1}\r\n`);
  }
  lines.push("PING\r\n");
  return Buffer.from(lines.join(""));
}

function unsubLines(n: number): Buffer {
  const u: string[] = [];
  for (let i = 0; i < n; i++) u.push(`UNSUB ${i + 1}\r\n`);
  u.push("PING\r\n");
  return Buffer.from(u.join(""));
}

// The flood's bytes are built before the bystander starts: this process's own loop must
// not stall while it measures.
async function subFlood(port: number, mode: string, n: number, subs: Buffer, unsubs: Buffer): Promise<number> {
  const s = await connect(port);
  let text = "";
  let want = 0;
  let wake: (() => void) | null = null;
  s.on("data", (d) => {
    text += d.toString("latin1");
    const have = text.split("PONG\r\n").length - 1;
    if (have >= want && wake) {
      const w = wake;
      wake = null;
      w();
    }
  });
  s.on("error", () => {});
  const t0 = performance.now();
  mark("flood");
  await new Promise<void>((res) => {
    want = 1;
    wake = res;
    s.write(subs);
  });
  let t = performance.now() - t0;
  mark("subs done");
  if (mode === "unsub") {
    // unsubscribe them all in one write too
    const t1 = performance.now();
    await new Promise<void>((res) => {
      want = 2;
      wake = res;
      s.write(unsubs);
    });
    t = performance.now() - t1;
    mark("unsubs done");
  }
  await new Promise((r) => setTimeout(r, 300));
  mark("closing");
  s.destroy();
  return t;
}

async function main(): Promise<void> {
  const [kind = "tsnats", mode = "same", nArg = "100000"] = process.argv.slice(2);
  const n = Number(nArg);
  const srv: ChildServer = kind === "nats-server" ? await startNatsServerChild(["-p", "-1", "-a", "127.0.0.1"]) : await startTsnatsChild(["-p", "-1", "-a", "127.0.0.1"]);
  try {
    const subs = subLines(mode, n);
    const unsubs = unsubLines(mode === "unsub" ? n : 0);
    let resolveDone!: () => void;
    const done = new Promise<void>((r) => (resolveDone = r));
    const probe = bystander(srv.port, 5, done);
    await new Promise((r) => setTimeout(r, 100));
    const ms = await subFlood(srv.port, mode, n, subs, unsubs);
    await new Promise((r) => setTimeout(r, 50));
    resolveDone();
    const st = await probe;
    console.log(JSON.stringify({ kind, mode, n, flood_ms: Math.round(ms), ...Object.fromEntries(Object.entries(st).map(([k, v]) => [k, Math.round(v * 10) / 10])) }));
  } finally {
    await srv.stop();
  }
}

if (process.argv[1]?.endsWith("loop-probe.js")) void main();
