// The internal message bus: how in-process services (JetStream, the system account
// responders, monitoring) take part in subject routing without a socket. Handlers run
// synchronously inside fan-out, so they must not block; they may publish (re-entrant
// routing is safe because the subscription index is copy-on-write).

import type { AckReply } from "../protocol/ackreply.js";

/** A message seen by an internal subscriber. `hdr` is the raw header block
 *  ("NATS/1.0...\r\n\r\n") or null; `payload` excludes headers. Buffers are only valid
 *  during the call: copy what you keep. */
export type InternalHandler = (
  subject: string,
  reply: string,
  hdr: Buffer | null,
  payload: Buffer,
) => void;

/** A JetStream ack seen straight from a client's read buffer: buf[start, end) is the part of
 *  the ack subject after "$JS.ACK.<stream>.<consumer>." and pbuf[pstart, pend) the payload.
 *  Both are only valid during the call. Returns false, having done nothing, for a subject it
 *  does not parse: the message is then routed as usual. */
export type AckBytesHandler = (buf: Buffer, start: number, end: number, reply: string, pbuf: Buffer, pstart: number, pend: number) => boolean;

export interface InternalSubscription {
  readonly subject: string;
  unsubscribe(): void;
}

/** How an internal subscription takes part in the cluster. */
export interface BusSubscribeOptions {
  /** false (the default): local only. Routes never hear of the subscription and a message
   *  that came over a route never reaches it.
   *  true: announced to routes exactly like a client's subscription (RS+ when the subject
   *  or queue group gains it, RS- when it goes; counted together with clients' on the same
   *  subject / queue), so a publish by a client on any server of the cluster reaches it, and
   *  a routed message (RMSG/HMSG) is delivered to it; with a queue, it is one member of the
   *  cluster-wide group. The one-hop rule is unchanged: what came from a route is never sent
   *  on to another route. Fixed at subscribe time. (Stable API: replicated JetStream's
   *  stream-leader ingest, ack, flow-control and deliver-side subscriptions use it.) */
  cluster?: boolean;
  /** With `cluster` and a queue: a message published on this server goes to this server's
   *  member of the group whenever it has one, never to a route's (the clustered $JS.API
   *  handlers: any JetStream server can take a request, so the nearest one does; routes
   *  carry only what servers without a member, e.g. without JetStream, publish). */
  preferLocal?: boolean;
}

export interface Bus {
  /** borrow: the handler copies whatever it keeps beyond the call (a stream's store does), so
   *  hdr and payload may be views of a client's read buffer instead of copies per message.
   *  opts.cluster: announce it to routes and take routed messages (BusSubscribeOptions). */
  subscribe(subject: string, handler: InternalHandler, queue?: string, borrow?: boolean, opts?: BusSubscribeOptions): InternalSubscription;
  /** subscribe(prefix + ">", handler), and while that subscription is the only one any
   *  `prefix...` subject matches (here and in the routes' interest), a client's plain PUB to
   *  such a subject may go to onBytes instead, without a subject string or a routing lookup.
   *  prefix is "$JS.ACK.<stream>.<consumer>.". opts as for subscribe (cluster: acks published
   *  on other servers arrive through handler). Optional for test fakes: subscribe stands in. */
  subscribeAck?(prefix: string, handler: InternalHandler, onBytes: AckBytesHandler, opts?: BusSubscribeOptions): InternalSubscription;
  /** Route a message as if a client had published it. */
  publish(subject: string, reply: string, hdr: Buffer | null, payload: Buffer): void;
  /** publish() with the payload as buf[start, end), valid during the call only (no view made
   *  per message). Optional for test fakes: publish(..., buf.subarray(start, end)) stands in. */
  publishRange?(subject: string, reply: string, hdr: Buffer | null, buf: Buffer, start: number, end: number): void;
  /** Route by `deliverSubject` but show `msgSubject` in the MSG line (JetStream deliveries
   *  keep the stored subject while going to an inbox or deliver subject). Optional so that
   *  test fakes need not implement it; callers fall back to publish(deliverSubject, ...).
   *  Returns true when a receiving connection is backed up (its outbound backlog is past a
   *  fraction of the slow-consumer bound): the deliverer should pause and try again shortly
   *  instead of queueing until the client is cut off. */
  deliverAs?(deliverSubject: string, msgSubject: string, reply: string, hdr: Buffer | null, payload: Buffer): boolean;
  /** deliverAs with the reply subject held by ack as numbers (a client connection writes it
   *  without making a string). Optional: callers fall back to deliverAs(..., ack.toString()). */
  deliverAck?(deliverSubject: string, msgSubject: string, ack: AckReply, hdr: Buffer | null, payload: Buffer): boolean;
  /** Map what clients publish under `prefix` (nats-server's account subject mappings, here
   *  the JetStream domain's): map(subject) is the subject the message is routed and delivered
   *  as, or null to leave it. "" removes the mapping. Optional for test fakes. */
  mapSubjects?(prefix: string, map: ((subject: string) => string | null) | null): void;
  /** True when at least one subscription (client or internal) matches. */
  hasInterest(subject: string): boolean;
  /** True when a member of queue group `queue` matches (a push consumer's deliver_group:
   *  only such members count as interest). Optional for test fakes: hasInterest stands in. */
  hasQueueInterest?(subject: string, queue: string): boolean;
}
