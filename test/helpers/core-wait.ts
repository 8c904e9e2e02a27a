// Bounded waits over message collections for client-level tests.

import type { Msg, Subscription } from "@nats-io/transport-node";

export const WAIT_MS = 5000;

/** Collects every message a subscription delivers (iterating in the background). */
export class Collector {
  readonly msgs: Msg[] = [];
  readonly done: Promise<void>;
  private waiters: (() => void)[] = [];

  constructor(readonly sub: Subscription) {
    this.done = (async () => {
      for await (const m of sub) {
        this.msgs.push(m);
        this.wake();
      }
      this.wake();
    })();
  }

  private wake(): void {
    const w = this.waiters;
    this.waiters = [];
    for (const f of w) f();
  }

  /** Waits until at least `n` messages arrived; throws after `ms`. */
  async waitCount(n: number, ms = WAIT_MS): Promise<Msg[]> {
    const deadline = Date.now() + ms;
    while (this.msgs.length < n) {
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`expected ${n} messages on ${this.sub.getSubject()}, got ${this.msgs.length}`);
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(t);
          resolve();
        });
      });
    }
    return this.msgs;
  }

  subjects(): string[] {
    return this.msgs.map((m) => m.subject);
  }

  strings(): string[] {
    return this.msgs.map((m) => m.string());
  }
}

/** Resolves with the promise's value, or rejects after `ms` naming `what`. */
export async function within<T>(p: Promise<T>, what: string, ms = WAIT_MS): Promise<T> {
  let t: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    t = setTimeout(() => reject(new Error(`timed out after ${ms}ms: ${what}`)), ms);
  });
  try {
    return await Promise.race([p, timeout]);
  } finally {
    clearTimeout(t);
  }
}
