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
  const tail = (prefix: string): string | null => (rest.startsWith(prefix) ? rest.slice(prefix.length) : null);
  const one = (t: string | null): boolean => t !== null && t.length > 0 && t.indexOf(".") < 0;
  if (one(tail("STREAM.INFO.")) || one(tail("CONSUMER.NAMES.")) || one(tail("CONSUMER.LIST."))) return true;
  const t = tail("CONSUMER.INFO.");
  if (t === null) return false;
  const dot = t.indexOf(".");
  return dot > 0 && dot < t.length - 1 && t.indexOf(".", dot + 1) < 0;
}
