// What a leader knows of one follower (etcd-io/raft `tracker/progress.go`): the highest index
// known to match, the next index to send, and how to send: Probe (one append at a time until
// the match point is found), Replicate (optimistic pipelining, bounded by an inflight window)
// or Snapshot (waiting for a snapshot to land).

export const ProgressState = {
  Probe: 0,
  Replicate: 1,
  Snapshot: 2,
} as const;
export type ProgressState = (typeof ProgressState)[keyof typeof ProgressState];

/** A ring of the last index of each append in flight, oldest first. */
export class Inflights {
  private readonly buf: number[];
  private start = 0;
  count = 0;
  constructor(readonly size: number) {
    this.buf = new Array<number>(size).fill(0);
  }
  full(): boolean {
    return this.count === this.size;
  }
  add(last: number): void {
    if (this.full()) throw new Error("raft invariant: inflights full");
    this.buf[(this.start + this.count) % this.size] = last;
    this.count++;
  }
  /** Forget every append whose last index is ≤ to (acknowledged). */
  freeLE(to: number): void {
    while (this.count > 0 && this.buf[this.start]! <= to) {
      this.start = (this.start + 1) % this.size;
      this.count--;
    }
  }
  /** Forget the oldest append (it was probably lost), making room for one more. */
  freeFirstOne(): void {
    if (this.count === 0) return;
    this.start = (this.start + 1) % this.size;
    this.count--;
  }
  reset(): void {
    this.start = 0;
    this.count = 0;
  }
}

export class Progress {
  match = 0;
  next = 1;
  state: ProgressState = ProgressState.Probe;
  /** Snapshot state: the index of the snapshot sent. */
  pendingSnapshot = 0;
  /** Leader ticks since the snapshot was sent (to retry one that was lost). */
  snapshotTicks = 0;
  /** Heard from within the current election timeout (check-quorum). */
  recentActive = false;
  /** The follower's last heartbeat answer said its log was reset (RESET_FLAG). */
  resetSeen = false;
  /** Probe state: one append is out; wait for its answer or a heartbeat answer. */
  probeSent = false;
  readonly inflights: Inflights;

  constructor(next: number, maxInflight: number) {
    this.next = next;
    this.inflights = new Inflights(maxInflight);
  }

  private resetState(s: ProgressState): void {
    this.probeSent = false;
    this.pendingSnapshot = 0;
    this.snapshotTicks = 0;
    this.state = s;
    this.inflights.reset();
  }

  becomeProbe(): void {
    if (this.state === ProgressState.Snapshot) {
      const ps = this.pendingSnapshot;
      this.resetState(ProgressState.Probe);
      this.next = Math.max(this.match + 1, ps + 1);
    } else {
      this.resetState(ProgressState.Probe);
      this.next = this.match + 1;
    }
  }

  becomeReplicate(): void {
    this.resetState(ProgressState.Replicate);
    this.next = this.match + 1;
  }

  becomeSnapshot(index: number): void {
    this.resetState(ProgressState.Snapshot);
    this.pendingSnapshot = index;
  }

  /** An acknowledgement of index n; false if it was stale. */
  maybeUpdate(n: number): boolean {
    let updated = false;
    if (this.match < n) {
      this.match = n;
      updated = true;
      this.probeSent = false;
    }
    this.next = Math.max(this.next, n + 1);
    return updated;
  }

  /** The follower no longer holds entries it acknowledged (its disk was wiped and it came
   *  back under the same id): its match is what it has now; probe from there. */
  lostEntries(has: number): void {
    this.match = has;
    this.resetState(ProgressState.Probe);
    this.next = has + 1;
  }

  /** After sending entries up to last. */
  sentEntries(last: number, count: number): void {
    if (this.state === ProgressState.Replicate) {
      if (count > 0) {
        this.next = last + 1;
        this.inflights.add(last);
      }
    } else if (this.state === ProgressState.Probe) {
      this.probeSent = true;
    }
  }

  /**
   * A rejection of the append after `rejected`; hint is the follower's suggestion of where
   * its log may match. False if the rejection is stale.
   */
  maybeDecrTo(rejected: number, hint: number): boolean {
    if (this.state === ProgressState.Replicate) {
      if (rejected <= this.match) return false;
      this.next = this.match + 1;
      return true;
    }
    if (this.next - 1 !== rejected) return false;
    this.next = Math.max(Math.min(rejected, hint + 1), this.match + 1, 1);
    this.probeSent = false;
    return true;
  }

  isPaused(): boolean {
    switch (this.state) {
      case ProgressState.Probe:
        return this.probeSent;
      case ProgressState.Replicate:
        return this.inflights.full();
      case ProgressState.Snapshot:
        return true;
    }
  }
}
