// The checks of a publish, in nats-server's order, that turn an inbound message into a
// StreamEntry or a refusal. They read the store and what was proposed but not applied yet
// (InflightTable), and change nothing: the stream applies the entry later (entry.ts) and
// then tells the checks what was stored (applied()).

import type { StreamStore } from "../storage/types.js";
import { fileStoreMsgSize, memStoreMsgSize } from "../storage/index.js";
import { jsErr, type ApiError } from "../contracts/errors.js";
import type { StreamConfig } from "../contracts/wire.js";
import { DedupWindow } from "./dedup.js";
import { InflightTable, Rollup, type StreamEntry } from "./entry.js";
import { HDR_TTL, msgIdOf, parsePubHeaders, replaceHeader } from "./headers.js";
import { parseMsgTtlSec } from "./time.js";
import type { SubjectTransform } from "./transform.js";

const MAX_HDR_BYTES = 65535;

/** Why a publish is not stored: a duplicate of a stored message (answered with a PubAck
 *  marked duplicate) or an error for the publisher. Allocated only when refusing. */
export type CheckFailure = { dupSeq: number; err: null } | { dupSeq: 0; err: ApiError };

function fail(err: ApiError): CheckFailure {
  return { dupSeq: 0, err };
}

/** What the checks need from around them besides the store. */
export interface CheckEnv {
  /** Account limits: would storing `bytes` more exceed them? */
  wouldExceedAccount(storage: "file" | "memory", bytes: number): boolean;
}

export class PublishChecks {
  cfg: StreamConfig;
  /** Msg ids stored within duplicate_window. */
  readonly dedup: DedupWindow;
  /** Proposed, not applied yet (always empty under a LocalProposer). */
  readonly inflight = new InflightTable();
  /** Msg id of the last stored message ("" none): Nats-Expected-Last-Msg-Id. */
  lastMsgId = "";
  /** The stream's subject_transform, or null. */
  ingestTr: SubjectTransform | null = null;

  constructor(
    cfg: StreamConfig,
    private readonly store: StreamStore,
    private readonly env: CheckEnv,
  ) {
    this.cfg = cfg;
    this.dedup = new DedupWindow(cfg.duplicate_window);
  }

  setConfig(cfg: StreamConfig, ingestTr: SubjectTransform | null): void {
    this.cfg = cfg;
    this.ingestTr = ingestTr;
    this.dedup.windowNs = cfg.duplicate_window;
  }

  /** The sequence the last proposed message will have once everything in flight is applied. */
  proposedLastSeq(): number {
    return this.store.state().lastSeq + this.inflight.count;
  }

  /** The last msg id once everything in flight is applied. */
  proposedLastMsgId(): string {
    return this.inflight.count > 0 ? this.inflight.lastMsgId : this.lastMsgId;
  }

  /** A client's publish: null and `out` filled, or why not. */
  inbound(subject: string, reply: string, hdr: Buffer | null, payload: Buffer, nowNs: number, out: StreamEntry): CheckFailure | null {
    const cfg = this.cfg;
    if (cfg.sealed) return fail(jsErr("JSStreamSealedErr"));
    const subj = this.ingestTr !== null ? (this.ingestTr.apply(subject) ?? subject) : subject;
    let storeHdr = hdr !== null && hdr.length > 0 ? hdr : null;
    const h = storeHdr !== null ? parsePubHeaders(storeHdr) : null;
    let rollup: Rollup = Rollup.None;
    let msgId = "";
    if (h !== null) {
      if (h.expStream !== "" && h.expStream !== cfg.name) return fail(jsErr("JSStreamNotMatchErr"));
      if (h.ttl !== null && !cfg.allow_msg_ttl) return fail(jsErr("JSMessageTTLDisabledErr"));
      if (h.expLastSubjSeq !== -1) {
        const chk = h.expLastSubjSeqSubj !== "" ? h.expLastSubjSeqSubj : subj;
        // A message on that subject still in flight makes any stored answer stale.
        if (this.inflight.count > 0 && this.inflight.onSubject(chk) > 0) return fail(jsErr("JSStreamWrongLastSequenceConstantErr"));
        const last = this.store.loadLastMsg(chk);
        const fseq = last === null ? 0 : last.seq;
        if (h.expLastSubjSeq !== fseq) return fail(jsErr("JSStreamWrongLastSequenceErrF", { seq: fseq }));
      } else if (h.expLastSubjSeqSubj !== "") {
        return fail(jsErr("JSStreamExpectedLastSeqPerSubjectInvalid"));
      }
      if (h.expLastSeq !== -1) {
        const lseq = this.proposedLastSeq();
        if (h.expLastSeq !== lseq) return fail(jsErr("JSStreamWrongLastSequenceErrF", { seq: lseq }));
      }
      if (h.hasSource) return fail(jsErr("JSMessageSourceHdrNotAllowedErr"));
      msgId = h.msgId;
      if (msgId !== "") {
        const dseq = this.dedup.check(msgId, nowNs);
        if (dseq > 0) return { dupSeq: dseq, err: null };
        // nats-server's answer while the first one is proposed but not stored.
        if (this.inflight.count > 0 && this.inflight.hasMsgId(msgId)) return fail(jsErr("JSStreamDuplicateMessageConflict"));
      }
      if (h.expLastMsgId !== null) {
        const last = this.proposedLastMsgId();
        if (h.expLastMsgId !== last) return fail(jsErr("JSStreamWrongLastMsgIDErrF", { id: last }));
      }
      if (h.rollup !== "") {
        if (!cfg.allow_rollup_hdrs || cfg.deny_purge) return fail(jsErr("JSStreamRollupFailedF", { err: "rollup not permitted" }));
        if (h.rollup === "sub") rollup = Rollup.Subject;
        else if (h.rollup === "all") rollup = Rollup.All;
        else return fail(jsErr("JSStreamRollupFailedF", { err: `rollup value invalid: ${JSON.stringify(h.rollup)}` }));
      }
    }
    const hlen = storeHdr === null ? 0 : storeHdr.length;
    if (cfg.max_msg_size >= 0 && hlen + payload.length > cfg.max_msg_size) return fail(jsErr("JSStreamMessageExceedsMaximumErr"));
    if (hlen > MAX_HDR_BYTES) return fail(jsErr("JSStreamHeaderExceedsMaximumErr"));
    const size = this.msgSize(subj, hlen, payload.length);
    if (this.env.wouldExceedAccount(cfg.storage, size)) return fail(jsErr("JSAccountResourcesExceededErr"));
    let ttlSec = 0;
    if (h !== null && h.ttl !== null) {
      ttlSec = parseMsgTtlSec(h.ttl);
      if (Number.isNaN(ttlSec)) return fail(jsErr("JSMessageTTLInvalidErr"));
      if (ttlSec > 0 && cfg.subject_delete_marker_ttl > 0 && cfg.max_msgs_per_subject !== 1) {
        const min = Math.floor(cfg.subject_delete_marker_ttl / 1e9);
        if (ttlSec < min) {
          ttlSec = min;
          storeHdr = replaceHeader(storeHdr, HDR_TTL, String(min));
        }
      }
    }
    if (cfg.discard === "new" || cfg.discard_new_per_subject) {
      const why = this.discardNew(subj, size, rollup !== Rollup.None);
      if (why !== "") return fail(jsErr("JSStreamStoreFailedF", { err: why }));
    }
    out.set(subj, storeHdr, payload, nowNs, ttlSec, msgId, rollup, reply, size);
    return null;
  }

  /** A message copied from a source: dedup and limits apply, the expected-* checks do not.
   *  false: dropped silently. */
  sourced(subj: string, hdr: Buffer | null, payload: Buffer, msgId: string, ttlSec: number, nowNs: number, out: StreamEntry): boolean {
    if (this.cfg.sealed) return false;
    if (msgId !== "" && (this.dedup.check(msgId, nowNs) > 0 || (this.inflight.count > 0 && this.inflight.hasMsgId(msgId)))) return false;
    const size = this.msgSize(subj, hdr === null ? 0 : hdr.length, payload.length);
    if (this.cfg.discard === "new" || this.cfg.discard_new_per_subject) {
      if (this.discardNew(subj, size, false) !== "") return false;
    }
    out.set(subj, hdr, payload, nowNs, ttlSec, msgId, Rollup.None, "", size);
    return true;
  }

  /** An entry was stored at seq: remember its msg id. */
  applied(msgId: string, seq: number, tsNs: number): void {
    this.lastMsgId = msgId;
    if (msgId !== "") this.dedup.add(msgId, seq, tsNs);
  }

  /** Rebuild the dedup window and last msg id from stored Nats-Msg-Id headers (recovery);
   *  returns how many ids the window holds. */
  rebuild(nowNs: number): number {
    const store = this.store;
    const st = store.state();
    if (st.msgs === 0) return 0;
    const last = store.loadMsg(st.lastSeq);
    if (last !== null) this.lastMsgId = msgIdOf(last.hdr);
    if (this.cfg.duplicate_window <= 0) return 0;
    const cutoff = nowNs - this.cfg.duplicate_window;
    // Walk back to the first message inside the window, then replay forward in order.
    let lo = st.firstSeq;
    let hi = st.lastSeq;
    while (lo < hi) {
      const mid = Math.floor((lo + hi) / 2);
      const m = store.loadNextMsg(">", mid);
      if (m === null || m.tsNs > cutoff) hi = mid;
      else lo = mid + 1;
    }
    let n = 0;
    let seq = lo;
    // Only messages with headers can carry a Nats-Msg-Id: a store that can skip the others
    // (the file store skips whole blocks without headers) spares reading every message.
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

  msgSize(subj: string, hlen: number, dlen: number): number {
    const sb = Buffer.byteLength(subj);
    return this.cfg.storage === "memory" ? memStoreMsgSize(sb, hlen, dlen) : fileStoreMsgSize(sb, hlen, dlen);
  }

  /** "" when the message may be stored under discard new, else nats-server's reason. Counts
   *  what is in flight as if it were stored. */
  private discardNew(subj: string, size: number, isRollup: boolean): string {
    const cfg = this.cfg;
    const fl = this.inflight;
    let subjMsgs = -1;
    const perSubjectCount = (): number => {
      if (subjMsgs < 0) {
        subjMsgs = this.store.subjectsState(subj).get(subj)?.msgs ?? 0;
        if (fl.count > 0) subjMsgs += fl.onSubject(subj);
      }
      return subjMsgs;
    };
    if (cfg.discard_new_per_subject && cfg.max_msgs_per_subject > 0 && !isRollup) {
      if (perSubjectCount() >= cfg.max_msgs_per_subject) return "maximum messages per subject exceeded";
    }
    if (cfg.discard !== "new" || (cfg.max_msgs <= 0 && cfg.max_bytes <= 0)) return "";
    const st = this.store.state();
    const msgs = st.msgs + fl.count;
    const bytes = st.bytes + fl.bytes;
    // A subject at its per-subject limit replaces its oldest message, so it adds nothing.
    const replaces = cfg.max_msgs_per_subject > 0 && perSubjectCount() >= cfg.max_msgs_per_subject;
    if (cfg.max_msgs > 0 && msgs >= cfg.max_msgs && !replaces) return "maximum messages exceeded";
    if (cfg.max_bytes > 0 && bytes + size > cfg.max_bytes) {
      let freed = 0;
      if (replaces) {
        const first = this.store.loadNextMsg(subj, 0);
        if (first !== null) freed = this.msgSize(first.subject, first.hdr?.length ?? 0, first.data.length);
      }
      if (bytes + size - freed > cfg.max_bytes) return "maximum bytes exceeded";
    }
    return "";
  }
}
