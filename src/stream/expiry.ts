// max_age and per-message TTL: one timer per stream aimed at the store's next due message,
// and subject delete markers (ADR-43) written when the last message on a subject ages out.

import type { Clock, TimerHandle } from "../runtime/clock.js";
import type { StreamStore } from "../storage/types.js";
import type { StreamConfig } from "../contracts/wire.js";
import { encodeHeaders } from "../protocol/headers.js";
import { NS_PER_MS } from "./config.js";
import { HDR_MARKER_REASON, HDR_TTL, isDeleteMarker } from "./headers.js";

/** Shortest wait of the expiry timer. */
const MIN_EXPIRY_MS = 50;

/** What expiry needs from its stream. */
export interface ExpiryHost {
  readonly store: StreamStore;
  readonly cfg: StreamConfig;
  isClosed(): boolean;
  /** store.expire() removed `removed` messages (limit removals may have happened too). */
  expired(removed: number): void;
  /** Store a delete marker for subject (through the stream's proposer). */
  storeMarker(subject: string, hdr: Buffer, ttlSec: number, tsNs: number): void;
}

export class Expiry {
  private timer: TimerHandle | null = null;
  /** True while store.expire() runs: removals then may call for markers. */
  private expiring = false;
  private readonly markerSubjects: string[] = [];
  /** Sequences holding a delete marker or a KV purge (only while subject delete markers are on):
   *  when one of those ages out, no new marker replaces it, or markers would renew forever. */
  private readonly markerSeqs = new Set<number>();

  constructor(
    private readonly host: ExpiryHost,
    private readonly clock: Clock,
  ) {}

  /** (Re)start the timer for the current config and store. */
  arm(): void {
    this.stop();
    if (this.host.isClosed()) return;
    const cfg = this.host.cfg;
    if (cfg.max_age <= 0 && !cfg.allow_msg_ttl) return;
    // One timer per stream, on a coarse interval (a tenth of max_age, 50 ms to 1 s), aimed
    // at the store's next due message when that falls before the next tick or just after
    // it: nats-server removes a message when its age or TTL is reached (nats.js checks a
    // 4 s TTL within 200 ms). Never sooner than MIN_EXPIRY_MS, so a stream expiring all the
    // time wakes as often as before (nats-server: 250 ms). A new message never needs an
    // earlier wakeup: TTLs are whole seconds, max_age grows with the stream, the tick is <= 1 s.
    const ageMs = cfg.max_age > 0 ? cfg.max_age / NS_PER_MS : 1000;
    let ms = Math.max(MIN_EXPIRY_MS, Math.min(1000, Math.floor(ageMs / 10)));
    const next = this.host.store.nextExpiryNs();
    if (next > 0) {
      const untilMs = Math.ceil((next - this.clock.nowNs()) / NS_PER_MS);
      if (untilMs < ms + MIN_EXPIRY_MS) ms = Math.max(MIN_EXPIRY_MS, untilMs);
    }
    this.timer = this.clock.setTimer(this.onTick, ms);
  }

  stop(): void {
    if (this.timer !== null) this.clock.clearTimer(this.timer);
    this.timer = null;
  }

  private readonly onTick = (): void => {
    this.timer = null;
    if (this.host.isClosed()) return;
    this.run();
    this.arm();
  };

  run(): void {
    this.expiring = true;
    let removed = 0;
    try {
      removed = this.host.store.expire(this.clock.nowNs());
    } finally {
      this.expiring = false;
    }
    this.host.expired(removed);
    if (this.markerSubjects.length > 0) this.writeMarkers();
  }

  /** Store callback (through the stream): seq left because of a limit, an age or a TTL. */
  onLimitRemove(seq: number, subject: string): void {
    const wasMarker = this.markerSeqs.size > 0 && this.markerSeqs.delete(seq);
    if (this.expiring && this.host.cfg.subject_delete_marker_ttl > 0 && !wasMarker) this.markerSubjects.push(subject);
  }

  /** A message was stored at seq: remember it when it is a marker. */
  onStored(seq: number, hdr: Buffer | null): void {
    if (hdr !== null && this.host.cfg.subject_delete_marker_ttl > 0 && isDeleteMarker(hdr)) this.markerSeqs.add(seq);
  }

  /** Everything below firstSeq is gone. */
  onPurged(firstSeq: number): void {
    for (const seq of this.markerSeqs) if (seq < firstSeq) this.markerSeqs.delete(seq);
  }

  /** Subject delete markers (ADR-43): the last message on a subject aged out. */
  private writeMarkers(): void {
    const subjects = this.markerSubjects.splice(0);
    const ttl = Math.floor(this.host.cfg.subject_delete_marker_ttl / 1e9);
    for (const s of new Set(subjects)) {
      if (this.host.store.loadLastMsg(s) !== null) continue;
      const hdr = encodeHeaders([
        [HDR_MARKER_REASON, "MaxAge"],
        [HDR_TTL, String(ttl)],
      ]);
      this.host.storeMarker(s, hdr, ttl, this.clock.nowNs());
    }
  }
}
