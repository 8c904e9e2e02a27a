// N servers in one process, each with its own RaftHost (WAL on a simulated disk), its own bus
// and a replicated stream (StreamGroup) over a memory or file store on that disk. Raft frames
// travel over an in-memory network that can cut links one way or both; ticks come from a
// manual clock, everything else (fsyncs, PubAck flushes) runs on real event-loop turns.
import { RaftHost, type RaftTransport } from "../../src/raft/host.js";
import { ManualClock } from "../../src/runtime/clock.js";
import { SeededRandom } from "../../src/runtime/random.js";
import { systemScheduler } from "../../src/runtime/sched.js";
import { nullLogger } from "../../src/server/log.js";
import { openFileStreamStore, MemoryStreamStore } from "../../src/storage/index.js";
import type { StreamStore } from "../../src/storage/types.js";
import { checkStreamConfig, decodeStreamConfig } from "../../src/stream/config.js";
import { Stream, type StreamEnv } from "../../src/stream/stream.js";
import { StreamGroup } from "../../src/jscluster/stream-group.js";
import { encodeHeaders } from "../../src/protocol/headers.js";
import type { StreamConfig } from "../../src/contracts/wire.js";
import { FakeBus } from "../unit/stream-fakebus.js";
import { SimFs } from "./simfs.js";
import type { Fs } from "../../src/runtime/fs.js";

export const GROUP = "S-R3F-test0001";

export interface Ack {
  seq: number;
  duplicate?: boolean;
  error?: { code: number; err_code: number; description: string };
}

export class Node {
  host!: RaftHost;
  group!: StreamGroup;
  store!: StreamStore;
  readonly bus = new FakeBus();
  /** PubAck bodies by reply token. */
  readonly acks = new Map<string, Ack[]>();
  up = false;
  /** The group members this server opens its group with (default: the cluster's). */
  peers: string[] | undefined = undefined;
  constructor(
    readonly id: string,
    readonly fs: Fs,
  ) {
    this.bus.subscribe("reply.*", (s, _r, _h, d) => {
      const k = s.slice("reply.".length);
      const l = this.acks.get(k) ?? [];
      l.push(JSON.parse(d.toString()) as Ack);
      this.acks.set(k, l);
    });
  }
  get stream(): Stream {
    return this.group.stream;
  }
}

export interface ClusterOptions {
  n: number;
  storage: "memory" | "file";
  seed?: number;
  tickMs?: number;
  snapshotEntries?: number;
  /** Catch-up window in bytes (StreamGroupOptions.catchupWindowBytes). */
  catchupWindowBytes?: number;
  /** Purge entries applied this many sequences per step, this many steps per turn
   *  (StreamGroupOptions.purgeStepSeqs / purgeTurnSteps): small, a purge spans many turns. */
  purgeStepSeqs?: number;
  purgeTurnSteps?: number;
  cfg?: Record<string, unknown>;
  /** A simulated network: each frame is delayed 0..maxDelayMs on the manual clock (0: one
   *  event-loop turn) and dropped with probability dropRate. */
  net?: { maxDelayMs: number; dropRate: number };
  /** Propose the publishes of one job as one entry (StreamGroupOptions.sched); default true. */
  batch?: boolean;
  /** Each server's disk (default: a SimFs); paths are /<id>/... under root. */
  fs?: (id: string) => Fs;
  root?: string;
  /** The group's first members (default: every server); the others join later with
   *  start(id, peers). */
  members?: string[];
}

export class StreamCluster {
  readonly clock = new ManualClock();
  readonly ids: string[];
  readonly nodes = new Map<string, Node>();
  /** Directed links that drop: "a>b". */
  readonly cut = new Set<string>();
  private readonly handlers = new Map<string, (from: string, f: Uint8Array) => void>();
  readonly rnd: SeededRandom;
  readonly tickMs: number;
  readonly cfg: StreamConfig;

  constructor(readonly o: ClusterOptions) {
    this.ids = Array.from({ length: o.n }, (_, i) => `n${i + 1}`);
    this.rnd = new SeededRandom(o.seed ?? 1);
    this.tickMs = o.tickMs ?? 10;
    this.cfg = checkStreamConfig(
      decodeStreamConfig({ name: "R", subjects: ["r.>"], storage: o.storage, num_replicas: o.n, ...(o.cfg ?? {}) }),
      { get: () => undefined },
      false,
    );
    for (const id of this.ids) this.nodes.set(id, new Node(id, o.fs?.(id) ?? new SimFs()));
  }

  node(id: string): Node {
    return this.nodes.get(id)!;
  }

  private transport(id: string): RaftTransport {
    return {
      send: (peer, frame) => {
        if (this.cut.has(`${id}>${peer}`)) return;
        const net = this.o.net;
        if (net !== undefined && net.dropRate > 0 && this.rnd.next() < net.dropRate) return;
        const copy = Uint8Array.from(frame);
        const deliver = (): void => {
          if (this.cut.has(`${id}>${peer}`) || !this.nodes.get(peer)!.up) return;
          this.handlers.get(peer)?.(id, copy);
        };
        if (net !== undefined && net.maxDelayMs > 0) this.clock.setTimer(deliver, this.rnd.int(net.maxDelayMs + 1));
        else setImmediate(deliver);
      },
      onReceive: (h) => {
        this.handlers.set(id, h);
      },
    };
  }

  async start(id: string, peers?: string[]): Promise<Node> {
    const n = this.node(id);
    if (peers !== undefined) n.peers = peers;
    const root = this.o.root ?? "";
    n.fs.mkdirp(`${root}/${id}/raft`);
    n.host = new RaftHost({
      id,
      fs: n.fs,
      dir: `${root}/${id}/raft`,
      clock: this.clock,
      sched: systemScheduler,
      random: new SeededRandom(this.rnd.int(2 ** 30)),
      transport: this.transport(id),
      tickMs: this.tickMs,
    });
    await this.openGroup(n);
    n.up = true;
    n.host.start();
    return n;
  }

  private async openGroup(n: Node): Promise<void> {
    const id = n.id;
    const root = this.o.root ?? "";
    const limits = Stream.storeLimits(this.cfg);
    let store: StreamStore;
    if (this.o.storage === "memory") store = new MemoryStreamStore(limits, null);
    else {
      const r = await openFileStreamStore({ dir: `${root}/${id}/stream`, fs: n.fs, clock: this.clock, limits });
      store = r.store;
    }
    n.store = store;
    const env = (proposer: StreamEnv["proposer"]): StreamEnv => ({
      bus: n.bus,
      clock: this.clock,
      log: nullLogger,
      domain: "",
      serverName: id,
      wouldExceedAccount: () => false,
      canAddConsumer: () => true,
      proposer,
    });
    n.group = StreamGroup.open({
      group: GROUP,
      peers: n.peers ?? this.o.members ?? this.ids,
      self: id,
      host: n.host,
      clock: this.clock,
      log: nullLogger,
      sched: this.o.batch === false ? undefined : systemScheduler,
      snapshotEntries: this.o.snapshotEntries,
      ...(this.o.catchupWindowBytes !== undefined ? { catchupWindowBytes: this.o.catchupWindowBytes } : {}),
      ...(this.o.purgeStepSeqs !== undefined ? { purgeStepSeqs: this.o.purgeStepSeqs } : {}),
      ...(this.o.purgeTurnSteps !== undefined ? { purgeTurnSteps: this.o.purgeTurnSteps } : {}),
      open: (proposer) => {
        const st = new Stream(this.cfg, store, null, env(proposer), this.clock.nowNs());
        st.start();
        st.rebuildDedup();
        return st;
      },
    });
  }

  /** Close the stream group and its stream and open them again on the same RaftHost (a
   *  stream reopened inside one process, as after a full disk). */
  async reopenGroup(id: string): Promise<void> {
    const n = this.node(id);
    n.group.close();
    n.group.stream.detach();
    await n.store.close();
    await this.openGroup(n);
  }

  async startAll(): Promise<void> {
    for (const id of this.o.members ?? this.ids) await this.start(id);
  }

  /** Stop a server (a process kill: what its disk has, written or not, stays). */
  async stop(id: string, powerLoss = false): Promise<void> {
    const n = this.node(id);
    n.up = false;
    n.group.close();
    n.group.stream.detach();
    n.host.close();
    if (powerLoss) {
      if (!(n.fs instanceof SimFs)) throw new Error("power loss needs a SimFs");
      n.fs.crash();
    }
    else await n.store.close();
  }

  async stopAll(): Promise<void> {
    for (const id of this.ids) if (this.node(id).up) await this.stop(id);
  }

  isolate(id: string): void {
    for (const o of this.ids) {
      if (o === id) continue;
      this.cut.add(`${id}>${o}`);
      this.cut.add(`${o}>${id}`);
    }
  }

  heal(): void {
    this.cut.clear();
  }

  leaders(): string[] {
    return this.ids.filter((id) => this.node(id).up && this.node(id).group.isTakingPublishes);
  }

  /** One tick of the clock and a few event-loop turns. */
  async step(): Promise<void> {
    this.clock.advance(this.tickMs);
    for (let i = 0; i < 4; i++) await new Promise((r) => setImmediate(r));
  }

  /** Step until pred holds (at most maxSteps ticks). */
  async until(pred: () => boolean, what: string, maxSteps = 3000): Promise<void> {
    for (let i = 0; i < maxSteps; i++) {
      if (pred()) return;
      await this.step();
    }
    if (!pred()) throw new Error(`timed out waiting for ${what}`);
  }

  async leader(except?: string): Promise<Node> {
    await this.until(() => this.leaders().filter((l) => l !== except).length === 1, "one leader taking publishes");
    return this.node(this.leaders().filter((l) => l !== except)[0]!);
  }

  /** Publish on a server's bus as a client would (reply.<token>). */
  pub(id: string, subject: string, data: string, token: string, hdr?: [string, string][]): void {
    const n = this.node(id);
    n.bus.publish(subject, token === "" ? "" : `reply.${token}`, hdr ? encodeHeaders(hdr) : null, Buffer.from(data));
  }

  /** The messages a server's store holds: seq -> subject|data. */
  contents(id: string): Map<number, string> {
    const s = this.node(id).store;
    const out = new Map<number, string>();
    for (let m = s.loadNextMsg("", 0); m !== null; m = s.loadNextMsg("", m.seq + 1)) out.set(m.seq, `${m.subject}|${m.data.toString()}|${m.tsNs}`);
    return out;
  }
}
