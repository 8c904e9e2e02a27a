// A mirror or source whose origin has no copy on this server (clustered): read it through an
// internal consumer on the origin, as nats-server does, over the cluster. The feed creates an
// ephemeral pull consumer (ack none, in memory, one replica, removed when idle) with the same
// $JS.API requests a client would send (they reach the origin's leader wherever it is),
// pulls batches into an inbox announced over the routes, and hands each message to the sink
// in origin order with its origin sequence and time (read from the ack reply subject). A
// missed consumer sequence, a 409, an error or silence makes it start over from the next
// origin sequence the sink wants. Only the target stream's leader runs a feed.

import { randomBytes } from "node:crypto";
import type { Bus, InternalSubscription } from "../contracts/bus.js";
import type { Clock } from "../runtime/clock.js";
import type { Logger } from "../runtime/log.js";
import type { StoredMsg } from "../storage/types.js";
import type { RemoteFeed, RemoteStart } from "../stream/sourcing.js";
import { parseAckSubject } from "../consumer/ack.js";

const BATCH = 256;
const EXPIRES_NS = 2_000_000_000;
/** Start over when nothing (not even a 408 at the end of a pull) came for this long. */
const SILENT_MS = 6_000;
const INACTIVE_NS = 30_000_000_000;

export interface RemoteFeedDeps {
  /** The bus with cluster-wide subscriptions (clustered JetStream's stream bus). */
  bus: Bus;
  clock: Clock;
  log: Logger;
}

/** The status of a message with a status header ("NATS/1.0 408 ..."), or 0. */
function statusOf(hdr: Buffer | null): number {
  if (hdr === null || hdr.length < 12) return 0;
  const m = /^NATS\/1\.0 (\d{3})/.exec(hdr.subarray(0, 16).toString("latin1"));
  return m === null ? 0 : Number(m[1]);
}

export class ClusterRemoteFeed implements RemoteFeed {
  private readonly inbox: string;
  private sub: InternalSubscription | null = null;
  private consumer = "";
  /** Consumer sequence of the last message delivered (0: none yet on this consumer). */
  private cseq = 0;
  private outstanding = 0;
  /** Origin sequence of the last message handed to the sink by this feed (0: none). */
  private lastSseq = 0;
  private lastHeardMs: number;
  private closed = false;
  /** Bumped on every restart: replies for an older consumer are ignored. */
  private gen = 0;

  constructor(
    private readonly d: RemoteFeedDeps,
    private readonly origin: string,
    private start: RemoteStart,
    private readonly sink: (m: StoredMsg) => void,
  ) {
    this.inbox = `_INBOX.tsnats-src.${randomBytes(8).toString("hex")}`;
    this.lastHeardMs = d.clock.monoMs();
    this.sub = d.bus.subscribe(`${this.inbox}.>`, (subject, reply, hdr, payload) => this.onMsg(subject, reply, hdr, payload));
    this.create();
  }

  private create(): void {
    this.gen++;
    this.consumer = "";
    this.cseq = 0;
    this.outstanding = 0;
    this.lastHeardMs = this.d.clock.monoMs();
    const cfg: Record<string, unknown> = { ack_policy: "none", mem_storage: true, num_replicas: 1, inactive_threshold: INACTIVE_NS };
    if (this.start.seq > 0) {
      cfg["deliver_policy"] = "by_start_sequence";
      cfg["opt_start_seq"] = this.start.seq;
    } else if (this.start.time !== "") {
      cfg["deliver_policy"] = "by_start_time";
      cfg["opt_start_time"] = this.start.time;
    } else cfg["deliver_policy"] = "all";
    this.d.bus.publish(`$JS.API.CONSUMER.CREATE.${this.origin}`, `${this.inbox}.c.${this.gen}`, null, Buffer.from(JSON.stringify({ stream_name: this.origin, config: cfg })));
  }

  private pull(): void {
    if (this.closed || this.consumer === "") return;
    this.outstanding = BATCH;
    this.d.bus.publish(
      `$JS.API.CONSUMER.MSG.NEXT.${this.origin}.${this.consumer}`,
      `${this.inbox}.m.${this.gen}`,
      null,
      Buffer.from(JSON.stringify({ batch: BATCH, expires: EXPIRES_NS })),
    );
  }

  private dropConsumer(): void {
    if (this.consumer === "") return;
    this.d.bus.publish(`$JS.API.CONSUMER.DELETE.${this.origin}.${this.consumer}`, "", null, Buffer.alloc(0));
    this.consumer = "";
  }

  /** Start over from this origin position (after a gap, an error or silence). */
  restart(from: RemoteStart): void {
    if (this.closed) return;
    this.dropConsumer();
    this.start = from;
    this.create();
  }

  private onMsg(subject: string, reply: string, hdr: Buffer | null, payload: Buffer): void {
    if (this.closed) return;
    // <inbox>.c.<gen> (create reply) or <inbox>.m.<gen> (pulled messages); the MSG line of a
    // delivery may show the stored subject instead: then the reply is the ack subject.
    const ack = reply !== "" ? parseAckSubject(reply) : null;
    if (ack === null) {
      const rest = subject.startsWith(`${this.inbox}.`) ? subject.slice(this.inbox.length + 1) : "";
      const [kind, g] = rest.split(".");
      if (Number(g) !== this.gen) return;
      this.lastHeardMs = this.d.clock.monoMs();
      if (kind === "c") return this.onCreated(payload);
      if (kind === "m") return this.onStatus(statusOf(hdr));
      return;
    }
    if (ack.stream !== this.origin || ack.consumer !== this.consumer) return;
    this.lastHeardMs = this.d.clock.monoMs();
    if (ack.cseq !== this.cseq + 1) {
      // A delivery went missing (a route dropped it): start over where the sink is, right
      // after the last message it got (not at this one: what went missing came before it).
      this.d.log.debug(`JetStream source feed from '${this.origin}' missed consumer sequence ${this.cseq + 1}, starting over`);
      this.restart(this.lastSseq > 0 ? { seq: this.lastSseq + 1, time: "" } : this.start);
      return;
    }
    this.cseq = ack.cseq;
    this.lastSseq = ack.sseq;
    this.outstanding--;
    this.sink({ seq: ack.sseq, subject: subject.startsWith(`${this.inbox}.`) ? "" : subject, hdr, data: payload, tsNs: ack.tsNs });
    if (this.outstanding <= 0) this.pull();
  }

  private onCreated(payload: Buffer): void {
    let j: { name?: string; error?: { err_code: number; description: string } };
    try {
      j = JSON.parse(payload.toString("utf8")) as typeof j;
    } catch {
      return;
    }
    if (j.error !== undefined || typeof j.name !== "string") {
      // The origin may not exist yet, or have no leader: the tick tries again.
      this.d.log.debug(`JetStream source feed from '${this.origin}': ${j.error?.description ?? "no consumer name"}`);
      return;
    }
    this.consumer = j.name;
    this.pull();
  }

  private onStatus(status: number): void {
    // 404 no messages, 408 request expired: pull again. 409 (leadership change, consumer
    // deleted, batch completed) and anything else: pull again too; a consumer that is gone
    // answers nothing and the silence check starts over.
    if (status === 0) return;
    this.pull();
  }

  /** The coarse tick: start over after silence. next: where the sink wants to resume (null:
   *  nothing came yet, where this feed began). */
  tick(next: RemoteStart | null): void {
    if (this.closed) return;
    if (this.d.clock.monoMs() - this.lastHeardMs > SILENT_MS) this.restart(next ?? this.start);
  }

  close(): void {
    if (this.closed) return;
    this.dropConsumer();
    this.closed = true;
    this.sub?.unsubscribe();
    this.sub = null;
  }
}
