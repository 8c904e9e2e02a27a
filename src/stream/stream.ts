// One stream: the publish path (checks in nats-server's order, dedup, store, group-committed
// PubAcks), limits and expiry, retention on acks, purge/delete, republish, and the seam to
// consumers (StreamHandle). Mirrors and sources live in sourcing.ts.

import { join } from "node:path";
import type { Bus, InternalSubscription } from "../contracts/bus.js";
import type { Clock, TimerHandle } from "../runtime/clock.js";
import type { Logger } from "../runtime/log.js";
import type { ConsumerHook, StreamHandle } from "../contracts/jetstream.js";
import type { StreamStore, StoreLimits } from "../storage/types.js";
import { encodeHeaders, parseHeaders, appendHeaders, getHeader } from "../protocol/headers.js";
import { fileStoreMsgSize, memStoreMsgSize } from "../storage/index.js";
import { jsErr, JsApiError, type ApiError, type JsErrName } from "../contracts/errors.js";
import type { StreamConfig, StreamInfoWire, StreamStateWire, PubAckWire } from "../contracts/wire.js";
import { configToWire, NS_PER_MS } from "./config.js";
import { DedupWindow } from "./dedup.js";
import { SubjectTransform } from "./transform.js";
import { parseMsgTtlSec, rfc3339Ns } from "./time.js";
import { subjectMatches } from "../subjects/subject.js";

export const HDR_MSG_ID = "Nats-Msg-Id";
export const HDR_EXPECTED_STREAM = "Nats-Expected-Stream";
export const HDR_EXPECTED_LAST_SEQ = "Nats-Expected-Last-Sequence";
export const HDR_EXPECTED_LAST_SUBJ_SEQ = "Nats-Expected-Last-Subject-Sequence";
export const HDR_EXPECTED_LAST_SUBJ_SEQ_SUBJ = "Nats-Expected-Last-Subject-Sequence-Subject";
export const HDR_EXPECTED_LAST_MSG_ID = "Nats-Expected-Last-Msg-Id";
export const HDR_ROLLUP = "Nats-Rollup";
export const HDR_TTL = "Nats-TTL";
export const HDR_STREAM_SOURCE = "Nats-Stream-Source";
export const HDR_MARKER_REASON = "Nats-Marker-Reason";
/** Shortest wait of the expiry timer. */
const MIN_EXPIRY_MS = 50;

const MAX_HDR_BYTES = 65535;
/** Decimal digits of the largest sequence (2^53). */
const MAX_SEQ_DIGITS = 16;
const ACK_DUP_TAIL = Buffer.from(',"duplicate": true}');
const ACK_SPLIT = Number(process.env["TSNATS_ACK_SPLIT"] ?? 1e9);

/** What a stream needs from the service around it. */
export interface StreamEnv {
  bus: Bus;
  clock: Clock;
  log: Logger;
  domain: string;
  serverName: string;
  /** Account limits: would storing `bytes` more exceed them? */
  wouldExceedAccount(storage: "file" | "memory", bytes: number): boolean;
  /** Account-wide consumer limit. */
  canAddConsumer(): boolean;
  /** The file store's sync_interval (0 or absent: fsync before every PubAck). */
  syncIntervalMs?: number;
  /** The store stopped after a failed write or fsync (a full disk): reopen the stream. */
  storeFailed?(st: Stream, err: Error): void;
}

/** Pending PubAcks answered together when one store.sync() completes (group commit). */
class AckBatch {
  replies: string[] = [];
  seqs: number[] = [];
  dups: boolean[] = [];
  /** The last sequence stored before this batch's sync was asked for (0: none to make visible). */
  coverSeq = 0;
  clear(): void {
    this.replies.length = 0;
    this.seqs.length = 0;
    this.dups.length = 0;
    this.coverSeq = 0;
  }
}

interface ParsedPubHeaders {
  msgId: string;
  expStream: string;
  expLastSeq: number; // -1 = absent
  expLastSubjSeq: number; // -1 = absent
  expLastSubjSeqSubj: string;
  expLastMsgId: string | null;
  rollup: string;
  ttl: string | null;
  hasSource: boolean;
}

/** nats-server's rule: a message is a delete marker when it names a marker reason or is a KV purge. */
function isDeleteMarker(hdr: Buffer): boolean {
  const reason = getHeader(hdr, HDR_MARKER_REASON);
  if (reason !== undefined && reason !== "") return true;
  return getHeader(hdr, "KV-Operation") === "PURGE";
}

function intHeader(v: string): number {
  if (!/^\d+$/.test(v)) return -2;
  return Number(v);
}

export class Stream implements StreamHandle {
  readonly name: string;
  readonly store: StreamStore;
  cfg: StreamConfig;
  readonly createdNs: number;
  /** Stream directory (file streams) or null. */
  readonly dir: string | null;
  private readonly env: StreamEnv;
  private subs: InternalSubscription[] = [];
  private readonly consumerMap = new Map<string, ConsumerHook>();
  private readonly dedup: DedupWindow;
  private ingestTr: SubjectTransform | null = null;
  private republishTr: SubjectTransform | null = null;
  private lastMsgId = "";
  /** `{"stream":<name>[,"domain":<domain>],"seq":` as UTF-8: the start of every PubAck. */
  private ackPrefixBytes: Buffer = Buffer.alloc(0);

  private current = new AckBatch();
  private readonly inflight: AckBatch[] = [];
  private readonly spare: AckBatch[] = [];
  private flushQueued = false;

  /** The last sequence consumers may deliver. A file stream that fsyncs before its PubAcks
   *  delivers a message only once that fsync completed (after its PubAck), so no consumer sees
   *  a message a crash would lose; memory and sync_interval streams deliver at store. */
  visibleSeq: number;
  private readonly deferVisible: boolean;
  private lastStored = 0;
  private syncAsked = 0;
  /** Stored but not yet visible: consumers hear of these (onStored) when they become visible. */
  private readonly unvSeqs: number[] = [];
  private readonly unvSubjs: string[] = [];
  private unvHead = 0;
  /** Pairs (seq, previous seq on its subject) waiting to be republished once visible. */
  private readonly unvRepub: number[] = [];

  private expiryTimer: TimerHandle | null = null;
  private limitRemoved = false;
  private expiring = false;
  private readonly markerSubjects: string[] = [];
  /** Sequences holding a delete marker or a KV purge (only while subject delete markers are on):
   *  when one of those ages out, no new marker replaces it, or markers would renew forever. */
  private readonly markerSeqs = new Set<number>();
  private readonly storeListeners: (() => void)[] = [];
  private closed = false;
  /** Set when the store stopped (a failed write or fsync): every publish is refused with it,
   *  before the duplicate check (a retried message id must not be called a duplicate of a
   *  message that was never acknowledged), until the service reopens the stream. */
  storeFailure: Error | null = null;

  constructor(cfg: StreamConfig, store: StreamStore, dir: string | null, env: StreamEnv, createdNs: number) {
    this.name = cfg.name;
    this.cfg = cfg;
    this.store = store;
    this.dir = dir;
    this.env = env;
    this.createdNs = createdNs;
    this.dedup = new DedupWindow(cfg.duplicate_window);
    this.visibleSeq = store.state().lastSeq;
    this.deferVisible = cfg.storage === "file" && (env.syncIntervalMs ?? 0) === 0;
    this.applyConfig(cfg);
  }

  // ---------- configuration ----------

  static storeLimits(cfg: StreamConfig): StoreLimits {
    return {
      maxMsgs: cfg.max_msgs,
      // discard new is decided before storing; the store still trims for discard old.
      maxBytes: cfg.max_bytes,
      maxAgeMs: cfg.max_age > 0 ? Math.max(1, Math.floor(cfg.max_age / NS_PER_MS)) : 0,
      maxMsgsPerSubject: cfg.max_msgs_per_subject,
    };
  }

  private applyConfig(cfg: StreamConfig): void {
    this.cfg = cfg;
    this.dedup.windowNs = cfg.duplicate_window;
    this.ingestTr =
      cfg.subject_transform !== null && cfg.subject_transform.dest !== ""
        ? SubjectTransform.create(cfg.subject_transform.src, cfg.subject_transform.dest)
        : null;
    this.republishTr = cfg.republish !== null ? SubjectTransform.create(cfg.republish.src, cfg.republish.dest) : null;
    this.ackPrefixBytes = Buffer.from(
      this.env.domain !== ""
        ? `{"stream":${JSON.stringify(cfg.name)},"domain":${JSON.stringify(this.env.domain)},"seq":`
        : `{"stream":${JSON.stringify(cfg.name)},"seq":`,
    );
  }

  /** Subscribe to the stream's subjects and start the expiry timer. */
  start(): void {
    this.resubscribe();
    this.armExpiry();
  }

  update(cfg: StreamConfig): void {
    this.applyConfig(cfg);
    this.store.setLimits(Stream.storeLimits(cfg));
    this.afterLimitRemovals();
    this.resubscribe();
    this.armExpiry();
  }

  private resubscribe(): void {
    for (const s of this.subs) s.unsubscribe();
    this.subs = [];
    if (this.closed) return;
    // Borrowing: the store copies a message into its own buffers and nothing else here keeps
    // hdr or payload past the call, so a client's publish is not copied once more on the way.
    for (const subj of this.cfg.subjects) this.subs.push(this.env.bus.subscribe(subj, this.onMsg, "", true));
  }

  /** Extra subscriptions (direct get) owned by the service but tied to this stream's life. */
  addSubscription(s: InternalSubscription): void {
    this.subs.push(s);
  }

  // ---------- StreamHandle ----------

  wireConfig(): Record<string, unknown> {
    return configToWire(this.cfg, true);
  }

  retention(): "limits" | "interest" | "workqueue" {
    return this.cfg.retention;
  }

  consumerDir(consumer: string): string | null {
    return this.dir === null ? null : join(this.dir, "obs", consumer);
  }

  addConsumer(c: ConsumerHook): void {
    if (!this.consumerMap.has(c.name)) {
      if (this.cfg.max_consumers > 0 && this.consumerMap.size >= this.cfg.max_consumers) {
        throw new JsApiError(jsErr("JSMaximumConsumersLimitErr"));
      }
      if (!this.env.canAddConsumer()) throw new JsApiError(jsErr("JSMaximumConsumersLimitErr"));
    }
    this.consumerMap.set(c.name, c);
  }

  removeConsumer(name: string): void {
    if (!this.consumerMap.delete(name)) return;
    if (this.cfg.retention === "interest") this.removeUnneeded();
  }

  consumers(): ConsumerHook[] {
    return [...this.consumerMap.values()];
  }

  consumerCount(): number {
    return this.consumerMap.size;
  }

  onAck(seq: number, subject: string): void {
    const r = this.cfg.retention;
    if (r === "limits") return;
    if (r === "workqueue") {
      this.store.removeMsg(seq);
      return;
    }
    for (const c of this.consumerMap.values()) {
      if (c.filterMatches(subject) && c.needsMessage(seq, subject)) return;
    }
    this.store.removeMsg(seq);
  }

  /** Interest retention: drop every message no remaining consumer needs. */
  private removeUnneeded(): void {
    const st = this.store.state();
    let seq = st.firstSeq;
    while (seq > 0 && seq <= st.lastSeq) {
      const m = this.store.loadNextMsg(">", seq);
      if (m === null) break;
      let needed = false;
      for (const c of this.consumerMap.values()) {
        if (c.filterMatches(m.subject) && c.needsMessage(m.seq, m.subject)) {
          needed = true;
          break;
        }
      }
      if (!needed) this.store.removeMsg(m.seq);
      seq = m.seq + 1;
    }
  }

  addStoreListener(fn: () => void): void {
    this.storeListeners.push(fn);
  }

  removeStoreListener(fn: () => void): void {
    const i = this.storeListeners.indexOf(fn);
    if (i >= 0) this.storeListeners.splice(i, 1);
  }

  // ---------- publish path ----------

  private readonly onMsg = (subject: string, reply: string, hdr: Buffer | null, payload: Buffer): void => {
    this.processInbound(subject, reply, hdr, payload);
  };

  private respondErr(reply: string, name: JsErrName, args?: Record<string, string | number>): void {
    this.respondApiErr(reply, jsErr(name, args));
  }

  private respondApiErr(reply: string, err: ApiError): void {
    if (reply === "" || this.cfg.no_ack) return;
    const body = JSON.stringify({ error: err, stream: this.name, seq: 0 });
    this.env.bus.publish(reply, "", null, Buffer.from(body));
  }

  private parsePubHeaders(hdr: Buffer): ParsedPubHeaders | null {
    // Header blocks without any Nats-* key (most user headers) cost one indexOf.
    if (hdr.indexOf("Nats-", 0, "latin1") < 0 && hdr.indexOf("nats-", 0, "latin1") < 0) return null;
    const p = parseHeaders(hdr);
    const out: ParsedPubHeaders = {
      msgId: "",
      expStream: "",
      expLastSeq: -1,
      expLastSubjSeq: -1,
      expLastSubjSeqSubj: "",
      expLastMsgId: null,
      rollup: "",
      ttl: null,
      hasSource: false,
    };
    for (const [k, v] of p.entries) {
      switch (k) {
        case HDR_MSG_ID:
          if (out.msgId === "") out.msgId = v;
          break;
        case HDR_EXPECTED_STREAM:
          out.expStream = v;
          break;
        case HDR_EXPECTED_LAST_SEQ:
          out.expLastSeq = intHeader(v);
          break;
        case HDR_EXPECTED_LAST_SUBJ_SEQ:
          out.expLastSubjSeq = intHeader(v);
          break;
        case HDR_EXPECTED_LAST_SUBJ_SEQ_SUBJ:
          out.expLastSubjSeqSubj = v;
          break;
        case HDR_EXPECTED_LAST_MSG_ID:
          out.expLastMsgId = v;
          break;
        case HDR_ROLLUP:
          out.rollup = v;
          break;
        case HDR_TTL:
          out.ttl = v;
          break;
        case HDR_STREAM_SOURCE:
          out.hasSource = true;
          break;
        default:
          break;
      }
    }
    return out;
  }

  /** A message published on one of the stream's subjects. */
  processInbound(subject: string, reply: string, hdr: Buffer | null, payload: Buffer): void {
    if (this.closed) return;
    if (this.storeFailure !== null) return this.respondErr(reply, "JSStreamStoreFailedF", { err: this.storeFailure.message });
    const cfg = this.cfg;
    if (cfg.sealed) return this.respondErr(reply, "JSStreamSealedErr");
    const subj = this.ingestTr !== null ? (this.ingestTr.apply(subject) ?? subject) : subject;
    const h = hdr !== null && hdr.length > 0 ? this.parsePubHeaders(hdr) : null;
    let ttlSec = 0;
    let rollup = 0; // 1 = sub, 2 = all
    let msgId = "";
    let storeHdr = hdr !== null && hdr.length > 0 ? hdr : null;
    if (h !== null) {
      if (h.expStream !== "" && h.expStream !== this.name) return this.respondErr(reply, "JSStreamNotMatchErr");
      if (h.ttl !== null && !cfg.allow_msg_ttl) return this.respondErr(reply, "JSMessageTTLDisabledErr");
      if (h.expLastSubjSeq !== -1) {
        const chk = h.expLastSubjSeqSubj !== "" ? h.expLastSubjSeqSubj : subj;
        const last = this.store.loadLastMsg(chk);
        const fseq = last === null ? 0 : last.seq;
        if (h.expLastSubjSeq !== fseq) return this.respondErr(reply, "JSStreamWrongLastSequenceErrF", { seq: fseq });
      } else if (h.expLastSubjSeqSubj !== "") {
        return this.respondErr(reply, "JSStreamExpectedLastSeqPerSubjectInvalid");
      }
      if (h.expLastSeq !== -1) {
        const lseq = this.store.state().lastSeq;
        if (h.expLastSeq !== lseq) return this.respondErr(reply, "JSStreamWrongLastSequenceErrF", { seq: lseq });
      }
      if (h.hasSource) return this.respondErr(reply, "JSMessageSourceHdrNotAllowedErr");
      msgId = h.msgId;
      if (msgId !== "") {
        const dseq = this.dedup.check(msgId, this.env.clock.nowNs());
        if (dseq > 0) {
          if (reply !== "" && !cfg.no_ack) this.queueAck(reply, dseq, true);
          return;
        }
      }
      if (h.expLastMsgId !== null && h.expLastMsgId !== this.lastMsgId) {
        return this.respondErr(reply, "JSStreamWrongLastMsgIDErrF", { id: this.lastMsgId });
      }
      if (h.rollup !== "") {
        if (!cfg.allow_rollup_hdrs || cfg.deny_purge) {
          return this.respondErr(reply, "JSStreamRollupFailedF", { err: "rollup not permitted" });
        }
        if (h.rollup === "sub") rollup = 1;
        else if (h.rollup === "all") rollup = 2;
        else return this.respondErr(reply, "JSStreamRollupFailedF", { err: `rollup value invalid: ${JSON.stringify(h.rollup)}` });
      }
    }
    const hlen = storeHdr === null ? 0 : storeHdr.length;
    if (cfg.max_msg_size >= 0 && hlen + payload.length > cfg.max_msg_size) {
      return this.respondErr(reply, "JSStreamMessageExceedsMaximumErr");
    }
    if (hlen > MAX_HDR_BYTES) return this.respondErr(reply, "JSStreamHeaderExceedsMaximumErr");
    const size = this.msgSize(subj, hlen, payload.length);
    if (this.env.wouldExceedAccount(cfg.storage, size)) return this.respondErr(reply, "JSAccountResourcesExceededErr");
    if (h !== null && h.ttl !== null) {
      ttlSec = parseMsgTtlSec(h.ttl);
      if (Number.isNaN(ttlSec)) return this.respondErr(reply, "JSMessageTTLInvalidErr");
      if (ttlSec > 0 && cfg.subject_delete_marker_ttl > 0 && cfg.max_msgs_per_subject !== 1) {
        const min = Math.floor(cfg.subject_delete_marker_ttl / 1e9);
        if (ttlSec < min) {
          ttlSec = min;
          storeHdr = replaceHeader(storeHdr, HDR_TTL, String(min));
        }
      }
    }
    if (cfg.discard === "new" || cfg.discard_new_per_subject) {
      const why = this.discardNewCheck(subj, size, rollup !== 0);
      if (why !== "") return this.respondErr(reply, "JSStreamStoreFailedF", { err: why });
    }
    this.store1(subj, storeHdr, payload, this.env.clock.nowNs(), ttlSec, msgId, rollup, reply);
  }

  /** A message copied from a source: dedup and limits apply, the expected-* checks do not. */
  processSourced(subj: string, hdr: Buffer | null, payload: Buffer, msgId: string, ttlSec: number): void {
    if (this.closed || this.cfg.sealed || this.storeFailure !== null) return;
    const now = this.env.clock.nowNs();
    if (msgId !== "" && this.dedup.check(msgId, now) > 0) return;
    const size = this.msgSize(subj, hdr === null ? 0 : hdr.length, payload.length);
    if (this.cfg.discard === "new" || this.cfg.discard_new_per_subject) {
      if (this.discardNewCheck(subj, size, false) !== "") return;
    }
    this.store1(subj, hdr, payload, now, ttlSec, msgId, 0, "");
  }

  private msgSize(subj: string, hlen: number, dlen: number): number {
    const sb = Buffer.byteLength(subj);
    return this.cfg.storage === "memory" ? memStoreMsgSize(sb, hlen, dlen) : fileStoreMsgSize(sb, hlen, dlen);
  }

  /** "" when the message may be stored under discard new, else nats-server's reason. */
  private discardNewCheck(subj: string, size: number, isRollup: boolean): string {
    const cfg = this.cfg;
    let subjMsgs = -1;
    const perSubjectCount = (): number => {
      if (subjMsgs < 0) subjMsgs = this.store.subjectsState(subj).get(subj)?.msgs ?? 0;
      return subjMsgs;
    };
    if (cfg.discard_new_per_subject && cfg.max_msgs_per_subject > 0 && !isRollup) {
      if (perSubjectCount() >= cfg.max_msgs_per_subject) return "maximum messages per subject exceeded";
    }
    if (cfg.discard !== "new" || (cfg.max_msgs <= 0 && cfg.max_bytes <= 0)) return "";
    const st = this.store.state();
    // A subject at its per-subject limit replaces its oldest message, so it adds nothing.
    const replaces = cfg.max_msgs_per_subject > 0 && perSubjectCount() >= cfg.max_msgs_per_subject;
    if (cfg.max_msgs > 0 && st.msgs >= cfg.max_msgs && !replaces) return "maximum messages exceeded";
    if (cfg.max_bytes > 0 && st.bytes + size > cfg.max_bytes) {
      let freed = 0;
      if (replaces) {
        const first = this.store.loadNextMsg(subj, 0);
        if (first !== null) freed = this.msgSize(first.subject, first.hdr?.length ?? 0, first.data.length);
      }
      if (st.bytes + size - freed > cfg.max_bytes) return "maximum bytes exceeded";
    }
    return "";
  }

  /** Store after all checks passed; shared with sourcing (which passes reply ""). */
  store1(
    subj: string,
    hdr: Buffer | null,
    payload: Buffer,
    tsNs: number,
    ttlSec: number,
    msgId: string,
    rollup: number,
    reply: string,
  ): number {
    if (this.storeFailure !== null) {
      this.respondErr(reply, "JSStreamStoreFailedF", { err: this.storeFailure.message });
      return 0;
    }
    let seq: number;
    // Previous seq on the subject, sent on republish for gap detection.
    const prevSeq = this.republishTr !== null ? (this.store.loadLastMsg(subj)?.seq ?? 0) : 0;
    try {
      seq = this.store.storeMsg(subj, hdr, payload, tsNs, ttlSec);
    } catch (e) {
      this.env.log.error(`JetStream failed to store a msg on stream '$G > ${this.name}': ${(e as Error).message}`);
      this.respondErr(reply, "JSStreamStoreFailedF", { err: (e as Error).message });
      this.noteStoreFailure();
      return 0;
    }
    this.lastMsgId = msgId;
    if (msgId !== "") this.dedup.add(msgId, seq, tsNs);
    if (hdr !== null && this.cfg.subject_delete_marker_ttl > 0 && isDeleteMarker(hdr)) this.markerSeqs.add(seq);
    if (this.cfg.retention === "interest" && !this.hasInterest(subj)) {
      // No consumer wants it: the sequence is used up but nothing is kept.
      this.store.removeMsg(seq);
    } else {
      if (rollup === 1) this.store.purge({ subject: subj, keep: 1 });
      else if (rollup === 2) this.store.purge({ keep: 1 });
      if (rollup !== 0) this.limitRemoved = true;
      if (this.deferVisible) {
        this.unvSeqs.push(seq);
        this.unvSubjs.push(subj);
      } else {
        this.visibleSeq = seq;
        if (this.consumerMap.size > 0) for (const c of this.consumerMap.values()) c.onStored(seq, subj);
      }
      if (this.republishTr !== null) {
        // Like consumers, republish only what is durable: deferred until the sync, when the
        // message is read back from the store (hdr/payload may be views of the read buffer).
        if (this.deferVisible) this.unvRepub.push(seq, prevSeq);
        else this.republish(seq, subj, hdr, payload, tsNs, prevSeq);
      }
    }
    if (this.limitRemoved) this.afterLimitRemovals();
    for (let i = 0; i < this.storeListeners.length; i++) this.storeListeners[i]!();
    if (reply !== "" && !this.cfg.no_ack) this.queueAck(reply, seq, false);
    if (this.deferVisible) {
      // Without a reply too: the message becomes visible when a sync covers it.
      this.lastStored = seq;
      if (!this.flushQueued) {
        this.flushQueued = true;
        queueMicrotask(this.flushAcks);
      }
    }
    return seq;
  }

  private hasInterest(subj: string): boolean {
    for (const c of this.consumerMap.values()) if (c.filterMatches(subj)) return true;
    return false;
  }

  private republish(seq: number, subj: string, hdr: Buffer | null, payload: Buffer, tsNs: number, lastSeq: number): void {
    const rp = this.cfg.republish;
    const tr = this.republishTr;
    if (rp === null || tr === null) return;
    const dest = tr.apply(subj);
    if (dest === null) return;
    const extra: [string, string][] = [
      ["Nats-Stream", this.name],
      ["Nats-Subject", subj],
      ["Nats-Sequence", String(seq)],
      ["Nats-Time-Stamp", rfc3339Ns(tsNs)],
      ["Nats-Last-Sequence", String(lastSeq)],
    ];
    if (rp.headers_only) extra.push(["Nats-Msg-Size", String(payload.length)]);
    const out = appendHeaders(hdr, extra);
    this.env.bus.publish(dest, "", out, rp.headers_only ? Buffer.alloc(0) : payload);
  }

  // ---------- group commit of PubAcks ----------

  private queueAck(reply: string, seq: number, dup: boolean): void {
    const b = this.current;
    b.replies.push(reply);
    b.seqs.push(seq);
    b.dups.push(dup);
    // A long read (hundreds of publishes) starts its first fsync before the rest is parsed.
    if (b.replies.length >= ACK_SPLIT) return this.flushAcks();
    if (!this.flushQueued) {
      this.flushQueued = true;
      // After the current read batch, so every publish parsed from one socket read shares it.
      queueMicrotask(this.flushAcks);
    }
  }

  private readonly flushAcks = (): void => {
    this.flushQueued = false;
    const b = this.current;
    const cover = this.lastStored;
    if (b.replies.length === 0 && cover <= this.syncAsked) return;
    this.syncAsked = cover;
    b.coverSeq = cover;
    this.current = this.spare.pop() ?? new AckBatch();
    this.inflight.push(b);
    this.store.sync(this.onSynced);
  };

  private readonly onSynced = (err: Error | null): void => {
    const b = this.inflight.shift();
    if (b === undefined) return;
    const bus = this.env.bus;
    const n = b.replies.length;
    if (err !== null) {
      this.env.log.error(`JetStream sync failed on stream '$G > ${this.name}': ${err.message}`);
      const body = Buffer.from(
        JSON.stringify({ error: jsErr("JSStreamStoreFailedF", { err: err.message }), stream: this.name, seq: 0 }),
      );
      for (let i = 0; i < n; i++) bus.publish(b.replies[i]!, "", null, body);
      this.noteStoreFailure();
    } else {
      // Every body of the batch in one buffer, written byte by byte: no string building or
      // UTF-8 encoding per ack; each publish gets a view (receivers copy or keep the view).
      const pre = this.ackPrefixBytes;
      const buf = Buffer.allocUnsafe(n * (pre.length + MAX_SEQ_DIGITS + ACK_DUP_TAIL.length));
      let p = 0;
      for (let i = 0; i < n; i++) {
        const start = p;
        for (let k = 0; k < pre.length; k++) buf[p++] = pre[k]!;
        p = putSeq(buf, p, b.seqs[i]!);
        if (b.dups[i]) for (let k = 0; k < ACK_DUP_TAIL.length; k++) buf[p++] = ACK_DUP_TAIL[k]!;
        else buf[p++] = 0x7d; // }
        if (bus.publishRange !== undefined) bus.publishRange(b.replies[i]!, "", null, buf, start, p);
        else bus.publish(b.replies[i]!, "", null, buf.subarray(start, p));
      }
    }
    const cover = b.coverSeq;
    b.clear();
    if (this.spare.length < 4) this.spare.push(b);
    // PubAcks first, then deliveries: a publisher sees its ack before any consumer's copy.
    if (err === null && cover > this.visibleSeq) this.advanceVisible(cover);
  };

  /** A store that stopped is reported once; other store errors stay with their message. */
  private noteStoreFailure(): void {
    if (this.storeFailure !== null) return;
    const f = this.store.failure?.() ?? null;
    if (f === null) return;
    this.storeFailure = f;
    this.env.storeFailed?.(this, f);
  }

  private advanceVisible(upTo: number): void {
    this.visibleSeq = upTo;
    const seqs = this.unvSeqs;
    const subjs = this.unvSubjs;
    // unvHead moves before each notification: a delivery may store into this stream again.
    while (this.unvHead < seqs.length && seqs[this.unvHead]! <= upTo) {
      const k = this.unvHead++;
      if (this.consumerMap.size > 0) for (const c of this.consumerMap.values()) c.onStored(seqs[k]!, subjs[k]!);
    }
    if (this.unvRepub.length > 0) this.republishVisible(upTo);
    let i = this.unvHead;
    if (i === seqs.length) {
      seqs.length = 0;
      subjs.length = 0;
      i = 0;
    } else if (i > 1024 && i * 2 > seqs.length) {
      seqs.splice(0, i);
      subjs.splice(0, i);
      i = 0;
    }
    this.unvHead = i;
  }

  private republishVisible(upTo: number): void {
    const q = this.unvRepub;
    let k = 0;
    for (; k < q.length && q[k]! <= upTo; k += 2) {
      const m = this.store.loadMsg(q[k]!);
      // Gone already (a limit, a purge): nothing to republish, as if it had never been kept.
      if (m !== null) this.republish(m.seq, m.subject, m.hdr, m.data, m.tsNs, q[k + 1]!);
    }
    if (k === q.length) q.length = 0;
    else if (k > 0) q.splice(0, k);
  }

  // ---------- limits, expiry, markers ----------

  /** Store callback: a message left because of a limit, an age or a TTL. */
  onLimitRemove(seq: number, subject: string): void {
    this.limitRemoved = true;
    const wasMarker = this.markerSeqs.size > 0 && this.markerSeqs.delete(seq);
    if (this.expiring && this.cfg.subject_delete_marker_ttl > 0 && !wasMarker) this.markerSubjects.push(subject);
  }

  private afterLimitRemovals(): void {
    this.limitRemoved = false;
    if (this.consumerMap.size === 0) return;
    const first = this.store.state().firstSeq;
    for (const c of this.consumerMap.values()) c.onPurged(first);
  }

  private armExpiry(): void {
    if (this.expiryTimer !== null) this.env.clock.clearTimer(this.expiryTimer);
    this.expiryTimer = null;
    if (this.closed) return;
    const cfg = this.cfg;
    if (cfg.max_age <= 0 && !cfg.allow_msg_ttl) return;
    // One timer per stream, on a coarse interval (a tenth of max_age, 50 ms to 1 s), aimed
    // at the store's next due message when that falls before the next tick or just after
    // it: nats-server removes a message when its age or TTL is reached (nats.js checks a
    // 4 s TTL within 200 ms). Never sooner than MIN_EXPIRY_MS, so a stream expiring all the
    // time wakes as often as before (nats-server: 250 ms). A new message never needs an
    // earlier wakeup: TTLs are whole seconds, max_age grows with the stream, the tick is <= 1 s.
    const ageMs = cfg.max_age > 0 ? cfg.max_age / NS_PER_MS : 1000;
    let ms = Math.max(MIN_EXPIRY_MS, Math.min(1000, Math.floor(ageMs / 10)));
    const next = this.store.nextExpiryNs();
    if (next > 0) {
      const untilMs = Math.ceil((next - this.env.clock.nowNs()) / NS_PER_MS);
      if (untilMs < ms + MIN_EXPIRY_MS) ms = Math.max(MIN_EXPIRY_MS, untilMs);
    }
    this.expiryTimer = this.env.clock.setTimer(this.onExpiryTick, ms);
  }

  private readonly onExpiryTick = (): void => {
    this.expiryTimer = null;
    if (this.closed) return;
    this.runExpiry();
    this.armExpiry();
  };

  runExpiry(): void {
    this.expiring = true;
    let removed = 0;
    try {
      removed = this.store.expire(this.env.clock.nowNs());
    } finally {
      this.expiring = false;
    }
    if (removed > 0 || this.limitRemoved) this.afterLimitRemovals();
    if (this.markerSubjects.length > 0) this.writeMarkers();
  }

  /** Subject delete markers (ADR-43): the last message on a subject aged out. */
  private writeMarkers(): void {
    const subjects = this.markerSubjects.splice(0);
    const ttl = Math.floor(this.cfg.subject_delete_marker_ttl / 1e9);
    for (const s of new Set(subjects)) {
      if (this.store.loadLastMsg(s) !== null) continue;
      const hdr = encodeHeaders([
        [HDR_MARKER_REASON, "MaxAge"],
        [HDR_TTL, String(ttl)],
      ]);
      this.store1(s, hdr, Buffer.alloc(0), this.env.clock.nowNs(), ttl, "", 0, "");
    }
  }

  // ---------- admin operations ----------

  purge(opts: { filter?: string; seq?: number; keep?: number }): number {
    const p: { subject?: string; seq?: number; keep?: number } = {};
    if (opts.filter !== undefined && opts.filter !== "" && opts.filter !== ">") p.subject = opts.filter;
    if (opts.seq !== undefined && opts.seq > 0) p.seq = opts.seq;
    if (opts.keep !== undefined && opts.keep > 0) p.keep = opts.keep;
    const n = this.store.purge(p);
    const first = this.store.state().firstSeq;
    for (const seq of this.markerSeqs) if (seq < first) this.markerSeqs.delete(seq);
    for (const c of this.consumerMap.values()) c.onPurged(first);
    return n;
  }

  /** erase (nats-server's default, `no_erase: false`): overwrite the stored bytes too. */
  deleteMsg(seq: number, erase: boolean): boolean {
    const store = this.store;
    return erase && store.eraseMsg !== undefined ? store.eraseMsg(seq) : store.removeMsg(seq);
  }

  /** Rebuild the dedup window and last msg id from stored Nats-Msg-Id headers (recovery). */
  rebuildDedup(): number {
    const st = this.store.state();
    if (st.msgs === 0) return 0;
    const last = this.store.loadMsg(st.lastSeq);
    if (last !== null) this.lastMsgId = msgIdOf(last.hdr);
    if (this.cfg.duplicate_window <= 0) return 0;
    const cutoff = this.env.clock.nowNs() - this.cfg.duplicate_window;
    // Walk back to the first message inside the window, then replay forward in order.
    let lo = st.firstSeq;
    let hi = st.lastSeq;
    while (lo < hi) {
      const mid = Math.floor((lo + hi) / 2);
      const m = this.store.loadNextMsg(">", mid);
      if (m === null || m.tsNs > cutoff) hi = mid;
      else lo = mid + 1;
    }
    let n = 0;
    let seq = lo;
    // Only messages with headers can carry a Nats-Msg-Id: a store that can skip the others
    // (the file store skips whole blocks without headers) spares reading every message.
    const store = this.store;
    const withHdr = store.loadNextMsgWithHeader !== undefined;
    for (;;) {
      const m = withHdr ? store.loadNextMsgWithHeader!(seq) : store.loadNextMsg(">", seq);
      if (m === null) break;
      if (m.tsNs > cutoff && m.hdr !== null) {
        const id = msgIdOf(m.hdr);
        if (id !== "") {
          this.dedup.add(id, m.seq, m.tsNs);
          n++;
        }
      }
      seq = m.seq + 1;
    }
    return n;
  }

  // ---------- info ----------

  state(opts?: { deletedDetails?: boolean; subjectsFilter?: string }): StreamStateWire {
    const st = this.store.state();
    const out: StreamStateWire = {
      messages: st.msgs,
      bytes: st.bytes,
      first_seq: st.firstSeq,
      first_ts: rfc3339Ns(st.firstTsNs),
      last_seq: st.lastSeq,
      last_ts: rfc3339Ns(st.lastTsNs),
      consumer_count: this.consumerMap.size,
    };
    if (st.numSubjects > 0) out.num_subjects = st.numSubjects;
    if (opts?.subjectsFilter) {
      const m = this.store.subjectsState(opts.subjectsFilter);
      if (m.size > 0) {
        const subjects: Record<string, number> = {};
        for (const [k, v] of m) subjects[k] = v.msgs;
        out.subjects = subjects;
      }
    }
    if (st.numDeleted > 0) {
      out.num_deleted = st.numDeleted;
      if (opts?.deletedDetails) out.deleted = this.store.deletedSeqs();
    }
    // consumer_count last, as nats-server orders it.
    const cc = out.consumer_count;
    delete (out as { consumer_count?: number }).consumer_count;
    out.consumer_count = cc;
    return out;
  }

  info(opts?: { deletedDetails?: boolean; subjectsFilter?: string }, extra?: Partial<StreamInfoWire>): StreamInfoWire {
    const o: StreamInfoWire = {
      config: this.wireConfig(),
      created: rfc3339Ns(this.createdNs),
      state: this.state(opts),
      cluster: { leader: this.env.serverName },
      ts: rfc3339Ns(this.env.clock.nowNs()),
    };
    if (extra?.mirror) o.mirror = extra.mirror;
    if (extra?.sources) o.sources = extra.sources;
    // nats-server puts ts last.
    const ts = o.ts;
    delete (o as { ts?: string }).ts;
    o.ts = ts;
    return o;
  }

  pubAck(seq: number, duplicate: boolean): PubAckWire {
    const a: PubAckWire = { stream: this.name, seq };
    if (this.env.domain !== "") a.domain = this.env.domain;
    if (duplicate) a.duplicate = true;
    return a;
  }

  // ---------- lifecycle ----------

  /** Stop ingest and timers; consumers are stopped by the caller. */
  detach(): void {
    this.closed = true;
    for (const s of this.subs) s.unsubscribe();
    this.subs = [];
    if (this.expiryTimer !== null) this.env.clock.clearTimer(this.expiryTimer);
    this.expiryTimer = null;
  }

  async stopConsumers(deleteState: boolean): Promise<void> {
    const cs = [...this.consumerMap.values()];
    this.consumerMap.clear();
    for (const c of cs) {
      try {
        await c.stop(deleteState);
      } catch (e) {
        this.env.log.warn(`stopping consumer '${this.name} > ${c.name}': ${(e as Error).message}`);
      }
    }
  }

  /** Wait until every queued PubAck has been answered (used before close). */
  async drainAcks(): Promise<void> {
    if (this.current.replies.length > 0) this.flushAcks();
    if (this.inflight.length === 0) return;
    await new Promise<void>((res) => this.store.sync(() => res()));
  }
}

/** A sequence (a non-negative integer up to 2^53) in decimal at buf[p]; returns the end. */
function putSeq(buf: Buffer, p: number, v: number): number {
  let digits = 1;
  for (let t = v; t >= 10; t = Math.floor(t / 10)) digits++;
  let q = p + digits - 1;
  for (let t = v; q >= p; ) {
    const d = Math.floor(t / 10);
    buf[q--] = 48 + t - d * 10;
    t = d;
  }
  return p + digits;
}

export function msgIdOf(hdr: Buffer | null): string {
  if (hdr === null || hdr.indexOf(HDR_MSG_ID, 0, "latin1") < 0) return "";
  for (const [k, v] of parseHeaders(hdr).entries) if (k === HDR_MSG_ID) return v;
  return "";
}

function replaceHeader(hdr: Buffer | null, key: string, value: string): Buffer {
  const p = parseHeaders(hdr);
  const kept = p.entries.filter(([k]) => k !== key);
  kept.push([key, value]);
  return encodeHeaders(kept, p.status, p.description);
}

export { subjectMatches };
