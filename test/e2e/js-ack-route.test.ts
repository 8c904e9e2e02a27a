// Client acks handed straight to their consumer (Server.routeAck): a plain PUB to
// $JS.ACK.<stream>.<consumer>.<5 numbers> skips the subject string and the routing lookup
// while the consumer's ack subscription is the only one such a subject can match. These
// tests pin down that the shortcut changes nothing a client can see: acks count once, a
// subscriber on $JS.ACK.> still gets every ack, odd subjects go the usual way, and
// publish permissions still apply.
import { test } from "node:test";
import assert from "node:assert/strict";
import { connect, type Msg } from "@nats-io/transport-node";
import { AckPolicy } from "@nats-io/jetstream";
import type { UserEntry } from "../../src/server/options.js";
import { bootJs, until, type JsEnv } from "../helpers/js-consumer.js";

const boot = (users: UserEntry[] | null = null): Promise<JsEnv> => bootJs("ackroute", users);

/** A stream with n messages and a push consumer with explicit acks; the deliveries' ack
 *  subjects, in order, once all n have arrived (none is acked yet). */
async function pushSetup(env: JsEnv, stream: string, n: number): Promise<string[]> {
  await env.jsm.streams.add({ name: stream, subjects: [`${stream}.>`] });
  for (let i = 0; i < n; i++) env.nc.publish(`${stream}.m`, `m${i}`);
  await env.nc.flush();
  await until(`${n} stored`, async () => (await env.jsm.streams.info(stream)).state.messages === n, 5000);
  const deliver = `deliver.${stream}`;
  const replies: string[] = [];
  env.nc.subscribe(deliver, {
    callback: (_e, m: Msg) => {
      replies.push(m.reply ?? "");
    },
  });
  await env.nc.flush();
  await env.jsm.consumers.add(stream, { durable_name: "C", deliver_subject: deliver, ack_policy: AckPolicy.Explicit, ack_wait: 60_000_000_000 });
  await until(`${n} deliveries`, () => replies.length === n, 5000);
  return replies;
}

async function ackPending(env: JsEnv, stream: string): Promise<number> {
  return (await env.jsm.consumers.info(stream, "C")).num_ack_pending;
}

void test("plain acks reach the consumer without a routing lookup, and each counts once", async () => {
  const env = await boot();
  try {
    const replies = await pushSetup(env, "AR1", 20);
    assert.equal(await ackPending(env, "AR1"), 20);
    const sl = env.srv.server.sublist;
    const before = sl.stats().num_matches;
    for (const r of replies.slice(0, 10)) env.nc.publish(r); // empty payload = +ACK
    for (const r of replies.slice(0, 10)) env.nc.publish(r, "+ACK"); // the same acks again
    await env.nc.flush();
    const matched = sl.stats().num_matches - before;
    // The acks made no match; what matched is the PING/flush machinery and nothing per ack.
    assert.ok(matched < 10, `${matched} routing lookups for 20 acks`);
    await until("10 acked", async () => (await ackPending(env, "AR1")) === 10, 5000);
    const ci = await env.jsm.consumers.info("AR1", "C");
    assert.equal(ci.ack_floor.stream_seq, 10);
    assert.equal(ci.num_redelivered, 0);
    for (const r of replies.slice(10)) env.nc.publish(r);
    await env.nc.flush();
    await until("all acked", async () => (await ackPending(env, "AR1")) === 0, 5000);
    assert.equal((await env.jsm.consumers.info("AR1", "C")).ack_floor.stream_seq, 20);
  } finally {
    await env.close();
  }
});

void test("a subscriber on $JS.ACK.> still receives every ack, and the consumer still applies them", async () => {
  const env = await boot();
  try {
    const replies = await pushSetup(env, "AR2", 6);
    const mon = await connect({ servers: env.srv.url });
    try {
      const seen: string[] = [];
      mon.subscribe("$JS.ACK.>", {
        callback: (_e, m: Msg) => {
          seen.push(`${m.subject} ${m.string()}`);
        },
      });
      await mon.flush();
      env.nc.publish(replies[0]!);
      env.nc.publish(replies[1]!, "+ACK");
      env.nc.publish(replies[2]!, "-NAK");
      await env.nc.flush();
      await until("3 acks seen by the monitor", () => seen.length === 3, 5000);
      assert.deepEqual(seen, [`${replies[0]} `, `${replies[1]} +ACK`, `${replies[2]} -NAK`]);
      await until("2 acked", async () => (await ackPending(env, "AR2")) === 4, 5000);
      // The monitor leaves: acks take the short way again and still count.
      await mon.close();
      await until("monitor gone", () => env.srv.server.clients.size === 1, 5000);
      for (const r of replies.slice(3, 6)) env.nc.publish(r);
      await env.nc.flush();
      // seq 3 was NAKed (redelivered at once, pending again); 4..6 are acked now.
      await until("only the NAKed one pending", async () => (await ackPending(env, "AR2")) === 1, 5000);
      assert.equal((await env.jsm.consumers.info("AR2", "C")).ack_floor.stream_seq, 2);
      // Its redelivery's ack (through the short way) clears it.
      await until("seq 3 redelivered", () => replies.length >= 7, 5000);
      env.nc.publish(replies[6]!);
      await env.nc.flush();
      await until("all acked", async () => (await ackPending(env, "AR2")) === 0, 5000);
      assert.equal((await env.jsm.consumers.info("AR2", "C")).ack_floor.stream_seq, 6);
    } finally {
      if (!mon.isClosed()) await mon.close();
    }
  } finally {
    await env.close();
  }
});

void test("ack subjects that are not five numbers go the usual way and change nothing", async () => {
  const env = await boot();
  try {
    const replies = await pushSetup(env, "AR3", 3);
    const tokens = replies[0]!.split("."); // $JS ACK AR3 C dc sseq cseq ts pending
    const odd = [
      `$JS.ACK.AR3.C.1.x.1.1.1`,
      `$JS.ACK.AR3.C.1.1`,
      `$JS.ACK.AR3.C.${tokens.slice(4, 8).join(".")}`, // four numbers
      `$JS.ACK.AR3.C.${tokens.slice(4).join(".")}.7`, // six numbers
      `$JS.ACK.AR3.C..${tokens.slice(5).join(".")}`, // an empty token
      `$JS.ACK.AR3.C.${tokens.slice(4).join(".")}.`, // a trailing dot
      `$JS.ACK.AR3.NOPE.${tokens.slice(4).join(".")}`, // another consumer's prefix
      `$JS.ACK.AR3.C.${tokens.slice(4).join(".")}`.replace(".ACK.", ".ACK.."), // empty stream token
    ];
    for (const s of odd) env.nc.publish(s);
    await env.nc.flush();
    // A real ack after them proves they were all processed (one connection, in order).
    env.nc.publish(replies[2]!);
    await env.nc.flush();
    await until("the real ack applied", async () => (await ackPending(env, "AR3")) === 2, 5000);
    const ci = await env.jsm.consumers.info("AR3", "C");
    assert.equal(ci.ack_floor.stream_seq, 0, "seq 1 is still pending: none of the odd subjects acked it");
    assert.equal(ci.num_ack_pending, 2);
  } finally {
    await env.close();
  }
});

void test("publish permissions apply to acks: a denied ack is refused and not applied", async () => {
  const users: UserEntry[] = [
    { user: "admin", password: "admin", permissions: null },
    {
      user: "ro",
      password: "ro",
      permissions: { publish: { allow: [">"], deny: ["$JS.ACK.>"] }, subscribe: null, response: null },
    },
  ];
  const env = await boot(users);
  try {
    const replies = await pushSetup(env, "AR4", 2);
    const ro = await connect({ servers: env.srv.url, user: "ro", pass: "ro" });
    const errs: string[] = [];
    void (async () => {
      for await (const s of ro.status()) if (s.type === "error") errs.push(String((s as { error?: unknown }).error));
    })();
    try {
      ro.publish(replies[0]!);
      await ro.flush().catch(() => undefined);
      await until("permissions violation reported", () => errs.some((e) => e.includes("Permissions Violation for Publish")), 5000);
      assert.equal(await ackPending(env, "AR4"), 2, "the refused ack was not applied");
      // The same ack from a permitted user is applied.
      env.nc.publish(replies[0]!);
      await env.nc.flush();
      await until("acked by admin", async () => (await ackPending(env, "AR4")) === 1, 5000);
    } finally {
      await ro.close();
    }
  } finally {
    await env.close();
  }
});
