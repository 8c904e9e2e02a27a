// The subscription index (nats-server sublist.go, simplified): a trie over subject tokens
// with '*' and '>' children, and a bounded cache of match results keyed by literal subject.
// Results are immutable arrays; insert and remove replace them (copy-on-write), so a fan-out
// that is iterating a result is never disturbed by subscribes or unsubscribes it causes.

export interface SubLike {
  readonly subject: string;
  readonly queue: string; // "" for plain subscriptions
}

export interface SublistResult<S extends SubLike> {
  readonly psubs: readonly S[];
  /** One array per queue group with members. */
  readonly qsubs: readonly (readonly S[])[];
}

class Node<S extends SubLike> {
  psubs: S[] = [];
  qsubs: Map<string, S[]> = new Map();
  next: Level<S> | null = null;
}

class Level<S extends SubLike> {
  nodes: Map<string, Node<S>> = new Map();
  pwc: Node<S> | null = null;
  fwc: Node<S> | null = null;
  /** The literal children as arrays while there are few (null = rebuild on next use):
   *  comparing a few keys in place beats slicing the token out and hashing it. */
  keys: string[] | null = null;
  vals: Node<S>[] = [];
}

const SMALL_LEVEL = 8;

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
    for (const [k, n] of m) {
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
const CACHE_ADMIT_EVERY = 64; // a power of two
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
  private fullMisses = 0;
  // The last subject matched and its result: a publisher repeats its subject message after
  // message, and one compare (by identity, when the parser reuses the string) is cheaper
  // than the signature and the Map lookup. Cleared by every insert and remove.
  private lastSubject: string | null = null;
  private lastResult: SublistResult<S> = EMPTY_RESULT as SublistResult<S>;

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
    const tokens = sub.subject.split(".");
    let level = this.root;
    let node: Node<S> | null = null;
    for (let i = 0; i < tokens.length; i++) {
      const t = tokens[i]!;
      if (t === "*") {
        node = level.pwc ??= new Node<S>();
      } else if (t === ">") {
        node = level.fwc ??= new Node<S>();
      } else {
        node = level.nodes.get(t) ?? null;
        if (!node) {
          node = new Node<S>();
          level.nodes.set(t, node);
          level.keys = null;
        }
      }
      if (i < tokens.length - 1) level = node.next ??= new Level<S>();
    }
    if (!node) return;
    if (sub.queue === "") {
      node.psubs = [...node.psubs, sub];
    } else {
      const q = node.qsubs.get(sub.queue);
      node.qsubs.set(sub.queue, q ? [...q, sub] : [sub]);
    }
    this.count++;
    this.inserts++;
    this.invalidate(sub.subject);
  }

  remove(sub: S): boolean {
    const tokens = sub.subject.split(".");
    const path: [Level<S>, string, Node<S>][] = [];
    let level: Level<S> | null = this.root;
    let node: Node<S> | null = null;
    for (let i = 0; i < tokens.length; i++) {
      if (!level) return false;
      const t = tokens[i]!;
      node = t === "*" ? level.pwc : t === ">" ? level.fwc : (level.nodes.get(t) ?? null);
      if (!node) return false;
      path.push([level, t, node]);
      level = node.next;
    }
    if (!node) return false;
    let removed = false;
    if (sub.queue === "") {
      const i = node.psubs.indexOf(sub);
      if (i >= 0) {
        node.psubs = node.psubs.filter((s) => s !== sub);
        removed = true;
      }
    } else {
      const q = node.qsubs.get(sub.queue);
      if (q && q.includes(sub)) {
        const rest = q.filter((s) => s !== sub);
        if (rest.length === 0) node.qsubs.delete(sub.queue);
        else node.qsubs.set(sub.queue, rest);
        removed = true;
      }
    }
    if (!removed) return false;
    this.count--;
    this.removes++;
    // Prune empty nodes bottom-up so long-lived servers do not accumulate inbox tokens.
    for (let i = path.length - 1; i >= 0; i--) {
      const [lvl, t, n] = path[i]!;
      const nextEmpty = !n.next || (n.next.nodes.size === 0 && !n.next.pwc && !n.next.fwc);
      if (n.psubs.length > 0 || n.qsubs.size > 0 || !nextEmpty) break;
      if (t === "*") lvl.pwc = null;
      else if (t === ">") lvl.fwc = null;
      else {
        lvl.nodes.delete(t);
        lvl.keys = null;
      }
    }
    this.invalidate(sub.subject);
    return true;
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
    // Token ends, not tokens: a token is sliced only where a level has literal children, so
    // a unique subject under a '>' subscription ($JS.ACK.<stream>.<consumer>.>, reply
    // inboxes) does not pay for split() into strings nobody looks at.
    const ends = TOKEN_ENDS;
    ends.length = 0;
    let start = 0;
    for (let i = 0; i < subject.length; i++) {
      if (subject.charCodeAt(i) !== 0x2e) continue;
      // Like nats-server, a subject with an empty token matches nothing (not even '>').
      if (i === start) return EMPTY_RESULT as SublistResult<S>;
      ends.push(i);
      start = i + 1;
    }
    if (start === subject.length) return EMPTY_RESULT as SublistResult<S>;
    ends.push(subject.length);
    const acc: MatchAcc<S> = { psubs: [], qmap: null };
    matchLevel(this.root, subject, ends, 0, acc);
    const result: SublistResult<S> = { psubs: acc.psubs, qsubs: acc.qmap === null ? NO_QSUBS : [...acc.qmap.values()] };
    if (this.cache.size >= MAX_CACHE_ENTRIES) {
      // A full cache admits one miss in CACHE_ADMIT_EVERY: unique subjects (reply inboxes,
      // one per request) then stop churning it, and a subject that keeps coming back still
      // gets in after some tens of misses (admitting more often made every 8th unique ack
      // reply pay for a Map insert and, in turn, sweeps).
      if ((++this.fullMisses & (CACHE_ADMIT_EVERY - 1)) !== 0) return result;
      this.sweepCache();
    }
    this.cache.set(subject, result);
    this.sigCount[sg]!++;
    return result;
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
    if (this.cache.size === 0) return;
    if (!pattern.includes("*") && !pattern.includes(">")) {
      this.uncache(pattern);
      return;
    }
    for (const key of this.cache.keys()) if (patternMatchesLiteral(pattern, key)) this.uncache(key);
  }
}

interface MatchAcc<S extends SubLike> {
  psubs: S[];
  /** Created on the first queue subscription seen: most matches have none. */
  qmap: Map<string, S[]> | null;
}

const NO_QSUBS: readonly (readonly never[])[] = Object.freeze([]);

// Reused by match() (not re-entrant: matching calls nothing outside this module).
const TOKEN_ENDS: number[] = [];

function matchLevel<S extends SubLike>(level: Level<S>, subject: string, ends: readonly number[], i: number, acc: MatchAcc<S>): void {
  // Result order follows nats-server (fwc, deeper levels, then the literal node before
  // the '*' node of the last level) so deliveries of one message go out in the same order.
  if (level.fwc) addNode(level.fwc, acc);
  const last = i === ends.length - 1;
  const n = childOf(level, subject, i === 0 ? 0 : ends[i - 1]! + 1, ends[i]!);
  if (last) {
    if (n) addNode(n, acc);
    if (level.pwc) addNode(level.pwc, acc);
    return;
  }
  if (level.pwc?.next) matchLevel(level.pwc.next, subject, ends, i + 1, acc);
  if (n?.next) matchLevel(n.next, subject, ends, i + 1, acc);
}

function addNode<S extends SubLike>(n: Node<S>, acc: MatchAcc<S>): void {
  const ps = n.psubs;
  for (let i = 0; i < ps.length; i++) acc.psubs.push(ps[i]!);
  if (n.qsubs.size === 0) return;
  const qmap = (acc.qmap ??= new Map<string, S[]>());
  for (const [q, members] of n.qsubs) {
    const have = qmap.get(q);
    if (have) for (const m of members) have.push(m);
    else qmap.set(q, [...members]);
  }
}

function collect<S extends SubLike>(level: Level<S>, out: S[]): void {
  const visit = (n: Node<S> | null) => {
    if (!n) return;
    for (const s of n.psubs) out.push(s);
    for (const q of n.qsubs.values()) for (const s of q) out.push(s);
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
