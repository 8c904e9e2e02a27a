// What a Consumer needs around it in a unit test: a stream handle over a memory store, a
// checked config, a silent logger and an env on the given clock (and scheduler).

import assert from "node:assert/strict";
import type { Clock } from "../../src/runtime/clock.js";
import type { Scheduler } from "../../src/runtime/sched.js";
import type { Bus } from "../../src/contracts/bus.js";
import type { Logger } from "../../src/runtime/log.js";
import type { ConsumerHook, StreamHandle } from "../../src/contracts/jetstream.js";
import type { ConsumerEnv } from "../../src/consumer/consumer.js";
import { checkConsumerConfig, decodeConsumerConfig, type ConsumerConfig } from "../../src/consumer/config.js";
import { Ticker } from "../../src/consumer/wheel.js";
import type { StreamStore } from "../../src/storage/types.js";

export const quietLogger: Logger = {
  info: () => {},
  warn: () => {},
  error: () => {},
  fatal: () => {},
  debug: () => {},
  trace: () => {},
  debugEnabled: false,
  traceEnabled: false,
};

/** Stream "R" on subjects r.>, limits retention, over store. */
export function testStream(store: StreamStore): StreamHandle {
  const hooks: ConsumerHook[] = [];
  return {
    name: "R",
    store,
    visibleSeq: Number.MAX_SAFE_INTEGER,
    wireConfig: () => ({ name: "R", subjects: ["r.>"] }),
    retention: () => "limits",
    consumerDir: () => null,
    addConsumer: (c) => hooks.push(c),
    removeConsumer: () => {},
    consumers: () => hooks,
    onAck: () => {},
  };
}

/** A consumer config of stream R from its wire JSON, checked as CONSUMER.CREATE would. */
export function testConsumerConfig(wire: Record<string, unknown>): ConsumerConfig {
  return checkConsumerConfig(
    decodeConsumerConfig(wire),
    { name: "R", subjects: ["r.>"], retention: "limits", num_replicas: 1, consumer_limits: { inactive_threshold: 0, max_ack_pending: 0 } },
    false,
  );
}

export function testConsumerEnv(bus: Bus, clock: Clock, sched?: Scheduler): ConsumerEnv {
  const env: ConsumerEnv = {
    bus,
    clock,
    log: quietLogger,
    ticker: new Ticker(clock, (e) => assert.fail(String(e))),
    serverName: "test",
    advisory: () => {},
    onSelfDelete: () => {},
    newPinId: () => "pin",
  };
  if (sched !== undefined) env.sched = sched;
  return env;
}
