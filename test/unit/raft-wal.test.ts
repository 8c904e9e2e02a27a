// The shared Raft WAL (src/raft/wal.ts) on the simulated disk: replay, group commit, torn
// and corrupted tails, rotation and segment deletion; plus CRC32C and snapshot files.
import { test } from "node:test";
import assert from "node:assert/strict";
import { SimFs } from "../helpers/simfs.js";
import { systemScheduler } from "../../src/runtime/sched.js";
import { SeededRandom } from "../../src/runtime/random.js";
import { Wal } from "../../src/raft/wal.js";
import { crc32c } from "../../src/raft/crc32c.js";
import { type Entry, EntryType } from "../../src/raft/types.js";
import { decodeSnapshot, encodeSnapshot, loadSnapshotFile, saveSnapshotFile } from "../../src/raft/snapfile.js";

const DIR = "/data/raft";
const enc = new TextEncoder();
const ent = (term: number, index: number, s = `e${index}`): Entry => ({ term, index, type: EntryType.Normal, data: enc.encode(s) });
const sync = (w: Wal): Promise<void> => new Promise((res, rej) => w.sync((e) => (e ? rej(e) : res())));
const open = (fs: SimFs, segmentBytes?: number): Wal => Wal.open(fs, DIR, systemScheduler, { segmentBytes });
const indexes = (es: Entry[] | undefined): string => (es ?? []).map((e) => `${e.term}.${e.index}`).join(" ");

void test("crc32c: standard check values", () => {
  assert.equal(crc32c(enc.encode("123456789")), 0xe3069283);
  assert.equal(crc32c(new Uint8Array(32)), 0x8a9136aa);
  const x = enc.encode("The quick brown fox jumps over the lazy dog");
  assert.equal(crc32c(x, 10, x.length, crc32c(x, 0, 10)), crc32c(x));
});

void test("wal: entries and hard state of several groups replay after a restart", async () => {
  const fs = new SimFs();
  const w = open(fs);
  w.appendEntries("g1", [ent(1, 1), ent(1, 2)]);
  w.appendEntries("g2", [ent(3, 1)]);
  w.setHardState("g1", { term: 1, vote: "a", commit: 2 });
  w.setHardState("g2", { term: 3, vote: "", commit: 0 });
  await sync(w);
  // A new leader rewrote g1 from index 2.
  w.appendEntries("g1", [ent(2, 2, "x"), ent(2, 3)]);
  await sync(w);
  w.close();
  fs.crash();
  const r = open(fs).recoveredGroups();
  assert.equal(indexes(r.get("g1")?.entries), "1.1 2.2 2.3");
  assert.equal(new TextDecoder().decode(r.get("g1")!.entries[1]!.data), "x");
  assert.deepEqual(r.get("g1")!.hardState, { term: 1, vote: "a", commit: 2 });
  assert.equal(indexes(r.get("g2")?.entries), "3.1");
  assert.deepEqual(r.get("g2")!.hardState, { term: 3, vote: "", commit: 0 });
});

void test("wal: group commit, one fsync covers every group synced in the same turn", async () => {
  const fs = new SimFs();
  const w = open(fs);
  const before = w.stats.fsyncs;
  const ps: Array<Promise<void>> = [];
  for (let g = 0; g < 50; g++) {
    w.appendEntries(`g${g}`, [ent(1, 1)]);
    ps.push(sync(w));
  }
  await Promise.all(ps);
  assert.equal(w.stats.fsyncs - before, 1);
  // Writes arriving while an fsync runs share the next one.
  const a = sync((w.appendEntries("g1", [ent(1, 2)]), w));
  await new Promise((r) => setImmediate(r));
  for (let g = 0; g < 10; g++) {
    w.appendEntries(`g${g}`, [ent(1, 3)]);
    ps.push(sync(w));
  }
  await a;
  await Promise.all(ps);
  assert.ok(w.stats.fsyncs - before <= 3, `fsyncs ${w.stats.fsyncs - before}`);
});

void test("wal: a crash loses only what was never synced", async () => {
  const fs = new SimFs();
  const w = open(fs);
  w.appendEntries("g", [ent(1, 1), ent(1, 2)]);
  await sync(w);
  w.appendEntries("g", [ent(1, 3)]);
  w.sync(() => undefined); // the write reaches the page cache, the fsync never completes
  await Promise.resolve();
  fs.crash();
  const w2 = open(fs);
  assert.equal(indexes(w2.recoveredGroups().get("g")?.entries), "1.1 1.2");
  assert.equal(w2.corrupt, null);
});

void test("wal: torn tails at random cut points are truncated and never taken for corruption", async () => {
  for (let seed = 1; seed <= 60; seed++) {
    const rnd = new SeededRandom(seed);
    const fs = new SimFs();
    const w = open(fs);
    w.appendEntries("g", [ent(1, 1), ent(1, 2)]);
    await sync(w);
    // Unsynced writes of several flushes (one per turn), then a power cut that keeps a random
    // prefix of them and tears the next at a random byte.
    for (let i = 3; i < 8; i++) {
      w.appendEntries("g", [ent(1, i, "y".repeat(rnd.int(300)))]);
      w.setHardState("g", { term: 1, vote: "", commit: i - 1 });
      w.sync(() => undefined);
      await Promise.resolve();
    }
    fs.crash({ tear: true, random: () => rnd.next() });
    const w2 = open(fs);
    assert.equal(w2.corrupt, null, `seed ${seed}`);
    const got = w2.recoveredGroups().get("g")!.entries;
    assert.ok(got.length >= 2, `seed ${seed}: synced entries kept`);
    got.forEach((e, k) => assert.equal(e.index, k + 1));
    // And the WAL is usable afterwards.
    w2.appendEntries("g", [ent(2, got.length + 1)]);
    await sync(w2);
    w2.close();
    fs.crash();
    assert.equal(open(fs).recoveredGroups().get("g")!.entries.length, got.length + 1);
  }
});

void test("wal: a bad checksum before the tail is reported as corruption, replay stops there", async () => {
  const fs = new SimFs();
  const w = open(fs);
  w.appendEntries("g", [ent(1, 1), ent(1, 2), ent(1, 3)]);
  await sync(w);
  w.close();
  const seg = `${DIR}/${w.segmentNames()[0]}`;
  // Flip a byte inside the payload of the second record.
  const data = fs.readFile(seg)!;
  const first = 8 + data.readUInt32LE(0);
  fs.corrupt(seg, first + 8 + 20); // the first payload byte of record 2
  const w2 = open(fs);
  assert.ok(w2.corrupt !== null);
  assert.match(w2.corrupt.reason, /checksum/);
  assert.equal(indexes(w2.recoveredGroups().get("g")?.entries), "1.1");
});

void test("wal: a flipped bit in the last record is a torn tail (cut, not corruption)", async () => {
  const fs = new SimFs();
  const w = open(fs);
  w.appendEntries("g", [ent(1, 1), ent(1, 2)]);
  await sync(w);
  w.close();
  const seg = `${DIR}/${w.segmentNames()[0]}`;
  const len = fs.readFile(seg)!.length;
  fs.corrupt(seg, len - 1);
  const w2 = open(fs);
  assert.equal(w2.corrupt, null);
  assert.ok(w2.tornBytes > 0);
  assert.equal(indexes(w2.recoveredGroups().get("g")?.entries), "1.1");
});

void test("wal: segments rotate, and are deleted once every group's snapshot passed them", async () => {
  const fs = new SimFs();
  const w = open(fs, 512);
  for (let i = 1; i <= 40; i++) {
    w.appendEntries("a", [ent(1, i)]);
    if (i <= 10) w.appendEntries("b", [ent(1, i)]);
    w.setHardState("a", { term: 1, vote: "x", commit: i });
    await sync(w);
  }
  const segs = w.segmentNames().length;
  assert.ok(segs > 3, `rotated into ${segs} segments`);
  w.markSnapshot("a", 30, 1);
  await sync(w);
  assert.equal(w.releaseSegments(), 0, "group b still needs the first segment");
  w.markSnapshot("b", 10, 1);
  await sync(w);
  const deleted = w.releaseSegments();
  assert.ok(deleted > 0);
  assert.equal(w.stats.segmentsDeleted, deleted);
  w.close();
  fs.crash();
  const w2 = open(fs);
  assert.equal(w2.corrupt, null);
  const a = w2.recoveredGroups().get("a")!;
  assert.equal(a.snapIndex, 30);
  assert.equal(indexes(a.entries), Array.from({ length: 10 }, (_, k) => `1.${31 + k}`).join(" "));
  assert.deepEqual(a.hardState, { term: 1, vote: "x", commit: 40 }, "hard state survives in the checkpoints");
  assert.equal(w2.recoveredGroups().get("b")!.snapIndex, 10);
  assert.equal(w2.recoveredGroups().get("b")!.entries.length, 0);
});

void test("wal: a failed fsync fails every waiter and every later sync", async () => {
  const fs = new SimFs();
  const w = open(fs);
  w.appendEntries("g", [ent(1, 1)]);
  fs.failNextFsync = Object.assign(new Error("EIO"), { code: "EIO" });
  await assert.rejects(sync(w), /EIO/);
  w.appendEntries("g", [ent(1, 2)]);
  await assert.rejects(sync(w), /EIO/);
});

void test("snapshot files: round trip, crash-safe replace, checksum", () => {
  const fs = new SimFs();
  fs.mkdirp(DIR);
  const s = { index: 2 ** 40 + 7, term: 9, voters: ["n1", "n2", "n3"], data: enc.encode("state") };
  assert.deepEqual(decodeSnapshot(encodeSnapshot(s)), s);
  saveSnapshotFile(fs, DIR, "S-R3F-abc", s);
  fs.crash();
  assert.deepEqual(loadSnapshotFile(fs, DIR, "S-R3F-abc"), s);
  assert.equal(loadSnapshotFile(fs, DIR, "other"), null);
  const b = encodeSnapshot(s);
  b[b.length - 1]! ^= 1;
  assert.match(String(decodeSnapshot(b)), /checksum/);
});

void test("wal: after corruption the segments past it are kept untouched, new writes go to a fresh one", async () => {
  const fs = new SimFs();
  const w = open(fs, 256);
  for (let i = 1; i <= 30; i++) {
    w.appendEntries("g", [ent(1, i)]);
    await sync(w);
  }
  w.close();
  const names = w.segmentNames();
  assert.ok(names.length >= 3);
  const sizes = names.map((n) => fs.readFile(`${DIR}/${n}`)!.length);
  fs.corrupt(`${DIR}/${names[0]}`, 20);
  const w2 = open(fs, 256);
  assert.ok(w2.corrupt !== null);
  names.forEach((n, k) => assert.equal(fs.readFile(`${DIR}/${n}`)!.length, k === 0 ? sizes[0] : sizes[k], n));
  const fresh = w2.segmentNames().at(-1)!;
  assert.ok(fresh > names.at(-1)!, `${fresh} after ${names.at(-1)}`);
});
