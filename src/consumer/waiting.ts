// Pull requests ($JS.API.CONSUMER.MSG.NEXT) and the waiting list that holds them, bounded
// by max_waiting and served in arrival order (or by priority under `prioritized`).

import { statusHeaders } from "../protocol/headers.js";
import { goIntOrNull, parseApiJson } from "../contracts/json.js";

/** The priority-group fields of a JSON pull request (priority.ts uses them). */
export interface PullPriority {
  group: string;
  minPending: number;
  minAckPending: number;
  id: string;
  priority: number;
}

export interface PullRequest {
  reply: string;
  /** Messages still wanted. */
  batch: number;
  /** Bytes still allowed (0 = no byte limit). */
  maxBytes: number;
  /** Monotonic deadline in ms (0 = none). */
  expiresAtMs: number;
  noWait: boolean;
  hbMs: number;
  /** Monotonic time of the last message or heartbeat sent to it. */
  lastMs: number;
  /** Messages delivered to it so far. */
  delivered: number;
  /** Priority-group fields of a JSON request; null for an empty or bare-number body. */
  pg: PullPriority | null;
}

export type ParsedPull = { ok: true; req: Omit<PullRequest, "reply" | "lastMs" | "delivered" | "expiresAtMs"> & { expiresNs: number } } | { ok: false; error: string };

/** Empty body = batch 1; a bare integer = batch N; else JSON. */
export function parsePullRequest(payload: Buffer): ParsedPull {
  const text = payload.toString("utf8").trim();
  const base = { batch: 1, maxBytes: 0, expiresNs: 0, noWait: false, hbMs: 0, pg: null };
  if (text.length === 0) return { ok: true, req: base };
  if (/^\d+$/.test(text)) {
    const n = Number(text);
    return { ok: true, req: { ...base, batch: n > 0 ? n : 1 } };
  }
  let o: unknown;
  try {
    o = parseApiJson(text);
  } catch (e) {
    return { ok: false, error: (e as Error).message };
  }
  if (typeof o !== "object" || o === null || Array.isArray(o)) return { ok: false, error: "json: cannot unmarshal into Go value of type server.JSApiConsumerGetNextRequest" };
  const r = o as Record<string, unknown>;
  // Every integer field of JSApiConsumerGetNextRequest is 64-bit and signed.
  const num = (k: string): number | null => goIntOrNull(r[k], "int64");
  const batch = num("batch");
  const maxBytes = num("max_bytes");
  const expires = num("expires");
  const hb = num("idle_heartbeat");
  const minPending = num("min_pending");
  const minAckPending = num("min_ack_pending");
  const priority = num("priority");
  if (batch === null || maxBytes === null || expires === null || hb === null || minPending === null || minAckPending === null || priority === null) {
    return { ok: false, error: "json: cannot unmarshal value into Go struct field JSApiConsumerGetNextRequest" };
  }
  const nw = r["no_wait"];
  if (nw !== undefined && nw !== null && typeof nw !== "boolean") {
    return { ok: false, error: "json: cannot unmarshal value into Go struct field JSApiConsumerGetNextRequest.no_wait of type bool" };
  }
  const group = r["group"] ?? "";
  const id = r["id"] ?? "";
  if (typeof group !== "string" || typeof id !== "string") {
    const k = typeof group !== "string" ? "group" : "id";
    return { ok: false, error: `json: cannot unmarshal value into Go struct field JSApiConsumerGetNextRequest.PriorityGroup.${k} of type string` };
  }
  return {
    ok: true,
    req: {
      batch: batch > 0 ? batch : 1,
      maxBytes: maxBytes > 0 ? maxBytes : 0,
      expiresNs: expires > 0 ? expires : 0,
      noWait: nw === true,
      hbMs: hb > 0 ? hb / 1e6 : 0,
      pg: { group, minPending, minAckPending, id, priority },
    },
  };
}

/** Priority of a request without group fields (a bare batch number): served last. */
const NO_PRIORITY = 2147483647;

export function requestPriority(r: PullRequest): number {
  return r.pg === null ? NO_PRIORITY : r.pg.priority;
}

/** FIFO of open requests; removal by identity is O(n) but n <= max_waiting. With
 *  `prioritized` set the list stays sorted by request priority (lower first), arrival
 *  order within one priority (nats-server addPrioritized/popAndRequeue). */
export class WaitingList {
  private items: PullRequest[] = [];
  prioritized = false;
  constructor(public max: number) {}

  get length(): number {
    return this.items.length;
  }

  isFull(): boolean {
    return this.max > 0 && this.items.length >= this.max;
  }

  push(r: PullRequest): void {
    if (this.prioritized) this.insertByPriority(r);
    else this.items.push(r);
  }

  /** After the last request of r's priority (or of any lower one). */
  private insertByPriority(r: PullRequest): void {
    const p = requestPriority(r);
    let i = this.items.length;
    while (i > 0 && requestPriority(this.items[i - 1]!) > p) i--;
    this.items.splice(i, 0, r);
  }

  peek(): PullRequest | undefined {
    return this.items[0];
  }

  /** Move the head to the back (round-robin among requests that still want more); when
   *  prioritized, to the back of its own priority. */
  rotate(): void {
    if (this.items.length <= 1) return;
    const r = this.items.shift()!;
    if (this.prioritized) this.insertByPriority(r);
    else this.items.push(r);
  }

  shift(): PullRequest | undefined {
    return this.items.shift();
  }

  remove(r: PullRequest): void {
    const i = this.items.indexOf(r);
    if (i >= 0) this.items.splice(i, 1);
  }

  /** Remove every request for which drop(r) is true. */
  sweep(drop: (r: PullRequest) => boolean): void {
    let w = 0;
    for (let i = 0; i < this.items.length; i++) {
      const r = this.items[i]!;
      if (!drop(r)) this.items[w++] = r;
    }
    this.items.length = w;
  }

  all(): readonly PullRequest[] {
    return this.items;
  }

  clear(): PullRequest[] {
    const out = this.items;
    this.items = [];
    return out;
  }
}

/** Status replies to pull requests, with nats-server's exact texts. */
export function pendingStatus(code: number, text: string, msgs: number, bytes: number): Buffer {
  return statusHeaders(code, text, [
    ["Nats-Pending-Messages", String(msgs)],
    ["Nats-Pending-Bytes", String(bytes)],
  ]);
}

export const ST_NO_MESSAGES = statusHeaders(404, "No Messages");
export const ST_CONSUMER_DELETED = statusHeaders(409, "Consumer Deleted");
export const ST_EXCEEDED_MAX_WAITING = statusHeaders(409, "Exceeded MaxWaiting");
export const ST_PUSH_BASED = statusHeaders(409, "Consumer is push based");

export function heartbeatStatus(lastCseq: number, lastSseq: number, stalled: string): Buffer {
  const e: [string, string][] = [
    ["Nats-Last-Consumer", String(lastCseq)],
    ["Nats-Last-Stream", String(lastSseq)],
  ];
  if (stalled !== "") e.push(["Nats-Consumer-Stalled", stalled]);
  return statusHeaders(100, "Idle Heartbeat", e);
}

export const ST_FLOW_CONTROL = statusHeaders(100, "FlowControl Request");
