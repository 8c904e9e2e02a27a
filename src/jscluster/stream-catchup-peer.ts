// The catch-up conversation of one replica (the wire format is stream-catchup.ts). A replica
// that installed a state-only snapshot its store does not reach asks a peer for the messages
// past its last sequence, the leader first and then each other peer in turn; it asks again
// (from where its store got to) when an answer stalls: CATCHUP_RETRY_MS before the first
// chunk, CATCHUP_STALL_MS between chunks. It acknowledges each chunk it stored, which gives
// the responder credit for another (`windowBytes` of chunks in flight at most). A replica
// whose store is exactly its applied state answers others' requests, a chunk per event (an
// acknowledgement, or a timer turn for the first few), so a catch-up shares its event loop
// with the publishes it takes. A memory store that lost its messages in a restart answers
// "lost too" (CU_LOST) while it is catching up itself: when every replica has, nobody holds
// the messages and the group resets (StreamGroup.resetLost).

import { randomInt } from "node:crypto";
import type { RaftHost } from "../raft/host.js";
import type { Clock, TimerHandle } from "../runtime/clock.js";
import type { Logger } from "../runtime/log.js";
import type { StreamStore } from "../storage/types.js";
import {
  CatchupReceiver,
  CatchupSender,
  chunkBytesFor,
  CU_ACK,
  CU_DATA,
  CU_LOST,
  CU_OPEN,
  dataReqId,
  decodeCatchupAck,
  decodeCatchupLost,
  decodeCatchupOpen,
  encodeCatchupAck,
  encodeCatchupLost,
  encodeCatchupOpen,
  type LostState,
} from "./stream-catchup.js";

/** No answer to a request in this long: ask again (the next peer). */
const CATCHUP_RETRY_MS = 500;
/** An answer that started and then gave nothing for this long (or has had a chunk missing
 *  for CATCHUP_RETRY_MS): ask again, from where the store got to. */
const CATCHUP_STALL_MS = 1000;
/** A responder forgets a catch-up not acknowledged for this long. */
const SENDER_IDLE_MS = 10_000;
/** Chunks a responder builds in one event at most (the rest in later turns). */
const CHUNKS_PER_TURN = 2;
/** Warn every this many unanswered requests. */
const CATCHUP_WARN_ATTEMPTS = 20;
/** Bytes of catch-up chunks a responder may have unacknowledged (the credit): enough to keep
 *  the asker busy, little enough that the route's socket takes it without queueing much. */
export const DEFAULT_CATCHUP_WINDOW = 4 * 1024 * 1024;

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
  /** The final frame is applied: the store is at the answering peer's state at `index`. */
  installed(index: number, applySeq: number): void;
  /** Every replica lost what its snapshot describes: reset at `at` (the latest of theirs). */
  resetLost(at: LostState): void;
}

interface Active {
  reqId: number;
  minIndex: number;
  attempt: number;
  rx: CatchupReceiver | null;
  timer: TimerHandle | null;
  /** The timer runs for a missing chunk (CATCHUP_RETRY_MS). */
  gap: boolean;
  /** This replica's memory store came back empty under a snapshot that says it held these. */
  lost: LostState | null;
  /** Peers that answered "lost too", with their snapshot's position. */
  lostFrom: Map<string, LostState>;
}

/** A catch-up this replica answers. */
interface Serving {
  peer: string;
  tx: CatchupSender;
  /** Chunks the asker has stored. */
  acked: number;
  credit: number;
  lastMs: number;
  timer: TimerHandle | null;
}

export class CatchupPeer {
  private cu: Active | null = null;
  /** Request ids start at a random point: a group closed and opened again (or a restarted
   *  server) must not take the DATA frames still on their way from an earlier catch-up's
   *  responder for its own (the same id and chunk numbers, from another starting sequence:
   *  a chunk stored out of place leaves a run of sequences deleted). */
  private nextReqId = randomInt(1, 0x7fffffff);
  private readonly serving = new Map<string, Serving>();
  private readonly out: Buffer[] = [];
  /** Catch-ups completed / answered, data chunks received (tests, stats). */
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
    // A replica catching up has nothing exact to give.
    this.stopServing();
    this.cu = { reqId: 0, minIndex, attempt: 0, rx: null, timer: null, gap: false, lost, lostFrom: new Map() };
    this.request();
  }

  stop(): void {
    if (this.cu?.timer != null) this.h.clock.clearTimer(this.cu.timer);
    this.cu = null;
  }

  /** Stop answering every catch-up (the group closes, or this replica starts one). */
  stopServing(): void {
    for (const s of this.serving.values()) if (s.timer !== null) this.h.clock.clearTimer(s.timer);
    this.serving.clear();
  }

  onFrame(from: string, data: Buffer): void {
    const h = this.h;
    if (h.closed() || data.length === 0) return;
    switch (data.readUInt8(0)) {
      case CU_OPEN:
        return this.onOpen(from, data);
      case CU_ACK: {
        const a = decodeCatchupAck(data);
        const s = this.serving.get(from);
        if (a === null || s === undefined || s.tx.req.reqId !== a.reqId) return;
        if (a.chunks > s.acked) s.acked = a.chunks;
        s.lastMs = h.clock.monoMs();
        if (s.tx.done && s.acked >= s.tx.chunks) return this.forget(s);
        return this.schedulePump(s);
      }
      case CU_DATA:
        return this.onData(from, data);
      case CU_LOST:
        return this.onLost(from, data);
      default:
        return;
    }
  }

  // ---------- answering ----------

  private onOpen(from: string, data: Buffer): void {
    const h = this.h;
    const req = decodeCatchupOpen(data);
    if (req === null) return;
    const cu = this.cu;
    if (cu !== null) {
      if (cu.lost !== null) h.host.sendApp(h.group, from, encodeCatchupLost(cu.lost));
      return;
    }
    // Only a replica whose store is exactly its applied state answers.
    const at = h.servable();
    if (at === null || at.appliedIndex < req.minIndex || req.storeLast > h.store.state().lastSeq) return;
    const now = h.clock.monoMs();
    for (const s of [...this.serving.values()]) if (s.peer === from || now - s.lastMs > SENDER_IDLE_MS) this.forget(s);
    const chunk = chunkBytesFor(req.creditBytes);
    const s: Serving = { peer: from, tx: new CatchupSender(req, h.store, chunk, h.host.appHeaderBytes(h.group), CHUNKS_PER_TURN), acked: 0, credit: Math.max(2, Math.floor(req.creditBytes / chunk)), lastMs: now, timer: null };
    this.serving.set(from, s);
    this.schedulePump(s);
  }

  private forget(s: Serving): void {
    if (s.timer !== null) this.h.clock.clearTimer(s.timer);
    if (this.serving.get(s.peer) === s) this.serving.delete(s.peer);
  }

  /** Pump in a timer turn of its own: the acknowledgements that came in one job make one
   *  pump, and the chunk buffers it reuses left with the previous job's transport flush. */
  private schedulePump(s: Serving): void {
    if (s.timer !== null) return;
    s.timer = this.h.clock.setTimer(() => {
      s.timer = null;
      this.pump(s);
    }, 0);
  }

  /** Send chunks while the asker has credit: CHUNKS_PER_TURN now, the rest a turn later. */
  private pump(s: Serving): void {
    const h = this.h;
    if (this.serving.get(s.peer) !== s) return;
    const at = h.closed() || this.cu !== null ? null : h.servable();
    if (at === null) return this.forget(s);
    const out = this.out;
    s.tx.reuse();
    for (let k = 0; k < CHUNKS_PER_TURN && !s.tx.done && s.tx.chunks - s.acked < s.credit; k++) {
      s.tx.build(at.appliedIndex, at.applySeq, out);
      for (const f of out) {
        h.host.writeAppHeader(h.group, f);
        h.host.sendAppFrame(s.peer, f);
      }
      out.length = 0;
      if (s.tx.done) this.served++;
    }
    if (!s.tx.done && s.tx.chunks - s.acked < s.credit) this.schedulePump(s);
  }

  // ---------- asking ----------

  private onLost(from: string, data: Buffer): void {
    const h = this.h;
    const cu = this.cu;
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
  }

  private onData(from: string, data: Buffer): void {
    const h = this.h;
    const cu = this.cu;
    if (cu === null || cu.rx === null || dataReqId(data) !== cu.reqId) return;
    const rx = cu.rx;
    const before = rx.applied;
    const beforeData = rx.dataChunks;
    let r;
    try {
      r = rx.push(data);
    } catch (e) {
      h.log.error(`stream group ${h.group}: catch-up failed: ${(e as Error).message}`);
      cu.rx = null; // the retry timer asks again, from where the store got to
      return;
    }
    if (rx.applied === before) {
      // Kept for later: an earlier chunk is missing (dropped on a route that closed).
      if (rx.waiting && !cu.gap) this.rearm(cu, CATCHUP_RETRY_MS, true);
      return;
    }
    this.windows += rx.dataChunks - beforeData;
    h.host.sendApp(h.group, from, encodeCatchupAck(cu.reqId, rx.applied));
    if (r !== null) {
      this.stop();
      this.done++;
      h.log.info(`stream group ${h.group}: caught up from ${from} to index ${r.index} (last sequence ${r.last}, ${this.windows} chunks so far)`);
      h.installed(r.index, r.applySeq);
      return;
    }
    // Progress: the stall bound starts again.
    cu.attempt = 0;
    this.rearm(cu, rx.waiting ? CATCHUP_RETRY_MS : CATCHUP_STALL_MS, rx.waiting);
  }

  private rearm(cu: Active, ms: number, gap: boolean): void {
    if (cu.timer !== null) this.h.clock.clearTimer(cu.timer);
    cu.gap = gap;
    cu.timer = this.h.clock.setTimer(() => {
      if (this.cu === cu) this.retry(cu);
    }, ms);
  }

  private requestNow(cu: Active): void {
    if (cu.timer !== null) this.h.clock.clearTimer(cu.timer);
    cu.timer = null;
    this.request();
  }

  private retry(cu: Active): void {
    cu.timer = null;
    this.request();
  }

  private request(): void {
    const h = this.h;
    const cu = this.cu;
    if (cu === null || h.closed()) return;
    cu.reqId = this.nextReqId++;
    cu.rx = new CatchupReceiver(cu.reqId, h.store);
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
    if (peer !== undefined) h.host.sendApp(h.group, peer, encodeCatchupOpen({ reqId: cu.reqId, storeLast: h.store.state().lastSeq, minIndex: cu.minIndex, creditBytes: h.windowBytes }));
    this.rearm(cu, CATCHUP_RETRY_MS, false);
  }
}
