// RePublish: a copy of each stored message to a mapped subject, with headers naming where it
// is stored (nats-server's Nats-Stream, Nats-Subject, Nats-Sequence, Nats-Time-Stamp,
// Nats-Last-Sequence, and Nats-Msg-Size when only headers are sent).

import type { Bus } from "../contracts/bus.js";
import type { StreamConfig } from "../contracts/wire.js";
import { appendHeaders } from "../protocol/headers.js";
import { rfc3339Ns } from "./time.js";
import type { SubjectTransform } from "./transform.js";

const EMPTY = Buffer.alloc(0);

export function republish(
  bus: Bus,
  cfg: StreamConfig,
  tr: SubjectTransform | null,
  seq: number,
  subj: string,
  hdr: Buffer | null,
  payload: Buffer,
  tsNs: number,
  lastSeq: number,
): void {
  const rp = cfg.republish;
  if (rp === null || tr === null) return;
  const dest = tr.apply(subj);
  if (dest === null) return;
  const extra: [string, string][] = [
    ["Nats-Stream", cfg.name],
    ["Nats-Subject", subj],
    ["Nats-Sequence", String(seq)],
    ["Nats-Time-Stamp", rfc3339Ns(tsNs)],
    ["Nats-Last-Sequence", String(lastSeq)],
  ];
  if (rp.headers_only) extra.push(["Nats-Msg-Size", String(payload.length)]);
  const out = appendHeaders(hdr, extra);
  bus.publish(dest, "", out, rp.headers_only ? EMPTY : payload);
}
