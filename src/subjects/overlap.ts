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

class Join {
  work = 0;
  best: OverlapPair | null = null;
  found = 0;
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

  /** Every pattern ending in `ends` against every pattern below `n` (n's own ends excluded). */
  endsVsBelow(ends: number[], n: TNode): void {
    const stack: TNode[] = [];
    const push = (c: TNode | null): void => {
      if (c !== null) stack.push(c);
    };
    if (n.lit !== null) for (const c of n.lit.values()) push(c);
    push(n.star);
    push(n.gt);
    while (stack.length > 0 && !this.done) {
      const m = stack.pop()!;
      this.tick();
      if (m.ends !== null) for (const b of m.ends) for (const a of ends) if (!this.done) this.pair(a, b);
      if (m.lit !== null) for (const c of m.lit.values()) push(c);
      push(m.star);
      push(m.gt);
    }
  }

  /** Pairs of patterns, one through u and one through v (u, v at the same depth, their
   *  prefixes compatible), that collide. */
  join(u: TNode, v: TNode): void {
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
    // '>' against everything at least one token longer on the other side.
    if (u.gt !== null && u.gt.ends !== null) {
      if (same) {
        const e = u.gt.ends;
        for (let x = 0; x < e.length && !this.done; x++) for (let y = x + 1; y < e.length && !this.done; y++) this.pair(e[x]!, e[y]!);
        const only = new TNode();
        only.lit = u.lit;
        only.star = u.star;
        this.endsVsBelow(e, only);
      } else {
        this.endsVsBelow(u.gt.ends, v);
      }
    }
    if (!same && v.gt !== null && v.gt.ends !== null) {
      // v.gt against what is below u, except u.gt (already paired above).
      const only = new TNode();
      only.lit = u.lit;
      only.star = u.star;
      this.endsVsBelow(v.gt.ends, only);
    }
    if (this.done) return;
    // Children: equal literals, '*' against every child of the other side.
    const ul = u.lit;
    const vl = v.lit;
    if (same) {
      if (ul !== null) for (const c of ul.values()) if (!this.done) this.join(c, c);
      if (u.star !== null) {
        this.join(u.star, u.star);
        if (ul !== null) for (const c of ul.values()) if (!this.done) this.join(u.star, c);
      }
      return;
    }
    if (ul !== null && vl !== null) {
      const [small, big] = ul.size <= vl.size ? [ul, vl] : [vl, ul];
      const smallIsU = small === ul;
      for (const [k, c] of small) {
        this.tick();
        const d = big.get(k);
        if (d !== undefined) {
          if (smallIsU) this.join(c, d);
          else this.join(d, c);
          if (this.done) return;
        }
      }
    }
    if (u.star !== null) {
      if (vl !== null) for (const d of vl.values()) if (!this.done) this.join(u.star, d);
      if (v.star !== null && !this.done) this.join(u.star, v.star);
    }
    if (v.star !== null && ul !== null) for (const c of ul.values()) if (!this.done) this.join(c, v.star);
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

/**
 * A colliding pair among `subjects` (valid subjects, as SubjectsCollide judges), or null.
 * The pair is the smallest (i, then j) among the first `maxPairs` collisions found, so with
 * maxPairs large enough it is the pair nats-server's loop reports first.
 * Throws OverlapBudgetExceeded when the join visits more than `budget` node pairs.
 */
export function findOverlap(subjects: readonly string[], budget = DEFAULT_OVERLAP_BUDGET, maxPairs = 1): OverlapPair | null {
  if (subjects.length < 2) return null;
  const root = new TNode();
  for (let k = 0; k < subjects.length; k++) insert(root, subjects[k]!, k);
  const j = new Join(budget, maxPairs);
  j.join(root, root);
  return j.best;
}

/** The index of a subject in `b` that collides with one in `a` (two lists, e.g. a new
 *  stream's subjects and another stream's), or -1. */
export function findCrossOverlap(a: readonly string[], b: readonly string[], budget = DEFAULT_OVERLAP_BUDGET): number {
  if (a.length === 0 || b.length === 0) return -1;
  const ra = new TNode();
  const rb = new TNode();
  for (let k = 0; k < a.length; k++) insert(ra, a[k]!, k);
  for (let k = 0; k < b.length; k++) insert(rb, b[k]!, a.length + k);
  const j = new Join(budget, 1);
  j.join(ra, rb);
  return j.best === null ? -1 : j.best.j - a.length;
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
