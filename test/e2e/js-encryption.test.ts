// Encryption at rest end to end, with tsnats child processes and a config file:
// jetstream { key, cipher } stores nothing readable on disk; messages and consumer state come
// back after a restart; a wrong key or no key stops the start with a clear error (exit code
// not 0) and leaves the files untouched; prev_key rotates, after which only the new key
// opens the store.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect, createInbox, type Msg, type NatsConnection } from "@nats-io/transport-node";
import { AckPolicy, jetstream, jetstreamManager } from "@nats-io/jetstream";
import { startTsnatsChild, TSNATS_BIN, type ChildServer } from "../helpers/core-child.js";
import { startServer, type RunningServer } from "../../src/index.js";

const root = mkdtempSync(join(tmpdir(), "tsnats-e2e-crypt-"));
const storeDir = join(root, "store");
const conf = join(root, "js.conf");
const KEY1 = "first-key-9f8e7d6c5b4a";
const KEY2 = "second-key-0a1b2c3d4e5f";
const SECRET = "very-secret-payload";
const N = 40;

after(() => rmSync(root, { recursive: true, force: true }));

function writeConf(js: string): void {
  writeFileSync(conf, `jetstream {\n  store_dir: ${JSON.stringify(storeDir)}\n${js}\n}\n`);
}

function files(dir: string, out: string[] = []): string[] {
  for (const n of readdirSync(dir)) {
    const p = join(dir, n);
    if (statSync(p).isDirectory()) files(p, out);
    else out.push(p);
  }
  return out;
}

function storeHash(): Map<string, string> {
  const m = new Map<string, string>();
  for (const f of files(storeDir).sort()) m.set(f, createHash("sha256").update(readFileSync(f)).digest("hex"));
  return m;
}

function diskContains(s: string): string[] {
  const needle = Buffer.from(s);
  return files(storeDir).filter((f) => readFileSync(f).indexOf(needle) >= 0);
}

/** A start that must fail: the exit code and the log. Bounded by the spawn timeout. */
function failingStart(): { status: number | null; log: string } {
  const r = spawnSync(process.execPath, [TSNATS_BIN, "-a", "127.0.0.1", "-p", "-1", "-c", conf], { encoding: "utf8", timeout: 20_000 });
  return { status: r.status, log: `${r.stdout}${r.stderr}` };
}

async function withServer(fn: (nc: NatsConnection, child: ChildServer) => Promise<void>): Promise<string> {
  const child = await startTsnatsChild(["-a", "127.0.0.1", "-p", "-1", "-c", conf]);
  const nc = await connect({ servers: child.url });
  try {
    await fn(nc, child);
  } finally {
    await nc.close();
    await child.stop();
  }
  return child.log();
}

async function checkState(nc: NatsConnection, msgs: number): Promise<void> {
  const jsm = await jetstreamManager(nc);
  const si = await jsm.streams.info("ENC");
  assert.equal(si.state.messages, msgs);
  const m = await jsm.streams.getMessage("ENC", { seq: 3 });
  assert.equal(m?.string(), `${SECRET}-3`);
  const ci = await jsm.consumers.info("ENC", "D");
  assert.equal(ci.ack_floor.stream_seq, 20, "consumer acks survived");
  assert.equal(ci.delivered.stream_seq, 20);
}

void test("jetstream key/cipher: encrypted on disk, restart, wrong key, no key, prev_key rotation", async () => {
  writeConf(`  key: ${JSON.stringify(KEY1)}\n  cipher: aes`);
  const log1 = await withServer(async (nc) => {
    const jsm = await jetstreamManager(nc);
    await jsm.streams.add({ name: "ENC", subjects: ["enc.>"] });
    await jsm.consumers.add("ENC", { durable_name: "D", ack_policy: AckPolicy.Explicit });
    const js = jetstream(nc);
    for (let i = 1; i <= N; i++) await js.publish(`enc.s${i % 3}`, `${SECRET}-${i}`);
    const c = await js.consumers.get("ENC", "D");
    const it = await c.fetch({ max_messages: 20, expires: 5000 });
    let n = 0;
    for await (const m of it) {
      assert.ok(await m.ackAck(), "ack acknowledged");
      if (++n === 20) break;
    }
    assert.equal(n, 20);
    await checkState(nc, N);
  });
  assert.match(log1, /JetStream encryption at rest: aes/);
  assert.ok(!log1.includes(KEY1), "the key is never logged");
  assert.deepEqual(diskContains(SECRET), [], "payload readable on disk");
  assert.deepEqual(diskContains("enc.>"), [], "stream config readable on disk");
  assert.ok(files(storeDir).some((f) => f.endsWith(".blk")));

  // wrong key: the start fails, naming a file, and nothing changes
  const before = storeHash();
  writeConf(`  key: "not-the-key"\n  cipher: aes`);
  let r = failingStart();
  assert.notEqual(r.status, 0);
  assert.match(r.log, /encryption key does not match .*jetstream/);
  assert.ok(!r.log.includes("not-the-key"));
  assert.deepEqual(storeHash(), before, "files touched by a failed start");

  // no key at all: ciphertext is never served
  writeConf("");
  r = failingStart();
  assert.notEqual(r.status, 0);
  assert.match(r.log, /is encrypted .* no jetstream encryption key/);
  assert.deepEqual(storeHash(), before);

  // the right key (any accepted spelling of the field, the other cipher for new files)
  writeConf(`  encryption_key: ${JSON.stringify(KEY1)}\n  cipher: ChaChaPoly`);
  await withServer(async (nc) => {
    await checkState(nc, N);
    const js = jetstream(nc);
    for (let i = N + 1; i <= N + 5; i++) await js.publish(`enc.s${i % 3}`, `${SECRET}-${i}`);
  });

  // rotation: key = new, prev_key = old
  writeConf(`  key: ${JSON.stringify(KEY2)}\n  prev_key: ${JSON.stringify(KEY1)}`);
  const log3 = await withServer(async (nc) => {
    await checkState(nc, N + 5);
  });
  assert.match(log3, /re-keyed \d+ files? from prev_key to key/);
  assert.ok(!log3.includes(KEY1) && !log3.includes(KEY2));

  // now the new key alone opens it, the old one no longer does
  writeConf(`  key: ${JSON.stringify(KEY2)}`);
  const log4 = await withServer(async (nc) => {
    await checkState(nc, N + 5);
  });
  assert.doesNotMatch(log4, /re-keyed/);
  writeConf(`  key: ${JSON.stringify(KEY1)}`);
  r = failingStart();
  assert.notEqual(r.status, 0);
  assert.match(r.log, /encryption key does not match/);
  assert.deepEqual(diskContains(SECRET), []);
});

void test("a plaintext store is encrypted in place when a key is added; an unknown cipher is a config error", async () => {
  rmSync(storeDir, { recursive: true, force: true });
  writeConf("");
  await withServer(async (nc) => {
    const jsm = await jetstreamManager(nc);
    await jsm.streams.add({ name: "ENC", subjects: ["enc.>"] });
    await jsm.consumers.add("ENC", { durable_name: "D", ack_policy: AckPolicy.Explicit });
    const js = jetstream(nc);
    for (let i = 1; i <= N; i++) await js.publish(`enc.s${i % 3}`, `${SECRET}-${i}`);
    const c = await js.consumers.get("ENC", "D");
    const it = await c.fetch({ max_messages: 20, expires: 5000 });
    let n = 0;
    for await (const m of it) {
      assert.ok(await m.ackAck());
      if (++n === 20) break;
    }
  });
  assert.notDeepEqual(diskContains(SECRET), []);
  writeConf(`  key: ${JSON.stringify(KEY1)}`);
  const log = await withServer(async (nc) => {
    await checkState(nc, N);
  });
  assert.match(log, /JetStream encrypted \d+ plaintext files?/);
  assert.deepEqual(diskContains(SECRET), []);

  writeConf(`  key: ${JSON.stringify(KEY1)}\n  cipher: rot13`);
  const r = failingStart();
  assert.notEqual(r.status, 0);
  assert.match(r.log, /Unknown cipher type: "rot13"/);
});

// ---------- snapshots: the plaintext archive over the wire, encrypted files on disk ----------

type Json = Record<string, unknown>;

async function api(nc: NatsConnection, subject: string, body: unknown): Promise<Json> {
  const r = await nc.request(subject, JSON.stringify(body), { timeout: 5000 });
  return r.json<Json>();
}

async function backup(nc: NatsConnection, stream: string): Promise<{ meta: Json; data: Buffer }> {
  const inbox = createInbox();
  const parts: Buffer[] = [];
  const done = new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error("backup did not end in time")), 20_000);
    nc.subscribe(inbox, {
      callback: (_e, m: Msg) => {
        if (m.data.length === 0) {
          clearTimeout(timer);
          resolve();
          return;
        }
        parts.push(Buffer.from(m.data));
        if (m.reply) m.respond();
      },
    });
  });
  await nc.flush();
  const meta = await api(nc, `$JS.API.STREAM.SNAPSHOT.${stream}`, { deliver_subject: inbox, chunk_size: 4096 });
  assert.equal(meta["error"], undefined, JSON.stringify(meta));
  await done;
  return { meta, data: Buffer.concat(parts) };
}

async function restore(nc: NatsConnection, meta: Json, data: Buffer): Promise<Json> {
  const name = String((meta["config"] as Json)["name"]);
  const start = await api(nc, `$JS.API.STREAM.RESTORE.${name}`, { config: meta["config"], state: meta["state"] });
  assert.equal(start["error"], undefined, JSON.stringify(start));
  const deliver = String(start["deliver_subject"]);
  for (let p = 0; p < data.length; p += 8192) await nc.request(deliver, data.subarray(p, p + 8192), { timeout: 5000 });
  return (await nc.request(deliver, new Uint8Array(0), { timeout: 30_000 })).json<Json>();
}

void test("snapshot and restore with encryption: the archive is the usual format, the restored files are encrypted", async () => {
  const dir = mkdtempSync(join(tmpdir(), "tsnats-e2e-crypt-snap-"));
  const opts = { port: 0, host: "127.0.0.1", jetstream: { enabled: true, storeDir: dir, key: KEY1, cipher: "chachapoly" as const } };
  let srv: RunningServer | null = await startServer(opts);
  let nc = await connect({ servers: srv.url });
  try {
    const jsm = await jetstreamManager(nc);
    const js = jetstream(nc);
    await jsm.streams.add({ name: "SNAPC", subjects: ["snapc.>"] });
    for (let i = 1; i <= 200; i++) await js.publish(`snapc.${i % 5}`, `${SECRET}-${i}`);
    await jsm.consumers.add("SNAPC", { durable_name: "W", ack_policy: AckPolicy.Explicit });
    const b = await backup(nc, "SNAPC");
    assert.equal(b.data.subarray(0, 8).toString("latin1"), "TSNSNAP1", "the wire archive is not encrypted");
    await jsm.streams.delete("SNAPC");
    const r = await restore(nc, b.meta, b.data);
    assert.equal(r["error"], undefined, JSON.stringify(r));
    assert.equal((r["state"] as Json)["messages"], 200);
    const m = await jsm.streams.getMessage("SNAPC", { seq: 77 });
    assert.equal(m?.string(), `${SECRET}-77`);
    const needle = Buffer.from(SECRET);
    assert.deepEqual(files(dir).filter((f) => readFileSync(f).indexOf(needle) >= 0), []);
    await nc.close();
    await srv.close();
    srv = await startServer(opts);
    nc = await connect({ servers: srv.url });
    const jsm2 = await jetstreamManager(nc);
    assert.equal((await jsm2.streams.info("SNAPC")).state.messages, 200);
    assert.equal((await jsm2.consumers.info("SNAPC", "W")).name, "W");
  } finally {
    await nc.close();
    await srv?.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
