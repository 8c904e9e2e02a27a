// The JetStream publish headers a stream reads (nats-server's Nats-* names), and the few
// header helpers the publish path and sourcing share.

import { encodeHeaders, getHeader, parseHeaders } from "../protocol/headers.js";

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

/** The Nats-* headers of one publish; numbers are -1 when absent, -2 when not an integer. */
export interface PubHeaders {
  msgId: string;
  expStream: string;
  expLastSeq: number;
  expLastSubjSeq: number;
  expLastSubjSeqSubj: string;
  expLastMsgId: string | null;
  rollup: string;
  ttl: string | null;
  hasSource: boolean;
}

function intHeader(v: string): number {
  if (!/^\d+$/.test(v)) return -2;
  return Number(v);
}

/** The publish headers of hdr, or null when it holds no Nats-* key (one indexOf for most
 *  user header blocks). */
export function parsePubHeaders(hdr: Buffer): PubHeaders | null {
  if (hdr.indexOf("Nats-", 0, "latin1") < 0 && hdr.indexOf("nats-", 0, "latin1") < 0) return null;
  const p = parseHeaders(hdr);
  const out: PubHeaders = {
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

/** nats-server's rule: a message is a delete marker when it names a marker reason or is a KV purge. */
export function isDeleteMarker(hdr: Buffer): boolean {
  const reason = getHeader(hdr, HDR_MARKER_REASON);
  if (reason !== undefined && reason !== "") return true;
  return getHeader(hdr, "KV-Operation") === "PURGE";
}

export function msgIdOf(hdr: Buffer | null): string {
  if (hdr === null || hdr.indexOf(HDR_MSG_ID, 0, "latin1") < 0) return "";
  for (const [k, v] of parseHeaders(hdr).entries) if (k === HDR_MSG_ID) return v;
  return "";
}

export function replaceHeader(hdr: Buffer | null, key: string, value: string): Buffer {
  const p = parseHeaders(hdr);
  const kept = p.entries.filter(([k]) => k !== key);
  kept.push([key, value]);
  return encodeHeaders(kept, p.status, p.description);
}
