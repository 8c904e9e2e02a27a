// Crash tests on the simulated disk for the calls a replica uses: storeMsgAt (sequences and
// times chosen elsewhere, with jumps) and skipMsgs. Whatever a sync() acknowledged survives a
// power cut: messages bit for bit with their times, skipped sequences as used up (never as
// messages), and the recovered last sequence and time are those of some point the store went
// through, at or after the last acknowledged one.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import { SimFs } from "../helpers/simfs.js";
import { openFileStreamStore } from "../../src/storage/index.js";
import { ManualClock } from "../../src/runtime/clock.js";
import { syncP, T0 } from "../helpers/storage-contract.js";

const DIR = "/js/replica";

function seeded(seed: number): () => number {
  let x = seed >>> 0 || 1;
  return () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return (x >>> 0) / 4294967296;
  };
}

function payload(seq: number, len: number): Buffer {
  const b = Buffer.alloc(8 + len);
  b.writeUInt32LE(seq, 0);
  for (let i = 4; i < b.length; i++) b[i] = (seq * 17 + i) & 0xff;
  return b;
}

async function open(fs: SimFs, blockSizeBytes = 600) {
  return openFileStreamStore({ dir: DIR, fs, clock: new ManualClock(), blockSizeBytes });
}

const turn = () => new Promise<void>((r) => setImmediate(r));

type Op =
  | { op: "storeAt"; gap: number; n: number; len: number; dt: number }
  | { op: "skip"; n: number; dt: number }
  | { op: "remove"; pick: number }
  | { op: "sync" }
  | { op: "turn" };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 6, arbitrary: fc.record({ op: fc.constant("storeAt" as const), gap: fc.constantFrom(0, 0, 0, 1, 5, 100), n: fc.integer({ min: 1, max: 8 }), len: fc.nat(90), dt: fc.integer({ min: -3000, max: 3000 }) }) },
  { weight: 3, arbitrary: fc.record({ op: fc.constant("skip" as const), n: fc.constantFrom(1, 3, 50, 5000), dt: fc.integer({ min: -3000, max: 3000 }) }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant("remove" as const), pick: fc.nat(1000) }) },
  { weight: 3, arbitrary: fc.constant({ op: "sync" as const }) },
  { weight: 2, arbitrary: fc.constant({ op: "turn" as const }) },
);

void describe("file store crash safety for storeMsgAt and skipMsgs (simfs)", () => {
  void it("a synced skip survives a crash, on an empty store and after messages", async () => {
    for (const tear of [false, true]) {
      const fs = new SimFs();
      const { store } = await open(fs);
      store.skipMsgs(1, 10, T0 + 10);
      await syncP(store);
      fs.crash({ tear, random: seeded(5) });
      let { store: s } = await open(fs);
      assert.deepEqual([s.state().firstSeq, s.state().lastSeq, s.state().lastTsNs, s.state().msgs], [11, 10, T0 + 10, 0]);
      s.storeMsgAt(11, "a", null, payload(11, 3), T0 + 11, 0);
      s.storeMsgAt(20, "a", null, payload(20, 3), T0 + 5, 0); // jump, and an earlier time
      s.skipMsgs(21, 1000, T0 + 4); // the time of a skip need not rise either
      await syncP(s);
      s.storeMsgAt(1021, "a", null, payload(1021, 3), T0 + 1021, 0); // not synced
      await turn();
      fs.crash({ tear, random: seeded(9) });
      ({ store: s } = await open(fs));
      const st = s.state();
      assert.equal(st.firstSeq, 11);
      assert.ok(st.lastSeq === 1020 || st.lastSeq === 1021, `lastSeq ${st.lastSeq}`);
      assert.equal(st.lastTsNs, st.lastSeq === 1020 ? T0 + 4 : T0 + 1021);
      assert.equal(st.msgs, st.lastSeq === 1020 ? 2 : 3);
      assert.equal(st.numDeleted, st.lastSeq - 11 + 1 - st.msgs);
      assert.equal(s.loadMsg(20)?.tsNs, T0 + 5);
      assert.ok(s.loadMsg(20)?.data.equals(payload(20, 3)));
      for (const q of [12, 19, 21, 500, 1020]) assert.equal(s.loadMsg(q), null);
      await s.close();
    }
  });

  void it("survives random storeMsgAt / skipMsgs workloads with crashes at random points (property)", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(opArb, { minLength: 1, maxLength: 40 }), fc.boolean(), fc.integer({ min: 1, max: 1e9 }), async (ops, tear, seed) => {
        const fs = new SimFs();
        const { store: s } = await open(fs);
        const stored = new Map<number, { data: Buffer; tsNs: number }>();
        const removed = new Set<number>();
        const durable = new Set<number>();
        const durablyRemoved = new Set<number>();
        // every (lastSeq -> lastTsNs) the store went through, and the highest acknowledged lastSeq
        const history = new Map<number, number>([[0, 0]]);
        let durableLast = 0;
        let unsyncedStores: number[] = [];
        let unsyncedRemoves: number[] = [];
        const pending: Promise<void>[] = [];
        let clock = T0;
        for (const o of ops) {
          clock += 10_000;
          const last = s.state().lastSeq;
          switch (o.op) {
            case "storeAt":
              for (let k = 0; k < o.n; k++) {
                const seq = s.state().lastSeq + 1 + (k === 0 ? o.gap : 0);
                const data = payload(seq, o.len);
                const ts = clock + o.dt + k;
                s.storeMsgAt(seq, `r.${seq % 3}`, null, data, ts, 0);
                stored.set(seq, { data, tsNs: ts });
                unsyncedStores.push(seq);
                history.set(seq, ts);
              }
              break;
            case "skip":
              s.skipMsgs(last + 1, o.n, clock + o.dt);
              history.set(last + o.n, clock + o.dt);
              break;
            case "remove": {
              const live = [...stored.keys()].filter((q) => !removed.has(q));
              if (live.length === 0) break;
              const q = live[o.pick % live.length]!;
              assert.equal(s.removeMsg(q), true);
              removed.add(q);
              unsyncedRemoves.push(q);
              break;
            }
            case "sync": {
              const st = unsyncedStores;
              const rm = unsyncedRemoves;
              const lastNow = s.state().lastSeq;
              pending.push(
                syncP(s).then(() => {
                  for (const q of st) durable.add(q);
                  for (const q of rm) durablyRemoved.add(q);
                  durableLast = Math.max(durableLast, lastNow);
                }),
              );
              unsyncedStores = [];
              unsyncedRemoves = [];
              break;
            }
            case "turn":
              await turn();
              break;
          }
        }
        await turn();
        fs.crash({ tear, random: seeded(seed) });
        await Promise.allSettled(pending);
        const { store: r } = await open(fs);
        const st = r.state();
        for (const q of durable) {
          if (removed.has(q)) continue;
          const m = r.loadMsg(q);
          assert.ok(m, `acknowledged seq ${q} lost`);
          const want = stored.get(q)!;
          assert.ok(m.data.equals(want.data), `seq ${q} damaged`);
          assert.equal(m.tsNs, want.tsNs, `seq ${q} time`);
        }
        for (const q of durablyRemoved) assert.equal(r.loadMsg(q), null, `acknowledged removal of ${q} undone`);
        let live = 0;
        for (let q = st.firstSeq; q <= st.lastSeq; q++) {
          const m = r.loadMsg(q);
          if (m === null) continue;
          live++;
          const want = stored.get(q);
          assert.ok(want, `seq ${q} was never stored (skipped or in a jump)`);
          assert.ok(m.data.equals(want.data), `seq ${q} content`);
        }
        assert.equal(st.msgs, live);
        assert.ok(st.lastSeq >= durableLast, `lastSeq ${st.lastSeq} < acknowledged ${durableLast}`);
        assert.ok(history.has(st.lastSeq), `lastSeq ${st.lastSeq} is no point the store went through`);
        assert.equal(st.lastTsNs, history.get(st.lastSeq), `lastTsNs at ${st.lastSeq}`);
        // the log carries on after what survived
        r.storeMsgAt(st.lastSeq + 1, "r.x", null, Buffer.from("x"), T0, 0);
        r.skipMsgs(st.lastSeq + 2, 2, T0);
        assert.equal(r.storeMsg("r.y", null, Buffer.from("y"), T0, 0), st.lastSeq + 4);
        await r.close();
      }),
      {
        numRuns: Number(process.env["STORE_PROPERTY_RUNS"] ?? 150),
        ...(process.env["STORE_SEED"] ? { seed: Number(process.env["STORE_SEED"]), path: process.env["STORE_PATH"] } : {}),
      },
    );
  });
});
