// Encryption at rest (src/storage/cryptfs.ts): CryptFs over the simulated disk and over the
// real one, the storage contract suite again through it for both ciphers, crash safety with
// encryption, wrong keys, prev_key rotation and plaintext conversion.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { SimFs } from "../helpers/simfs.js";
import { NodeFs, writeFileAtomicSync, type Fs } from "../../src/runtime/fs.js";
import { CryptFs, EncryptionKeyError, HEADER_BYTES, checkStoreEncryption, type StoreCipher } from "../../src/storage/cryptfs.js";
import { openFileConsumerStore, openFileStreamStore } from "../../src/storage/index.js";
import { ManualClock } from "../../src/runtime/clock.js";
import type { StoreLimits } from "../../src/storage/types.js";
import { consumerStoreContract, fileTarget, sampleConsumerState, streamStoreContract, syncP, T0 } from "../helpers/storage-contract.js";

const CIPHERS: StoreCipher[] = ["chachapoly", "aes"];
const KEY = "s3cret-key-one";
const KEY2 = "another-key-two";

function crypt(inner: Fs, cipher: StoreCipher = "chachapoly", key = KEY, prevKey = ""): CryptFs {
  return new CryptFs(inner, { cipher, key, prevKey });
}

function realRoot(): { root: string; cleanup(): void } {
  const root = mkdtempSync(join(tmpdir(), "tsnats-crypt-"));
  return { root, cleanup: () => rmSync(root, { recursive: true, force: true }) };
}

function contains(hay: Buffer, needle: Buffer): boolean {
  return hay.indexOf(needle) >= 0;
}

type Op = { op: "write"; pos: number; len: number; seed: number } | { op: "read"; pos: number; len: number } | { op: "truncate"; len: number } | { op: "reopen" };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 6, arbitrary: fc.record({ op: fc.constant("write" as const), pos: fc.nat(3000), len: fc.nat(700), seed: fc.nat(255) }) },
  { weight: 4, arbitrary: fc.record({ op: fc.constant("read" as const), pos: fc.nat(3500), len: fc.nat(900) }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant("truncate" as const), len: fc.nat(3500) }) },
  { weight: 1, arbitrary: fc.constant({ op: "reopen" as const }) },
);

function fill(len: number, seed: number): Buffer {
  const b = Buffer.allocUnsafe(len);
  for (let i = 0; i < len; i++) b[i] = (seed * 131 + i * 7) & 0xff;
  return b;
}

/** Random writes, reads and truncates against a model buffer. */
async function roundTrip(mk: () => { inner: Fs; dir: string; cleanup(): void }, cipher: StoreCipher, numRuns: number): Promise<void> {
  await fc.assert(
    fc.asyncProperty(fc.array(opArb, { minLength: 1, maxLength: 30 }), async (ops) => {
      const { inner, dir, cleanup } = mk();
      try {
        const fs = crypt(inner, cipher);
        fs.mkdirp(dir);
        const path = join(dir, "f.blk");
        let model = Buffer.alloc(0);
        let fd = fs.open(path, "rw");
        for (const o of ops) {
          if (o.op === "write") {
            // holes read as unspecified bytes (the stores never leave any): writes start
            // inside the file or at its end
            const pos = model.length === 0 ? 0 : o.pos % (model.length + 1);
            const data = fill(o.len, o.seed);
            fs.write(fd, data, 0, data.length, pos);
            const end = pos + o.len;
            if (o.len > 0 && end > model.length) {
              const nm = Buffer.alloc(end);
              model.copy(nm);
              model = nm;
            }
            if (o.len > 0) data.copy(model, pos);
          } else if (o.op === "read") {
            const b = Buffer.alloc(o.len + 3);
            const got = fs.read(fd, b, 3, o.len, o.pos);
            const want = model.subarray(Math.min(o.pos, model.length), Math.min(o.pos + o.len, model.length));
            assert.equal(got, want.length);
            assert.ok(b.subarray(3, 3 + got).equals(want), `read at ${o.pos}+${o.len}`);
          } else if (o.op === "truncate") {
            const len = o.len % (model.length + 1); // shrinking only: growing leaves a hole
            fs.truncate(fd, len);
            model = model.subarray(0, len);
          } else {
            fs.close(fd);
            fd = fs.open(path, "rw");
          }
          assert.equal(fs.fsize(fd), model.length);
        }
        fs.close(fd);
        assert.deepEqual(fs.stat(path), { size: model.length, isDir: false });
        const whole = fs.readFile(path);
        assert.ok(whole !== null && whole.equals(model), "readFile");
        // another instance with the same key reads it back too
        const again = crypt(inner, cipher).readFile(path);
        assert.ok(again !== null && again.equals(model));
        assert.equal((inner.stat(path) as { size: number }).size, model.length + HEADER_BYTES);
      } finally {
        cleanup();
      }
    }),
    { numRuns },
  );
}

void describe("CryptFs", () => {
  for (const cipher of CIPHERS) {
    void it(`${cipher}: random writes, reads and truncates round trip (simfs)`, async () => {
      await roundTrip(() => ({ inner: new SimFs(), dir: "/d", cleanup: () => {} }), cipher, 120);
    });
    void it(`${cipher}: random writes, reads and truncates round trip (real disk)`, async () => {
      await roundTrip(
        () => {
          const { root, cleanup } = realRoot();
          return { inner: new NodeFs(), dir: join(root, "d"), cleanup };
        },
        cipher,
        30,
      );
    });
  }

  void it("sequential appends and reads continue the running keystream and match one-shot writes", () => {
    const sim = new SimFs();
    sim.mkdirp("/d");
    const fs = crypt(sim);
    const fd = fs.open("/d/a", "rw");
    let pos = 0;
    const parts: Buffer[] = [];
    for (let i = 0; i < 200; i++) {
      const b = fill((i * 37) % 150, i);
      fs.write(fd, b, 0, b.length, pos);
      pos += b.length;
      parts.push(b);
    }
    const all = Buffer.concat(parts);
    const got = Buffer.alloc(all.length);
    let r = 0;
    while (r < all.length) r += fs.read(fd, got, r, Math.min(100, all.length - r), r);
    assert.ok(got.equals(all));
    fs.close(fd);
    assert.ok((fs.readFile("/d/a") as Buffer).equals(all));
  });

  void it("rename, unlink and writeFileAtomicSync keep files readable; nothing plain on disk", () => {
    for (const cipher of CIPHERS) {
      const sim = new SimFs();
      sim.mkdirp("/d");
      const fs = crypt(sim, cipher);
      const secret = Buffer.from("the-quick-brown-fox-payload-0123456789");
      writeFileAtomicSync(fs, "/d", "meta.json", secret);
      assert.ok((fs.readFile("/d/meta.json") as Buffer).equals(secret));
      fs.rename("/d/meta.json", "/d/other.json");
      assert.equal(fs.readFile("/d/meta.json"), null);
      assert.ok((fs.readFile("/d/other.json") as Buffer).equals(secret));
      const raw = sim.readFile("/d/other.json") as Buffer;
      assert.equal(raw.length, secret.length + HEADER_BYTES);
      assert.ok(!contains(raw, secret.subarray(0, 12)), "plaintext on disk");
      assert.equal(raw.subarray(0, 4).toString("latin1"), "TSNC");
      fs.unlink("/d/other.json");
      assert.equal(fs.stat("/d/other.json"), null);
    }
  });

  void it("the same plaintext in two files gives different ciphertext (per-file keys)", () => {
    const sim = new SimFs();
    sim.mkdirp("/d");
    const fs = crypt(sim);
    const data = fill(500, 3);
    writeFileAtomicSync(fs, "/d", "a", data);
    writeFileAtomicSync(fs, "/d", "b", data);
    const a = (sim.readFile("/d/a") as Buffer).subarray(HEADER_BYTES);
    const b = (sim.readFile("/d/b") as Buffer).subarray(HEADER_BYTES);
    assert.ok(!a.equals(b));
  });

  void it("a file without a header (crash before the first sync) reads as empty and gets one when written", () => {
    const sim = new SimFs();
    sim.mkdirp("/d");
    const fs = crypt(sim);
    // empty, a torn header, and a zero header with unsynced data after it
    sim.write(sim.open("/d/empty", "rw"), Buffer.alloc(0), 0, 0, 0);
    sim.write(sim.open("/d/torn", "rw"), Buffer.from("TSNC\x01\x01"), 0, 6, 0);
    const z = sim.open("/d/zero", "rw");
    sim.write(z, Buffer.alloc(HEADER_BYTES), 0, HEADER_BYTES, 0);
    sim.write(z, Buffer.from("garbage"), 0, 7, HEADER_BYTES);
    for (const p of ["/d/empty", "/d/torn", "/d/zero"]) {
      assert.equal((fs.readFile(p) as Buffer).length, 0, p);
      assert.equal(fs.stat(p)?.size, 0);
      const rfd = fs.open(p, "r");
      assert.equal(fs.fsize(rfd), 0);
      assert.equal(fs.read(rfd, Buffer.alloc(10), 0, 10, 0), 0);
      fs.close(rfd);
      const fd = fs.open(p, "rw");
      assert.equal(fs.fsize(fd), 0);
      fs.write(fd, Buffer.from("hello"), 0, 5, 0);
      fs.close(fd);
      assert.equal((fs.readFile(p) as Buffer).toString(), "hello");
    }
    assert.deepEqual(checkStoreEncryption(sim, "/d", fs), { files: 3, rotated: 0, converted: 0 });
  });

  void it("the header written at create is made durable by the first fsync of the file", () => {
    const sim = new SimFs();
    sim.mkdirp("/d");
    sim.fsyncDirSync("/");
    const fs = crypt(sim);
    const fd = fs.open("/d/x", "rw");
    fs.fsyncDirSync("/d");
    fs.write(fd, Buffer.from("acknowledged"), 0, 12, 0);
    fs.fsyncSync(fd);
    fs.write(fd, Buffer.from("-lost"), 0, 5, 12);
    sim.crash();
    assert.equal((crypt(sim).readFile("/d/x") as Buffer).toString(), "acknowledged");
  });

  void it("a wrong key is a clear error naming the file, and changes nothing", () => {
    for (const cipher of CIPHERS) {
      const sim = new SimFs();
      sim.mkdirp("/js/s");
      writeFileAtomicSync(crypt(sim, cipher), "/js/s", "meta.json", Buffer.from('{"a":1}'));
      const before = sim.readFile("/js/s/meta.json") as Buffer;
      const wrong = crypt(sim, cipher, "not-the-key");
      assert.throws(() => wrong.readFile("/js/s/meta.json"), (e: Error) => e instanceof EncryptionKeyError && /key does not match \/js\/s\/meta\.json/.test(e.message));
      assert.throws(() => wrong.open("/js/s/meta.json", "rw"), /key does not match/);
      assert.throws(() => checkStoreEncryption(sim, "/js", wrong), /encryption key does not match \/js\/s\/meta\.json/);
      // a wrong prev_key does not help either
      assert.throws(() => checkStoreEncryption(sim, "/js", crypt(sim, cipher, "x", "y")), /neither key nor prev_key/);
      assert.ok((sim.readFile("/js/s/meta.json") as Buffer).equals(before), "file changed");
      // no key at all: encrypted files are refused, not served
      assert.throws(() => checkStoreEncryption(sim, "/js", null), /is encrypted .* no jetstream encryption key/);
    }
  });

  void it("the configured cipher only applies to new files: files under the other cipher still open", () => {
    const sim = new SimFs();
    sim.mkdirp("/d");
    writeFileAtomicSync(crypt(sim, "aes"), "/d", "a", Buffer.from("under aes"));
    const cc = crypt(sim, "chachapoly");
    assert.equal((cc.readFile("/d/a") as Buffer).toString(), "under aes");
    writeFileAtomicSync(cc, "/d", "b", Buffer.from("under chacha"));
    assert.equal((sim.readFile("/d/b") as Buffer)[5], 1);
    assert.equal((sim.readFile("/d/a") as Buffer)[5], 2);
  });

  void it("prev_key: files are re-wrapped under the new key (header only), then the old key no longer opens them", () => {
    for (const cipher of CIPHERS) {
      const sim = new SimFs();
      sim.mkdirp("/js/s");
      const old = crypt(sim, cipher, KEY);
      writeFileAtomicSync(old, "/js/s", "meta.json", Buffer.from("meta-data"));
      const fd = old.open("/js/s/1.blk", "rw");
      old.write(fd, fill(1000, 9), 0, 1000, 0);
      old.fsyncSync(fd);
      old.close(fd);
      sim.fsyncDirSync("/js/s");
      const rawBefore = sim.readFile("/js/s/1.blk") as Buffer;
      const rot = crypt(sim, cipher, KEY2, KEY);
      assert.deepEqual(checkStoreEncryption(sim, "/js", rot), { files: 2, rotated: 2, converted: 0 });
      const rawAfter = sim.readFile("/js/s/1.blk") as Buffer;
      assert.ok(rawAfter.subarray(HEADER_BYTES).equals(rawBefore.subarray(HEADER_BYTES)), "only the header changes");
      assert.ok(!rawAfter.subarray(0, HEADER_BYTES).equals(rawBefore.subarray(0, HEADER_BYTES)));
      sim.crash(); // the re-wrap was durable
      const only = crypt(sim, cipher, KEY2);
      assert.deepEqual(checkStoreEncryption(sim, "/js", only), { files: 2, rotated: 0, converted: 0 });
      assert.ok((only.readFile("/js/s/1.blk") as Buffer).equals(fill(1000, 9)));
      assert.equal((only.readFile("/js/s/meta.json") as Buffer).toString(), "meta-data");
      assert.throws(() => checkStoreEncryption(sim, "/js", crypt(sim, cipher, KEY)), EncryptionKeyError);
    }
  });

  void it("a plaintext store is encrypted in place when a key is configured", async () => {
    const sim = new SimFs();
    const dir = "/js/s/msgs";
    const { store } = await openFileStreamStore({ dir, fs: sim, clock: new ManualClock(), blockSizeBytes: 512 });
    const secret = "plaintext-payload-xyzzy";
    for (let i = 0; i < 40; i++) store.storeMsg(`a.${i % 3}`, null, Buffer.from(`${secret}-${i}`), T0 + i, 0);
    await syncP(store);
    await store.close();
    writeFileAtomicSync(sim, "/js/s", "meta.json", Buffer.from('{"plain":true}'));
    const raw = Buffer.concat(sim.readdir(dir).map((n) => sim.readFile(join(dir, n)) as Buffer));
    assert.ok(contains(raw, Buffer.from(secret)));
    const fs = crypt(sim, "aes");
    const r = checkStoreEncryption(sim, "/js", fs);
    const withData: string[] = [];
    for (const n of sim.readdir(dir)) if ((sim.stat(join(dir, n)) as { size: number }).size > 0) withData.push(n);
    assert.equal(r.converted, withData.length + 1); // and meta.json
    assert.ok(withData.length > 2);
    sim.crash(); // the conversion was durable
    for (const n of sim.readdir(dir)) assert.ok(!contains(sim.readFile(join(dir, n)) as Buffer, Buffer.from(secret)), n);
    const { store: s2 } = await openFileStreamStore({ dir, fs: crypt(sim, "aes"), clock: new ManualClock(), blockSizeBytes: 512 });
    assert.equal(s2.state().msgs, 40);
    for (let i = 0; i < 40; i++) assert.equal(s2.loadMsg(i + 1)?.data.toString(), `${secret}-${i}`);
    await s2.close();
    assert.equal((crypt(sim).readFile("/js/s/meta.json") as Buffer).toString(), '{"plain":true}');
  });
});

// ---------- the storage contract through CryptFs ----------

for (const cipher of CIPHERS) {
  const sim = fileTarget(`file (simfs, encrypted ${cipher})`, () => ({ fs: crypt(new SimFs(), cipher), dir: "/store/s", cleanup: () => {} }), 60);
  streamStoreContract(sim);
  consumerStoreContract(sim);
}
const realCrypt = fileTarget(
  "file (real disk, encrypted chachapoly)",
  () => {
    const { root, cleanup } = realRoot();
    return { fs: crypt(new NodeFs()), dir: join(root, "s"), cleanup };
  },
  15,
);
streamStoreContract(realCrypt);
consumerStoreContract(realCrypt);

// ---------- crash safety with encryption ----------

const DIR = "/js/stream";
const noLimits: StoreLimits = { maxMsgs: -1, maxBytes: -1, maxAgeMs: 0, maxMsgsPerSubject: -1 };
const turn = () => new Promise<void>((r) => setImmediate(r));

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

void describe("encrypted file store crash safety (simfs)", () => {
  for (const cipher of CIPHERS) {
    void it(`${cipher}: synced messages survive a crash bit for bit, with and without torn writes`, async () => {
      for (const tear of [false, true]) {
        for (let seed = 1; seed <= 8; seed++) {
          const sim = new SimFs();
          const { store } = await openFileStreamStore({ dir: DIR, fs: crypt(sim, cipher), clock: new ManualClock(), limits: noLimits, blockSizeBytes: 700 });
          for (let i = 1; i <= 120; i++) store.storeMsg(`s.${i % 4}`, null, payload(i, i % 50), T0 + i, 0);
          await syncP(store);
          for (let i = 121; i <= 180; i++) store.storeMsg(`s.${i % 4}`, null, payload(i, i % 50), T0 + i, 0);
          await turn();
          sim.crash({ tear, random: seeded(seed) });
          assert.equal(checkStoreEncryption(sim, "/js", crypt(sim, cipher)).converted, 0);
          const { store: s2 } = await openFileStreamStore({ dir: DIR, fs: crypt(sim, cipher), clock: new ManualClock(), limits: noLimits, blockSizeBytes: 700 });
          const st = s2.state();
          assert.ok(st.lastSeq >= 120 && st.lastSeq <= 180, `lastSeq ${st.lastSeq}`);
          assert.equal(st.msgs, st.lastSeq);
          for (let i = 1; i <= st.lastSeq; i++) assert.ok(s2.loadMsg(i)?.data.equals(payload(i, i % 50)), `seq ${i}`);
          assert.equal(s2.storeMsg("s.0", null, payload(999, 1), T0, 0), st.lastSeq + 1);
          await syncP(s2);
          await s2.close();
        }
      }
    });
  }

  void it("random workloads with crashes at random points keep every acknowledged message (property)", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.oneof(fc.record({ n: fc.integer({ min: 1, max: 15 }), len: fc.nat(90) }), fc.constant("sync" as const), fc.constant("turn" as const)), { minLength: 1, maxLength: 25 }),
        fc.boolean(),
        fc.integer({ min: 1, max: 1e9 }),
        fc.constantFrom<StoreCipher>("chachapoly", "aes"),
        async (ops, tear, seed, cipher) => {
          const sim = new SimFs();
          const open = async () =>
            (await openFileStreamStore({ dir: DIR, fs: crypt(sim, cipher), clock: new ManualClock(), limits: noLimits, blockSizeBytes: 600 })).store;
          const s = await open();
          const durable = new Set<number>();
          const pending: Promise<void>[] = [];
          let unsynced: number[] = [];
          for (const o of ops) {
            if (o === "sync") {
              const these = unsynced;
              unsynced = [];
              pending.push(syncP(s).then(() => these.forEach((q) => durable.add(q))));
            } else if (o === "turn") {
              await turn();
            } else {
              for (let k = 0; k < o.n; k++) {
                const q = s.state().lastSeq + 1;
                assert.equal(s.storeMsg("t", null, payload(q, o.len), T0 + q, 0), q);
                unsynced.push(q);
              }
            }
          }
          await turn();
          sim.crash({ tear, random: seeded(seed) });
          await Promise.allSettled(pending);
          checkStoreEncryption(sim, "/js", crypt(sim, cipher));
          const r = await open();
          for (const q of durable) assert.ok(r.loadMsg(q) !== null, `acknowledged seq ${q} lost`);
          const st = r.state();
          for (let q = Math.max(1, st.firstSeq); q <= st.lastSeq; q++) {
            const m = r.loadMsg(q);
            assert.ok(m !== null && m.data.readUInt32LE(0) === q, `seq ${q} damaged`);
          }
          await r.close();
        },
      ),
      { numRuns: 60 },
    );
  });

  void it("consumer state: the last synced state survives a crash", async () => {
    for (const tear of [false, true]) {
      const sim = new SimFs();
      const dir = "/js/stream/obs/c";
      const c = await openFileConsumerStore({ dir, fs: crypt(sim) });
      c.update(sampleConsumerState(3));
      await syncP(c);
      c.update(sampleConsumerState(8));
      await turn();
      sim.crash({ tear, random: seeded(3) });
      const c2 = await openFileConsumerStore({ dir, fs: crypt(sim) });
      const got = c2.load();
      assert.ok(got !== null);
      const n = got.delivered.streamSeq === sampleConsumerState(8).delivered.streamSeq ? 8 : 3;
      assert.deepEqual(got, sampleConsumerState(n));
      await c2.close();
    }
  });
});
