// The routing seam (src/server/routing.ts): subscriptions change only through updateSub /
// dropSubs, which tell the cluster about client interest (never internal); routeRange knows
// who sent a message and keeps the one-hop rule for routed ones. Driven without sockets: a
// Server that is never started, fake subscription owners, a fake cluster, and the runtime
// seams (ManualScheduler, a scripted Random).
import { test } from "node:test";
import assert from "node:assert/strict";
import { Server, type ClusterLike, type Sender } from "../../src/server/server.js";
import { newSubscription, type Subscription, type SubOwner } from "../../src/server/subscription.js";
import { defaultOptions } from "../../src/server/options.js";
import { nullLogger } from "../../src/runtime/log.js";
import { ManualScheduler } from "../../src/runtime/sched.js";
import { ManualClock } from "../../src/runtime/clock.js";
import { Origin } from "../../src/server/conn.js";
import type { Random } from "../../src/runtime/random.js";

class Owner implements SubOwner {
  readonly echo = true;
  got: string[] = [];
  constructor(readonly cid: number) {}
  deliverMsg(sub: Subscription, subject: string): void {
    sub.delivered++;
    this.got.push(`${sub.sid}:${subject}`);
  }
  pendingBytes(): number {
    return 0;
  }
}

class FakeCluster implements ClusterLike {
  active = true;
  name = "c";
  port = 0;
  lastQueueBacklog = 0;
  remoteGen = 0;
  remote: string[] = [];
  interest: string[] = [];
  forwarded: string[] = [];
  async start(): Promise<void> {}
  async stop(): Promise<void> {}
  forward(_fromCid: number, _noEcho: boolean, subject: string): number {
    this.forwarded.push(subject);
    return 1;
  }
  localInterest(sub: Subscription, delta: 1 | -1): void {
    this.interest.push(`${delta > 0 ? "+" : "-"}${sub.subject}${sub.queue !== "" ? " " + sub.queue : ""}`);
  }
  remoteQueues: string[] = [];
  hasRemoteQueueInterest(subject: string, queue: string): boolean {
    return this.remoteQueues.includes(`${subject} ${queue}`);
  }
  hasRemoteInterest(subject: string): boolean {
    return this.remote.some((p) => p === ">" || p === subject || (p.endsWith(">") && subject.startsWith(p.slice(0, -1))));
  }
  flushRoutes(): void {}
  lameDuck(): void {}
  clientUrls(): string[] {
    return [];
  }
  varz(): Record<string, unknown> {
    return {};
  }
  routez(): Record<string, unknown> {
    return {};
  }
}

/** Always the first member: queue picks are deterministic. */
const firstRandom: Random = { next: () => 0, int: () => 0 };

function mk(): { srv: Server; cl: FakeCluster; sched: ManualScheduler } {
  const sched = new ManualScheduler();
  const srv = new Server(defaultOptions(), nullLogger, { clock: new ManualClock(), sched, random: firstRandom });
  const cl = new FakeCluster();
  srv.cluster = cl;
  return { srv, cl, sched };
}

const ROUTE: Sender = { origin: Origin.Route, cid: 900, echo: true, noResponders: false };
const CLIENT: Sender = { origin: Origin.Client, cid: 901, echo: true, noResponders: false };

function pub(srv: Server, from: Sender | null, subject: string, queues: string[] | null = null): void {
  const b = Buffer.from("x");
  srv.routeRange(from, subject, "", null, b, 0, b.length, subject, false, null, queues);
}

void test("routing seam: updateSub indexes and announces client interest; internal subscriptions are not announced", () => {
  const { srv, cl } = mk();
  const a = new Owner(7);
  const s1 = newSubscription(a, "foo.*", "", "1");
  const s2 = newSubscription(a, "bar", "q", "2");
  srv.updateSub(s1, 1);
  srv.updateSub(s2, 1);
  const internal = srv.subscribe("foo.x", () => undefined);
  assert.equal(srv.sublist.match("foo.x").psubs.length, 2);
  srv.updateSub(s1, -1);
  internal.unsubscribe();
  assert.deepEqual(cl.interest, ["+foo.*", "+bar q", "-foo.*"]);
  assert.equal(srv.sublist.match("foo.x").psubs.length, 0);
});

void test("routing seam: dropSubs announces at once and empties the index a slice per turn", () => {
  const { srv, cl, sched } = mk();
  const a = new Owner(7);
  const subs: Subscription[] = [];
  for (let i = 0; i < 2500; i++) {
    const s = newSubscription(a, `s.${i}`, "", String(i));
    srv.updateSub(s, 1);
    subs.push(s);
  }
  cl.interest.length = 0;
  for (const s of subs) s.closed = true;
  srv.dropSubs(subs);
  assert.equal(cl.interest.length, 2500, "every interest withdrawn at once");
  assert.ok(srv.sublist.match("s.2499").psubs.length === 1, "the tail waits for a later turn");
  sched.runUntilIdle();
  assert.equal(srv.sublist.match("s.2499").psubs.length, 0);
  assert.equal(srv.sublist.match("s.0").psubs.length, 0);
});

void test("routing seam: a routed message reaches local client subscribers only (one hop), named queue groups only", () => {
  const { srv, cl } = mk();
  const a = new Owner(7);
  const b = new Owner(8);
  srv.updateSub(newSubscription(a, "m.>", "", "p"), 1);
  srv.updateSub(newSubscription(a, "m.x", "g1", "q1"), 1);
  srv.updateSub(newSubscription(b, "m.x", "g2", "q2"), 1);
  const internal: string[] = [];
  srv.subscribe("m.x", (subject) => internal.push(subject));
  pub(srv, ROUTE, "m.x", ["g1"]);
  assert.deepEqual(a.got, ["p:m.x", "q1:m.x"]);
  assert.deepEqual(b.got, [], "g2 was not named by the RMSG");
  assert.deepEqual(internal, [], "internal subscriptions take nothing from routes");
  assert.deepEqual(cl.forwarded, [], "never back out to a route");
  pub(srv, ROUTE, "m.x", null);
  assert.deepEqual(a.got, ["p:m.x", "q1:m.x", "p:m.x"], "no queue groups without names");
});

void test("routing seam: a client's or an internal publish reaches internal subscribers and goes to the cluster", () => {
  const { srv, cl } = mk();
  const internal: string[] = [];
  srv.subscribe("n.x", (subject) => internal.push(subject));
  pub(srv, CLIENT, "n.x");
  pub(srv, null, "n.x");
  assert.deepEqual(internal, ["n.x", "n.x"]);
  assert.deepEqual(cl.forwarded, ["n.x", "n.x"]);
});

void test("routing seam: without routes, the queue pick comes from the Random seam", () => {
  const { srv } = mk();
  srv.cluster = null;
  const owners = [new Owner(1), new Owner(2), new Owner(3)];
  owners.forEach((o, i) => srv.updateSub(newSubscription(o, "w", "workers", String(i)), 1));
  for (let i = 0; i < 5; i++) pub(srv, CLIENT, "w");
  assert.deepEqual(
    owners.map((o) => o.got.length),
    [5, 0, 0],
    "Random.int always 0: the first member every time",
  );
});

void test("routing seam: an internal subscription with cluster: true is announced like a client's and takes routed messages", () => {
  const { srv, cl } = mk();
  const got: string[] = [];
  const local: string[] = [];
  const a = new Owner(7);
  const cs = srv.subscribe("in.>", (subject) => got.push(subject), "", false, { cluster: true });
  const ls = srv.subscribe("in.>", (subject) => local.push(subject));
  const cq = srv.subscribe("in.q", (subject) => got.push(`q:${subject}`), "grp", false, { cluster: true });
  srv.updateSub(newSubscription(a, "in.>", "", "c"), 1);
  assert.deepEqual(cl.interest, ["+in.>", "+in.q grp", "+in.>"], "cluster subscriptions announced, the local one not");
  pub(srv, ROUTE, "in.x");
  assert.deepEqual(got, ["in.x"]);
  assert.deepEqual(local, [], "internal subscriptions without cluster still take nothing from routes");
  assert.deepEqual(a.got, ["c:in.x"]);
  pub(srv, ROUTE, "in.q", ["grp"]);
  assert.deepEqual(got, ["in.x", "in.q", "q:in.q"], "a named queue group reaches its internal cluster member");
  pub(srv, ROUTE, "in.q", ["other"]);
  assert.deepEqual(got, ["in.x", "in.q", "q:in.q", "in.q"], "a group the RMSG does not name is not reached");
  assert.deepEqual(cl.forwarded, [], "one hop: nothing from a route goes back to the cluster");
  pub(srv, CLIENT, "in.y");
  assert.deepEqual(local, ["in.y"], "local publishes still reach every internal subscription");
  assert.deepEqual(cl.forwarded, ["in.y"]);
  cs.unsubscribe();
  cq.unsubscribe();
  ls.unsubscribe();
  assert.deepEqual(cl.interest.slice(3), ["-in.>", "-in.q grp"]);
});

void test("routing seam: a cluster: true ack subscription is announced; the ack shortcut stops while a route has interest in the acks", () => {
  const { srv, cl } = mk();
  const handled: string[] = [];
  const bytes: string[] = [];
  const s = srv.subscribeAck("$JS.ACK.S.C.", (subject) => handled.push(subject), (buf, start, end) => {
    bytes.push(buf.toString("latin1", start, end));
    return true;
  }, { cluster: true });
  assert.deepEqual(cl.interest, ["+$JS.ACK.S.C.>"]);
  const subj = Buffer.from("$JS.ACK.S.C.1.2.3.4.5");
  assert.equal(srv.routeAck(subj, 0, subj.length, "", 0, 0), true, "sole subscriber: the shortcut");
  assert.deepEqual(bytes, ["1.2.3.4.5"]);
  cl.remote.push("$JS.ACK.>");
  cl.remoteGen++;
  assert.equal(srv.routeAck(subj, 0, subj.length, "", 0, 0), false, "a peer wants the acks too: route them");
  cl.remote.length = 0;
  cl.remoteGen++;
  assert.equal(srv.routeAck(subj, 0, subj.length, "", 0, 0), true);
  pub(srv, ROUTE, "$JS.ACK.S.C.1.2.3.4.6");
  assert.deepEqual(handled, ["$JS.ACK.S.C.1.2.3.4.6"], "an ack routed from another server reaches the consumer");
  s.unsubscribe();
  assert.deepEqual(cl.interest, ["+$JS.ACK.S.C.>", "-$JS.ACK.S.C.>"]);
});

void test("routing seam: queue interest counts a member on another server", () => {
  const { srv, cl } = mk();
  assert.equal(srv.hasQueueInterest("d.x", "grp"), false);
  cl.remoteQueues.push("d.x grp");
  assert.equal(srv.hasQueueInterest("d.x", "grp"), true);
  assert.equal(srv.hasQueueInterest("d.x", "other"), false);
});
