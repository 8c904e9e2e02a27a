// Appends and snapshots share each route fairly between a server's Raft groups (CLUSTERING.md
// §3.6): up to TURN_BYTES_PER_PEER go to a peer per event-loop turn as they come; past that,
// or while the route to it already holds MAX_PEER_BACKLOG bytes (a link slower than the
// appends), they wait here per group, in order, and later turns take one frame from each
// waiting group in turn. Votes, answers and heartbeats never come here: they never queue
// behind appends in this server's buffers.
import type { Clock, TimerHandle } from "../runtime/clock.js";
import type { Scheduler } from "../runtime/sched.js";

/** The part of RaftHost's transport this needs. */
export interface BulkTransport {
  send(peer: string, frame: Uint8Array): void;
  /** Bytes waiting to leave for peer; optional. */
  backlog?(peer: string): number;
}

/** Bytes of appends and snapshots a peer gets per event-loop turn before the rest waits,
 *  shared round-robin between groups (RaftHost.sendBulk). */
const TURN_BYTES_PER_PEER = 4 * 1024 * 1024;

/** Past this many bytes waiting on the route to a peer (a link slower than the appends),
 *  appends and snapshots for it wait here, shared by groups in turn, instead of piling up in
 *  the route's buffer where heartbeats and votes would queue behind them. */
const MAX_PEER_BACKLOG = 8 * 1024 * 1024;
/** How soon a peer whose route is over MAX_PEER_BACKLOG is looked at again. */
const BACKLOG_RETRY_MS = 5;

export class RouteShare {
  /** Frames waiting for a later turn: peer -> group -> frames. */
  private readonly bulk = new Map<string, Map<string, Uint8Array[]>>();
  /** Bytes of appends and snapshots sent to each peer in this turn. */
  private readonly turnBytes = new Map<string, number>();
  private turnScheduled = false;
  private backlogTimer: TimerHandle | null = null;
  private closed = false;
  private readonly turnBound = (): void => this.newTurn();

  constructor(
    private readonly transport: BulkTransport,
    private readonly sched: Scheduler,
    private readonly clock: Clock,
    private readonly stats: { bulkDeferred: number },
  ) {}

  /** The route to peer closed: what waited for it is stale once it is back. */
  dropPeer(peer: string): void {
    this.bulk.delete(peer);
  }

  close(): void {
    this.closed = true;
    if (this.backlogTimer !== null) this.clock.clearTimer(this.backlogTimer);
    this.backlogTimer = null;
  }

  /**
   * Appends and snapshots share each route fairly between groups: up to TURN_BYTES_PER_PEER
   * go to a peer in one turn as they come; past that they wait, per group in order, and the
   * next turns take one frame from each waiting group in turn. Everything else (votes,
   * answers, heartbeats) never waits behind them.
   */
  send(peer: string, group: string, frame: Uint8Array): void {
    const q = this.bulk.get(peer);
    const used = this.turnBytes.get(peer) ?? 0;
    if (q === undefined && used < TURN_BYTES_PER_PEER && this.backlogOk(peer)) {
      this.turnBytes.set(peer, used + frame.length);
      this.scheduleTurn();
      this.transport.send(peer, frame);
      return;
    }
    let pq = q;
    if (pq === undefined) this.bulk.set(peer, (pq = new Map()));
    let gq = pq.get(group);
    if (gq === undefined) pq.set(group, (gq = []));
    gq.push(frame);
    this.stats.bulkDeferred++;
    this.scheduleTurn();
  }

  private scheduleTurn(): void {
    if (this.turnScheduled) return;
    this.turnScheduled = true;
    this.sched.nextTurn(this.turnBound);
  }

  private backlogOk(peer: string): boolean {
    const b = this.transport.backlog;
    return b === undefined || b(peer) < MAX_PEER_BACKLOG;
  }

  /** A new turn: every peer's budget again, and what waited goes out round-robin by group
   *  (a peer whose route is over MAX_PEER_BACKLOG is looked at again a little later). */
  private newTurn(): void {
    this.turnScheduled = false;
    this.turnBytes.clear();
    if (this.closed) return;
    let blocked = false;
    for (const [peer, pq] of this.bulk) {
      if (!this.backlogOk(peer)) {
        blocked = true;
        continue;
      }
      let used = 0;
      while (pq.size > 0 && used < TURN_BYTES_PER_PEER) {
        for (const [group, gq] of pq) {
          const f = gq.shift()!;
          used += f.length;
          this.transport.send(peer, f);
          if (gq.length === 0) pq.delete(group);
          if (used >= TURN_BYTES_PER_PEER) break;
        }
      }
      this.turnBytes.set(peer, used);
      if (pq.size === 0) this.bulk.delete(peer);
    }
    if (this.turnBytes.size > 0 || (this.bulk.size > 0 && !blocked)) this.scheduleTurn();
    else if (this.bulk.size > 0 && this.backlogTimer === null) {
      // Only peers with a full route wait: look again once some of it has drained.
      this.backlogTimer = this.clock.setTimer(() => {
        this.backlogTimer = null;
        this.scheduleTurn();
      }, BACKLOG_RETRY_MS);
    }
  }
}
