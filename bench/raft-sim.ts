// Proposals per second committed through three in-memory RaftNodes (the pure core only: no
// disk, no sockets): the ceiling the Raft state machine puts on a replicated stream.
// `npx tsc -p tsconfig.json && node dist/bench/raft-sim.js [--seconds 2] [--batch 64] [--bytes 128] [--mode objects|codec]`
// Modes: "objects" hands Message values across; "codec" encodes and decodes every message
// as the RaftHost does on the wire.
import { RaftNode } from "../src/raft/node.js";
import { decodeMessage, encodeMessage } from "../src/raft/codec.js";
import { type Message, Role } from "../src/raft/types.js";
import { SeededRandom } from "../src/runtime/random.js";

function arg(name: string, def: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : def;
}

const seconds = arg("seconds", 2);
const batch = arg("batch", 64);
const bytes = arg("bytes", 128);
const ids = ["n1", "n2", "n3"];

function run(mode: "objects" | "codec"): { perSec: number; committed: number; msgs: number } {
  const rnd = new SeededRandom(1);
  const nodes = new Map(ids.map((id) => [id, new RaftNode({ id, peers: ids, electionTicks: 10, heartbeatTicks: 2, random: rnd })]));
  let msgs = 0;
  const pump = (): boolean => {
    const out: Message[] = [];
    for (const n of nodes.values()) {
      while (n.hasReady()) {
        const rd = n.ready();
        out.push(...rd.messages);
        n.advance(rd);
      }
    }
    for (const m of out) {
      msgs++;
      let mm = m;
      if (mode === "codec") {
        const d = decodeMessage(encodeMessage("S-R3F-bench", m));
        if (d instanceof Error) throw d;
        mm = d.msg;
      }
      nodes.get(mm.to)!.step(mm);
    }
    return out.length > 0;
  };
  const n1 = nodes.get("n1")!;
  n1.campaign();
  while (pump());
  if (n1.role !== Role.Leader) throw new Error("no leader");
  const payload = new Uint8Array(bytes).fill(120);
  const start = n1.log.committed;
  const t0 = performance.now();
  let t = t0;
  let rounds = 0;
  while (t - t0 < seconds * 1000) {
    for (let i = 0; i < batch; i++) n1.propose(payload);
    while (pump());
    if (++rounds % 8 === 0) {
      for (const n of nodes.values()) n.tick();
      t = performance.now();
    }
  }
  while (pump());
  const secs = (performance.now() - t0) / 1000;
  const committed = n1.log.committed - start;
  return { perSec: committed / secs, committed, msgs };
}

const only = process.argv.includes("--mode") ? process.argv[process.argv.indexOf("--mode") + 1] : undefined;
for (const mode of ["objects", "codec"] as const) {
  if (only !== undefined && only !== mode) continue;
  const r = run(mode);
  console.log(
    `raft-sim ${mode}: ${Math.round(r.perSec).toLocaleString("en-US")} proposals/s committed (3 nodes, batch ${batch}, ${bytes} B, ${r.committed} in ${seconds} s, ${r.msgs} messages)`,
  );
}
