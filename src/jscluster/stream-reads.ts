// Linearizable reads on a stream leader (Raft ReadIndex). A leader that was paused or cut off,
// and does not know it was deposed, must not answer STREAM.INFO or MSG.GET from its stale
// store: a read waits until a quorum confirmed this replica as leader (a heartbeat round) and
// it has applied everything that was committed when the read was asked.

import { jsErr, JsApiError } from "../contracts/errors.js";
import type { Clock, TimerHandle } from "../runtime/clock.js";

/** How long a read waits for its confirmation before it is refused (not leader). */
const READ_CONFIRM_MS = 2000;

export function notLeader(): JsApiError {
  return new JsApiError(jsErr("JSClusterNotLeaderErr"));
}

/** What the reads need from their stream group. */
export interface ReadHost {
  readonly clock: Clock;
  /** Leading and taking publishes. */
  leading(): boolean;
  /** Index of the last entry the group's state reflects. */
  appliedIndex(): number;
  /** Start a ReadIndex round with this context (throws when not leader). */
  readIndex(ctx: Buffer): void;
}

interface PendingRead {
  resolve: () => void;
  reject: (e: Error) => void;
  timer: TimerHandle;
  /** The commit index the quorum confirmed (-1: not confirmed yet). */
  index: number;
}

export class LeaderReads {
  private readonly reads = new Map<string, PendingRead>();
  private seq = 0;
  private recheck = false;

  constructor(private readonly h: ReadHost) {}

  /** Resolves once confirmed and applied; rejects (not leader) otherwise. */
  confirm(): Promise<void> {
    if (!this.h.leading()) return Promise.reject(notLeader());
    const key = `r${++this.seq}`;
    return new Promise<void>((resolve, reject) => {
      const timer = this.h.clock.setTimer(() => this.settle(key, notLeader()), READ_CONFIRM_MS);
      this.reads.set(key, { resolve, reject, timer, index: -1 });
      try {
        this.h.readIndex(Buffer.from(key, "latin1"));
      } catch {
        this.settle(key, notLeader());
      }
    });
  }

  /** The Raft answered a ReadIndex round. */
  onReadState(context: Uint8Array, index: number): void {
    const r = this.reads.get(Buffer.from(context).toString("latin1"));
    if (r === undefined) return;
    r.index = index;
    this.release();
  }

  /** Settle the confirmed reads whose index the group has applied. */
  release(): void {
    for (const [key, r] of this.reads) {
      if (r.index < 0) continue;
      if (!this.h.leading()) this.settle(key, notLeader());
      else if (this.h.appliedIndex() >= r.index) this.settle(key, null);
      else if (!this.recheck) {
        this.recheck = true;
        this.h.clock.setTimer(() => {
          this.recheck = false;
          this.release();
        }, 1);
      }
    }
  }

  /** Leadership ended: every waiting read is refused. */
  refuseAll(): void {
    for (const key of [...this.reads.keys()]) this.settle(key, notLeader());
  }

  private settle(key: string, err: Error | null): void {
    const r = this.reads.get(key);
    if (r === undefined) return;
    this.reads.delete(key);
    this.h.clock.clearTimer(r.timer);
    if (err === null) r.resolve();
    else r.reject(err);
  }
}
