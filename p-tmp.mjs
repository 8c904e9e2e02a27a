import { connect } from "@nats-io/transport-node";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
const nc = await connect({ servers: "127.0.0.1:" + process.argv[2] });
const jsm = await jetstreamManager(nc);
try { await jsm.streams.delete("S"); } catch {}
await jsm.streams.add({ name: "S", subjects: ["s.>"] });
const js = jetstream(nc);
const N = +process.argv[3] || 3000; const lat = [];
for (let i = 0; i < N; i++) { const t = performance.now(); await js.publish("s.x", "hello world 1234"); lat.push((performance.now()-t)*1000); }
lat.sort((a,b)=>a-b); console.log("p50", lat[N>>1].toFixed(0), "p90", lat[Math.floor(N*.9)].toFixed(0), "ops/s", (N/(lat.reduce((a,b)=>a+b,0)/1e6)).toFixed(0));
await nc.close();
