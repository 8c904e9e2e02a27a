// The seam between the $JS.API router (api.ts, owned by the stream layer) and the consumer
// API (consumer-api.ts, owned by the consumer layer). The router parses nothing consumer
// specific: it hands over the subject tokens after "$JS.API.CONSUMER." and the raw request.

import type { Bus } from "../contracts/bus.js";
import type { Clock } from "../runtime/clock.js";
import type { Scheduler } from "../runtime/sched.js";
import type { Logger } from "../runtime/log.js";
import type { JetStreamOptions } from "../contracts/options.js";
import type { StreamHandle } from "../contracts/jetstream.js";
import type { ApiError } from "../contracts/errors.js";
import type { Fs } from "../runtime/fs.js";

export interface ConsumerApiContext {
  readonly bus: Bus;
  readonly clock: Clock;
  /** Deferred work of consumers (the delivery after a batch of acks). */
  readonly sched: Scheduler;
  readonly log: Logger;
  readonly opts: JetStreamOptions;
  readonly serverName: string;
  readonly serverId: string;
  readonly maxPayloadBytes: number;
  /** The JetStream service's Fs (encrypting when jetstream.key is set): consumer stores use it. */
  readonly fs: Fs;
  /** A stream by name, or undefined when there is none. Its addConsumer() throws a
   *  JsApiError (10026, maximum consumers limit reached) when max_consumers is reached. */
  getStream(name: string): StreamHandle | undefined;
  /** Names of all streams (sorted). */
  streamNames(): string[];
  /** Send a JSON reply (no-op when reply is ""). Counts the API call in $JS.API.INFO. */
  respond(reply: string, obj: unknown): void;
  /** Send `{"type":type,"error":{...}}` and count it as an API error. */
  respondError(reply: string, type: string, err: ApiError): void;
  /** Account-wide consumer limit check: true if one more consumer may be created. */
  canAddConsumer(): boolean;
  /** Yields to the event loop when the API's slice of this turn is used up (api.ts's pacer):
   *  work split in steps calls it between them. Absent: no yielding. */
  breathe?(): Promise<void>;
  /** For a create whose start is built over turns (breathe): asked once it is built; false
   *  drops the create without an answer (what asked for it no longer wants it). */
  stillWanted?(): boolean;
  /** Publish an advisory if anyone listens (subject under $JS.EVENT.ADVISORY.). */
  advisory(subject: string, body: Record<string, unknown>): void;
}

/** Signature of the consumer layer's entry point (src/jetstream/consumer-api.ts).
 *  op: the token after "CONSUMER." ("CREATE", "DURABLE", "INFO", "DELETE", "NAMES", "LIST",
 *  "MSG", "PAUSE", "UNPIN", "LEADER", ...). tokens: the tokens after op (e.g. for
 *  $JS.API.CONSUMER.CREATE.S.C.foo.> -> ["S","C","foo",">"]; for MSG.NEXT.S.C ->
 *  ["NEXT","S","C"]). hdr/payload: the request; buffers are only valid during the call.
 *  A promise when the request is answered later (a create that builds a big
 *  last_per_subject start over several turns): the caller awaits it. */
export type HandleConsumerApi = (
  ctx: ConsumerApiContext,
  op: string,
  tokens: string[],
  reply: string,
  hdr: Buffer | null,
  payload: Buffer,
) => void | Promise<void>;
