// Overlap checks over many subjects without comparing every pair. nats-server compares each
// stream subject with every later one (SubjectsCollide, quadratic: 8,000 subjects take it
// seconds, 60,000 minutes); on a single event loop that stalls every client. Here the
// subjects go into a token trie and the trie is joined with itself: two nodes at the same
// depth are paired only when their tokens can match (equal literals, or a '*' on either
// side), literal children are intersected by walking the smaller map, and a '>' pairs with
// everything below the other node. Subjects that share no prefix and carry no wildcards
// cost one trie insert each.
//
// Deciding whether any two of n patterns with wildcards collide is, in the worst case, as
// hard as orthogonal vectors, so no algorithm is subquadratic on every input: the join
// counts the node pairs it visits and stops at `budget` (OverlapBudgetExceeded), so a
// hostile config costs bounded time instead of minutes.

const GT = ">";
const STAR = "*";

class TNode {
  lit: Map<string, TNode> | null = null;
  star: TNode | null = null;
  /** The node of a pattern whose next (and last) token is '>'. */
  gt: TNode | null = null;
  /** Indices of the patterns that end exactly here. */
  ends: number[] | null = null;
}

export class OverlapBudgetExceeded extends Error {
  constructor() {
    super("subject overlap check exceeded its work limit");
  }
}

/** A colliding pair of indices into the input list, i < j. */
export interface OverlapPair {
  i: number;
  j: number;
}

/** Default work limit (node pairs visited): about a second of CPU at worst. */
export const DEFAULT_OVERLAP_BUDGET = 20_000_000;

const JOIN = 0;
const BELOW = 1;

/** The trie join as an explicit stack of frames (a JOIN of two nodes, or one node BELOW a
 *  '>' whose patterns it pairs with everything under it), worked in the order the recursive
 *  form would take, so that it can stop after any number of steps and go on later: a caller
 *  on the event loop does a bounded slice per turn. */
class Join {
  work = 0;
  best: OverlapPair | null = null;
  found = 0;
  private readonly kinds: number[] = [];
  private readonly xs: (TNode | number[])[] = [];
  private readonly ys: TNode[] = [];
  /** Child pairs of one JOIN, in call order (pushed reversed). */
  private readonly scratchU: TNode[] = [];
  private readonly scratchV: TNode[] = [];

  /** Queue a child pair of the JOIN being expanded. */
  private child(u: TNode, v: TNode): void {
    this.scratchU.push(u);
    this.scratchV.push(v);
  }

  constructor(
    readonly budget: number,
    /** Stop after this many colliding pairs (1: any pair will do). */
    readonly maxPairs: number,
  ) {}

  tick(): void {
    if (++this.work > this.budget) throw new OverlapBudgetExceeded();
  }

  get done(): boolean {
    return this.found >= this.maxPairs;
  }

  pair(a: number, b: number): void {
    if (a === b) return;
    const i = a < b ? a : b;
    const j = a < b ? b : a;
    this.found++;
    const cur = this.best;
    if (cur === null || i < cur.i || (i === cur.i && j < cur.j)) this.best = { i, j };
  }

  push(kind: number, x: TNode | number[], y: TNode): void {
    this.kinds.push(kind);
    this.xs.push(x);
    this.ys.push(y);
  }

  /** Works frames until about `units` more node pairs were visited; true when finished. */
  run(units: number): boolean {
    const limit = this.work + units;
    while (this.kinds.length > 0 && !this.done) {
      if (this.work >= limit) return false;
      const k = this.kinds.pop()!;
      const x = this.xs.pop()!;
      const y = this.ys.pop()!;
      if (k === JOIN) this.joinOne(x as TNode, y);
      else this.belowOne(x as number[], y);
    }
    this.kinds.length = 0;
    this.xs.length = 0;
    this.ys.length = 0;
    return true;
  }

  /** Frames pairing `ends` with every pattern below a node whose children are these. */
  private pushBelow(ends: number[], lit: Map<string, TNode> | null, star: TNode | null, gt: TNode | null): void {
    if (lit !== null) for (const c of lit.values()) this.push(BELOW, ends, c);
    if (star !== null) this.push(BELOW, ends, star);
    if (gt !== null) this.push(BELOW, ends, gt);
  }

  private belowOne(ends: number[], m: TNode): void {
    this.tick();
    if (m.ends !== null) for (const b of m.ends) for (const a of ends) if (!this.done) this.pair(a, b);
    this.pushBelow(ends, m.lit, m.star, m.gt);
  }

  /** Pairs of patterns, one through u and one through v (u, v at the same depth, their
   *  prefixes compatible), that collide: the pairs ending here now, the rest as frames. */
  private joinOne(u: TNode, v: TNode): void {
    this.tick();
    if (this.done) return;
    const same = u === v;
    if (u.ends !== null && v.ends !== null) {
      if (same) {
        const e = u.ends;
        for (let x = 0; x < e.length && !this.done; x++) for (let y = x + 1; y < e.length && !this.done; y++) this.pair(e[x]!, e[y]!);
      } else {
        for (const a of u.ends) for (const b of v.ends) if (!this.done) this.pair(a, b);
      }
    }
    if (same && u.gt !== null && u.gt.ends !== null) {
      const e = u.gt.ends;
      for (let x = 0; x < e.length && !this.done; x++) for (let y = x + 1; y < e.length && !this.done; y++) this.pair(e[x]!, e[y]!);
    }
    if (this.done) return;
    // Children: equal literals, '*' against every child of the other side.
    const cu = this.scratchU;
    const cv = this.scratchV;
    const ul = u.lit;
    const vl = v.lit;
    if (same) {
      if (ul !== null) for (const c of ul.values()) this.child(c, c);
      if (u.star !== null) {
        cu.push(u.star);
        cv.push(u.star);
        if (ul !== null) for (const c of ul.values()) this.child(u.star, c);
      }
    } else {
      if (ul !== null && vl !== null) {
        const [small, big] = ul.size <= vl.size ? [ul, vl] : [vl, ul];
        const smallIsU = small === ul;
        for (const [k, c] of small) {
          this.tick();
          const d = big.get(k);
          if (d !== undefined) {
            cu.push(smallIsU ? c : d);
            cv.push(smallIsU ? d : c);
          }
        }
      }
      if (u.star !== null) {
        if (vl !== null) for (const d of vl.values()) this.child(u.star, d);
        if (v.star !== null) this.child(u.star, v.star);
      }
      if (v.star !== null && ul !== null) for (const c of ul.values()) this.child(c, v.star);
    }
    for (let i = cu.length - 1; i >= 0; i--) this.push(JOIN, cu[i]!, cv[i]!);
    cu.length = 0;
    cv.length = 0;
    // '>' against everything at least one token longer on the other side, worked before the
    // children (pushed last): v's '>' against what is below u except u's own '>', then u's.
    if (!same && v.gt !== null && v.gt.ends !== null) this.pushBelow(v.gt.ends, u.lit, u.star, null);
    if (u.gt !== null && u.gt.ends !== null) {
      if (same) this.pushBelow(u.gt.ends, u.lit, u.star, null);
      else this.pushBelow(u.gt.ends, v.lit, v.star, v.gt);
    }
  }
}

function insert(root: TNode, s: string, index: number): TNode {
  let n = root;
  let start = 0;
  for (;;) {
    let end = s.indexOf(".", start);
    if (end < 0) end = s.length;
    const tok = s.slice(start, end);
    let next: TNode;
    if (tok === GT) {
      next = n.gt ??= new TNode();
    } else if (tok === STAR) {
      next = n.star ??= new TNode();
    } else {
      n.lit ??= new Map();
      let c = n.lit.get(tok);
      if (c === undefined) {
        c = new TNode();
        n.lit.set(tok, c);
      }
      next = c;
    }
    n = next;
    if (end >= s.length) break;
    start = end + 1;
  }
  (n.ends ??= []).push(index);
  return n;
}

/** Inserting, or walking, one subject costs about this many node pairs of the join. */
const INSERT_UNITS = 4;

/** A subject without wildcard characters: its collisions are equal subjects and the
 *  wildcard patterns that match it, found without putting it in a trie. */
function plainLiteral(s: string): boolean {
  return s.indexOf("*") < 0 && s.indexOf(">") < 0;
}

/** Pairs `li` with every pattern of the trie under n that matches the literal tokens of s
 *  from `start` on. */
function walkLiteral(join: Join, n: TNode, s: string, start: number, li: number): void {
  join.tick();
  // A '>' here takes any one or more tokens: s has at least one left.
  if (n.gt !== null && n.gt.ends !== null) for (const e of n.gt.ends) if (!join.done) join.pair(li, e);
  let end = s.indexOf(".", start);
  const last = end < 0;
  if (last) end = s.length;
  const c = n.lit !== null ? n.lit.get(s.slice(start, end)) : undefined;
  if (last) {
    if (c !== undefined && c.ends !== null) for (const e of c.ends) if (!join.done) join.pair(li, e);
    if (n.star !== null && n.star.ends !== null) for (const e of n.star.ends) if (!join.done) join.pair(li, e);
    return;
  }
  if (c !== undefined) walkLiteral(join, c, s, end + 1, li);
  if (n.star !== null) walkLiteral(join, n.star, s, end + 1, li);
}

// The phases of a search (see OverlapSearch).
const CLASSIFY_A = 0;
const CLASSIFY_B = 1;
const INDEX_LITERALS = 2;
const PROBE_LITERALS = 3;
const WALK_A = 4;
const WALK_B = 5;
const JOIN_TRIES = 6;
const FINISHED = 7;

/**
 * The overlap search as a job that can be worked a slice at a time: `step(units)` does about
 * `units` node pairs of work (a subject sorted, indexed or walked counts INSERT_UNITS) and
 * returns true once the answer is known. With `b` null the subjects of `a` are checked
 * against each other (findOverlap), otherwise the subjects of `a` against those of `b`
 * (findCrossOverlap). step throws OverlapBudgetExceeded past `budget` node pairs in all.
 *
 * Only subjects with wildcard characters go into tries (then joined as above). Plain
 * literal subjects (the bulk of a hostile list: 10,000 of them built a 3 MB trie) collide
 * with the equal ones (a Map on one side) and with the patterns that match them (a walk
 * down the other side's trie), so they cost a Map entry, not a branch of nodes.
 */
export class OverlapSearch {
  private readonly ra = new TNode();
  private readonly rb: TNode;
  /** Indices (into the combined numbering: a's, then b's from a.length) of plain literals. */
  private readonly litA: number[] = [];
  private readonly litB: number[] = [];
  private litMap: Map<string, number> | null = null;
  private phase = CLASSIFY_A;
  private k = 0;
  private readonly join: Join;

  constructor(
    private readonly a: readonly string[],
    private readonly b: readonly string[] | null,
    budget = DEFAULT_OVERLAP_BUDGET,
    maxPairs = 1,
  ) {
    this.rb = b === null ? this.ra : new TNode();
    this.join = new Join(budget, b === null ? maxPairs : 1);
    if (b === null ? a.length < 2 : a.length === 0 || b.length === 0) this.phase = FINISHED;
  }

  private subject(i: number): string {
    return i < this.a.length ? this.a[i]! : this.b![i - this.a.length]!;
  }

  private next(phase: number): void {
    this.phase = this.join.done ? FINISHED : phase;
    this.k = 0;
  }

  step(units: number): boolean {
    const a = this.a;
    const b = this.b;
    const j = this.join;
    let left = units;
    while (this.phase !== FINISHED) {
      if (left <= 0) return false;
      switch (this.phase) {
        case CLASSIFY_A:
        case CLASSIFY_B: {
          const onA = this.phase === CLASSIFY_A;
          const list = onA ? a : b!;
          const base = onA ? 0 : a.length;
          const lits = onA ? this.litA : this.litB;
          const root = onA ? this.ra : this.rb;
          while (this.k < list.length && left > 0) {
            const s = list[this.k]!;
            if (plainLiteral(s)) lits.push(base + this.k);
            else insert(root, s, base + this.k);
            this.k++;
            left -= INSERT_UNITS;
          }
          if (this.k >= list.length) this.next(onA && b !== null ? CLASSIFY_B : INDEX_LITERALS);
          break;
        }
        case INDEX_LITERALS: {
          // Self: each literal against the earlier equal one. Cross: a Map of the smaller side.
          const self = b === null;
          const idx = self || this.litA.length <= this.litB.length ? this.litA : this.litB;
          const m = (this.litMap ??= new Map());
          while (this.k < idx.length && left > 0 && !j.done) {
            const i = idx[this.k]!;
            const s = this.subject(i);
            const first = m.get(s);
            if (first === undefined) m.set(s, i);
            else if (self) j.pair(first, i);
            this.k++;
            left -= INSERT_UNITS;
          }
          if (this.k >= idx.length || j.done) this.next(self ? WALK_A : PROBE_LITERALS);
          break;
        }
        case PROBE_LITERALS: {
          const probe = this.litA.length <= this.litB.length ? this.litB : this.litA;
          const m = this.litMap!;
          while (this.k < probe.length && left > 0 && !j.done) {
            const i = probe[this.k]!;
            const other = m.get(this.subject(i));
            if (other !== undefined) j.pair(other, i);
            this.k++;
            left -= INSERT_UNITS;
          }
          if (this.k >= probe.length || j.done) {
            this.litMap = null;
            this.next(WALK_A);
          }
          break;
        }
        case WALK_A:
        case WALK_B: {
          // a's literals down b's trie (self: a's own patterns), then b's down a's.
          const onA = this.phase === WALK_A;
          const lits = onA ? this.litA : this.litB;
          const root = onA ? this.rb : this.ra;
          const work0 = j.work;
          while (this.k < lits.length && left > 0 && !j.done) {
            const i = lits[this.k]!;
            walkLiteral(j, root, this.subject(i), 0, i);
            this.k++;
            left -= INSERT_UNITS;
          }
          left -= j.work - work0;
          if (this.k >= lits.length || j.done) {
            if (onA && b !== null) this.next(WALK_B);
            else {
              this.litMap = null;
              this.next(JOIN_TRIES);
              if (!j.done) j.push(JOIN, this.ra, this.rb);
            }
          }
          break;
        }
        case JOIN_TRIES:
          if (j.run(left)) this.phase = FINISHED;
          left = 0;
          break;
      }
    }
    return true;
  }

  /** Self search: the colliding pair found (see findOverlap), or null. */
  get pair(): OverlapPair | null {
    return this.join.best;
  }

  /** Cross search: the index in `b` of a subject that collides with one in `a`, or -1. */
  get crossIndex(): number {
    const p = this.join.best;
    return p === null ? -1 : p.j - this.a.length;
  }
}

/**
 * A colliding pair among `subjects` (valid subjects, as SubjectsCollide judges), or null.
 * The pair is the smallest (i, then j) among the first `maxPairs` collisions found, so with
 * maxPairs large enough it is the pair nats-server's loop reports first.
 * Throws OverlapBudgetExceeded when the join visits more than `budget` node pairs.
 */
export function findOverlap(subjects: readonly string[], budget = DEFAULT_OVERLAP_BUDGET, maxPairs = 1): OverlapPair | null {
  const s = new OverlapSearch(subjects, null, budget, maxPairs);
  s.step(Infinity);
  return s.pair;
}

/** The index of a subject in `b` that collides with one in `a` (two lists, e.g. a new
 *  stream's subjects and another stream's), or -1. */
export function findCrossOverlap(a: readonly string[], b: readonly string[], budget = DEFAULT_OVERLAP_BUDGET): number {
  const s = new OverlapSearch(a, b, budget);
  s.step(Infinity);
  return s.crossIndex;
}

/** Is some pattern in `subjects` (other than index `self`) a superset of `sub`
 *  (subjectIsSubsetMatch(sub, it))? Walks at most the literal and '*' branch per token. */
export class SupersetIndex {
  private readonly root = new TNode();
  constructor(subjects: readonly string[]) {
    for (let k = 0; k < subjects.length; k++) insert(this.root, subjects[k]!, k);
  }

  /** An index j ≠ self whose pattern contains every subject `sub` matches, or -1. */
  superset(sub: string, self = -1): number {
    const toks = sub.split(".");
    const walk = (n: TNode, d: number): number => {
      // A '>' here contains the rest of sub when sub has at least one more token (of any
      // kind: literal, '*' or '>').
      if (d < toks.length && n.gt !== null && n.gt.ends !== null) {
        for (const e of n.gt.ends) if (e !== self) return e;
      }
      if (d === toks.length) {
        if (n.ends !== null) for (const e of n.ends) if (e !== self) return e;
        return -1;
      }
      const t = toks[d]!;
      if (t === GT) return -1; // only '>' contains '>' (handled above)
      if (t !== STAR && n.lit !== null) {
        const c = n.lit.get(t);
        if (c !== undefined) {
          const r = walk(c, d + 1);
          if (r >= 0) return r;
        }
      }
      if (n.star !== null) return walk(n.star, d + 1);
      return -1;
    };
    return walk(this.root, 0);
  }
}
