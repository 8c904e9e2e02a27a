// Linearizable reads of the meta state on any server (Raft ReadIndex, forwarded to the meta
// leader by a follower): confirm() resolves once this server has applied every meta op that
// was committed when it was called. A STREAM.INFO that arrives right after STREAM.DELETE
// replied (the meta leader replies once the delete applied there) then finds the stream gone
// on every server, not only on the meta leader.
//
// Callers share rounds: one ReadIndex covers every confirm() made before it was asked; those
// made while it runs wait for the next. A round not answered within READ_BOUND_MS fails
// (no meta leader, or it is cut off).

import type { Clock, TimerHandle } from "../runtime/clock.js";
import type { ReadState } from "../raft/types.js";

const READ_BOUND_MS = 1500;

interface Waiter {
  resolve(): void;
  reject(e: Error): void;
}

export interface MetaReadHost {
  /** Start a ReadIndex on the meta group (throws when no leader is known). */
  readIndex(context: Uint8Array): void;
  /** The index of the last meta entry applied here. */
  appliedIndex(): number;
}

export class MetaReads {
  private covered: Waiter[] = [];
  private next: Waiter[] = [];
  private round: { key: string; index: number; timer: TimerHandle } | null = null;
  private seq = 0;
  private recheck = false;

  constructor(
    private readonly host: MetaReadHost,
    private readonly clock: Clock,
  ) {}

  confirm(): Promise<void> {
    return new Promise((resolve, reject) => {
      this.next.push({ resolve, reject });
      if (this.round === null) this.start();
    });
  }

  onReadState(rs: ReadState): void {
    const r = this.round;
    if (r === null || Buffer.from(rs.context).toString("latin1") !== r.key) return;
    r.index = rs.index;
    this.release();
  }

  /** A meta entry applied here: reads waiting for it may go. */
  onApplied(): void {
    if (this.round !== null && this.round.index >= 0) this.release();
  }

  close(): void {
    const err = new Error("meta group closed");
    const later = this.next;
    this.next = [];
    this.finish(err);
    this.fail(later, err);
  }

  private start(): void {
    this.covered = this.next;
    this.next = [];
    const key = `meta-read-${++this.seq}`;
    const timer = this.clock.setTimer(() => {
      if (this.round?.key === key) this.finish(new Error("meta read not confirmed"));
    }, READ_BOUND_MS);
    this.round = { key, index: -1, timer };
    try {
      this.host.readIndex(Buffer.from(key, "latin1"));
    } catch (e) {
      this.finish(e as Error);
    }
  }

  private release(): void {
    const r = this.round;
    if (r === null || r.index < 0) return;
    if (this.host.appliedIndex() >= r.index) {
      this.finish(null);
      return;
    }
    // Applied a little later (the entries of this Ready may not be counted yet).
    if (!this.recheck) {
      this.recheck = true;
      this.clock.setTimer(() => {
        this.recheck = false;
        this.release();
      }, 1);
    }
  }

  private finish(err: Error | null): void {
    const r = this.round;
    if (r === null) return;
    this.clock.clearTimer(r.timer);
    this.round = null;
    const done = this.covered;
    this.covered = [];
    if (err === null) for (const w of done) w.resolve();
    else this.fail(done, err);
    if (this.next.length > 0) this.start();
  }

  private fail(ws: Waiter[], err: Error): void {
    for (const w of ws) w.reject(err);
  }
}
