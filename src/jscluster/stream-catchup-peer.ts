// The catch-up conversation of one replica (the wire format is stream-catchup.ts). A replica
// that installed a state-only snapshot its store does not reach asks a peer for the messages
// past its last sequence, the leader first and then each other peer in turn, retrying every
// CATCHUP_RETRY_MS, in windows of about `windowBytes`; a replica whose store is exactly its
// applied state answers others' requests. A memory store that lost its messages in a restart
// answers "lost too" (CU_LOST) while it is catching up itself: when every replica has, nobody
// holds the messages and the group resets (StreamGroup.resetLost).

import type { RaftHost } from "../raft/host.js";
import type { Clock, TimerHandle } from "../runtime/clock.js";
import type { Logger } from "../runtime/log.js";
import type { StreamStore } from "../storage/types.js";
import {
  buildCatchup,
  CatchupAssembler,
  chunkReqId,
  CU_CHUNK,
  CU_LOST,
  CU_REQUEST,
  decodeCatchupLost,
  decodeCatchupRequest,
  encodeCatchupLost,
  encodeCatchupRequest,
  installCatchup,
  type LostState,
} from "./stream-catchup.js";

const CATCHUP_RETRY_MS = 500;
/** Warn every this many unanswered requests. */
const CATCHUP_WARN_ATTEMPTS = 20;
/** A replica far behind reads the missing messages in windows of about this many bytes. */
export const DEFAULT_CATCHUP_WINDOW = 8 * 1024 * 1024;

export interface CatchupHost {
  readonly host: RaftHost;
  readonly clock: Clock;
  readonly log: Logger;
  readonly group: string;
  readonly self: string;
  readonly store: StreamStore;
  readonly windowBytes: number;
  closed(): boolean;
  /** The current leader ("" when none is known). */
  leader(): string;
  /** The other servers that may hold the stream. */
  others(): string[];
  /** This replica's applied position when its store is exactly its applied state (it can
   *  answer requests), else null. */
  servable(): { appliedIndex: number; applySeq: number } | null;
  /** The last window is stored: the store is at the answering peer's state at `index`. */
  installed(index: number, applySeq: number): void;
  /** Every replica lost what its snapshot describes: reset at `at` (the latest of theirs). */
  resetLost(at: LostState): void;
}

interface Active {
  reqId: number;
  minIndex: number;
  attempt: number;
  asm: CatchupAssembler | null;
  timer: TimerHandle | null;
  /** This replica's memory store came back empty under a snapshot that says it held these. */
  lost: LostState | null;
  /** Peers that answered "lost too", with their snapshot's position. */
  lostFrom: Map<string, LostState>;
}

export class CatchupPeer {
  private cu: Active | null = null;
  private nextReqId = 1;
  /** Catch-ups completed / answered, windows received that were not the last (tests). */
  done = 0;
  served = 0;
  windows = 0;

  constructor(private readonly h: CatchupHost) {}

  get active(): boolean {
    return this.cu !== null;
  }

  /** The index the running catch-up must reach (null: none running). */
  get minIndex(): number | null {
    return this.cu?.minIndex ?? null;
  }

  start(minIndex: number, lost: LostState | null): void {
    this.stop();
    this.cu = { reqId: 0, minIndex, attempt: 0, asm: null, timer: null, lost, lostFrom: new Map() };
    this.request();
  }

  stop(): void {
    if (this.cu?.timer != null) this.h.clock.clearTimer(this.cu.timer);
    this.cu = null;
  }

  onFrame(from: string, data: Buffer): void {
    const h = this.h;
    if (h.closed() || data.length === 0) return;
    const cu = this.cu;
    if (data[0] === CU_REQUEST) {
      const req = decodeCatchupRequest(data);
      if (req === null) return;
      if (cu !== null) {
        if (cu.lost !== null) h.host.sendApp(h.group, from, encodeCatchupLost(cu.lost));
        return;
      }
      // Only a replica whose store is exactly its applied state answers.
      const at = h.servable();
      if (at === null || at.appliedIndex < req.minIndex || req.storeLast > h.store.state().lastSeq) return;
      for (const f of buildCatchup(req, h.store, at.appliedIndex, at.applySeq)) h.host.sendApp(h.group, from, f);
      this.served++;
      return;
    }
    if (data[0] === CU_LOST) {
      const lost = decodeCatchupLost(data);
      if (cu === null || cu.lost === null || lost === null) return;
      cu.lostFrom.set(from, lost);
      const others = h.others();
      if (others.every((p) => cu.lostFrom.has(p))) {
        // Every replica resets to the same point: the latest of their snapshots.
        let at = cu.lost;
        for (const p of others) {
          const s = cu.lostFrom.get(p)!;
          if (s.index > at.index) at = s;
        }
        this.stop();
        return h.resetLost(at);
      }
      this.requestNow(cu);
      return;
    }
    if (data[0] === CU_CHUNK) {
      if (cu === null || chunkReqId(data) !== cu.reqId) return;
      cu.asm ??= new CatchupAssembler(cu.reqId);
      const body = cu.asm.push(data);
      if (body !== null) this.install(cu, body);
    }
  }

  private install(cu: Active, body: Buffer): void {
    let r;
    try {
      r = installCatchup(this.h.store, body);
    } catch (e) {
      this.h.log.error(`stream group ${this.h.group}: catch-up failed: ${(e as Error).message}`);
      return; // the retry timer asks again
    }
    if (r.more) {
      // One window stored: ask for the next at once, from the new last sequence.
      cu.attempt = 0;
      this.windows++;
      this.requestNow(cu);
      return;
    }
    this.stop();
    this.done++;
    this.h.installed(r.index, r.applySeq);
  }

  private requestNow(cu: Active): void {
    if (cu.timer !== null) this.h.clock.clearTimer(cu.timer);
    cu.timer = null;
    this.request();
  }

  private request(): void {
    const h = this.h;
    const cu = this.cu;
    if (cu === null || h.closed()) return;
    cu.reqId = this.nextReqId++;
    cu.asm = null;
    const others = h.others();
    // The leader first, then each other peer in turn: any caught-up replica can answer.
    const leader = h.leader() !== h.self ? h.leader() : "";
    const peer = leader !== "" && cu.attempt % 2 === 0 ? leader : others[cu.attempt % others.length];
    cu.attempt++;
    if (cu.attempt % CATCHUP_WARN_ATTEMPTS === 0) {
      // Every replica may have lost what the snapshot describes (a memory stream whose servers
      // all restarted): this waits for one that holds it, and says so.
      h.log.warn(`stream group ${h.group}: catching up to index ${cu.minIndex}: no replica has answered after ${cu.attempt} requests`);
    }
    if (peer !== undefined) h.host.sendApp(h.group, peer, encodeCatchupRequest({ reqId: cu.reqId, storeLast: h.store.state().lastSeq, minIndex: cu.minIndex, window: h.windowBytes }));
    cu.timer = h.clock.setTimer(() => {
      if (this.cu === cu) this.request();
    }, CATCHUP_RETRY_MS);
  }
}
