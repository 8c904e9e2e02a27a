// Dead-lettering (beyond nats-server). A consumer with `x_dead_letter_subject` republishes a
// message that reached max_deliver or was terminated (+TERM) to that subject, payload and
// original headers included, plus:
//   X-Tsnats-DLQ-Stream       the consumer's stream
//   X-Tsnats-DLQ-Consumer     the consumer
//   X-Tsnats-DLQ-Subject      the message's original subject
//   X-Tsnats-DLQ-Sequence     its stream sequence
//   X-Tsnats-DLQ-Deliveries   how many times it was delivered
//   X-Tsnats-DLQ-Reason       "max_deliver" or "term"
//   X-Tsnats-DLQ-Term-Reason  the +TERM reason, when one was given
// A stream that captures the subject becomes the dead-letter queue.

import type { Bus } from "../contracts/bus.js";
import type { StoredMsg } from "../storage/types.js";
import { appendHeaders } from "../protocol/headers.js";

export function deadLetter(
  bus: Bus,
  subject: string,
  stream: string,
  consumer: string,
  m: StoredMsg,
  deliveries: number,
  reason: "max_deliver" | "term",
  termReason: string,
): void {
  const extra: [string, string][] = [
    ["X-Tsnats-DLQ-Stream", stream],
    ["X-Tsnats-DLQ-Consumer", consumer],
    ["X-Tsnats-DLQ-Subject", m.subject],
    ["X-Tsnats-DLQ-Sequence", String(m.seq)],
    ["X-Tsnats-DLQ-Deliveries", String(deliveries)],
    ["X-Tsnats-DLQ-Reason", reason],
  ];
  if (termReason !== "") extra.push(["X-Tsnats-DLQ-Term-Reason", termReason.replace(/[\r\n]/g, " ")]);
  bus.publish(subject, "", appendHeaders(m.hdr, extra), Buffer.from(m.data));
}
