// /connz: connections with paging, sorting, state filter and optional subscription lists
// (nats-server Connz).

import { goDuration, rfc3339, uptime } from "./format.js";
import { BadRequest, boolParam, intParam, strParam, type Query } from "./query.js";
import type { ConnSnap, ServerSnap, SubSnap } from "./snapshot.js";

export const DEFAULT_CONNZ_LIMIT = 1024;

export const SortOpt = {
  cid: "cid",
  start: "start",
  subs: "subs",
  pending: "pending",
  msgs_to: "msgs_to",
  msgs_from: "msgs_from",
  bytes_to: "bytes_to",
  bytes_from: "bytes_from",
  last: "last",
  idle: "idle",
  uptime: "uptime",
  stop: "stop",
  reason: "reason",
  rtt: "rtt",
} as const;
export type SortOpt = (typeof SortOpt)[keyof typeof SortOpt];

export const ConnState = { open: "open", closed: "closed", any: "any" } as const;
export type ConnState = (typeof ConnState)[keyof typeof ConnState];

export type SubsMode = "none" | "list" | "detail";

export interface ConnzOptions {
  sort: SortOpt;
  subs: SubsMode;
  auth: boolean;
  offset: number;
  limit: number;
  cid: number; // 0 = all
  state: ConnState;
  user: string;
}

export function parseConnzOptions(q: Query): ConnzOptions {
  const sortRaw = strParam(q, "sort");
  let sort: SortOpt = SortOpt.cid;
  if (sortRaw !== "") {
    if (!Object.hasOwn(SortOpt, sortRaw)) throw new BadRequest(`invalid sorting option: ${sortRaw}`);
    sort = SortOpt[sortRaw as keyof typeof SortOpt];
  }
  const subsRaw = strParam(q, "subs");
  const subs: SubsMode = subsRaw === "detail" ? "detail" : boolParam(q, "subs") ? "list" : "none";
  const stateRaw = strParam(q, "state");
  let state: ConnState = ConnState.open;
  if (stateRaw === "closed") state = ConnState.closed;
  else if (stateRaw === "any" || stateRaw === "all") state = ConnState.any;
  else if (stateRaw !== "" && stateRaw !== "open") throw new BadRequest(`invalid connection state: ${stateRaw}`);
  if ((sort === SortOpt.stop || sort === SortOpt.reason) && state !== ConnState.closed) {
    throw new BadRequest(`sort by ${sort} only valid on closed connections`);
  }
  const offset = Math.max(0, intParam(q, "offset", 0));
  let limit = intParam(q, "limit", DEFAULT_CONNZ_LIMIT);
  if (limit <= 0) limit = DEFAULT_CONNZ_LIMIT;
  return { sort, subs, auth: boolParam(q, "auth"), offset, limit, cid: intParam(q, "cid", 0), state, user: strParam(q, "user") };
}

function sortKey(c: ConnSnap, by: SortOpt, nowMs: number): number | string {
  switch (by) {
    case SortOpt.cid:
      return c.cid;
    case SortOpt.start:
      return c.startMs;
    case SortOpt.subs:
      return c.numSubs;
    case SortOpt.pending:
      return c.pendingBytes;
    case SortOpt.msgs_to:
      return c.outMsgs;
    case SortOpt.msgs_from:
      return c.inMsgs;
    case SortOpt.bytes_to:
      return c.outBytes;
    case SortOpt.bytes_from:
      return c.inBytes;
    case SortOpt.last:
      return c.lastActivityMs;
    case SortOpt.idle:
      return (c.stopMs || nowMs) - c.lastActivityMs;
    case SortOpt.uptime:
      return (c.stopMs || nowMs) - c.startMs;
    case SortOpt.stop:
      return c.stopMs;
    case SortOpt.reason:
      return c.reason;
    case SortOpt.rtt:
      return c.rttMs;
  }
}

/** cid, start and reason sort ascending; every other key puts the largest first (nats-server). */
function ascending(by: SortOpt): boolean {
  return by === SortOpt.cid || by === SortOpt.start || by === SortOpt.reason;
}

export function sortConns(list: ConnSnap[], by: SortOpt, nowMs: number): ConnSnap[] {
  const asc = ascending(by);
  const keyed = list.map((c) => ({ c, k: sortKey(c, by, nowMs) }));
  keyed.sort((a, b) => {
    let d: number;
    if (typeof a.k === "string" || typeof b.k === "string") d = String(a.k) < String(b.k) ? -1 : String(a.k) > String(b.k) ? 1 : 0;
    else d = a.k - b.k;
    if (!asc) d = -d;
    return d !== 0 ? d : a.c.cid - b.c.cid; // stable tie-break so pages do not overlap
  });
  return keyed.map((x) => x.c);
}

export function subDetail(s: SubSnap, withAccount: boolean): Record<string, unknown> {
  const d: Record<string, unknown> = {};
  if (withAccount) d["account"] = "$G";
  d["subject"] = s.subject;
  if (s.queue !== "") d["qgroup"] = s.queue;
  d["sid"] = s.sid;
  d["msgs"] = s.msgs;
  if (s.max > 0) d["max"] = s.max;
  d["cid"] = s.cid;
  return d;
}

function connInfo(c: ConnSnap, o: ConnzOptions, nowMs: number): Record<string, unknown> {
  const end = c.stopMs || nowMs;
  const ci: Record<string, unknown> = {
    cid: c.cid,
    kind: "Client",
    type: "nats",
    ip: c.ip,
    port: c.port,
    start: rfc3339(c.startMs),
    last_activity: rfc3339(c.lastActivityMs),
  };
  if (c.stopMs > 0) {
    ci["stop"] = rfc3339(c.stopMs);
    ci["reason"] = c.reason;
  }
  ci["rtt"] = goDuration(c.rttMs * 1_000_000);
  ci["uptime"] = uptime(end - c.startMs);
  ci["idle"] = uptime(end - c.lastActivityMs);
  ci["pending_bytes"] = c.pendingBytes;
  ci["in_msgs"] = c.inMsgs;
  ci["out_msgs"] = c.outMsgs;
  ci["in_bytes"] = c.inBytes;
  ci["out_bytes"] = c.outBytes;
  ci["subscriptions"] = c.numSubs;
  if (c.tlsVersion !== "") {
    ci["tls_version"] = c.tlsVersion;
    ci["tls_cipher_suite"] = c.tlsCipher;
  }
  if (c.name !== "") ci["name"] = c.name;
  if (c.lang !== "") ci["lang"] = c.lang;
  if (c.version !== "") ci["version"] = c.version;
  if (o.auth && c.user !== "") {
    ci["authorized_user"] = c.user;
    ci["account"] = "$G";
  }
  if (o.subs === "list" && c.subs.length > 0) ci["subscriptions_list"] = c.subs.map((s) => s.subject);
  if (o.subs === "detail" && c.subs.length > 0) ci["subscriptions_list_detail"] = c.subs.map((s) => subDetail(s, false));
  return ci;
}

export function buildConnz(s: ServerSnap, o: ConnzOptions): Record<string, unknown> {
  let pool: ConnSnap[] =
    o.state === ConnState.open ? s.open : o.state === ConnState.closed ? s.closed : [...s.open, ...s.closed];
  let limit = o.limit;
  if (o.cid > 0) {
    // A cid query looks in open and closed connections alike and returns at most one.
    const hit = s.open.find((c) => c.cid === o.cid) ?? s.closed.find((c) => c.cid === o.cid);
    pool = hit ? [hit] : [];
    limit = 1;
  }
  if (o.user !== "") pool = pool.filter((c) => c.user === o.user);
  const sorted = sortConns(pool, o.sort, s.nowMs);
  const page = o.cid > 0 ? sorted : sorted.slice(o.offset, o.offset + limit);
  return {
    server_id: s.serverId,
    now: rfc3339(s.nowMs),
    num_connections: page.length,
    total: sorted.length,
    offset: o.cid > 0 ? 0 : o.offset,
    limit,
    connections: page.map((c) => connInfo(c, o, s.nowMs)),
  };
}
