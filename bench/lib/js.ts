// JetStream helpers over raw sockets: API calls for setup, and a windowed request driver
// used for JetStream publish (PubAck), KV put and direct get.

import { lastTokenNumber, statusCode, type RawConn } from "./conn.js";
import { nowNs, waitFor } from "./load.js";
import { newInboxPrefix, type Requester } from "./request.js";

export interface StreamState {
  messages: number;
  bytes: number;
  first_seq: number;
  last_seq: number;
}

export interface StreamInfo {
  config: { name: string };
  state: StreamState;
}

export async function createStream(req: Requester, config: Record<string, unknown>): Promise<StreamInfo> {
  const name = String(config["name"]);
  return req.api<StreamInfo>(`$JS.API.STREAM.CREATE.${name}`, config);
}

export async function streamInfo(req: Requester, name: string, timeoutMs = 10_000): Promise<StreamInfo> {
  return req.api<StreamInfo>(`$JS.API.STREAM.INFO.${name}`, undefined, timeoutMs);
}

/** Best effort: used for cleanup between cases. */
export async function deleteStream(req: Requester, name: string): Promise<void> {
  try {
    await req.api(`$JS.API.STREAM.DELETE.${name}`, undefined);
  } catch {
    /* already gone, or the server is down; the next case reports that */
  }
}

export function fileStreamConfig(name: string, subjects: string[]): Record<string, unknown> {
  return { name, subjects, storage: "file", num_replicas: 1 };
}

export async function createConsumer(
  req: Requester,
  stream: string,
  name: string,
  config: Record<string, unknown>,
): Promise<void> {
  await req.api(`$JS.API.CONSUMER.CREATE.${stream}.${name}`, {
    stream_name: stream,
    config: { durable_name: name, ...config },
  });
}

export async function deleteConsumer(req: Requester, stream: string, name: string): Promise<void> {
  try {
    await req.api(`$JS.API.CONSUMER.DELETE.${stream}.${name}`, undefined);
  } catch {
    /* best effort */
  }
}

/** Reply check for a PubAck: null when fine, else a description. */
export function pubAckError(hdr: Buffer | null, payload: Buffer): string | null {
  const st = statusCode(hdr);
  if (st === 503) return "no responders (no stream for the subject?)";
  if (st !== 0) return `status ${st}`;
  if (payload.includes('"error"')) return payload.toString("utf8").slice(0, 200);
  return null;
}

export interface WindowPlan {
  /** Request subjects, used round-robin by request number. */
  subjects: string[];
  payload: Buffer;
  /** Requests in flight; 1 = one at a time. */
  window: number;
  maxMsgs: number;
  deadlineNs: number;
  collectLatency: boolean;
  check: (hdr: Buffer | null, payload: Buffer) => string | null;
}

export interface WindowResult {
  done: number;
  ns: number;
  lat: number[];
}

// Sent-at times are kept in a ring indexed by request number; replies that come back more
// than this many requests late would be mis-timed, which cannot happen with window <= ring.
const RING = 1 << 16;

/**
 * Keep `window` requests in flight, each with its own reply subject `<inbox>.<n>`, and send
 * the next one from inside the reply handler so that queued output is flushed once per read.
 * Stops at the first bad reply and rejects with its description.
 */
export async function windowedRequests(conn: RawConn, p: WindowPlan): Promise<WindowResult> {
  if (p.window > RING) throw new Error(`window ${p.window} above ${RING}`);
  const inbox = newInboxPrefix();
  const sentAt = new Float64Array(RING);
  const lat: number[] = [];
  const nSubjects = p.subjects.length;
  let sent = 0;
  let done = 0;
  let failure: string | null = null;
  let sending = true;

  const sendOne = (): void => {
    const id = sent++;
    sentAt[id & (RING - 1)] = nowNs();
    conn.queuePub(p.subjects[id % nSubjects]!, `${inbox}.${id}`, p.payload);
  };
  const sid = conn.sub(`${inbox}.*`, (subject, _reply, hdr, payload) => {
    const t = nowNs();
    const id = lastTokenNumber(subject);
    if (p.collectLatency) lat.push(t - sentAt[id & (RING - 1)]!);
    done++;
    const err = p.check(hdr, payload);
    if (err !== null && failure === null) {
      failure = err;
      sending = false;
    }
    if (sending) {
      if (sent < p.maxMsgs && t < p.deadlineNs) sendOne();
      else sending = false;
    }
  });
  conn.flush();
  await conn.ping();

  const t0 = nowNs();
  const first = Math.min(p.window, p.maxMsgs);
  for (let k = 0; k < first; k++) sendOne();
  conn.flush();
  await waitFor([conn], () => !sending && done >= sent, () => done, 15_000, "waiting for replies");
  const ns = nowNs() - t0;
  conn.unsub(sid);
  conn.flush();
  if (failure !== null) throw new Error(failure);
  return { done, ns, lat };
}
