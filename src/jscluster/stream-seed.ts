// The seed snapshot of a stream group made from a plain stream (STREAM.UPDATE R1→R>1,
// stream-group.ts StreamGroupOptions.seed): the store's state at the group's first applied
// index, put on disk (the store synced first) before the group takes publishes or adds
// members. A member added later gets it (its next entry is compacted away) and catches the
// messages up from a peer. Retried until done.

import type { RaftHost } from "../raft/host.js";
import type { Clock, TimerHandle } from "../runtime/clock.js";
import type { Logger } from "../runtime/log.js";
import type { StreamStore } from "../storage/types.js";

export interface SeedHost {
  readonly host: RaftHost;
  readonly clock: Clock;
  readonly log: Logger;
  readonly group: string;
  readonly store: StreamStore;
  closed(): boolean;
  /** The applied index now and the group's snapshot of its state there. */
  capture(): { index: number; data: Uint8Array };
  /** The snapshot is on disk. */
  done(): void;
}

export class SeedSnapshot {
  private timer: TimerHandle | null = null;
  private finished = false;

  constructor(private readonly h: SeedHost) {}

  /** Take it (again, until it is on disk); does nothing while one is under way. */
  run(): void {
    const h = this.h;
    if (this.timer !== null || this.finished || h.closed()) return;
    // Not from inside apply: the host has not advanced past the entry yet.
    this.timer = h.clock.setTimer(() => {
      const { index, data } = h.capture();
      h.store.sync((err) => {
        this.timer = null;
        if (h.closed() || this.finished) return;
        let at = 0;
        try {
          if (err === null) at = h.host.snapshotAt(h.group, index, data);
        } catch (e) {
          h.log.error(`stream group ${h.group}: seed snapshot failed: ${(e as Error).message}`);
        }
        if (at < index) {
          this.timer = h.clock.setTimer(() => {
            this.timer = null;
            this.run();
          }, 100);
          return;
        }
        this.finished = true;
        const st = h.store.state();
        h.log.info(`stream group ${h.group}: seeded with the stream's ${st.msgs} messages (sequences ${st.firstSeq}..${st.lastSeq})`);
        h.done();
      });
    }, 0);
  }

  stop(): void {
    if (this.timer !== null) this.h.clock.clearTimer(this.timer);
    this.timer = null;
  }
}
