// The per-message TTL index of a SeqIndex: a min-heap of (expiry ns, seq, ttl seconds) in three
// parallel arrays. Entries of messages removed since are not taken out; expire() skips them.
export class TtlHeap {
  private readonly at: number[] = [];
  private readonly seqs: number[] = [];
  private readonly ttls: number[] = []; // the TTL itself, so reading the TTLs reads no message

  get size(): number {
    return this.at.length;
  }

  /** Expiry (ns) of the earliest entry; size > 0. */
  topAt(): number {
    return this.at[0] as number;
  }

  /** Sequence of the earliest entry; size > 0. */
  topSeq(): number {
    return this.seqs[0] as number;
  }

  seqAt(i: number): number {
    return this.seqs[i] as number;
  }

  ttlAt(i: number): number {
    return this.ttls[i] as number;
  }

  push(at: number, seq: number, ttl: number): void {
    const a = this.at;
    const q = this.seqs;
    const t = this.ttls;
    let i = a.length;
    a.push(at);
    q.push(seq);
    t.push(ttl);
    while (i > 0) {
      const p = (i - 1) >> 1;
      if ((a[p] as number) <= at) break;
      a[i] = a[p] as number;
      q[i] = q[p] as number;
      t[i] = t[p] as number;
      i = p;
    }
    a[i] = at;
    q[i] = seq;
    t[i] = ttl;
  }

  /** Drop the earliest entry. */
  pop(): void {
    const a = this.at;
    const q = this.seqs;
    const t = this.ttls;
    const lastAt = a.pop() as number;
    const lastSeq = q.pop() as number;
    const lastTtl = t.pop() as number;
    const n = a.length;
    if (n === 0) return;
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= n) break;
      const r = l + 1;
      const c = r < n && (a[r] as number) < (a[l] as number) ? r : l;
      if ((a[c] as number) >= lastAt) break;
      a[i] = a[c] as number;
      q[i] = q[c] as number;
      t[i] = t[c] as number;
      i = c;
    }
    a[i] = lastAt;
    q[i] = lastSeq;
    t[i] = lastTtl;
  }

  clear(): void {
    this.at.length = 0;
    this.seqs.length = 0;
    this.ttls.length = 0;
  }
}
