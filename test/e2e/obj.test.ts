// Object store buckets through @nats-io/obj 3.x over TCP: put/get/info/list/delete, links,
// watch, seal, and a 100 MB object round trip against a tsnats child process whose RSS is
// sampled while the object flows (the file store writes through, so the server never holds
// a whole object).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { jetstreamManager } from "@nats-io/jetstream";
import { Objm, setSha256Backend, type ObjectInfo, type ObjectStore } from "@nats-io/obj";
import { startServer, type RunningServer } from "../../src/index.js";
import { startTsnatsChild, type ChildServer } from "../helpers/core-child.js";
import { drain, take } from "../helpers/kv-scenarios.js";

// Node's crypto for the client's digests: the default pure-JS SHA-256 would make the 100 MB
// case spend its time hashing in the test process.
setSha256Backend("native");

const dirs: string[] = [];
let srv: RunningServer;
let nc: NatsConnection;
let objm: Objm;

function tmp(): string {
  const d = mkdtempSync(join(tmpdir(), "tsnats-e2e-obj-"));
  dirs.push(d);
  return d;
}

before(async () => {
  srv = await startServer({ port: 0, host: "127.0.0.1", jetstream: { enabled: true, storeDir: tmp() } });
  nc = await connect({ servers: srv.url });
  objm = new Objm(nc);
});

after(async () => {
  await nc.close();
  await srv.close();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function bytes(n: number, seed: number): Uint8Array {
  const b = new Uint8Array(n);
  let x = seed >>> 0 || 1;
  for (let i = 0; i < n; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    b[i] = x & 0xff;
  }
  return b;
}

function digestOf(b: Uint8Array): string {
  return `SHA-256=${createHash("sha256").update(b).digest("base64url")}=`;
}

async function getBytes(os: ObjectStore, name: string): Promise<Uint8Array | null> {
  const r = await os.get(name);
  if (r === null) return null;
  const parts: Uint8Array[] = [];
  for await (const c of r.data) parts.push(c);
  assert.equal((await r.error) ?? null, null);
  return Buffer.concat(parts);
}

void test("object store stream config", async () => {
  const os = await objm.create("cfg", { description: "objects", ttl: 3600_000_000_000, max_bytes: 1 << 30 });
  const st = await os.status();
  assert.equal(st.bucket, "cfg");
  assert.equal(st.description, "objects");
  assert.equal(st.backingStore, "JetStream");
  assert.equal(st.sealed, false);
  const c = st.streamInfo.config;
  assert.equal(c.name, "OBJ_cfg");
  assert.deepEqual(c.subjects, ["$O.cfg.C.>", "$O.cfg.M.>"]);
  assert.equal(c.allow_rollup_hdrs, true);
  assert.equal(c.allow_direct, true);
  assert.equal(c.discard, "new");
  assert.equal(c.max_age, 3600_000_000_000);
  assert.equal(c.max_bytes, 1 << 30);
  assert.equal(c.storage, "file");
});

void test("put, get, info, list, overwrite, delete", async () => {
  const os = await objm.create("files");
  const small = bytes(1000, 1);
  const chunky = bytes(300_000, 2); // three chunks at the default 128 KiB
  const a = await os.putBlob({ name: "a.txt", description: "small", metadata: { k: "v" } }, small);
  assert.equal(a.size, 1000);
  assert.equal(a.chunks, 1);
  assert.equal(a.digest, digestOf(small));
  assert.equal(a.bucket, "files");
  const b = await os.putBlob({ name: "dir/b.bin", options: { max_chunk_size: 100_000 } }, chunky);
  assert.equal(b.chunks, 3);
  const empty = await os.putBlob({ name: "empty" }, new Uint8Array(0));
  assert.equal(empty.size, 0);
  assert.equal(empty.chunks, 0);

  assert.deepEqual(await getBytes(os, "a.txt"), Buffer.from(small));
  assert.deepEqual(await getBytes(os, "dir/b.bin"), Buffer.from(chunky));
  assert.deepEqual(await getBytes(os, "empty"), Buffer.alloc(0));
  assert.equal(await os.get("missing"), null);
  assert.equal(await os.info("missing"), null);

  const ia = await os.info("a.txt");
  assert.equal(ia?.description, "small");
  assert.deepEqual(ia?.metadata, { k: "v" });
  assert.equal(ia?.digest, a.digest);
  assert.match(ia?.mtime ?? "", /^\d{4}-\d\d-\d\dT/);
  assert.ok((ia?.revision ?? 0) > 0);

  const names = (await os.list()).map((i) => i.name).sort();
  assert.deepEqual(names, ["a.txt", "dir/b.bin", "empty"]);

  // Overwrite: the old chunks are purged, only the new ones stay.
  const before = (await os.status()).streamInfo.state.messages;
  const replaced = await os.putBlob({ name: "dir/b.bin" }, small);
  assert.notEqual(replaced.nuid, b.nuid);
  assert.deepEqual(await getBytes(os, "dir/b.bin"), Buffer.from(small));
  const afterState = (await os.status()).streamInfo.state;
  assert.equal(afterState.messages, before - 3 + 1, "3 old chunks gone, 1 new chunk; the meta rolled up");

  // Update the meta (rename).
  await os.update("a.txt", { name: "renamed.txt", description: "moved" });
  assert.equal(await os.info("a.txt"), null);
  assert.equal((await os.info("renamed.txt"))?.description, "moved");
  assert.deepEqual(await getBytes(os, "renamed.txt"), Buffer.from(small));

  // Delete: the chunks go, the meta stays as a deleted marker.
  const del = await os.delete("renamed.txt");
  assert.equal(del.success, true);
  const di = await os.info("renamed.txt");
  assert.equal(di?.deleted, true);
  assert.equal(di?.size, 0);
  assert.equal(await os.get("renamed.txt"), null);
  assert.deepEqual((await os.list()).map((i) => i.name).sort(), ["dir/b.bin", "empty"]);

  // previousRevision guards a put.
  const cur = await os.info("empty");
  await assert.rejects(os.putBlob({ name: "empty" }, small, { previousRevision: (cur?.revision ?? 0) + 100 }));
  const ok = await os.putBlob({ name: "empty" }, small, { previousRevision: cur?.revision ?? 0 });
  assert.equal(ok.size, 1000);
});

void test("links to objects and to buckets", async () => {
  const os = await objm.create("linked");
  const other = await objm.create("other");
  const data = bytes(5000, 3);
  const src = await os.putBlob({ name: "src" }, data);
  const ln = await os.link("ln", src);
  assert.deepEqual(ln.options?.link, { bucket: "linked", name: "src" });
  assert.deepEqual(await getBytes(os, "ln"), Buffer.from(data), "a link reads the target's data");
  // A link in another bucket to this one's object.
  const cross = await other.link("cross", src);
  assert.deepEqual(cross.options?.link, { bucket: "linked", name: "src" });
  assert.deepEqual(await getBytes(other, "cross"), Buffer.from(data));
  // A link to a whole bucket.
  const bl = await other.linkStore("all", os);
  assert.deepEqual(bl.options?.link, { bucket: "linked" });
  const info = await other.info("all");
  assert.equal(info?.options?.link?.bucket, "linked");
  assert.equal(info?.options?.link?.name, undefined);
  // Links of links are refused by the client.
  await assert.rejects(os.link("ln2", ln));
  // Deleting the target: the link stays, reading it finds nothing.
  await os.delete("src");
  assert.equal(await os.get("ln"), null);
});

void test("watch: initial entries, updates, deletes, history", async () => {
  const os = await objm.create("watched");
  await os.putBlob({ name: "one" }, bytes(10, 4));
  await os.putBlob({ name: "two" }, bytes(10, 5));
  await os.putBlob({ name: "one" }, bytes(20, 6));
  const w = await os.watch();
  const wh = await os.watch({ includeHistory: true });
  const wd = await os.watch({ ignoreDeletes: true });
  await os.putBlob({ name: "three" }, bytes(30, 7));
  await os.delete("two");
  await os.putBlob({ name: "four" }, bytes(40, 8));
  // The default watch is updates only (nats.js uses deliver_policy new).
  const seenW = (await take(w, 3)).map((i) => [i.name, i.deleted, i.size, i.isUpdate]);
  assert.deepEqual(seenW, [
    ["three", false, 30, true],
    ["two", true, 0, true],
    ["four", false, 40, true],
  ]);
  // includeHistory: the last meta per object (the meta subjects roll up), then updates.
  const seenH = (await take(wh, 5)).map((i) => [i.name, i.deleted, i.size, i.isUpdate]);
  assert.deepEqual(seenH, [
    ["two", false, 10, false],
    ["one", false, 20, true],
    ["three", false, 30, true],
    ["two", true, 0, true],
    ["four", false, 40, true],
  ]);
  const seenD = (await take(wd, 2)).map((i: ObjectInfo) => i.name);
  assert.deepEqual(seenD, ["three", "four"]);
});

void test("seal, bucket list, destroy", async () => {
  const os = await objm.create("sealme");
  await os.putBlob({ name: "x" }, bytes(100, 9));
  const st = await os.seal();
  assert.equal(st.sealed, true);
  await assert.rejects(os.putBlob({ name: "y" }, bytes(10, 10)));
  assert.deepEqual(await getBytes(os, "x"), Buffer.from(bytes(100, 9)));
  const listed: string[] = [];
  for await (const s of await objm.list()) listed.push(s.bucket);
  assert.ok(listed.includes("sealme"));
  const gone = await objm.create("gone");
  assert.equal(await gone.destroy(), true);
  const jsm = await jetstreamManager(nc);
  await assert.rejects(jsm.streams.info("OBJ_gone"));
  void drain;
});

// ---------- 100 MB through a child server, RSS sampled ----------

function rssBytes(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  return m ? Number(m[1]) * 1024 : 0;
}

// TSNATS_OBJ_MB overrides the size for a manual check that the peak does not grow with it.
const OBJECT_BYTES = Number(process.env["TSNATS_OBJ_MB"] ?? "100") * 1024 * 1024;
const PIECE_BYTES = 1024 * 1024;
// A generous bound on how far the server's RSS may rise while the object flows: a server that
// buffered the object would rise by at least its size.
const RSS_RISE_BOUND_BYTES = 250 * 1024 * 1024;

/** 100 MB from one 1 MiB random block with the piece number stamped in, hashed as it goes. */
function source(hash: ReturnType<typeof createHash>): ReadableStream<Uint8Array> {
  const base = bytes(PIECE_BYTES, 42);
  let i = 0;
  return new ReadableStream<Uint8Array>({
    pull(c) {
      if (i * PIECE_BYTES >= OBJECT_BYTES) {
        c.close();
        return;
      }
      const piece = Buffer.from(base);
      piece.writeUInt32LE(i, 0);
      piece.writeUInt32LE(Math.imul(i, 2654435761) >>> 0, PIECE_BYTES - 4);
      hash.update(piece);
      i++;
      c.enqueue(piece);
    },
  });
}

void test("a 100 MB object round trip with its digest, server RSS bounded", { timeout: 600_000 }, async (t) => {
  if (process.platform !== "linux") return;
  const dir = tmp();
  let child: ChildServer | null = await startTsnatsChild(["-a", "127.0.0.1", "-p", "-1", "-js", "-sd", dir]);
  const c2 = await connect({ servers: child.url });
  try {
    const pid = child.proc.pid ?? 0;
    const os = await new Objm(c2).create("big");
    await os.putBlob({ name: "warm" }, bytes(200_000, 11)); // JIT and buffers warm before the baseline
    await getBytes(os, "warm");
    const baseline = rssBytes(pid);
    let peak = baseline;
    const sampler = setInterval(() => {
      peak = Math.max(peak, rssBytes(pid));
    }, 20);
    try {
      const putHash = createHash("sha256");
      const info = await os.put({ name: "big.bin" }, source(putHash));
      const want = `SHA-256=${putHash.digest("base64url")}=`;
      assert.equal(info.size, OBJECT_BYTES);
      assert.equal(info.chunks, OBJECT_BYTES / (128 * 1024));
      assert.equal(info.digest, want);
      t.diagnostic(`server RSS peak during put ${(peak / 1048576).toFixed(1)} MiB`);

      const r = await os.get("big.bin");
      assert.ok(r !== null);
      const getHash = createHash("sha256");
      let n = 0;
      for await (const chunk of r.data) {
        getHash.update(chunk);
        n += chunk.length;
      }
      assert.equal((await r.error) ?? null, null, "the client's own digest check");
      assert.equal(n, OBJECT_BYTES);
      assert.equal(`SHA-256=${getHash.digest("base64url")}=`, want);
    } finally {
      clearInterval(sampler);
    }
    const rise = peak - baseline;
    t.diagnostic(`server RSS baseline ${(baseline / 1048576).toFixed(1)} MiB, peak ${(peak / 1048576).toFixed(1)} MiB`);
    assert.ok(
      rise < RSS_RISE_BOUND_BYTES,
      `server RSS rose by ${(rise / 1048576).toFixed(1)} MiB (baseline ${(baseline / 1048576).toFixed(1)} MiB)`,
    );
  } finally {
    await c2.close();
    await child.stop();
    child = null;
  }
});
