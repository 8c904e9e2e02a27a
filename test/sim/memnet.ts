// A synchronous in-memory network of RaftNodes for tests of the Raft core: each node's Ready
// is "persisted" into a MemoryStorage at once, then its messages are delivered (unless the
// link is cut), until nothing moves. Restart rebuilds a node from its storage.
import { SeededRandom } from "../../src/runtime/random.js";
import { RaftNode, type RaftConfig } from "../../src/raft/node.js";
import { type Entry, type HardState, type Message, type ReadState, type Snapshot } from "../../src/raft/types.js";

export class MemoryStorage {
  hardState: HardState = { term: 0, vote: "", commit: 0 };
  snapshot: Snapshot | null = null;
  entries: Entry[] = [];
  applied: Entry[] = [];

  append(ents: Entry[]): void {
    if (ents.length === 0) return;
    const first = ents[0]!.index;
    const base = this.snapshot?.index ?? 0;
    this.entries.length = Math.max(0, Math.min(this.entries.length, first - base - 1));
    this.entries.push(...ents);
  }
}

export interface MemNetOptions {
  electionTicks?: number;
  heartbeatTicks?: number;
  preVote?: boolean;
  checkQuorum?: boolean;
  seed?: number;
}

export class MemNet {
  readonly nodes = new Map<string, RaftNode>();
  readonly storage = new Map<string, MemoryStorage>();
  readonly readStates = new Map<string, ReadState[]>();
  /** Directed links that drop: "a>b". */
  readonly cut = new Set<string>();
  /** Messages seen on the wire, for assertions. */
  readonly sent: Message[] = [];
  private readonly rnd: SeededRandom;

  constructor(
    readonly ids: string[],
    readonly opts: MemNetOptions = {},
  ) {
    this.rnd = new SeededRandom(opts.seed ?? 1);
    for (const id of ids) {
      this.storage.set(id, new MemoryStorage());
      this.readStates.set(id, []);
      this.nodes.set(id, this.make(id));
    }
  }

  config(id: string): RaftConfig {
    return {
      id,
      peers: this.ids,
      electionTicks: this.opts.electionTicks ?? 10,
      heartbeatTicks: this.opts.heartbeatTicks ?? 1,
      random: this.rnd,
      preVote: this.opts.preVote ?? true,
      checkQuorum: this.opts.checkQuorum ?? true,
    };
  }

  private make(id: string): RaftNode {
    const st = this.storage.get(id)!;
    return new RaftNode(this.config(id), {
      hardState: st.hardState,
      snapshot: st.snapshot,
      entries: st.entries,
      applied: st.snapshot?.index ?? 0,
    });
  }

  /** A new server joins with `peers` as its voters (the target configuration) and an
   *  empty log. */
  addNode(id: string, peers: string[]): RaftNode {
    this.storage.set(id, new MemoryStorage());
    this.readStates.set(id, []);
    (this.ids as string[]).push(id);
    const n = new RaftNode({ ...this.config(id), peers });
    this.nodes.set(id, n);
    return n;
  }

  node(id: string): RaftNode {
    return this.nodes.get(id)!;
  }

  /** A crash and restart from storage (everything handed to storage was durable). */
  restart(id: string): RaftNode {
    const st = this.storage.get(id)!;
    st.applied = st.applied.filter((e) => e.index <= (st.snapshot?.index ?? 0));
    const n = this.make(id);
    this.nodes.set(id, n);
    return n;
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

  /** Persist one node's Ready and return its messages (not delivered). */
  drain(id: string): Message[] {
    const n = this.node(id);
    const st = this.storage.get(id)!;
    const out: Message[] = [];
    while (n.hasReady()) {
      const rd = n.ready();
      if (rd.snapshot !== null) {
        st.snapshot = rd.snapshot;
        st.entries = [];
        st.applied = [];
      }
      st.append(rd.entries);
      if (rd.hardState !== null) st.hardState = rd.hardState;
      out.push(...rd.messages);
      st.applied.push(...rd.committed);
      this.readStates.get(id)!.push(...rd.readStates);
      n.advance(rd);
    }
    return out;
  }

  deliver(m: Message): void {
    if (this.cut.has(`${m.from}>${m.to}`)) return;
    const n = this.nodes.get(m.to);
    if (n !== undefined) n.step(m);
  }

  /** Persist and deliver until quiet. */
  settle(maxRounds = 1000): void {
    for (let r = 0; r < maxRounds; r++) {
      const msgs: Message[] = [];
      for (const id of this.ids) msgs.push(...this.drain(id));
      if (msgs.length === 0) return;
      for (const m of msgs) {
        this.sent.push(m);
        this.deliver(m);
      }
    }
    throw new Error("network did not settle");
  }

  tickAll(n = 1): void {
    for (let i = 0; i < n; i++) {
      for (const id of this.ids) this.node(id).tick();
      this.settle();
    }
  }

  leaders(): string[] {
    return this.ids.filter((id) => this.node(id).status().role === 3);
  }

  applied(id: string): Entry[] {
    return this.storage.get(id)!.applied;
  }
}
