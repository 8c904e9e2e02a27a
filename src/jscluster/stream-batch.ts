// The publishes a stream leader proposes (stream-group.ts): with a scheduler, those taken in
// one job (one socket read) are gathered into one Raft entry, proposed at the job's end (a
// microtask) or once the batch is full: one publish as a MSG entry, more as a BATCH entry
// ([BATCH header][u32 len, MSG entry]..., stream-codec.ts). Without one, each publish is its
// own MSG entry. The reply subject of each publish that wants a PubAck is noted under its key
// (Raft index × KEY_SPAN + place in its batch, stream-acks.ts) for the apply to answer. A
// proposal the Raft refuses (leadership moving or lost) drops its publishes: no PubAck, the
// client retries.

import type { RaftHost } from "../raft/host.js";
import { RaftError } from "../raft/types.js";
import type { Scheduler } from "../runtime/sched.js";
import type { StreamEntry } from "../stream/entry.js";
import type { Stream } from "../stream/stream.js";
import { type AckKeys, KEY_SPAN } from "./stream-acks.js";
import { BATCH_HDR, MAX_BATCH_MSGS, OP_BATCH, decodeMsgOp, encodeMsgOp, forEachBatchMsg, msgOpSize, writeMsgOp } from "./stream-codec.js";

/** A batch is proposed once it holds this many bytes (else at the end of the job). */
const MAX_BATCH_BYTES = 1024 * 1024;

/** What the batch needs from its stream group. */
export interface BatchHost {
  readonly host: RaftHost;
  readonly group: string;
  readonly sched: Scheduler | undefined;
  readonly stream: Stream;
  /** The PubAcks the leader owes, by key. */
  readonly acks: AckKeys;
  /** The group's decoding scratch entry. */
  readonly scratch: StreamEntry;
  closed(): boolean;
}

export class PublishBatch {
  /** Publishes taken in this job, not proposed yet: [BATCH header][u32 len, MSG entry]... */
  private buf: Buffer = Buffer.allocUnsafe(64 * 1024);
  private len = BATCH_HDR;
  private replies: string[] = [];
  private flushQueued = false;

  constructor(private readonly h: BatchHost) {}

  /** A checked publish of the leader taking publishes. Valid only during the call. */
  add(e: StreamEntry): void {
    const h = this.h;
    const sched = h.sched;
    if (sched === undefined) {
      let index: number;
      try {
        index = h.host.propose(h.group, encodeMsgOp(e));
      } catch (err) {
        // Leadership is moving (a transfer) or was lost: no PubAck, the client retries.
        h.stream.proposalDropped(e);
        if (!(err instanceof RaftError)) throw err;
        return;
      }
      if (e.reply !== "") h.acks.add(index * KEY_SPAN, e.reply);
      return;
    }
    const size = msgOpSize(e);
    const n = this.replies.length;
    if (n > 0 && (n >= MAX_BATCH_MSGS || this.len + 4 + size > MAX_BATCH_BYTES)) this.flush();
    const need = this.len + 4 + size;
    if (need > this.buf.length) {
      const b = Buffer.allocUnsafe(Math.max(need, this.buf.length * 2));
      this.buf.copy(b, 0, 0, this.len);
      this.buf = b;
    }
    this.buf.writeUInt32LE(size, this.len);
    this.len = writeMsgOp(this.buf, this.len + 4, e);
    this.replies.push(e.reply);
    if (!this.flushQueued) {
      this.flushQueued = true;
      sched.microtask(this.flushFn);
    }
  }

  private readonly flushFn = (): void => {
    this.flushQueued = false;
    this.flush();
  };

  /** Propose the publishes gathered in this job: one as a MSG entry, more as a BATCH. */
  flush(): void {
    const h = this.h;
    const replies = this.replies;
    const n = replies.length;
    if (n === 0 || h.closed()) return;
    const b = this.buf;
    let data: Buffer;
    if (n === 1) data = Buffer.from(b.subarray(BATCH_HDR + 4, this.len));
    else {
      b[0] = OP_BATCH;
      b.writeUInt16LE(n, 1);
      if (this.len * 2 >= b.length) {
        // Mostly full: the entry keeps this buffer and the next batch gets a new one (no copy).
        data = b.subarray(0, this.len);
        this.buf = Buffer.allocUnsafe(b.length);
      } else data = Buffer.from(b.subarray(0, this.len));
    }
    this.len = BATCH_HDR;
    this.replies = [];
    let index: number;
    try {
      index = h.host.propose(h.group, data);
    } catch (err) {
      // Leadership is moving or was lost: none of them is in flight, none gets a PubAck.
      if (n === 1) h.stream.proposalDropped(decodeMsgOp(data, h.scratch));
      else forEachBatchMsg(data, (start, end) => h.stream.proposalDropped(decodeMsgOp(data, h.scratch, start, end)));
      if (!(err instanceof RaftError)) throw err;
      return;
    }
    const base = index * KEY_SPAN;
    for (let k = 0; k < n; k++) {
      const r = replies[k]!;
      if (r !== "") h.acks.add(base + k, r);
    }
  }

  /** Leadership started or ended: the publishes gathered are forgotten (never proposed). */
  reset(): void {
    this.len = BATCH_HDR;
    this.replies = [];
  }
}
