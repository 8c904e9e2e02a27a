// A cluster of tsnats processes for fault tests, each started from its own config file with
// fixed ports (a restarted server comes back where its clients and peers expect it). Routes
// run either through a RouteMesh (loopback, one proxy per server: links can be blocked and
// cut) or inside network namespaces (root: partitions by nftables drops). Servers can be
// SIGKILLed, SIGSTOPped and SIGCONTed, restarted, and stopped to read each one's copy of a
// stream from its store directory (what that replica holds, not what a leader serves).

import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startTsnatsChild, startTsnatsChildInNetns, type ChildServer } from "../helpers/core-child.js";
import { RouteMesh } from "../helpers/route-mesh.js";
import { TestNet } from "../helpers/netns.js";
import { until } from "../helpers/until.js";
import { openFileStreamStore } from "../../src/storage/index.js";

/** Ports handed out by this process, below Linux's ephemeral range (32768-60999 here): a
 *  port found free with listen(0) and closed again can be taken by any outgoing connection or
 *  listen(0) on the machine before the server that is to bind it starts (a node process takes
 *  a second or more under load), and the server then exits with EADDRINUSE. Ports below the
 *  range are only taken by whoever binds them by number; each process walks its own stretch
 *  (by pid) and checks that the port binds. */
const PORT_LO = 20_000;
const PORT_SPAN = 12_000;
let nextPort = PORT_LO + ((process.pid * 997) % PORT_SPAN);

function bindable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = createServer();
    s.once("error", () => resolve(false));
    s.listen(port, "127.0.0.1", () => s.close(() => resolve(true)));
  });
}

export async function freePort(): Promise<number> {
  for (let i = 0; i < PORT_SPAN; i++) {
    const p = nextPort;
    nextPort = PORT_LO + ((nextPort - PORT_LO + 1) % PORT_SPAN);
    if (await bindable(p)) return p;
  }
  throw new Error("no free port below the ephemeral range");
}

export interface FaultNode {
  readonly name: string;
  readonly host: string;
  readonly clientPort: number;
  readonly httpPort: number;
  readonly conf: string;
  readonly storeDir: string;
  proc: ChildServer | null;
  paused: boolean;
}

export interface RigOptions {
  n: number;
  /** "mesh": loopback through a RouteMesh; "netns": one network namespace per server (root). */
  net: "mesh" | "netns";
  prefix: string;
  /** server_tags of server i (placement). */
  tags?: (i: number) => string[];
}

export interface StreamDetail {
  name: string;
  cluster?: { leader?: string; replicas?: Array<{ name: string; current: boolean; lag?: number }> };
  state: { messages: number; first_seq: number; last_seq: number };
}

export class FaultRig {
  readonly nodes: FaultNode[] = [];
  mesh: RouteMesh | null = null;
  tnet: TestNet | null = null;
  readonly dir: string;
  /** Logs of server processes that ended (killed or stopped), for failure reports. */
  readonly pastLogs: string[] = [];

  private constructor(readonly o: RigOptions) {
    this.dir = mkdtempSync(join(tmpdir(), o.prefix));
  }

  static async start(o: RigOptions): Promise<FaultRig> {
    const rig = new FaultRig(o);
    try {
      await rig.build();
      for (let i = 0; i < o.n; i++) await rig.startNode(i);
    } catch (e) {
      await rig.close();
      throw e;
    }
    return rig;
  }

  private async build(): Promise<void> {
    const n = this.o.n;
    const names = Array.from({ length: n }, (_, i) => `n${i + 1}`);
    let hosts: string[];
    let clientPorts: number[];
    let httpPorts: number[];
    let routePorts: number[];
    let routesOf: (i: number) => string[];
    let advertise: (i: number) => string | null;
    if (this.o.net === "netns") {
      this.tnet = new TestNet(n);
      hosts = this.tnet.addrs;
      clientPorts = hosts.map(() => 4222);
      httpPorts = hosts.map(() => 8222);
      routePorts = hosts.map(() => 6222);
      routesOf = (i) => hosts.filter((_, j) => j !== i).map((h) => `nats-route://${h}:6222`);
      advertise = () => null;
    } else {
      hosts = names.map(() => "127.0.0.1");
      clientPorts = [];
      httpPorts = [];
      routePorts = [];
      for (let i = 0; i < n; i++) {
        clientPorts.push(await freePort());
        httpPorts.push(await freePort());
        routePorts.push(await freePort());
      }
      this.mesh = new RouteMesh(names, routePorts);
      const px = await this.mesh.start();
      routesOf = (i) => px.filter((_, j) => j !== i).map((p) => `nats-route://127.0.0.1:${p}`);
      advertise = (i) => `127.0.0.1:${px[i]}`;
    }
    for (let i = 0; i < n; i++) {
      const name = names[i]!;
      const storeDir = join(this.dir, name);
      const conf = join(this.dir, `${name}.conf`);
      const adv = advertise(i);
      writeFileSync(
        conf,
        [
          `server_name: ${name}`,
          `listen: ${hosts[i]}:${clientPorts[i]}`,
          `http: ${hosts[i]}:${httpPorts[i]}`,
          "ping_interval: \"1s\"",
          "ping_max: 2",
          ...(this.o.tags !== undefined ? [`server_tags: [${this.o.tags(i).map((t) => JSON.stringify(t)).join(", ")}]`] : []),
          `jetstream { store_dir: "${storeDir}" }`,
          "cluster {",
          "  name: faults",
          `  listen: ${hosts[i]}:${routePorts[i]}`,
          ...(adv !== null ? [`  advertise: "${adv}"`] : []),
          `  routes: [ ${routesOf(i).join(", ")} ]`,
          "}",
          "",
        ].join("\n"),
      );
      this.nodes.push({ name, host: hosts[i]!, clientPort: clientPorts[i]!, httpPort: httpPorts[i]!, conf, storeDir, proc: null, paused: false });
    }
  }

  async startNode(i: number): Promise<void> {
    const nd = this.nodes[i]!;
    if (nd.proc !== null) throw new Error(`${nd.name} is running`);
    nd.proc = this.tnet !== null ? await startTsnatsChildInNetns(this.tnet.nodes[i]!, nd.host, ["-c", nd.conf]) : await startTsnatsChild(["-c", nd.conf]);
    nd.paused = false;
  }

  index(name: string): number {
    const i = this.nodes.findIndex((n) => n.name === name);
    if (i < 0) throw new Error(`no server ${name}`);
    return i;
  }

  /** Every server's client URL (clients fail over along this list). */
  urls(): string[] {
    return this.nodes.map((n) => `nats://${n.host}:${n.clientPort}`);
  }

  url(i: number): string {
    const n = this.nodes[i]!;
    return `nats://${n.host}:${n.clientPort}`;
  }

  async kill(i: number): Promise<void> {
    const nd = this.nodes[i]!;
    const p = nd.proc;
    if (p === null) return;
    if (nd.paused) p.proc.kill("SIGCONT");
    p.proc.kill("SIGKILL");
    await p.exited;
    this.pastLogs.push(`${nd.name} (killed):\n${p.log()}`);
    nd.proc = null;
    nd.paused = false;
  }

  pause(i: number): void {
    const nd = this.nodes[i]!;
    nd.proc?.proc.kill("SIGSTOP");
    nd.paused = true;
  }

  resume(i: number): void {
    const nd = this.nodes[i]!;
    nd.proc?.proc.kill("SIGCONT");
    nd.paused = false;
  }

  async stopNode(i: number): Promise<void> {
    const nd = this.nodes[i]!;
    const p = nd.proc;
    if (p === null) return;
    if (nd.paused) this.resume(i);
    await p.stop();
    this.pastLogs.push(`${nd.name} (stopped):\n${p.log()}`);
    nd.proc = null;
  }

  live(): number[] {
    return this.nodes.map((n, i) => (n.proc !== null && !n.paused ? i : -1)).filter((i) => i >= 0);
  }

  async jsz(i: number, query = ""): Promise<Record<string, unknown> | null> {
    const nd = this.nodes[i]!;
    try {
      const r = await fetch(`http://${nd.host}:${nd.httpPort}/jsz${query}`, { signal: AbortSignal.timeout(1500) });
      return (await r.json()) as Record<string, unknown>;
    } catch {
      return null;
    }
  }

  /** This server's own copy of a stream as /jsz shows it, or null. */
  async streamAt(i: number, stream: string): Promise<StreamDetail | null> {
    const j = await this.jsz(i, "?streams=true");
    const acc = (j?.["account_details"] as Array<{ stream_detail?: StreamDetail[] }> | undefined)?.[0];
    return acc?.stream_detail?.find((s) => s.name === stream) ?? null;
  }

  /** The stream leader that the live servers agree on ("" when they do not). */
  async streamLeader(stream: string, among = this.live()): Promise<string> {
    const ls = await Promise.all(among.map(async (i) => (await this.streamAt(i, stream))?.cluster?.leader ?? ""));
    const counts = new Map<string, number>();
    for (const l of ls) if (l !== "") counts.set(l, (counts.get(l) ?? 0) + 1);
    for (const [l, c] of counts) if (c * 2 > among.length && among.includes(this.index(l))) return l;
    return "";
  }

  async metaLeader(i: number): Promise<string> {
    const j = await this.jsz(i);
    return (j?.["meta_cluster"] as { leader?: string } | undefined)?.leader ?? "";
  }

  async waitMetaLeader(boundMs = 20_000): Promise<string> {
    let l = "";
    await until("the servers agree on a meta leader", async () => {
      const ls = await Promise.all(this.live().map((i) => this.metaLeader(i)));
      l = ls[0] ?? "";
      return l !== "" && ls.every((x) => x === l);
    }, boundMs);
    return l;
  }

  /** Wait until every server in `which` holds the same copy of the stream (messages, first and
   *  last sequence), and return that state. */
  async waitConverged(stream: string, which: number[], boundMs = 30_000): Promise<StreamDetail["state"]> {
    let st: StreamDetail["state"] | null = null;
    let last = "";
    try {
      await until(`every replica of ${stream} converged`, async () => {
        const ss = await Promise.all(which.map((i) => this.streamAt(i, stream)));
        last = JSON.stringify(ss.map((s) => s?.state ?? null));
        const s0 = ss[0];
        if (s0 === null || s0 === undefined) return false;
        const ok = ss.every((s) => s !== null && s.state.messages === s0.state.messages && s.state.last_seq === s0.state.last_seq && s.state.first_seq === s0.state.first_seq);
        if (ok) st = s0.state;
        return ok;
      }, boundMs);
    } catch (e) {
      throw new Error(`${(e as Error).message}; last seen ${last}`);
    }
    return st!;
  }

  /** A stopped server's copy of a stream, read from its store: seq -> [subject, data]. */
  async readReplica(i: number, stream: string): Promise<Map<number, [string, string]>> {
    const nd = this.nodes[i]!;
    if (nd.proc !== null) throw new Error(`${nd.name} must be stopped to read its store`);
    const { store } = await openFileStreamStore({ dir: join(nd.storeDir, "jetstream", "$G", "streams", stream, "msgs") });
    const out = new Map<number, [string, string]>();
    try {
      for (let m = store.loadNextMsg("", 0); m !== null; m = store.loadNextMsg("", m.seq + 1)) out.set(m.seq, [m.subject, Buffer.from(m.data).toString()]);
    } finally {
      await store.close();
    }
    return out;
  }

  logs(): string {
    const now = this.nodes.filter((n) => n.proc !== null).map((n) => `${n.name}:\n${n.proc!.log()}`);
    return [...this.pastLogs, ...now].map((l) => l.slice(-4000)).join("\n----\n");
  }

  async close(): Promise<void> {
    for (let i = 0; i < this.nodes.length; i++) await this.stopNode(i).catch(() => undefined);
    await this.mesh?.close();
    this.tnet?.destroy();
    rmSync(this.dir, { recursive: true, force: true });
  }
}
