// The JetStream API's request queues (nats-server's ipQueue for jsAPIRoutedReqs and, since
// 2.11, jsAPIRoutedInfoReqs): requests copied out of the bus callback wait here in arrival
// order until the router works them.

export interface QueuedRequest {
  subject: string;
  /** The subject after "$JS.API.". */
  rest: string;
  reply: string;
  hdr: Buffer | null;
  payload: Buffer;
  /** Forwarded by another server to be handled on this one's own streams. */
  local?: boolean;
}

export class RequestQueue {
  /** Requests waiting, from `head` on (compacted once half of it is done). */
  private items: QueuedRequest[] = [];
  private head = 0;

  /** name: as nats-server names the queue in its limit warning. */
  constructor(readonly name: string) {}

  get length(): number {
    return this.items.length - this.head;
  }

  push(r: QueuedRequest): number {
    this.items.push(r);
    return this.length;
  }

  shift(): QueuedRequest | undefined {
    if (this.head >= this.items.length) return undefined;
    const r = this.items[this.head]!;
    this.items[this.head++] = undefined as unknown as QueuedRequest;
    if (this.head >= this.items.length) this.clear();
    else if (this.head >= 1024 && this.head * 2 >= this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    return r;
  }

  /** Drops everything waiting; returns how many. */
  clear(): number {
    const n = this.length;
    this.items = [];
    this.head = 0;
    return n;
  }
}

/** Subjects (after "$JS.API.") that go to the info queue, as nats-server's infoSubs:
 *  INFO, STREAM.NAMES, STREAM.LIST, STREAM.INFO.*, CONSUMER.NAMES.*, CONSUMER.LIST.*,
 *  CONSUMER.INFO.*.*. Decided on the string (a queued request keeps no token array). */
export function isInfoRequest(rest: string): boolean {
  if (rest === "INFO" || rest === "STREAM.NAMES" || rest === "STREAM.LIST") return true;
  // One token after the prefix (no string or closure made: a burst calls this per request).
  if (rest.startsWith("STREAM.INFO.")) return oneToken(rest, 12);
  if (rest.startsWith("CONSUMER.NAMES.")) return oneToken(rest, 15);
  if (rest.startsWith("CONSUMER.LIST.")) return oneToken(rest, 14);
  if (!rest.startsWith("CONSUMER.INFO.")) return false;
  const dot = rest.indexOf(".", 14);
  return dot > 14 && dot < rest.length - 1 && rest.indexOf(".", dot + 1) < 0;
}

/** rest[from..] is one non-empty token. */
function oneToken(rest: string, from: number): boolean {
  return rest.length > from && rest.indexOf(".", from) < 0;
}
