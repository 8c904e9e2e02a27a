// One contract suite for every StreamStore / ConsumerStore implementation. Each test file
// supplies an environment factory (memory, file on real disk, file on the simulated disk).
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import type { ConsumerState, ConsumerStore, StoreCallbacks, StoreLimits, StoredMsg, StorePurge, StreamStore } from "../../src/storage/types.js";
import { subjectMatches } from "../../src/storage/subjects.js";
import { createMemoryStreamStore, fileStoreMsgSize, openFileConsumerStore, openFileStreamStore } from "../../src/storage/index.js";
import type { Fs } from "../../src/runtime/fs.js";
import { ManualClock } from "../../src/runtime/clock.js";
import { StoreSnapshotDecoder, StoreSnapshotReader, StoreSnapshotWriter, encodeStoreSnapshot } from "../../src/storage/archive.js";

export interface StoreEnv {
  /** Open the store at this environment's location (first call creates it). */
  open(limits?: StoreLimits, callbacks?: StoreCallbacks): Promise<StreamStore>;
  /** Close the store and open it again at the same location; null if nothing persists. */
  reopen: ((s: StreamStore, limits?: StoreLimits, callbacks?: StoreCallbacks) => Promise<StreamStore>) | null;
  dispose(): Promise<void>;
}

export interface ConsumerEnv {
  open(): Promise<ConsumerStore>;
  reopen: ((s: ConsumerStore) => Promise<ConsumerStore>) | null;
  dispose(): Promise<void>;
}

export interface ContractTarget {
  name: string;
  /** Bytes a message counts for in state().bytes. */
  msgSize(subject: string, hdr: Buffer | null, data: Buffer): number;
  newEnv(): StoreEnv;
  newConsumerEnv(): ConsumerEnv;
  /** Property-test runs (file stores on real disk are slower). */
  numRuns: number;
}

export const noLimits: StoreLimits = { maxMsgs: -1, maxBytes: -1, maxAgeMs: 0, maxMsgsPerSubject: -1 };
const T0 = 1_700_000_000_000 * 1e6;
const HDR = Buffer.from("NATS/1.0\r\nX: 1\r\n\r\n");

function syncP(s: { sync(cb: (e: Error | null) => void): void }): Promise<void> {
  return new Promise((res, rej) => s.sync((e) => (e ? rej(e) : res())));
}

function put(s: StreamStore, subject: string, body: string, opts: { hdr?: Buffer | null; ts?: number; ttl?: number } = {}): number {
  return s.storeMsg(subject, opts.hdr ?? null, Buffer.from(body), opts.ts ?? T0, opts.ttl ?? 0);
}

function body(m: StoredMsg | null): string | null {
  return m === null ? null : m.data.toString();
}

async function withStore(t: ContractTarget, fn: (s: StreamStore, env: StoreEnv) => Promise<StreamStore | void>, limits?: StoreLimits, cbs?: StoreCallbacks): Promise<void> {
  const env = t.newEnv();
  let s = await env.open(limits, cbs);
  try {
    const r = await fn(s, env);
    if (r) s = r;
  } finally {
    await s.close();
    await env.dispose();
  }
}

// ---- a model of the store for property tests ----
interface ModelMsg {
  seq: number;
  subject: string;
  data: string;
  hdr: string | null;
}

class Model {
  msgs = new Map<number, ModelMsg>();
  first = 0;
  last = 0;
  store(subject: string, data: string, hdr: string | null): number {
    const seq = this.last + 1;
    if (this.msgs.size === 0) this.first = seq;
    this.last = seq;
    this.msgs.set(seq, { seq, subject, data, hdr });
    return seq;
  }
  /** Discard old the way the store must: per subject, then count, then bytes. */
  enforce(l: StoreLimits, t: ContractTarget): number[] {
    const out: number[] = [];
    const drop = (seq: number) => {
      this.msgs.delete(seq);
      out.push(seq);
    };
    const last = this.msgs.get(this.last);
    if (last !== undefined && l.maxMsgsPerSubject > 0) {
      const same = this.sorted().filter((x) => x.subject === last.subject);
      for (let k = 0; k < same.length - l.maxMsgsPerSubject; k++) drop((same[k] as ModelMsg).seq);
    }
    if (l.maxMsgs > 0) for (const x of this.sorted().slice(0, Math.max(0, this.msgs.size - l.maxMsgs))) drop(x.seq);
    if (l.maxBytes > 0) {
      const size = (x: ModelMsg) => t.msgSize(x.subject, x.hdr === null ? null : Buffer.from(x.hdr), Buffer.from(x.data));
      let bytes = 0;
      for (const x of this.msgs.values()) bytes += size(x);
      for (const x of this.sorted()) {
        if (bytes <= l.maxBytes) break;
        bytes -= size(x);
        drop(x.seq);
      }
    }
    if (out.length > 0) this.fixFirst();
    return out;
  }

  private fixFirst(): void {
    if (this.msgs.size === 0) this.first = this.last + 1;
    else this.first = Math.min(...this.msgs.keys());
  }
  remove(seq: number): boolean {
    const ok = this.msgs.delete(seq);
    if (ok) this.fixFirst();
    return ok;
  }
  sorted(): ModelMsg[] {
    return [...this.msgs.values()].sort((a, b) => a.seq - b.seq);
  }
  compact(seq: number): number {
    let n = 0;
    for (const m of this.sorted()) if (m.seq < seq && this.msgs.delete(m.seq)) n++;
    if (seq > this.last + 1) this.last = seq - 1;
    this.fixFirst();
    return n;
  }
  purge(subject: string, seq: number, keep: number): number {
    if (subject === "" || subject === ">") {
      if (keep === 0 && seq === 0) return this.compact(this.last + 1);
      if (seq > 1) return this.compact(seq);
      if (keep > 0) {
        if (keep >= this.msgs.size) return 0;
        return this.compact(this.last - keep + 1);
      }
      return 0;
    }
    const matching = this.sorted().filter((m) => subjectMatches(subject, m.subject));
    const limit = seq > 1 ? seq : this.last + 1;
    let remove = matching.filter((m) => m.seq < limit).length;
    if (keep > 0) {
      if (keep >= matching.length) return 0;
      remove = Math.min(remove, matching.length - keep);
    }
    let n = 0;
    for (const m of matching) {
      if (n >= remove || m.seq >= limit) break;
      this.msgs.delete(m.seq);
      n++;
    }
    if (n > 0) this.fixFirst();
    return n;
  }
  numPending(start: number, filter: string, lps: boolean): number {
    if (lps) {
      let n = 0;
      for (const v of this.subjectsState(filter).values()) if (v.last >= start) n++;
      return n;
    }
    return this.sorted().filter((m) => m.seq >= start && subjectMatches(filter, m.subject)).length;
  }
  subjectsState(filter: string): Map<string, { msgs: number; first: number; last: number }> {
    const out = new Map<string, { msgs: number; first: number; last: number }>();
    for (const m of this.sorted()) {
      if (!subjectMatches(filter, m.subject)) continue;
      const e = out.get(m.subject);
      if (e === undefined) out.set(m.subject, { msgs: 1, first: m.seq, last: m.seq });
      else {
        e.msgs++;
        e.last = m.seq;
      }
    }
    return out;
  }
}

const SUBJECTS = ["a", "a.b", "a.c", "b.x.y", "a.b.c"];
const FILTERS = ["", ">", "a", "a.*", "a.>", "*.x.*", "b.>", "a.b", "nope"];

type Op =
  | { op: "store"; s: number; len: number; hdr: boolean }
  | { op: "remove"; seq: number }
  | { op: "purge"; f: number; seq: number; keep: number }
  | { op: "compact"; seq: number }
  | { op: "reopen" };

const limitsArb: fc.Arbitrary<StoreLimits> = fc.oneof(
  { weight: 2, arbitrary: fc.constant(noLimits) },
  {
    weight: 1,
    arbitrary: fc.record({
      maxMsgs: fc.constantFrom(-1, 3, 8),
      maxBytes: fc.constantFrom(-1, 400),
      maxAgeMs: fc.constant(0),
      maxMsgsPerSubject: fc.constantFrom(-1, 1, 2),
    }),
  },
);

const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 8, arbitrary: fc.record({ op: fc.constant("store" as const), s: fc.nat(SUBJECTS.length - 1), len: fc.nat(40), hdr: fc.boolean() }) },
  { weight: 3, arbitrary: fc.record({ op: fc.constant("remove" as const), seq: fc.nat(60) }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant("purge" as const), f: fc.nat(FILTERS.length - 1), seq: fc.nat(50), keep: fc.nat(4) }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant("compact" as const), seq: fc.integer({ min: 1, max: 70 }) }) },
  { weight: 1, arbitrary: fc.constant({ op: "reopen" as const }) },
);

function checkAgainstModel(s: StreamStore, m: Model, t: ContractTarget): void {
  const st = s.state();
  assert.equal(st.msgs, m.msgs.size, "msgs");
  assert.equal(st.lastSeq, m.last, "lastSeq");
  assert.equal(st.firstSeq, m.first, "firstSeq");
  let bytes = 0;
  for (const x of m.msgs.values()) bytes += t.msgSize(x.subject, x.hdr === null ? null : Buffer.from(x.hdr), Buffer.from(x.data));
  assert.equal(st.bytes, bytes, "bytes");
  assert.equal(st.numSubjects, new Set([...m.msgs.values()].map((x) => x.subject)).size, "numSubjects");
  const deleted: number[] = [];
  if (m.msgs.size > 0) for (let q = m.first; q <= m.last; q++) if (!m.msgs.has(q)) deleted.push(q);
  assert.deepEqual(s.deletedSeqs(), deleted, "deletedSeqs");
  assert.equal(st.numDeleted, deleted.length, "numDeleted");
  for (let q = 0; q <= m.last + 1; q++) {
    const want = m.msgs.get(q);
    const got = s.loadMsg(q);
    if (want === undefined) assert.equal(got, null, `loadMsg(${q}) should be null`);
    else {
      assert.ok(got !== null, `loadMsg(${q}) missing`);
      assert.equal(got.subject, want.subject);
      assert.equal(got.data.toString(), want.data);
      assert.equal(got.hdr === null ? null : got.hdr.toString(), want.hdr);
    }
  }
  for (const f of FILTERS) {
    assert.deepEqual(s.subjectsState(f), m.subjectsState(f), `subjectsState(${f})`);
    const ms = m.sorted().filter((x) => subjectMatches(f, x.subject));
    assert.equal(s.loadLastMsg(f)?.seq ?? null, ms.length ? (ms[ms.length - 1] as ModelMsg).seq : null, `loadLastMsg(${f})`);
    for (const start of [0, 1, Math.floor(m.last / 2), m.last, m.last + 1]) {
      const next = ms.find((x) => x.seq >= start);
      assert.equal(s.loadNextMsg(f, start)?.seq ?? null, next?.seq ?? null, `loadNextMsg(${f}, ${start})`);
      assert.equal(s.numPending(start, f, false), m.numPending(start, f, false), `numPending(${start}, ${f})`);
      assert.equal(s.numPending(start, f, true), m.numPending(start, f, true), `numPending lps(${start}, ${f})`);
    }
  }
}

export function streamStoreContract(t: ContractTarget): void {
  void describe(`StreamStore contract: ${t.name}`, () => {
    void it("assigns sequences and loads messages back bit for bit", async () => {
      await withStore(t, async (s) => {
        assert.equal(s.state().firstSeq, 0);
        assert.equal(s.state().lastSeq, 0);
        assert.equal(put(s, "foo", "one", { ts: T0 + 1000 }), 1);
        assert.equal(s.storeMsg("bar", HDR, Buffer.from([0, 1, 2, 255]), T0 + 2000, 0), 2);
        assert.equal(s.storeMsg("baz", null, Buffer.alloc(0), T0 + 3000, 0), 3);
        await syncP(s);
        const m1 = s.loadMsg(1);
        assert.deepEqual(
          m1 && { seq: m1.seq, subject: m1.subject, hdr: m1.hdr, data: m1.data.toString(), tsNs: m1.tsNs },
          { seq: 1, subject: "foo", hdr: null, data: "one", tsNs: T0 + 1000 },
        );
        const m2 = s.loadMsg(2);
        assert.ok(m2 && m2.hdr && m2.hdr.equals(HDR));
        assert.ok(m2.data.equals(Buffer.from([0, 1, 2, 255])));
        assert.equal(s.loadMsg(3)?.data.length, 0);
        assert.equal(s.loadMsg(0), null);
        assert.equal(s.loadMsg(4), null);
        const st = s.state();
        assert.equal(st.msgs, 3);
        assert.equal(st.firstSeq, 1);
        assert.equal(st.lastSeq, 3);
        assert.equal(st.firstTsNs, T0 + 1000);
        assert.equal(st.lastTsNs, T0 + 3000);
        assert.equal(st.numSubjects, 3);
        assert.equal(st.bytes, t.msgSize("foo", null, Buffer.from("one")) + t.msgSize("bar", HDR, Buffer.alloc(4)) + t.msgSize("baz", null, Buffer.alloc(0)));
      });
    });

    void it("copies caller buffers (they may be reused after storeMsg returns)", async () => {
      await withStore(t, async (s) => {
        const b = Buffer.from("original");
        s.storeMsg("x", null, b, T0, 0);
        b.fill(0);
        assert.equal(body(s.loadMsg(1)), "original");
      });
    });

    void it("removes messages: interior gaps, first advance, missing", async () => {
      await withStore(t, async (s) => {
        for (let i = 1; i <= 5; i++) put(s, "s", `m${i}`);
        assert.equal(s.removeMsg(3), true);
        assert.equal(s.removeMsg(3), false);
        assert.equal(s.removeMsg(99), false);
        assert.deepEqual(s.deletedSeqs(), [3]);
        assert.equal(s.state().numDeleted, 1);
        assert.equal(s.removeMsg(1), true);
        assert.equal(s.removeMsg(2), true);
        assert.equal(s.state().firstSeq, 4);
        assert.deepEqual(s.deletedSeqs(), []);
        assert.equal(s.removeMsg(4), true);
        assert.equal(s.removeMsg(5), true);
        const st = s.state();
        assert.equal(st.msgs, 0);
        assert.equal(st.firstSeq, 6);
        assert.equal(st.lastSeq, 5);
        assert.equal(put(s, "s", "m6"), 6);
        assert.equal(s.state().firstSeq, 6);
      });
    });

    void it("loadNextMsg and loadLastMsg with literal and wildcard filters", async () => {
      await withStore(t, async (s) => {
        put(s, "a.b", "1");
        put(s, "a.c", "2");
        put(s, "x.y.z", "3");
        put(s, "a.b", "4");
        assert.equal(s.loadNextMsg("a.b", 2)?.seq, 4);
        assert.equal(s.loadNextMsg("a.*", 2)?.seq, 2);
        assert.equal(s.loadNextMsg(">", 3)?.seq, 3);
        assert.equal(s.loadNextMsg("", 0)?.seq, 1);
        assert.equal(s.loadNextMsg("x.>", 1)?.seq, 3);
        assert.equal(s.loadNextMsg("x.*", 1), null);
        assert.equal(s.loadNextMsg("a.b", 5), null);
        assert.equal(s.loadLastMsg("a.b")?.seq, 4);
        assert.equal(s.loadLastMsg("a.c")?.seq, 2);
        assert.equal(s.loadLastMsg("*.*")?.seq, 4);
        assert.equal(s.loadLastMsg(">")?.seq, 4);
        assert.equal(s.loadLastMsg("nope"), null);
        s.removeMsg(4);
        assert.equal(s.loadLastMsg("a.b")?.seq, 1);
        assert.equal(s.subjectsState("a.b").get("a.b")?.last, 1);
      });
    });

    void it("loadNextMsgWithHeader returns exactly the live messages with header bytes, in order", async () => {
      const env = t.newEnv();
      let s = await env.open();
      try {
        if (s.loadNextMsgWithHeader === undefined) return;
        const want: number[] = [];
        // runs without headers long enough to fill whole blocks of the file store
        for (let i = 1; i <= 300; i++) {
          const withHdr = i === 7 || i === 150 || i === 151 || i === 299 || i === 300;
          const seq = s.storeMsg(`h.${i % 3}`, withHdr ? HDR : i === 40 ? Buffer.alloc(0) : null, Buffer.from(`d${i}`), T0 + i, 0);
          if (withHdr) want.push(seq);
        }
        s.removeMsg(151);
        want.splice(want.indexOf(151), 1);
        const walk = (): number[] => {
          const got: number[] = [];
          for (let q = 0, m = s.loadNextMsgWithHeader?.(0) ?? null; m !== null; m = s.loadNextMsgWithHeader?.(q) ?? null) {
            assert.ok(m.hdr !== null && m.hdr.length > 0);
            assert.equal(m.data.toString(), `d${m.seq}`);
            got.push(m.seq);
            q = m.seq + 1;
          }
          return got;
        };
        assert.deepEqual(walk(), want);
        assert.equal(s.loadNextMsgWithHeader(301), null);
        if (env.reopen !== null) {
          s = await env.reopen(s);
          assert.deepEqual(walk(), want);
        }
      } finally {
        await s.close();
        await env.dispose();
      }
    });

    void it("purges all, by subject, by sequence and with keep", async () => {
      await withStore(t, async (s) => {
        for (let i = 0; i < 10; i++) put(s, i % 2 ? "odd" : "even", `${i + 1}`);
        assert.equal(s.purge({ subject: "odd", keep: 2 }), 3);
        assert.deepEqual(s.subjectsState("odd").get("odd"), { msgs: 2, first: 8, last: 10 });
        assert.equal(s.purge({ subject: "even", seq: 5 }), 2);
        assert.equal(s.state().firstSeq, 5);
        assert.equal(s.purge({ keep: 2 }), 3);
        assert.equal(s.state().msgs, 2);
        assert.equal(s.state().firstSeq, 9);
        assert.equal(s.purge({}), 2);
        const st = s.state();
        assert.equal(st.msgs, 0);
        assert.equal(st.bytes, 0);
        assert.equal(st.firstSeq, 11);
        assert.equal(st.lastSeq, 10);
        assert.equal(put(s, "n", "11"), 11);
      });
    });

    void it("compacts below a sequence and past the end", async () => {
      await withStore(t, async (s) => {
        for (let i = 0; i < 5; i++) put(s, "c", `${i + 1}`);
        assert.equal(s.compact(3), 2);
        assert.equal(s.state().firstSeq, 3);
        assert.equal(s.compact(100), 3);
        const st = s.state();
        assert.equal(st.msgs, 0);
        assert.equal(st.firstSeq, 100);
        assert.equal(st.lastSeq, 99);
        assert.equal(put(s, "c", "x"), 100);
      });
    });

    void it("enforces maxMsgs, maxBytes and maxMsgsPerSubject by discarding old, and reports removals", async () => {
      const removed: [number, string][] = [];
      const cbs: StoreCallbacks = { onLimitRemove: (seq, subj) => removed.push([seq, subj]) };
      await withStore(
        t,
        async (s) => {
          for (let i = 0; i < 6; i++) put(s, "m", `${i}`);
          assert.equal(s.state().msgs, 3);
          assert.equal(s.state().firstSeq, 4);
          assert.deepEqual(removed, [[1, "m"], [2, "m"], [3, "m"]]);
          removed.length = 0;
          s.setLimits({ ...noLimits, maxMsgsPerSubject: 1 });
          assert.equal(s.state().msgs, 1);
          put(s, "k.1", "a");
          put(s, "k.2", "a");
          put(s, "k.1", "b");
          assert.equal(s.state().msgs, 3);
          assert.equal(body(s.loadLastMsg("k.1")), "b");
          assert.deepEqual(s.subjectsState("k.1").get("k.1"), { msgs: 1, first: 9, last: 9 });
          const size = t.msgSize("k.1", null, Buffer.from("b"));
          s.setLimits({ ...noLimits, maxBytes: size * 2 });
          assert.equal(s.state().msgs, 2);
          assert.ok(s.state().bytes <= size * 2);
          assert.ok(removed.some(([q]) => q === 6));
        },
        { ...noLimits, maxMsgs: 3 },
        cbs,
      );
    });

    void it("expires by max age and per-message TTL", async () => {
      const removed: number[] = [];
      await withStore(
        t,
        async (s) => {
          put(s, "a", "old", { ts: T0 });
          put(s, "a", "ttl", { ts: T0 + 5e9, ttl: 2 });
          put(s, "a", "new", { ts: T0 + 10e9 });
          assert.equal(s.expire(T0 + 1e9), 0);
          assert.equal(s.expire(T0 + 7.5e9), 2); // seq 1 by age (7s), seq 2 by its 2s TTL
          assert.deepEqual(removed.sort(), [1, 2]);
        },
        { ...noLimits, maxAgeMs: 7_000 },
        { onLimitRemove: (seq) => removed.push(seq) },
      );
    });

    void it("counts numPending and subjectsState", async () => {
      await withStore(t, async (s) => {
        put(s, "o.1", "1");
        put(s, "o.2", "2");
        put(s, "o.1", "3");
        put(s, "p", "4");
        put(s, "o.2", "5");
        assert.equal(s.numPending(1, ">", false), 5);
        assert.equal(s.numPending(3, "", false), 3);
        assert.equal(s.numPending(2, "o.*", false), 3);
        assert.equal(s.numPending(2, "o.1", false), 1);
        assert.equal(s.numPending(1, "o.*", true), 2);
        assert.equal(s.numPending(4, ">", true), 2);
        assert.equal(s.numPending(6, ">", false), 0);
        assert.deepEqual(
          [...s.subjectsState("o.*")].sort(),
          [
            ["o.1", { msgs: 2, first: 1, last: 3 }],
            ["o.2", { msgs: 2, first: 2, last: 5 }],
          ],
        );
        s.removeMsg(1);
        assert.deepEqual(s.subjectsState("o.1").get("o.1"), { msgs: 1, first: 3, last: 3 });
      });
    });

    void it("counts numPending across many sequences with holes", async () => {
      await withStore(t, async (s) => {
        const N = 20_000;
        for (let i = 1; i <= N; i++) put(s, `n.${i % 7}`, "x");
        let r = 12345;
        const rnd = () => (r = (r * 1103515245 + 12345) % 2147483648) / 2147483648;
        for (let i = 0; i < N / 3; i++) s.removeMsg(1 + Math.floor(rnd() * N));
        const live: number[] = [];
        for (let q = 1; q <= N; q++) if (s.loadMsg(q) !== null) live.push(q);
        assert.equal(s.state().msgs, live.length);
        for (const start of [0, 1, 2, 4095, 4096, 4097, 8191, 12_000, 19_999, 20_000, 20_001]) {
          assert.equal(s.numPending(start, ">", false), live.filter((q) => q >= start).length, `numPending(${start})`);
        }
        s.purge({ keep: 5000 });
        assert.equal(s.numPending(16_000, "", false), live.filter((q) => q >= 16_000).length);
      });
    });

    void it("answers sync callbacks, many at once", async () => {
      await withStore(t, async (s) => {
        const ps: Promise<void>[] = [];
        for (let i = 0; i < 100; i++) {
          put(s, "g", `${i}`);
          ps.push(syncP(s));
        }
        await Promise.all(ps);
        assert.equal(s.state().msgs, 100);
      });
    });

    void it("matches a model under random operations (property)", async () => {
      await fc.assert(
        fc.asyncProperty(fc.array(opArb, { maxLength: 60 }), limitsArb, async (ops, limits) => {
          const env = t.newEnv();
          const removedByLimit: number[] = [];
          const cbs: StoreCallbacks = { onLimitRemove: (seq) => removedByLimit.push(seq) };
          let s = await env.open(limits, cbs);
          const m = new Model();
          try {
            for (const o of ops) {
              switch (o.op) {
                case "store": {
                  const data = "d".repeat(o.len) + m.last;
                  const hdr = o.hdr ? `NATS/1.0\r\nN: ${m.last}\r\n\r\n` : null;
                  const subject = SUBJECTS[o.s] as string;
                  assert.equal(s.storeMsg(subject, hdr === null ? null : Buffer.from(hdr), Buffer.from(data), T0, 0), m.store(subject, data, hdr));
                  const want = m.enforce(limits, t);
                  assert.deepEqual(removedByLimit.splice(0), want, "limit removals");
                  break;
                }
                case "remove":
                  assert.equal(s.removeMsg(o.seq), m.remove(o.seq), `remove ${o.seq}`);
                  break;
                case "purge": {
                  const f = FILTERS[o.f] as string;
                  assert.equal(s.purge({ subject: f, seq: o.seq, keep: o.keep }), m.purge(f, o.seq, o.keep), `purge ${f} ${o.seq} ${o.keep}`);
                  break;
                }
                case "compact":
                  assert.equal(s.compact(o.seq), m.compact(o.seq), `compact ${o.seq}`);
                  break;
                case "reopen":
                  if (env.reopen) s = await env.reopen(s, limits, cbs);
                  break;
              }
            }
            checkAgainstModel(s, m, t);
            if (env.reopen) {
              s = await env.reopen(s, limits, cbs);
              assert.deepEqual(removedByLimit, [], "nothing removed by limits at reopen");
              checkAgainstModel(s, m, t);
            }
          } finally {
            await s.close();
            await env.dispose();
          }
        }),
        { numRuns: Number(process.env["STORE_PROPERTY_RUNS"] ?? t.numRuns) },
      );
    });

    void it("stores, counts, matches and recovers subjects that are not ASCII", async () => {
      const env = t.newEnv();
      let s = await env.open();
      try {
        const subjects = ["orders.müller", "orders.müller", "orders.日本", "orders.plain", "orders.日本", "orders.müller"];
        subjects.forEach((subj, i) => put(s, subj, `v${i}`, { ts: T0 + i }));
        await syncP(s);
        const check = (st: StreamStore, when: string): void => {
          subjects.forEach((subj, i) => {
            const m = st.loadMsg(i + 1);
            assert.equal(m?.subject, subj, `${when}: subject of seq ${i + 1}`);
            assert.equal(body(m), `v${i}`, `${when}: data of seq ${i + 1}`);
          });
          assert.equal(st.loadLastMsg("orders.日本")?.seq, 5, when);
          assert.equal(st.subjectsState("orders.*").get("orders.müller")?.msgs, 3, when);
          assert.equal(st.state().bytes, subjects.reduce((n, subj, i) => n + t.msgSize(subj, null, Buffer.from(`v${i}`)), 0), when);
        };
        check(s, "stored");
        if (env.reopen !== null) {
          s = await env.reopen(s);
          check(s, "reopened");
          put(s, "orders.日本", "more", { ts: T0 + 99 });
          s = await env.reopen(s);
          assert.equal(s.loadLastMsg("orders.日本")?.seq, 7);
        }
      } finally {
        await s.close();
        await env.dispose();
      }
    });

    void it("keeps state across restart (when the store persists)", async (ctx) => {
      const env = t.newEnv();
      if (env.reopen === null) {
        await env.dispose();
        ctx.skip("memory store does not persist");
        return;
      }
      let s = await env.open();
      try {
        put(s, "a", "1", { ts: T0 + 1 });
        s.storeMsg("b", HDR, Buffer.from("2"), T0 + 2e3, 0);
        put(s, "a", "3", { ts: T0 + 3e3, ttl: 30 });
        put(s, "c", "4", { ts: T0 + 4e3 });
        s.removeMsg(2);
        s = await env.reopen(s);
        const st = s.state();
        assert.equal(st.msgs, 3);
        assert.equal(st.firstSeq, 1);
        assert.equal(st.lastSeq, 4);
        assert.deepEqual(s.deletedSeqs(), [2]);
        assert.equal(body(s.loadMsg(3)), "3");
        assert.equal(s.loadMsg(4)?.tsNs, T0 + 4e3);
        // TTL survives the restart
        assert.equal(s.expire(T0 + 3e3 + 31e9), 1);
        assert.equal(s.loadMsg(3), null);
        s.purge({});
        s = await env.reopen(s);
        assert.deepEqual({ ...s.state(), lastTsNs: 0 }, { msgs: 0, bytes: 0, firstSeq: 5, firstTsNs: 0, lastSeq: 4, lastTsNs: 0, numSubjects: 0, numDeleted: 0 });
        s.compact(50);
        s = await env.reopen(s);
        assert.equal(s.state().firstSeq, 50);
        assert.equal(s.state().lastSeq, 49);
        assert.equal(put(s, "z", "50"), 50);
      } finally {
        await s.close();
        await env.dispose();
      }
    });
  });
  pacedPurgeContract(t);
  replicationContract(t);
}

// ---- paced purges (beginPurge): the same end state as purge() at the moment it began ----

type PacedOp =
  | { op: "store"; s: number; len: number }
  | { op: "remove"; seq: number }
  | { op: "begin"; f: number; seq: number; keep: number }
  | { op: "step"; budget: number }
  | { op: "purge"; f: number; seq: number; keep: number }
  | { op: "compact"; seq: number }
  | { op: "reopen" };

const pacedOpArb: fc.Arbitrary<PacedOp> = fc.oneof(
  { weight: 8, arbitrary: fc.record({ op: fc.constant("store" as const), s: fc.nat(SUBJECTS.length - 1), len: fc.nat(30) }) },
  { weight: 3, arbitrary: fc.record({ op: fc.constant("remove" as const), seq: fc.nat(80) }) },
  { weight: 3, arbitrary: fc.record({ op: fc.constant("begin" as const), f: fc.nat(FILTERS.length - 1), seq: fc.nat(60), keep: fc.nat(6) }) },
  { weight: 6, arbitrary: fc.record({ op: fc.constant("step" as const), budget: fc.integer({ min: 1, max: 8 }) }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant("purge" as const), f: fc.nat(FILTERS.length - 1), seq: fc.nat(60), keep: fc.nat(4) }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant("compact" as const), seq: fc.integer({ min: 1, max: 80 }) }) },
  { weight: 1, arbitrary: fc.constant({ op: "reopen" as const }) },
);

function pacedPurgeContract(t: ContractTarget): void {
  void describe(`StreamStore contract, paced purges: ${t.name}`, () => {
    void it("a purge in small steps ends where purge() would, whatever the filter", async (ctx) => {
      const probe = await t.newEnv().open();
      const can = probe.beginPurge !== undefined;
      await probe.close();
      if (!can) return ctx.skip("no beginPurge");
      for (const f of FILTERS) {
        for (const o of [{}, { keep: 3 }, { seq: 700 }, { keep: 900 }, { seq: 5000 }]) {
          const ea = t.newEnv();
          const eb = t.newEnv();
          const a = await ea.open();
          const b = await eb.open();
          try {
            for (const s of [a, b]) {
              for (let i = 0; i < 2000; i++) s.storeMsg(SUBJECTS[(i * 7) % 5 === 0 ? 0 : i % SUBJECTS.length]!, null, Buffer.from(`m${i}`), T0 + i, 0);
              for (let q = 5; q < 2000; q += 13) s.removeMsg(q);
            }
            const opts = { subject: f, ...o };
            const want = a.purge(opts);
            const job = b.beginPurge!(opts);
            let steps = 0;
            while (!job.step(37)) steps++;
            assert.equal(job.purged, want, `purged ${JSON.stringify(opts)}`);
            assert.ok(job.done);
            const atOnce = (f === "" || f === ">") && (Object.keys(o).length === 0 || (o as { seq?: number }).seq === 5000);
            if (want > 400 && !atOnce) assert.ok(steps > 2, `${JSON.stringify(opts)}: ${want} removed in ${steps} steps`);
            assertSameStore(a, b, JSON.stringify(opts));
            assert.equal(a.storeMsg("a", null, Buffer.from("after"), T0, 0), b.storeMsg("a", null, Buffer.from("after"), T0, 0));
            assertSameStore(a, b, `${JSON.stringify(opts)} then a publish`);
          } finally {
            await a.close();
            await b.close();
            await ea.dispose();
            await eb.dispose();
          }
        }
      }
    });

    void it("publishes, removals, purges and limits while a paced purge runs end as if it was done when begun (property)", async (ctx) => {
      const probe = await t.newEnv().open();
      const can = probe.beginPurge !== undefined;
      await probe.close();
      if (!can) return ctx.skip("no beginPurge");
      await fc.assert(
        fc.asyncProperty(fc.array(pacedOpArb, { maxLength: 70 }), limitsArb, async (ops, limits) => {
          const env = t.newEnv();
          const removedByLimit: number[] = [];
          const cbs: StoreCallbacks = { onLimitRemove: (seq) => removedByLimit.push(seq) };
          let s = await env.open(limits, cbs);
          const m = new Model();
          let job: { p: StorePurge; want: number } | null = null;
          const settle = (): void => {
            if (job === null) return;
            while (!job.p.step(3));
            assert.equal(job.p.purged, job.want, "purged");
            job = null;
          };
          try {
            for (const o of ops) {
              if (job !== null && job.p.done) {
                assert.equal(job.p.purged, job.want, "purged");
                job = null;
              }
              switch (o.op) {
                case "store": {
                  const data = "d".repeat(o.len) + m.last;
                  const subject = SUBJECTS[o.s] as string;
                  assert.equal(s.storeMsg(subject, null, Buffer.from(data), T0, 0), m.store(subject, data, null));
                  assert.deepEqual(removedByLimit.splice(0), m.enforce(limits, t), "limit removals");
                  break;
                }
                case "remove":
                  assert.equal(s.removeMsg(o.seq), m.remove(o.seq), `remove ${o.seq}`);
                  break;
                case "begin": {
                  const f = FILTERS[o.f] as string;
                  const opts = o.keep > 0 ? { subject: f, keep: o.keep } : { subject: f, seq: o.seq };
                  if (job !== null) settle(); // beginning another finishes the running one
                  const p = s.beginPurge!(opts);
                  job = { p, want: m.purge(f, opts.seq ?? 0, opts.keep ?? 0) };
                  break;
                }
                case "step":
                  job?.p.step(o.budget);
                  break;
                case "purge": {
                  const f = FILTERS[o.f] as string;
                  if (job !== null) job.p.step(0); // nothing: purge() itself must finish it
                  const n = s.purge({ subject: f, seq: o.seq, keep: o.keep });
                  if (job !== null) {
                    assert.ok(job.p.done, "a purge finishes the running one first");
                    assert.equal(job.p.purged, job.want, "purged");
                    job = null;
                  }
                  assert.equal(n, m.purge(f, o.seq, o.keep), `purge ${f} ${o.seq} ${o.keep}`);
                  break;
                }
                case "compact":
                  assert.equal(s.compact(o.seq), m.compact(o.seq), `compact ${o.seq}`);
                  job = job !== null && job.p.done ? (assert.equal(job.p.purged, job.want, "purged"), null) : job;
                  assert.equal(job, null, "a compact finishes the running purge first");
                  break;
                case "reopen":
                  settle();
                  if (env.reopen) s = await env.reopen(s, limits, cbs);
                  break;
              }
            }
            settle();
            checkAgainstModel(s, m, t);
            if (env.reopen) {
              s = await env.reopen(s, limits, cbs);
              checkAgainstModel(s, m, t);
            }
          } finally {
            await s.close();
            await env.dispose();
          }
        }),
        { numRuns: Number(process.env["STORE_PROPERTY_RUNS"] ?? t.numRuns) },
      );
    });
  });
}

function sampleConsumerState(n: number): ConsumerState {
  const pending = new Map<number, { cseq: number; tsNs: number }>();
  const redelivered = new Map<number, number>();
  for (let i = 0; i < n; i++) {
    pending.set(100 + i, { cseq: 10 + i, tsNs: T0 + i });
    if (i % 3 === 0) redelivered.set(100 + i, 2 + i);
  }
  return { delivered: { consumerSeq: 10 + n, streamSeq: 100 + n }, ackFloor: { consumerSeq: 9, streamSeq: 99 }, pending, redelivered };
}

export function consumerStoreContract(t: ContractTarget): void {
  void describe(`ConsumerStore contract: ${t.name}`, () => {
    void it("round-trips state and config", async () => {
      const env = t.newConsumerEnv();
      let c = await env.open();
      try {
        assert.equal(c.load(), null);
        assert.equal(c.readConfig(), null);
        c.update(sampleConsumerState(5));
        c.update(sampleConsumerState(7));
        await syncP(c);
        assert.deepEqual(c.load(), sampleConsumerState(7));
        c.writeConfig('{"durable_name":"d"}');
        assert.equal(c.readConfig(), '{"durable_name":"d"}');
        if (env.reopen) {
          c = await env.reopen(c);
          assert.deepEqual(c.load(), sampleConsumerState(7));
          assert.equal(c.readConfig(), '{"durable_name":"d"}');
          for (let i = 0; i < 50; i++) c.update(sampleConsumerState(i));
          await syncP(c);
          c = await env.reopen(c);
          assert.deepEqual(c.load(), sampleConsumerState(49));
          c.update(sampleConsumerState(4)); // no sync: close must still write it
          c = await env.reopen(c);
          assert.deepEqual(c.load(), sampleConsumerState(4));
        }
      } finally {
        await c.close();
        await env.dispose();
      }
    });

    void it("load returns a copy the caller may mutate", async () => {
      const env = t.newConsumerEnv();
      const c = await env.open();
      try {
        c.update(sampleConsumerState(2));
        await syncP(c);
        const a = c.load();
        assert.ok(a);
        a.pending.clear();
        assert.equal(c.load()?.pending.size, 2);
      } finally {
        await c.close();
        await env.dispose();
      }
    });
  });
}

export { sampleConsumerState, syncP, T0 };

// ---- calls a replica needs: storeMsgAt, skipMsgs, store snapshots ----

/** Everything a replica must reproduce: state (bytes only between stores of one kind), deleted
 *  sequences, every message bit for bit with its time, the subjects and the TTLs. */
export function assertSameStore(a: StreamStore, b: StreamStore, what = ""): void {
  const sa = a.state();
  const sb = b.state();
  if (a.type === b.type) assert.deepEqual(sb, sa, `${what} state`);
  else assert.deepEqual({ ...sb, bytes: 0 }, { ...sa, bytes: 0 }, `${what} state`);
  assert.deepEqual(b.deletedSeqs(), a.deletedSeqs(), `${what} deletedSeqs`);
  for (let q = sa.firstSeq; q <= sa.lastSeq; q++) {
    const x = a.loadMsg(q);
    const y = b.loadMsg(q);
    if (x === null) {
      assert.equal(y, null, `${what} seq ${q} should be absent`);
      continue;
    }
    assert.ok(y !== null, `${what} seq ${q} missing`);
    assert.equal(y.subject, x.subject, `${what} seq ${q} subject`);
    assert.equal(y.tsNs, x.tsNs, `${what} seq ${q} time`);
    assert.deepEqual(y.hdr, x.hdr, `${what} seq ${q} header`);
    assert.ok(y.data.equals(x.data), `${what} seq ${q} data`);
  }
  assert.deepEqual(b.subjectsState(">"), a.subjectsState(">"), `${what} subjects`);
  assert.deepEqual(b.msgTtls(0, Number.MAX_SAFE_INTEGER), a.msgTtls(0, Number.MAX_SAFE_INTEGER), `${what} ttls`);
}

type ReplOp =
  | { op: "store"; s: number; len: number; hdr: boolean; ttl: number }
  | { op: "storeAt"; gap: number; s: number; len: number; dt: number }
  | { op: "skip"; n: number }
  | { op: "remove"; seq: number }
  | { op: "purgeSubj"; s: number }
  | { op: "compact"; seq: number }
  | { op: "reopen" };

const replOpArb: fc.Arbitrary<ReplOp> = fc.oneof(
  { weight: 6, arbitrary: fc.record({ op: fc.constant("store" as const), s: fc.nat(SUBJECTS.length - 1), len: fc.nat(40), hdr: fc.boolean(), ttl: fc.constantFrom(0, 0, 5, 3600) }) },
  { weight: 4, arbitrary: fc.record({ op: fc.constant("storeAt" as const), gap: fc.constantFrom(0, 0, 1, 3, 40), s: fc.nat(SUBJECTS.length - 1), len: fc.nat(40), dt: fc.integer({ min: -5000, max: 5000 }) }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant("skip" as const), n: fc.constantFrom(1, 2, 17, 300) }) },
  { weight: 3, arbitrary: fc.record({ op: fc.constant("remove" as const), seq: fc.nat(400) }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant("purgeSubj" as const), s: fc.nat(SUBJECTS.length - 1) }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant("compact" as const), seq: fc.integer({ min: 1, max: 500 }) }) },
  { weight: 1, arbitrary: fc.constant({ op: "reopen" as const }) },
);

/** Apply ops to s (reopening through env where it persists); returns the store in use. */
async function applyReplOps(s: StreamStore, env: StoreEnv, ops: ReplOp[]): Promise<StreamStore> {
  let clock = T0;
  for (const o of ops) {
    clock += 1000;
    const last = s.state().lastSeq;
    switch (o.op) {
      case "store":
        s.storeMsg(SUBJECTS[o.s]!, o.hdr ? HDR : null, Buffer.alloc(o.len, o.len), clock, o.ttl);
        break;
      case "storeAt":
        // times chosen elsewhere need not rise
        s.storeMsgAt(last + 1 + o.gap, SUBJECTS[o.s]!, null, Buffer.alloc(o.len, 7), clock + o.dt, 0);
        break;
      case "skip":
        s.skipMsgs(last + 1, o.n, clock);
        break;
      case "remove":
        s.removeMsg(o.seq);
        break;
      case "purgeSubj":
        s.purge({ subject: SUBJECTS[o.s]! });
        break;
      case "compact":
        s.compact(o.seq);
        break;
      case "reopen":
        if (env.reopen !== null) s = await env.reopen(s);
        break;
    }
  }
  return s;
}

function replicationContract(t: ContractTarget): void {
  void describe(`StreamStore replication calls: ${t.name}`, () => {
    void it("storeMsgAt keeps the given sequences and times; a jump leaves deleted sequences", async () => {
      const env = t.newEnv();
      let s = await env.open();
      try {
        s.storeMsgAt(5, "a", null, Buffer.from("five"), T0 + 50, 0);
        let st = s.state();
        assert.deepEqual([st.firstSeq, st.lastSeq, st.msgs, st.numDeleted, st.firstTsNs, st.lastTsNs], [5, 5, 1, 0, T0 + 50, T0 + 50]);
        s.storeMsgAt(6, "b", HDR, Buffer.from("six"), T0 + 10, 30); // an earlier time is kept as given
        s.storeMsgAt(9, "a", null, Buffer.from("nine"), T0 + 90, 0);
        assert.throws(() => s.storeMsgAt(9, "a", null, Buffer.from("x"), T0, 0));
        assert.throws(() => s.storeMsgAt(3, "a", null, Buffer.from("x"), T0, 0));
        assert.equal(put(s, "c", "ten", { ts: T0 + 100 }), 10); // storeMsg carries on after it
        const check = (): void => {
          const st2 = s.state();
          assert.deepEqual([st2.firstSeq, st2.lastSeq, st2.msgs, st2.numDeleted, st2.lastTsNs], [5, 10, 4, 2, T0 + 100]);
          assert.deepEqual(s.deletedSeqs(), [7, 8]);
          assert.equal(s.loadMsg(6)?.tsNs, T0 + 10);
          assert.ok(s.loadMsg(6)?.hdr?.equals(HDR));
          assert.equal(body(s.loadMsg(9)), "nine");
          assert.equal(s.loadMsg(7), null);
          assert.equal(s.loadNextMsg(">", 7)?.seq, 9);
          assert.deepEqual([...s.msgTtls(0, 100)], [[6, 30]]);
          assert.equal(s.numPending(6, ">", false), 3);
        };
        check();
        await syncP(s);
        if (env.reopen !== null) {
          s = await env.reopen(s);
          check();
        }
        st = s.state();
        assert.equal(st.msgs, 4);
      } finally {
        await s.close();
        await env.dispose();
      }
    });

    void it("skipMsgs: on an empty store the first sequence moves; after messages the skipped count as deleted", async () => {
      const env = t.newEnv();
      let s = await env.open();
      try {
        s.skipMsgs(1, 3, T0 + 7);
        assert.deepEqual({ ...s.state() }, { msgs: 0, bytes: 0, firstSeq: 4, firstTsNs: 0, lastSeq: 3, lastTsNs: T0 + 7, numSubjects: 0, numDeleted: 0 });
        assert.throws(() => s.skipMsgs(3, 1, T0)); // must follow the last sequence
        assert.throws(() => s.skipMsgs(5, 1, T0));
        assert.throws(() => s.skipMsgs(4, 0, T0));
        await syncP(s);
        if (env.reopen !== null) {
          s = await env.reopen(s);
          assert.deepEqual([s.state().firstSeq, s.state().lastSeq, s.state().lastTsNs], [4, 3, T0 + 7]);
        }
        assert.equal(put(s, "a", "4", { ts: T0 + 40 }), 4);
        s.skipMsgs(5, 2, T0 + 41);
        s.storeMsgAt(7, "a", null, Buffer.from("7"), T0 + 70, 0);
        s.skipMsgs(8, 5, T0 + 80);
        const check = (): void => {
          const st = s.state();
          assert.deepEqual([st.firstSeq, st.lastSeq, st.msgs, st.numDeleted, st.firstTsNs, st.lastTsNs], [4, 12, 2, 7, T0 + 40, T0 + 80]);
          assert.deepEqual(s.deletedSeqs(), [5, 6, 8, 9, 10, 11, 12]);
          for (const q of [5, 6, 8, 12]) assert.equal(s.loadMsg(q), null);
          assert.equal(s.loadLastMsg(">")?.seq, 7);
        };
        check();
        await syncP(s);
        if (env.reopen !== null) {
          s = await env.reopen(s);
          check();
        }
        assert.equal(put(s, "b", "13"), 13);
        // removing every message: first moves past the skipped tail too
        s.removeMsg(4);
        s.removeMsg(7);
        s.removeMsg(13);
        assert.deepEqual([s.state().firstSeq, s.state().lastSeq, s.state().numDeleted], [14, 13, 0]);
      } finally {
        await s.close();
        await env.dispose();
      }
    });

    void it("a snapshot restored into an empty store (either kind) is identical (property)", async () => {
      await fc.assert(
        fc.asyncProperty(fc.array(replOpArb, { minLength: 1, maxLength: 40 }), fc.integer({ min: 1, max: 4 }), async (ops, split) => {
          const env = t.newEnv();
          let s = await env.open();
          const dst = t.newEnv();
          let d = await dst.open();
          try {
            s = await applyReplOps(s, env, ops);
            // 1: values, range by range, into a store of the same kind
            const r = new StoreSnapshotReader(s);
            const w = new StoreSnapshotWriter(d);
            w.begin(r.state);
            const { firstSeq, lastSeq } = r.state;
            const step = Math.max(1, Math.ceil((lastSeq - firstSeq + 1) / split));
            for (let from = firstSeq; from <= lastSeq; from += step) for (const m of r.range(from, from + step - 1)) w.put(m);
            w.finish();
            assertSameStore(s, d, "values");
            // 2: the archive bytes, in odd chunks, into a memory store
            const mem = createMemoryStreamStore(null, null);
            const dec = new StoreSnapshotDecoder(mem);
            const bytes = Buffer.concat([...encodeStoreSnapshot(new StoreSnapshotReader(s))]);
            for (let p = 0; p < bytes.length; p += 13) dec.push(bytes.subarray(p, p + 13));
            dec.end();
            assertSameStore(s, mem, "archive");
            await syncP(d);
            if (dst.reopen !== null) {
              d = await dst.reopen(d);
              assertSameStore(s, d, "after reopen");
            }
          } finally {
            await s.close();
            await d.close();
            await env.dispose();
            await dst.dispose();
          }
        }),
        { numRuns: Math.max(10, Math.floor(t.numRuns / 3)) },
      );
    });

    void it("a snapshot of a store purged while empty restores first 1, last 0 (found by the property below)", async () => {
      await withStore(t, async (s) => {
        s.compact(1);
        assert.deepEqual([s.state().firstSeq, s.state().lastSeq], [1, 0]);
        const d = createMemoryStreamStore(null, null);
        const w = new StoreSnapshotWriter(d);
        const r = new StoreSnapshotReader(s);
        w.begin(r.state);
        w.finish();
        assert.deepEqual([d.state().firstSeq, d.state().lastSeq], [1, 0]);
        const mem = createMemoryStreamStore(null, null);
        const dec = new StoreSnapshotDecoder(mem);
        dec.push(Buffer.concat([...encodeStoreSnapshot(new StoreSnapshotReader(s))]));
        dec.end();
        assert.deepEqual([mem.state().firstSeq, mem.state().lastSeq], [1, 0]);
      });
    });

    void it("a truncated or out-of-order store snapshot is refused", async () => {
      await withStore(t, async (s) => {
        for (let i = 1; i <= 5; i++) put(s, "a", `${i}`);
        const bytes = Buffer.concat([...encodeStoreSnapshot(new StoreSnapshotReader(s))]);
        const dec = new StoreSnapshotDecoder(createMemoryStreamStore(null, null));
        dec.push(bytes.subarray(0, bytes.length - 3));
        assert.throws(() => dec.end(), /truncated/);
        const w = new StoreSnapshotWriter(createMemoryStreamStore(null, null));
        w.put({ seq: 3, tsNs: T0, subject: "a", hdr: null, data: Buffer.alloc(1), ttlSec: 0 });
        assert.throws(() => w.put({ seq: 2, tsNs: T0, subject: "a", hdr: null, data: Buffer.alloc(1), ttlSec: 0 }), /out of order/);
      });
    });
  });
}

/** The file store on the Fs `mkFs` gives (in `dir`), with 512-byte blocks. */
export function fileTarget(name: string, mkFs: () => { fs: Fs; dir: string; cleanup(): void }, numRuns: number): ContractTarget {
  return {
    name,
    numRuns,
    msgSize: (subject, hdr, data) => fileStoreMsgSize(Buffer.byteLength(subject), hdr?.length ?? 0, data.length),
    newEnv: () => {
      const { fs, dir, cleanup } = mkFs();
      const clock = new ManualClock();
      // tiny blocks so rolls, block deletion and compaction happen in small tests
      const open = async (limits?: StoreLimits, callbacks?: StoreCallbacks) =>
        (await openFileStreamStore({ dir, fs, clock, limits: limits ?? null, callbacks: callbacks ?? null, blockSizeBytes: 512 })).store;
      return {
        open,
        reopen: async (s, limits, callbacks) => {
          await s.close();
          return open(limits, callbacks);
        },
        dispose: async () => cleanup(),
      };
    },
    newConsumerEnv: () => {
      const { fs, dir, cleanup } = mkFs();
      const open = () => openFileConsumerStore({ dir, fs });
      return {
        open,
        reopen: async (c) => {
          await c.close();
          return open();
        },
        dispose: async () => cleanup(),
      };
    },
  };
}
