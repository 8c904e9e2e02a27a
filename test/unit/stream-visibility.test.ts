// A file stream delivers a message to consumers only once the fsync covering it completed,
// and after its PubAck: no consumer sees a message a crash would lose, and a publisher sees its
// ack before any delivery of its message. The real JetStream service and file store run on
// a FakeBus; NodeFs.fsync is held by the test to stand for a slow disk.
import { test } from "node:test";
import assert from "node:assert/strict";
import { NodeFs } from "../../src/runtime/fs.js";
import { startJs } from "./stream-fakebus.js";
import { until } from "../helpers/until.js";

type Cb = (err: Error | null) => void;

/** Holds every NodeFs fsync/fsyncDir while `on`; release() lets them run. */
function holdFsyncs(): { on: boolean; held: (() => void)[]; release(): void; restore(): void } {
  const proto = NodeFs.prototype;
  const fsync = proto.fsync;
  const fsyncDir = proto.fsyncDir;
  const h = {
    on: false,
    held: [] as (() => void)[],
    release(): void {
      this.on = false;
      for (const f of this.held.splice(0)) f();
    },
    restore(): void {
      proto.fsync = fsync;
      proto.fsyncDir = fsyncDir;
    },
  };
  proto.fsync = function (this: NodeFs, fd: number, cb: Cb): void {
    if (h.on) h.held.push(() => fsync.call(this, fd, cb));
    else fsync.call(this, fd, cb);
  };
  proto.fsyncDir = function (this: NodeFs, path: string, cb: Cb): void {
    if (h.on) h.held.push(() => fsyncDir.call(this, path, cb));
    else fsyncDir.call(this, path, cb);
  };
  return h;
}

void test("file stream: no delivery (push, pull, num_pending) before the fsync; PubAck first, then deliveries", async () => {
  const hold = holdFsyncs();
  const h = await startJs();
  try {
    const bus = h.bus;
    const created = await bus.api("$JS.API.STREAM.CREATE.S", { name: "S", subjects: ["s.>"], storage: "file" });
    assert.equal(created["error"], undefined);
    await bus.api("$JS.API.CONSUMER.CREATE.S.P", { stream_name: "S", config: { durable_name: "P", deliver_subject: "dlv", ack_policy: "explicit" } });
    await bus.api("$JS.API.CONSUMER.CREATE.S.Q", { stream_name: "S", config: { durable_name: "Q", ack_policy: "explicit" } });
    const log: string[] = [];
    bus.subscribe("dlv", (s) => log.push(s));
    bus.subscribe("ack.>", (s) => log.push(s));
    bus.subscribe("pull.>", (s, _r, hdr) => {
      if (hdr === null || hdr.length === 0) log.push(s);
    });

    hold.on = true;
    bus.publish("s.a", "ack.1", null, Buffer.from("one"));
    bus.publish("s.b", "", null, Buffer.from("two")); // no reply: visible with the same sync
    const stream = h.js.getStream("S")!;
    await until("the held fsync", () => hold.held.length > 0, 5000);
    assert.equal(stream.store.state().lastSeq, 2, "both are stored");
    assert.equal(stream.visibleSeq, 0);
    // A pull request kicks its consumer for another reason: it still must not read past the
    // visible sequence.
    bus.publish("$JS.API.CONSUMER.MSG.NEXT.S.Q", "pull.1", null, Buffer.from(JSON.stringify({ batch: 2, expires: 5e9 })));
    const info = await bus.api("$JS.API.CONSUMER.INFO.S.Q");
    assert.equal(info["num_pending"], 0, "nothing is pending before it is durable");
    assert.deepEqual(log, [], "no PubAck and no delivery before the fsync completed");

    hold.release();
    await until("the PubAck and four deliveries", () => log.length >= 5, 5000);
    assert.equal(stream.visibleSeq, 2);
    assert.deepEqual(log, ["ack.1", "dlv", "dlv", "pull.1", "pull.1"]);
    const after = await bus.api("$JS.API.CONSUMER.INFO.S.P");
    assert.equal((after["delivered"] as { stream_seq: number }).stream_seq, 2);
  } finally {
    hold.release();
    hold.restore();
    await h.close();
  }
});

void test("memory stream and sync_interval file stream deliver at store, as before", async () => {
  for (const [opts, storage] of [
    [{}, "memory"],
    [{ syncIntervalMs: 60_000 }, "file"],
  ] as const) {
    const h = await startJs(opts);
    try {
      const bus = h.bus;
      await bus.api("$JS.API.STREAM.CREATE.M", { name: "M", subjects: ["m"], storage });
      await bus.api("$JS.API.CONSUMER.CREATE.M.P", { stream_name: "M", config: { durable_name: "P", deliver_subject: "dlv", ack_policy: "none" } });
      let got = 0;
      bus.subscribe("dlv", () => got++);
      bus.publish("m", "", null, Buffer.from("x"));
      assert.equal(got, 1, `${storage}: delivered at store`);
      assert.equal(h.js.getStream("M")!.visibleSeq, 1);
    } finally {
      await h.close();
    }
  }
});

void test("last_per_subject consumer created while its newest message is not yet durable: num_pending counts it once", async () => {
  const hold = holdFsyncs();
  const h = await startJs();
  try {
    const bus = h.bus;
    await bus.api("$JS.API.STREAM.CREATE.L", { name: "L", subjects: ["l.>"], storage: "file" });
    for (const s of ["l.a", "l.a", "l.b"]) await bus.pub(s, "x");
    const stream = h.js.getStream("L")!;
    hold.on = true;
    bus.publish("l.a", "", null, Buffer.from("newest a")); // seq 4, not yet visible
    await until("the held fsync", () => hold.held.length > 0, 5000);
    assert.equal(stream.visibleSeq, 3);
    const created = await bus.api("$JS.API.CONSUMER.CREATE.L.C", {
      stream_name: "L",
      config: { durable_name: "C", deliver_policy: "last_per_subject", filter_subject: "l.>", ack_policy: "explicit" },
    });
    assert.equal(created["num_pending"], 2, `l.b (3) and l.a (4): ${JSON.stringify(created)}`);
    hold.release();
    await until("seq 4 visible", () => stream.visibleSeq === 4, 5000);
    const got = await bus.request("$JS.API.CONSUMER.MSG.NEXT.L.C", JSON.stringify({ batch: 2, expires: 2e9 }), { until: (g) => g.length >= 2 });
    assert.deepEqual(got.map((d) => d.payload.toString()), ["x", "newest a"]);
    // The ack subject's last token is num_pending after that delivery (the consumer's count).
    // (seq 4 must not be counted again when it becomes visible).
    assert.deepEqual(got.map((d) => d.reply.split(".").at(-1)), ["1", "0"]);
  } finally {
    hold.release();
    hold.restore();
    await h.close();
  }
});

void test("republish waits for the fsync too, and carries the stored message and its headers", async () => {
  const hold = holdFsyncs();
  const h = await startJs();
  try {
    const bus = h.bus;
    const created = await bus.api("$JS.API.STREAM.CREATE.R", {
      name: "R",
      subjects: ["r.>"],
      storage: "file",
      republish: { src: "r.>", dest: "rp.>" },
    });
    assert.equal(created["error"], undefined, JSON.stringify(created));
    const log: { subject: string; hdr: string; payload: string }[] = [];
    bus.subscribe("rp.>", (s, _r, hdr, payload) => log.push({ subject: s, hdr: hdr?.toString() ?? "", payload: payload.toString() }));
    await bus.pub("r.a", "first");
    await until("the first republish", () => log.length === 1, 5000);

    hold.on = true;
    bus.publish("r.a", "", null, Buffer.from("second"));
    await until("the held fsync", () => hold.held.length > 0, 5000);
    assert.equal(log.length, 1, "nothing republished before the fsync completed");
    hold.release();
    await until("the second republish", () => log.length === 2, 5000);
    const m = log[1]!;
    assert.equal(m.subject, "rp.a");
    assert.equal(m.payload, "second");
    assert.match(m.hdr, /Nats-Stream: R\r\n/);
    assert.match(m.hdr, /Nats-Sequence: 2\r\n/);
    assert.match(m.hdr, /Nats-Last-Sequence: 1\r\n/);
  } finally {
    hold.release();
    hold.restore();
    await h.close();
  }
});
