// The stream's expiry timer fires when the store's next message is due (nats-server removes
// a message when its age or TTL is reached), not on a coarse tick after it. Driven by a
// ManualClock, so no timing is measured. Found by nats.js "jsm - message ttls".
import { test } from "node:test";
import assert from "node:assert/strict";
import { Stream, type StreamEnv } from "../../src/stream/stream.js";
import { MemoryStreamStore } from "../../src/storage/index.js";
import { checkStreamConfig, decodeStreamConfig } from "../../src/stream/config.js";
import { ManualClock } from "../../src/runtime/clock.js";
import { nullLogger } from "../../src/server/log.js";
import { encodeHeaders } from "../../src/protocol/headers.js";
import { FakeBus } from "./stream-fakebus.js";

function setup(cfgIn: Record<string, unknown>): { bus: FakeBus; store: MemoryStreamStore; clock: ManualClock; stream: Stream } {
  const bus = new FakeBus();
  const clock = new ManualClock();
  const env: StreamEnv = {
    bus,
    clock,
    log: nullLogger,
    domain: "",
    serverName: "s",
    wouldExceedAccount: () => false,
    canAddConsumer: () => true,
  };
  const cfg = checkStreamConfig(decodeStreamConfig({ storage: "memory", ...cfgIn }), { get: () => undefined }, false);
  const store = new MemoryStreamStore(Stream.storeLimits(cfg), null);
  const stream = new Stream(cfg, store, null, env, clock.nowNs());
  stream.start();
  return { bus, store, clock, stream };
}

void test("a message TTL is removed when due, not on a later tick", () => {
  const { bus, store, clock, stream } = setup({ name: "T", subjects: ["t"], allow_msg_ttl: true });
  try {
    // Out of phase with a periodic tick started with the stream (it was every 100 ms).
    clock.advance(350);
    bus.publish("t", "", encodeHeaders([["Nats-TTL", "2s"]]), Buffer.from("x"));
    assert.equal(store.state().msgs, 1);
    clock.advance(1999);
    assert.equal(store.state().msgs, 1, "still there 1 ms before its TTL");
    clock.advance(2);
    assert.equal(store.state().msgs, 0, "gone 1 ms after its TTL");
  } finally {
    stream.detach();
  }
});

void test("max_age removes the oldest message when it is due, and the next one at its own time", () => {
  const { bus, store, clock, stream } = setup({ name: "A", subjects: ["a"], max_age: 30e9 });
  try {
    clock.advance(700);
    bus.publish("a", "", null, Buffer.from("1"));
    clock.advance(10_000);
    bus.publish("a", "", null, Buffer.from("2"));
    clock.advance(19_999);
    assert.equal(store.state().msgs, 2);
    clock.advance(2);
    assert.equal(store.state().msgs, 1, "first message gone at 30 s");
    assert.equal(store.state().firstSeq, 2);
    clock.advance(9_998);
    assert.equal(store.state().msgs, 1);
    clock.advance(2);
    assert.equal(store.state().msgs, 0, "second message gone at its own 30 s");
  } finally {
    stream.detach();
  }
});
