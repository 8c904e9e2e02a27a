// KV semantics on the simulated replicated stream under faults (streamfaults.ts): a few
// clients, each with one operation at a time, on a few keys (subjects r.kv.<key>):
//   put  a publish; its PubAck's sequence is the new revision;
//   cas  a publish with Nats-Expected-Last-Subject-Sequence (0: the key must not exist);
//        ok with the new revision, or refused (10071 wrong last sequence);
//   get  a leader read: StreamGroup.confirmRead (ReadIndex) and then the last message of the
//        subject in that server's store, as STREAM.MSG.GET last_by_subj does on the leader.
// Every operation is recorded with its call and return (in the order the client saw them)
// and its result; a put or CAS the client never heard back about (timeout, crash) has an
// unknown outcome. At the end the history must be linearizable for a register with CAS per
// key (linearizable.ts), and every replica must hold the same messages.
import { checkLinearizable, describeFailure, kvModel, type KvInput, type KvOutput, type Operation } from "./linearizable.js";
import { FaultDriver, GROUP_NAME, type FaultStats } from "./streamfaults.js";

export interface KvSimResult {
  seed: number;
  nodes: number;
  storage: "memory" | "file";
  violation: string | null;
  ops: number;
  puts: number;
  cas: number;
  casOk: number;
  gets: number;
  unknown: number;
  searchSteps: number;
  /** The checker ran out of budget (inconclusive, not a violation). */
  exhausted: boolean;
  /** CAS refusals from a deposed leader (counted, and taken as unknown, with staleRefusals
   *  "tolerate"). */
  staleRefusals: number;
  faults: FaultStats;
  /** On a violation: the history, each op with where it went (node@ms). */
  history?: Array<KvOp & { where: string }>;
}

export interface KvSimOptions {
  seed: number;
  nodes: number;
  storage: "memory" | "file";
  faultMs?: number;
  healMs?: number;
  stepMs?: number;
  membership?: boolean;
  clients?: number;
  keys?: number;
  /** Mutations for the checker's own tests: reads from any replica's store without ReadIndex
   *  (stale reads), or a wiped server rejoining under its old name too early (amnesia). */
  followerReads?: boolean;
  unsafeRejoin?: boolean;
  /** A CAS refusal (10071 wrong last sequence) from a server that was not the highest-term
   *  leader when the CAS was sent: counted (staleRefusals). A deposed leader that does not
   *  know it yet must not answer from its stale state (its refusals wait for a quorum to
   *  confirm it leads: src/stream/refusal-gate.ts), so "fail" (the default) judges it like
   *  any refusal; "tolerate" takes it as an unknown outcome (to look past it). */
  staleRefusals?: "fail" | "tolerate";
}

type KvOp = Operation<KvInput, KvOutput>;

interface Pending {
  op: KvOp;
  token: string;
  node: string;
  deadline: number;
  /** Another server led a later term when this was sent. */
  deposed: boolean;
}

const TIMEOUT_MS = 500;

export async function runKvSeed(o: KvSimOptions): Promise<KvSimResult> {
  const stepMs = o.stepMs ?? 5;
  const faultMs = o.faultMs ?? 2000;
  const healMs = o.healMs ?? 1500;
  const nClients = o.clients ?? 4;
  const nKeys = o.keys ?? 3;
  const f = new FaultDriver({ seed: o.seed, nodes: o.nodes, storage: o.storage, stepMs, membership: o.membership ?? false, faultRate: 0.03, unsafeRejoin: o.unsafeRejoin }, {});
  const c = f.c;
  const rnd = f.rnd;
  const res: KvSimResult = { seed: o.seed, nodes: o.nodes, storage: o.storage, violation: null, ops: 0, puts: 0, cas: 0, casOk: 0, gets: 0, unknown: 0, searchSteps: 0, exhausted: false, staleRefusals: 0, faults: f.stats };
  const history: KvOp[] = [];
  /** Where each op went and when (virtual ms), for the failure account. */
  const where = new Map<KvOp, string>();
  let clock = 0;
  const now = (): number => ++clock;
  let opSeq = 0;
  /** Per client: the outstanding write, or a read in flight. */
  const busy: Array<Pending | "read" | null> = Array.from({ length: nClients }, () => null);
  /** Per client and key: the last revision it saw. */
  const seen: Array<Map<string, number>> = Array.from({ length: nClients }, () => new Map());
  const takers = (): string[] => c.ids.filter((id) => c.node(id).up && c.node(id).stream.ingesting);

  const startWrite = (ci: number, key: string, cas: boolean): void => {
    const ts = takers();
    if (ts.length === 0) return;
    const node = ts[rnd.int(ts.length)]!;
    const value = `v${++opSeq}`;
    const token = `kv${opSeq}`;
    let input: KvInput;
    const hdr: [string, string][] = [];
    if (cas) {
      let expect = seen[ci]!.get(key) ?? 0;
      if (rnd.next() < 0.2) expect = rnd.next() < 0.5 ? 0 : Math.max(0, expect - 1 - rnd.int(3));
      input = { f: "cas", expect, value };
      hdr.push(["Nats-Expected-Last-Subject-Sequence", String(expect)]);
      res.cas++;
    } else {
      input = { f: "put", value };
      res.puts++;
    }
    const op: KvOp = { part: key, input, output: "unknown", call: now(), ret: Infinity, client: ci };
    history.push(op);
    where.set(op, `${node}@${f.t}`);
    const termOf = (id: string): number => c.node(id).host.node(GROUP_NAME)?.term ?? 0;
    const deposed = ts.some((x) => termOf(x) > termOf(node));
    busy[ci] = { op, token, node, deadline: f.t + TIMEOUT_MS, deposed };
    c.pub(node, `r.kv.${key}`, value, token, hdr.length > 0 ? hdr : undefined);
  };

  const startRead = (ci: number, key: string): void => {
    const ups = c.ids.filter((id) => c.node(id).up);
    const ts = takers();
    // Mostly the leader; sometimes whoever (a follower refuses: no leader read there).
    const node = rnd.next() < 0.85 && ts.length > 0 ? ts[rnd.int(ts.length)]! : ups[rnd.int(ups.length)];
    if (node === undefined) return;
    const n = c.node(node);
    const call = now();
    const callMs = f.t;
    if (o.followerReads === true) {
      // The mutation: whatever this replica's store holds, no questions asked.
      const m = n.store.loadLastMsg(`r.kv.${key}`);
      history.push({ part: key, input: { f: "get" }, output: m === null ? { value: null, rev: 0 } : { value: m.data.toString(), rev: m.seq }, call, ret: now(), client: ci });
      res.gets++;
      return;
    }
    busy[ci] = "read";
    const group = n.group;
    group.confirmRead().then(
      () => {
        busy[ci] = null;
        if (!n.up || n.group !== group) return; // the server went away meanwhile: no answer
        const m = n.store.loadLastMsg(`r.kv.${key}`);
        const output = m === null ? { value: null, rev: 0 } : { value: m.data.toString(), rev: m.seq };
        const op: KvOp = { part: key, input: { f: "get" }, output, call, ret: now(), client: ci };
        history.push(op);
        where.set(op, `${node}@${callMs}-${f.t}`);
        if (m !== null) seen[ci]!.set(key, m.seq);
        res.gets++;
      },
      () => {
        busy[ci] = null; // refused (not the leader): nothing happened
      },
    );
  };

  const collect = (): void => {
    for (let ci = 0; ci < nClients; ci++) {
      const p = busy[ci];
      if (p === null || p === "read" || p === undefined) continue;
      const n = c.node(p.node);
      const acks = n.acks.get(p.token);
      if (acks !== undefined && acks.length > 0) {
        n.acks.delete(p.token);
        const a = acks[0]!;
        if (a.error === undefined) {
          p.op.output = { rev: a.seq };
          p.op.ret = now();
          seen[ci]!.set(p.op.part, a.seq);
          if (p.op.input.f === "cas") res.casOk++;
        } else if (a.error.err_code === 10071 && p.op.input.f === "cas") {
          if (p.deposed) res.staleRefusals++;
          if (p.deposed && o.staleRefusals === "tolerate") {
            // left unknown: see KvSimOptions.staleRefusals
          } else {
            p.op.output = "fail";
            p.op.ret = now();
          }
        }
        // Any other error: the outcome stays unknown.
        busy[ci] = null;
      } else if (f.t >= p.deadline) {
        busy[ci] = null; // timed out: unknown
      }
    }
  };

  await f.startAll();
  try {
    const end = faultMs + healMs;
    let healed = false;
    while (f.t < end) {
      if (!healed && f.t >= faultMs) {
        healed = true;
        await f.heal();
      }
      if (f.t < end - 300) {
        for (let ci = 0; ci < nClients; ci++) {
          if (busy[ci] !== null || rnd.next() > 0.3) continue;
          const key = `k${rnd.int(nKeys)}`;
          const x = rnd.next();
          if (x < 0.3) startWrite(ci, key, false);
          else if (x < 0.6) startWrite(ci, key, true);
          else startRead(ci, key);
        }
      }
      if (!healed) await f.faultStep();
      await f.step();
      collect();
    }
    // Let the last ops finish, then read every key from the leader once more.
    for (let i = 0; i < 400 && busy.some((b) => b !== null); i++) {
      await f.step();
      collect();
    }
    const mark = clock;
    for (let k = 0; k < nKeys; k++) {
      const done = (): boolean => history.some((h) => h.part === `k${k}` && h.input.f === "get" && h.call > mark);
      for (let tries = 0; tries < 400 && !done(); tries++) {
        if (busy[0] === null) startRead(0, `k${k}`);
        await f.step();
      }
    }
    res.ops = history.length;
    res.unknown = history.filter((h) => h.output === "unknown").length;
    const r = checkLinearizable(kvModel, history, 20_000_000);
    res.searchSteps = r.steps;
    if (!r.ok) {
      if (r.exhausted === true) res.exhausted = true;
      else throw new Error(describeFailure(r, (x) => `${x.client} [${x.call}, ${x.ret}] ${JSON.stringify(x.input)} -> ${JSON.stringify(x.output)} (${where.get(x as KvOp) ?? "?"})`));
    }
    // The replicas hold the same messages.
    for (let i = 0; i < 600; i++) {
      const lasts = c.ids.map((id) => c.node(id).store.state().lastSeq);
      if (lasts.every((x) => x === lasts[0])) break;
      await f.step();
    }
    const ref = c.contents(c.ids[0]!);
    for (const id of c.ids.slice(1)) {
      const x = c.contents(id);
      if (x.size !== ref.size || [...x].some(([k, v]) => ref.get(k) !== v)) throw new Error(`${id} holds other messages than ${c.ids[0]} (${x.size} vs ${ref.size})\n${f.describe()}`);
    }
  } catch (e) {
    res.violation = (e as Error).message;
    res.history = history.map((h) => ({ ...h, where: where.get(h) ?? "?" }));
  }
  await f.stopAll();
  return res;
}
