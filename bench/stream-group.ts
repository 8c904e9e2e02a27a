// Publishes per second through a replicated stream in one process: three StreamGroups on
// RaftHosts (WAL on a simulated disk, frames over an in-memory network, one event-loop turn
// per hop), against the same stream with no replication (R1, LocalProposer). A window of
// publishes is kept in flight; a publish counts once its PubAck arrived.
// `npx tsc -p tsconfig.json && node dist/bench/stream-group.js [--msgs 20000] [--window 64] [--bytes 128] [--storage memory|file] [--replicas 3] [--batch on|off]`
import { StreamCluster } from "../test/helpers/streamcluster.js";
import { FakeBus } from "../test/unit/stream-fakebus.js";
import { MemoryStreamStore } from "../src/storage/index.js";
import { Stream } from "../src/stream/stream.js";
import { nullLogger } from "../src/server/log.js";
import { ManualClock } from "../src/runtime/clock.js";
import { NodeFs } from "../src/runtime/fs.js";
import { mkdtempSync, rmSync } from "node:fs";

function arg(name: string, def: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1]! : def;
}

const total = Number(arg("msgs", "20000"));
const window = Number(arg("window", "64"));
const bytes = Number(arg("bytes", "128"));
const storage = arg("storage", "memory") as "memory" | "file";
const replicas = Number(arg("replicas", "3"));
const batch = arg("batch", "on") !== "off";
const payload = "x".repeat(bytes);
const turn = (): Promise<void> => new Promise((r) => setImmediate(r));

async function drive(publish: (i: number) => void, acked: () => number): Promise<number> {
  let sent = 0;
  const t0 = performance.now();
  while (acked() < total) {
    while (sent < total && sent - acked() < window) publish(sent++);
    await turn();
  }
  return total / ((performance.now() - t0) / 1000);
}

async function replicated(): Promise<number> {
  // tmpfs: the WAL's and the store's fsyncs cost nothing, what is measured is the code path.
  const root = mkdtempSync("/dev/shm/streamraft-bench-");
  const c = new StreamCluster({ n: replicas, storage, snapshotEntries: 1 << 30, fs: () => new NodeFs(), root, batch });
  await c.startAll();
  const l = await c.leader();
  let acks = 0;
  l.bus.subscribe("bench.>", () => acks++);
  const rate = await drive(
    (i) => l.bus.publish(`r.${i % 8}`, `bench.${i}`, null, Buffer.from(payload)),
    () => acks,
  );
  await c.stopAll();
  rmSync(root, { recursive: true, force: true });
  return rate;
}

async function single(): Promise<number> {
  const c = new StreamCluster({ n: 1, storage });
  const bus = new FakeBus();
  const clock = new ManualClock();
  const st = new Stream(c.cfg, new MemoryStreamStore(Stream.storeLimits(c.cfg), null), null, {
    bus,
    clock,
    log: nullLogger,
    domain: "",
    serverName: "s",
    wouldExceedAccount: () => false,
    canAddConsumer: () => true,
  }, clock.nowNs());
  st.start();
  let acks = 0;
  bus.subscribe("bench.>", () => acks++);
  return drive(
    (i) => bus.publish(`r.${i % 8}`, `bench.${i}`, null, Buffer.from(payload)),
    () => acks,
  );
}

const r1 = await single();
const r3 = await replicated();
console.log(`R1 memory (no replication): ${Math.round(r1)} msgs/s`);
console.log(`R${replicas} ${storage} (StreamGroup, in-process, batch ${batch ? "on" : "off"}): ${Math.round(r3)} msgs/s (${(r3 / r1).toFixed(2)} of R1); ${total} msgs of ${bytes} B, window ${window}`);
