// The JetStream API's info queue takes the subjects nats-server's infoSubs holds, no others.
import { test } from "node:test";
import assert from "node:assert/strict";
import { isInfoRequest, RequestQueue } from "../../src/jetstream/queue.js";

void test("isInfoRequest: nats-server's info subjects and nothing else", () => {
  for (const s of ["INFO", "STREAM.NAMES", "STREAM.LIST", "STREAM.INFO.S", "CONSUMER.NAMES.S", "CONSUMER.LIST.S", "CONSUMER.INFO.S.C"]) {
    assert.equal(isInfoRequest(s), true, s);
  }
  for (const s of ["INFO.x", "STREAM.INFO", "STREAM.INFO.S.x", "STREAM.CREATE.S", "STREAM.NAMES.x", "CONSUMER.INFO.S", "CONSUMER.INFO.S.C.x", "CONSUMER.INFO.S.", "CONSUMER.CREATE.S", "CONSUMER.NAMES.S.x", "STREAM.MSG.GET.S", "ACCOUNT.INFO"]) {
    assert.equal(isInfoRequest(s), false, s);
  }
});

void test("RequestQueue: in order, compacts, clear counts", () => {
  const q = new RequestQueue("q");
  const r = (i: number) => ({ subject: `s${i}`, rest: "", reply: "", hdr: null, payload: Buffer.alloc(0) });
  for (let i = 0; i < 3000; i++) q.push(r(i));
  for (let i = 0; i < 2000; i++) assert.equal(q.shift()?.subject, `s${i}`);
  assert.equal(q.length, 1000);
  q.push(r(3000));
  assert.equal(q.clear(), 1001);
  assert.equal(q.shift(), undefined);
  assert.equal(q.length, 0);
});
