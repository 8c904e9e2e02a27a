// usage: node mem-tmp.mjs fill|empty|recover  storeDir
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { connect } from "@nats-io/transport-node";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
const [mode, dir] = process.argv.slice(2);
const port = 14444;
const flags = (process.env.NF ?? "--max-semi-space-size=4").split(" ").filter(Boolean);
const child = spawn("node", [...flags, "dist/src/bin/server.js", "-a", "127.0.0.1", "-p", String(port), "-js", "-sd", dir], { stdio: ["ignore", "ignore", "ignore"] });
const rss = () => { const s = readFileSync(`/proc/${child.pid}/status`, "utf8"); return ["VmRSS","RssAnon","RssFile"].map(k => k + "=" + new RegExp(k + ":\\s+(\\d+)").exec(s)[1]).join(" "); };
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
let nc;
const t0 = performance.now();
for (let i = 0; i < 300; i++) { try { nc = await connect({ servers: `127.0.0.1:${port}`, reconnect: false }); break; } catch { await sleep(20); } }
const jsm = await jetstreamManager(nc);
if (mode === "fill" || mode === "empty") {
  await jsm.streams.add({ name: "BENCH", subjects: ["bench.js.>"] });
  if (mode === "empty") { await sleep(500); console.log("empty rss kB", rss()); if (process.env.PROBE) { process.kill(child.pid, "SIGWINCH"); await sleep(300); } }
  if (mode === "fill") {
    const js = jetstream(nc); const p = new Uint8Array(16); const N = 1_000_000; let inflight = []; 
    for (let i = 0; i < N; i++) { inflight.push(js.publish("bench.js.store", p)); if (inflight.length >= 1024) { await Promise.all(inflight); inflight = []; } }
    await Promise.all(inflight);
    console.log("filled", (await jsm.streams.info("BENCH")).state.messages);
  }
} else {
  for (;;) { const i = await jsm.streams.info("BENCH"); if (i.state.messages === +(process.env.WANT ?? 1_000_000)) break; await sleep(20); }
  const t1 = performance.now();
  await sleep(1000); console.log("recovered rss kB", rss(), "ms", (t1 - t0).toFixed(0));
  if (process.env.PROBE) { process.kill(child.pid, "SIGWINCH"); await sleep(300); }
}
await nc.close();
child.kill("SIGKILL");
