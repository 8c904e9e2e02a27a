// Redelivery timing on a manual clock: a real Consumer with its Ticker and wheel, a memory
// store and a recording bus. nats.js "jetstream - backoff" wants each redelivery within
// 50 ms of its backoff value; the wheel's 10 ms buckets plus a wake-up at the next deadline
// keep it within one bucket, with one timer for the whole consumer layer.

import { test } from "node:test";
import assert from "node:assert/strict";
import { ManualClock } from "../../src/runtime/clock.js";
import { MemoryStreamStore } from "../../src/storage/memory/stream.js";
import { Consumer } from "../../src/consumer/consumer.js";
import { RedeliveryWheel } from "../../src/consumer/wheel.js";
import type { Bus, InternalSubscription } from "../../src/contracts/bus.js";
import { testConsumerConfig, testConsumerEnv, testStream } from "../helpers/consumer-rig.js";

function rig(cfgWire: Record<string, unknown>): { clock: ManualClock; deliveries: { atMs: number; reply: string }[]; consumer: Consumer; timers: () => number } {
  const clock = new ManualClock();
  const store = new MemoryStreamStore(null, null);
  store.storeMsg("r.a", null, Buffer.from("x"), clock.nowNs(), 0);
  const deliveries: { atMs: number; reply: string }[] = [];
  const sub: InternalSubscription = { subject: "", unsubscribe: () => {} };
  const bus: Bus = {
    subscribe: () => sub,
    publish: (subject, reply) => {
      if (subject === "deliver.r" && reply.startsWith("$JS.ACK.")) deliveries.push({ atMs: clock.monoMs(), reply });
    },
    hasInterest: () => true,
  };
  const stream = testStream(store);
  const cfg = testConsumerConfig({ durable_name: "C", deliver_subject: "deliver.r", ack_policy: "explicit", ...cfgWire });
  // Count the clock timers armed at any one time: the layer keeps at most one (plus none per message).
  let armed = 0;
  let maxArmed = 0;
  const setTimer = clock.setTimer.bind(clock);
  const clearTimer = clock.clearTimer.bind(clock);
  clock.setTimer = (fn, ms) => {
    armed++;
    maxArmed = Math.max(maxArmed, armed);
    return setTimer(() => {
      armed--;
      fn();
    }, ms);
  };
  clock.clearTimer = (h) => {
    armed--;
    clearTimer(h);
  };
  const env = testConsumerEnv(bus, clock);
  // Off the coarse tick's phase and the old 50 ms buckets: start 7 ms in.
  clock.advance(7);
  const consumer = new Consumer(env, stream, cfg, clock.nowNs(), null, null);
  stream.addConsumer(consumer);
  consumer.start();
  return { clock, deliveries, consumer, timers: () => maxArmed };
}

void test("backoff redeliveries come within one 10 ms bucket of their deadlines, off one timer", async () => {
  const ms = [250, 1000, 3000];
  const { clock, deliveries, consumer, timers } = rig({ backoff: ms.map((n) => n * 1e6), max_deliver: 4 });
  for (let i = 0; i < 5000 && deliveries.length < 4; i++) clock.advance(1);
  assert.equal(deliveries.length, 4, JSON.stringify(deliveries));
  const gaps = deliveries.slice(1).map((d, i) => d.atMs - deliveries[i]!.atMs);
  for (let i = 0; i < ms.length; i++) {
    assert.ok(gaps[i]! >= ms[i]! && gaps[i]! <= ms[i]! + 10, `redelivery ${i + 1} after ${gaps[i]} ms, backoff ${ms[i]} ms`);
  }
  assert.deepEqual(
    deliveries.map((d) => d.reply.split(".")[4]),
    ["1", "2", "3", "4"],
  );
  assert.ok(timers() <= 2, `at most the ticker's timer (and its re-arm) at once, saw ${timers()}`);
  await consumer.stop(false);
});

void test("a short ack_wait (below the coarse tick) is punctual too", async () => {
  const { clock, deliveries, consumer } = rig({ ack_wait: 30 * 1e6, max_deliver: 3 });
  for (let i = 0; i < 1000 && deliveries.length < 3; i++) clock.advance(1);
  assert.equal(deliveries.length, 3);
  const gaps = deliveries.slice(1).map((d, i) => d.atMs - deliveries[i]!.atMs);
  for (const g of gaps) assert.ok(g >= 30 && g <= 40, `ack_wait 30 ms redelivered after ${g} ms`);
  await consumer.stop(false);
});

void test("wheel: nextDueMs looks ahead to the next live deadline and drops acked buckets", () => {
  const w = new RedeliveryWheel(10);
  w.schedule(1, 245);
  w.schedule(2, 400);
  assert.equal(w.nextDueMs(200, 100), 250);
  w.cancel(1);
  assert.equal(w.nextDueMs(200, 100), Infinity);
  assert.equal(w.nextDueMs(200, 300), 400);
  const out: number[] = [];
  w.expire(399, out);
  assert.deepEqual(out, []);
  w.expire(400, out);
  assert.deepEqual(out, [2]);
  assert.equal(w.nextDueMs(400, 1000), Infinity);
});
