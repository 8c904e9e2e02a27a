// A subscription in the index. The owner is either a client connection or an internal
// handler (JetStream, system services); routing only calls owner.deliverMsg.

import { isLiteral } from "../subjects/subject.js";
import type { SubLike } from "../subjects/sublist.js";
import type { DenyFilter } from "./permissions.js";
import type { AckReply } from "../protocol/ackreply.js";

export interface SubOwner {
  /** Connection id for clients, 0 for internal owners. */
  readonly cid: number;
  readonly echo: boolean;
  /** The payload is buf[start, end); hdr and buf are only valid during the call. With ack
   *  (a JetStream delivery), reply is "" and the reply subject is ack's. */
  deliverMsg(sub: Subscription, subject: string, reply: string, hdr: Buffer | null, buf: Buffer, start: number, end: number, ack: AckReply | null): void;
  /** Outbound bytes queued and not yet taken by the socket (0 for internal owners). */
  pendingBytes(): number;
}

/** A subscription in the index (made by newSubscription). */
export interface Subscription extends SubLike {
  readonly owner: SubOwner;
  readonly subject: string;
  readonly queue: string;
  readonly sid: string;
  /** Routes hear of it (RS+/RS-) and routed messages reach it: every client's, and an
   *  internal one only when subscribed with `cluster: true` (Bus.subscribe). Fixed for the
   *  subscription's life (the cluster counts interest by it). */
  readonly routable: boolean;
  delivered: number;
  /** 0 = unlimited; otherwise remove after this many deliveries (UNSUB <sid> <max>). */
  max: number;
  closed: boolean;
  /** For client deliveries: the subject wirePrefix ("<subject> <sid> ") was made for; only
   *  a literal subscription has one, since its messages all carry its own subject. */
  wireSubject: string | null;
  wirePrefix: Buffer | null;
  /** Set for a client's wildcard or queue subscription that a subscribe deny entry
   *  overlaps: routing skips the messages it denies (nats-server checkDenySub). */
  denyFilter: DenyFilter | null;
  /** A queue member that a local publish picks before any route's (BusSubscribeOptions). */
  preferLocal: boolean;
}

/** A new subscription. An object literal, not a class instance: V8 pretenures the objects
 *  of a literal site whose objects mostly survive (a SUB flood's do), so 100k subscriptions
 *  are not each copied twice by the young-generation GC (a constructor's are). */
export function newSubscription(owner: SubOwner, subject: string, queue: string, sid: string, routable: boolean = owner.cid !== 0): Subscription {
  return {
    owner,
    subject,
    queue,
    sid,
    routable,
    delivered: 0,
    max: 0,
    closed: false,
    wireSubject: isLiteral(subject) ? subject : null,
    wirePrefix: null,
    denyFilter: null,
    preferLocal: false,
  };
}
