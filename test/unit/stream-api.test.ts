import { test } from "node:test";
import assert from "node:assert/strict";
import { startJs, hdrs } from "./stream-fakebus.js";
import { headerValue } from "../../src/protocol/headers.js";

type J = Record<string, any>;

void test("create, info, publish, dedup, get", async () => {
  const h = await startJs();
  try {
    const r: J = await h.bus.api("$JS.API.STREAM.CREATE.S", { name: "S", subjects: ["s.>"], allow_direct: true });
    assert.equal(r.error, undefined, JSON.stringify(r));
    assert.equal(r.type, "io.nats.jetstream.api.v1.stream_create_response");
    assert.equal(r.did_create, true);
    assert.equal(r.config.duplicate_window, 120_000_000_000);
    assert.equal(r.config.max_msgs, -1);
    assert.equal(r.config.storage, "file");
    assert.equal(r.state.messages, 0);
    let a: J = await h.bus.pub("s.a", "hello", [["Nats-Msg-Id", "m1"]]);
    assert.deepEqual(a, { stream: "S", seq: 1 });
    a = await h.bus.pub("s.a", "hello", [["Nats-Msg-Id", "m1"]]);
    assert.deepEqual(a, { stream: "S", seq: 1, duplicate: true });
    a = await h.bus.pub("s.b", "x", [["Nats-Expected-Last-Sequence", "1"]]);
    assert.deepEqual(a, { stream: "S", seq: 2 });
    a = await h.bus.pub("s.b", "x", [["Nats-Expected-Last-Sequence", "1"]]);
    assert.equal(a.error.err_code, 10071);
    assert.equal(a.error.description, "wrong last sequence: 2");
    const g: J = await h.bus.api("$JS.API.STREAM.MSG.GET.S", { seq: 1 });
    assert.equal(g.message.subject, "s.a");
    assert.equal(Buffer.from(g.message.data, "base64").toString(), "hello");
    const d = await h.bus.request("$JS.API.DIRECT.GET.S", JSON.stringify({ last_by_subj: "s.b" }));
    assert.equal(d.length, 1);
    const ph = hdrs(d[0]!);
    assert.equal(headerValue(ph, "Nats-Sequence"), "2");
    assert.equal(headerValue(ph, "Nats-Stream"), "S");
    const i: J = await h.bus.api("$JS.API.STREAM.INFO.S");
    assert.equal(i.state.messages, 2);
    assert.equal(i.cluster.leader, "test-server");
    await h.restart();
    const i2: J = await h.bus.api("$JS.API.STREAM.INFO.S");
    assert.equal(i2.state.messages, 2);
    a = await h.bus.pub("s.a", "hello", [["Nats-Msg-Id", "m1"]]);
    assert.deepEqual(a, { stream: "S", seq: 1, duplicate: true });
  } finally {
    await h.close();
  }
});
