// A linearizability checker for histories of concurrent operations (the WGL search with
// Lowe's memoization, as Porcupine does it): is there a total order of the operations,
// consistent with real time (an op that returned before another was called comes first), in
// which a sequential model explains every output? Histories are partitioned (per key for a
// KV store) and each part is checked alone. An op whose outcome is unknown (a timeout) has
// return time Infinity: it may take effect at any point after its call, or never (it is then
// placed after everything it could affect).

export interface Model<S, I, O> {
  init(): S;
  /** The state after applying input with this output, or null if the output is impossible
   *  from state s. */
  step(s: S, input: I, output: O): S | null;
  /** A key that is equal for equal states (memoization). */
  key(s: S): string;
}

export interface Operation<I, O> {
  /** Partition (e.g. the KV key); ops of different partitions never interact. */
  part: string;
  input: I;
  output: O;
  call: number;
  /** Infinity when the outcome is unknown. */
  ret: number;
  client?: number;
}

export interface CheckResult {
  ok: boolean;
  /** The partition that has no linearization (first found). */
  badPart?: string;
  /** Search steps spent, over all partitions. */
  steps: number;
  /** True when the step budget ran out before an answer (ok is then false). */
  exhausted?: boolean;
}

interface Entry {
  op: number;
  isCall: boolean;
  time: number;
  prev: Entry | null;
  next: Entry | null;
  match: Entry | null;
}

export function checkLinearizable<S, I, O>(model: Model<S, I, O>, history: readonly Operation<I, O>[], maxSteps = 5_000_000): CheckResult {
  const parts = new Map<string, Operation<I, O>[]>();
  for (const op of history) {
    let l = parts.get(op.part);
    if (l === undefined) parts.set(op.part, (l = []));
    l.push(op);
  }
  let steps = 0;
  for (const [part, ops] of parts) {
    const r = checkPart(model, ops, maxSteps - steps);
    steps += r.steps;
    if (!r.ok) return { ok: false, badPart: part, steps, exhausted: r.exhausted };
  }
  return { ok: true, steps };
}

function checkPart<S, I, O>(model: Model<S, I, O>, ops: readonly Operation<I, O>[], budget: number): { ok: boolean; steps: number; exhausted?: boolean } {
  const n = ops.length;
  if (n === 0) return { ok: true, steps: 0 };
  // Events in time order; at equal times, calls before returns (overlap is allowed).
  const events: Entry[] = [];
  for (let i = 0; i < n; i++) {
    const c: Entry = { op: i, isCall: true, time: ops[i]!.call, prev: null, next: null, match: null };
    const r: Entry = { op: i, isCall: false, time: ops[i]!.ret, prev: null, next: null, match: null };
    c.match = r;
    events.push(c, r);
  }
  events.sort((a, b) => (a.time !== b.time ? a.time - b.time : a.isCall === b.isCall ? 0 : a.isCall ? -1 : 1));
  const head: Entry = { op: -1, isCall: false, time: -Infinity, prev: null, next: null, match: null };
  let prev = head;
  for (const e of events) {
    prev.next = e;
    e.prev = prev;
    prev = e;
  }
  const lift = (e: Entry): void => {
    e.prev!.next = e.next;
    if (e.next) e.next.prev = e.prev;
    const m = e.match!;
    m.prev!.next = m.next;
    if (m.next) m.next.prev = m.prev;
  };
  const unlift = (e: Entry): void => {
    const m = e.match!;
    m.prev!.next = m;
    if (m.next) m.next.prev = m;
    e.prev!.next = e;
    if (e.next) e.next.prev = e;
  };
  const linearized = new Uint8Array(n);
  const bits = (): string => Buffer.from(linearized).toString("latin1");
  const seen = new Set<string>();
  const stack: Array<{ entry: Entry; state: S }> = [];
  let state = model.init();
  let entry = head.next;
  let steps = 0;
  while (head.next !== null) {
    if (++steps > budget) return { ok: false, steps, exhausted: true };
    if (entry === null) return { ok: false, steps };
    if (entry.isCall) {
      const op = ops[entry.op]!;
      const next = model.step(state, op.input, op.output);
      if (next !== null) {
        linearized[entry.op] = 1;
        const k = bits() + "|" + model.key(next);
        if (!seen.has(k)) {
          seen.add(k);
          stack.push({ entry, state });
          state = next;
          lift(entry);
          entry = head.next;
          continue;
        }
        linearized[entry.op] = 0;
      }
      entry = entry.next;
    } else {
      // A return whose call is still in the list: this order cannot work; backtrack.
      const top = stack.pop();
      if (top === undefined) return { ok: false, steps };
      state = top.state;
      linearized[top.entry.op] = 0;
      unlift(top.entry);
      entry = top.entry.next;
    }
  }
  return { ok: true, steps };
}

// ---- a KV register model (put, compare-and-set by revision, get), per key ----

export type KvInput = { f: "put"; value: string } | { f: "cas"; expect: number; value: string } | { f: "get" };
/** put/cas: the revision given on success, "fail" for a refused CAS, "unknown" when the
 *  client never heard; get: the value and revision read (value null = no such key). */
export type KvOutput = { rev: number } | "fail" | "unknown" | { value: string | null; rev: number };

export interface KvState {
  value: string | null;
  /** 0 = never written; -1 = written by an op whose revision nobody saw. */
  rev: number;
}

export const kvModel: Model<KvState, KvInput, KvOutput> = {
  init: () => ({ value: null, rev: 0 }),
  key: (s) => `${s.rev}:${s.value ?? "\u0000"}`,
  step(s, input, output) {
    switch (input.f) {
      case "put":
        if (output === "unknown") return { value: input.value, rev: -1 };
        if (typeof output !== "object" || !("rev" in output) || "value" in output) return null;
        return s.rev === -1 || output.rev > s.rev ? { value: input.value, rev: output.rev } : null;
      case "cas":
        if (output === "fail") return s.rev === -1 || s.rev !== input.expect ? s : null;
        if (s.rev !== -1 && s.rev !== input.expect) return null;
        if (output === "unknown") return { value: input.value, rev: -1 };
        if (typeof output !== "object" || "value" in output) return null;
        return s.rev === -1 || output.rev > s.rev ? { value: input.value, rev: output.rev } : null;
      case "get": {
        if (typeof output !== "object" || !("value" in output)) return null;
        if (output.value !== s.value) return null;
        return s.rev === -1 || output.rev === s.rev ? { value: s.value, rev: output.rev } : null;
      }
    }
  },
};
