// What a replicated stream's consumer sends, held until the operations behind it commit.
//
// A delivery is a `delivered` operation on the ledger; on a replicated stream that operation
// travels in the stream's Raft log (src/jscluster/consumer-repl.ts), and the message goes out
// only once the entry carrying it has committed and applied on this leader (nats-server since
// 2.11, #6792). Otherwise a leader that loses its quorum, or crashes, right after sending has
// delivered messages the replicas never heard of, and a deposed leader that does not know it
// yet could redeliver a message the new leader has confirmed acked.
//
// No promise or timer per message: each held message is tagged with the batch its operation
// travels in (ConsumerReplicator.opsGen), the outbox asks to hear of each batch once
// (afterCommit), and when a batch applies everything tagged with it or an earlier one goes
// out, in order. Everything else the consumer sends (pull statuses, heartbeats, flow control)
// passes straight through while nothing is held, and queues behind what is held otherwise,
// so a client never sees a request's 404/408/409 before the messages sent for it. If
// leadership goes first, what is held is dropped: the next leader redelivers from the agreed
// state what was committed as delivered.

import type { Bus } from "../contracts/bus.js";
import type { CommitWaiter, ConsumerReplicator } from "../contracts/jetstream.js";
import { AckReply } from "../protocol/ackreply.js";
import { ackSubject } from "./ack.js";

/** The delivery loop pauses while this much waits for a commit; the commit resumes it. */
const MAX_HELD_MSGS = 4096;
const MAX_HELD_BYTES = 8 * 1024 * 1024;

const EMPTY = Buffer.alloc(0);

/** Where a consumer's non-delivery messages go (the bus, or the outbox in front of it). */
export interface Publisher {
  publish(subject: string, reply: string, hdr: Buffer | null, payload: Buffer): void;
}

/** One held message (reused). A delivery's reply subject is built from its numbers when it
 *  is sent; another message keeps its reply as given. */
class Held {
  gen = 0;
  delivery = false;
  to = "";
  subject = "";
  reply = "";
  hdr: Buffer | null = null;
  data: Buffer = EMPTY;
  size = 0;
  dc = 0;
  sseq = 0;
  cseq = 0;
  tsNs = 0;
  pending = 0;
}

export class Outbox implements CommitWaiter, Publisher {
  private q: Held[] = [];
  private head = 0;
  private readonly spare: Held[] = [];
  private bytes = 0;
  /** The last batch afterCommit was asked about (0: none since the last drop). */
  private registered = 0;
  private committedGen = 0;
  private readonly ack: AckReply;
  /** A message sent on release found its receiver backed up: the delivery loop pauses. */
  congested = false;
  /** The delivery loop stopped because too much is held: resume it once some went out. */
  stalled = false;
  /** Messages sent on release (tests, stats). */
  released = 0;

  constructor(
    private readonly bus: Bus,
    private readonly repl: ConsumerReplicator,
    ackPrefix: string,
    private readonly resume: () => void,
  ) {
    this.ack = new AckReply(ackPrefix);
  }

  get held(): number {
    return this.q.length - this.head;
  }

  get full(): boolean {
    return this.q.length - this.head >= MAX_HELD_MSGS || this.bytes >= MAX_HELD_BYTES;
  }

  /** A delivery whose `delivered` operation was just recorded: sent once it commits. hdr and
   *  data must not be views that change (the caller loads them owned). size: its bytes. */
  deliver(to: string, subject: string, hdr: Buffer | null, data: Buffer, size: number, dc: number, sseq: number, cseq: number, tsNs: number, pending: number): void {
    const gen = this.repl.opsGen();
    // Not leading (the operation was not taken): a replica that does not lead never delivers.
    if (gen === 0 || !this.repl.leading) return;
    const h = this.push(gen);
    h.delivery = true;
    h.to = to;
    h.subject = subject;
    h.reply = "";
    h.hdr = hdr;
    h.data = data;
    h.size = size;
    h.dc = dc;
    h.sseq = sseq;
    h.cseq = cseq;
    h.tsNs = tsNs;
    h.pending = pending;
    this.bytes += size;
    if (gen !== this.registered) {
      this.registered = gen;
      this.repl.afterCommit(this);
    }
  }

  publish(subject: string, reply: string, hdr: Buffer | null, payload: Buffer): void {
    const q = this.q;
    if (this.head === q.length) return this.bus.publish(subject, reply, hdr, payload);
    const h = this.push(q[q.length - 1]!.gen);
    h.delivery = false;
    h.to = subject;
    h.subject = "";
    h.reply = reply;
    h.hdr = hdr;
    h.data = payload;
    h.size = 0;
  }

  committed(gen: number): void {
    if (gen > this.committedGen) this.committedGen = gen;
    const q = this.q;
    const bus = this.bus;
    let h = this.head;
    let congested = false;
    while (h < q.length && q[h]!.gen <= this.committedGen) {
      const x = q[h++]!;
      if (x.delivery) {
        if (this.send(x)) congested = true;
        this.bytes -= x.size;
        this.released++;
      } else bus.publish(x.to, x.reply, x.hdr, x.data);
      x.hdr = null;
      x.data = EMPTY;
      this.spare.push(x);
    }
    if (h === q.length) {
      q.length = 0;
      this.head = 0;
      this.bytes = 0;
    } else if (h > 1024 && h * 2 > q.length) {
      this.q = q.slice(h);
      this.head = 0;
    } else this.head = h;
    if (congested) this.congested = true;
    if (this.stalled && !this.full) {
      this.stalled = false;
      this.resume();
    }
  }

  dropped(): void {
    const q = this.q;
    for (let i = this.head; i < q.length; i++) {
      const x = q[i]!;
      x.hdr = null;
      x.data = EMPTY;
      this.spare.push(x);
    }
    q.length = 0;
    this.head = 0;
    this.bytes = 0;
    this.registered = 0;
    this.stalled = false;
    this.congested = false;
  }

  private push(gen: number): Held {
    const h = this.spare.pop() ?? new Held();
    h.gen = gen;
    this.q.push(h);
    return h;
  }

  /** Send a held delivery; true when its receiver is backed up. */
  private send(x: Held): boolean {
    const bus = this.bus;
    if (bus.deliverAck !== undefined) {
      const a = this.ack;
      a.set(x.dc, x.sseq, x.cseq, x.tsNs, x.pending);
      return bus.deliverAck(x.to, x.subject, a, x.hdr, x.data);
    }
    const reply = ackSubject(this.ack.prefix, x.dc, x.sseq, x.cseq, x.tsNs, x.pending);
    if (bus.deliverAs !== undefined) return bus.deliverAs(x.to, x.subject, reply, x.hdr, x.data);
    bus.publish(x.to, reply, x.hdr, x.data);
    return false;
  }
}
