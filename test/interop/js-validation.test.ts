// Differential: the validation cases of issue 14 against nats-server (2.9.10 here) and
// tsnats. Only cases whose answer did not change between 2.9 and 2.11 are compared, by
// code and err_code (2.9's 10025 description has no detail; later ones add encoding/json's
// text, as tsnats does). Not compared: consumer filters outside the stream (10093 in 2.9,
// allowed since 2.10), STREAM.NAMES offset -1 (2.9.10 panics).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import type { NatsConnection } from "@nats-io/transport-node";
import { haveNatsServer, startJsPair, type JsPair } from "../helpers/interop-js.js";

let pair: JsPair | null = null;

before(async () => {
  if (!haveNatsServer) return;
  pair = await startJsPair("tsnats-interop-valid-");
});

after(async () => {
  await pair?.close();
});

async function answer(nc: NatsConnection, subject: string, body: string): Promise<string> {
  const m = await nc.request(`$JS.API.${subject}`, body, { timeout: 3000 });
  const r = JSON.parse(m.string()) as { error?: { code: number; err_code: number } };
  return r.error === undefined ? "ok" : `${r.error.code}/${r.error.err_code}`;
}

const CASES: [string, string][] = [
  ["STREAM.CREATE.A", '{"name":"A","subjects":["a"],"max_bytes":9223372036854775808}'],
  ["STREAM.CREATE.A", '{"name":"A","subjects":["a"],"max_bytes":1e18}'],
  ["STREAM.CREATE.A", '{"name":"A","subjects":["a"],"max_bytes":1000000000000000000}'],
  ["STREAM.CREATE.A", '{"name":"A","subjects":["a"],"max_bytes":1000000000000000000,"storage":"memory"}'],
  ["STREAM.CREATE.A", '{"name":"A","subjects":["a"],"max_msgs":1.5}'],
  ["STREAM.CREATE.A", '{"name":"A","subjects":["a"],"max_msgs":1.0}'],
  ["STREAM.CREATE.A", '{"name":"A","subjects":["a"],"max_msgs":-9223372036854775809}'],
  ["STREAM.CREATE.A", '{"name":"A","subjects":["a"],"max_msg_size":2147483648}'],
  ["STREAM.CREATE.A", '{"name":"A","subjects":["a"],"num_replicas":9223372036854775808}'],
  ["STREAM.CREATE.A", '{"name":"A","subjects":["a.b","x","a.*"]}'],
  ["STREAM.CREATE.B", '{"name":"B","subjects":["b","c.>"]}'],
  ["STREAM.CREATE.D", '{"name":"D","subjects":["c.*"]}'],
  ["STREAM.PURGE.B", '{"keep":-1}'],
  ["STREAM.PURGE.B", '{"seq":-1}'],
  ["STREAM.PURGE.B", '{"keep":18446744073709551615}'],
  ["STREAM.PURGE.B", '{"keep":18446744073709551616}'],
  ["STREAM.MSG.GET.B", '{"seq":-1}'],
  ["STREAM.MSG.GET.B", '{"seq":18446744073709551616}'],
  ["STREAM.MSG.GET.B", '{"seq":18446744073709551615}'],
  ["STREAM.MSG.DELETE.B", '{"seq":-1}'],
  ["CONSUMER.CREATE.B", '{"stream_name":"B","config":{"max_deliver":9223372036854775808}}'],
  ["CONSUMER.CREATE.B", '{"stream_name":"B","config":{"opt_start_seq":-1,"deliver_policy":"by_start_sequence"}}'],
  ["CONSUMER.CREATE.B", '{"stream_name":"B","config":{"deliver_subject":"b","ack_policy":"explicit"}}'],
  ["CONSUMER.CREATE.B", '{"stream_name":"B","config":{"deliver_subject":"c.d","ack_policy":"explicit"}}'],
  ["CONSUMER.CREATE.B", '{"stream_name":"B","config":{"max_deliver":-5,"ack_policy":"explicit"}}'],
];

void test("validation answers match nats-server by code and err_code", { skip: !haveNatsServer }, async () => {
  const p = pair!;
  for (const [subject, body] of CASES) {
    const ref = await answer(p.ncRef, subject, body);
    const ours = await answer(p.ncOurs, subject, body);
    assert.equal(ours, ref, `${subject} ${body}`);
  }
});
