// Issue 14, validation: numbers in JetStream API requests decoded by Go's rules (range and
// sign per field type, "invalid JSON" 10025 with encoding/json's text), max_bytes against
// the server's capacity (10047/10028), purge/get/delete sequence ranges, consumer configs
// (negative max_deliver, deliver subject looping into the stream, filters outside the
// stream), UNSUB with an unreadable max; and STREAM.CREATE with tens of thousands of
// subjects no longer holding the event loop. Raw requests, so the bytes are exactly ours.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { startTsnatsChild, type ChildServer } from "../helpers/core-child.js";
import { RawClient } from "../helpers/core-raw.js";

let dir = "";
let srv: ChildServer;
let nc: NatsConnection;

before(async () => {
  dir = mkdtempSync(join(tmpdir(), "tsnats-e2e-valid-"));
  // A child process: the bystander below measures the server's event loop, not ours.
  srv = await startTsnatsChild(["-a", "127.0.0.1", "-p", "-1", "-js", "-sd", dir]);
  nc = await connect({ servers: srv.url });
});

after(async () => {
  await nc.close();
  await srv.stop();
  rmSync(dir, { recursive: true, force: true });
});

interface ApiErr {
  code: number;
  err_code: number;
  description: string;
}

async function api(subject: string, body: string, timeout = 5000): Promise<Record<string, unknown>> {
  const m = await nc.request(`$JS.API.${subject}`, body, { timeout });
  return JSON.parse(m.string()) as Record<string, unknown>;
}

async function apiErr(subject: string, body: string): Promise<ApiErr> {
  const r = await api(subject, body);
  assert.ok(r["error"] !== undefined, `expected an error for ${subject} ${body}: ${JSON.stringify(r).slice(0, 300)}`);
  return r["error"] as ApiErr;
}

function invalidJson(lit: string, field: string, type: string): ApiErr {
  return { code: 400, err_code: 10025, description: `invalid JSON: json: cannot unmarshal number ${lit} into Go struct field ${field} of type ${type}` };
}

const stream = (extra: string): string => `{"name":"V","subjects":["v.>"]${extra}}`;

void test("stream create: integers out of their Go type's range or not integers are invalid JSON (10025)", async () => {
  assert.deepEqual(await apiErr("STREAM.CREATE.V", stream(',"max_bytes":9223372036854775808')), invalidJson("9223372036854775808", "StreamConfigRequest.max_bytes", "int64"));
  assert.deepEqual(await apiErr("STREAM.CREATE.V", stream(',"max_bytes":1e18')), invalidJson("1e18", "StreamConfigRequest.max_bytes", "int64"));
  assert.deepEqual(await apiErr("STREAM.CREATE.V", stream(',"max_msgs":1.0')), invalidJson("1.0", "StreamConfigRequest.max_msgs", "int64"));
  assert.deepEqual(await apiErr("STREAM.CREATE.V", stream(',"max_msgs":-9223372036854775809')), invalidJson("-9223372036854775809", "StreamConfigRequest.max_msgs", "int64"));
  assert.deepEqual(await apiErr("STREAM.CREATE.V", stream(',"max_msg_size":2147483648')), invalidJson("2147483648", "StreamConfigRequest.max_msg_size", "int32"));
  assert.deepEqual(await apiErr("STREAM.CREATE.V", stream(',"first_seq":-1')), invalidJson("-1", "StreamConfigRequest.first_seq", "uint64"));
  assert.deepEqual(await apiErr("STREAM.CREATE.V", stream(',"num_replicas":9223372036854775808')), invalidJson("9223372036854775808", "StreamConfigRequest.num_replicas", "int"));
  // Nothing was created by any of them.
  assert.deepEqual((await apiErr("STREAM.INFO.V", "")).err_code, 10059);
});

void test("stream create: max_bytes beyond the server's capacity is refused (10047 file, 10028 memory)", async () => {
  assert.deepEqual(await apiErr("STREAM.CREATE.V", stream(',"max_bytes":1000000000000000000')), {
    code: 500,
    err_code: 10047,
    description: "insufficient storage resources available",
  });
  assert.deepEqual(await apiErr("STREAM.CREATE.V", stream(',"max_bytes":1000000000000000000,"storage":"memory"')), {
    code: 500,
    err_code: 10028,
    description: "insufficient memory resources available",
  });
  // 2^63-1 is a valid int64 and still refused for capacity, not as JSON.
  assert.equal((await apiErr("STREAM.CREATE.V", stream(',"max_bytes":9223372036854775807'))).err_code, 10047);
});

void test("purge keep/seq, msg get/delete seq: uint64 ranges as nats-server decodes them", async () => {
  const r = await api("STREAM.CREATE.P", '{"name":"P","subjects":["p"]}');
  assert.equal(r["error"], undefined);
  assert.deepEqual(await apiErr("STREAM.PURGE.P", '{"keep":-1}'), invalidJson("-1", "JSApiStreamPurgeRequest.keep", "uint64"));
  assert.deepEqual(await apiErr("STREAM.PURGE.P", '{"seq":-1}'), invalidJson("-1", "JSApiStreamPurgeRequest.seq", "uint64"));
  assert.deepEqual(await apiErr("STREAM.PURGE.P", '{"keep":18446744073709551616}'), invalidJson("18446744073709551616", "JSApiStreamPurgeRequest.keep", "uint64"));
  const ok = await api("STREAM.PURGE.P", '{"keep":18446744073709551615}');
  assert.deepEqual({ success: ok["success"], purged: ok["purged"] }, { success: true, purged: 0 });
  assert.deepEqual(await apiErr("STREAM.MSG.DELETE.P", '{"seq":-1}'), invalidJson("-1", "JSApiMsgDeleteRequest.seq", "uint64"));
  assert.equal((await apiErr("STREAM.MSG.GET.P", '{"seq":-1}')).err_code, 10025);
  assert.equal((await apiErr("STREAM.MSG.GET.P", '{"seq":18446744073709551616}')).err_code, 10025);
  assert.equal((await apiErr("STREAM.MSG.GET.P", '{"seq":18446744073709551615}')).err_code, 10037);
  // A negative page offset is read as 0 (nats-server 2.9.10 panics on it).
  const names = await api("STREAM.NAMES", '{"offset":-1}');
  assert.equal(names["offset"], 0);
});

void test("consumer configs: integer ranges, negative max_deliver, delivery cycle, filters outside the stream", async () => {
  await api("STREAM.CREATE.C", '{"name":"C","subjects":["c","d.>"]}');
  const create = (cfg: string): Promise<Record<string, unknown>> => api("CONSUMER.CREATE.C", `{"stream_name":"C","config":${cfg}}`);
  const err = async (cfg: string): Promise<ApiErr> => {
    const r = await create(cfg);
    assert.ok(r["error"] !== undefined, JSON.stringify(r).slice(0, 300));
    return r["error"] as ApiErr;
  };
  assert.deepEqual(await err('{"max_deliver":9223372036854775808}'), invalidJson("9223372036854775808", "ConsumerConfig.max_deliver", "int"));
  assert.deepEqual(await err('{"opt_start_seq":-1,"deliver_policy":"by_start_sequence"}'), invalidJson("-1", "ConsumerConfig.opt_start_seq", "uint64"));
  assert.deepEqual(await err('{"backoff":[1e9],"ack_policy":"explicit"}'), invalidJson("1e9", "ConsumerConfig.backoff", "time.Duration"));
  // Negative max_deliver means unlimited (-1); pedantic mode refuses it.
  const md = await create('{"max_deliver":-5,"ack_policy":"explicit"}');
  assert.equal((md["config"] as Record<string, unknown>)["max_deliver"], -1);
  const ped = await api("CONSUMER.CREATE.C", '{"stream_name":"C","config":{"max_deliver":-5,"ack_policy":"explicit"},"pedantic":true}');
  assert.deepEqual(ped["error"], { code: 400, err_code: 10157, description: "pedantic mode: max_deliver must be set to -1" });
  // A deliver subject the stream captures would loop.
  assert.deepEqual(await err('{"deliver_subject":"c","ack_policy":"explicit"}'), { code: 400, err_code: 10081, description: "consumer deliver subject forms a cycle" });
  assert.equal((await err('{"deliver_subject":"d.e.f","ack_policy":"explicit"}')).err_code, 10081);
  // Since 2.10 a filter outside the stream's subjects is allowed (2.9 answered 10093).
  const outside = await api("CONSUMER.CREATE.C.out", '{"stream_name":"C","config":{"durable_name":"out","filter_subject":"zzz","ack_policy":"explicit"}}');
  assert.equal(outside["error"], undefined);
  // Overlapping filter_subjects, found by the trie join.
  assert.equal((await err('{"filter_subjects":["d.*.x","d.y.>"]}')).err_code, 10138);
});

void test("UNSUB with a negative or unreadable max unsubscribes and keeps the connection", async () => {
  const c = await RawClient.connect(srv.port);
  await c.handshake();
  c.write("SUB foo 1\r\nUNSUB 1 -3\r\nSUB foo 2\r\nUNSUB 2 x\r\nPUB foo 1\r\nx\r\n");
  await c.ping();
  assert.equal(c.closed, false);
  assert.doesNotMatch(c.text, /MSG foo|-ERR/);
  c.close();
});

void test("stream subjects overlapping each other are named as nats-server names them", async () => {
  const e = await apiErr("STREAM.CREATE.O", '{"name":"O","subjects":["a.b","x.y","a.*","x.>"]}');
  assert.deepEqual(e, { code: 500, err_code: 10052, description: 'subject "a.b" overlaps with "a.*"' });
  const d = await apiErr("STREAM.CREATE.O", '{"name":"O","subjects":["q","q"]}');
  assert.equal(d.description, 'subject "q" overlaps with "q"');
});

// What is asserted: a STREAM.CREATE of 60,000 distinct subjects (a tenth with '*', a tenth
// ending in '>'; ~760 KB, under max_payload) completes with a stream, and a bystander that
// pings every 20 ms throughout gets every PONG within 2 s of its PING (before the fix the
// create held the event loop for minutes, so every ping sent during it missed the deadline).
// The count of missed deadlines must be 0; no assertion on the normal-path latency itself.
void test("STREAM.CREATE with 60,000 subjects completes and a bystander's PINGs are answered meanwhile", async () => {
  const subjects: string[] = [];
  for (let i = 0; i < 60_000; i++) subjects.push(i % 10 === 0 ? `s${i}.*.x` : i % 10 === 1 ? `w${i}.>` : `a.b${i}.c`);
  const body = JSON.stringify({ name: "BIG", subjects });
  const by = await RawClient.connect(srv.port);
  await by.handshake();
  const DEADLINE_MS = 2000;
  let missed = 0;
  let answered = 0;
  let stop = false;
  const pinger = (async () => {
    while (!stop) {
      const t0 = Date.now();
      try {
        await by.ping();
      } catch {
        missed++;
        continue;
      }
      if (Date.now() - t0 > DEADLINE_MS) missed++;
      answered++;
      await new Promise((r) => setTimeout(r, 20));
    }
  })();
  let reply: Record<string, unknown>;
  try {
    reply = await api("STREAM.CREATE.BIG", body, 30_000);
  } finally {
    stop = true;
    await pinger;
    by.close();
  }
  assert.equal(reply["error"], undefined, JSON.stringify(reply["error"]));
  assert.equal(((reply["config"] as Record<string, unknown>)["subjects"] as string[]).length, 60_000);
  assert.ok(answered > 0);
  assert.equal(missed, 0, `${missed} of ${answered + missed} pings missed the ${DEADLINE_MS} ms deadline`);
  // An overlapping second stream is found against all 60,000 (one trie join).
  assert.equal((await apiErr("STREAM.CREATE.BIG2", '{"name":"BIG2","subjects":["a.*.c"]}')).err_code, 10065);
  await api("STREAM.DELETE.BIG", "");
});
