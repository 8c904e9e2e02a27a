// The JetStream API's request queues (nats-server's ipQueue for jsAPIRoutedReqs and, since
// 2.11, jsAPIRoutedInfoReqs): requests copied out of the bus callback wait here in arrival
// order until the router works them.

export interface QueuedRequest {
  subject: string;
  /** The subject after "$JS.API.", split at the dots. */
  tokens: string[];
  reply: string;
  hdr: Buffer | null;
  payload: Buffer;
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
 *  CONSUMER.INFO.*.*. */
export function isInfoRequest(t: readonly string[]): boolean {
  const [a, b] = t;
  switch (t.length) {
    case 1:
      return a === "INFO";
    case 2:
      return a === "STREAM" && (b === "NAMES" || b === "LIST");
    case 3:
      return (a === "STREAM" && b === "INFO") || (a === "CONSUMER" && (b === "NAMES" || b === "LIST"));
    case 4:
      return a === "CONSUMER" && b === "INFO";
    default:
      return false;
  }
}
