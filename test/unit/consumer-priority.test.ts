// Priority groups, the pure parts: a pull request's group checks, the overflow thresholds,
// the prioritized waiting order, pin selection over a fake bus, the Nats-Pin-Id header and
// the priority_groups info; plus the consumer config rules for the priority fields.
import { test } from "node:test";
import assert from "node:assert/strict";
import { parsePullRequest, WaitingList, type PullRequest } from "../../src/consumer/waiting.js";
import { overflowAllows, PinState, pullRejection, type PullPriority } from "../../src/consumer/priority.js";
import { checkConsumerConfig, decodeConsumerConfig, type StreamView } from "../../src/consumer/config.js";
import { JsApiError } from "../../src/jetstream/errors.js";
import { parseHeaders } from "../../src/protocol/headers.js";
import type { Bus } from "../../src/server/bus.js";

const pg = (o: Partial<PullPriority> = {}): PullPriority => ({ group: "A", minPending: 0, minAckPending: 0, id: "", priority: 0, ...o });
const req = (reply: string, p: PullPriority | null, batch = 1): PullRequest => ({
  reply,
  batch,
  maxBytes: 0,
  expiresAtMs: 0,
  noWait: false,
  hbMs: 0,
  lastMs: 0,
  delivered: 0,
  pg: p,
});
const status = (b: Buffer | null): string => {
  if (b === null) return "ok";
  const h = parseHeaders(b);
  return `${h.status} ${h.description}`;
};

void test("pull request parsing: the priority group fields, and their types", () => {
  const r = parsePullRequest(Buffer.from('{"batch":2,"group":"G","min_pending":5,"min_ack_pending":6,"id":"X","priority":3}'));
  assert.ok(r.ok);
  assert.deepEqual(r.req.pg, { group: "G", minPending: 5, minAckPending: 6, id: "X", priority: 3 });
  const bare = parsePullRequest(Buffer.from("3"));
  assert.ok(bare.ok && bare.req.pg === null);
  assert.equal(parsePullRequest(Buffer.from('{"group":1}')).ok, false);
  assert.equal(parsePullRequest(Buffer.from('{"id":true}')).ok, false);
  assert.equal(parsePullRequest(Buffer.from('{"priority":"1"}')).ok, false);
  assert.equal(parsePullRequest(Buffer.from('{"min_pending":1.5}')).ok, false);
});

void test("pull rejections: nats-server's texts, in its order", () => {
  const groups = ["A", "B"];
  assert.equal(status(pullRejection("pinned_client", groups, pg({ minPending: 1 }), "")), "400 Bad Request - Not a Overflow Priority consumer");
  assert.equal(status(pullRejection("", [], pg({ minAckPending: 1 }), "")), "400 Bad Request - Not a Overflow Priority consumer");
  assert.equal(status(pullRejection("overflow", groups, pg({ id: "x" }), "")), "400 Bad Request - Not a Pinned Client Priority consumer");
  assert.equal(status(pullRejection("prioritized", groups, pg({ priority: 10 }), "")), "400 Bad Request - Priority must be between 0 and 9");
  assert.equal(status(pullRejection("prioritized", groups, pg({ priority: -1 }), "")), "400 Bad Request - Priority must be between 0 and 9");
  assert.equal(status(pullRejection("overflow", groups, pg({ group: "" }), "")), "400 Bad Request - Priority Group missing");
  assert.equal(status(pullRejection("overflow", groups, pg({ group: "C" }), "")), "400 Bad Request - Invalid Priority Group");
  assert.equal(status(pullRejection("pinned_client", groups, pg({ id: "old" }), "cur")), "423 Nats-Pin-Id mismatch");
  // Accepted: the current pin, no id (standby), a stale id while nothing is pinned (it gets
  // 423 Nats-Wrong-Pin-Id once a message is ready), no policy at all, a bare-number body.
  assert.equal(status(pullRejection("pinned_client", groups, pg({ id: "cur" }), "cur")), "ok");
  assert.equal(status(pullRejection("pinned_client", groups, pg(), "cur")), "ok");
  assert.equal(status(pullRejection("pinned_client", groups, pg({ id: "old" }), "")), "ok");
  assert.equal(status(pullRejection("", [], pg({ group: "" }), "")), "ok");
  assert.equal(status(pullRejection("overflow", groups, null, "")), "ok");
  assert.equal(status(pullRejection("overflow", groups, pg({ group: "B", minPending: 3 }), "")), "ok");
});

void test("overflow: min_pending OR min_ack_pending, none set means always", () => {
  assert.equal(overflowAllows(null, 0, 0), true);
  assert.equal(overflowAllows(pg(), 0, 0), true);
  assert.equal(overflowAllows(pg({ minPending: 5 }), 4, 100), false);
  assert.equal(overflowAllows(pg({ minPending: 5 }), 5, 0), true);
  assert.equal(overflowAllows(pg({ minAckPending: 2 }), 100, 1), false);
  assert.equal(overflowAllows(pg({ minAckPending: 2 }), 0, 2), true);
  assert.equal(overflowAllows(pg({ minPending: 5, minAckPending: 2 }), 1, 2), true);
  assert.equal(overflowAllows(pg({ minPending: 5, minAckPending: 2 }), 4, 1), false);
});

void test("prioritized waiting list: sorted by priority, round-robin within one priority", () => {
  const w = new WaitingList(10);
  w.prioritized = true;
  w.push(req("p2a", pg({ priority: 2 })));
  w.push(req("p0a", pg({ priority: 0 })));
  w.push(req("none", null));
  w.push(req("p2b", pg({ priority: 2 })));
  w.push(req("p0b", pg({ priority: 0 })));
  w.push(req("p1", pg({ priority: 1 })));
  assert.deepEqual(
    w.all().map((r) => r.reply),
    ["p0a", "p0b", "p1", "p2a", "p2b", "none"],
  );
  w.rotate();
  assert.deepEqual(
    w.all().map((r) => r.reply),
    ["p0b", "p0a", "p1", "p2a", "p2b", "none"],
  );
  w.shift();
  w.shift();
  w.rotate(); // p1 is alone in its priority: stays in front
  assert.equal(w.peek()!.reply, "p1");
});

class FakeBus {
  readonly sent: { to: string; status: string }[] = [];
  readonly deaf = new Set<string>();
  publish(to: string, _reply: string, hdr: Buffer | null): void {
    this.sent.push({ to, status: status(hdr) });
  }
  hasInterest(s: string): boolean {
    return !this.deaf.has(s);
  }
}

function pins(): { p: PinState; adv: { subject: string; body: Record<string, unknown> }[] } {
  const adv: { subject: string; body: Record<string, unknown> }[] = [];
  let n = 0;
  const p = new PinState("S", "C", () => `PIN${++n}`, (subject, body) => adv.push({ subject, body }));
  return { p, adv };
}

void test("pinned_client: the first request gets the pin, standby rotates, stale ids get 423 with pending", () => {
  const { p, adv } = pins();
  const bus = new FakeBus();
  const b = bus as unknown as Bus;
  const w = new WaitingList(10);
  const stale = req("stale", pg({ id: "OLD" }), 4);
  const a = req("a", pg());
  const s = req("s", pg());
  w.push(stale);
  w.push(a);
  w.push(s);
  // Nothing pinned: the stale id is refused, the next request without an id is pinned.
  assert.equal(p.select("pinned_client", "A", 60e9, w, b, 0, 0, 1000, 5e9), true);
  assert.deepEqual(bus.sent, [{ to: "stale", status: "423 Nats-Wrong-Pin-Id" }]);
  assert.equal(w.peek(), a);
  assert.equal(p.id, "PIN1");
  assert.equal(a.pg!.id, "PIN1");
  assert.deepEqual(adv, [
    { subject: "$JS.EVENT.ADVISORY.CONSUMER.PINNED.S.C", body: { type: "io.nats.jetstream.advisory.v1.consumer_group_pinned", stream: "S", consumer: "C", group: "A", pinned_id: "PIN1" } },
  ]);
  // The pinned request is done; only the standby one is left: it waits.
  w.shift();
  assert.equal(p.select("pinned_client", "A", 60e9, w, b, 0, 0, 1001, 5e9), false);
  assert.equal(w.length, 1);
  // A request with the pin is served ahead of the standby one.
  const a2 = req("a2", pg({ id: "PIN1" }));
  w.push(a2);
  assert.equal(p.select("pinned_client", "A", 60e9, w, b, 0, 0, 1002, 5e9), true);
  assert.equal(w.peek(), a2);
  // A request with a wrong id that got queued while pinned (id set later) is refused.
  w.shift();
  w.push(req("wrong", pg({ id: "OTHER" }), 2));
  assert.equal(p.select("pinned_client", "A", 60e9, w, b, 0, 0, 1003, 5e9), false);
  assert.deepEqual(bus.sent.at(-1), { to: "wrong", status: "423 Nats-Wrong-Pin-Id" });
  // Timeout: the pin goes (advisory), the standby request is pinned next.
  assert.equal(p.expire("A", 1000 + 59_999), false);
  assert.equal(p.expire("A", 1000 + 60_000), true);
  assert.equal(p.id, "");
  assert.deepEqual(adv.at(-1), {
    subject: "$JS.EVENT.ADVISORY.CONSUMER.UNPINNED.S.C",
    body: { type: "io.nats.jetstream.advisory.v1.consumer_group_unpinned", stream: "S", consumer: "C", group: "A", reason: "timeout" },
  });
  assert.equal(p.select("pinned_client", "A", 60e9, w, b, 0, 0, 70_000, 6e9), true);
  assert.equal(w.peek(), s);
  assert.equal(p.id, "PIN2");
  // A pull carrying the pin pushes the timeout out.
  p.touch(pg({ id: "PIN2" }), 60e9, 100_000);
  assert.equal(p.expire("A", 130_000), false);
  p.touch(pg({ id: "nope" }), 60e9, 150_000);
  assert.equal(p.expire("A", 160_000), true);
});

void test("pinned_client: requests nobody listens to are dropped, a pin dropped with its request", () => {
  const { p, adv } = pins();
  const bus = new FakeBus();
  const w = new WaitingList(10);
  const gone = req("gone", pg());
  const live = req("live", pg());
  w.push(gone);
  w.push(live);
  bus.deaf.add("gone");
  assert.equal(p.select("pinned_client", "A", 60e9, w, bus as unknown as Bus, 0, 0, 0, 1), true);
  assert.equal(w.peek(), live);
  assert.equal(w.length, 1);
  // The chosen request could not take the message (max_bytes): its fresh pin goes too.
  p.dropped(live);
  assert.equal(p.id, "");
  assert.equal(adv.length, 1);
  // UNPIN announces even when nothing is pinned.
  p.unpin("A", "admin");
  assert.equal(adv.length, 2);
  assert.equal(adv[1]!.body["reason"], "admin");
});

void test("overflow selection: requests below their thresholds rotate, none eligible means wait", () => {
  const { p } = pins();
  const bus = new FakeBus();
  const w = new WaitingList(10);
  const high = req("high", pg({ minPending: 10 }));
  const low = req("low", pg({ minPending: 3 }));
  w.push(high);
  w.push(low);
  assert.equal(p.select("overflow", "A", 0, w, bus as unknown as Bus, 2, 0, 0, 1), false);
  assert.equal(p.select("overflow", "A", 0, w, bus as unknown as Bus, 5, 0, 0, 1), true);
  assert.equal(w.peek(), low);
  assert.equal(p.select("overflow", "A", 0, w, bus as unknown as Bus, 10, 0, 0, 1), true);
  assert.equal(w.peek(), low);
  w.push(req("plain", pg()));
  w.shift();
  assert.equal(p.select("overflow", "A", 0, w, bus as unknown as Bus, 1, 0, 0, 1), true);
  assert.equal(w.peek()!.reply, "plain");
  assert.equal(p.id, "");
});

void test("Nats-Pin-Id header: added to a message's headers or as the only header", () => {
  const { p } = pins();
  const bus = new FakeBus();
  const w = new WaitingList(10);
  w.push(req("a", pg()));
  assert.ok(p.select("pinned_client", "A", 60e9, w, bus as unknown as Bus, 0, 0, 0, 1));
  const only = parseHeaders(p.withPinHeader(null));
  assert.deepEqual(only.entries, [["Nats-Pin-Id", "PIN1"]]);
  const both = parseHeaders(p.withPinHeader(Buffer.from("NATS/1.0\r\nX: 1\r\n\r\n")));
  assert.deepEqual(both.entries, [
    ["X", "1"],
    ["Nats-Pin-Id", "PIN1"],
  ]);
  assert.equal(p.withPinHeader(Buffer.from("NATS/1.0\r\nX: 1\r\n\r\n")).toString(), "NATS/1.0\r\nX: 1\r\nNats-Pin-Id: PIN1\r\n\r\n");
});

void test("priority_groups info: first group, pin id and time; a zero time when unpinned", () => {
  const { p } = pins();
  const fmt = (ns: number): string => `T${ns}`;
  assert.equal(p.info([], fmt), null);
  assert.deepEqual(p.info(["A", "B"], fmt), [{ group: "A", pinned_ts: "0001-01-01T00:00:00Z" }]);
  const w = new WaitingList(10);
  w.push(req("a", pg()));
  assert.ok(p.select("pinned_client", "A", 60e9, w, new FakeBus() as unknown as Bus, 0, 0, 0, 42));
  assert.deepEqual(p.info(["A", "B"], fmt), [{ group: "A", pinned_client_id: "PIN1", pinned_ts: "T42" }]);
});

const stream: StreamView = { name: "S", subjects: ["s.>"], retention: "limits", num_replicas: 1, consumer_limits: { inactive_threshold: 0, max_ack_pending: 0 } };

function cfgErr(o: Record<string, unknown>, pedantic = false): number | string {
  try {
    const c = checkConsumerConfig(decodeConsumerConfig({ durable_name: "D", ack_policy: "explicit", ...o }), stream, pedantic);
    return `ok ${c.priority_policy} ${c.priority_timeout}`;
  } catch (e) {
    if (e instanceof JsApiError) return `${e.apiError.err_code} ${e.apiError.description}`;
    throw e;
  }
}

void test("consumer config: priority fields' err_codes, defaults and policy names", () => {
  assert.equal(cfgErr({ priority_policy: "overflow" }), "10159 Setting PriorityPolicy requires at least one PriorityGroup to be set");
  assert.equal(cfgErr({ priority_policy: "overflow", priority_groups: [""] }), "10161 Group name cannot be an empty string");
  assert.equal(
    cfgErr({ priority_policy: "overflow", priority_groups: ["seventeen_chars_x"] }),
    "10162 Valid priority group name must match A-Z, a-z, 0-9, -_/=)+ and may not exceed 16 characters",
  );
  assert.equal(cfgErr({ priority_policy: "overflow", priority_groups: ["a.b"] }).toString().slice(0, 5), "10162");
  assert.equal(cfgErr({ priority_policy: "pinned_client", priority_groups: ["A"], deliver_subject: "out" }), "10178 priority groups can not be used with push consumers");
  assert.equal(cfgErr({ priority_groups: ["A"] }), "10196 consumer can not have priority groups when policy is none");
  assert.equal(cfgErr({ priority_groups: ["A"], deliver_subject: "out" }), "10196 consumer can not have priority groups when policy is none");
  assert.equal(cfgErr({ priority_timeout: 1e9 }), "10197 PinnedTTL cannot be set when PriorityPolicy is none");
  assert.equal(cfgErr({ priority_policy: "none", priority_timeout: 1e9 }), "10197 PinnedTTL cannot be set when PriorityPolicy is none");
  assert.equal(cfgErr({ priority_policy: "Overflow", priority_groups: ["A"] }), '10025 invalid JSON: unknown priority policy: "Overflow"');
  assert.equal(cfgErr({ priority_policy: 1, priority_groups: ["A"] }), "10025 invalid JSON: unknown priority policy: 1");
  // pinned_client defaults priority_timeout to 2 minutes; a negative one is dropped (pedantic: refused).
  assert.equal(cfgErr({ priority_policy: "pinned_client", priority_groups: ["A"] }), "ok pinned_client 120000000000");
  assert.equal(cfgErr({ priority_policy: "pinned_client", priority_groups: ["A"], priority_timeout: 5e9 }), "ok pinned_client 5000000000");
  assert.equal(cfgErr({ priority_policy: "overflow", priority_groups: ["A"] }), "ok overflow 0");
  assert.equal(cfgErr({ priority_policy: "prioritized", priority_groups: ["A/b=c-d_e"] }), "ok prioritized 0");
  assert.equal(cfgErr({ priority_policy: "overflow", priority_groups: ["A"], priority_timeout: -1 }), "ok overflow 0");
  assert.equal(cfgErr({ priority_timeout: -1 }, true), "10157 pedantic mode: priority_timeout must not be negative");
});
