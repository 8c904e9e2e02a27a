// Crash tests on the simulated disk: whatever a sync() acknowledged survives a power cut bit
// for bit, acknowledged removals stay removed, and nothing comes back twice.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import { SimFs } from "../helpers/simfs.js";
import { openFileConsumerStore, openFileStreamStore } from "../../src/storage/index.js";
import { ManualClock } from "../../src/runtime/clock.js";
import type { StoreLimits } from "../../src/storage/types.js";
import { sampleConsumerState, syncP, T0 } from "../helpers/storage-contract.js";

const DIR = "/js/stream";
const noLimits: StoreLimits = { maxMsgs: -1, maxBytes: -1, maxAgeMs: 0, maxMsgsPerSubject: -1 };

function payload(seq: number, len: number): Buffer {
  const b = Buffer.alloc(8 + len);
  b.writeUInt32LE(seq, 0);
  for (let i = 4; i < b.length; i++) b[i] = (seq * 31 + i) & 0xff;
  return b;
}

function seeded(seed: number): () => number {
  let x = seed >>> 0 || 1;
  return () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return (x >>> 0) / 4294967296;
  };
}

async function open(fs: SimFs, limits: StoreLimits = noLimits, blockSizeBytes = 1024) {
  return openFileStreamStore({ dir: DIR, fs, clock: new ManualClock(), limits, blockSizeBytes });
}

const turn = () => new Promise<void>((r) => setImmediate(r));

type CrashOp =
  | { op: "store"; n: number; len: number; subj: number }
  | { op: "sync" }
  | { op: "remove"; pick: number }
  | { op: "purgeSubj"; subj: number }
  | { op: "purgeAll" }
  | { op: "purgeKeep"; keep: number }
  | { op: "compact"; ahead: number }
  | { op: "turn" };

const crashOpArb: fc.Arbitrary<CrashOp> = fc.oneof(
  { weight: 6, arbitrary: fc.record({ op: fc.constant("store" as const), n: fc.integer({ min: 1, max: 20 }), len: fc.nat(100), subj: fc.nat(3) }) },
  { weight: 3, arbitrary: fc.constant({ op: "sync" as const }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant("remove" as const), pick: fc.nat(1000) }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant("purgeSubj" as const), subj: fc.nat(3) }) },
  { weight: 1, arbitrary: fc.constant({ op: "purgeAll" as const }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant("purgeKeep" as const), keep: fc.integer({ min: 1, max: 30 }) }) },
  // compact to a sequence this far back from the end (negative: past the end)
  { weight: 1, arbitrary: fc.record({ op: fc.constant("compact" as const), ahead: fc.integer({ min: -5, max: 60 }) }) },
  { weight: 2, arbitrary: fc.constant({ op: "turn" as const }) },
);

void describe("file store crash safety (simfs)", () => {
  void it("keeps every synced message bit for bit after a crash, drops only unsynced ones", async () => {
    for (const tear of [false, true]) {
      const fs = new SimFs();
      const { store } = await open(fs);
      for (let i = 1; i <= 200; i++) store.storeMsg(`s.${i % 4}`, null, payload(i, i % 50), T0 + i, 0);
      await syncP(store);
      for (let i = 201; i <= 260; i++) store.storeMsg(`s.${i % 4}`, null, payload(i, i % 50), T0 + i, 0);
      await turn(); // the write may happen, the fsync has not completed
      fs.crash({ tear, random: seeded(7) });
      const { store: s2 } = await open(fs);
      const st = s2.state();
      assert.ok(st.lastSeq >= 200 && st.lastSeq <= 260, `lastSeq ${st.lastSeq}`);
      assert.equal(st.firstSeq, 1);
      assert.equal(st.msgs, st.lastSeq, "no gaps: the log is a prefix");
      for (let i = 1; i <= st.lastSeq; i++) {
        const m = s2.loadMsg(i);
        assert.ok(m, `seq ${i} present`);
        assert.ok(m.data.equals(payload(i, i % 50)), `seq ${i} intact`);
        assert.equal(m.subject, `s.${i % 4}`);
      }
      // the stream continues right after what survived
      assert.equal(s2.storeMsg("s.0", null, payload(999, 1), T0, 0), st.lastSeq + 1);
      await s2.close();
    }
  });

  void it("survives random workloads with crashes at random points (property)", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(crashOpArb, { minLength: 1, maxLength: 40 }), fc.boolean(), fc.integer({ min: 1, max: 1e9 }), fc.boolean(), async (ops, tear, seed, limited) => {
        const fs = new SimFs();
        const limits = limited ? { ...noLimits, maxMsgs: 40 } : noLimits;
        const { store: s } = await open(fs, limits, 700);
        const stored = new Map<number, { subject: string; data: Buffer }>();
        const removed = new Set<number>();
        const durable = new Set<number>(); // stored and covered by a completed sync
        const durablyRemoved = new Set<number>();
        const pendingSyncs: Promise<void>[] = [];
        const onSync = (stores: number[], removes: number[]) => () => {
          for (const q of stores) durable.add(q);
          for (const q of removes) durablyRemoved.add(q);
        };
        let unsyncedStores: number[] = [];
        let unsyncedRemoves: number[] = [];
        const removeOne = (q: number) => {
          removed.add(q);
          unsyncedRemoves.push(q);
        };
        for (const o of ops) {
          switch (o.op) {
            case "store":
              for (let k = 0; k < o.n; k++) {
                const subject = `t.${o.subj}`;
                const seq = s.state().lastSeq;
                const data = payload(seq + 1, o.len);
                const got = s.storeMsg(subject, null, data, T0 + seq, 0);
                assert.equal(got, seq + 1);
                stored.set(got, { subject, data });
                unsyncedStores.push(got);
              }
              // limit removals are removals too
              for (const q of stored.keys()) if (!removed.has(q) && s.loadMsg(q) === null) removeOne(q);
              break;
            case "sync":
              pendingSyncs.push(syncP(s).then(onSync(unsyncedStores, unsyncedRemoves)));
              unsyncedStores = [];
              unsyncedRemoves = [];
              break;
            case "remove": {
              const live = [...stored.keys()].filter((q) => !removed.has(q));
              if (live.length === 0) break;
              const q = live[o.pick % live.length] as number;
              assert.equal(s.removeMsg(q), true);
              removeOne(q);
              break;
            }
            case "purgeSubj":
              s.purge({ subject: `t.${o.subj}` });
              for (const [q, v] of stored) if (!removed.has(q) && v.subject === `t.${o.subj}`) removeOne(q);
              break;
            case "purgeAll":
              s.purge({});
              for (const q of stored.keys()) if (!removed.has(q)) removeOne(q);
              break;
            case "purgeKeep": {
              const last = s.state().lastSeq;
              const live = [...stored.keys()].filter((q) => !removed.has(q));
              s.purge({ keep: o.keep });
              if (o.keep < live.length) for (const q of live) if (q < last - o.keep + 1) removeOne(q);
              break;
            }
            case "compact": {
              const to = Math.max(1, s.state().lastSeq + 1 - o.ahead);
              s.compact(to);
              for (const q of stored.keys()) if (!removed.has(q) && q < to) removeOne(q);
              break;
            }
            case "turn":
              await turn();
              break;
          }
        }
        await turn();
        fs.crash({ tear, random: seeded(seed) });
        await Promise.allSettled(pendingSyncs);
        const { store: r } = await open(fs, limits, 700);
        const st = r.state();
        for (const q of durable) {
          if (removed.has(q)) continue; // removal not synced may or may not survive
          const m = r.loadMsg(q);
          assert.ok(m, `acknowledged seq ${q} lost`);
          assert.ok(m.data.equals((stored.get(q) as { data: Buffer }).data), `seq ${q} damaged`);
        }
        for (const q of durablyRemoved) assert.equal(r.loadMsg(q), null, `acknowledged removal of ${q} undone`);
        for (let q = st.firstSeq; q <= st.lastSeq; q++) {
          const m = r.loadMsg(q);
          if (m === null) continue;
          const want = stored.get(q);
          assert.ok(want, `seq ${q} never stored`);
          assert.ok(m.data.equals(want.data), `seq ${q} content`);
        }
        const maxDurable = Math.max(0, ...durable);
        assert.ok(st.lastSeq >= maxDurable, `lastSeq ${st.lastSeq} < acknowledged ${maxDurable}`);
        assert.equal(r.storeMsg("t.0", null, Buffer.from("x"), T0, 0), st.lastSeq + 1);
        await r.close();
      }),
      {
        numRuns: Number(process.env["STORE_PROPERTY_RUNS"] ?? 150),
        examples: [
          // Compaction of the block holding the only synced floor dropped it, and its rewrite was
          // durable before the new floor: purged messages came back after the crash.
          [
            [
              { op: "store", n: 9, len: 13, subj: 0 },
              { op: "purgeSubj", subj: 0 },
              { op: "store", n: 1, len: 0, subj: 0 },
              { op: "sync" },
              { op: "store", n: 3, len: 68, subj: 0 },
              { op: "turn" },
              { op: "remove", pick: 13 },
              { op: "purgeSubj", subj: 0 },
              { op: "store", n: 4, len: 20, subj: 0 },
              { op: "remove", pick: 0 },
            ],
            false,
            1,
            false,
          ],
        ],
        ...(process.env["STORE_SEED"] ? { seed: Number(process.env["STORE_SEED"]), path: process.env["STORE_PATH"] } : {}),
      },
    );
  });

  void it("keeps stream state when every message and block is gone", async () => {
    const fs = new SimFs();
    const { store } = await open(fs, noLimits, 256);
    for (let i = 1; i <= 50; i++) store.storeMsg("a", null, payload(i, 20), T0 + i, 0);
    store.purge({});
    await syncP(store);
    await syncP(store); // unlinks happen after the purge's floor is synced
    fs.crash();
    const { store: s2 } = await open(fs, noLimits, 256);
    assert.equal(s2.state().firstSeq, 51);
    assert.equal(s2.state().lastSeq, 50);
    assert.equal(s2.state().msgs, 0);
    assert.ok(s2.blockCount() <= 2, `blocks reclaimed: ${s2.blockCount()}`);
    await s2.close();
  });

  void it("an fsync failure fails the waiting syncs and later ones", async () => {
    const fs = new SimFs();
    const { store } = await open(fs);
    store.storeMsg("a", null, Buffer.from("x"), T0, 0);
    fs.failNextFsync = new Error("EIO");
    await assert.rejects(syncP(store), /EIO/);
    await assert.rejects(syncP(store), /EIO/);
    assert.throws(() => store.storeMsg("a", null, Buffer.from("y"), T0, 0), /EIO/);
    await store.close();
  });

  void it("consumer state: the last synced snapshot survives a crash", async () => {
    for (const tear of [false, true]) {
      const fs = new SimFs();
      const c = await openFileConsumerStore({ dir: "/js/c", fs });
      c.writeConfig('{"name":"c"}');
      c.update(sampleConsumerState(3));
      await syncP(c);
      c.update(sampleConsumerState(8));
      await turn();
      fs.crash({ tear, random: seeded(3) });
      const c2 = await openFileConsumerStore({ dir: "/js/c", fs });
      const got = c2.load();
      assert.ok(got);
      const n = got.pending.size;
      assert.ok(n === 3 || n === 8, `state is one of the snapshots (pending ${n})`);
      assert.deepEqual(got, sampleConsumerState(n));
      assert.equal(c2.readConfig(), '{"name":"c"}');
      await c2.close();
    }
  });
});

