// User permissions (nats-server client.go setPermissions / pubAllowed / canSubscribe /
// checkDenySub, opts.go parseUserPermissions), and the reserved subjects no client may use.
//
// Semantics kept from nats-server:
//  - An allow list, when present, must match; a deny list overrules it (deny wins).
//  - A publish allow list that is present but empty allows nothing (allow_responses makes
//    one); an empty subscribe allow list means no list at all.
//  - Subscribe entries may name a queue group ("foo.> q"): a queue subscription whose
//    subject has such entries must use one of their queues; a deny entry with a queue only
//    refuses that queue.
//  - A subscribe deny does not stop a wider wildcard subscription ("foo.>" with deny
//    "foo.secret"); its deliveries are filtered instead (DenyFilter).
//  - allow_responses lets a client publish to the reply subjects of messages it received,
//    max times each (default 1, negative = unlimited) within expires (default 2m, negative
//    = forever).
//  - Publish decisions are cached per subject (at most PUB_CACHE_MAX), as nats-server's pcache.

import { Sublist, type SubLike } from "../subjects/sublist.js";
import { isLiteral, subjectIsSubsetMatch, subjectsCollide } from "../subjects/subject.js";

export interface SubjectPermission {
  /** null: no allow list (everything allowed unless denied). */
  allow: string[] | null;
  deny: string[];
}

export interface ResponsePermission {
  /** <= 0: unlimited. */
  maxMsgs: number;
  /** <= 0: never expires. */
  expiresMs: number;
}

export interface Permissions {
  publish: SubjectPermission | null;
  subscribe: SubjectPermission | null;
  response: ResponsePermission | null;
}

export const DEFAULT_RESPONSE_MAX_MSGS = 1;
export const DEFAULT_RESPONSE_EXPIRES_MS = 2 * 60 * 1000;

const PUB_CACHE_MAX = 128; // nats-server maxPermCacheSize
const DENY_CACHE_MAX = 256; // nats-server maxDenyPermCacheSize
const CACHE_PRUNE = 32;
const REPLY_PRUNE_EVERY = 4096; // nats-server replyPermLimit
const REPLY_PRUNE_MS = 1000; // nats-server replyPruneTime

class PermEntry implements SubLike {
  constructor(
    readonly subject: string,
    readonly queue: string,
  ) {}
}

/** "subject" or "subject queue" (subscribe entries); null when malformed. */
export function splitSubjectQueue(s: string): { subject: string; queue: string } | null {
  const parts = s.trim().split(/\s+/);
  if (parts.length === 0 || parts.length > 2 || parts[0] === "") return null;
  return { subject: parts[0]!, queue: parts[1] ?? "" };
}

function sublistOf(entries: string[], withQueue: boolean): { sl: Sublist<PermEntry>; list: PermEntry[] } {
  const sl = new Sublist<PermEntry>();
  const list: PermEntry[] = [];
  for (const e of entries) {
    const sq = withQueue ? splitSubjectQueue(e) : { subject: e, queue: "" };
    if (sq === null) continue; // config parsing refuses these
    const pe = new PermEntry(sq.subject, sq.queue);
    sl.insert(pe);
    list.push(pe);
  }
  return { sl, list };
}

function queueMatches(queue: string, qsubs: readonly (readonly PermEntry[])[]): boolean {
  if (qsubs.length === 0) return true;
  for (const g of qsubs) {
    const q = g[0]!.queue;
    // '*' and '>' are legal in queue names: the literal compare comes first.
    if (queue === q || (!isLiteral(q) && subjectIsSubsetMatch(queue, q))) return true;
  }
  return false;
}

function pruneOldest<K, V>(m: Map<K, V>, n: number): void {
  for (const k of m.keys()) {
    m.delete(k);
    if (--n <= 0) return;
  }
}

/** Filters deliveries to subscriptions that a subscribe deny entry overlaps. */
export class DenyFilter {
  private readonly cache = new Map<string, boolean>();
  constructor(private readonly deny: Sublist<PermEntry>) {}

  denies(subject: string, queue: string): boolean {
    const key = queue === "" ? subject : `${subject} ${queue}`;
    const hit = this.cache.get(key);
    if (hit !== undefined) return hit;
    const r = this.deny.match(subject);
    let denied = r.psubs.length > 0;
    if (!denied && queue !== "" && r.qsubs.length > 0) denied = queueMatches(queue, r.qsubs);
    if (this.cache.size >= DENY_CACHE_MAX) pruneOldest(this.cache, CACHE_PRUNE);
    this.cache.set(key, denied);
    return denied;
  }
}

interface ReplyGrant {
  t: number;
  n: number;
}

/** One connection's compiled permissions and caches. */
export class ClientPermissions {
  private readonly pubAllow: Sublist<PermEntry> | null;
  private readonly pubDeny: Sublist<PermEntry> | null;
  private readonly subAllow: Sublist<PermEntry> | null;
  private readonly subDeny: Sublist<PermEntry> | null;
  private readonly denyEntries: PermEntry[];
  private denyFilter: DenyFilter | null = null;
  private readonly pcache = new Map<string, boolean>();
  readonly response: ResponsePermission | null;
  /** Reply subjects this client may answer (allow_responses); null without it. */
  readonly replies: Map<string, ReplyGrant> | null;
  private repliesSincePrune = 0;
  private lastReplyPruneMs = 0;

  constructor(p: Permissions) {
    const pub = p.publish;
    this.pubAllow = pub !== null && pub.allow !== null ? sublistOf(pub.allow, false).sl : null;
    this.pubDeny = pub !== null && pub.deny.length > 0 ? sublistOf(pub.deny, false).sl : null;
    const sub = p.subscribe;
    this.subAllow = sub !== null && sub.allow !== null && sub.allow.length > 0 ? sublistOf(sub.allow, true).sl : null;
    if (sub !== null && sub.deny.length > 0) {
      const d = sublistOf(sub.deny, true);
      this.subDeny = d.sl;
      this.denyEntries = d.list;
    } else {
      this.subDeny = null;
      this.denyEntries = [];
    }
    this.response = p.response;
    this.replies = p.response !== null ? new Map() : null;
  }

  /** True when publishing needs a check at all. */
  get checksPublish(): boolean {
    return this.pubAllow !== null || this.pubDeny !== null;
  }

  pubAllowed(subject: string, nowMs: number): boolean {
    if (this.pubAllow === null && this.pubDeny === null) return true;
    const hit = this.pcache.get(subject);
    if (hit !== undefined) {
      if (hit || this.replies === null) return hit;
      return this.responseAllowed(subject, nowMs);
    }
    let allowed = true;
    if (this.pubAllow !== null) allowed = this.pubAllow.hasInterest(subject);
    if (allowed && this.pubDeny !== null) allowed = !this.pubDeny.hasInterest(subject);
    if (this.pcache.size >= PUB_CACHE_MAX) pruneOldest(this.pcache, CACHE_PRUNE);
    this.pcache.set(subject, allowed);
    if (!allowed && this.replies !== null) return this.responseAllowed(subject, nowMs);
    return allowed;
  }

  private responseAllowed(subject: string, nowMs: number): boolean {
    const g = this.replies!.get(subject);
    if (g === undefined) return false;
    const rp = this.response!;
    g.n++;
    if ((rp.maxMsgs > 0 && g.n > rp.maxMsgs) || (rp.expiresMs > 0 && nowMs - g.t > rp.expiresMs)) {
      this.replies!.delete(subject);
      return false;
    }
    return true;
  }

  /** A message with this reply subject was delivered to the client (allow_responses). */
  trackReply(reply: string, nowMs: number): void {
    const replies = this.replies!;
    // A subject the client may publish to anyway needs no grant.
    if (this.pubAllowedStatic(reply)) return;
    replies.set(reply, { t: nowMs, n: 0 });
    if (++this.repliesSincePrune > REPLY_PRUNE_EVERY || nowMs - this.lastReplyPruneMs > REPLY_PRUNE_MS) this.pruneReplies(nowMs);
  }

  private pubAllowedStatic(subject: string): boolean {
    const hit = this.pcache.get(subject);
    if (hit !== undefined) return hit;
    let allowed = true;
    if (this.pubAllow !== null) allowed = this.pubAllow.hasInterest(subject);
    if (allowed && this.pubDeny !== null) allowed = !this.pubDeny.hasInterest(subject);
    return allowed;
  }

  private pruneReplies(nowMs: number): void {
    const rp = this.response!;
    for (const [k, g] of this.replies!) {
      if ((rp.maxMsgs > 0 && g.n >= rp.maxMsgs) || (rp.expiresMs > 0 && nowMs - g.t > rp.expiresMs)) this.replies!.delete(k);
    }
    this.repliesSincePrune = 0;
    this.lastReplyPruneMs = nowMs;
  }

  canSubscribe(subject: string, queue: string): boolean {
    let allowed = true;
    if (this.subAllow !== null) {
      const r = this.subAllow.match(subject);
      allowed = r.psubs.length > 0;
      // allow ["foo v1"]: only queue subscriptions in v1; ["foo", "foo v1"]: plain ones too.
      if (queue !== "" && r.qsubs.length > 0) allowed = queueMatches(queue, r.qsubs);
    }
    if (allowed && this.subDeny !== null) {
      const r = this.subDeny.match(subject);
      allowed = r.psubs.length === 0;
      if (allowed && queue !== "" && r.qsubs.length > 0) allowed = !queueMatches(queue, r.qsubs);
    }
    return allowed;
  }

  /** The delivery filter an allowed subscription needs: non-null only for a wildcard or
   *  queue subscription that some deny entry overlaps (all others can never be sent a
   *  denied message). */
  filterFor(subject: string, queue: string): DenyFilter | null {
    if (this.subDeny === null || (queue === "" && isLiteral(subject))) return null;
    for (const e of this.denyEntries) {
      if (subjectsCollide(e.subject, subject)) return (this.denyFilter ??= new DenyFilter(this.subDeny));
    }
    return null;
  }
}

// ---- reserved subjects (nats-server processInboundClientMsg) ----

/** Gateway-routed reply subjects ("_GR_."): no client publishes to them. */
export function isGatewayReplySubject(subject: string): boolean {
  return subject.length > 5 && subject.charCodeAt(0) === 95 && subject.startsWith("_GR_.");
}

/** Raft group subjects ("$NRG."): since nats-server 2.11 no client outside the system
 *  account publishes to them (tsnats clients are never in it). */
export function isNrgSubject(subject: string): boolean {
  return subject.charCodeAt(0) === 36 && subject.startsWith("$NRG.");
}

/** Reply subjects a client may not use: service import replies ("_R_."), JetStream acks
 *  ("$JS.ACK.") and gateway-routed replies ("_GR_."). */
export function isReservedReply(reply: string): boolean {
  const c = reply.charCodeAt(0);
  if (c === 95 /* _ */) {
    const d = reply.charCodeAt(1);
    if (d === 82 /* R */) return reply.length > 3 && reply.startsWith("_R_.");
    if (d === 71 /* G */) return reply.length > 5 && reply.startsWith("_GR_.");
    return false;
  }
  if (c === 36 /* $ */) return reply.length > 8 && reply.startsWith("$JS.ACK.");
  return false;
}

/** Go's %q for the subjects in permission errors: ASCII subjects in double quotes, with
 *  backslash and double quote escaped. */
export function goQuote(s: string): string {
  return JSON.stringify(s);
}
