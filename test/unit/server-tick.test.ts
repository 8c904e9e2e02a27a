// The server's tick (auth timeouts, write deadlines, pings, idle buffers) walks every client;
// it does so a slice per turn of the loop (TICK_PER_TURN, or 1 ms), so that tens of thousands
// of idle connections do not hold the loop once per tick. Driven without sockets: a Server that
// is never started, a virtual clock and a ManualScheduler, and stand-in clients that record
// what the tick did to them.
import { test } from "node:test";
import assert from "node:assert/strict";
import { Server } from "../../src/server/server.js";
import { defaultOptions } from "../../src/server/options.js";
import { nullLogger } from "../../src/runtime/log.js";
import { ManualScheduler } from "../../src/runtime/sched.js";
import { ManualClock } from "../../src/runtime/clock.js";

/** What the tick reads and calls on a client that has not sent CONNECT. */
class Waiting {
  closed = false;
  connected = false;
  readonly kind = "client";
  startMs = 0;
  errs: string[] = [];
  constructor(
    readonly cid: number,
    private readonly log: number[],
  ) {}
  releaseIdleBuffer(): void {}
  sendErr(e: string): void {
    this.errs.push(e);
  }
  close(): void {
    this.closed = true;
    this.log.push(this.cid);
  }
}

function rig(n: number): { srv: Server; clock: ManualClock; sched: ManualScheduler; closed: number[]; add(cid: number): void; clients: Map<number, unknown> } {
  const clock = new ManualClock();
  const sched = new ManualScheduler();
  const opts = defaultOptions();
  opts.authorization = { ...opts.authorization, user: "u", password: "p", timeoutMs: 2000 };
  const srv = new Server(opts, nullLogger, { clock, sched });
  const closed: number[] = [];
  const clients = srv.clients as unknown as Map<number, unknown>;
  const add = (cid: number): void => {
    const c = new Waiting(cid, closed);
    c.startMs = clock.nowMs() - 10_000; // past its auth timeout
    clients.set(cid, c);
  };
  for (let i = 1; i <= n; i++) add(i);
  (srv as unknown as { armTick(ms: number): void }).armTick(500);
  return { srv, clock, sched, closed, add, clients };
}

void test("the tick walks 5,000 clients 2,048 a turn, each once, in order, and arms its timer again only after the walk", () => {
  const r = rig(5000);
  r.clock.advance(500);
  assert.equal(r.closed.length, 2048, "the first slice, in the timer's turn");
  assert.equal(r.sched.pending, 1, "the rest waits for the next turn");
  r.sched.step();
  assert.equal(r.closed.length, 4096);
  // The timer is not armed while the walk is under way: the clock moving on does nothing.
  r.clock.advance(500);
  assert.equal(r.closed.length, 4096);
  r.sched.step();
  assert.equal(r.closed.length, 5000);
  assert.equal(r.sched.pending, 0);
  assert.deepEqual(r.closed, Array.from({ length: 5000 }, (_, i) => i + 1), "each client once, in order");
  // Armed again after the walk: a client that comes later is timed out by the next tick.
  // (The stand-ins stay in the map once closed, so this walk takes three turns too.)
  r.add(9001);
  r.clock.advance(500);
  r.sched.runUntilIdle();
  assert.deepEqual(r.closed.slice(5000), [9001]);
});

void test("clients that leave during a walk are skipped; those that come are seen", () => {
  const r = rig(3000);
  r.clock.advance(500);
  assert.equal(r.closed.length, 2048);
  r.clients.delete(2500);
  r.add(7000);
  r.sched.step();
  assert.equal(r.closed.length, 3000 - 2048 - 1 + 1 + 2048);
  assert.ok(!r.closed.includes(2500), "a client gone before its turn is not touched");
  assert.equal(r.closed[r.closed.length - 1], 7000);
});

void test("a shutdown during a walk stops it", async () => {
  const r = rig(3000);
  r.clock.advance(500);
  assert.equal(r.closed.length, 2048);
  (r.srv as unknown as { shuttingDown: boolean }).shuttingDown = true;
  r.sched.step();
  assert.equal(r.closed.length, 2048);
  r.clock.advance(5000);
  assert.equal(r.closed.length, 2048, "and arms no timer");
});
