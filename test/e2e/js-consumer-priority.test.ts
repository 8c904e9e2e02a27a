// Pull consumer priority groups (ADR-42) end to end against an in-process tsnats: overflow
// thresholds, pinned_client (Nats-Pin-Id, 423s, standby requests, UNPIN, timeout, the
// PINNED/UNPINNED advisories, priority_groups in info), prioritized order, and the status
// lines and err_codes of bad requests. @nats-io/jetstream's fetch/consume with `group`,
// `min_pending`, `priority` and jsm.consumers.unpin; raw requests where order matters.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { createInbox, type Msg, type NatsConnection, type Subscription } from "@nats-io/transport-node";
import { AckPolicy, type ConsumerConfig, type ConsumerInfo, type JsMsg } from "@nats-io/jetstream";
import { Advisories, bootJs, rejects, seqs, until, type JsEnv } from "../helpers/js-consumer.js";

let env: JsEnv;

// The policy names as ConsumerConfig types them (nats.js exports PriorityPolicy as a type only).
const OVERFLOW = "overflow" as ConsumerConfig["priority_policy"];
const PINNED = "pinned_client" as ConsumerConfig["priority_policy"];
const PRIORITIZED = "prioritized" as ConsumerConfig["priority_policy"];

/** Consumer info's priority_groups (not in nats.js' ConsumerInfo type). */
const groupsOf = (ci: ConsumerInfo): { group: string; pinned_client_id?: string; pinned_ts?: string }[] | undefined =>
  (ci as unknown as { priority_groups?: { group: string; pinned_client_id?: string; pinned_ts?: string }[] }).priority_groups;

before(async () => {
  env = await bootJs("jscons-prio");
});

after(async () => {
  await env.close();
});

async function publishN(subject: string, n: number): Promise<void> {
  for (let i = 0; i < n; i++) await env.js.publish(subject, `m${i + 1}`);
}

/** One raw pull request on its own inbox; collects what comes back. */
class RawPull {
  readonly got: Msg[] = [];
  private readonly sub: Subscription;
  constructor(nc: NatsConnection, stream: string, consumer: string, body: Record<string, unknown>) {
    const inbox = createInbox();
    this.sub = nc.subscribe(inbox, {
      callback: (_e, m) => {
        this.got.push(m);
      },
    });
    nc.publish(`$JS.API.CONSUMER.MSG.NEXT.${stream}.${consumer}`, JSON.stringify(body), { reply: inbox });
  }
  async wait(n: number): Promise<Msg[]> {
    await until(`${n} replies on a pull request (have ${this.got.length})`, () => this.got.length >= n);
    return this.got;
  }
  stop(): void {
    this.sub.unsubscribe();
  }
}

const statusOf = (m: Msg): string => `${m.headers?.code ?? 0} ${m.headers?.description ?? ""}`;
const seqOf = (m: Msg): number => Number((m.reply ?? "").split(".")[5]);
const pinOf = (m: Msg | JsMsg): string => m.headers?.get("Nats-Pin-Id") ?? "";

async function rawOnce(stream: string, consumer: string, body: Record<string, unknown> | string): Promise<string> {
  const m = await env.nc.request(`$JS.API.CONSUMER.MSG.NEXT.${stream}.${consumer}`, typeof body === "string" ? body : JSON.stringify(body), {
    timeout: 5_000,
    noMux: true,
  });
  return statusOf(m);
}

async function numWaiting(stream: string, consumer: string): Promise<number> {
  return (await env.jsm.consumers.info(stream, consumer)).num_waiting;
}

void test("pull requests without a valid group, or with fields of another policy, get nats-server's 400s", async () => {
  const { jsm } = env;
  await jsm.streams.add({ name: "PBAD", subjects: ["pbad.>"] });
  await jsm.consumers.add("PBAD", { durable_name: "OV", ack_policy: AckPolicy.Explicit, priority_policy: OVERFLOW, priority_groups: ["A"] });
  await jsm.consumers.add("PBAD", { durable_name: "PC", ack_policy: AckPolicy.Explicit, priority_policy: PINNED, priority_groups: ["A"] });
  await jsm.consumers.add("PBAD", { durable_name: "PLAIN", ack_policy: AckPolicy.Explicit });
  assert.equal(await rawOnce("PBAD", "OV", { batch: 1, no_wait: true }), "400 Bad Request - Priority Group missing");
  assert.equal(await rawOnce("PBAD", "OV", { batch: 1, no_wait: true, group: "B" }), "400 Bad Request - Invalid Priority Group");
  assert.equal(await rawOnce("PBAD", "OV", { batch: 1, no_wait: true, group: "A", id: "X" }), "400 Bad Request - Not a Pinned Client Priority consumer");
  assert.equal(await rawOnce("PBAD", "PC", { batch: 1, no_wait: true, group: "A", min_pending: 1 }), "400 Bad Request - Not a Overflow Priority consumer");
  assert.equal(await rawOnce("PBAD", "PC", { batch: 1, no_wait: true, group: "A", priority: 10 }), "400 Bad Request - Priority must be between 0 and 9");
  assert.equal(await rawOnce("PBAD", "PLAIN", { batch: 1, no_wait: true, min_ack_pending: 1 }), "400 Bad Request - Not a Overflow Priority consumer");
  // Accepted: a valid group (nothing stored, so no_wait ends with 404); a group on a
  // consumer without a policy is ignored; a bare batch number carries no group at all.
  assert.equal(await rawOnce("PBAD", "OV", { batch: 1, no_wait: true, group: "A" }), "404 No Messages");
  assert.equal(await rawOnce("PBAD", "PLAIN", { batch: 1, no_wait: true, group: "Z" }), "404 No Messages");
  // nats.js fetch without the group: the 400 ends the fetch with an error.
  const c = await env.js.consumers.get("PBAD", "OV");
  await assert.rejects(
    (async () => {
      for await (const _m of await c.fetch({ max_messages: 1, expires: 2_000 })) void _m;
    })(),
    /priority group missing/i,
  );
  await jsm.streams.delete("PBAD");
});

void test("consumer config: priority err_codes over the API, the 2m default timeout, priority_groups in info", async () => {
  const { jsm } = env;
  await jsm.streams.add({ name: "PCFG", subjects: ["pcfg.>"] });
  const add = (cfg: Record<string, unknown>): Promise<unknown> =>
    env.nc.request("$JS.API.CONSUMER.CREATE.PCFG", JSON.stringify({ stream_name: "PCFG", config: { ack_policy: "explicit", ...cfg } })).then((m) => m.json());
  const code = async (cfg: Record<string, unknown>): Promise<number> => ((await add(cfg)) as { error?: { err_code: number } }).error?.err_code ?? 0;
  assert.equal(await code({ priority_policy: "overflow" }), 10159);
  assert.equal(await code({ priority_policy: "overflow", priority_groups: [""] }), 10161);
  assert.equal(await code({ priority_policy: "overflow", priority_groups: ["bad group"] }), 10162);
  assert.equal(await code({ priority_policy: "pinned_client", priority_groups: ["A"], deliver_subject: "pcfg-out" }), 10178);
  assert.equal(await code({ priority_groups: ["A"] }), 10196);
  assert.equal(await code({ priority_timeout: 1_000_000_000 }), 10197);
  const ci = await jsm.consumers.add("PCFG", { durable_name: "PIN", ack_policy: AckPolicy.Explicit, priority_policy: PINNED, priority_groups: ["A", "B"] });
  assert.equal(ci.config.priority_timeout, 120_000_000_000);
  assert.equal(ci.config.metadata?.["_nats.req.level"], "1");
  assert.deepEqual(groupsOf(ci), [{ group: "A", pinned_ts: "0001-01-01T00:00:00Z" }]);
  await jsm.streams.delete("PCFG");
});

void test("overflow: min_pending / min_ack_pending requests are served only past their thresholds", async () => {
  const { jsm, js } = env;
  await jsm.streams.add({ name: "POV", subjects: ["pov.>"] });
  await publishN("pov.x", 5);
  await jsm.consumers.add("POV", { durable_name: "C", ack_policy: AckPolicy.Explicit, priority_policy: OVERFLOW, priority_groups: ["jobs"] });
  const c = await js.consumers.get("POV", "C");
  // num_pending is 5: a request wanting 10 gets nothing until it expires.
  const none: JsMsg[] = [];
  for await (const m of await c.fetch({ group: "jobs", min_pending: 10, max_messages: 5, expires: 1_000 })) none.push(m);
  assert.equal(none.length, 0);
  // min_pending 3: served while num_pending (counting the message going out) is at least 3.
  const some: JsMsg[] = [];
  for await (const m of await c.fetch({ group: "jobs", min_pending: 3, max_messages: 10, expires: 1_000 })) some.push(m);
  assert.deepEqual(seqs(some), [1, 2, 3]);
  assert.equal((await c.info()).num_pending, 2);
  // min_ack_pending 3: three are unacknowledged, so this one is served; acks bring it below.
  const ack = new RawPull(env.nc, "POV", "C", { batch: 1, group: "jobs", min_ack_pending: 3, expires: 30_000_000_000 });
  assert.deepEqual((await ack.wait(1)).map(seqOf), [4]);
  ack.stop();
  for (const m of some) await m.ackAck();
  const held = new RawPull(env.nc, "POV", "C", { batch: 1, group: "jobs", min_ack_pending: 3, expires: 30_000_000_000 });
  await until("the held request queued", async () => (await numWaiting("POV", "C")) === 1);
  // A plain request of the group takes the message the held one may not.
  const plain: JsMsg[] = [];
  for await (const m of await c.fetch({ group: "jobs", max_messages: 1, expires: 2_000 })) plain.push(m);
  assert.deepEqual(seqs(plain), [5]);
  assert.equal(held.got.length, 0);
  held.stop();
  await jsm.streams.delete("POV");
});

void test("pinned_client: one pinned request gets everything with Nats-Pin-Id, standby waits, 423s, UNPIN and advisories", async () => {
  const { jsm, nc } = env;
  await jsm.streams.add({ name: "PIN", subjects: ["pin.>"] });
  await jsm.consumers.add("PIN", { durable_name: "C", ack_policy: AckPolicy.Explicit, priority_policy: PINNED, priority_groups: ["A"], priority_timeout: 60_000_000_000 });
  const adv = new Advisories(nc, "$JS.EVENT.ADVISORY.CONSUMER.*.PIN.C");
  await nc.flush();
  await publishN("pin.x", 1);
  const first = new RawPull(nc, "PIN", "C", { batch: 1, group: "A", expires: 30_000_000_000 });
  const [m1] = await first.wait(1);
  assert.equal(seqOf(m1!), 1);
  const pin = pinOf(m1!);
  assert.equal(pin.length, 22);
  const [pinned] = await adv.wait(1);
  assert.equal(pinned!.subject, "$JS.EVENT.ADVISORY.CONSUMER.PINNED.PIN.C");
  assert.equal(pinned!.body["type"], "io.nats.jetstream.advisory.v1.consumer_group_pinned");
  assert.equal(pinned!.body["group"], "A");
  assert.equal(pinned!.body["pinned_id"], pin);
  let ci = await jsm.consumers.info("PIN", "C");
  assert.equal(groupsOf(ci)?.[0]?.group, "A");
  assert.equal(groupsOf(ci)?.[0]?.pinned_client_id, pin);
  assert.notEqual(groupsOf(ci)?.[0]?.pinned_ts, "0001-01-01T00:00:00Z");

  // Another id is refused at once; a request without one waits as standby while the pinned
  // client's next request, sent later, is served first.
  assert.equal(await rawOnce("PIN", "C", { batch: 1, group: "A", id: "not-the-pin", expires: 1_000_000_000 }), "423 Nats-Pin-Id mismatch");
  const standby = new RawPull(nc, "PIN", "C", { batch: 1, group: "A", expires: 60_000_000_000 });
  await until("standby queued", async () => (await numWaiting("PIN", "C")) === 1);
  const again = new RawPull(nc, "PIN", "C", { batch: 1, group: "A", id: pin, expires: 30_000_000_000 });
  await until("both queued", async () => (await numWaiting("PIN", "C")) === 2);
  await publishN("pin.x", 1);
  const [m2] = await again.wait(1);
  assert.deepEqual([seqOf(m2!), pinOf(m2!)], [2, pin]);
  assert.equal(standby.got.length, 0);

  // UNPIN: answered, announced; the standby request becomes the pinned one.
  const un = await jsm.consumers.unpin("PIN", "C", "A");
  assert.deepEqual(un, { type: "io.nats.jetstream.api.v1.consumer_unpin_response" });
  const afterUnpin = await adv.wait(2);
  assert.equal(afterUnpin[1]!.subject, "$JS.EVENT.ADVISORY.CONSUMER.UNPINNED.PIN.C");
  assert.equal(afterUnpin[1]!.body["reason"], "admin");
  assert.equal(afterUnpin[1]!.body["group"], "A");
  ci = await jsm.consumers.info("PIN", "C");
  assert.deepEqual(groupsOf(ci), [{ group: "A", pinned_ts: "0001-01-01T00:00:00Z" }]);
  await publishN("pin.x", 1);
  const [m3] = await standby.wait(1);
  const pin2 = pinOf(m3!);
  assert.equal(seqOf(m3!), 3);
  assert.ok(pin2 !== "" && pin2 !== pin);
  assert.equal((await adv.wait(3))[2]!.body["pinned_id"], pin2);
  assert.equal(await rawOnce("PIN", "C", { batch: 1, group: "A", id: pin, expires: 1_000_000_000 }), "423 Nats-Pin-Id mismatch");

  // A queued request with an old id, once a new pin is to be chosen, gets 423
  // Nats-Wrong-Pin-Id with its pending counts; a request without an id takes the pin.
  await jsm.consumers.unpin("PIN", "C", "A");
  const stale = new RawPull(nc, "PIN", "C", { batch: 3, group: "A", id: pin2, expires: 60_000_000_000 });
  const fresh = new RawPull(nc, "PIN", "C", { batch: 1, group: "A", expires: 60_000_000_000 });
  await until("stale and fresh queued", async () => (await numWaiting("PIN", "C")) === 2);
  await publishN("pin.x", 1);
  const [s] = await stale.wait(1);
  assert.equal(statusOf(s!), "423 Nats-Wrong-Pin-Id");
  assert.equal(s!.headers?.get("Nats-Pending-Messages"), "3");
  assert.equal(s!.headers?.get("Nats-Pending-Bytes"), "0");
  const [m4] = await fresh.wait(1);
  assert.equal(seqOf(m4!), 4);
  assert.ok(![pin, pin2, ""].includes(pinOf(m4!)));
  for (const r of [first, standby, again, stale, fresh]) r.stop();
  adv.stop();
  await jsm.streams.delete("PIN");
});

void test("pinned_client: the pin lapses after priority_timeout without pulls (UNPINNED timeout)", async () => {
  const { jsm, nc } = env;
  await jsm.streams.add({ name: "PTO", subjects: ["pto.>"] });
  await jsm.consumers.add("PTO", { durable_name: "C", ack_policy: AckPolicy.Explicit, priority_policy: PINNED, priority_groups: ["A"], priority_timeout: 300_000_000 });
  const adv = new Advisories(nc, "$JS.EVENT.ADVISORY.CONSUMER.UNPINNED.PTO.C");
  await nc.flush();
  await publishN("pto.x", 2);
  const r = new RawPull(nc, "PTO", "C", { batch: 1, group: "A", expires: 5_000_000_000 });
  const [m] = await r.wait(1);
  assert.ok(pinOf(m!) !== "");
  const [u] = await adv.wait(1);
  assert.equal(u!.body["reason"], "timeout");
  const ci = await jsm.consumers.info("PTO", "C");
  assert.equal(groupsOf(ci)?.[0]?.pinned_client_id, undefined);
  // The old pin is stale now: a request carrying it is queued and refused with 423 once a
  // message is ready (no pin to compare with when it arrived).
  const old = new RawPull(nc, "PTO", "C", { batch: 1, group: "A", id: pinOf(m!), expires: 5_000_000_000 });
  const [o] = await old.wait(1);
  assert.equal(statusOf(o!), "423 Nats-Wrong-Pin-Id");
  r.stop();
  old.stop();
  adv.stop();
  await jsm.streams.delete("PTO");
});

void test("pinned_client with nats.js consume: all messages go to the pinned consumer, UNPIN moves the pin", async () => {
  const { jsm, js } = env;
  await jsm.streams.add({ name: "PJS", subjects: ["pjs.>"] });
  await jsm.consumers.add("PJS", { durable_name: "C", ack_policy: AckPolicy.Explicit, priority_policy: PINNED, priority_groups: ["A"] });
  const byPin = new Map<string, Set<number>>();
  const got: { who: number; seq: number; pin: string }[] = [];
  const iters: { close(): Promise<void | Error> }[] = [];
  const run = async (who: number): Promise<void> => {
    const c = await js.consumers.get("PJS", "C");
    const it = await c.consume({ group: "A", max_messages: 5, expires: 2_000 });
    iters.push(it);
    for await (const m of it) {
      const pin = pinOf(m);
      got.push({ who, seq: m.seq, pin });
      if (!byPin.has(pin)) byPin.set(pin, new Set());
      byPin.get(pin)!.add(who);
      m.ack();
    }
  };
  const both = Promise.all([run(1), run(2)]);
  await until("both consumers pulling", async () => (await numWaiting("PJS", "C")) >= 2);
  await publishN("pjs.x", 20);
  await until("20 delivered", () => got.length >= 20);
  const firstPin = got[0]!.pin;
  assert.ok(firstPin !== "");
  assert.ok(got.every((g) => g.pin === firstPin));
  await jsm.consumers.unpin("PJS", "C", "A");
  await publishN("pjs.x", 20);
  await until("40 delivered", () => got.length >= 40, 20_000);
  for (const it of iters) await it.close();
  await both;
  // Each pin went to exactly one consumer, and the messages after UNPIN carry a new pin.
  for (const [pin, who] of byPin) assert.equal(who.size, 1, `pin ${pin} went to ${[...who].join(",")}`);
  assert.ok(got.slice(20).every((g) => g.pin !== firstPin && g.pin !== ""));
  assert.deepEqual(
    got.map((g) => g.seq).sort((a, b) => a - b),
    Array.from({ length: 40 }, (_, i) => i + 1),
  );
  await jsm.streams.delete("PJS");
});

void test("prioritized: the lowest priority request is served first, whatever the arrival order", async () => {
  const { jsm, js, nc } = env;
  await jsm.streams.add({ name: "PPR", subjects: ["ppr.>"] });
  await jsm.consumers.add("PPR", { durable_name: "C", ack_policy: AckPolicy.Explicit, priority_policy: PRIORITIZED, priority_groups: ["A"] });
  const p5 = new RawPull(nc, "PPR", "C", { batch: 1, group: "A", priority: 5, expires: 30_000_000_000 });
  const p1 = new RawPull(nc, "PPR", "C", { batch: 1, group: "A", priority: 1, expires: 30_000_000_000 });
  const p0 = new RawPull(nc, "PPR", "C", { batch: 1, group: "A", expires: 30_000_000_000 });
  await until("three queued", async () => (await numWaiting("PPR", "C")) === 3);
  await publishN("ppr.x", 1);
  assert.deepEqual((await p0.wait(1)).map(seqOf), [1]);
  await publishN("ppr.x", 1);
  assert.deepEqual((await p1.wait(1)).map(seqOf), [2]);
  assert.equal(p5.got.length, 0);
  await publishN("ppr.x", 1);
  assert.deepEqual((await p5.wait(1)).map(seqOf), [3]);
  for (const r of [p5, p1, p0]) r.stop();
  // nats.js fetch with a priority.
  await publishN("ppr.x", 2);
  const c = await js.consumers.get("PPR", "C");
  const ms: JsMsg[] = [];
  for await (const m of await c.fetch({ group: "A", priority: 2, max_messages: 2, expires: 2_000 })) ms.push(m);
  assert.deepEqual(seqs(ms), [4, 5]);
  await jsm.streams.delete("PPR");
});

void test("CONSUMER.UNPIN errors: group missing or invalid, unknown group, consumer, stream", async () => {
  const { jsm, nc } = env;
  await jsm.streams.add({ name: "PUN", subjects: ["pun.>"] });
  await jsm.consumers.add("PUN", { durable_name: "C", ack_policy: AckPolicy.Explicit, priority_policy: PINNED, priority_groups: ["A"] });
  const raw = async (subj: string, body: string): Promise<{ type: string; error?: { code: number; err_code: number; description: string } }> =>
    (await nc.request(subj, body)).json();
  const r1 = await raw("$JS.API.CONSUMER.UNPIN.PUN.C", "{}");
  assert.deepEqual(r1, { type: "io.nats.jetstream.api.v1.consumer_unpin_response", error: { code: 400, err_code: 10025, description: "invalid JSON: consumer group not specified" } });
  const r2 = await raw("$JS.API.CONSUMER.UNPIN.PUN.C", "");
  assert.equal(r2.error?.err_code, 10025);
  await rejects(jsm.consumers.unpin("PUN", "C", "a.b"), 10162);
  await rejects(jsm.consumers.unpin("PUN", "C", "B"), 10160);
  await rejects(jsm.consumers.unpin("PUN", "NOPE", "A"), 10014);
  await rejects(jsm.consumers.unpin("NOPE", "C", "A"), 10059);
  await jsm.streams.delete("PUN");
});
