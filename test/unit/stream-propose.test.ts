// Publish as propose/apply: the checks count what was proposed but not applied yet. A
// proposer that holds entries (as Raft does until a quorum has them) must not let two
// publishes with the same Nats-Msg-Id, or two with the same expected last sequence, both
// pass while the first is in flight; and entries apply in the order they were proposed.
import { test } from "node:test";
import assert from "node:assert/strict";
import { Stream, type StreamEnv } from "../../src/stream/stream.js";
import { StreamEntry, type EntryApplier, type Proposer } from "../../src/stream/entry.js";
import { MemoryStreamStore } from "../../src/storage/index.js";
import { checkStreamConfig, decodeStreamConfig } from "../../src/stream/config.js";
import { ManualClock } from "../../src/runtime/clock.js";
import { nullLogger } from "../../src/server/log.js";
import { encodeHeaders } from "../../src/protocol/headers.js";
import { FakeBus } from "./stream-fakebus.js";

/** Keeps every proposed entry until the test commits it. */
class HoldingProposer implements Proposer {
  readonly immediate = false;
  readonly held: StreamEntry[] = [];
  constructor(private readonly applier: EntryApplier) {}
  propose(e: StreamEntry): void {
    // The stream reuses e after this call: keep a copy, as a real proposer must.
    this.held.push(e.copy());
  }
  commit(n = this.held.length): void {
    for (const e of this.held.splice(0, n)) this.applier.applyEntry(e);
  }
}

interface Setup {
  bus: FakeBus;
  store: MemoryStreamStore;
  stream: Stream;
  proposer: HoldingProposer;
  /** Bodies published to reply.<name>, by name. */
  replies: Map<string, string[]>;
  pub(subject: string, reply: string, data: string, hdr?: [string, string][]): void;
}

function setup(cfgIn: Record<string, unknown> = {}): Setup {
  const bus = new FakeBus();
  const clock = new ManualClock();
  let proposer: HoldingProposer | null = null;
  const env: StreamEnv = {
    bus,
    clock,
    log: nullLogger,
    domain: "",
    serverName: "s",
    wouldExceedAccount: () => false,
    canAddConsumer: () => true,
    proposer: (applier) => (proposer = new HoldingProposer(applier)),
  };
  const cfg = checkStreamConfig(decodeStreamConfig({ name: "P", subjects: ["p.>"], storage: "memory", ...cfgIn }), { get: () => undefined }, false);
  const store = new MemoryStreamStore(Stream.storeLimits(cfg), null);
  const stream = new Stream(cfg, store, null, env, clock.nowNs());
  stream.start();
  assert.ok(proposer !== null, "the stream asked env for its proposer");
  const replies = new Map<string, string[]>();
  bus.subscribe("reply.*", (s, _r, _h, d) => {
    const k = s.slice("reply.".length);
    const l = replies.get(k) ?? [];
    l.push(d.toString());
    replies.set(k, l);
  });
  const pub = (subject: string, reply: string, data: string, hdr?: [string, string][]): void =>
    bus.publish(subject, reply === "" ? "" : `reply.${reply}`, hdr ? encodeHeaders(hdr) : null, Buffer.from(data));
  return { bus, store, stream, proposer, replies, pub };
}

/** Let queued syncs and PubAcks run: a bounded number of event-loop turns. */
async function settle(): Promise<void> {
  for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
}

function errCode(body: string | undefined): number {
  assert.ok(body !== undefined, "an answer was sent");
  const e = (JSON.parse(body) as { error?: { err_code: number } }).error;
  assert.ok(e !== undefined, `an error answer: ${body}`);
  return e.err_code;
}

void test("a second publish with the same Nats-Msg-Id while the first is in flight is refused, and a duplicate once it is stored", async () => {
  const { store, stream, proposer, replies, pub } = setup();
  try {
    pub("p.a", "1", "first", [["Nats-Msg-Id", "id-1"]]);
    assert.equal(proposer.held.length, 1);
    assert.equal(store.state().msgs, 0, "nothing applied yet");
    pub("p.a", "2", "again", [["Nats-Msg-Id", "id-1"]]);
    assert.equal(proposer.held.length, 1, "the second one was not proposed");
    assert.equal(errCode(replies.get("2")?.[0]), 10158, "duplicate message id is in process");
    // Another id is not held up by it.
    pub("p.a", "3", "other", [["Nats-Msg-Id", "id-2"]]);
    assert.equal(proposer.held.length, 2);

    proposer.commit();
    await settle();
    assert.equal(store.state().msgs, 2);
    assert.deepEqual(replies.get("1"), ['{"stream":"P","seq":1}']);
    assert.deepEqual(replies.get("3"), ['{"stream":"P","seq":2}']);
    pub("p.a", "4", "retry", [["Nats-Msg-Id", "id-1"]]);
    assert.equal(proposer.held.length, 0, "a duplicate of a stored message is not proposed");
    await settle();
    assert.deepEqual(replies.get("4"), ['{"stream":"P","seq":1,"duplicate": true}']);
    assert.equal(store.state().msgs, 2);
  } finally {
    stream.detach();
  }
});

void test("Nats-Expected-Last-Sequence counts in-flight entries, so two proposals expecting the same sequence cannot both pass", async () => {
  const { store, stream, proposer, replies, pub } = setup();
  try {
    pub("p.a", "", "x");
    pub("p.b", "a", "y", [["Nats-Expected-Last-Sequence", "1"]]);
    pub("p.c", "b", "z", [["Nats-Expected-Last-Sequence", "1"]]);
    assert.equal(proposer.held.length, 2, "the first expecting 1 passes, the second does not");
    const b = replies.get("b")?.[0];
    assert.equal(errCode(b), 10071);
    assert.match(b!, /wrong last sequence: 2/);
    // The stored last sequence is still 0: an expectation of 0 is stale too.
    pub("p.d", "c", "w", [["Nats-Expected-Last-Sequence", "0"]]);
    assert.equal(errCode(replies.get("c")?.[0]), 10071);

    // Part of the way: what is still in flight keeps counting.
    proposer.commit(1);
    assert.equal(store.state().lastSeq, 1);
    pub("p.e", "d", "v", [["Nats-Expected-Last-Sequence", "2"]]);
    assert.equal(proposer.held.length, 2);
    proposer.commit();
    await settle();
    assert.equal(store.state().lastSeq, 3);
    assert.deepEqual(replies.get("a"), ['{"stream":"P","seq":2}']);
    assert.deepEqual(replies.get("d"), ['{"stream":"P","seq":3}']);
    // Nothing in flight: the store alone answers.
    pub("p.f", "e", "u", [["Nats-Expected-Last-Sequence", "3"]]);
    assert.equal(proposer.held.length, 1);
    proposer.commit();
    assert.equal(store.state().lastSeq, 4);
  } finally {
    stream.detach();
  }
});

void test("Nats-Expected-Last-Subject-Sequence on a subject with an entry in flight is refused; other subjects are not held up", () => {
  const { store, stream, proposer, replies, pub } = setup();
  try {
    pub("p.a", "", "1");
    proposer.commit();
    pub("p.a", "", "2");
    pub("p.a", "a", "3", [["Nats-Expected-Last-Subject-Sequence", "1"]]);
    assert.equal(errCode(replies.get("a")?.[0]), 10164, "wrong last sequence (the answer is not known yet)");
    pub("p.b", "b", "4", [["Nats-Expected-Last-Subject-Sequence", "0"]]);
    assert.equal(replies.get("b"), undefined, "p.b has nothing in flight: accepted");
    assert.equal(proposer.held.length, 2);
    proposer.commit();
    assert.equal(store.state().lastSeq, 3);
    pub("p.a", "c", "5", [["Nats-Expected-Last-Subject-Sequence", "2"]]);
    assert.equal(proposer.held.length, 1);
  } finally {
    stream.detach();
  }
});

void test("Nats-Expected-Last-Msg-Id compares with the newest proposed msg id", () => {
  const { stream, proposer, replies, pub } = setup();
  try {
    pub("p.a", "", "1", [["Nats-Msg-Id", "m1"]]);
    pub("p.a", "a", "2", [
      ["Nats-Msg-Id", "m2"],
      ["Nats-Expected-Last-Msg-Id", "m1"],
    ]);
    assert.equal(replies.get("a"), undefined, "m1 is the newest proposed id");
    pub("p.a", "b", "3", [["Nats-Expected-Last-Msg-Id", "m1"]]);
    const b = replies.get("b")?.[0];
    assert.equal(errCode(b), 10070);
    assert.match(b!, /wrong last msg ID: m2/);
    assert.equal(proposer.held.length, 2);
  } finally {
    stream.detach();
  }
});

void test("discard new counts in-flight messages against max_msgs", () => {
  const { store, stream, proposer, replies, pub } = setup({ max_msgs: 2, discard: "new" });
  try {
    pub("p.a", "", "1");
    pub("p.a", "", "2");
    pub("p.a", "a", "3");
    assert.match(replies.get("a")?.[0] ?? "", /maximum messages exceeded/);
    assert.equal(proposer.held.length, 2);
    proposer.commit();
    assert.equal(store.state().msgs, 2);
  } finally {
    stream.detach();
  }
});

void test("entries apply in the order they were proposed", async () => {
  const { store, stream, proposer, replies, pub } = setup();
  try {
    const subjects = ["p.c", "p.a", "p.b", "p.a", "p.d"];
    subjects.forEach((s, i) => pub(s, `r${i}`, `m${i}`));
    proposer.commit(2);
    proposer.commit(1);
    proposer.commit();
    await settle();
    for (let i = 0; i < subjects.length; i++) {
      const m = store.loadMsg(i + 1);
      assert.ok(m !== null);
      assert.equal(m.subject, subjects[i]);
      assert.equal(m.data.toString(), `m${i}`);
      assert.deepEqual(replies.get(`r${i}`), [`{"stream":"P","seq":${i + 1}}`]);
    }
  } finally {
    stream.detach();
  }
});

void test("without a proposer given, the stream applies each publish at once (LocalProposer)", () => {
  const bus = new FakeBus();
  const clock = new ManualClock();
  const env: StreamEnv = { bus, clock, log: nullLogger, domain: "", serverName: "s", wouldExceedAccount: () => false, canAddConsumer: () => true };
  const cfg = checkStreamConfig(decodeStreamConfig({ name: "L", subjects: ["l"], storage: "memory" }), { get: () => undefined }, false);
  const store = new MemoryStreamStore(Stream.storeLimits(cfg), null);
  const stream = new Stream(cfg, store, null, env, clock.nowNs());
  stream.start();
  try {
    const hdr = encodeHeaders([["Nats-Msg-Id", "x"]]);
    bus.publish("l", "", hdr, Buffer.from("1"));
    assert.equal(store.state().msgs, 1, "stored during the publish");
    bus.publish("l", "", hdr, Buffer.from("2"));
    assert.equal(store.state().msgs, 1, "the same id again is a duplicate");
  } finally {
    stream.detach();
  }
});
