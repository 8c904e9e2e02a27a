// tsnats's own server-to-server channel over the routes of cluster.ts: Raft (and later other
// replication traffic) sends opaque binary frames to a peer server by name. Frames queued in
// one job of the event loop go out together, as one routed message per peer
// (`RMSG $SYS $TSR.B <size>`), each frame prefixed by its 32-bit length. Only peers whose
// route INFO says `tsnats_peer` get them, so nats-server peers in a mixed cluster never see
// these subjects. Delivery is best effort, as a route is: a frame for a peer with no route is
// dropped and counted (Raft retries).

import type { Scheduler } from "../runtime/sched.js";
import type { PeerListener } from "./cluster.js";

/** The subject of a batch of length-prefixed frames. */
export const PEER_BATCH_SUBJECT = "$TSR.B";
/** A batch is cut at this size; a bigger single frame goes alone. */
const MAX_BATCH_BYTES = 1024 * 1024;
/** A frame larger than this is refused on receipt (the route itself allows 64 MiB). */
export const MAX_PEER_FRAME_BYTES = 32 * 1024 * 1024;

/** What the transport needs of the cluster. */
export interface PeerRoutes {
  peerNames(): string[];
  sendPeer(name: string, subject: string, payload: Buffer): boolean;
  /** sendPeer of the batch [u32 BE length][frame]... of frames[from, to) (size bytes), written
   *  without an intermediate buffer; optional. */
  sendPeerFrames?(name: string, subject: string, frames: readonly Uint8Array[], from: number, to: number, size: number): boolean;
  setPeerListener(l: PeerListener | null): void;
  /** Bytes waiting to leave on the route to name; optional. */
  peerBacklog?(name: string): number;
  /** Route peers connected now without JetStream. */
  nonJetStreamPeers?(): string[];
}

/** The receiving side: frames are views valid only during the call. */
export interface PeerHandler {
  frame(from: string, frame: Buffer): void;
  peerUp?(name: string): void;
  peerDown?(name: string): void;
}

export interface PeerTransportStats {
  framesOut: number;
  batchesOut: number;
  framesIn: number;
  batchesIn: number;
  /** Frames for a peer without a route, dropped. */
  dropped: number;
  /** Received batches that did not parse (the rest of such a batch is dropped). */
  malformed: number;
}

interface Outbox {
  frames: Uint8Array[];
  bytes: number;
}

export class RoutePeerTransport implements PeerListener {
  readonly stats: PeerTransportStats = { framesOut: 0, batchesOut: 0, framesIn: 0, batchesIn: 0, dropped: 0, malformed: 0 };
  private readonly out = new Map<string, Outbox>();
  private scheduled = false;
  private readonly flushBound = (): void => this.flush();

  constructor(
    private readonly routes: PeerRoutes,
    private readonly sched: Scheduler,
    private readonly handler: PeerHandler,
  ) {
    routes.setPeerListener(this);
  }

  close(): void {
    this.routes.setPeerListener(null);
    this.out.clear();
  }

  /** Peers reachable now (server names). */
  peers(): string[] {
    return this.routes.peerNames();
  }

  /** Route peers connected now that run without JetStream. */
  nonJetStreamPeers(): string[] {
    return this.routes.nonJetStreamPeers?.() ?? [];
  }

  /** Bytes queued for peer and not yet on the wire: this job's frames and the route's own
   *  backlog (RaftHost holds back appends while a slow link has much waiting). */
  backlog(peer: string): number {
    return (this.out.get(peer)?.bytes ?? 0) + (this.routes.peerBacklog?.(peer) ?? 0);
  }

  /** Queue frame for peer; it leaves with the others queued in this job. */
  send(peer: string, frame: Uint8Array): void {
    let box = this.out.get(peer);
    if (box === undefined) {
      box = { frames: [], bytes: 0 };
      this.out.set(peer, box);
    }
    box.frames.push(frame);
    box.bytes += 4 + frame.length;
    if (!this.scheduled) {
      this.scheduled = true;
      this.sched.microtask(this.flushBound);
    }
  }

  /** Write every queued frame now: one routed message per peer (more past MAX_BATCH_BYTES). */
  flush(): void {
    this.scheduled = false;
    for (const [peer, box] of this.out) {
      if (box.frames.length === 0) continue;
      const frames = box.frames;
      box.frames = [];
      box.bytes = 0;
      let i = 0;
      while (i < frames.length) {
        let size = 0;
        let j = i;
        do size += 4 + frames[j++]!.length;
        while (j < frames.length && size + 4 + frames[j]!.length <= MAX_BATCH_BYTES);
        if (this.routes.sendPeerFrames !== undefined) {
          if (this.routes.sendPeerFrames(peer, PEER_BATCH_SUBJECT, frames, i, j, size)) {
            this.stats.batchesOut++;
            this.stats.framesOut += j - i;
          } else this.stats.dropped += j - i;
          i = j;
          continue;
        }
        const buf = Buffer.allocUnsafe(size);
        let p = 0;
        for (let k = i; k < j; k++) {
          const f = frames[k]!;
          buf.writeUInt32BE(f.length, p);
          buf.set(f, p + 4);
          p += 4 + f.length;
        }
        if (this.routes.sendPeer(peer, PEER_BATCH_SUBJECT, buf)) {
          this.stats.batchesOut++;
          this.stats.framesOut += j - i;
        } else this.stats.dropped += j - i;
        i = j;
      }
    }
  }

  // ---- PeerListener (from the cluster) ----

  frame(from: string, subject: string, payload: Buffer): void {
    if (subject !== PEER_BATCH_SUBJECT) {
      this.stats.malformed++;
      return;
    }
    this.stats.batchesIn++;
    let p = 0;
    while (p < payload.length) {
      if (payload.length - p < 4) {
        this.stats.malformed++;
        return;
      }
      const n = payload.readUInt32BE(p);
      p += 4;
      if (n > MAX_PEER_FRAME_BYTES || n > payload.length - p) {
        this.stats.malformed++;
        return;
      }
      this.stats.framesIn++;
      this.handler.frame(from, payload.subarray(p, p + n));
      p += n;
    }
  }

  peerUp(name: string): void {
    this.handler.peerUp?.(name);
  }

  peerDown(name: string): void {
    // Frames still queued for it would only be dropped at flush.
    this.out.delete(name);
    this.handler.peerDown?.(name);
  }
}
