// A binary min-heap of simulator events ordered by (time, seq): seq breaks ties in insertion
// order so a seed replays exactly.

export interface SimEvent {
  at: number;
  seq: number;
  run: () => void;
}

export class EventHeap {
  private a: SimEvent[] = [];
  get size(): number {
    return this.a.length;
  }
  push(e: SimEvent): void {
    const a = this.a;
    a.push(e);
    let i = a.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (!less(a[i]!, a[p]!)) break;
      [a[i], a[p]] = [a[p]!, a[i]!];
      i = p;
    }
  }
  pop(): SimEvent | undefined {
    const a = this.a;
    const top = a[0];
    const last = a.pop();
    if (a.length > 0 && last !== undefined) {
      a[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < a.length && less(a[l]!, a[m]!)) m = l;
        if (r < a.length && less(a[r]!, a[m]!)) m = r;
        if (m === i) break;
        [a[i], a[m]] = [a[m]!, a[i]!];
        i = m;
      }
    }
    return top;
  }
}

function less(x: SimEvent, y: SimEvent): boolean {
  return x.at < y.at || (x.at === y.at && x.seq < y.seq);
}
