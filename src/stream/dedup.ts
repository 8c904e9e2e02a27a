// The duplicate window: message ids seen within duplicate_window, in arrival order, so
// expiry pops from the front instead of scanning (nats-server keeps a map plus a list).

export class DedupWindow {
  private readonly seqs = new Map<string, number>();
  private ids: string[] = [];
  private ts: number[] = [];
  private sq: number[] = [];
  private head = 0;
  windowNs: number;

  constructor(windowNs: number) {
    this.windowNs = windowNs;
  }

  /** The seq stored under id within the window, or 0. */
  check(id: string, nowNs: number): number {
    this.expire(nowNs);
    return this.seqs.get(id) ?? 0;
  }

  add(id: string, seq: number, tsNs: number): void {
    if (this.windowNs <= 0) return;
    this.seqs.set(id, seq);
    this.ids.push(id);
    this.ts.push(tsNs);
    this.sq.push(seq);
  }

  expire(nowNs: number): void {
    const cutoff = nowNs - this.windowNs;
    while (this.head < this.ids.length && this.ts[this.head]! <= cutoff) {
      const id = this.ids[this.head]!;
      // A later re-add of the same id holds another seq; only drop the entry we pop.
      if (this.seqs.get(id) === this.sq[this.head]) this.seqs.delete(id);
      this.head++;
    }
    if (this.head > 1024 && this.head * 2 > this.ids.length) {
      this.ids = this.ids.slice(this.head);
      this.ts = this.ts.slice(this.head);
      this.sq = this.sq.slice(this.head);
      this.head = 0;
    }
  }

  get size(): number {
    return this.seqs.size;
  }

  clear(): void {
    this.seqs.clear();
    this.ids = [];
    this.ts = [];
    this.sq = [];
    this.head = 0;
  }
}
