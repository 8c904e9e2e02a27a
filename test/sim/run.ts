// `npm run sim -- --seeds N [--nodes 3|5|both] [--start S] [--codec] [--fast-failover] [--membership] [--resync|--no-resync] [--wipe|--no-wipe] [--host] [--stream [--storage memory|file|both]] [--consumer [--lps]] [--seed S --verbose]`: runs the
// deterministic Raft simulator over many seeds and prints every failing seed with the command
// that replays it.
//
// Workloads: the Raft core alone (sim.ts, the default), --host (hostsim.ts), --stream
// (streamsim.ts), --consumer (consumersim.ts: a replicated durable consumer with explicit
// acks) and --kv (kvsim.ts: put, CAS and leader reads checked for linearizability), or
// `--workloads raft,consumer,kv` (several). With no workload flag, `--seeds N` runs raft,
// consumer and kv. For consumer and kv, each seed picks its variant (3 or 5 nodes, memory or
// file store, membership changes on every third seed) unless --nodes, --storage,
// --membership or --no-membership fix it; --step-ms, --fault-ms and --heal-ms set the run;
// --tolerate-stale-refusals takes a deposed leader's CAS refusal as unknown (fixed since:
// refusals wait for a confirmed leadership).
import { runConsumerSeed } from "./consumersim.js";
import { runHostSeed } from "./hostsim.js";
import { runKvSeed } from "./kvsim.js";
import { runSeed, type SimResult, type SimStats } from "./sim.js";
import { runStreamSeed } from "./streamsim.js";

function arg(name: string): string | undefined {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

const single = arg("seed");
const seeds = Number(arg("seeds") ?? (single !== undefined ? 1 : 100));
const start = Number(single ?? arg("start") ?? 1);
const nodesArg = arg("nodes") ?? "both";
const sizes = nodesArg === "both" ? [3, 5] : [Number(nodesArg)];
const verbose = process.argv.includes("--verbose");
const codec = process.argv.includes("--codec");
const fastFailover = process.argv.includes("--fast-failover");
const membership = process.argv.includes("--membership");
/** The consumer workload's consumer is last_per_subject, made after a prefix (consumersim.ts). */
const lps = process.argv.includes("--lps");
/** Corruption re-sync (a node with a bad CRC starts blank) on odd seeds, unless fixed. */
const wipeOf = (s: number): boolean => (process.argv.includes("--wipe") ? true : process.argv.includes("--no-wipe") ? false : s % 4 === 2);
const resyncOf = (s: number): boolean => (process.argv.includes("--resync") ? true : process.argv.includes("--no-resync") ? false : s % 2 === 1);
const faultMs = arg("fault-ms") !== undefined ? Number(arg("fault-ms")) : undefined;
const healMs = arg("heal-ms") !== undefined ? Number(arg("heal-ms")) : undefined;

let failures = 0;
const started = performance.now();
const explicit = ["stream", "host", "consumer", "kv", "raft"].filter((w) => process.argv.includes(`--${w}`));
const workloads = arg("workloads")?.split(",") ?? (explicit.length > 0 ? explicit : ["raft", "consumer", "kv"]);
for (const w of workloads) if (!["stream", "host", "consumer", "kv", "raft"].includes(w)) throw new Error(`unknown workload ${w}`);

/** A consumer or kv seed's variant: fixed by the flags, else from the seed. */
function variant(s: number): { nodes: number; storage: "memory" | "file"; membership: boolean } {
  const nodes = nodesArg === "both" ? (s % 2 === 1 ? 3 : 5) : Number(nodesArg);
  const st = arg("storage") ?? "both";
  const storage = st === "both" ? (Math.floor(s / 2) % 2 === 0 ? "memory" : "file") : (st as "memory" | "file");
  const m = process.argv.includes("--no-membership") ? false : membership ? true : s % 3 === 0;
  return { nodes, storage, membership: m };
}

async function runStateMachineSims(which: "consumer" | "kv"): Promise<void> {
  const stepMs = arg("step-ms") !== undefined ? Number(arg("step-ms")) : undefined;
  let failed = 0;
  let exhausted = 0;
  const tot: Record<string, number> = {};
  const t0 = performance.now();
  for (let s = start; s < start + seeds; s++) {
    const v = variant(s);
    const staleRefusals = process.argv.includes("--tolerate-stale-refusals") ? ("tolerate" as const) : ("fail" as const);
    const o = { seed: s, ...v, stepMs, faultMs, healMs, staleRefusals, lps };
    const r = which === "consumer" ? await runConsumerSeed(o) : await runKvSeed(o);
    for (const [k, x] of Object.entries({ ...r, ...r.faults })) if (typeof x === "number" && k !== "seed" && k !== "nodes") tot[k] = (tot[k] ?? 0) + x;
    if ("exhausted" in r && r.exhausted) exhausted++;
    if (r.violation !== null) {
      failed++;
      const flags = [`--${which}`, `--seed ${s}`, `--nodes ${v.nodes}`, `--storage ${v.storage}`, v.membership ? "--membership" : "--no-membership"];
      if (stepMs !== undefined) flags.push(`--step-ms ${stepMs}`);
      if (faultMs !== undefined) flags.push(`--fault-ms ${faultMs}`);
      if (healMs !== undefined) flags.push(`--heal-ms ${healMs}`);
      if (staleRefusals === "tolerate") flags.push("--tolerate-stale-refusals");
      if (lps) flags.push("--lps");
      console.log(`FAIL ${which} seed=${s} nodes=${v.nodes} storage=${v.storage} membership=${v.membership}: ${r.violation}`);
      console.log(`  replay: npm run sim -- ${flags.join(" ")}`);
    }
  }
  failures += failed;
  console.log(`${which} seeds=${seeds} (from ${start}) violations=${failed}${which === "kv" ? ` inconclusive=${exhausted}` : ""} ${JSON.stringify(tot)} in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
}

if (workloads.includes("consumer")) await runStateMachineSims("consumer");
if (workloads.includes("kv")) await runStateMachineSims("kv");
if (workloads.includes("stream")) {
  // Replicated streams (StreamGroup) under faults (test/sim/streamsim.ts).
  const st = arg("storage") ?? "both";
  const storages = st === "both" ? (["memory", "file"] as const) : ([st as "memory" | "file"] as const);
  for (const storage of storages) {
    for (const nodes of sizes) {
      let failed = 0;
      const tot = { published: 0, kills: 0, powerLosses: 0, reopens: 0, catchups: 0, pacedPurges: 0, fullRestarts: 0, leaderChanges: 0 };
      const t0 = performance.now();
      for (let s = start; s < start + seeds; s++) {
        const r = await runStreamSeed(s, nodes, storage, faultMs, healMs);
        tot.published += r.published;
        tot.kills += r.kills;
        tot.powerLosses += r.powerLosses;
        tot.reopens += r.reopens;
        tot.catchups += r.catchups;
        tot.pacedPurges += r.pacedPurges;
        tot.fullRestarts += r.fullRestarts;
        tot.leaderChanges += r.leaderChanges;
        if (r.violation !== null) {
          failed++;
          console.log(`FAIL stream seed=${s} nodes=${nodes} storage=${storage}: ${r.violation}`);
          console.log(`  replay: npm run sim -- --stream --seed ${s} --nodes ${nodes} --storage ${storage}`);
        }
      }
      failures += failed;
      console.log(`stream storage=${storage} nodes=${nodes} seeds=${seeds} (from ${start}) violations=${failed} ${JSON.stringify(tot)} in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
    }
  }
}
if (workloads.includes("host")) {
  // RaftHosts with the shared WAL on simulated disks (test/sim/hostsim.ts).
  for (const nodes of sizes) {
    let failed = 0;
    let acked = 0;
    let losses = 0;
    const t0 = performance.now();
    for (let s = start; s < start + seeds; s++) {
      const r = runHostSeed(s, nodes, faultMs, healMs);
      acked += r.acked;
      losses += r.powerLosses;
      if (r.violation !== null) {
        failed++;
        console.log(`FAIL host seed=${s} nodes=${nodes}: ${r.violation}`);
      }
    }
    failures += failed;
    console.log(`host nodes=${nodes} seeds=${seeds} violations=${failed} acked=${acked} powerLosses=${losses} in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  }
}
for (const nodes of workloads.includes("raft") ? sizes : []) {
  const total: Partial<SimStats> = {};
  let failed = 0;
  const t0 = performance.now();
  for (let s = start; s < start + seeds; s++) {
    const resync = resyncOf(s);
    const wipe = wipeOf(s);
    const r: SimResult = runSeed({ seed: s, nodes, verbose, faultMs, healMs, codec, fastFailover, membership, resync, wipe });
    for (const [k, v] of Object.entries(r.stats) as Array<[keyof SimStats, number]>) total[k] = (total[k] ?? 0) + v;
    if (verbose) for (const l of r.log) console.log(l);
    if (r.violation !== null) {
      failed++;
      console.log(`FAIL seed=${s} nodes=${nodes}: ${r.violation}`);
      console.log(`  replay: npm run sim -- --seed ${s} --nodes ${nodes}${resync ? " --resync" : " --no-resync"}${wipe ? " --wipe" : " --no-wipe"} --verbose`);
    }
  }
  failures += failed;
  const secs = (performance.now() - t0) / 1000;
  console.log(`nodes=${nodes} seeds=${seeds} (from ${start}) violations=${failed} in ${secs.toFixed(1)} s`);
  console.log(`  totals: ${JSON.stringify(total)}`);
}
console.log(`done in ${((performance.now() - started) / 1000).toFixed(1)} s, ${failures} failing seed(s)`);
process.exitCode = failures > 0 ? 1 : 0;
