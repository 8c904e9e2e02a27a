// How long a file stream store's recovery holds the event loop at once, in process:
//   node dist/bench/store-recovery.js [msgs=400000] [payloadBytes=64] [subjects=1000]
// Stores N messages (subjects taking turns, so summaries list them one by one), closes, then
// opens the store twice with its summaries and twice without them (deleted: every block is
// scanned and verified record by record): once with open() (one synchronous call), once with
// openPaced and a breathe that yields to the loop after every step. Reports the whole time
// and, for the paced open, the longest step between two yields: the longest stall another
// client would see (wall time, and the process's CPU time, which a loaded machine does not
// inflate). Prints one JSON line.
import { mkdtempSync, readdirSync, rmSync, unlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { FileStreamStore } from "../src/storage/file/stream.js";
import { openFileStreamStore } from "../src/storage/index.js";
import { NodeFs } from "../src/runtime/fs.js";
import { SystemClock } from "../src/runtime/clock.js";

const N = Number(process.argv[2] ?? 400_000);
const PAYLOAD = Number(process.argv[3] ?? 64);
const SUBJECTS = Number(process.argv[4] ?? 1000);

function sync(store: FileStreamStore): Promise<void> {
  return new Promise<void>((res, rej) => store.sync((e) => (e ? rej(e) : res())));
}

async function open(dir: string, paced: boolean): Promise<{ ms: number; maxStepMs: number; steps: number; msgs: number; top: number[]; tailMs: number; maxCpuMs: number; p50CpuMs: number }> {
  const all: number[] = [];
  const cpu: number[] = [];
  const store = new FileStreamStore({ dir, fs: new NodeFs(), clock: new SystemClock() });
  let maxStep = 0;
  let steps = 0;
  let tailMs = 0;
  const t0 = performance.now();
  if (paced) {
    let last = performance.now();
    let lastCpu = process.cpuUsage();
    await store.openPaced(async () => {
      const c = process.cpuUsage(lastCpu);
      cpu.push((c.user + c.system) / 1000);
      const now = performance.now();
      if (now - last > maxStep) maxStep = now - last;
      all.push(now - last);
      steps++;
      await new Promise((r) => setImmediate(r));
      last = performance.now();
      lastCpu = process.cpuUsage();
    });
    const end = performance.now();
    if (end - last > maxStep) maxStep = end - last;
    tailMs = end - last;
  } else {
    store.open();
  }
  const ms = performance.now() - t0;
  const msgs = store.state().msgs;
  await store.close();
  const top = all.sort((a, b) => b - a).slice(0, 4).map((x) => +x.toFixed(2));
  cpu.sort((a, b) => b - a);
  return { ms, maxStepMs: paced ? maxStep : ms, steps, msgs, top, tailMs, maxCpuMs: cpu[0] ?? 0, p50CpuMs: cpu[cpu.length >> 1] ?? 0 };
}

async function main(): Promise<void> {
  const root = mkdtempSync(join(tmpdir(), "filestore-bench-recovery-"));
  const dir = join(root, "s");
  try {
    const { store } = await openFileStreamStore({ dir });
    const data = Buffer.alloc(PAYLOAD, 120);
    const subjects = Array.from({ length: SUBJECTS }, (_, i) => `bench.recovery.${i}`);
    for (let i = 0; i < N; i++) {
      store.storeMsg(subjects[i % SUBJECTS]!, null, data, 1e18 + i, 0);
      if (i % 50_000 === 49_999) await sync(store);
    }
    await sync(store);
    const blocks = store.blockCount();
    await store.close();
    const out: Record<string, unknown> = { msgs: N, payloadBytes: PAYLOAD, subjects: SUBJECTS, blocks };
    // Twice each, the second measured (the first warms the JIT and the page cache).
    for (const mode of ["summaries", "scan"]) {
      if (mode === "scan") for (const n of readdirSync(dir)) if (n.endsWith(".sum")) unlinkSync(join(dir, n));
      for (const paced of [false, true]) {
        if (mode === "scan") for (const n of readdirSync(dir)) if (n.endsWith(".sum")) unlinkSync(join(dir, n));
        await open(dir, paced);
        if (mode === "scan") for (const n of readdirSync(dir)) if (n.endsWith(".sum")) unlinkSync(join(dir, n));
        const r = await open(dir, paced);
        if (r.msgs !== N) throw new Error(`recovered ${r.msgs} of ${N}`);
        const key = `${mode} ${paced ? "paced" : "open()"}`;
        out[key] = paced ? { ms: +r.ms.toFixed(1), longestStepMs: +r.maxStepMs.toFixed(2), steps: r.steps, slowestSteps: r.top, afterLastStepMs: +r.tailMs.toFixed(2), stepCpuMaxMs: +r.maxCpuMs.toFixed(2), stepCpuP50Ms: +r.p50CpuMs.toFixed(3) } : { ms: +r.ms.toFixed(1) };
      }
    }
    console.log(JSON.stringify(out));
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

void main();
