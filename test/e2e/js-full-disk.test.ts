// A disk that fills up under a tsnats child process whose store lives on a small tmpfs: the
// publish that does not fit gets 10077 "no space left on device" (and so does its retry with
// the same message id: never "duplicate"), an OUT_OF_STORAGE advisory goes out, core NATS
// and a memory stream carry on, every acknowledged message stays bit for bit, and once there
// is room the stream takes messages again without a restart, and keeps them across one.
// Mounting the tmpfs needs root: without it the test is skipped and says so.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, statfsSync, writeFileSync, unlinkSync, mkdirSync } from "node:fs";
import type { JsMsg } from "@nats-io/jetstream";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { AckPolicy, jetstream, jetstreamManager, type JetStreamClient, type JetStreamManager } from "@nats-io/jetstream";
import { startTsnatsChild, type ChildServer } from "../helpers/core-child.js";
import { Advisories, errCode, until } from "../helpers/js-consumer.js";

const MOUNT_BYTES = 4 * 1024 * 1024;
const ROOM_BYTES = 192 * 1024; // left free after the ballast: about 180 publishes of 1 KiB

let mnt = "";
let mounted = false;
let skipWhy = "";

before(() => {
  mnt = mkdtempSync(join(tmpdir(), "tsnats-e2e-fulldisk-"));
  try {
    execFileSync("mount", ["-t", "tmpfs", "-o", `size=${MOUNT_BYTES}`, "tmpfs", mnt], { stdio: "pipe" });
    mounted = true;
  } catch (e) {
    skipWhy = `cannot mount a tmpfs here (needs root): ${(e as Error).message.split("\n")[0]}`;
  }
});

after(() => {
  if (mounted) execFileSync("umount", ["-l", mnt]);
  rmSync(mnt, { recursive: true, force: true });
});

interface Env {
  child: ChildServer;
  nc: NatsConnection;
  jsm: JetStreamManager;
  js: JetStreamClient;
}

async function boot(store: string): Promise<Env> {
  const child = await startTsnatsChild(["-a", "127.0.0.1", "-p", "-1", "-js", "-sd", store]);
  const nc = await connect({ servers: child.url, reconnect: false });
  return { child, nc, jsm: await jetstreamManager(nc), js: jetstream(nc) };
}

/** A store directory on the tmpfs (null, the test skipped, where nothing could be mounted). */
function tmpfsStore(t: { skip(why: string): void }, name: string): string | null {
  if (!mounted) {
    t.skip(skipWhy);
    return null;
  }
  const store = join(mnt, name);
  mkdirSync(store);
  return store;
}

async function stop(env: Env): Promise<void> {
  await env.nc.close();
  await env.child.stop();
}

function body(i: number): Buffer {
  const b = Buffer.alloc(1024);
  for (let k = 0; k < b.length; k++) b[k] = (i * 131 + k * 17) & 0xff;
  return b;
}

function msgId(i: number): { msgID: string } {
  return { msgID: `m-${i}` };
}

void test("a full disk: 10077 for what does not fit, acknowledged messages kept, the stream takes messages again once there is room", async (t) => {
  const store = tmpfsStore(t, "store");
  if (store === null) return;
  let env = await boot(store);
  try {
    await env.jsm.streams.add({ name: "FULL", subjects: ["full.>"] });
    await env.jsm.streams.add({ name: "MEM", subjects: ["mem.>"], storage: "memory" as never });
    await env.jsm.consumers.add("FULL", { durable_name: "reader", ack_policy: AckPolicy.Explicit });
    // A file stream sourcing a memory stream: its copies fail on the full disk too, and it
    // must end up with every origin message exactly once.
    await env.jsm.streams.add({ name: "MEMO", subjects: ["memo.>"], storage: "memory" as never });
    await env.jsm.streams.add({ name: "SRC", sources: [{ name: "MEMO" }] });
    const memo: string[] = [];
    const pubMemo = async (n: number): Promise<void> => {
      for (let i = 0; i < n; i++) {
        const v = `memo-${memo.length}-${"m".repeat(8000)}`; // 20 of them do not fit in what is left
        await env.js.publish("memo.x", v);
        memo.push(v);
      }
    };
    await pubMemo(5);
    const jsm0 = env.jsm;
    await until("SRC copied the first five", async () => (await jsm0.streams.info("SRC")).state.messages === 5);
    const adv = new Advisories(env.nc, "$JS.EVENT.ADVISORY.SERVER.OUT_OF_STORAGE");

    // Fill the disk but for a little room.
    const ballast = join(mnt, "ballast");
    const fsStat = statfsSync(mnt);
    writeFileSync(ballast, Buffer.alloc(Math.max(0, fsStat.bavail * fsStat.bsize - ROOM_BYTES)));

    const acked = new Map<number, Buffer>();
    let failedAt = -1;
    for (let i = 1; i < 10_000; i++) {
      try {
        const pa = await env.js.publish(`full.${i % 3}`, body(i), msgId(i));
        assert.equal(pa.duplicate, false);
        acked.set(pa.seq, body(i));
      } catch (e) {
        assert.equal(errCode(e), 10077, String(e));
        assert.match(String(e), /no space left on device/);
        failedAt = i;
        break;
      }
    }
    assert.ok(failedAt > 1 && acked.size > 0, `the disk filled after ${acked.size} publishes`);
    const lastAcked = Math.max(...acked.keys());

    // The retry of the message that failed is refused too, not answered as a duplicate.
    try {
      await env.js.publish(`full.${failedAt % 3}`, body(failedAt), msgId(failedAt));
      assert.fail("a publish to a stream whose store stopped succeeded");
    } catch (e) {
      assert.equal(errCode(e), 10077, String(e));
    }

    const [a] = await adv.wait(1);
    assert.equal(a?.body["type"], "io.nats.jetstream.advisory.v1.server_out_of_space");
    assert.equal(a?.body["stream"], "FULL");

    // The rest of the server carries on: core request/reply and a memory stream.
    const svc = env.nc.subscribe("svc.echo", {
      callback: (_e, m) => {
        m.respond(m.data);
      },
    });
    const r = await env.nc.request("svc.echo", "ping", { timeout: 5_000 });
    assert.equal(r.string(), "ping");
    svc.unsubscribe();
    assert.equal((await env.js.publish("mem.x", "in memory")).seq, 1);
    await pubMemo(20); // SRC cannot store these copies now

    // The stream reopens from disk holding exactly what was acknowledged; still full, it
    // refuses again.
    const jsm = env.jsm;
    await until("FULL reopened with the acknowledged messages", async () => {
      const si = await jsm.streams.info("FULL");
      return si.state.messages === acked.size && si.state.last_seq === lastAcked;
    });

    // Room again: the same message goes in as the next sequence, not as a duplicate.
    unlinkSync(ballast);
    const js = env.js;
    let seq = 0;
    await until(
      "a publish succeeds once there is room",
      async () => {
        try {
          const pa = await js.publish(`full.${failedAt % 3}`, body(failedAt), msgId(failedAt));
          assert.equal(pa.duplicate, false);
          seq = pa.seq;
          return true;
        } catch (e) {
          assert.equal(errCode(e), 10077, String(e));
          return false;
        }
      },
      20_000,
    );
    assert.equal(seq, lastAcked + 1);
    acked.set(seq, body(failedAt));
    // And once: the duplicate window knows it now.
    assert.equal((await env.js.publish(`full.${failedAt % 3}`, body(failedAt), msgId(failedAt))).duplicate, true);

    assert.match(env.child.log(), /stream .\$G > SRC. stopped storing/, "SRC hit the full disk too");
    // SRC caught up once there was room: every origin message exactly once, in order.
    await until("SRC holds every MEMO message", async () => (await jsm.streams.info("SRC")).state.messages >= memo.length, 20_000);
    const copied: string[] = [];
    const srcInfo = await env.jsm.streams.info("SRC");
    for (let q = srcInfo.state.first_seq; q <= srcInfo.state.last_seq; q++) {
      const sm = await env.jsm.streams.getMessage("SRC", { seq: q });
      if (sm !== null) copied.push(sm.string());
    }
    assert.deepEqual(copied, memo, "SRC: each MEMO message once, in order");

    // The durable consumer came back with the stream and reads on.
    const c = await env.js.consumers.get("FULL", "reader");
    const m = await c.next({ expires: 5_000 });
    assert.ok(m !== null);
    assert.equal(m.seq, 1);
    assert.ok(Buffer.from(m.data).equals(acked.get(1)!), "the consumer reads the first message");

    for (const [s, p] of acked) {
      const sm = await env.jsm.streams.getMessage("FULL", { seq: s });
      assert.ok(sm !== null, `seq ${s}`);
      assert.ok(Buffer.from(sm.data).equals(p), `seq ${s}`);
    }

    // Across a restart: the same messages.
    await stop(env);
    env = await boot(store);
    const si = await env.jsm.streams.info("FULL");
    assert.equal(si.state.messages, acked.size);
    assert.equal(si.state.last_seq, seq);
    for (const [s, p] of acked) {
      const sm = await env.jsm.streams.getMessage("FULL", { seq: s });
      assert.ok(sm !== null, `seq ${s} after restart`);
      assert.ok(Buffer.from(sm.data).equals(p), `seq ${s} after restart`);
    }
    const log = env.child.log();
    assert.doesNotMatch(log, /recovery dropped/, "no damaged records after the full disk");
  } finally {
    await stop(env);
  }
});

void test("a full disk under a consumer: a double ack is not answered until its state is on disk", async (t) => {
  const store = tmpfsStore(t, "store-acks");
  if (store === null) return;
  let env = await boot(store);
  const ballast = join(mnt, "ballast-acks");
  try {
    await env.jsm.streams.add({ name: "ACKS", subjects: ["acks.>"] });
    await env.jsm.consumers.add("ACKS", { durable_name: "c", ack_policy: AckPolicy.Explicit, max_ack_pending: -1 });
    for (let i = 0; i < 2000; i++) await env.js.publish("acks.x", `m${i}`);
    const c = await env.js.consumers.get("ACKS", "c");
    const got: JsMsg[] = [];
    const it = await c.fetch({ max_messages: 2000, expires: 10_000 });
    for await (const m of it) got.push(m);
    assert.equal(got.length, 2000);
    // 2000 pending deliveries: each consumer state snapshot is several KiB, so writing one
    // needs new pages on the tmpfs. Now take every free page.
    const fsStat = statfsSync(mnt);
    writeFileSync(ballast, Buffer.alloc(fsStat.bavail * fsStat.bsize));
    await assert.rejects(got[0]!.ackAck({ timeout: 1_500 }), /timeout|TIMEOUT/i, "no answer while the ack cannot be made durable");
    unlinkSync(ballast);
    // nats.js acks a message once: each try takes the next one.
    let next = 1;
    await until(
      "a double ack is answered once there is room",
      async () => got[next++]!.ackAck({ timeout: 1_500 }).catch(() => false),
      15_000,
    );
    const ackedN = next; // got[0 .. next - 1] were all acked (the early ones without an answer)
    const ci = await env.jsm.consumers.info("ACKS", "c");
    assert.equal(ci.num_ack_pending, 2000 - ackedN, "every ack applied");
    await stop(env);
    env = await boot(store);
    const after = await env.jsm.consumers.info("ACKS", "c");
    assert.equal(after.num_ack_pending, 2000 - ackedN, "the acks survived a restart");
    assert.equal(after.ack_floor.stream_seq, ackedN);
  } finally {
    rmSync(ballast, { force: true });
    await stop(env);
  }
});
