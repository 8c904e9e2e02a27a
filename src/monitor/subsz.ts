// /subsz (alias /subscriptionsz): sublist statistics, optionally the subscriptions themselves.

import { isValidLiteralSubject, subjectMatches } from "../subjects/subject.js";
import { rfc3339 } from "./format.js";
import { subDetail } from "./connz.js";
import { BadRequest, boolParam, intParam, strParam, type Query } from "./query.js";
import type { ServerSnap } from "./snapshot.js";

export const DEFAULT_SUBSZ_LIMIT = 1024;

export interface SubszOptions {
  subs: boolean;
  offset: number;
  limit: number;
  test: string;
}

export function parseSubszOptions(q: Query): SubszOptions {
  const test = strParam(q, "test");
  if (test !== "" && !isValidLiteralSubject(test)) throw new BadRequest("invalid test subject, must be valid publish subject");
  let limit = intParam(q, "limit", DEFAULT_SUBSZ_LIMIT);
  if (limit <= 0) limit = DEFAULT_SUBSZ_LIMIT;
  return { subs: boolParam(q, "subs"), offset: Math.max(0, intParam(q, "offset", 0)), limit, test };
}

export function buildSubsz(s: ServerSnap, o: SubszOptions): Record<string, unknown> {
  const out: Record<string, unknown> = { server_id: s.serverId, now: rfc3339(s.nowMs), ...s.sublist };
  if (!o.subs) return { ...out, total: 0, offset: 0, limit: 0 };
  let list = s.allSubs;
  if (o.test !== "") list = list.filter((x) => subjectMatches(x.subject, o.test));
  // Order by cid then sid so consecutive pages neither repeat nor skip a subscription.
  const sorted = [...list].sort((a, b) => a.cid - b.cid || cmp(a.sid, b.sid) || cmp(a.subject, b.subject));
  const page = sorted.slice(o.offset, o.offset + o.limit);
  return {
    ...out,
    total: sorted.length,
    offset: o.offset,
    limit: o.limit,
    subscriptions_list: page.map((x) => subDetail(x, true)),
  };
}

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
