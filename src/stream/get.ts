// Message reads for the API: STREAM.MSG.GET (JSON reply) and DIRECT.GET (ADR-31: the stored
// message with Nats-* headers appended, batches ending in 204 EOB, status-only misses).

import type { Bus } from "../contracts/bus.js";
import type { StreamStore, StoredMsg } from "../storage/types.js";
import { appendHeaders, statusHeaders } from "../protocol/headers.js";
import type { MsgGetRequest, StoredMsgWire } from "../contracts/wire.js";
import { jsErr, type ApiError } from "../contracts/errors.js";
import { parseRfc3339Ns, rfc3339Ns } from "./time.js";
import { isLiteral } from "../subjects/subject.js";
import { goIntOrNull, parseApiJson } from "../contracts/json.js";

const EMPTY = Buffer.alloc(0);
const MULTI_MAX = 1024;

/** Decode a MsgGetRequest; null when the JSON is not an object of the right field types. */
export function decodeMsgGet(o: unknown): MsgGetRequest | null {
  if (typeof o !== "object" || o === null || Array.isArray(o)) return null;
  const r = o as Record<string, unknown>;
  const out: MsgGetRequest = {};
  // JSApiMsgGetRequest: seq and up_to_seq are uint64, batch and max_bytes int (a negative
  // batch or max_bytes decodes in Go and means nothing; tsnats has always refused it).
  const num = (k: keyof MsgGetRequest): boolean => {
    const v = r[k];
    if (v === undefined || v === null) return true;
    const n = goIntOrNull(v, k === "seq" || k === "up_to_seq" ? "uint64" : "int64");
    if (n === null || n < 0) return false;
    (out as Record<string, unknown>)[k] = n;
    return true;
  };
  const s = (k: keyof MsgGetRequest): boolean => {
    const v = r[k];
    if (v === undefined || v === null) return true;
    if (typeof v !== "string") return false;
    (out as Record<string, unknown>)[k] = v;
    return true;
  };
  if (!num("seq") || !num("batch") || !num("max_bytes") || !num("up_to_seq")) return null;
  if (!s("last_by_subj") || !s("next_by_subj") || !s("start_time") || !s("up_to_time")) return null;
  if (r["no_hdr"] !== undefined && r["no_hdr"] !== null) {
    if (typeof r["no_hdr"] !== "boolean") return null;
    out.no_hdr = r["no_hdr"];
  }
  const ml = r["multi_last"];
  if (ml !== undefined && ml !== null) {
    if (!Array.isArray(ml) || ml.some((x) => typeof x !== "string")) return null;
    out.multi_last = ml as string[];
  }
  for (const k of ["start_time", "up_to_time"] as const) {
    const v = out[k];
    if (v !== undefined && Number.isNaN(parseRfc3339Ns(v))) return null;
  }
  return out;
}

/** First sequence with a timestamp at or after tsNs (nats-server GetSeqFromTime). */
export function seqFromTime(store: StreamStore, tsNs: number): number {
  const st = store.state();
  if (st.msgs === 0) return st.lastSeq + 1;
  if (tsNs <= st.firstTsNs) return st.firstSeq;
  if (tsNs > st.lastTsNs) return st.lastSeq + 1;
  let lo = st.firstSeq;
  let hi = st.lastSeq;
  while (lo < hi) {
    const mid = Math.floor((lo + hi) / 2);
    const m = store.loadNextMsg(">", mid);
    if (m === null || m.tsNs >= tsNs) hi = mid;
    else lo = mid + 1;
  }
  const m = store.loadNextMsg(">", lo);
  return m === null ? st.lastSeq + 1 : m.seq;
}

/** STREAM.MSG.GET: the message or an error (checks in nats-server's order). */
export function msgGet(store: StreamStore, req: MsgGetRequest): { msg: StoredMsgWire } | { error: ApiError } {
  const seqReq = req.seq ?? 0;
  const last = req.last_by_subj ?? "";
  const next = req.next_by_subj ?? "";
  const start = req.start_time;
  let seq = seqReq;
  if (start !== undefined) seq = seqFromTime(store, parseRfc3339Ns(start));
  let m: StoredMsg | null;
  if (seq > 0 && next === "") m = store.loadMsg(seq);
  else if (next !== "") m = store.loadNextMsg(next, seq);
  else m = store.loadLastMsg(last);
  if (m === null) return { error: jsErr("JSNoMessageFoundErr") };
  const w: StoredMsgWire = { subject: m.subject, seq: m.seq, time: rfc3339Ns(m.tsNs) };
  if (!req.no_hdr && m.hdr !== null && m.hdr.length > 0) w.hdrs = m.hdr.toString("base64");
  if (m.data.length > 0) w.data = m.data.toString("base64");
  // nats-server's field order: subject, seq, hdrs, data, time.
  const time = w.time;
  delete (w as { time?: string }).time;
  w.time = time;
  return { msg: w };
}

/** Validation of MSG.GET shapes: true when the request is a bad request (10003). */
export function msgGetIsBad(req: MsgGetRequest): boolean {
  const seq = req.seq ?? 0;
  const last = req.last_by_subj ?? "";
  const next = req.next_by_subj ?? "";
  const st = req.start_time !== undefined;
  if ((req.batch ?? 0) > 0 || (req.max_bytes ?? 0) > 0) return true;
  return (
    (seq > 0 && last !== "") ||
    (seq === 0 && last === "" && next === "" && !st) ||
    (seq > 0 && st) ||
    (st && last !== "") ||
    (last !== "" && next !== "")
  );
}

function status(bus: Bus, reply: string, code: number, text: string, entries: [string, string][] = []): void {
  bus.publish(reply, "", statusHeaders(code, text, entries), EMPTY);
}

function withHeaders(m: StoredMsg, stream: string, extra: [string, string][]): Buffer {
  // As nats-server: the stored header block keeps its bytes, the new lines go before its
  // final CRLF (or into a fresh "NATS/1.0" block).
  let s = "Nats-Stream: " + stream + "\r\nNats-Subject: " + m.subject + "\r\nNats-Sequence: " + m.seq + "\r\nNats-Time-Stamp: " + rfc3339Ns(m.tsNs) + "\r\n";
  for (const [k, v] of extra) s += k + ": " + v + "\r\n";
  s += "\r\n";
  const h = m.hdr;
  if (h === null || h.length === 0) return Buffer.from("NATS/1.0\r\n" + s, "utf8");
  // A block that does not end in a blank line (not one we wrote) is re-encoded from its parsed
  // entries first, which leaves it ending in one.
  const hb = endsWithBlankLine(h) ? h : appendHeaders(h, []);
  const n = hb.length;
  const tail = Buffer.from(s, "utf8");
  const out = Buffer.allocUnsafe(n - 2 + tail.length);
  hb.copy(out, 0, 0, n - 2);
  tail.copy(out, n - 2);
  return out;
}

/** The request in a direct get's JSON body; null when it is not one (Malformed Request). */
function decodeGetBody(body: Buffer): MsgGetRequest | null {
  let parsed: unknown;
  try {
    parsed = parseApiJson(body.toString("utf8"));
  } catch {
    return null;
  }
  return decodeMsgGet(parsed);
}

/** DIRECT.GET with a JSON body (body already checked non-empty). */
export function directGetRequest(
  bus: Bus,
  store: StreamStore,
  stream: string,
  reply: string,
  body: Buffer,
  maxPendingBytes: number,
): void {
  if (body.length === 0) return status(bus, reply, 408, "Empty Request");
  const req = decodeGetBody(body);
  if (req === null) return status(bus, reply, 408, "Malformed Request");
  const seq = req.seq ?? 0;
  const last = req.last_by_subj ?? "";
  const next = req.next_by_subj ?? "";
  const multi = req.multi_last ?? [];
  const st = req.start_time !== undefined;
  if (seq === 0 && last === "" && next === "" && multi.length === 0 && !st) {
    return status(bus, reply, 408, "Empty Request");
  }
  if (
    (seq > 0 && last !== "") ||
    (seq > 0 && st) ||
    (st && last !== "") ||
    (last !== "" && next !== "") ||
    (last !== "" && (req.batch ?? 0) > 0) ||
    (last !== "" && multi.length > 0) ||
    (next !== "" && multi.length > 0) ||
    ((req.up_to_seq ?? 0) > 0 && req.up_to_time !== undefined)
  ) {
    return status(bus, reply, 408, "Bad Request");
  }
  directGet(bus, store, stream, reply, req, maxPendingBytes);
}

/** DIRECT.GET.<stream>.<subject>: last message on the subject; a body may only carry no_hdr. */
export function directGetLastBySubject(
  bus: Bus,
  store: StreamStore,
  stream: string,
  reply: string,
  key: string,
  body: Buffer,
  maxPendingBytes: number,
): void {
  let req: MsgGetRequest = {};
  if (body.length > 0) {
    const r = decodeGetBody(body);
    if (r === null) return status(bus, reply, 408, "Malformed Request");
    req = r;
  }
  if (key === "") return status(bus, reply, 408, "Bad Request");
  if (
    req.last_by_subj !== undefined ||
    req.next_by_subj !== undefined ||
    (req.multi_last?.length ?? 0) > 0 ||
    (req.seq ?? 0) !== 0 ||
    (req.batch ?? 0) !== 0 ||
    req.start_time !== undefined ||
    (req.up_to_seq ?? 0) !== 0 ||
    req.up_to_time !== undefined
  ) {
    return status(bus, reply, 408, "Bad Request");
  }
  req.last_by_subj = key;
  directGet(bus, store, stream, reply, req, maxPendingBytes);
}

function directGet(bus: Bus, store: StreamStore, stream: string, reply: string, req: MsgGetRequest, maxPending: number): void {
  if ((req.multi_last?.length ?? 0) > 0) return directMulti(bus, store, stream, reply, req, maxPending);
  let seq = req.seq ?? 0;
  if (req.start_time !== undefined) seq = seqFromTime(store, parseRfc3339Ns(req.start_time));
  const next = req.next_by_subj ?? "";
  const isBatch = (req.batch ?? 0) > 0;
  const batch = isBatch ? req.batch! : 1;
  let np = isBatch ? store.numPending(seq, next, false) : 0;
  const mb = (req.max_bytes ?? 0) > 0 ? req.max_bytes! : maxPending;
  let sent = 0;
  let lseq = 0;
  for (let i = 0; i < batch; i++) {
    let m: StoredMsg | null;
    if (seq > 0 && next === "") {
      m = i === 0 && !isBatch ? store.loadMsg(seq) : store.loadNextMsg(">", seq);
      if (m !== null) seq = m.seq + 1;
    } else if (next !== "") {
      m = store.loadNextMsg(next, seq);
      if (m !== null) seq = m.seq + 1;
    } else {
      m = store.loadLastMsg(req.last_by_subj ?? "");
    }
    if (m === null) {
      if (batch > 1 && i > 0) break;
      return status(bus, reply, 404, "Message Not Found");
    }
    let hdr: Buffer | null = null;
    if (!req.no_hdr) {
      if (isBatch) {
        if (np > 0) np--;
        hdr = withHeaders(m, stream, [
          ["Nats-Num-Pending", String(np)],
          ["Nats-Last-Sequence", String(lseq)],
        ]);
      } else {
        hdr = withHeaders(m, stream, []);
      }
    }
    lseq = m.seq;
    bus.publish(reply, "", hdr, m.data);
    sent += Buffer.byteLength(m.subject) + (m.hdr?.length ?? 0) + m.data.length;
    if (sent >= mb) break;
  }
  if (isBatch) {
    np = store.numPending(seq, next, false);
    status(bus, reply, 204, "EOB", [
      ["Nats-Num-Pending", String(np)],
      ["Nats-Last-Sequence", String(lseq)],
    ]);
  }
}

function directMulti(bus: Bus, store: StreamStore, stream: string, reply: string, req: MsgGetRequest, maxPending: number): void {
  const st = store.state();
  let upTo = req.up_to_seq ?? 0;
  if (req.up_to_time !== undefined) {
    upTo = seqFromTime(store, parseRfc3339Ns(req.up_to_time));
    if (upTo <= st.firstSeq) return status(bus, reply, 404, "No Results");
    upTo--;
  }
  if (upTo === 0) upTo = st.lastSeq;
  const from = req.seq ?? 0;
  // The last message at or below upTo for every subject matching one of the filters.
  const found = new Map<string, StoredMsg>();
  for (const filter of req.multi_last ?? []) {
    if (isLiteral(filter) && upTo >= st.lastSeq) {
      const m = store.loadLastMsg(filter);
      if (m !== null && m.seq >= from) found.set(m.subject, m);
    } else {
      for (const [subj, ss] of store.subjectsState(filter)) {
        if (ss.last <= upTo && ss.last >= from) {
          const m = store.loadMsg(ss.last);
          if (m !== null) found.set(subj, m);
        } else if (ss.first <= upTo) {
          // Walk back from upTo for this subject.
          for (let s = Math.min(upTo, ss.last); s >= Math.max(ss.first, from, 1); s--) {
            const m = store.loadMsg(s);
            if (m !== null && m.subject === subj) {
              found.set(subj, m);
              break;
            }
          }
        }
        if (found.size > MULTI_MAX) break;
      }
    }
    if (found.size > MULTI_MAX) return status(bus, reply, 413, "Too Many Results");
  }
  if (found.size === 0) return status(bus, reply, 404, "No Results");
  const msgs = [...found.values()].sort((a, b) => a.seq - b.seq);
  const mb = (req.max_bytes ?? 0) > 0 ? req.max_bytes! : maxPending;
  let np = msgs.length;
  let lseq = 0;
  let sentBytes = 0;
  let sent = 0;
  for (const m of msgs) {
    np--;
    const hdr = withHeaders(m, stream, [
      ["Nats-Num-Pending", String(np)],
      ["Nats-Last-Sequence", String(lseq)],
    ]);
    lseq = m.seq;
    bus.publish(reply, "", hdr, m.data);
    sentBytes += Buffer.byteLength(m.subject) + (m.hdr?.length ?? 0) + m.data.length;
    if (sentBytes >= mb) break;
    sent++;
    if ((req.batch ?? 0) > 0 && sent >= req.batch!) break;
  }
  status(bus, reply, 204, "EOB", [
    ["Nats-Num-Pending", String(np)],
    ["Nats-Last-Sequence", String(lseq)],
    ["Nats-UpTo-Sequence", String(upTo)],
  ]);
}

function endsWithBlankLine(h: Buffer): boolean {
  const n = h.length;
  return n >= 12 && h[n - 4] === 13 && h[n - 3] === 10 && h[n - 2] === 13 && h[n - 1] === 10;
}
