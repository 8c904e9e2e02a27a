import { test } from "node:test";
import assert from "node:assert/strict";
import { startJs, hdrs, type Harness } from "./stream-fakebus.js";
import { headerValue } from "../../src/protocol/headers.js";
import type { ConsumerHook } from "../../src/jetstream/contracts.js";
import { subjectMatches } from "../../src/subjects/subject.js";
import { until } from "../helpers/until.js";

type J = Record<string, any>;

async function withJs(fn: (h: Harness) => Promise<void>, opts = {}): Promise<void> {
  const h = await startJs(opts);
  try {
    await fn(h);
  } finally {
    await h.close();
  }
}

async function create(h: Harness, cfg: Record<string, unknown>): Promise<J> {
  const r: J = await h.bus.api(`$JS.API.STREAM.CREATE.${cfg["name"] as string}`, cfg);
  assert.equal(r.error, undefined, JSON.stringify(r.error));
  return r;
}

async function info(h: Harness, name: string, body: unknown = ""): Promise<J> {
  return h.bus.api(`$JS.API.STREAM.INFO.${name}`, body);
}

const waitFor = (cond: () => Promise<boolean> | boolean, what: string, ms = 3000): Promise<void> => until(what, cond, ms);

for (const storage of ["file", "memory"]) {
  void test(`expected-* headers and their error codes (${storage})`, () =>
    withJs(async (h) => {
      await create(h, { name: "S", subjects: ["s.>"], storage });
      const p = (subj: string, hdr: [string, string][] = []) => h.bus.pub(subj, "x", hdr);
      assert.deepEqual(await p("s.a", [["Nats-Msg-Id", "id1"]]), { stream: "S", seq: 1 });
      let r: J = await p("s.a", [["Nats-Expected-Stream", "OTHER"]]);
      assert.deepEqual(r, {
        error: { code: 400, err_code: 10060, description: "expected stream does not match" },
        stream: "S",
        seq: 0,
      });
      assert.deepEqual(await p("s.a", [["Nats-Expected-Stream", "S"]]), { stream: "S", seq: 2 });
      r = await p("s.a", [["Nats-Expected-Last-Msg-Id", "id1"]]);
      assert.equal(r.error.err_code, 10070);
      assert.equal(r.error.description, "wrong last msg ID: ");
      r = await p("s.a", [["Nats-Msg-Id", "id2"]]);
      assert.equal(r.seq, 3);
      assert.deepEqual(await p("s.a", [["Nats-Expected-Last-Msg-Id", "id2"]]), { stream: "S", seq: 4 });
      r = await p("s.b", [["Nats-Expected-Last-Subject-Sequence", "1"]]);
      assert.equal(r.error.err_code, 10071);
      assert.equal(r.error.description, "wrong last sequence: 0");
      assert.deepEqual(await p("s.b", [["Nats-Expected-Last-Subject-Sequence", "0"]]), { stream: "S", seq: 5 });
      assert.deepEqual(await p("s.b", [["Nats-Expected-Last-Subject-Sequence", "5"]]), { stream: "S", seq: 6 });
      r = await p("s.c", [
        ["Nats-Expected-Last-Subject-Sequence", "4"],
        ["Nats-Expected-Last-Subject-Sequence-Subject", "s.a"],
      ]);
      assert.equal(r.seq, 7);
      r = await p("s.c", [["Nats-Expected-Last-Subject-Sequence-Subject", "s.a"]]);
      assert.equal(r.error.err_code, 10193);
      r = await p("s.c", [["Nats-Expected-Last-Sequence", "3"]]);
      assert.equal(r.error.err_code, 10071);
      assert.equal(r.error.description, "wrong last sequence: 7");
      r = await p("s.c", [["Nats-TTL", "5s"]]);
      assert.equal(r.error.err_code, 10166);
      r = await p("s.c", [["Nats-Rollup", "sub"]]);
      assert.equal(r.error.err_code, 10111);
      assert.equal(r.error.description, "rollup not permitted");
      // Nothing rejected was stored.
      assert.equal((await info(h, "S")).state.messages, 7);
      // KV-style: after a purge of the subject, 0 is accepted again.
      await h.bus.api("$JS.API.STREAM.PURGE.S", { filter: "s.b" });
      assert.equal((await p("s.b", [["Nats-Expected-Last-Subject-Sequence", "0"]])).seq, 8);
    }));
}

void test("publish without reply is stored; no_ack sends nothing", () =>
  withJs(async (h) => {
    await create(h, { name: "S", subjects: ["s"] });
    await create(h, { name: "N", subjects: ["n"], no_ack: true });
    h.bus.publish("s", "", null, Buffer.from("quiet"));
    const got = await h.bus.request("n", "x", { timeoutMs: 200 });
    assert.equal(got.length, 0);
    await waitFor(async () => (await info(h, "N")).state.messages === 1, "no_ack message stored");
    assert.equal((await info(h, "S")).state.messages, 1);
  }));

void test("max_msg_size, discard new and per-subject limits", () =>
  withJs(async (h) => {
    await create(h, { name: "S", subjects: ["s.>"], max_msg_size: 10 });
    let r: J = await h.bus.pub("s.a", "0123456789ABC");
    assert.equal(r.error.err_code, 10054);
    await create(h, { name: "D", subjects: ["d.>"], max_msgs: 2, discard: "new" });
    assert.equal((await h.bus.pub("d.a", "1")).seq, 1);
    assert.equal((await h.bus.pub("d.b", "2")).seq, 2);
    r = await h.bus.pub("d.c", "3");
    assert.deepEqual(r.error, { code: 503, err_code: 10077, description: "maximum messages exceeded" });
    await create(h, { name: "B", subjects: ["b.>"], max_bytes: 100, discard: "new" });
    r = await h.bus.pub("b.a", "x".repeat(90));
    assert.equal(r.error.description, "maximum bytes exceeded");
    await create(h, {
      name: "P",
      subjects: ["p.>"],
      max_msgs_per_subject: 1,
      discard: "new",
      discard_new_per_subject: true,
    });
    assert.equal((await h.bus.pub("p.a", "1")).seq, 1);
    r = await h.bus.pub("p.a", "2");
    assert.equal(r.error.description, "maximum messages per subject exceeded");
    await create(h, { name: "K", subjects: ["k.>"], max_msgs_per_subject: 2 });
    for (let i = 0; i < 5; i++) await h.bus.pub("k.a", String(i));
    await h.bus.pub("k.b", "b");
    const st = (await info(h, "K", { subjects_filter: ">" })).state;
    assert.equal(st.messages, 3);
    assert.deepEqual(st.subjects, { "k.a": 2, "k.b": 1 });
    await create(h, { name: "O", subjects: ["o"], max_msgs: 3 });
    for (let i = 0; i < 5; i++) await h.bus.pub("o", String(i));
    const so = (await info(h, "O")).state;
    assert.equal(so.messages, 3);
    assert.equal(so.first_seq, 3);
  }));

void test("rollup sub and all", () =>
  withJs(async (h) => {
    await create(h, { name: "R", subjects: ["r.>"], allow_rollup_hdrs: true });
    for (let i = 0; i < 3; i++) await h.bus.pub("r.a", String(i));
    await h.bus.pub("r.b", "b");
    let r: J = await h.bus.pub("r.a", "roll", [["Nats-Rollup", "sub"]]);
    assert.equal(r.seq, 5);
    let st = (await info(h, "R")).state;
    assert.equal(st.messages, 2);
    r = await h.bus.pub("r.a", "x", [["Nats-Rollup", "bogus"]]);
    assert.equal(r.error.err_code, 10111);
    r = await h.bus.pub("r.c", "all", [["Nats-Rollup", "all"]]);
    st = (await info(h, "R")).state;
    assert.equal(st.messages, 1);
    assert.equal(st.first_seq, 6);
  }));

void test("purge options, msg delete, sealed, deny flags", () =>
  withJs(async (h) => {
    await create(h, { name: "S", subjects: ["s.>"] });
    for (let i = 1; i <= 10; i++) await h.bus.pub(i % 2 ? "s.odd" : "s.even", String(i));
    let r: J = await h.bus.api("$JS.API.STREAM.PURGE.S", { seq: 3, keep: 1 });
    assert.equal(r.error.err_code, 10003);
    r = await h.bus.api("$JS.API.STREAM.PURGE.S", { seq: 3 });
    assert.deepEqual(r, { type: "io.nats.jetstream.api.v1.stream_purge_response", success: true, purged: 2 });
    r = await h.bus.api("$JS.API.STREAM.PURGE.S", { filter: "s.odd", keep: 1 });
    assert.equal(r.purged, 3);
    r = await h.bus.api("$JS.API.STREAM.MSG.DELETE.S", { seq: 4 });
    assert.deepEqual(r, { type: "io.nats.jetstream.api.v1.stream_msg_delete_response", success: true });
    r = await h.bus.api("$JS.API.STREAM.MSG.DELETE.S", { seq: 4 });
    assert.equal(r.error.err_code, 10057);
    let i: J = await info(h, "S", { deleted_details: true });
    assert.equal(i.state.messages, 4);
    assert.ok(i.state.num_deleted > 0);
    assert.ok(Array.isArray(i.state.deleted));
    r = await h.bus.api("$JS.API.STREAM.PURGE.S");
    assert.equal(r.purged, 4);
    i = await info(h, "S");
    assert.equal(i.state.first_seq, 11);
    assert.equal(i.state.last_seq, 10);

    await create(h, { name: "D", subjects: ["d"], deny_delete: true, deny_purge: true });
    await h.bus.pub("d", "1");
    r = await h.bus.api("$JS.API.STREAM.MSG.DELETE.D", { seq: 1 });
    assert.deepEqual(r.error, { code: 500, err_code: 10057, description: "message delete not permitted" });
    r = await h.bus.api("$JS.API.STREAM.PURGE.D");
    assert.deepEqual(r.error, { code: 500, err_code: 10110, description: "stream purge not permitted" });

    const cfg: J = (await info(h, "D")).config;
    r = await h.bus.api("$JS.API.STREAM.UPDATE.D", { ...cfg, sealed: true });
    assert.equal(r.error, undefined, JSON.stringify(r.error));
    assert.equal(r.config.sealed, true);
    r = await h.bus.pub("d", "2");
    assert.equal(r.error.err_code, 10109);
    r = await h.bus.api("$JS.API.STREAM.PURGE.D");
    assert.equal(r.error.err_code, 10109);
  }));

void test("API errors: names, json, mismatch, overlap, replicas, not found, api level", () =>
  withJs(async (h) => {
    await create(h, { name: "S", subjects: ["s.>"] });
    const c = async (subj: string, body: unknown) => ((await h.bus.api(subj, body)) as J).error?.err_code;
    assert.equal(await c("$JS.API.STREAM.CREATE.X", "{bad json"), 10025);
    assert.equal(await c("$JS.API.STREAM.CREATE.X", ""), 10025);
    assert.equal(await c("$JS.API.STREAM.CREATE.X", { name: "Y" }), 10056);
    assert.equal(await c("$JS.API.STREAM.CREATE.X", { name: "X", subjects: ["s.a"] }), 10065);
    assert.equal(await c("$JS.API.STREAM.CREATE.X", { name: "X", num_replicas: 3 }), 10074);
    assert.equal(await c("$JS.API.STREAM.CREATE.S", { name: "S", subjects: ["other"] }), 10058);
    assert.equal(await c("$JS.API.STREAM.CREATE.X", { name: "X", sealed: true }), 10052);
    assert.equal(await c("$JS.API.STREAM.CREATE.X", { name: "X", mirror_direct: true }), 10052);
    assert.equal(await c("$JS.API.STREAM.INFO.NOPE", ""), 10059);
    assert.equal(await c("$JS.API.STREAM.DELETE.NOPE", ""), 10059);
    assert.equal(await c("$JS.API.STREAM.UPDATE.NOPE", { name: "NOPE" }), 10059);
    assert.equal(await c("$JS.API.STREAM.MSG.GET.S", ""), 10003);
    assert.equal(await c("$JS.API.STREAM.MSG.GET.S", { seq: 1, last_by_subj: "s.a" }), 10003);
    assert.equal(await c("$JS.API.STREAM.MSG.GET.S", { seq: 99 }), 10037);
    const lvl: J = await h.bus.api("$JS.API.STREAM.INFO.S", "", [["Nats-Required-Api-Level", "99"]]);
    assert.deepEqual(lvl.error, { code: 412, err_code: 10185, description: "JetStream minimum api level required" });
    // Idempotent create returns the stream.
    const again: J = await h.bus.api("$JS.API.STREAM.CREATE.S", { name: "S", subjects: ["s.>"] });
    assert.equal(again.error, undefined);
    const acct: J = await h.bus.api("$JS.API.INFO");
    assert.equal(acct.streams, 1);
    assert.ok(acct.api.total > 10);
    assert.ok(acct.api.errors >= 14);
    // Nothing stored was lost by the refused requests.
    assert.equal((await info(h, "S")).config.subjects[0], "s.>");
  }));

void test("names, list, paging and subject filter", () =>
  withJs(async (h) => {
    for (const n of ["C", "A", "B"]) await create(h, { name: n, subjects: [`${n.toLowerCase()}.>`], storage: "memory" });
    let r: J = await h.bus.api("$JS.API.STREAM.NAMES");
    assert.deepEqual(r, { type: "io.nats.jetstream.api.v1.stream_names_response", total: 3, offset: 0, limit: 1024, streams: ["A", "B", "C"] });
    r = await h.bus.api("$JS.API.STREAM.NAMES", { subject: "b.x" });
    assert.deepEqual(r.streams, ["B"]);
    r = await h.bus.api("$JS.API.STREAM.NAMES", { subject: "zzz" });
    assert.equal(r.streams, null);
    r = await h.bus.api("$JS.API.STREAM.LIST", { offset: 1 });
    assert.equal(r.total, 3);
    assert.equal(r.limit, 256);
    assert.deepEqual(r.streams.map((s: J) => s.config.name), ["B", "C"]);
  }));

void test("direct get: by seq, last_by_subj, next_by_subj, batch, multi_last, subject form, misses", () =>
  withJs(async (h) => {
    await create(h, { name: "KV", subjects: ["kv.>"], allow_direct: true });
    await h.bus.pub("kv.a", "a1", [["X-User", "u"]]);
    await h.bus.pub("kv.b", "b1");
    await h.bus.pub("kv.a", "a2");
    let got = await h.bus.request("$JS.API.DIRECT.GET.KV", JSON.stringify({ seq: 1 }));
    const ph = hdrs(got[0]!);
    assert.equal(ph.status, 0);
    assert.equal(headerValue(ph, "X-User"), "u");
    assert.equal(headerValue(ph, "Nats-Subject"), "kv.a");
    assert.match(headerValue(ph, "Nats-Time-Stamp")!, /^\d{4}-\d\d-\d\dT.*Z$/);
    got = await h.bus.request("$JS.API.DIRECT.GET.KV.kv.a", "");
    assert.equal(got[0]!.payload.toString(), "a2");
    got = await h.bus.request("$JS.API.DIRECT.GET.KV", JSON.stringify({ next_by_subj: "kv.b", seq: 1 }));
    assert.equal(got[0]!.payload.toString(), "b1");
    got = await h.bus.request("$JS.API.DIRECT.GET.KV", JSON.stringify({ seq: 1, batch: 10 }), {
      until: (g) => g.some((d) => hdrs(d).status === 204),
    });
    assert.equal(got.length, 4);
    assert.equal(headerValue(hdrs(got[0]!), "Nats-Num-Pending"), "2");
    assert.equal(headerValue(hdrs(got[1]!), "Nats-Last-Sequence"), "1");
    const eob = hdrs(got[3]!);
    assert.equal(eob.status, 204);
    assert.equal(eob.description, "EOB");
    assert.equal(headerValue(eob, "Nats-Num-Pending"), "0");
    assert.equal(headerValue(eob, "Nats-Last-Sequence"), "3");
    got = await h.bus.request("$JS.API.DIRECT.GET.KV", JSON.stringify({ multi_last: ["kv.*"] }), {
      until: (g) => g.some((d) => hdrs(d).status === 204),
    });
    assert.deepEqual(got.slice(0, -1).map((d) => d.payload.toString()), ["b1", "a2"]);
    assert.equal(headerValue(hdrs(got[2]!), "Nats-UpTo-Sequence"), "3");
    const miss = async (body: string, status: number, text: string, subj = "$JS.API.DIRECT.GET.KV") => {
      const g = await h.bus.request(subj, body);
      const p = hdrs(g[0]!);
      assert.equal(p.status, status, body);
      assert.equal(p.description, text, body);
    };
    await miss(JSON.stringify({ seq: 99 }), 404, "Message Not Found");
    await miss("", 408, "Empty Request");
    await miss("{x", 408, "Malformed Request");
    await miss("{}", 408, "Empty Request");
    await miss(JSON.stringify({ seq: 1, last_by_subj: "kv.a" }), 408, "Bad Request");
    await miss(JSON.stringify({ multi_last: ["nope.*"] }), 404, "No Results");
    await miss(JSON.stringify({ seq: 1 }), 408, "Bad Request", "$JS.API.DIRECT.GET.KV.kv.a");
    // Streams without allow_direct do not answer.
    await create(h, { name: "ND", subjects: ["nd"] });
    const none = await h.bus.request("$JS.API.DIRECT.GET.ND", JSON.stringify({ seq: 1 }), { timeoutMs: 150 });
    assert.equal(none.length, 0);
  }));

void test("restart rebuilds dedup from msg ids among many messages without headers", () =>
  withJs(async (h) => {
    await create(h, { name: "D", subjects: ["d.>"] });
    const ids: string[] = [];
    for (let i = 0; i < 3000; i++) {
      if (i % 500 === 7) {
        ids.push(`id-${i}`);
        await h.bus.pub("d.h", String(i), [["Nats-Msg-Id", `id-${i}`]]);
      } else await h.bus.pub("d.p", String(i));
    }
    await h.restart();
    for (const id of ids) assert.equal((await h.bus.pub("d.h", "again", [["Nats-Msg-Id", id]])).duplicate, true, id);
    assert.equal((await h.bus.pub("d.h", "new", [["Nats-Msg-Id", "id-new"]])).duplicate, undefined);
  }));

void test("restart keeps data, config and the dedup window", () =>
  withJs(async (h) => {
    await create(h, { name: "S", subjects: ["s.>"], max_msgs_per_subject: 3, description: "d" });
    for (let i = 0; i < 5; i++) await h.bus.pub("s.a", String(i), [["Nats-Msg-Id", `id-${i}`]]);
    await h.bus.pub("s.b", "x", [["Nats-Msg-Id", "last"]]);
    await create(h, { name: "MEM", subjects: ["mem"], storage: "memory" });
    await h.restart();
    const i: J = await info(h, "S");
    assert.equal(i.state.messages, 4);
    assert.equal(i.config.description, "d");
    assert.equal(i.config.max_msgs_per_subject, 3);
    // Dedup survives: ids of messages within the window, even ones removed by limits? Only stored ones.
    assert.deepEqual(await h.bus.pub("s.a", "dup", [["Nats-Msg-Id", "id-4"]]), { stream: "S", seq: 5, duplicate: true });
    assert.deepEqual(await h.bus.pub("s.b", "y", [["Nats-Expected-Last-Msg-Id", "last"]]), { stream: "S", seq: 7 });
    // Memory streams do not survive a restart.
    assert.equal(((await info(h, "MEM")) as J).error.err_code, 10059);
  }));

void test("first_seq, republish, subject transform", () =>
  withJs(async (h) => {
    await create(h, { name: "F", subjects: ["f"], first_seq: 100 });
    assert.equal((await h.bus.pub("f", "x")).seq, 100);
    await create(h, { name: "T", subjects: ["in.*"], subject_transform: { src: "in.*", dest: "out.$1" } });
    await h.bus.pub("in.x", "1");
    const g: J = await h.bus.api("$JS.API.STREAM.MSG.GET.T", { seq: 1 });
    assert.equal(g.message.subject, "out.x");
    await create(h, { name: "RP", subjects: ["rp.>"], republish: { src: "rp.>", dest: "re.>" } });
    const seen: Buffer[] = [];
    const sub = h.bus.subscribe("re.>", (_s, _r, hdr) => seen.push(Buffer.from(hdr!)));
    await h.bus.pub("rp.a", "1");
    await h.bus.pub("rp.a", "2");
    sub.unsubscribe();
    assert.equal(seen.length, 2);
    const p = (await import("../../src/protocol/headers.js")).parseHeaders(seen[1]!);
    assert.equal(headerValue(p, "Nats-Stream"), "RP");
    assert.equal(headerValue(p, "Nats-Sequence"), "2");
    assert.equal(headerValue(p, "Nats-Last-Sequence"), "1");
  }));

void test("mirrors and sources, from streams created later, resuming after restart", () =>
  withJs(async (h) => {
    await create(h, { name: "M", mirror: { name: "O" } });
    await create(h, { name: "AGG", subjects: ["agg"], sources: [{ name: "O", filter_subject: "o.a" }, { name: "P" }] });
    await create(h, { name: "O", subjects: ["o.>"] });
    await create(h, { name: "P", subjects: ["p"] });
    for (let i = 0; i < 3; i++) await h.bus.pub("o.a", String(i));
    await h.bus.pub("o.b", "b");
    await h.bus.pub("p", "p");
    await waitFor(async () => (await info(h, "M")).state.messages === 4, "mirror caught up");
    await waitFor(async () => (await info(h, "AGG")).state.messages === 4, "sources caught up");
    const mi: J = await info(h, "M");
    assert.equal(mi.mirror.name, "O");
    assert.equal(mi.mirror.lag, 0);
    assert.equal(mi.state.last_seq, 4);
    const ai: J = await info(h, "AGG");
    assert.equal(ai.sources.length, 2);
    const g: J = await h.bus.api("$JS.API.STREAM.MSG.GET.AGG", { seq: 1 });
    assert.match(Buffer.from(g.message.hdrs, "base64").toString(), /Nats-Stream-Source: O 1 /);
    await h.restart();
    await h.bus.pub("o.a", "after");
    await waitFor(async () => (await info(h, "M")).state.messages === 5, "mirror resumed");
    await waitFor(async () => (await info(h, "AGG")).state.messages === 5, "source resumed");
    // No duplicates after the restart.
    await new Promise((r) => setTimeout(r, 50));
    assert.equal((await info(h, "AGG")).state.messages, 5);
    // Mirror config can not change.
    const upd: J = await h.bus.api("$JS.API.STREAM.UPDATE.M", { name: "M", mirror: { name: "P" } });
    assert.equal(upd.error.err_code, 10055);
  }));

class FakeConsumer implements ConsumerHook {
  acked = new Set<number>();
  stored: number[] = [];
  purgedTo = 0;
  constructor(
    readonly name: string,
    readonly filter: string,
  ) {}
  onStored(seq: number): void {
    this.stored.push(seq);
  }
  onPurged(first: number): void {
    this.purgedTo = first;
  }
  needsMessage(seq: number): boolean {
    return !this.acked.has(seq);
  }
  filterMatches(subject: string): boolean {
    return this.filter === "" || subjectMatches(this.filter, subject);
  }
  async stop(): Promise<void> {}
}

void test("interest and workqueue retention through the StreamHandle seam", () =>
  withJs(async (h) => {
    await create(h, { name: "I", subjects: ["i.>"], retention: "interest", max_consumers: 2 });
    // No consumers: the sequence is used, nothing kept.
    assert.equal((await h.bus.pub("i.a", "1")).seq, 1);
    assert.equal((await info(h, "I")).state.messages, 0);
    const st = h.js.getStream("I")!;
    const c1 = new FakeConsumer("c1", "i.a");
    const c2 = new FakeConsumer("c2", "");
    st.addConsumer(c1);
    st.addConsumer(c2);
    assert.throws(() => st.addConsumer(new FakeConsumer("c3", "")), /maximum consumers/);
    assert.equal((await h.bus.pub("i.a", "2")).seq, 2);
    assert.equal((await h.bus.pub("i.b", "3")).seq, 3);
    assert.deepEqual(c1.stored, [2, 3]);
    assert.equal((await info(h, "I")).state.consumer_count, 2);
    c1.acked.add(2);
    st.onAck(2, "i.a");
    assert.equal((await info(h, "I")).state.messages, 2); // c2 still needs 2
    c2.acked.add(2);
    st.onAck(2, "i.a");
    assert.equal((await info(h, "I")).state.messages, 1);
    st.removeConsumer("c2"); // nobody needs seq 3 now
    assert.equal((await info(h, "I")).state.messages, 0);
    assert.ok(st.consumerDir("c1")!.endsWith("/I/obs/c1"));

    await create(h, { name: "W", subjects: ["w"], retention: "workqueue" });
    const w = h.js.getStream("W")!;
    await h.bus.pub("w", "1");
    await h.bus.pub("w", "2");
    w.onAck(1, "w");
    const wi: J = await info(h, "W");
    assert.equal(wi.state.messages, 1);
    assert.equal(wi.state.first_seq, 2);
    // Purge tells consumers the new floor.
    const wc = new FakeConsumer("wc", "");
    w.addConsumer(wc);
    await h.bus.api("$JS.API.STREAM.PURGE.W");
    assert.equal(wc.purgedTo, 3);
  }));

void test("account storage limits: reservations (10047) and publish (10002)", () =>
  withJs(
    async (h) => {
      const r: J = await h.bus.api("$JS.API.STREAM.CREATE.BIG", { name: "BIG", max_bytes: 10_000 });
      assert.equal(r.error.err_code, 10047);
      await create(h, { name: "S", subjects: ["s"] });
      let last: J = {};
      for (let i = 0; i < 40 && last.error === undefined; i++) last = await h.bus.pub("s", "x".repeat(100));
      assert.equal(last.error.err_code, 10002);
      const acct: J = await h.bus.api("$JS.API.INFO");
      assert.ok(acct.storage <= 4096);
      assert.equal(acct.limits.max_storage, 4096);
    },
    { maxFileStoreBytes: 4096 },
  ));

void test("TTL and subject delete markers", () =>
  withJs(async (h) => {
    await create(h, { name: "T", subjects: ["t.>"], allow_msg_ttl: true, subject_delete_marker_ttl: 1e9 });
    let r: J = await h.bus.pub("t.a", "x", [["Nats-TTL", "1s"]]);
    assert.equal(r.seq, 1);
    r = await h.bus.pub("t.a", "x", [["Nats-TTL", "bad"]]);
    assert.equal(r.error.err_code, 10165);
    await waitFor(async () => {
      const g: J = await h.bus.api("$JS.API.STREAM.MSG.GET.T", { last_by_subj: "t.a" });
      if (g.error) return false;
      return Buffer.from(g.message.hdrs ?? "", "base64").toString().includes("Nats-Marker-Reason: MaxAge");
    }, "delete marker", 5000);
  }));

void test("max_age expires on the timer", () =>
  withJs(async (h) => {
    await create(h, { name: "A", subjects: ["a"], max_age: 200e6, storage: "memory" });
    await h.bus.pub("a", "1");
    await waitFor(async () => (await info(h, "A")).state.messages === 0, "max_age expiry");
  }));

// PubAck bodies are encoded by hand into one buffer per group commit: the bytes must be the
// JSON nats-server sends (key order, the domain, the duplicate flag) for any sequence.
for (const storage of ["file", "memory"]) {
  void test(`PubAck bytes: domain, duplicate flag, sequences past 2^32 (${storage})`, async () => {
    const h = await startJs({ domain: "hub" });
    try {
      const first = 2 ** 40 + 7;
      await create(h, { name: "Ü-S", subjects: ["ack.>"], storage, first_seq: first });
      const raw = async (hdr: [string, string][]): Promise<string> => {
        const got = await h.bus.request("ack.x", "v", { hdr });
        assert.equal(got.length, 1);
        return got[0]!.payload.toString("utf8");
      };
      assert.equal(await raw([["Nats-Msg-Id", "a"]]), `{"stream":"Ü-S","domain":"hub","seq":${first}}`);
      assert.equal(await raw([["Nats-Msg-Id", "b"]]), `{"stream":"Ü-S","domain":"hub","seq":${first + 1}}`);
      assert.equal(await raw([["Nats-Msg-Id", "a"]]), `{"stream":"Ü-S","domain":"hub","seq":${first},"duplicate": true}`);
      // Many in one group commit: each publisher gets its own body.
      const all = await Promise.all(Array.from({ length: 40 }, (_, i) => h.bus.pub("ack.y", "v", [["Nats-Msg-Id", `m${i % 20}`]])));
      const seqs = all.map((a) => a["seq"] as number);
      for (let i = 0; i < 20; i++) {
        assert.equal(seqs[i], first + 2 + i);
        assert.equal(all[i]!["duplicate"], undefined);
        assert.equal(seqs[i + 20], first + 2 + i);
        assert.equal(all[i + 20]!["duplicate"], true);
      }
    } finally {
      await h.close();
    }
  });
}
