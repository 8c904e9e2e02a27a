import { test } from "node:test";
import assert from "node:assert/strict";
import {
  checkStreamConfig,
  checkStreamUpdate,
  decodeStreamConfig,
  configToWire,
  sameConfig,
} from "../../src/stream/config.js";
import { JsApiError } from "../../src/jetstream/errors.js";
import type { StreamConfig } from "../../src/jetstream/types.js";
import { SubjectTransform } from "../../src/stream/transform.js";
import { parseGoDurationNs, parseMsgTtlSec, rfc3339Ns, parseRfc3339Ns } from "../../src/stream/time.js";
import { DedupWindow } from "../../src/stream/dedup.js";

const none = { get: (_n: string): StreamConfig | undefined => undefined };

function check(o: Record<string, unknown>, others = none, pedantic = false): StreamConfig {
  return checkStreamConfig(decodeStreamConfig(o), others, pedantic);
}

function code(fn: () => unknown): number {
  try {
    fn();
  } catch (e) {
    if (e instanceof JsApiError) return e.apiError.err_code;
    throw e;
  }
  return 0;
}

void test("defaults are filled as nats-server does", () => {
  const c = check({ name: "ORDERS" });
  assert.deepEqual(c.subjects, ["ORDERS"]);
  assert.equal(c.max_msgs, -1);
  assert.equal(c.max_bytes, -1);
  assert.equal(c.max_msgs_per_subject, -1);
  assert.equal(c.max_msg_size, -1);
  assert.equal(c.max_consumers, -1);
  assert.equal(c.num_replicas, 1);
  assert.equal(c.storage, "file");
  assert.equal(c.retention, "limits");
  assert.equal(c.discard, "old");
  assert.equal(c.duplicate_window, 120e9);
  // A max_age below the default window caps the window.
  assert.equal(check({ name: "A", max_age: 1e9 }).duplicate_window, 1e9);
  // Negative limits become -1.
  assert.equal(check({ name: "A", max_msgs: -5 }).max_msgs, -1);
  // Marker TTL turns on TTLs and rollups.
  const m = check({ name: "A", subject_delete_marker_ttl: 5e9 });
  assert.equal(m.allow_msg_ttl, true);
  assert.equal(m.allow_rollup_hdrs, true);
});

void test("wire encoding follows nats-server's omitempty", () => {
  const w = configToWire(check({ name: "S", subjects: ["a.>"] }), false);
  assert.deepEqual(Object.keys(w).slice(0, 14), [
    "name",
    "subjects",
    "retention",
    "max_consumers",
    "max_msgs",
    "max_bytes",
    "max_age",
    "max_msgs_per_subject",
    "max_msg_size",
    "discard",
    "storage",
    "num_replicas",
    "duplicate_window",
    "compression",
  ]);
  assert.equal(w["no_ack"], undefined);
  assert.equal(w["description"], undefined);
  assert.equal(w["max_msg_size"], -1);
  const dyn = configToWire(check({ name: "S" }), true);
  assert.equal((dyn["metadata"] as Record<string, string>)["_nats.level"], "1");
});

void test("unknown fields are ignored, wrong types are invalid JSON (10025)", () => {
  assert.equal(check({ name: "S", some_future_field: 1 }).name, "S");
  assert.equal(code(() => check({ name: "S", max_age: "1s" })), 10025);
  assert.equal(code(() => check({ name: "S", retention: "bogus" })), 10025);
  assert.equal(code(() => check({ name: "S", subjects: "a" })), 10025);
  assert.equal(code(() => check({ name: "S", no_ack: "yes" })), 10025);
});

void test("invalid configs give nats-server's codes", () => {
  for (const name of ["", "a.b", "a*", "a>", "a b", "a\tb"]) assert.equal(code(() => check({ name })), 10052, name);
  assert.equal(code(() => check({ name: "x".repeat(256) })), 10052);
  assert.equal(code(() => check({ name: "S", num_replicas: -1 })), 10133);
  assert.equal(code(() => check({ name: "S", num_replicas: 6 })), 10052);
  assert.equal(code(() => check({ name: "S", max_age: -1 })), 10052);
  assert.equal(code(() => check({ name: "S", max_age: 1e6 })), 10052);
  assert.equal(code(() => check({ name: "S", duplicate_window: 50e6 })), 10052);
  assert.equal(code(() => check({ name: "S", max_age: 1e9, duplicate_window: 2e9 })), 10052);
  assert.equal(code(() => check({ name: "S", deny_purge: true, allow_rollup_hdrs: true })), 10052);
  assert.equal(code(() => check({ name: "S", discard_new_per_subject: true })), 10052);
  assert.equal(code(() => check({ name: "S", discard: "new", discard_new_per_subject: true })), 10052);
  assert.equal(code(() => check({ name: "S", subjects: ["a", "a"] })), 10052);
  assert.equal(code(() => check({ name: "S", subjects: ["a.*", "a.b"] })), 10052);
  assert.equal(code(() => check({ name: "S", subjects: ["a..b"] })), 10052);
  assert.equal(code(() => check({ name: "S", subjects: [">"] })), 10052);
  assert.equal(check({ name: "S", subjects: [">"], no_ack: true }).subjects[0], ">");
  assert.equal(code(() => check({ name: "S", subjects: ["$JS.API.>"] })), 10052);
  assert.equal(check({ name: "S", subjects: ["$JS.EVENT.>"] }).subjects[0], "$JS.EVENT.>");
  assert.equal(code(() => check({ name: "S", subject_delete_marker_ttl: 5e8 })), 10052);
  assert.equal(code(() => check({ name: "S", max_msgs: -2 }, none, true)), 10157);
  // Mirrors.
  assert.equal(code(() => check({ name: "M", mirror: { name: "O" }, subjects: ["x"] })), 10034);
  assert.equal(code(() => check({ name: "M", mirror: { name: "O" }, sources: [{ name: "P" }] })), 10031);
  assert.equal(code(() => check({ name: "M", mirror: { name: "O" }, first_seq: 5 })), 10143);
  assert.equal(code(() => check({ name: "M", mirror: { name: "a.b" } })), 10142);
  assert.equal(
    code(() => check({ name: "M", mirror: { name: "O", filter_subject: "a", subject_transforms: [{ src: "a", dest: "b" }] } })),
    10150,
  );
  assert.equal(code(() => check({ name: "M", sources: [{ name: "O" }, { name: "O" }] })), 10140);
  assert.equal(code(() => check({ name: "M", sources: [{ name: "a b" }] })), 10141);
  assert.equal(
    code(() => check({ name: "M", sources: [{ name: "O", subject_transforms: [{ src: "a.*", dest: "b.$9" }] }] })),
    10146,
  );
  // Transforms and republish.
  assert.equal(code(() => check({ name: "S", subject_transform: { src: "a..", dest: "b" } })), 10155);
  assert.equal(code(() => check({ name: "S", subject_transform: { src: "a.*", dest: "b.$2" } })), 10156);
  assert.equal(code(() => check({ name: "S", subjects: ["a.>"], republish: { src: "a.>", dest: "a.x.>" } })), 10052);
  // A mirror of a visible origin with a smaller max_msg_size.
  const origin = check({ name: "O", max_msg_size: 100 });
  const others = { get: (n: string) => (n === "O" ? origin : undefined) };
  assert.equal(code(() => check({ name: "M", mirror: { name: "O" }, max_msg_size: 10 }, others)), 10030);
  // Cycles.
  const a = check({ name: "A", subjects: ["a"], sources: [{ name: "B" }] });
  const cyc = { get: (n: string) => (n === "A" ? a : undefined) };
  assert.equal(code(() => check({ name: "B", subjects: ["b"], sources: [{ name: "A" }] }, cyc)), 10052);
});

void test("update rules", () => {
  const old = check({ name: "S", subjects: ["a"], deny_delete: true });
  const upd = (o: Record<string, unknown>) => checkStreamUpdate(old, check({ name: "S", subjects: ["a"], deny_delete: true, ...o }));
  assert.equal(code(() => upd({ storage: "memory" })), 10052);
  assert.equal(code(() => upd({ retention: "workqueue" })), 10052);
  assert.equal(code(() => upd({ deny_delete: false })), 10052);
  assert.equal(code(() => upd({ num_replicas: 3 })), 10074);
  assert.equal(upd({ retention: "interest" }).retention, "interest");
  assert.equal(upd({ subjects: ["a", "b"] }).subjects.length, 2);
  const sealed = upd({ sealed: true });
  assert.equal(sealed.deny_purge, true);
  assert.equal(sealed.discard, "new");
  assert.equal(code(() => checkStreamUpdate(sealed, check({ name: "S", subjects: ["a"], deny_delete: true }))), 10052);
  const m = check({ name: "M", mirror: { name: "O" } });
  assert.equal(code(() => checkStreamUpdate(m, check({ name: "M", mirror: { name: "P" } }))), 10055);
  // Removing the mirror promotes it.
  assert.equal(checkStreamUpdate(m, check({ name: "M", subjects: ["m"] })).mirror, null);
  const ttl = check({ name: "T", allow_msg_ttl: true });
  assert.equal(code(() => checkStreamUpdate(ttl, check({ name: "T" }))), 10052);
});

void test("sameConfig ignores _nats metadata", () => {
  const a = check({ name: "S" });
  const b = check({ name: "S", metadata: { "_nats.req.level": "0" } });
  assert.equal(sameConfig(a, b), true);
  assert.equal(sameConfig(a, check({ name: "S", max_msgs: 5 })), false);
});

void test("subject transforms", () => {
  assert.equal(SubjectTransform.create("a.*.*", "b.$2.$1").apply("a.x.y"), "b.y.x");
  assert.equal(SubjectTransform.create("a.*", "b.{{wildcard(1)}}").apply("a.x"), "b.x");
  assert.equal(SubjectTransform.create("a.>", "b.>").apply("a.x.y"), "b.x.y");
  assert.equal(SubjectTransform.create("a.*", "b").apply("c.x"), null);
  assert.equal(SubjectTransform.create("a.*", "{{split(1,-)}}").apply("a.x-y-z"), "x.y.z");
  assert.equal(SubjectTransform.create("a.*", "{{splitfromleft(1,2)}}").apply("a.abcd"), "ab.cd");
  assert.equal(SubjectTransform.create("a.*", "{{splitfromright(1,1)}}").apply("a.abcd"), "abc.d");
  assert.equal(SubjectTransform.create("a.*", "{{slicefromleft(1,2)}}").apply("a.abcde"), "ab.cd.e");
  assert.equal(SubjectTransform.create("a.*", "{{slicefromright(1,2)}}").apply("a.abcde"), "a.bc.de");
  const p = SubjectTransform.create("a.*", "p.{{partition(3,1)}}");
  const v = p.apply("a.key")!;
  assert.match(v, /^p\.[012]$/);
  assert.equal(p.apply("a.key"), v);
  assert.throws(() => SubjectTransform.create("a.*", "b.$2"));
  assert.throws(() => SubjectTransform.create("a.*", "b.{{nope(1)}}"));
});

void test("time helpers", () => {
  assert.equal(rfc3339Ns(0), "0001-01-01T00:00:00Z");
  assert.equal(rfc3339Ns(1_700_000_000_000_000_000), "2023-11-14T22:13:20Z");
  assert.equal(rfc3339Ns(1_700_000_000_500_000_000), "2023-11-14T22:13:20.5Z");
  assert.equal(parseRfc3339Ns("2023-11-14T22:13:20.5Z"), 1_700_000_000_500_000_000);
  assert.equal(parseGoDurationNs("1m30s"), 90e9);
  assert.equal(parseGoDurationNs("250ms"), 250e6);
  assert.ok(Number.isNaN(parseGoDurationNs("abc")));
  assert.equal(parseMsgTtlSec("never"), -1);
  assert.equal(parseMsgTtlSec("10"), 10);
  assert.equal(parseMsgTtlSec("2m"), 120);
  assert.ok(Number.isNaN(parseMsgTtlSec("500ms")));
  assert.ok(Number.isNaN(parseMsgTtlSec("0")));
  assert.ok(Number.isNaN(parseMsgTtlSec("x")));
});

void test("dedup window expires ids by time", () => {
  const d = new DedupWindow(1000);
  d.add("a", 1, 100);
  d.add("b", 2, 600);
  assert.equal(d.check("a", 1000), 1);
  assert.equal(d.check("a", 1100), 0);
  assert.equal(d.check("b", 1100), 2);
  d.add("a", 3, 1200);
  assert.equal(d.check("a", 1300), 3);
  assert.equal(d.check("b", 1700), 0);
});
