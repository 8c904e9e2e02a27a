// The snapshot archive codec (storage/archive.ts): the record layout stream snapshots have
// always used, frames and their checks, and store snapshots from a memory store into a file
// store (the contract suite covers the other directions).
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { inflateRawSync } from "node:zlib";
import {
  ARCHIVE_MAGIC,
  ArchiveDecoder,
  REC_MSG,
  REC_MSG_TTL,
  StoreSnapshotDecoder,
  StoreSnapshotReader,
  decodeMsgRecord,
  encodeFrame,
  encodeJsonRecord,
  encodeMsgRecord,
  encodeStoreSnapshot,
} from "../../src/storage/archive.js";
import { createMemoryStreamStore, openFileStreamStore } from "../../src/storage/index.js";
import { ManualClock } from "../../src/runtime/clock.js";
import { SimFs } from "../helpers/simfs.js";
import { assertSameStore, syncP, T0 } from "../helpers/storage-contract.js";

const HDR = Buffer.from("NATS/1.0\r\nNats-TTL: 5s\r\n\r\n");

void describe("snapshot archive codec", () => {
  void it("MSG records keep the stream snapshot layout byte for byte", () => {
    const data = Buffer.from([1, 2, 3]);
    const r = encodeMsgRecord(7, T0 + 5, "a.b", HDR, data);
    const body = Buffer.alloc(26 + 3 + HDR.length + 3);
    body.writeDoubleLE(7, 0);
    body.writeDoubleLE(T0 + 5, 8);
    body.writeUInt16LE(3, 16);
    body.writeUInt32LE(HDR.length, 18);
    body.writeUInt32LE(3, 22);
    body.write("a.b", 26);
    HDR.copy(body, 29);
    data.copy(body, 29 + HDR.length);
    const want = Buffer.concat([Buffer.from([REC_MSG]), Buffer.alloc(4), body]);
    want.writeUInt32LE(body.length, 1);
    assert.deepEqual(r, want);
    // no header: 0xffffffff; a TTL is left out unless asked for
    const n = encodeMsgRecord(8, T0, "x", null, Buffer.alloc(0), 30);
    assert.equal(n[0], REC_MSG);
    assert.equal(n.readUInt32LE(5 + 18), 0xffffffff);
    const t = encodeMsgRecord(8, T0, "x", null, Buffer.alloc(0), 30, true);
    assert.equal(t[0], REC_MSG_TTL);
    assert.deepEqual(decodeMsgRecord(t.subarray(5), true), { seq: 8, tsNs: T0, subject: "x", hdr: null, data: Buffer.alloc(0), ttlSec: 30 });
    assert.throws(() => decodeMsgRecord(t.subarray(5), false), /corrupt snapshot message record/);
  });

  void it("frames: deflated, length and CRC checked, records handed over in order", () => {
    const raw = Buffer.concat([encodeJsonRecord(1, { a: 1 }), encodeMsgRecord(1, T0, "s", null, Buffer.from("x")), encodeJsonRecord(4, {})]);
    const f = encodeFrame(raw);
    assert.equal(f.readUInt32LE(0), f.length - 12);
    assert.equal(f.readUInt32LE(4), raw.length);
    assert.deepEqual(inflateRawSync(f.subarray(12)), raw);
    const kinds: number[] = [];
    const dec = new ArchiveDecoder((k) => kinds.push(k));
    const all = Buffer.concat([ARCHIVE_MAGIC, f]);
    for (let p = 0; p < all.length; p += 5) dec.push(all.subarray(p, p + 5));
    assert.deepEqual(kinds, [1, 2, 4]);
    assert.ok(dec.complete);
    assert.throws(() => dec.push(f), /data after the end of the snapshot/);
    assert.throws(() => new ArchiveDecoder(() => {}).push(Buffer.from("NOTASNAPSHOT")), /not a tsnats snapshot/);
    const bad = Buffer.from(f);
    bad.writeUInt32LE((bad.readUInt32LE(8) ^ 1) >>> 0, 8);
    assert.throws(() => new ArchiveDecoder(() => {}).push(Buffer.concat([ARCHIVE_MAGIC, bad])), /checksum mismatch/);
  });

  void it("a memory store snapshot restores into a file store, identical also after reopen", async () => {
    const src = createMemoryStreamStore(null, null);
    src.skipMsgs(1, 4, T0);
    for (let i = 5; i <= 60; i++) src.storeMsg(`k.${i % 5}`, i % 3 === 0 ? HDR : null, Buffer.alloc(i, i), T0 + i * 1000, i % 3 === 0 ? 5 : 0);
    src.storeMsgAt(100, "k.x", null, Buffer.from("jump"), T0 + 10, 3600);
    for (const q of [5, 6, 30, 31, 32, 60]) src.removeMsg(q);
    src.skipMsgs(101, 9, T0 + 2e6);
    const fs = new SimFs();
    const open = async () => (await openFileStreamStore({ dir: "/r", fs, clock: new ManualClock(), blockSizeBytes: 700 })).store;
    let dst = await open();
    const dec = new StoreSnapshotDecoder(dst);
    for (const chunk of encodeStoreSnapshot(new StoreSnapshotReader(src))) dec.push(chunk);
    dec.end();
    assert.equal(dec.state?.lastSeq, 109);
    assertSameStore(src, dst, "restored");
    await syncP(dst);
    await dst.close();
    dst = await open();
    assertSameStore(src, dst, "reopened");
    assert.equal(dst.state().lastTsNs, T0 + 2e6);
    await dst.close();
  });
});
