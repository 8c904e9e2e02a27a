// Pull consumer priority groups (ADR-42; nats-server 2.11, `prioritized` 2.12): which open
// pull request a message goes to under `overflow` and `pinned_client`, the pin itself
// (its id, the Nats-Pin-Id header, its timeout and the PINNED/UNPINNED advisories), the
// checks a new pull request's group fields get, and the `priority_groups` consumer info.
// The `prioritized` order lives in the waiting list (waiting.ts), which keeps requests
// sorted by priority.
//
// Like nats-server, one pin per consumer (for its first group, which is all ADR-42 allows
// in practice) and nothing persisted: after a restart the next delivery picks a new pin.

import type { Bus } from "../contracts/bus.js";
import type { Publisher } from "./outbox.js";
import { appendHeaders, statusHeaders } from "../protocol/headers.js";
import { pendingStatus, type PullPriority, type PullRequest, type WaitingList } from "./waiting.js";

export type { PullPriority } from "./waiting.js";

export const PriorityPolicies = ["overflow", "pinned_client", "prioritized"] as const;
export type PriorityPolicy = (typeof PriorityPolicies)[number];
/** nats-server JsDefaultPinnedTTL. */
export const DEFAULT_PRIORITY_TIMEOUT_NS = 2 * 60 * 1_000_000_000;
/** nats-server validGroupName: ADR-6 limited-term, at most 16 characters. */
export const VALID_GROUP_NAME = /^[A-Za-z0-9/_=-]{1,16}$/;
export const PIN_ID_HEADER = "Nats-Pin-Id";
/** A pin id is a NUID in nats-server: 22 characters. */
export const PIN_ID_LEN = 22;


const ST_NOT_OVERFLOW = statusHeaders(400, "Bad Request - Not a Overflow Priority consumer");
const ST_NOT_PINNED = statusHeaders(400, "Bad Request - Not a Pinned Client Priority consumer");
const ST_BAD_PRIORITY = statusHeaders(400, "Bad Request - Priority must be between 0 and 9");
const ST_GROUP_MISSING = statusHeaders(400, "Bad Request - Priority Group missing");
const ST_GROUP_INVALID = statusHeaders(400, "Bad Request - Invalid Priority Group");
const ST_PIN_MISMATCH = statusHeaders(423, "Nats-Pin-Id mismatch");

const ADV = "$JS.EVENT.ADVISORY.CONSUMER.";
const PINNED_TYPE = "io.nats.jetstream.advisory.v1.consumer_group_pinned";
const UNPINNED_TYPE = "io.nats.jetstream.advisory.v1.consumer_group_unpinned";
const ZERO_TIME = "0001-01-01T00:00:00Z";

/** The status a pull request gets for its group fields before it is queued (nats-server
 *  processNextMsgRequest), or null to accept it. `pg` is null for an empty or bare-number
 *  body: those carry no group and skip the checks, as in nats-server. */
export function pullRejection(policy: string, groups: readonly string[], pg: PullPriority | null, pinId: string): Buffer | null {
  if (pg === null) return null;
  if ((pg.minPending !== 0 || pg.minAckPending !== 0) && policy !== "overflow") return ST_NOT_OVERFLOW;
  if (pg.id !== "" && policy !== "pinned_client") return ST_NOT_PINNED;
  if (pg.priority < 0 || pg.priority > 9) return ST_BAD_PRIORITY;
  if (policy === "") return null;
  if (pg.group === "") return ST_GROUP_MISSING;
  if (!groups.includes(pg.group)) return ST_GROUP_INVALID;
  if (pinId !== "" && pg.id !== "" && pg.id !== pinId) return ST_PIN_MISMATCH;
  return null;
}

/** overflow: a request with thresholds is served only while the consumer's num_pending
 *  reaches min_pending or its num_ack_pending reaches min_ack_pending (either is enough).
 *  `numPending` counts the message about to go out. */
export function overflowAllows(pg: PullPriority | null, numPending: number, numAckPending: number): boolean {
  if (pg === null || (pg.minPending <= 0 && pg.minAckPending <= 0)) return true;
  return (pg.minPending > 0 && pg.minPending <= numPending) || (pg.minAckPending > 0 && pg.minAckPending <= numAckPending);
}

export type Advise = (subject: string, body: Record<string, unknown>) => void;

/** The pin of a pinned_client consumer, and request selection for overflow/pinned_client. */
export class PinState {
  /** The current pin ("" = none). */
  id = "";
  /** Wall time the pin was given, ns. */
  tsNs = 0;
  /** Monotonic time the pin lapses without a pull carrying it. */
  deadlineMs = 0;
  /** The request that got the pin in the last select() (released if it cannot take the
   *  message after all), else null. */
  private fresh: PullRequest | null = null;
  private pinHdr: Buffer | null = null;
  private pinLine: Buffer | null = null;

  constructor(
    private readonly stream: string,
    private readonly consumer: string,
    private readonly newId: () => string,
    private readonly advise: Advise,
  ) {}

  /** A pull carrying the current pin keeps it for another timeout. */
  touch(pg: PullPriority | null, timeoutNs: number, nowMs: number): void {
    if (this.id !== "" && pg !== null && pg.id === this.id) this.deadlineMs = nowMs + timeoutNs / 1e6;
  }

  /** Bring the request that should get the next message to the head of `w` (skipped ones
   *  go to the back, as nats-server's cycle()), answering stale pins with 423 and dropping
   *  requests nobody listens to. False when no waiting request may take a message now.
   *  Call only when a message is ready: under pinned_client this is what hands out a pin. */
  select(policy: string, group: string, timeoutNs: number, w: WaitingList, bus: Bus, numPending: number, numAckPending: number, nowMs: number, nowNs: number, out: Publisher = bus): boolean {
    this.fresh = null;
    let cycled = 0;
    while (w.length > 0) {
      const r = w.peek()!;
      if (!bus.hasInterest(r.reply)) {
        w.shift();
        continue;
      }
      const pg = r.pg;
      if (policy === "pinned_client") {
        const rid = pg === null ? "" : pg.id;
        if (this.id === "" ? rid !== "" : rid !== "" && rid !== this.id) {
          // An old pin (nats-server: "probably this is the old pin id").
          w.shift();
          out.publish(r.reply, "", pendingStatus(423, "Nats-Wrong-Pin-Id", r.batch, r.maxBytes), Buffer.alloc(0));
          continue;
        }
        if (this.id === "") {
          if (pg !== null && pg.group !== "") this.assign(r, pg, group, timeoutNs, nowMs, nowNs);
        } else if (rid === "") {
          // Standby while another request holds the pin.
          w.rotate();
          if (++cycled >= w.length) return false;
          continue;
        }
      } else if (policy === "overflow" && !overflowAllows(pg, numPending, numAckPending)) {
        w.rotate();
        if (++cycled >= w.length) return false;
        continue;
      }
      return true;
    }
    return false;
  }

  private assign(r: PullRequest, pg: PullPriority, group: string, timeoutNs: number, nowMs: number, nowNs: number): void {
    this.id = this.newId();
    this.tsNs = nowNs;
    this.deadlineMs = nowMs + timeoutNs / 1e6;
    this.pinHdr = null;
    this.pinLine = null;
    pg.id = this.id;
    this.fresh = r;
    this.advise(`${ADV}PINNED.${this.stream}.${this.consumer}`, {
      type: PINNED_TYPE,
      stream: this.stream,
      consumer: this.consumer,
      group: pg.group !== "" ? pg.group : group,
      pinned_id: this.id,
    });
  }

  /** The request chosen by the last select() was dropped (max_bytes) before taking the
   *  message: a pin it was just given goes too (no advisory, as in nats-server). */
  dropped(r: PullRequest): void {
    if (this.fresh === r) this.clear();
  }

  /** Drop the pin without an advisory (stop, config change). */
  clear(): void {
    this.id = "";
    this.tsNs = 0;
    this.deadlineMs = 0;
    this.fresh = null;
    this.pinHdr = null;
    this.pinLine = null;
  }

  /** Drop the pin and announce it; `reason` is "admin" (UNPIN) or "timeout". UNPIN
   *  announces even when nothing was pinned, as nats-server does. */
  unpin(group: string, reason: "admin" | "timeout"): void {
    this.clear();
    this.advise(`${ADV}UNPINNED.${this.stream}.${this.consumer}`, {
      type: UNPINNED_TYPE,
      stream: this.stream,
      consumer: this.consumer,
      group,
      reason,
    });
  }

  /** The pin lapsed (no pull carrying it within priority_timeout): true if it was dropped. */
  expire(group: string, nowMs: number): boolean {
    if (this.id === "" || nowMs < this.deadlineMs) return false;
    this.unpin(group, "timeout");
    return true;
  }

  /** hdr with `Nats-Pin-Id: <pin>` added; the header block of a message without headers is
   *  built once per pin. */
  withPinHeader(hdr: Buffer | null): Buffer {
    if (hdr === null || hdr.length === 0) {
      if (this.pinHdr === null) this.pinHdr = Buffer.from(`NATS/1.0\r\n${PIN_ID_HEADER}: ${this.id}\r\n\r\n`, "latin1");
      return this.pinHdr;
    }
    if (this.pinLine === null) this.pinLine = Buffer.from(`${PIN_ID_HEADER}: ${this.id}\r\n\r\n`, "latin1");
    // A header block ends with an empty line; the pin goes before it.
    const n = hdr.length;
    if (n >= 4 && hdr[n - 4] === 13 && hdr[n - 3] === 10 && hdr[n - 2] === 13 && hdr[n - 1] === 10) {
      return Buffer.concat([hdr.subarray(0, n - 2), this.pinLine]);
    }
    return appendHeaders(hdr, [[PIN_ID_HEADER, this.id]]);
  }

  /** Consumer info's `priority_groups` (nats-server reports the first group only; a zero
   *  pinned_ts is still written, Go's omitempty does not drop a time.Time). */
  info(groups: readonly string[], rfc3339: (ns: number) => string): Record<string, unknown>[] | null {
    const g = groups[0];
    if (g === undefined) return null;
    const s: Record<string, unknown> = { group: g };
    if (this.id !== "") s["pinned_client_id"] = this.id;
    s["pinned_ts"] = this.tsNs > 0 ? rfc3339(this.tsNs) : ZERO_TIME;
    return [s];
  }
}
