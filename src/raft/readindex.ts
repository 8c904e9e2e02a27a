// Linearizable reads without a log write (Raft thesis §6.4, etcd `read_only.go`): the leader
// notes its commit index with the request, confirms it is still leader by a heartbeat round
// carrying the request's context, and once a quorum answered, the read may be served after
// applying up to that index.
import type { ReadState } from "./types.js";

interface PendingRead {
  index: number;
  context: Uint8Array;
  /** The follower that asked (forwarded request), or "" for a local one. */
  from: string;
  acks: Set<string>;
}

export function contextKey(c: Uint8Array): string {
  let s = "";
  for (let i = 0; i < c.length; i++) s += String.fromCharCode(c[i]!);
  return s;
}

export class ReadOnly {
  private readonly pending = new Map<string, PendingRead>();
  private queue: string[] = [];

  add(index: number, context: Uint8Array, from: string, self: string): void {
    const k = contextKey(context);
    if (this.pending.has(k)) return;
    this.pending.set(k, { index, context, from, acks: new Set([self]) });
    this.queue.push(k);
  }

  /** Record an ack; returns the number of acks for this context (0 if unknown). */
  ack(context: Uint8Array, from: string): number {
    const r = this.pending.get(contextKey(context));
    if (r === undefined) return 0;
    r.acks.add(from);
    return r.acks.size;
  }

  /** Release every request up to and including context (a quorum confirmed them). */
  advance(context: Uint8Array): Array<ReadState & { from: string }> {
    const k = contextKey(context);
    const at = this.queue.indexOf(k);
    if (at < 0) return [];
    const out: Array<ReadState & { from: string }> = [];
    for (const key of this.queue.slice(0, at + 1)) {
      const r = this.pending.get(key)!;
      this.pending.delete(key);
      out.push({ index: r.index, context: r.context, from: r.from });
    }
    this.queue = this.queue.slice(at + 1);
    return out;
  }

  lastPendingContext(): Uint8Array | null {
    const k = this.queue[this.queue.length - 1];
    return k === undefined ? null : this.pending.get(k)!.context;
  }

  reset(): void {
    this.pending.clear();
    this.queue = [];
  }
}
