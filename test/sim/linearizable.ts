// A linearizability checker for histories of concurrent operations, in the manner of
// Porcupine (anishathalye/porcupine, checker.go): the Wing & Gong search with Lowe's
// memoization (a cache of (set of linearized ops, model state) pairs already explored), on a
// doubly linked list of call and return events in time order. Is there a total order of the
// operations, consistent with real time (an op that returned before another was called comes
// first), in which a sequential model explains every output?
//
// Histories are partitioned (per key for a KV store) and each part is checked alone: the
// search is exponential in the concurrency of one part only.
//
// An operation whose outcome is unknown (the client timed out, or its server crashed) has no
// return event: it may take effect at any point after its call, or never. The search
// succeeds once every operation with a known outcome is linearized; an unknown one is
// linearized only where the model lets it take effect, and otherwise left out.
//
// test/checkers/linearizable.ts re-exports this module (the multi-process fault tests use
// it too).

export interface Model<S, I, O> {
  init(): S;
  /** The state after applying input with this output, or null if the output is impossible
   *  from state s. For an unknown output: the state if the operation takes effect here, or
   *  null if it cannot (it may then take effect elsewhere, or never). */
  step(s: S, input: I, output: O): S | null;
  /** A key that is equal for equal states (memoization). */
  key(s: S): string;
  /** Whether this output means the outcome is unknown (default: the op's ret is Infinity). */
  unknown?(output: O): boolean;
}

export interface Operation<I, O> {
  /** Partition (e.g. the KV key); ops of different partitions never interact. */
  part: string;
  input: I;
  output: O;
  /** Call and return times: any numbers that order events the way the client saw them. */
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
  /** On failure: the longest prefix of the bad partition's ops that could be linearized (as
   *  indexes into that partition's ops, in linearization order), for the report. */
  longest?: number[];
  /** On failure: the bad partition's ops in call order. */
  partOps?: Operation<unknown, unknown>[];
}

interface Ev {
  op: number;
  isCall: boolean;
  time: number;
  prev: Ev | null;
  next: Ev | null;
  /** A call's return event (null: unknown outcome, no return). */
  match: Ev | null;
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
    if (!r.ok) {
      const sorted = ops.slice().sort((a, b) => a.call - b.call) as Operation<unknown, unknown>[];
      return { ok: false, badPart: part, steps, exhausted: r.exhausted, longest: r.longest, partOps: sorted };
    }
  }
  return { ok: true, steps };
}

/** A readable account of a failed check: the bad partition's ops, and how far the search got. */
export function describeFailure(r: CheckResult, show: (o: Operation<unknown, unknown>) => string = (o) => JSON.stringify(o)): string {
  if (r.ok) return "linearizable";
  const lines = [`not linearizable${r.exhausted === true ? " (search budget exhausted)" : ""}: partition ${r.badPart}`];
  for (const o of r.partOps ?? []) lines.push(`  ${show(o)}`);
  return lines.join("\n");
}

function checkPart<S, I, O>(model: Model<S, I, O>, ops: readonly Operation<I, O>[], budget: number): { ok: boolean; steps: number; exhausted?: boolean; longest?: number[] } {
  const n = ops.length;
  if (n === 0) return { ok: true, steps: 0 };
  const isUnknown = (o: Operation<I, O>): boolean => o.ret === Infinity || (model.unknown?.(o.output) ?? false);
  // Events in time order; at equal times, calls before returns (such ops overlap).
  const events: Ev[] = [];
  let known = 0;
  for (let i = 0; i < n; i++) {
    const o = ops[i]!;
    const c: Ev = { op: i, isCall: true, time: o.call, prev: null, next: null, match: null };
    events.push(c);
    if (!isUnknown(o)) {
      const r: Ev = { op: i, isCall: false, time: o.ret, prev: null, next: null, match: null };
      c.match = r;
      events.push(r);
      known++;
    }
  }
  events.sort((a, b) => (a.time !== b.time ? a.time - b.time : a.isCall === b.isCall ? a.op - b.op : a.isCall ? -1 : 1));
  const head: Ev = { op: -1, isCall: false, time: -Infinity, prev: null, next: null, match: null };
  let prev = head;
  for (const e of events) {
    prev.next = e;
    e.prev = prev;
    prev = e;
  }
  const unlink = (e: Ev): void => {
    e.prev!.next = e.next;
    if (e.next !== null) e.next.prev = e.prev;
  };
  const relink = (e: Ev): void => {
    e.prev!.next = e;
    if (e.next !== null) e.next.prev = e;
  };
  // Lift a call (and its return) out of the list; unlift puts them back (in reverse order).
  const lift = (e: Ev): void => {
    unlink(e);
    if (e.match !== null) unlink(e.match);
  };
  const unlift = (e: Ev): void => {
    if (e.match !== null) relink(e.match);
    relink(e);
  };
  const words = new Uint32Array(Math.ceil(n / 32));
  const flip = (i: number): void => {
    words[i >>> 5]! ^= 1 << (i & 31);
  };
  const bitsKey = (): string => {
    let s = "";
    for (let i = 0; i < words.length; i++) s += words[i]!.toString(36) + ",";
    return s;
  };
  const seen = new Set<string>();
  const stack: Array<{ ev: Ev; state: S }> = [];
  let longest: number[] = [];
  let state = model.init();
  let knownLeft = known;
  let ev = head.next;
  let steps = 0;
  for (;;) {
    if (knownLeft === 0) return { ok: true, steps };
    if (++steps > budget) return { ok: false, steps, exhausted: true, longest };
    if (ev === null) {
      // Only unknown calls were left to try and none fits: backtrack (cannot happen while a
      // known op is unlinearized, its return is in the list; kept for safety).
      const top = stack.pop();
      if (top === undefined) return { ok: false, steps, longest };
      ({ ev, state } = undo(top));
      continue;
    }
    if (ev.isCall) {
      const op = ops[ev.op]!;
      const next = model.step(state, op.input, op.output);
      if (next !== null) {
        flip(ev.op);
        const k = bitsKey() + "|" + model.key(next);
        if (!seen.has(k)) {
          seen.add(k);
          stack.push({ ev, state });
          state = next;
          lift(ev);
          if (ev.match !== null) knownLeft--;
          if (stack.length > longest.length) longest = stack.map((x) => x.ev.op);
          ev = head.next;
          continue;
        }
        flip(ev.op);
      }
      ev = ev.next;
    } else {
      // A return whose call is still in the list: this order cannot work; backtrack.
      const top = stack.pop();
      if (top === undefined) return { ok: false, steps, longest };
      ({ ev, state } = undo(top));
    }
  }

  function undo(top: { ev: Ev; state: S }): { ev: Ev | null; state: S } {
    flip(top.ev.op);
    unlift(top.ev);
    if (top.ev.match !== null) knownLeft++;
    return { ev: top.ev.next, state: top.state };
  }
}

// ---- a KV register model (put, compare-and-set by revision, get), per key ----

export type KvInput = { f: "put"; value: string } | { f: "cas"; expect: number; value: string } | { f: "get" };
/** put/cas: the revision given on success, "fail" for a refused CAS (wrong last sequence),
 *  "unknown" when the client never heard; get: the value and revision read (value null = no
 *  such key, revision 0). Written values are unique, so a read names the write it saw. */
export type KvOutput = { rev: number } | "fail" | "unknown" | { value: string | null; rev: number };

export interface KvState {
  value: string | null;
  /** 0 = never written; -1 = written by an op whose revision nobody saw yet. */
  rev: number;
}

/** Revisions are the stream's sequences: a later write to a key has a higher one. A write
 *  with an unknown outcome leaves revision -1 (the next read of its value fixes it); a CAS
 *  against such a state may succeed or fail. */
export const kvModel: Model<KvState, KvInput, KvOutput> = {
  init: () => ({ value: null, rev: 0 }),
  key: (s) => `${s.rev}:${s.value ?? "\u0000"}`,
  unknown: (o) => o === "unknown",
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
