// Heap breakdown of a server under test, for questions like "what is the RSS per stored
// message made of". Preload it into the tsnats process and signal it:
//
//   TSNATS_HEAP_PROBE=/tmp/heap.jsonl TSNATS_NODE_FLAGS="--import ./dist/bench/lib/heap-probe.js" \
//     node dist/bench/run.js js --cases store --only tsnats
//   kill -WINCH <server pid>      # appends one JSON line: RSS, memoryUsage(), every heap space
//
// With TSNATS_HEAP_PROBE_GC=1 and --expose-gc in TSNATS_NODE_FLAGS it collects garbage first,
// which separates what is live from what V8 merely keeps committed. Nothing here is loaded
// unless preloaded; SIGWINCH is otherwise ignored by Node.
import { appendFileSync, readFileSync } from "node:fs";
import v8 from "node:v8";

const out = process.env["TSNATS_HEAP_PROBE"] ?? `/tmp/tsnats-heap-${process.pid}.jsonl`;

process.on("SIGWINCH", () => {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (process.env["TSNATS_HEAP_PROBE_GC"] === "1" && gc !== undefined) gc();
  const m = /VmRSS:\s+(\d+)\s+kB/.exec(readFileSync("/proc/self/status", "utf8"));
  const spaces: Record<string, { size: number; used: number }> = {};
  for (const s of v8.getHeapSpaceStatistics()) spaces[s.space_name] = { size: s.space_size, used: s.space_used_size };
  const line = { pid: process.pid, t: Date.now(), rss: m?.[1] !== undefined ? Number(m[1]) * 1024 : 0, mem: process.memoryUsage(), spaces };
  appendFileSync(out, JSON.stringify(line) + "\n");
});
