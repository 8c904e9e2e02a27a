import { test } from "node:test";
import assert from "node:assert/strict";
import { Stream, type StreamEnv } from "../../src/stream/stream.js";
import { MemoryStreamStore } from "../../src/storage/index.js";
import { checkStreamConfig, decodeStreamConfig } from "../../src/stream/config.js";
import { ManualClock } from "../../src/runtime/clock.js";
import { nullLogger } from "../../src/server/log.js";
import { FakeBus, startJs } from "./stream-fakebus.js";

class HeldSyncStore extends MemoryStreamStore {
  held: ((err: Error | null) => void)[] = [];
  override sync(cb: (err: Error | null) => void): void {
    this.held.push(cb);
  }
  release(err: Error | null = null): void {
    for (const cb of this.held.splice(0)) cb(err);
  }
}

function setup(domain = ""): { bus: FakeBus; store: HeldSyncStore; stream: Stream; clock: ManualClock } {
  const bus = new FakeBus();
  const clock = new ManualClock();
  const env: StreamEnv = {
    bus,
    clock,
    log: nullLogger,
    domain,
    serverName: "s",
    wouldExceedAccount: () => false,
    canAddConsumer: () => true,
  };
  const cfg = checkStreamConfig(decodeStreamConfig({ name: "G", subjects: ["g"], storage: "memory" }), { get: () => undefined }, false);
  const store = new HeldSyncStore(Stream.storeLimits(cfg), null);
  const stream = new Stream(cfg, store, null, env, clock.nowNs());
  stream.start();
  return { bus, store, stream, clock };
}

void test("PubAcks leave only after the sync, and many publishes share one sync", async () => {
  const { bus, store } = setup();
  const acks: string[] = [];
  bus.subscribe("reply.*", (_s, _r, _h, d) => acks.push(d.toString()));
  for (let i = 0; i < 100; i++) bus.publish("g", `reply.${i}`, null, Buffer.from("x"));
  await new Promise((r) => setImmediate(r));
  assert.equal(acks.length, 0, "no ack before the data is durable");
  assert.equal(store.held.length, 1, "one sync for the whole batch");
  store.release();
  assert.equal(acks.length, 100);
  assert.equal(acks[0], '{"stream":"G","seq":1}');
  assert.equal(acks[99], '{"stream":"G","seq":100}');
  // A second batch while nothing is in flight gets its own sync.
  bus.publish("g", "reply.x", null, Buffer.from("y"));
  await new Promise((r) => setImmediate(r));
  assert.equal(store.held.length, 1);
  store.release();
  assert.equal(acks.length, 101);
});

void test("a failed sync answers every waiting publisher with an error", async () => {
  const { bus, store } = setup();
  const acks: string[] = [];
  bus.subscribe("reply.*", (_s, _r, _h, d) => acks.push(d.toString()));
  for (let i = 0; i < 3; i++) bus.publish("g", `reply.${i}`, null, Buffer.from("x"));
  await new Promise((r) => setImmediate(r));
  store.release(new Error("disk on fire"));
  assert.equal(acks.length, 3);
  const e = JSON.parse(acks[0]!) as { error: { err_code: number } };
  assert.equal(e.error.err_code, 10077);
});

void test("domain appears in PubAcks and the API answers on $JS.<domain>.API", async () => {
  const { bus, store } = setup("hub");
  const acks: string[] = [];
  bus.subscribe("r", (_s, _r, _h, d) => acks.push(d.toString()));
  bus.publish("g", "r", null, Buffer.from("x"));
  await new Promise((r) => setImmediate(r));
  store.release();
  assert.equal(acks[0], '{"stream":"G","domain":"hub","seq":1}');
  const h = await startJs({ domain: "hub" });
  try {
    const r = await h.bus.api("$JS.hub.API.STREAM.CREATE.D", { name: "D" });
    assert.equal((r["config"] as Record<string, unknown>)["name"], "D");
    const info = await h.bus.api("$JS.hub.API.INFO");
    assert.equal(info["domain"], "hub");
  } finally {
    await h.close();
  }
});

void test("advisories and /jsz", async () => {
  const h = await startJs();
  try {
    const seen: string[] = [];
    h.bus.subscribe("$JS.EVENT.ADVISORY.>", (s, _r, _h, d) => seen.push(s + " " + d.toString()));
    await h.bus.api("$JS.API.STREAM.CREATE.A", { name: "A" });
    await h.bus.api("$JS.API.STREAM.UPDATE.A", { name: "A", description: "x" });
    await h.bus.api("$JS.API.STREAM.DELETE.A");
    const kinds = seen.map((s) => s.split(" ")[0]);
    assert.ok(kinds.includes("$JS.EVENT.ADVISORY.STREAM.CREATED.A"));
    assert.ok(kinds.includes("$JS.EVENT.ADVISORY.STREAM.UPDATED.A"));
    assert.ok(kinds.includes("$JS.EVENT.ADVISORY.STREAM.DELETED.A"));
    assert.ok(kinds.includes("$JS.EVENT.ADVISORY.API"));
    const created = JSON.parse(seen.find((s) => s.startsWith("$JS.EVENT.ADVISORY.STREAM.CREATED"))!.split(" ").slice(1).join(" "));
    assert.equal(created.type, "io.nats.jetstream.advisory.v1.stream_action");
    assert.equal(created.action, "create");
    await h.bus.api("$JS.API.STREAM.CREATE.B", { name: "B" });
    await h.bus.pub("B", "x");
    const jsz = h.js.jsz({ accounts: true, streams: true }) as Record<string, any>;
    assert.equal(jsz.streams, 1);
    assert.equal(jsz.messages, 1);
    assert.equal(jsz.account_details[0].stream_detail[0].name, "B");
  } finally {
    await h.close();
  }
});

void test("max_age is driven by the injected clock", async () => {
  const clock = new ManualClock();
  const h = await startJs({}, clock);
  try {
    await h.bus.api("$JS.API.STREAM.CREATE.A", { name: "A", storage: "memory", max_age: 5e9 });
    // The memory store acks on the next tick; the message carries the manual clock's time.
    await h.bus.pub("A", "1");
    clock.advance(3000);
    assert.equal(((await h.bus.api("$JS.API.STREAM.INFO.A"))["state"] as Record<string, number>)["messages"], 1);
    clock.advance(3000);
    assert.equal(((await h.bus.api("$JS.API.STREAM.INFO.A"))["state"] as Record<string, number>)["messages"], 0);
  } finally {
    await h.close();
  }
});

void test("mirror keeps origin sequences across deleted messages; source transforms", async () => {
  const h = await startJs();
  try {
    await h.bus.api("$JS.API.STREAM.CREATE.O", { name: "O", subjects: ["o.>"] });
    for (let i = 0; i < 6; i++) await h.bus.pub(`o.${i}`, String(i));
    await h.bus.api("$JS.API.STREAM.MSG.DELETE.O", { seq: 1 });
    await h.bus.api("$JS.API.STREAM.MSG.DELETE.O", { seq: 3 });
    await h.bus.api("$JS.API.STREAM.CREATE.M", { name: "M", mirror: { name: "O" } });
    await h.bus.api("$JS.API.STREAM.CREATE.X", {
      name: "X",
      sources: [{ name: "O", subject_transforms: [{ src: "o.*", dest: "x.$1" }] }],
    });
    const end = Date.now() + 3000;
    let m: Record<string, any> = {};
    let x: Record<string, any> = {};
    while (Date.now() < end) {
      m = await h.bus.api("$JS.API.STREAM.INFO.M");
      x = await h.bus.api("$JS.API.STREAM.INFO.X");
      if (m.state.messages === 4 && x.state.messages === 4) break;
      await new Promise((r) => setTimeout(r, 10));
    }
    assert.equal(m.state.messages, 4);
    assert.equal(m.state.first_seq, 2);
    assert.equal(m.state.last_seq, 6);
    const g = await h.bus.api("$JS.API.STREAM.MSG.GET.M", { seq: 4 });
    assert.equal((g["message"] as Record<string, unknown>)["subject"], "o.3");
    const gx = await h.bus.api("$JS.API.STREAM.MSG.GET.X", { seq: 1 });
    assert.equal((gx["message"] as Record<string, unknown>)["subject"], "x.1");
  } finally {
    await h.close();
  }
});
