// Stream snapshot and restore over the network ($JS.API.STREAM.SNAPSHOT / RESTORE) with the
// official client doing what `nats stream backup/restore` does: collect the chunks while
// answering each one, then send them back as requests. Checks that the restored stream is
// the same stream (sequences, gaps, headers, dedup ids, durable consumer progress), that it
// survives a restart, and the error paths: unknown stream, bad deliver subject, memory
// streams, restoring over an existing stream, corrupt and truncated archives, a receiver
// that stops answering.
import { test, after, before } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { randomBytes } from "node:crypto";
import { join } from "node:path";
import { connect, createInbox, headers, type Msg, type NatsConnection } from "@nats-io/transport-node";
import { AckPolicy, jetstream, jetstreamManager, type JetStreamClient, type JetStreamManager } from "@nats-io/jetstream";
import { startServer, type RunningServer } from "../../src/index.js";
import { until } from "../helpers/until.js";
import { parseRfc3339Ns } from "../../src/stream/time.js";

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

before(async () => {
  storeDir = mkdtempSync(join(tmpdir(), "tsnats-e2e-snap-"));
  await boot();
});

after(async () => {
  await nc.close();
  await srv.close();
  rmSync(storeDir, { recursive: true, force: true });
});

type Json = Record<string, unknown>;

async function api(subject: string, body: unknown): Promise<Json> {
  const r = await nc.request(subject, body === "" ? "" : JSON.stringify(body), { timeout: 5000 });
  return r.json<Json>();
}

function errCodeOf(r: Json): number | undefined {
  return (r["error"] as { err_code?: number } | undefined)?.err_code;
}

interface Backup {
  meta: Json;
  data: Buffer;
  chunks: number;
  endCode: string;
}

/** Like `nats stream backup`: subscribe, request, answer every chunk, stop at the empty message. */
async function backup(stream: string, req: Json = {}, answer = true, boundMs = 20_000): Promise<Backup> {
  const inbox = createInbox();
  const parts: Buffer[] = [];
  let endCode = "";
  const done = new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error("backup did not end in time")), boundMs);
    nc.subscribe(inbox, {
      callback: (_e, m: Msg) => {
        if (m.data.length === 0) {
          endCode = `${m.headers?.code ?? 0} ${m.headers?.description ?? ""}`.trim();
          clearTimeout(timer);
          resolve();
          return;
        }
        parts.push(Buffer.from(m.data));
        if (answer && m.reply) m.respond();
      },
    });
  });
  await nc.flush();
  const meta = await api(`$JS.API.STREAM.SNAPSHOT.${stream}`, { deliver_subject: inbox, ...req });
  if (meta["error"] !== undefined) return { meta, data: Buffer.alloc(0), chunks: 0, endCode: "" };
  await done;
  return { meta, data: Buffer.concat(parts), chunks: parts.length, endCode };
}

/** Like `nats stream restore`: ask for a deliver subject, send chunks as requests, then the empty one. */
async function restore(meta: Json, data: Buffer, chunk = 64 * 1024): Promise<Json> {
  const name = String((meta["config"] as Json)["name"]);
  const start = await api(`$JS.API.STREAM.RESTORE.${name}`, { config: meta["config"], state: meta["state"] });
  if (start["error"] !== undefined) return start;
  const deliver = String(start["deliver_subject"]);
  assert.match(deliver, new RegExp(`^\\$JS\\.SNAPSHOT\\.RESTORE\\.${name}\\.`));
  for (let p = 0; p < data.length; p += chunk) {
    const r = await nc.request(deliver, data.subarray(p, p + chunk), { timeout: 5000 });
    if (r.data.length > 0) return r.json<Json>();
  }
  const fin = await nc.request(deliver, new Uint8Array(0), { timeout: 30_000 });
  return fin.json<Json>();
}

const waitFor = until;

void test("backup and restore keep sequences, gaps, headers, dedup ids and durable consumer progress", async () => {
  await jsm.streams.add({ name: "SNAP", subjects: ["snap.>"], duplicate_window: 60_000_000_000 });
  for (let i = 1; i <= 300; i++) {
    const h = headers();
    h.set("X-Index", String(i));
    await js.publish(`snap.${i % 7}`, Buffer.alloc(i * 10, i % 251), { headers: h, msgID: `id-${i}` });
  }
  // Interior gaps, and a purge below 21 to move the first sequence.
  for (const s of [50, 51, 52, 200]) await jsm.streams.deleteMessage("SNAP", s);
  await jsm.streams.purge("SNAP", { seq: 21 });
  await jsm.consumers.add("SNAP", { durable_name: "WORK", ack_policy: AckPolicy.Explicit, filter_subject: "snap.>" });
  const c = await js.consumers.get("SNAP", "WORK");
  const batch = await c.fetch({ max_messages: 40, expires: 2000 });
  let n = 0;
  for await (const m of batch) {
    n++;
    if (n <= 30) m.ack(); // 30 acked, 10 delivered and pending
    if (n === 40) break;
  }
  await waitFor("acks recorded", async () => (await jsm.consumers.info("SNAP", "WORK")).num_ack_pending === 10);
  const before = await jsm.streams.info("SNAP");
  const cBefore = await jsm.consumers.info("SNAP", "WORK");
  const sample = (await jsm.streams.getMessage("SNAP", { seq: 123 }))!;

  const b = await backup("SNAP", { chunk_size: 4096 });
  assert.equal(b.meta["error"], undefined, JSON.stringify(b.meta));
  assert.equal(b.meta["type"], "io.nats.jetstream.api.v1.stream_snapshot_response");
  assert.equal((b.meta["config"] as Json)["name"], "SNAP");
  assert.equal((b.meta["state"] as Json)["messages"], before.state.messages);
  assert.equal(b.endCode, "204");
  assert.ok(b.chunks > 1, `expected several 4 KiB chunks, got ${b.chunks}`);

  await jsm.streams.delete("SNAP");
  const r = await restore(b.meta, b.data, 10_000);
  assert.equal(r["error"], undefined, JSON.stringify(r));
  assert.equal(r["type"], "io.nats.jetstream.api.v1.stream_create_response");
  const rs = r["state"] as Json;
  assert.equal(rs["messages"], before.state.messages);
  assert.equal(rs["first_seq"], before.state.first_seq);
  assert.equal(rs["last_seq"], before.state.last_seq);
  assert.equal(rs["num_deleted"], before.state.num_deleted);
  assert.equal(rs["bytes"], before.state.bytes);

  const after = await jsm.streams.info("SNAP", { deleted_details: true });
  assert.deepEqual(after.state.deleted, [50, 51, 52, 200]);
  assert.equal(after.state.num_subjects, before.state.num_subjects);
  const got = (await jsm.streams.getMessage("SNAP", { seq: 123 }))!;
  assert.equal(got.subject, sample.subject);
  assert.deepEqual(Buffer.from(got.data), Buffer.from(sample.data));
  assert.equal(got.header.get("X-Index"), "123");
  assert.equal(got.time.getTime(), sample.time.getTime());
  // Dedup ids inside the window came back with the messages.
  const dup = await js.publish("snap.1", "again", { msgID: "id-300" });
  assert.equal(dup.duplicate, true);
  assert.equal(dup.seq, 300);

  const cAfter = await jsm.consumers.info("SNAP", "WORK");
  assert.equal(cAfter.ack_floor.stream_seq, cBefore.ack_floor.stream_seq);
  assert.equal(cAfter.delivered.stream_seq, cBefore.delivered.stream_seq);
  assert.equal(cAfter.num_ack_pending, 10);
  // The unacknowledged ten come back first, then the rest in order.
  const c2 = await js.consumers.get("SNAP", "WORK");
  const m1 = await c2.next({ expires: 5000 });
  assert.ok(m1 !== null);
  assert.ok(m1.redelivered || m1.info.deliveryCount >= 1);
  assert.ok(m1.seq > cBefore.ack_floor.stream_seq);
  m1.ack();

  // No hidden restore directories are left beside the streams.
  const streams = join(storeDir, "jetstream", "$G", "streams");
  assert.deepEqual(readdirSync(streams).filter((d) => d.startsWith(".restore")), []);

  // Restarting on the same store finds the restored stream as it was.
  await nc.close();
  await srv.close();
  await boot();
  const again = await jsm.streams.info("SNAP");
  assert.equal(again.state.messages, before.state.messages + 0);
  assert.equal(again.state.last_seq, 300);
  assert.equal((await jsm.consumers.info("SNAP", "WORK")).ack_floor.stream_seq >= cBefore.ack_floor.stream_seq, true);
  await jsm.streams.delete("SNAP");
});

void test("no_consumers leaves consumers out; an empty stream with a moved first sequence restores", async () => {
  await jsm.streams.add({ name: "SNAP2", subjects: ["snap2.>"] });
  for (let i = 0; i < 5; i++) await js.publish("snap2.a", "x");
  await jsm.streams.purge("SNAP2");
  await jsm.consumers.add("SNAP2", { durable_name: "D", ack_policy: AckPolicy.Explicit });
  const orig = await jsm.streams.info("SNAP2");
  const b = await backup("SNAP2", { no_consumers: true });
  assert.equal(b.endCode, "204");
  await jsm.streams.delete("SNAP2");
  const r = await restore(b.meta, b.data);
  assert.equal(r["error"], undefined, JSON.stringify(r));
  const st = await jsm.streams.info("SNAP2");
  assert.equal(st.state.messages, 0);
  assert.equal(st.state.first_seq, 6);
  assert.equal(st.state.last_seq, 5);
  // the time of the last (deleted) sequence comes back too; RFC 3339 text of an int64 ns held
  // in a double may round by a few hundred ns on the way
  assert.ok(Math.abs(parseRfc3339Ns(st.state.last_ts) - parseRfc3339Ns(orig.state.last_ts)) < 1000, `${st.state.last_ts} vs ${orig.state.last_ts}`);
  assert.equal(st.state.consumer_count, 0);
  const pa = await js.publish("snap2.a", "next");
  assert.equal(pa.seq, 6);
  await jsm.streams.delete("SNAP2");
});

void test("snapshot errors: unknown stream, bad deliver subject, empty request, memory stream", async () => {
  assert.equal(errCodeOf(await api("$JS.API.STREAM.SNAPSHOT.NOPE", { deliver_subject: "x.y" })), 10059);
  await jsm.streams.add({ name: "SNAPE", subjects: ["snape"] });
  assert.equal(errCodeOf(await api("$JS.API.STREAM.SNAPSHOT.SNAPE", { deliver_subject: "bad.*" })), 10015);
  assert.equal(errCodeOf(await api("$JS.API.STREAM.SNAPSHOT.SNAPE", {})), 10015);
  assert.equal(errCodeOf(await api("$JS.API.STREAM.SNAPSHOT.SNAPE", "")), 10003);
  assert.equal(errCodeOf(await api("$JS.API.STREAM.SNAPSHOT.SNAPE", "{bad")), 10025);
  await jsm.streams.add({ name: "SNAPM", subjects: ["snapm"], storage: "memory" as never });
  const m = await api("$JS.API.STREAM.SNAPSHOT.SNAPM", { deliver_subject: "x.y" });
  assert.equal(errCodeOf(m), 10064);
  await jsm.streams.delete("SNAPM");
  // The server is still fine.
  assert.equal((await jsm.streams.info("SNAPE")).config.name, "SNAPE");
  await jsm.streams.delete("SNAPE");
});

void test("restore errors: existing stream, name mismatch, corrupt and truncated archives", async () => {
  await jsm.streams.add({ name: "SNAPR", subjects: ["snapr.>"] });
  for (let i = 0; i < 50; i++) await js.publish("snapr.a", randomBytes(1000));
  const b = await backup("SNAPR");
  assert.equal(b.endCode, "204");
  assert.equal(errCodeOf(await restore(b.meta, b.data)), 10130);
  const mismatch = await api("$JS.API.STREAM.RESTORE.OTHER", { config: b.meta["config"] });
  assert.equal(errCodeOf(mismatch), 10056);
  assert.equal(errCodeOf(await api("$JS.API.STREAM.RESTORE.SNAPR", "")), 10003);
  await jsm.streams.delete("SNAPR");

  // A flipped byte in the compressed data is caught by the frame checksum or the inflater.
  const corrupt = Buffer.from(b.data);
  const at = Math.floor(corrupt.length / 2);
  corrupt.writeUInt8(corrupt.readUInt8(at) ^ 0xff, at);
  const rc = await restore(b.meta, corrupt, 4096);
  assert.equal(errCodeOf(rc), 10062, JSON.stringify(rc));
  await assert.rejects(jsm.streams.info("SNAPR"));
  // A cut archive has no end record.
  const rt = await restore(b.meta, b.data.subarray(0, Math.floor(b.data.length * 0.6)), 4096);
  assert.equal(errCodeOf(rt), 10062, JSON.stringify(rt));
  assert.match(String((rt["error"] as Json)["description"]), /truncated/);
  await assert.rejects(jsm.streams.info("SNAPR"));
  // Something that is not a tsnats archive at all.
  const rg = await restore(b.meta, Buffer.from("this is not a snapshot at all"));
  assert.equal(errCodeOf(rg), 10062);
  // The good archive still restores afterwards, and nothing was left behind.
  const ok = await restore(b.meta, b.data);
  assert.equal(ok["error"], undefined, JSON.stringify(ok));
  assert.equal((await jsm.streams.info("SNAPR")).state.messages, 50);
  const streams = join(storeDir, "jetstream", "$G", "streams");
  assert.deepEqual(readdirSync(streams).filter((d) => d.startsWith(".restore")), []);
  assert.ok(existsSync(join(streams, "SNAPR")));
  await jsm.streams.delete("SNAPR");
});

void test("a receiver that stops answering gets 408 No Flow Response", async () => {
  await jsm.streams.add({ name: "SNAPF", subjects: ["snapf"] });
  for (let i = 0; i < 20; i++) await js.publish("snapf", randomBytes(2000));
  const b = await backup("SNAPF", { chunk_size: 1024, window_size: 2048 }, false, 20_000);
  assert.equal(b.endCode, "408 No Flow Response");
  assert.equal(b.chunks, 2, "only the window's worth goes out unanswered");
  // Nothing about the stream changed.
  assert.equal((await jsm.streams.info("SNAPF")).state.messages, 20);
  await jsm.streams.delete("SNAPF");
});
