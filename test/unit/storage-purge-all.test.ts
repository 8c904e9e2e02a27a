// A purge of everything (STREAM.PURGE with no options): no work per message, every block dies
// at once, a floor record says all is gone, and the dead files are unlinked after a fsync
// covers that floor, off the event loop. A power cut at any step of it (each write, fsync,
// rename, unlink and fsync completion, on the simulated disk, with torn writes) leaves either
// the state before the purge (only while the purge's sync is unanswered) or the purged state,
// never a mix; once the sync after the purge has answered, always the purged one.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { SimFs } from "../helpers/simfs.js";
import { createMemoryStreamStore, openFileStreamStore } from "../../src/storage/index.js";
import { ManualClock } from "../../src/runtime/clock.js";
import type { StreamStore, StreamStoreState } from "../../src/storage/types.js";
import { T0, syncP } from "../helpers/storage-contract.js";

const DIR = "/js/purge";
const turn = (): Promise<void> => new Promise<void>((r) => setImmediate(r));

function eio(): Error {
  return Object.assign(new Error("EIO: the disk is gone (simulated power cut)"), { code: "EIO" });
}

/** A SimFs that loses power at its crashAt-th mutating step (a write, truncate, open, rename,
 *  unlink, the start or the completion of an fsync); after that every call fails until
 *  revive(). withAsyncUnlink: unlinkAsync runs a turn later, as on the thread pool. */
class CrashAtFs extends SimFs {
  steps = 0;
  crashAt = -1;
  dead = false;
  private readonly rnd: () => number;
  unlinkAsync?: (path: string, cb: (err: Error | null) => void) => void;

  constructor(seed: number, withAsyncUnlink: boolean) {
    super();
    let x = seed >>> 0 || 1;
    this.rnd = () => {
      x ^= x << 13;
      x ^= x >>> 17;
      x ^= x << 5;
      return (x >>> 0) / 4294967296;
    };
    if (withAsyncUnlink) {
      this.unlinkAsync = (path, cb) => {
        setImmediate(() => {
          try {
            this.step();
            super.unlink(path);
            cb(null);
          } catch (e) {
            cb(e as Error);
          }
        });
      };
    }
  }

  private step(): void {
    if (this.dead) throw eio();
    if (++this.steps === this.crashAt) {
      this.crash({ tear: true, random: this.rnd });
      this.dead = true;
      throw eio();
    }
  }

  revive(): void {
    this.dead = false;
    this.crashAt = -1;
  }

  override open(path: string, mode: "r" | "rw"): number {
    if (mode === "rw") this.step();
    else if (this.dead) throw eio();
    return super.open(path, mode);
  }
  override write(fd: number, buf: Buffer, off: number, len: number, pos: number): void {
    this.step();
    super.write(fd, buf, off, len, pos);
  }
  override truncate(fd: number, len: number): void {
    this.step();
    super.truncate(fd, len);
  }
  override rename(from: string, to: string): void {
    this.step();
    super.rename(from, to);
  }
  override unlink(path: string): void {
    this.step();
    super.unlink(path);
  }
  override fsyncSync(fd: number): void {
    this.step();
    super.fsyncSync(fd);
  }
  override fsyncDirSync(path: string): void {
    this.step();
    super.fsyncDirSync(path);
  }
  override fsync(fd: number, cb: (err: Error | null) => void): void {
    try {
      this.step();
    } catch (e) {
      setImmediate(cb, e as Error);
      return;
    }
    super.fsync(fd, (err) => this.completion(err, cb));
  }
  override fsyncDir(path: string, cb: (err: Error | null) => void): void {
    try {
      this.step();
    } catch (e) {
      setImmediate(cb, e as Error);
      return;
    }
    super.fsyncDir(path, (err) => this.completion(err, cb));
  }
  private completion(err: Error | null, cb: (err: Error | null) => void): void {
    if (err !== null) return cb(err);
    try {
      this.step();
    } catch (e) {
      return cb(e as Error);
    }
    cb(null);
  }
  override read(fd: number, buf: Buffer, off: number, len: number, pos: number): number {
    if (this.dead) throw eio();
    return super.read(fd, buf, off, len, pos);
  }
  override fsize(fd: number): number {
    if (this.dead) throw eio();
    return super.fsize(fd);
  }
}

interface Seen {
  state: StreamStoreState;
  deleted: number[];
  msgs: Array<[number, string, string]>;
}

function seen(s: StreamStore): Seen {
  const st = s.state();
  const msgs: Array<[number, string, string]> = [];
  for (let q = st.firstSeq; q <= st.lastSeq; q++) {
    const m = s.loadMsg(q);
    if (m !== null) msgs.push([m.seq, m.subject, m.data.toString("hex")]);
  }
  return { state: st, deleted: s.deletedSeqs(), msgs };
}

async function openOn(fs: SimFs) {
  return openFileStreamStore({ dir: DIR, fs, clock: new ManualClock(), blockSizeBytes: 1024 });
}

/** A stream of about a dozen blocks with interior deletes, all synced. */
async function populate(fs: SimFs): Promise<{ store: StreamStore; before: Seen }> {
  const { store } = await openOn(fs);
  for (let i = 1; i <= 120; i++) store.storeMsg(`p.${i % 4}`, i % 5 === 0 ? Buffer.from("NATS/1.0\r\n\r\n") : null, Buffer.alloc(40 + (i % 7), i), T0 + i, 0);
  for (const s of [7, 33, 34, 90]) store.removeMsg(s);
  await syncP(store);
  await syncP(store);
  return { store, before: seen(store) };
}

const LAST = 120;

function assertPurged(s: Seen, what: string): void {
  assert.equal(s.state.msgs, 0, what);
  assert.equal(s.state.bytes, 0, what);
  assert.equal(s.state.lastSeq, LAST, what);
  assert.equal(s.state.firstSeq, LAST + 1, what);
  assert.equal(s.state.lastTsNs, T0 + LAST, what);
  assert.deepEqual(s.deleted, [], what);
  assert.deepEqual(s.msgs, [], what);
}

/** Purge, answer the sync, let the unlinks run; crash at step crashAt (or never). Returns
 *  whether the purge's sync answered before the power cut, and the steps used. */
async function purgeAndCrash(fs: CrashAtFs, store: StreamStore, crashAt: number): Promise<{ acked: boolean; steps: number }> {
  fs.steps = 0;
  fs.crashAt = crashAt;
  assert.equal(store.purge({}), 116);
  let acked = false;
  store.sync((err) => {
    if (err === null && !fs.dead) acked = true;
  });
  for (let k = 0; k < 60 && !fs.dead; k++) await turn();
  const steps = fs.steps;
  if (!fs.dead) fs.crash({ tear: true });
  for (let k = 0; k < 5; k++) await turn(); // what the old store still had queued fails now
  fs.revive();
  return { acked, steps };
}

void describe("purge of everything", () => {
  for (const asyncUnlink of [false, true]) {
    void it(`a power cut at every step of a purge gives the state before it or the purged one (${asyncUnlink ? "async" : "sync"} unlink)`, async () => {
      // how many steps a whole purge takes
      const probe = new CrashAtFs(1, asyncUnlink);
      const { store: p0 } = await populate(probe);
      const { steps: total, acked: ackedProbe } = await purgeAndCrash(probe, p0, -1);
      assert.ok(ackedProbe, "the purge's sync answers");
      assert.ok(total >= 10, `a purge of a dozen blocks takes steps (${total})`);
      let sawBefore = 0;
      let sawPurged = 0;
      for (let at = 1; at <= total + 1; at++) {
        const fs = new CrashAtFs(at * 7919, asyncUnlink);
        const { store, before } = await populate(fs);
        const { acked } = await purgeAndCrash(fs, store, at);
        const { store: s2 } = await openOn(fs);
        const after = seen(s2);
        const what = `crash at step ${at} of ${total}, acked ${acked}`;
        if (after.state.msgs === 0) {
          assertPurged(after, what);
          sawPurged++;
        } else {
          assert.ok(!acked, `${what}: an answered purge came back`);
          assert.deepEqual(after, before, what);
          sawBefore++;
        }
        // the stream goes on from the last sequence, and a second purge works too
        assert.equal(s2.storeMsg("p.new", null, Buffer.from("n"), T0 + 1000, 0), LAST + 1, what);
        await syncP(s2);
        await s2.close();
        const { store: s3 } = await openOn(fs);
        assert.equal(s3.state().lastSeq, LAST + 1, what);
        assert.equal(s3.loadMsg(LAST + 1)?.data.toString(), "n", what);
        await s3.close();
      }
      assert.ok(sawBefore > 0 && sawPurged > 0, `both outcomes were reached (${sawBefore} before, ${sawPurged} purged)`);
    });
  }

  void it("the dead block files go once the floor is durable; recovery reads only what is left", async () => {
    const fs = new CrashAtFs(3, true);
    const { store } = await populate(fs);
    const blocksBefore = fs.readdir(DIR).filter((n) => n.endsWith(".blk")).length;
    assert.ok(blocksBefore >= 8, `blocks: ${blocksBefore}`);
    store.purge({});
    await syncP(store);
    for (let k = 0; k < 40 && fs.readdir(DIR).filter((n) => n.endsWith(".blk")).length > 1; k++) await turn();
    assert.deepEqual(
      fs.readdir(DIR).filter((n) => n.endsWith(".blk")),
      [`${blocksBefore + 1}.blk`],
    );
    await store.close();
    const { store: s2, report } = await openOn(fs);
    assert.equal(report.blocks, 1);
    assert.deepEqual(report.dropped, []);
    assertPurged(seen(s2), "reopened");
    await s2.close();
  });

  for (const kind of ["memory", "file"] as const) {
    void it(`after a purge of everything the index is as good as new (${kind})`, async () => {
      const fs = new SimFs();
      const store: StreamStore = kind === "memory" ? createMemoryStreamStore(null, null) : (await openOn(fs)).store;
      for (let i = 1; i <= 300; i++) store.storeMsg(`q.${i % 3}`, null, Buffer.from(`m${i}`), T0 + i, i % 10 === 0 ? 60 : 0);
      assert.equal(store.purge({}), 300);
      assert.equal(store.purge({}), 0);
      assert.deepEqual(store.subjectsState(">"), new Map());
      assert.equal(store.numPending(1, ">", false), 0);
      assert.equal(store.loadLastMsg("q.1"), null);
      assert.equal(store.loadNextMsg(">", 1), null);
      assert.equal(store.nextExpiryNs(), 0, "no TTL left behind");
      assert.equal(store.storeMsg("q.1", null, Buffer.from("a"), T0 + 400, 0), 301);
      assert.equal(store.storeMsg("q.2", null, Buffer.from("b"), T0 + 401, 0), 302);
      assert.equal(store.storeMsg("q.1", null, Buffer.from("c"), T0 + 402, 0), 303);
      assert.deepEqual(
        store.subjectsState(">"),
        new Map([
          ["q.1", { msgs: 2, first: 301, last: 303 }],
          ["q.2", { msgs: 1, first: 302, last: 302 }],
        ]),
      );
      assert.equal(store.numPending(302, "q.*", false), 2);
      assert.equal(store.loadLastMsg("q.1")?.data.toString(), "c");
      assert.equal(store.state().firstSeq, 301);
      assert.equal(store.state().msgs, 3);
      assert.equal(store.purge({ subject: "q.1" }), 2);
      assert.equal(store.state().firstSeq, 302);
      // compact past the end after a purge of everything: the stream restarts there
      assert.equal(store.compact(1000), 1);
      assert.equal(store.state().firstSeq, 1000);
      assert.equal(store.state().lastSeq, 999);
      await store.close();
      if (kind === "file") {
        const { store: s2 } = await openOn(fs);
        assert.equal(s2.state().firstSeq, 1000);
        assert.equal(s2.state().lastSeq, 999);
        assert.equal(s2.state().msgs, 0);
        await s2.close();
      }
    });
  }
});
