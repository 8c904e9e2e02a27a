// Read windows of the file store are given back after a quiet spell, and reads go on working.
import { test } from "node:test";
import assert from "node:assert/strict";
import { openFileStreamStore } from "../../src/storage/index.js";
import { ManualClock } from "../../src/runtime/clock.js";
import { SimFs } from "../helpers/simfs.js";
import { syncP, T0 } from "../helpers/storage-contract.js";

const noLimits = { maxMsgs: -1, maxBytes: -1, maxAgeMs: 0, maxMsgsPerSubject: -1 };

void test("read windows unused for 5 s are released; reads after that still return the messages", async () => {
  const clock = new ManualClock();
  const fs = new SimFs();
  const { store } = await openFileStreamStore({ dir: "/js/s", fs, clock, limits: noLimits, blockSizeBytes: 256 * 1024 });
  const body = (i: number): Buffer => Buffer.alloc(1000, i & 0xff);
  for (let i = 1; i <= 1500; i++) store.storeMsg(`a.${i % 3}`, null, body(i), T0 + i, 0);
  await syncP(store);
  for (let q = 1; q <= 1500; q += 7) assert.deepEqual(store.loadMsg(q)?.data, body(q));
  assert.ok(store.readCacheBytes() > 0, "reads filled windows");
  clock.advance(5_000); // the first look sees reads since it was armed: keeps them
  assert.ok(store.readCacheBytes() > 0, "windows kept while reads go on");
  store.loadMsg(3);
  clock.advance(5_000);
  clock.advance(5_000); // a whole quiet period
  assert.equal(store.readCacheBytes(), 0, "windows given back");
  for (let q = 1; q <= 1500; q += 11) assert.deepEqual(store.loadMsg(q)?.data, body(q), `seq ${q} after the release`);
  assert.ok(store.readCacheBytes() > 0);
  await store.close();
});
