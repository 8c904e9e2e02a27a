// JetStream streams over TCP with the official clients (@nats-io/jetstream 3.x and nats 2.x).
import { test, after, before } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { jetstream, jetstreamManager, type JetStreamManager, type JetStreamClient } from "@nats-io/jetstream";
import * as nats2 from "nats";
import { startServer, type RunningServer } from "../../src/index.js";

let storeDir = "";
let srv: RunningServer;
let nc: NatsConnection;
let jsm: JetStreamManager;
let js: JetStreamClient;

async function boot(): Promise<void> {
  srv = await startServer({ port: 0, host: "127.0.0.1", jetstream: { enabled: true, storeDir } });
  nc = await connect({ servers: srv.url });
  jsm = await jetstreamManager(nc);
  js = jetstream(nc);
}

async function shutdown(): Promise<void> {
  await nc.close();
  await srv.close();
}

before(async () => {
  storeDir = mkdtempSync(join(tmpdir(), "tsnats-e2e-js-"));
  await boot();
});

after(async () => {
  await shutdown();
  rmSync(storeDir, { recursive: true, force: true });
});

function errCode(e: unknown): number | undefined {
  // nats.js JetStreamApiError exposes err_code as `code`; nats 2.x as api_error.err_code.
  const x = e as { api_error?: { err_code?: number }; apiError?: () => { err_code?: number }; code?: unknown };
  if (typeof x.apiError === "function") return x.apiError().err_code;
  if (x.api_error?.err_code !== undefined) return x.api_error.err_code;
  return typeof x.code === "number" ? x.code : undefined;
}

async function rejects(p: Promise<unknown>, code: number): Promise<void> {
  try {
    await p;
  } catch (e) {
    assert.equal(errCode(e), code, String(e));
    return;
  }
  assert.fail(`expected error ${code}`);
}

void test("account info", async () => {
  const ai = await jsm.getAccountInfo();
  assert.equal(typeof ai.memory, "number");
  assert.equal(ai.limits.max_memory, -1);
});

void test("streams add/info/update/list/names/purge/delete", async () => {
  const si = await jsm.streams.add({ name: "ORDERS", subjects: ["orders.>"], max_msgs_per_subject: 10 });
  assert.equal(si.config.name, "ORDERS");
  assert.equal(si.config.duplicate_window, 120_000_000_000);
  for (let i = 0; i < 5; i++) await js.publish(`orders.${i % 2}`, `m${i}`);
  let info = await jsm.streams.info("ORDERS", { subjects_filter: ">" });
  assert.equal(info.state.messages, 5);
  assert.deepEqual(info.state.subjects, { "orders.0": 3, "orders.1": 2 });
  const upd = await jsm.streams.update("ORDERS", { subjects: ["orders.>", "more.>"], description: "updated" });
  assert.deepEqual(upd.config.subjects, ["orders.>", "more.>"]);
  await rejects(jsm.streams.update("ORDERS", { storage: "memory" } as never), 10052);
  const names: string[] = [];
  for await (const n of jsm.streams.names()) names.push(n);
  assert.ok(names.includes("ORDERS"));
  const listed: string[] = [];
  for await (const s of jsm.streams.list()) listed.push(s.config.name);
  assert.ok(listed.includes("ORDERS"));
  assert.equal(await jsm.streams.find("more.x"), "ORDERS");
  const pr = await jsm.streams.purge("ORDERS", { filter: "orders.0", keep: 1 });
  assert.equal(pr.purged, 2);
  info = await jsm.streams.info("ORDERS");
  assert.equal(info.state.messages, 3);
  assert.equal(await jsm.streams.delete("ORDERS"), true);
  await rejects(jsm.streams.info("ORDERS"), 10059);
});

void test("bad input gives exact codes and loses nothing", async () => {
  await jsm.streams.add({ name: "KEEP", subjects: ["keep.>"] });
  await js.publish("keep.a", "1");
  await rejects(jsm.streams.add({ name: "OVERLAP", subjects: ["keep.a"] }), 10065);
  await rejects(jsm.streams.add({ name: "KEEP", subjects: ["different"] }), 10058);
  await rejects(jsm.streams.add({ name: "R3", num_replicas: 3 }), 10074);
  const r = await nc.request("$JS.API.STREAM.CREATE.X", "{not json");
  assert.equal((r.json() as { error: { err_code: number } }).error.err_code, 10025);
  const r2 = await nc.request("$JS.API.STREAM.CREATE.X", JSON.stringify({ name: "Y" }));
  assert.equal((r2.json() as { error: { err_code: number } }).error.err_code, 10056);
  const info = await jsm.streams.info("KEEP");
  assert.equal(info.state.messages, 1);
  await jsm.streams.delete("KEEP");
});

void test("publish options: msgID, expect lastMsgID/lastSequence/lastSubjectSequence/streamName, ttl", async () => {
  await jsm.streams.add({ name: "P", subjects: ["p.>"], allow_msg_ttl: true });
  let pa = await js.publish("p.a", "1", { msgID: "a" });
  assert.equal(pa.seq, 1);
  assert.equal(pa.duplicate, false);
  pa = await js.publish("p.a", "1", { msgID: "a" });
  assert.equal(pa.duplicate, true);
  assert.equal(pa.seq, 1);
  pa = await js.publish("p.a", "2", { expect: { lastMsgID: "a" } });
  assert.equal(pa.seq, 2);
  await rejects(js.publish("p.a", "x", { expect: { lastMsgID: "zzz" } }), 10070);
  pa = await js.publish("p.b", "3", { expect: { lastSequence: 2 } });
  assert.equal(pa.seq, 3);
  await rejects(js.publish("p.b", "x", { expect: { lastSequence: 1 } }), 10071);
  pa = await js.publish("p.b", "4", { expect: { lastSubjectSequence: 3 } });
  assert.equal(pa.seq, 4);
  await rejects(js.publish("p.b", "x", { expect: { lastSubjectSequence: 1 } }), 10071);
  pa = await js.publish("p.c", "5", { expect: { streamName: "P" } });
  assert.equal(pa.stream, "P");
  await rejects(js.publish("p.c", "x", { expect: { streamName: "Q" } }), 10060);
  pa = await js.publish("p.ttl", "t", { ttl: "5s" });
  assert.equal(pa.seq, 6);
  const m = await jsm.streams.getMessage("P", { seq: 6 });
  assert.equal(m?.header.get("Nats-TTL"), "5s");
  await jsm.streams.delete("P");
});

void test("deleteMessage erases the bytes on disk by default; with erase false they stay until compaction", async () => {
  await jsm.streams.add({ name: "ERASE", subjects: ["erase.>"] });
  await js.publish("erase.card-1", "PAN-4111111111111111");
  await js.publish("erase.card-2", "PAN-5500000000000004");
  await js.publish("erase.card-3", "PAN-340000000000009");
  const blocks = (): Buffer => {
    const dir = join(storeDir, "jetstream", "$G", "streams", "ERASE", "msgs");
    return Buffer.concat(readdirSync(dir).filter((n) => n.endsWith(".blk")).map((n) => readFileSync(join(dir, n))));
  };
  assert.ok(blocks().includes("PAN-4111111111111111"), "stored in the block file");
  assert.equal(await jsm.streams.deleteMessage("ERASE", 1), true); // erase: true is the client's default
  assert.equal(await jsm.streams.deleteMessage("ERASE", 2, false), true);
  const disk = blocks();
  assert.ok(!disk.includes("PAN-4111111111111111") && !disk.includes("erase.card-1"), "erased: payload and subject gone");
  assert.ok(disk.includes("PAN-5500000000000004"), "no_erase: only marked deleted");
  assert.equal(await jsm.streams.getMessage("ERASE", { seq: 1 }), null);
  assert.equal(await jsm.streams.getMessage("ERASE", { seq: 2 }), null);
  assert.equal((await jsm.streams.getMessage("ERASE", { seq: 3 }))?.string(), "PAN-340000000000009");
  await shutdown();
  await boot();
  const si = await jsm.streams.info("ERASE");
  assert.equal(si.state.messages, 1);
  assert.equal(si.state.last_seq, 3);
  assert.equal((await jsm.streams.getMessage("ERASE", { seq: 3 }))?.string(), "PAN-340000000000009");
  await jsm.streams.delete("ERASE");
});

void test("getMessage, deleteMessage and direct get", async () => {
  await jsm.streams.add({ name: "G", subjects: ["g.>"], allow_direct: true });
  await js.publish("g.a", "a1");
  await js.publish("g.b", "b1");
  await js.publish("g.a", "a2");
  const m = await jsm.streams.getMessage("G", { last_by_subj: "g.a" });
  assert.equal(m?.seq, 3);
  assert.equal(m?.string(), "a2");
  assert.equal(await jsm.streams.deleteMessage("G", 1), true);
  assert.equal(await jsm.streams.getMessage("G", { seq: 1 }), null);
  const d = await jsm.direct.getMessage("G", { seq: 2 });
  assert.equal(d?.subject, "g.b");
  assert.equal(d?.string(), "b1");
  assert.ok(d?.time instanceof Date);
  const miss = await jsm.direct.getMessage("G", { seq: 99 });
  assert.equal(miss, null);
  const last = await jsm.direct.getMessage("G", { last_by_subj: "g.a" });
  assert.equal(last?.seq, 3);
  const batch = await jsm.direct.getBatch("G", { seq: 1, batch: 10 });
  const seqs: number[] = [];
  for await (const x of batch) seqs.push(x.seq);
  assert.deepEqual(seqs, [2, 3]);
  const ml = await jsm.direct.getLastMessagesFor("G", { multi_last: ["g.*"] });
  const subs: string[] = [];
  for await (const x of ml) subs.push(x.subject);
  assert.deepEqual(subs.sort(), ["g.a", "g.b"]);
  await jsm.streams.delete("G");
});

void test("nats 2.x client: manager and publish", async () => {
  const c2 = await nats2.connect({ servers: srv.url });
  try {
    const m2 = await c2.jetstreamManager();
    await m2.streams.add({ name: "V2", subjects: ["v2.>"] });
    const j2 = c2.jetstream();
    const pa = await j2.publish("v2.a", nats2.StringCodec().encode("x"), { msgID: "one" });
    assert.equal(pa.seq, 1);
    const dup = await j2.publish("v2.a", nats2.StringCodec().encode("x"), { msgID: "one" });
    assert.equal(dup.duplicate, true);
    const si = await m2.streams.info("V2");
    assert.equal(si.state.messages, 1);
    const got = await m2.streams.getMessage("V2", { seq: 1 });
    assert.equal(got.subject, "v2.a");
    await m2.streams.delete("V2");
  } finally {
    await c2.close();
  }
});

void test("restart on the same store dir keeps data and dedup", async () => {
  await jsm.streams.add({ name: "DUR", subjects: ["dur.>"] });
  for (let i = 0; i < 10; i++) await js.publish("dur.x", String(i), { msgID: `id${i}` });
  await shutdown();
  await boot();
  const info = await jsm.streams.info("DUR");
  assert.equal(info.state.messages, 10);
  const pa = await js.publish("dur.x", "again", { msgID: "id9" });
  assert.equal(pa.duplicate, true);
  assert.equal(pa.seq, 10);
  const next = await js.publish("dur.x", "new", { msgID: "id10" });
  assert.equal(next.seq, 11);
  await jsm.streams.delete("DUR");
});

void test("mirror and source created before the origin", async () => {
  await jsm.streams.add({ name: "MIR", mirror: { name: "ORIG" } });
  await jsm.streams.add({ name: "SRC", subjects: ["src.local"], sources: [{ name: "ORIG", filter_subject: "orig.a" }] });
  await jsm.streams.add({ name: "ORIG", subjects: ["orig.>"] });
  await js.publish("orig.a", "1");
  await js.publish("orig.b", "2");
  const deadline = Date.now() + 5000;
  let mi = await jsm.streams.info("MIR");
  let si = await jsm.streams.info("SRC");
  while ((mi.state.messages < 2 || si.state.messages < 1) && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 20));
    mi = await jsm.streams.info("MIR");
    si = await jsm.streams.info("SRC");
  }
  assert.equal(mi.state.messages, 2);
  assert.equal(si.state.messages, 1);
  assert.equal(mi.mirror?.name, "ORIG");
  for (const n of ["MIR", "SRC", "ORIG"]) await jsm.streams.delete(n);
});
