// Side-by-side benchmark entry: `npm run bench -- <core|js|consume|kv|secure|hostile|cluster|cluster-js|all> [options]`.
// Each server runs alone (never both at once: the load generator and one server already
// share the machine's cores), and each case fails soft into an "error: ..." cell.

import path from "node:path";
import { fileURLToPath } from "node:url";
import { ServerConns } from "./lib/context.js";
import { formatCell, markdownTable, ratioOf, writeResults } from "./lib/report.js";
import { availability, SERVER_NAMES, ServerProc, type ServerName } from "./lib/servers.js";
import type { BenchOptions, CaseContext, CaseDef, Cell, ResultRow, SuiteDef } from "./lib/types.js";
import { coreSuite } from "./suites/core.js";
import { jsSuite } from "./suites/js.js";
import { consumeSuite } from "./suites/consume.js";
import { kvSuite } from "./suites/kv.js";
import { secureSuite } from "./suites/secure.js";
import { hostileSuite } from "./suites/hostile.js";
import { clusterSuite } from "./suites/cluster.js";
import { clusterJsSuite } from "./suites/cluster-js.js";

const SUITES: Record<string, SuiteDef> = { core: coreSuite, js: jsSuite, consume: consumeSuite, kv: kvSuite, secure: secureSuite, hostile: hostileSuite, cluster: clusterSuite, "cluster-js": clusterJsSuite };
const resultsDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..", "bench", "results");

const USAGE = `usage: npm run bench -- <core|js|consume|kv|secure|hostile|cluster|cluster-js|all> [options]
  --duration <s>   seconds per throughput case (default 3)
  --msgs <n>       stored messages for js recovery/memory and consume, each size
                   (default 1000000)
  --rtt <n>        round trips for latency cases (default 10000, plus a 10% warm-up)
  --timeout <s>    bound for one case against one server (default 300)
  --only <name>    tsnats | nats-server
  --cases <regex>  only the cases whose name matches (consume needs its "fill" cases)
  --catchup-mib <n>  cluster-js: MiB a stopped follower misses before it catches up
                   (default 32, or TSNATS_BENCH_CATCHUP_MIB; the 1 GiB run: 1024)`;

function parseArgs(argv: string[]): { suites: SuiteDef[]; opts: BenchOptions } {
  const opts: BenchOptions = { durationS: 3, msgs: 1_000_000, rtt: 10_000, caseTimeoutS: 300, only: null, filter: null, catchupMib: Number(process.env["TSNATS_BENCH_CATCHUP_MIB"] ?? 32) };
  const names: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const value = (): string => {
      const v = argv[++i];
      if (v === undefined) throw new Error(`${a} needs a value`);
      return v;
    };
    const num = (): number => {
      const v = Number(value());
      if (!Number.isFinite(v) || v <= 0) throw new Error(`${a} needs a positive number`);
      return v;
    };
    switch (a) {
      case "--duration":
        opts.durationS = num();
        break;
      case "--msgs":
        opts.msgs = Math.floor(num());
        break;
      case "--rtt":
        opts.rtt = Math.floor(num());
        break;
      case "--timeout":
        opts.caseTimeoutS = num();
        break;
      case "--cases":
        opts.filter = value();
        break;
      case "--catchup-mib":
        opts.catchupMib = num();
        break;
      case "--only": {
        const v = value();
        if (v !== "tsnats" && v !== "nats-server") throw new Error("--only takes tsnats or nats-server");
        opts.only = v;
        break;
      }
      case "-h":
      case "--help":
        console.log(USAGE);
        process.exit(0);
        break;
      default:
        if (a.startsWith("-")) throw new Error(`unknown option ${a}`);
        names.push(a);
    }
  }
  if (names.length === 0) throw new Error("no suite given");
  const suites: SuiteDef[] = [];
  for (const n of names) {
    if (n === "all") suites.push(coreSuite, jsSuite, consumeSuite, kvSuite, secureSuite, hostileSuite, clusterSuite, clusterJsSuite);
    else {
      const s = SUITES[n];
      if (s === undefined) throw new Error(`unknown suite ${n}`);
      suites.push(s);
    }
  }
  return { suites, opts };
}

function errText(e: unknown): string {
  const m = e instanceof Error ? e.message : String(e);
  return `error: ${m.split("\n")[0]!.slice(0, 160)}`;
}

class CaseRun extends ServerConns implements CaseContext {
  server: ServerProc;
  readonly opts: BenchOptions;
  readonly notes: string[] = [];
  private readonly replace: (s: ServerProc) => void;

  constructor(server: ServerProc, opts: BenchOptions, replace: (s: ServerProc) => void) {
    super();
    this.server = server;
    this.opts = opts;
    this.replace = replace;
  }

  protected serverPort(): number {
    return this.server.port;
  }

  async freshServer(): Promise<ServerProc> {
    const spec = { name: this.server.name, jetstream: this.server.storeDir !== "" };
    await this.server.stop();
    const s = await ServerProc.start(spec);
    this.server = s;
    this.replace(s);
    return s;
  }

  note(text: string): void {
    this.notes.push(text);
  }

  closeAll(): void {
    for (const c of this.conns.splice(0)) c.close();
  }
}

async function runCase(c: CaseDef, run: CaseRun): Promise<Record<string, number> | string> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      c.run(run),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`timed out after ${run.opts.caseTimeoutS} s`)), run.opts.caseTimeoutS * 1000);
      }),
    ]);
  } catch (e) {
    return errText(e);
  } finally {
    clearTimeout(timer);
    run.closeAll();
  }
}

async function runSuite(suite: SuiteDef, opts: BenchOptions): Promise<void> {
  const only = opts.filter === null ? null : new RegExp(opts.filter);
  const cases = suite.cases(opts).filter((c) => only === null || only.test(c.name));
  const cells = new Map<string, Record<ServerName, Cell>>();
  const key = (c: CaseDef, label: string): string => `${c.name}\u0000${label}`;
  for (const c of cases) for (const m of c.metrics) cells.set(key(c, m.label), { tsnats: "–", "nats-server": "–" });
  const setAll = (name: ServerName, c: CaseDef, v: Cell): void => {
    for (const m of c.metrics) cells.get(key(c, m.label))![name] = v;
  };
  const servers: Record<string, string> = {};
  const notes = [...suite.notes];

  console.error(`\n== suite ${suite.name} ==`);
  for (const name of SERVER_NAMES) {
    if (opts.only !== null && opts.only !== name) {
      servers[name] = "not run (--only)";
      for (const c of cases) setAll(name, c, "not run");
      continue;
    }
    const avail = availability(name);
    servers[name] = avail.note;
    if (!avail.ok) {
      console.error(`[${name}] ${avail.note}`);
      notes.push(`${name}: ${avail.note}`);
      for (const c of cases) setAll(name, c, avail.note);
      continue;
    }
    let server: ServerProc;
    try {
      server = await ServerProc.start({ name, jetstream: suite.jetstream });
    } catch (e) {
      console.error(`[${name}] failed to start: ${e instanceof Error ? e.message : String(e)}`);
      for (const c of cases) setAll(name, c, errText(new Error(`server did not start`)));
      continue;
    }
    let current = server;
    try {
      for (const c of cases) {
        if (!current.running) {
          console.error(`[${name}] server not running before "${c.name}"; starting a fresh one`);
          try {
            const spec = { name, jetstream: suite.jetstream };
            await current.stop();
            current = await ServerProc.start(spec);
          } catch (e) {
            setAll(name, c, errText(e));
            continue;
          }
        }
        const run = new CaseRun(current, opts, (s) => (current = s));
        const t0 = performance.now();
        const r = await runCase(c, run);
        const secs = ((performance.now() - t0) / 1000).toFixed(1);
        for (const n of run.notes) notes.push(`${name}, ${c.name}: ${n}`);
        if (typeof r === "string") {
          if (!current.running) {
            const tail = current.logTail(5);
            console.error(`[${name}] server died during "${c.name}"${tail !== "" ? `; log tail:\n${tail}` : ""}`);
          }
          setAll(name, c, r);
          console.error(`[${name}] ${c.name}: ${r} (${secs} s)`);
          continue;
        }
        const parts: string[] = [];
        for (const m of c.metrics) {
          const v = r[m.label];
          const cell: Cell = v === undefined ? "error: no value" : v;
          cells.get(key(c, m.label))![name] = cell;
          parts.push(`${formatCell(cell, m.unit)} ${m.unit}`);
        }
        console.error(`[${name}] ${c.name}: ${parts.join(", ")} (${secs} s)`);
      }
    } finally {
      await current.stop();
    }
  }

  const rows: ResultRow[] = [];
  for (const c of cases) {
    for (const m of c.metrics) {
      const values = cells.get(key(c, m.label))!;
      rows.push({ case: c.name, metric: m.label, unit: m.unit, better: m.better, values, ratio: ratioOf(values) });
    }
  }
  console.log(`\n### ${suite.name}\n`);
  console.log(markdownTable(rows));
  if (notes.length > 0) console.log("\n" + notes.map((n) => `- ${n}`).join("\n"));
  const file = path.join(resultsDir, `latest-${suite.name}.json`);
  writeResults(file, suite.name, opts, servers, notes, rows);
  console.error(`results written to ${path.relative(process.cwd(), file)}`);
}

async function main(): Promise<void> {
  let parsed: { suites: SuiteDef[]; opts: BenchOptions };
  try {
    parsed = parseArgs(process.argv.slice(2));
  } catch (e) {
    console.error(`${e instanceof Error ? e.message : String(e)}\n${USAGE}`);
    process.exit(2);
  }
  for (const s of parsed.suites) await runSuite(s, parsed.opts);
}

await main();
