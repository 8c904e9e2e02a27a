// The subscription index (nats-server sublist.go, simplified): a trie over subject tokens
// with '*' and '>' children. A match that reaches one node returns that node's prebuilt
// result; merged results (several nodes) go into a bounded cache keyed by literal subject.
// Results are immutable arrays; insert and remove replace them (copy-on-write), so a fan-out
// that is iterating a result is never disturbed by subscribes or unsubscribes it causes.

import { SplitMap } from "./splitmap.js";

export interface SubLike {
  readonly subject: string;
  readonly queue: string; // "" for plain subscriptions
}

export interface SublistResult<S extends SubLike> {
  readonly psubs: readonly S[];
  /** One array per queue group with members. */
  readonly qsubs: readonly (readonly S[])[];
}

// Above this many members a group keeps a Set beside its array, so a remove is O(1)
// instead of an indexOf and a copy (100k SUBs to one subject, then a disconnect, was
// quadratic); at half of it the Set is dropped again.
const SET_MIN = 32;
// The empty array of every Members without one (frozen: never written, compared by identity).
const NONE = Object.freeze([]) as unknown as never[];

/** The subscriptions of one node (its plain ones, or one queue group), in insertion order.
 *  A node is its own plain Members (the fields are on the node) and a queue group is one of
 *  its own: one object per node instead of three (node, Members, an array of one) saves
 *  ~90 B per subscription on a unique subject, where most nodes keep one subscription for
 *  life. A lone member sits in `one` until a read asks for an array.
 *
 *  `arr` is what results hand out. Once handed out (SHARED) it is never written again: the
 *  next change copies it (copy-on-write, so a fan-out iterating a result is not disturbed by
 *  subscribes or unsubscribes it causes). While not shared, adds push in place, so a burst
 *  of subscribes to one subject costs O(1) each, not a copy of everything before it. A large
 *  group also keeps a Set: removes then only mark the array STALE, and the next read builds
 *  it once from the Set (same order). */
interface Members<S> {
  /** The only member while `arr` is NONE (null: none). */
  one: S | null;
  arr: S[];
  set: Set<S> | null;
  flags: number;
}

const STALE = 1;
const SHARED = 2;

function newGroup<S>(): Members<S> {
  return { one: null, arr: NONE, set: null, flags: 0 };
}

function membersSize<S>(m: Members<S>): number {
  return m.set !== null ? m.set.size : m.arr !== NONE ? m.arr.length : m.one !== null ? 1 : 0;
}

function addMember<S>(m: Members<S>, s: S): void {
  const set = m.set;
  if (set !== null) {
    set.add(s);
    if (m.flags === 0) m.arr.push(s);
    else m.flags |= STALE;
    return;
  }
  const arr = m.arr;
  if (arr === NONE) {
    if (m.one === null) {
      m.one = s;
      return;
    }
    m.arr = [m.one, s];
    m.one = null;
    m.flags = 0;
    return;
  }
  if ((m.flags & SHARED) !== 0) {
    (m.arr = arr.slice()).push(s);
    m.flags = 0;
  } else arr.push(s);
  if (m.arr.length > SET_MIN) m.set = new Set(m.arr);
}

function removeMember<S>(m: Members<S>, s: S): boolean {
  const set = m.set;
  if (set !== null) {
    if (!set.delete(s)) return false;
    m.flags |= STALE;
    if (set.size <= SET_MIN >>> 1) {
      m.arr = [...set];
      m.set = null;
      m.flags = 0;
    }
    return true;
  }
  if (m.arr === NONE) {
    if (m.one === null || m.one !== s) return false;
    m.one = null;
    return true;
  }
  const i = m.arr.indexOf(s);
  if (i < 0) return false;
  if ((m.flags & SHARED) !== 0) {
    m.arr = m.arr.slice();
    m.flags = 0;
  }
  m.arr.splice(i, 1);
  return true;
}

/** The members now, to read and let go of (not to keep). */
function listMembers<S>(m: Members<S>): readonly S[] {
  if ((m.flags & STALE) !== 0) {
    m.arr = [...m.set!];
    m.flags = 0;
  } else if (m.arr === NONE && m.one !== null) {
    m.arr = [m.one];
    m.one = null;
    m.flags = 0;
  }
  return m.arr;
}

/** The members now, to keep in a result: never changed afterwards. */
function shareMembers<S>(m: Members<S>): readonly S[] {
  const a = listMembers(m);
  m.flags |= SHARED;
  return a;
}

/** Pushes m's members onto out (a lone member without making its array). */
function pushMembers<S>(m: Members<S>, out: S[]): void {
  if (m.arr === NONE) {
    if (m.one !== null) out.push(m.one);
    return;
  }
  const a = listMembers(m);
  for (let i = 0; i < a.length; i++) out.push(a[i]!);
}

/** A trie node: its plain subscriptions are its own Members fields. */
interface Node<S extends SubLike> extends Members<S> {
  /** Queue groups with members (null when none: most nodes have none). */
  qsubs: Map<string, Members<S>> | null;
  next: Level<S> | null;
  /** The result when this node is the only one a subject reaches (the common case for
   *  unique subjects under a '>'): built once, dropped when its members change. */
  solo: SublistResult<S> | null;
}

/** A literal, as newSubscription's (src/server/subscription.ts): V8 pretenures a literal
 *  site whose objects survive, so a SUB flood's nodes skip the young generation. */
function newNode<S extends SubLike>(): Node<S> {
  return { one: null, arr: NONE, set: null, flags: 0, qsubs: null, next: null, solo: null };
}

class Level<S extends SubLike> {
  /** Split past 4,096 children (a '>' over unique tokens): no insert rehashes them all. */
  nodes = new SplitMap<Node<S>>();
  pwc: Node<S> | null = null;
  fwc: Node<S> | null = null;
  /** The literal children as arrays while there are few (null = rebuild on next use):
   *  comparing a few keys in place beats slicing the token out and hashing it. */
  keys: string[] | null = null;
  vals: Node<S>[] = [];
}

const SMALL_LEVEL = 8;

const STAR = 0x2a;
const GT = 0x3e;

/** A new literal child of level under token. */
function addChild<S extends SubLike>(level: Level<S>, token: string): Node<S> {
  const n = newNode<S>();
  level.nodes.set(token, n);
  level.keys = null;
  return n;
}

// Sublist.remove's walk (see there).
const RM_LEVELS: (Level<SubLike> | null)[] = [];
const RM_NODES: (Node<SubLike> | null)[] = [];
const RM_STARTS: number[] = [];

/** Lets go of the walk's first depth levels and nodes, keeping the arrays' room (emptying
 *  them with `length = 0` would give it back, and the next remove would allocate again). */
function clearWalk(depth: number, r: boolean): boolean {
  for (let i = 0; i < depth; i++) {
    RM_LEVELS[i] = null;
    RM_NODES[i] = null;
  }
  return r;
}

/** The literal child for subject[start, end) of level, if any. */
function childOf<S extends SubLike>(level: Level<S>, subject: string, start: number, end: number): Node<S> | undefined {
  const m = level.nodes;
  const size = m.size;
  if (size === 0) return undefined;
  if (size > SMALL_LEVEL) return m.get(subject.slice(start, end));
  let keys = level.keys;
  if (keys === null) {
    keys = [];
    level.vals = [];
    for (const [k, n] of m.entries()) {
      keys.push(k);
      level.vals.push(n);
    }
    level.keys = keys;
  }
  const len = end - start;
  for (let i = 0; i < keys.length; i++) {
    const k = keys[i]!;
    if (k.length === len && subject.startsWith(k, start)) return level.vals[i];
  }
  return undefined;
}

const MAX_CACHE_ENTRIES = 1024;
const SIG_SLOTS = 8192; // a power of two; at most 1/8 filled by MAX_CACHE_ENTRIES keys

/** A cheap signature of a subject: its length and five characters near the end and the
 *  middle, where unique subjects (inbox ids, ack sequence numbers) differ. */
function cacheSig(s: string): number {
  const n = s.length;
  if (n < 4) return n;
  const m = n >> 1;
  let h = n;
  h = (h * 31 + s.charCodeAt(n - 1)) | 0;
  h = (h * 31 + s.charCodeAt(n - 2)) | 0;
  h = (h * 31 + s.charCodeAt(n - 3)) | 0;
  h = (h * 31 + s.charCodeAt(m)) | 0;
  h = (h * 31 + s.charCodeAt(m + 1)) | 0;
  return (h ^ (h >>> 13)) & (SIG_SLOTS - 1);
}
// Admission: a miss enters the cache only when a miss with the same wideHash (slot and 8-bit
// fingerprint) came shortly before (in this epoch of 4096 misses or the one before). Unique
// subjects (ack replies, inboxes) then almost never pay for a Map insert and its later
// eviction, and a subject that repeats gets in on its second miss.
const DOOR_SLOTS = 65536;
const DOOR_EPOCH_SHIFT = 12; // epoch = misses >> 12
const EMPTY_RESULT: SublistResult<never> = Object.freeze({ psubs: Object.freeze([]), qsubs: Object.freeze([]) });

export class Sublist<S extends SubLike> {
  private readonly root = new Level<S>();
  private readonly cache = new Map<string, SublistResult<S>>();
  /** How many cached keys have each cacheSig(). */
  private readonly sigCount = new Uint16Array(SIG_SLOTS);
  private count = 0;
  private matches = 0;
  private cacheHits = 0;
  private inserts = 0;
  private removes = 0;
  private misses = 0;
  /** Per slot of wideHash: (1 + low 7 bits of the epoch of the last miss there) << 8 | 8 more
   *  bits of that subject's hash; 0 = none. */
  private readonly door = new Uint16Array(DOOR_SLOTS);
  // The last subject matched and its result: a publisher repeats its subject message after
  // message, and one compare (by identity, when the parser reuses the string) is cheaper
  // than the signature and the Map lookup. Cleared by every insert and remove.
  private lastSubject: string | null = null;
  private lastResult: SublistResult<S> = EMPTY_RESULT as SublistResult<S>;

  /** Changes with every insert and remove: answers derived from the trie (soleSubscriberUnder)
   *  stay true while it is unchanged. */
  gen = 0;

  get size(): number {
    return this.count;
  }

  stats(): { num_subscriptions: number; num_cache: number; num_inserts: number; num_removes: number; num_matches: number; cache_hit_rate: number; max_fanout: number; avg_fanout: number } {
    let max = 0;
    let total = 0;
    for (const r of this.cache.values()) {
      let n = r.psubs.length;
      for (const q of r.qsubs) n += q.length;
      total += n;
      if (n > max) max = n;
    }
    return {
      num_subscriptions: this.count,
      num_cache: this.cache.size,
      num_inserts: this.inserts,
      num_removes: this.removes,
      num_matches: this.matches,
      cache_hit_rate: this.matches === 0 ? 0 : this.cacheHits / this.matches,
      max_fanout: max,
      avg_fanout: this.cache.size === 0 ? 0 : total / this.cache.size,
    };
  }

  insert(sub: S): void {
    const subject = sub.subject;
    let level = this.root;
    let node: Node<S>;
    // Tokens are found in place (indexOf), as the match walk does: only a token that makes a
    // new node is sliced out (a split per SUB made an array and a string per token, garbage
    // for every level that already existed).
    for (let start = 0; ; ) {
      let end = subject.indexOf(".", start);
      const last = end < 0;
      if (last) end = subject.length;
      const c = end - start === 1 ? subject.charCodeAt(start) : 0;
      if (c === STAR) node = level.pwc ??= newNode<S>();
      else if (c === GT) node = level.fwc ??= newNode<S>();
      else if (level.nodes.size > SMALL_LEVEL) {
        // A big level is looked up by the token itself: slice it once for the lookup and
        // the new node both.
        const token = subject.slice(start, end);
        node = level.nodes.get(token) ?? addChild(level, token);
      } else node = childOf(level, subject, start, end) ?? addChild(level, subject.slice(start, end));
      if (last) break;
      level = node.next ??= new Level<S>();
      start = end + 1;
    }
    node.solo = null;
    if (sub.queue === "") {
      addMember(node, sub);
    } else {
      const qs = (node.qsubs ??= new Map());
      let q = qs.get(sub.queue);
      if (q === undefined) qs.set(sub.queue, (q = newGroup<S>()));
      addMember(q, sub);
    }
    this.count++;
    this.inserts++;
    this.gen++;
    this.invalidate(subject);
  }

  remove(sub: S): boolean {
    const subject = sub.subject;
    // The walk's levels, nodes and token starts, in module scratch arrays (remove calls
    // nothing that removes), cleared before returning so they hold no node.
    const levels = RM_LEVELS as (Level<S> | null)[];
    const nodes = RM_NODES as (Node<S> | null)[];
    const starts = RM_STARTS;
    let level: Level<S> | null = this.root;
    let node: Node<S> | null = null;
    let depth = 0;
    for (let start = 0; ; ) {
      if (level === null) return clearWalk(depth, false);
      let end = subject.indexOf(".", start);
      const last = end < 0;
      if (last) end = subject.length;
      const c = end - start === 1 ? subject.charCodeAt(start) : 0;
      node = c === STAR ? level.pwc : c === GT ? level.fwc : (childOf(level, subject, start, end) ?? null);
      if (node === null) return clearWalk(depth, false);
      levels[depth] = level;
      nodes[depth] = node;
      starts[depth] = start;
      depth++;
      if (last) break;
      level = node.next;
      start = end + 1;
    }
    let removed = false;
    if (sub.queue === "") {
      removed = removeMember(node, sub);
    } else {
      const qs = node.qsubs;
      const q = qs?.get(sub.queue);
      if (qs && q && removeMember(q, sub)) {
        if (membersSize(q) === 0) {
          qs.delete(sub.queue);
          if (qs.size === 0) node.qsubs = null;
        }
        removed = true;
      }
    }
    if (!removed) return clearWalk(depth, false);
    node.solo = null;
    this.count--;
    this.removes++;
    this.gen++;
    // Prune empty nodes bottom-up so long-lived servers do not accumulate inbox tokens.
    for (let i = depth - 1; i >= 0; i--) {
      const lvl = levels[i]!;
      const n = nodes[i]!;
      const nextEmpty = !n.next || (n.next.nodes.size === 0 && !n.next.pwc && !n.next.fwc);
      if (membersSize(n) > 0 || n.qsubs !== null || !nextEmpty) break;
      if (n === lvl.pwc) lvl.pwc = null;
      else if (n === lvl.fwc) lvl.fwc = null;
      else {
        const st = starts[i]!;
        const e = subject.indexOf(".", st);
        lvl.nodes.delete(subject.slice(st, e < 0 ? subject.length : e));
        lvl.keys = null;
      }
    }
    this.invalidate(subject);
    return clearWalk(depth, true);
  }

  match(subject: string): SublistResult<S> {
    this.matches++;
    if (subject === this.lastSubject) {
      this.cacheHits++;
      return this.lastResult;
    }
    const r = this.matchCached(subject);
    this.lastSubject = subject;
    this.lastResult = r;
    return r;
  }

  private matchCached(subject: string): SublistResult<S> {
    const sg = cacheSig(subject);
    // A subject whose signature no cached key has cannot be cached: skip hashing it (unique
    // subjects such as ack replies then cost a few character reads instead of a full hash).
    const cached = this.sigCount[sg] === 0 ? undefined : this.cache.get(subject);
    if (cached) {
      this.cacheHits++;
      return cached;
    }
    // Like nats-server, a subject with an empty token matches nothing (not even '>').
    const len = subject.length;
    if (len === 0 || subject.charCodeAt(0) === 0x2e || subject.charCodeAt(len - 1) === 0x2e || subject.includes("..")) {
      return EMPTY_RESULT as SublistResult<S>;
    }
    const acc = ACC as MatchAcc<S>;
    acc.first = null;
    acc.more = null;
    matchLevel(this.root, subject, 0, acc);
    // A result of one node is that node's own (prebuilt) result: walking again costs about
    // what a cache probe would (the parser's subject strings are new, so a probe hashes
    // them), so only merged results, which allocate, are worth caching.
    const merged = (acc.more as Node<S>[] | null) !== null; // set by the walk
    const result = finish(acc);
    if (!merged) return result;
    // Admission (see DOOR_SLOTS): on a miss, only a subject whose wideHash missed in this
    // epoch or the previous one goes in.
    const epoch = ((++this.misses >>> DOOR_EPOCH_SHIFT) & 0x7f) + 1;
    const h = wideHash(subject);
    const slot = h & (DOOR_SLOTS - 1);
    const fp = (h >>> 24) & 0xff;
    const seen = this.door[slot]!;
    this.door[slot] = (epoch << 8) | fp;
    if (seen === 0 || (seen & 0xff) !== fp || ((epoch - (seen >>> 8)) & 0x7f) > 1) return result;
    if (this.cache.size >= MAX_CACHE_ENTRIES) this.sweepCache();
    this.cache.set(subject, result);
    this.sigCount[sg]!++;
    return result;
  }

  /** Whether sub, subscribed to `<prefix>.>`, is the one and only subscription that any
   *  subject `<prefix>.<more tokens>` matches: no '*' or '>' along the prefix, and below it
   *  nothing but that '>' holding sub alone. Lets a caller route such subjects straight to
   *  sub (JetStream acks) while gen is unchanged. */
  soleSubscriberUnder(prefix: string, sub: S): boolean {
    let level: Level<S> | null = this.root;
    for (const t of prefix.split(".")) {
      if (level.fwc !== null || level.pwc !== null) return false;
      const n = level.nodes.get(t);
      if (n === undefined || n.next === null) return false;
      level = n.next;
    }
    const f = level.fwc;
    return level.nodes.size === 0 && level.pwc === null && f !== null && f.qsubs === null && membersSize(f) === 1 && (f.one ?? f.arr[0]) === sub;
  }

  hasInterest(subject: string): boolean {
    const r = this.match(subject);
    return r.psubs.length > 0 || r.qsubs.length > 0;
  }

  /** Every subscription, for monitoring. */
  all(): S[] {
    const out: S[] = [];
    collect(this.root, out);
    return out;
  }

  cacheSize(): number {
    return this.cache.size;
  }

  // Drop the oldest quarter at once. Evicting one entry per miss made every miss walk the
  // deleted slots at the front of the Map (unique reply subjects: ~2 µs per match).
  private sweepCache(): void {
    let drop = MAX_CACHE_ENTRIES >>> 2;
    for (const key of this.cache.keys()) {
      this.uncache(key);
      if (--drop === 0) break;
    }
  }

  private uncache(key: string): void {
    if (this.cache.delete(key)) this.sigCount[cacheSig(key)]!--;
  }

  private invalidate(pattern: string): void {
    this.lastSubject = null;
    const size = this.cache.size;
    if (size === 0) return;
    if (!pattern.includes("*") && !pattern.includes(">")) {
      this.uncache(pattern);
      return;
    }
    // A wildcard may touch any cached subject. Testing each of up to MAX_CACHE_ENTRIES keys
    // per wildcard subscribe made a burst of them cost ~1k pattern tests each; past a few
    // keys, dropping the whole cache is cheaper (every entry was put there by one match, and
    // is put back by later ones only on a second miss).
    if (size > WILDCARD_SCAN_MAX) {
      this.cache.clear();
      this.sigCount.fill(0);
      return;
    }
    for (const key of [...this.cache.keys()]) if (patternMatchesLiteral(pattern, key)) this.uncache(key);
  }
}

// Up to this many cached subjects are tested one by one when a wildcard is inserted or
// removed; a larger cache is dropped whole.
const WILDCARD_SCAN_MAX = 64;

/** What a walk reached: the first node with subscribers, then (rarely) a list of the rest. */
interface MatchAcc<S extends SubLike> {
  first: Node<S> | null;
  more: Node<S>[] | null;
}

const NO_QSUBS: readonly (readonly never[])[] = Object.freeze([]);

// Reused by every walk (not re-entrant: a walk calls nothing outside this module).
const ACC: MatchAcc<SubLike> = { first: null, more: null };

function matchLevel<S extends SubLike>(level: Level<S>, subject: string, start: number, acc: MatchAcc<S>): void {
  // Result order follows nats-server (fwc, deeper levels, then the literal node before
  // the '*' node of the last level) so deliveries of one message go out in the same order.
  // Tokens are found as the walk goes (indexOf), so a unique subject under a '>' is read
  // only as far as the trie looks.
  if (level.fwc) reach(level.fwc, acc);
  let end = subject.indexOf(".", start);
  const last = end < 0;
  if (last) end = subject.length;
  const n = childOf(level, subject, start, end);
  if (last) {
    if (n) reach(n, acc);
    if (level.pwc) reach(level.pwc, acc);
    return;
  }
  if (level.pwc?.next) matchLevel(level.pwc.next, subject, end + 1, acc);
  if (n?.next) matchLevel(n.next, subject, end + 1, acc);
}

function reach<S extends SubLike>(n: Node<S>, acc: MatchAcc<S>): void {
  if (n.qsubs === null && membersSize(n) === 0) return;
  if (acc.first === null) acc.first = n;
  else (acc.more ??= []).push(n);
}

function finish<S extends SubLike>(acc: MatchAcc<S>): SublistResult<S> {
  const first = acc.first;
  if (first === null) return EMPTY_RESULT as SublistResult<S>;
  const more = acc.more;
  if (more === null) return (first.solo ??= nodeResult(first));
  const psubs: S[] = [];
  let qmap: Map<string, S[]> | null = null;
  for (let k = -1; k < more.length; k++) {
    const n = k < 0 ? first : more[k]!;
    pushMembers(n, psubs);
    if (n.qsubs === null) continue;
    qmap ??= new Map<string, S[]>();
    for (const [q, group] of n.qsubs) {
      const members = listMembers(group);
      const have = qmap.get(q);
      if (have) for (const m of members) have.push(m);
      else qmap.set(q, [...members]);
    }
  }
  acc.first = null;
  acc.more = null;
  return { psubs, qsubs: qmap === null ? NO_QSUBS : [...qmap.values()] };
}

function nodeResult<S extends SubLike>(n: Node<S>): SublistResult<S> {
  const qs = n.qsubs;
  if (qs === null) return { psubs: shareMembers(n), qsubs: NO_QSUBS };
  const groups: (readonly S[])[] = [];
  for (const g of qs.values()) groups.push(shareMembers(g));
  return { psubs: shareMembers(n), qsubs: groups };
}

/** A 32-bit hash of the length and up to 16 characters from the end (where unique subjects
 *  differ), for the admission filter: cheaper than hashing the whole subject. */
function wideHash(s: string): number {
  const n = s.length;
  let h = Math.imul(n, 0x9e3779b1);
  for (let i = n - 1, k = 0; i >= 0 && k < 16; i--, k++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193);
  h ^= h >>> 15;
  h = Math.imul(h, 0x2c1b3c6d);
  return (h ^ (h >>> 12)) >>> 0;
}

function collect<S extends SubLike>(level: Level<S>, out: S[]): void {
  const visit = (n: Node<S> | null) => {
    if (!n) return;
    pushMembers(n, out);
    if (n.qsubs !== null) for (const q of n.qsubs.values()) pushMembers(q, out);
    if (n.next) collect(n.next, out);
  };
  for (const n of level.nodes.values()) visit(n);
  visit(level.pwc);
  visit(level.fwc);
}

function patternMatchesLiteral(pattern: string, literal: string): boolean {
  const pt = pattern.split(".");
  const lt = literal.split(".");
  for (let i = 0; i < pt.length; i++) {
    const p = pt[i]!;
    if (p === ">") return lt.length > i;
    if (i >= lt.length) return false;
    if (p !== "*" && p !== lt[i]) return false;
  }
  return pt.length === lt.length;
}
