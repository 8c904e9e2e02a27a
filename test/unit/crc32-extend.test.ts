import { test } from "node:test";
import assert from "node:assert/strict";
import { crc32, crc32ExtendRecord, crc32Update } from "../../src/storage/file/crc32.js";
import { sealRecord } from "../../src/storage/file/record.js";
import { SummaryBuilder, SummaryReader } from "../../src/storage/file/summary.js";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openFileStreamStore } from "../../src/storage/index.js";
import { ManualClock } from "../../src/runtime/clock.js";
import { syncP, T0 } from "../helpers/storage-contract.js";

function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

/** n sealed records of random bytes and lengths (some tiny, some past the arithmetic bound). */
function records(r: () => number, n: number): Buffer {
  const parts: Buffer[] = [];
  for (let i = 0; i < n; i++) {
    const k = r();
    const len = k < 0.3 ? 36 + Math.floor(r() * 100) : k < 0.9 ? 192 + Math.floor(r() * 4000) : k < 0.97 ? 1060 : 70_000 + Math.floor(r() * 1000);
    const b = Buffer.alloc(len);
    for (let j = 4; j < len - 4; j++) b[j] = Math.floor(r() * 256);
    b.writeUInt32LE(len, 0);
    sealRecord(b, 0, len);
    parts.push(b);
  }
  return Buffer.concat(parts);
}

void test("crc32ExtendRecord equals reading the record: one record after any prefix", () => {
  const r = rng(11);
  for (let i = 0; i < 300; i++) {
    const prefix = Buffer.alloc(Math.floor(r() * 300));
    for (let j = 0; j < prefix.length; j++) prefix[j] = Math.floor(r() * 256);
    const rec = records(r, 1);
    if (rec.length > 65_536) continue;
    const want = crc32(Buffer.concat([prefix, rec]), 0, prefix.length + rec.length);
    assert.equal(crc32ExtendRecord(crc32(prefix, 0, prefix.length), rec.length), want, `case ${i}, record of ${rec.length}`);
  }
});

void test("SummaryBuilder.wroteRecords keeps the same block CRC as wrote(), in any split into writes", () => {
  const r = rng(5);
  for (let round = 0; round < 20; round++) {
    const buf = records(r, 40);
    const a = new SummaryBuilder();
    const b = new SummaryBuilder();
    // Split at record boundaries into a few writes, as flushes do.
    let p = 0;
    while (p < buf.length) {
      let q = p;
      const k = 1 + Math.floor(r() * 6);
      for (let j = 0; j < k && q < buf.length; j++) q += buf.readUInt32LE(q);
      a.wrote(buf, p, q);
      b.wroteRecords(buf, p, q);
      p = q;
    }
    assert.equal(b.crc, a.crc, `round ${round}`);
    assert.equal(b.covered, a.covered);
    assert.equal(a.crc, crc32Update(0, buf, 0, buf.length));
  }
});

void test("a file store of 1 KiB messages writes summaries whose block CRC matches the block bytes", async () => {
  const root = mkdtempSync(join(tmpdir(), "tsnats-crcext-"));
  const dir = join(root, "s");
  try {
    const limits = { maxMsgs: -1, maxBytes: -1, maxAgeMs: 0, maxMsgsPerSubject: -1 };
    const { store } = await openFileStreamStore({ dir, clock: new ManualClock(), blockSizeBytes: 64 * 1024, limits });
    for (let i = 1; i <= 400; i++) {
      store.storeMsg(`a.${i % 3}`, i % 7 === 0 ? Buffer.from("NATS/1.0\r\nX: y\r\n\r\n") : null, Buffer.alloc(i % 5 === 0 ? 20 : 1024, i & 0xff), T0 + i, 0);
      if (i % 50 === 0) await syncP(store); // several writes per block
    }
    store.removeMsg(77); // a tombstone among them
    await syncP(store);
    await store.close();
    const sums = readdirSync(dir).filter((n) => n.endsWith(".sum"));
    assert.ok(sums.length >= 5, `summaries: ${sums.length}`);
    for (const name of sums) {
      const sr = SummaryReader.open(readFileSync(join(dir, name)));
      assert.ok(sr !== null && sr.valid(), name);
      const blk = readFileSync(join(dir, name.replace(".sum", ".blk")));
      assert.equal(sr.covered, blk.length, name);
      assert.equal(sr.blockCrc, crc32(blk, 0, blk.length), `${name}: the CRC recovery checks`);
    }
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});
