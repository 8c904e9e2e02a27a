// Pull requests of one consumer: a MSG.NEXT request (or +NXT) checked against the consumer's
// limits and priority groups and queued in its waiting list; expiry (408), idle heartbeats
// and requests nobody listens to any more; the answers they get when the consumer stops.

import { statusHeaders } from "../protocol/headers.js";
import { goDuration, isPush } from "./config.js";
import { EMPTY, type ConsumerCore } from "./core.js";
import type { Delivery } from "./delivery.js";
import { pullRejection } from "./priority.js";
import {
  heartbeatStatus,
  parsePullRequest,
  pendingStatus,
  ST_CONSUMER_DELETED,
  ST_EXCEEDED_MAX_WAITING,
  ST_NO_MESSAGES,
  ST_PUSH_BASED,
  type PullRequest,
} from "./waiting.js";

const ST_REQUESTS_PENDING = statusHeaders(408, "Requests Pending");

export class PullRequests {
  constructor(
    private readonly c: ConsumerCore,
    private readonly delivery: Delivery,
  ) {}

  /** A MSG.NEXT request (or +NXT). */
  pull(reply: string, payload: Buffer): void {
    const c = this.c;
    if (c.stopped) return;
    if (isPush(c.cfg)) {
      c.out.publish(reply, "", ST_PUSH_BASED, EMPTY);
      return;
    }
    const p = parsePullRequest(payload);
    if (!p.ok) {
      c.out.publish(reply, "", statusHeaders(400, "Bad Request - " + p.error), EMPTY);
      return;
    }
    const q = p.req;
    const cfg = c.cfg;
    if (cfg.max_batch > 0 && q.batch > cfg.max_batch) {
      c.out.publish(reply, "", statusHeaders(409, `Exceeded MaxRequestBatch of ${cfg.max_batch}`), EMPTY);
      return;
    }
    if (cfg.max_expires > 0 && q.expiresNs > cfg.max_expires) {
      c.out.publish(reply, "", statusHeaders(409, `Exceeded MaxRequestExpires of ${goDuration(cfg.max_expires)}`), EMPTY);
      return;
    }
    if (cfg.max_bytes > 0 && q.maxBytes > cfg.max_bytes) {
      c.out.publish(reply, "", statusHeaders(409, `Exceeded MaxRequestMaxBytes of ${cfg.max_bytes}`), EMPTY);
      return;
    }
    if (q.hbMs > 0 && q.expiresNs > 0 && q.hbMs * 2 > q.expiresNs / 1e6) {
      c.out.publish(reply, "", statusHeaders(400, "Bad Request - heartbeat value too large"), EMPTY);
      return;
    }
    const rejected = pullRejection(cfg.priority_policy, cfg.priority_groups, q.pg, c.pins.id);
    if (rejected !== null) {
      c.out.publish(reply, "", rejected, EMPTY);
      return;
    }
    const now = c.env.clock.monoMs();
    c.lastActivityMs = now;
    c.pins.touch(q.pg, cfg.priority_timeout, now);
    if (q.noWait && q.expiresNs === 0 && !this.delivery.hasAvailable()) {
      c.out.publish(reply, "", ST_NO_MESSAGES, EMPTY);
      return;
    }
    const waiting = c.waiting;
    if (q.noWait && waiting.length > 0 && this.requestsPending(now)) {
      c.out.publish(reply, "", ST_REQUESTS_PENDING, EMPTY);
      return;
    }
    if (waiting.isFull()) {
      this.sweep(now);
      if (waiting.isFull()) {
        if (q.hbMs === 0) c.out.publish(reply, "", ST_EXCEEDED_MAX_WAITING, EMPTY);
        return;
      }
    }
    const r: PullRequest = {
      reply,
      batch: q.batch,
      maxBytes: q.maxBytes,
      expiresAtMs: q.expiresNs > 0 ? now + q.expiresNs / 1e6 : 0,
      noWait: q.noWait,
      hbMs: q.hbMs,
      lastMs: now,
      delivered: 0,
      pg: q.pg,
    };
    waiting.push(r);
    c.kick();
    if (waiting.length > 0) {
      // The coarse tick sends idle heartbeats and sweeps; wakeAt makes the 408 punctual.
      c.env.ticker.want(c);
      if (r.expiresAtMs > 0) c.env.ticker.wakeAt(c, r.expiresAtMs);
    } else if (c.pins.id !== "") c.env.ticker.want(c); // the pin's timeout
  }

  /** nats-server processNextMsgRequest: a no_wait request is refused with 408 Requests
   *  Pending when the open requests already want more messages than there are to deliver
   *  (new ones plus queued redeliveries). */
  private requestsPending(now: number): boolean {
    const c = this.c;
    const avail = c.computeNumPending() + c.ledger.queuedRedeliveries;
    if (avail === 0) return false;
    this.sweep(now);
    let wanted = 0;
    for (const r of c.waiting.all()) wanted += r.batch;
    return avail < wanted;
  }

  /** Drop expired requests (408) and those nobody listens to any more (silently). */
  sweep(now: number): void {
    const c = this.c;
    const bus = c.env.bus;
    c.waiting.sweep((r) => {
      if (r.expiresAtMs > 0 && now >= r.expiresAtMs) {
        c.out.publish(r.reply, "", pendingStatus(408, "Request Timeout", r.batch, r.maxBytes), EMPTY);
        return true;
      }
      return !bus.hasInterest(r.reply);
    });
  }

  numWaiting(): number {
    this.sweep(this.c.env.clock.monoMs());
    return this.c.waiting.length;
  }

  /** The tick's part: sweep, idle heartbeats of requests that asked for them, and a wake-up
   *  at the earliest expiry. */
  tick(now: number): void {
    const c = this.c;
    if (c.waiting.length === 0) return;
    this.sweep(now);
    let at = Infinity;
    for (const r of c.waiting.all()) {
      if (r.hbMs > 0 && now - r.lastMs >= r.hbMs) {
        r.lastMs = now;
        c.out.publish(r.reply, "", heartbeatStatus(c.ledger.deliveredConsumerSeq, c.ledger.deliveredStreamSeq, ""), EMPTY);
      }
      if (r.expiresAtMs > 0 && r.expiresAtMs < at) at = r.expiresAtMs;
    }
    if (at !== Infinity) c.env.ticker.wakeAt(c, at);
  }

  /** The consumer stops: every open request gets its answer. */
  close(deleted: boolean): void {
    const c = this.c;
    // A replicated stream's consumer stops here because another replica leads now: the
    // client's pull goes on there (nats-server's 409 Leadership Change).
    const repl = c.repl;
    const why = repl !== null && !repl.leading ? "Leadership Change" : "Server Shutdown";
    for (const r of c.waiting.clear()) {
      if (deleted) c.out.publish(r.reply, "", ST_CONSUMER_DELETED, EMPTY);
      else c.out.publish(r.reply, "", pendingStatus(409, why, r.batch, r.maxBytes), EMPTY);
    }
  }
}
