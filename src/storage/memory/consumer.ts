// In-memory ConsumerStore: keeps the last state given to update(); load() hands out a copy
// so the consumer cannot alias what the store holds.
import type { ConsumerState, ConsumerStore } from "../types.js";
import { systemScheduler } from "../../runtime/sched.js";

export function cloneConsumerState(s: ConsumerState): ConsumerState {
  return {
    delivered: { consumerSeq: s.delivered.consumerSeq, streamSeq: s.delivered.streamSeq },
    ackFloor: { consumerSeq: s.ackFloor.consumerSeq, streamSeq: s.ackFloor.streamSeq },
    pending: new Map([...s.pending].map(([k, v]) => [k, { cseq: v.cseq, tsNs: v.tsNs }])),
    redelivered: new Map(s.redelivered),
  };
}

export class MemoryConsumerStore implements ConsumerStore {
  private current: ConsumerState | null = null;
  private config: string | null = null;

  load(): ConsumerState | null {
    return this.current === null ? null : cloneConsumerState(this.current);
  }
  update(state: ConsumerState): void {
    this.current = cloneConsumerState(state);
  }
  sync(cb: (err: Error | null) => void): void {
    systemScheduler.nextTurn(() => cb(null));
  }
  writeConfig(json: string): void {
    this.config = json;
  }
  readConfig(): string | null {
    return this.config;
  }
  async close(): Promise<void> {}
  async delete(): Promise<void> {
    this.current = null;
    this.config = null;
  }
}
