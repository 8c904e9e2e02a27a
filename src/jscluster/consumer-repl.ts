// A replicated stream's consumers (issue 18): the stream leader's consumers run as on one
// server and report every ledger operation they apply (ConsumerReplicator); the operations of
// one turn travel as one CONSUMERS entry in the stream's own Raft log, after the stream
// entries they depend on, and every replica (the leader too) applies committed ones to its
// copy of each consumer's ledger. So each replica holds every consumer's agreed state, and a
// new stream leader starts its consumers from it: what was acked before the old leader's
// entry committed stays acked, what was delivered and not acked is redelivered after its ack
// wait, and nothing committed is lost. The copies are part of the stream group's snapshot.
//
// A consumer runs only where the stream leads, so its leader is the stream's leader.
// A delivery goes out only once its `delivered` operation has committed and applied here
// (nats-server since 2.11, #6792): the consumer holds what it sends in its outbox
// (src/consumer/outbox.ts), which asks afterCommit() once per batch, and one turn's
// deliveries go together when the entry carrying them applies. So a leader that loses its
// quorum (or crashes) before the entry commits has delivered nothing the replicas do not
// know of, and a deposed leader cannot redeliver what the new one has seen acked. An
// AckSync (an ack with a reply) is answered only once its operation has committed.
//
// The entry, after its op byte (stream-codec.ts OP_CONSUMERS): records, each a type byte:
//   1 NAME  u16 length, name: the consumer the records after it are about
//   2 CFG   u8 ack policy (0 none, 1 all, 2 explicit), f64 max_deliver, f64 max_ack_pending,
//           f64 created (ns), u32 length, the config as wire JSON
//   3 DEL   the consumer was deleted
//   4 OP    u8 kind (LedgerKind), f64 a, f64 b, f64 c, f64 d
//   5 GONE  u32 count, count × f64 sequence
//   6 LPS   f64 sequence: a last_per_subject consumer's first phase ends there (the stream's
//           last sequence when the consumer was made), so a new leader resumes that phase

import { LedgerKind, type CommitWaiter, type ConsumerReplicator, type ConsumerSeed, type ReplicatedConsumer } from "../contracts/jetstream.js";
import { ConsumerLedger, type LedgerOp, type LedgerAckPolicy } from "../consumer/ledger.js";
import { decodeConsumerState, encodeConsumerState } from "../storage/file/consumer.js";
import type { ConsumerState } from "../storage/types.js";

export const OP_CONSUMERS = 6;

const REC_NAME = 1;
const REC_CFG = 2;
const REC_DEL = 3;
const REC_OP = 4;
const REC_GONE = 5;
const REC_LPS = 6;
/** After the consumers in a snapshot: u32 count, then per consumer with a last_per_subject
 *  end, u16 name length, name, f64 end ("LPSE"; a snapshot written before it has none). */
const LPS_TRAILER = 0x4553504c;
const OP_REC_LEN = 1 + 1 + 32;
const POLICIES: readonly LedgerAckPolicy[] = ["none", "all", "explicit"];

/** Where the replicator's batches go: the stream group proposes them (the Raft index, or an
 *  exception when this replica no longer leads). */
export interface ConsumerReplHost {
  propose(data: Buffer): number;
  /** Defer fn to the end of this turn (the batch of one turn becomes one entry). */
  later(fn: () => void): void;
  publishReply(reply: string): void;
  /** The stream group's cluster block, with the cluster's name. */
  clusterInfo(): Record<string, unknown>;
  /** {name, leader: this server} for a consumer that is not replicated. */
  localInfo(): Record<string, unknown>;
}

interface Shadow {
  ledger: ConsumerLedger;
  policy: LedgerAckPolicy;
  maxDeliver: number;
  maxAckPending: number;
  config: string;
  createdNs: number;
  /** REC_LPS: 0 when the consumer is not last_per_subject. */
  lpsEnd: number;
}

/** Plain acks held while an entry is in flight are proposed anyway past this size. */
const ACK_HOLD_BYTES = 256 * 1024;

export class ConsumerRepl implements ConsumerReplicator {
  private _leading = false;
  /** Counts the terms this replica started leading in (bind()). */
  private _epoch = 0;
  private readonly shadows = new Map<string, Shadow>();
  private buf: Buffer = Buffer.allocUnsafe(16 * 1024);
  private len = 1;
  private curName = "";
  private flushQueued = false;
  /** The batch being built holds more than plain acks (deliveries, replies or waiters that
   *  wait for its commit, config, removals): it is proposed at once. */
  private urgent = false;
  /** A batch of plain acks waits for the entry in flight to apply (flush). */
  private holding = false;
  /** AckSync replies waiting for the batch being built. */
  private batchReplies: string[] = [];
  /** Replies waiting for a proposed index to be applied: [index, reply] pairs in order. */
  private waitIdx: number[] = [];
  private waitReply: string[] = [];
  private waitHead = 0;
  /** The last index this replicator proposed, and the last index applied here. */
  private lastProposed = 0;
  private appliedIndex = 0;
  /** Batches proposed so far (never reset: the batch being built is proposedGen + 1). */
  private proposedGen = 0;
  /** Waiting for the batch being built (afterCommit). */
  private batchWaiters: CommitWaiter[] = [];
  /** Waiting for proposed batches, in order: the entry's index, the batch's gen, who. */
  private wIdx: number[] = [];
  private wGen: number[] = [];
  private waiters: CommitWaiter[] = [];
  private wHead = 0;
  /** Operations applied to the copies (tests). */
  appliedOps = 0;

  constructor(private readonly host: ConsumerReplHost) {}

  get leading(): boolean {
    return this._leading;
  }

  get epoch(): number {
    return this._epoch;
  }

  bind(): ConsumerReplicator {
    return new TermView(this, this._epoch);
  }

  /** The stream group takes publishes (true) or stopped leading (false): a batch not
   *  proposed yet is dropped (its consumers stop; the new leader redelivers). */
  setLeading(on: boolean): void {
    this._leading = on;
    if (on) this._epoch++;
    this.len = 1;
    this.urgent = false;
    this.holding = false;
    this.curName = "";
    this.batchReplies = [];
    if (!on) {
      this.waitIdx = [];
      this.waitReply = [];
      this.waitHead = 0;
    }
    // What waited for a commit in another term is never answered (its consumers stop; the
    // next leader redelivers from the agreed state).
    const dropped = this.batchWaiters.concat(this.waiters.slice(this.wHead));
    this.batchWaiters = [];
    this.wIdx = [];
    this.wGen = [];
    this.waiters = [];
    this.wHead = 0;
    for (let i = 0; i < dropped.length; i++) dropped[i]!.dropped();
  }

  // ---------- ConsumerReplicator (the leader's consumers) ----------

  state(name: string): ConsumerState | null {
    const s = this.shadows.get(name);
    return s === undefined ? null : cloneState(s.ledger.state);
  }

  clusterInfo(replicated: boolean): Record<string, unknown> {
    return replicated ? this.host.clusterInfo() : this.host.localInfo();
  }

  names(): string[] {
    return [...this.shadows.keys()];
  }

  configure(name: string, ackPolicy: LedgerAckPolicy, maxDeliver: number, maxAckPending: number, config: string, createdNs: number): void {
    if (!this._leading) return;
    const cl = Buffer.byteLength(config);
    const p = this.room(name, 1 + 1 + 24 + 4 + cl);
    const b = this.buf;
    b[p] = REC_CFG;
    b[p + 1] = POLICIES.indexOf(ackPolicy);
    b.writeDoubleLE(maxDeliver, p + 2);
    b.writeDoubleLE(maxAckPending, p + 10);
    b.writeDoubleLE(createdNs, p + 18);
    b.writeUInt32LE(cl, p + 26);
    b.write(config, p + 30, "utf8");
    this.len = p + 30 + cl;
    this.urgent = true;
  }

  consumers(): ReplicatedConsumer[] {
    const out: ReplicatedConsumer[] = [];
    for (const [name, s] of this.shadows) out.push({ name, config: s.config, createdNs: s.createdNs, state: cloneState(s.ledger.state), lpsEnd: s.lpsEnd });
    return out;
  }

  lastPerSubject(name: string, endSeq: number): void {
    if (!this._leading) return;
    const p = this.room(name, 9);
    this.buf[p] = REC_LPS;
    this.buf.writeDoubleLE(endSeq, p + 1);
    this.len = p + 9;
    this.urgent = true;
  }

  removed(name: string): void {
    if (!this._leading) return;
    const p = this.room(name, 1);
    this.buf[p] = REC_DEL;
    this.len = p + 1;
    this.urgent = true;
  }

  op(name: string, kind: LedgerKind, a: number, b: number, c: number, d: number, seqs?: readonly number[]): void {
    if (!this._leading) return;
    if (kind !== LedgerKind.Acked) this.urgent = true;
    if (kind === LedgerKind.Gone) {
      const list = seqs ?? [];
      const p = this.room(name, 1 + 4 + list.length * 8);
      const w = this.buf;
      w[p] = REC_GONE;
      w.writeUInt32LE(list.length, p + 1);
      let q = p + 5;
      for (let i = 0; i < list.length; i++, q += 8) w.writeDoubleLE(list[i]!, q);
      this.len = q;
      return;
    }
    const p = this.room(name, OP_REC_LEN);
    const w = this.buf;
    w[p] = REC_OP;
    w[p + 1] = kind;
    w.writeDoubleLE(a, p + 2);
    w.writeDoubleLE(b, p + 10);
    w.writeDoubleLE(c, p + 18);
    w.writeDoubleLE(d, p + 26);
    this.len = p + OP_REC_LEN;
  }

  replyAfterCommit(reply: string): void {
    if (!this._leading) return; // not answered: the client's AckSync times out and retries
    if (this.len > 1) {
      this.batchReplies.push(reply);
      this.urgent = true;
      if (!this.flushQueued) {
        // A batch kept after a failed propose: try again (a retried AckSync retries it).
        this.flushQueued = true;
        this.host.later(this.flushFn);
      }
      return;
    }
    if (this.lastProposed <= this.appliedIndex) {
      this.host.publishReply(reply);
      return;
    }
    this.waitIdx.push(this.lastProposed);
    this.waitReply.push(reply);
  }

  opsGen(): number {
    if (this.len > 1) return this.proposedGen + 1;
    return this.lastProposed > this.appliedIndex ? this.proposedGen : 0;
  }

  afterCommit(w: CommitWaiter): void {
    if (!this._leading) return w.dropped();
    if (this.len > 1) {
      this.batchWaiters.push(w);
      this.urgent = true;
      if (!this.flushQueued) {
        // A batch kept after a failed propose: try again.
        this.flushQueued = true;
        this.host.later(this.flushFn);
      }
      return;
    }
    if (this.lastProposed > this.appliedIndex) {
      this.wIdx.push(this.lastProposed);
      this.wGen.push(this.proposedGen);
      this.waiters.push(w);
      return;
    }
    w.committed(this.proposedGen);
  }

  /** Room for a record about `name` of n bytes; writes the NAME record if needed and returns
   *  where the record goes. Schedules the flush. */
  private room(name: string, n: number): number {
    const nameLen = name === this.curName ? 0 : 3 + Buffer.byteLength(name);
    const need = this.len + nameLen + n;
    if (need > this.buf.length) {
      const nb = Buffer.allocUnsafe(Math.max(need, this.buf.length * 2));
      this.buf.copy(nb, 0, 0, this.len);
      this.buf = nb;
    }
    let p = this.len;
    if (nameLen > 0) {
      const b = this.buf;
      b[p] = REC_NAME;
      const l = b.write(name, p + 3, "utf8");
      b.writeUInt16LE(l, p + 1);
      p += 3 + l;
      this.curName = name;
    }
    if (!this.flushQueued) {
      this.flushQueued = true;
      this.host.later(this.flushFn);
    }
    return p;
  }

  private readonly flushFn = (): void => {
    this.flushQueued = false;
    this.flush(false);
  };

  /** Propose what this turn recorded as one entry (the stream group calls it before its own
   *  entries too, so a purge proposed after acks comes after them in the log). */
  flush(force = true): void {
    if (this.len <= 1 || !this._leading) return;
    // Plain acks answer nobody and change nothing the leader's consumers do (they applied
    // them already): while an entry of ours is in flight they wait for it, so a client's
    // stream of acks becomes one entry per commit round instead of one per event-loop turn,
    // and the deliveries' entries do not queue behind ack entries' fsyncs.
    if (!force && !this.urgent && this.lastProposed > this.appliedIndex && this.len < ACK_HOLD_BYTES) {
      this.holding = true;
      return;
    }
    this.buf[0] = OP_CONSUMERS;
    const data = Buffer.from(this.buf.subarray(0, this.len));
    let index: number;
    try {
      index = this.host.propose(data);
    } catch {
      // Not proposed: a leadership transfer is under way, or leadership was lost. The live
      // consumers applied these operations already; dropping them while this replica goes on
      // leading (a transfer that does not finish is abandoned) would leave a hole in the
      // replicas' copies: a delivery missing while later ones commit, so the message is
      // neither pending nor acked there and a later leader never redelivers it. Keep the
      // batch and its replies for the next flush (the next operation or AckSync, or the
      // stream group's next request); setLeading(false) drops it when leadership moved (the
      // consumers stop, the next leader redelivers).
      return;
    }
    const replies = this.batchReplies;
    this.len = 1;
    this.urgent = false;
    this.holding = false;
    this.curName = "";
    this.batchReplies = [];
    this.lastProposed = index;
    const gen = ++this.proposedGen;
    for (const r of replies) {
      this.waitIdx.push(index);
      this.waitReply.push(r);
    }
    const ws = this.batchWaiters;
    if (ws.length > 0) {
      this.batchWaiters = [];
      for (let i = 0; i < ws.length; i++) {
        this.wIdx.push(index);
        this.wGen.push(gen);
        this.waiters.push(ws[i]!);
      }
    }
  }

  // ---------- apply (every replica) ----------

  /** A committed CONSUMERS entry at `index`; `answer`: this leader proposed it in its term. */
  apply(data: Uint8Array, index: number, answer: boolean): void {
    const b = Buffer.isBuffer(data) ? data : Buffer.from(data.buffer, data.byteOffset, data.byteLength);
    let p = 1;
    let cur: Shadow | undefined;
    let curName = "";
    while (p < b.length) {
      const t = b[p]!;
      switch (t) {
        case REC_NAME: {
          const l = b.readUInt16LE(p + 1);
          curName = b.toString("utf8", p + 3, p + 3 + l);
          cur = this.shadows.get(curName);
          p += 3 + l;
          break;
        }
        case REC_CFG: {
          const policy = POLICIES[b[p + 1]!] ?? "explicit";
          const maxDeliver = b.readDoubleLE(p + 2);
          const maxAckPending = b.readDoubleLE(p + 10);
          const createdNs = b.readDoubleLE(p + 18);
          const cl = b.readUInt32LE(p + 26);
          if (p + 30 + cl > b.length) throw new Error("corrupt consumers entry");
          const config = b.toString("utf8", p + 30, p + 30 + cl);
          if (cur === undefined) {
            cur = { ledger: new ConsumerLedger(), policy, maxDeliver, maxAckPending, config, createdNs, lpsEnd: 0 };
            this.shadows.set(curName, cur);
          }
          cur.policy = policy;
          cur.maxDeliver = maxDeliver;
          cur.maxAckPending = maxAckPending;
          cur.config = config;
          cur.createdNs = createdNs;
          cur.ledger.configure(policy, maxDeliver, maxAckPending);
          p += 30 + cl;
          break;
        }
        case REC_DEL:
          this.shadows.delete(curName);
          cur = undefined;
          p += 1;
          break;
        case REC_OP: {
          if (p + OP_REC_LEN > b.length) throw new Error("corrupt consumers entry");
          if (cur !== undefined) {
            cur.ledger.apply(opOf(b[p + 1]!, b.readDoubleLE(p + 2), b.readDoubleLE(p + 10), b.readDoubleLE(p + 18), b.readDoubleLE(p + 26)));
            this.appliedOps++;
          }
          p += OP_REC_LEN;
          break;
        }
        case REC_LPS:
          if (p + 9 > b.length) throw new Error("corrupt consumers entry");
          if (cur !== undefined) cur.lpsEnd = b.readDoubleLE(p + 1);
          p += 9;
          break;
        case REC_GONE: {
          const n = b.readUInt32LE(p + 1);
          const seqs: number[] = [];
          for (let i = 0, q = p + 5; i < n; i++, q += 8) seqs.push(b.readDoubleLE(q));
          if (cur !== undefined) {
            cur.ledger.apply({ op: "gone", sseqs: seqs });
            this.appliedOps++;
          }
          p += 5 + n * 8;
          break;
        }
        default:
          throw new Error(`corrupt consumers entry (record type ${t})`);
      }
    }
    // A copy never delivers: the redelivery queue the operations build is the leader's.
    for (const sh of this.shadows.values()) while (sh.ledger.queuedRedeliveries > 0) sh.ledger.dropRedelivery();
    this.applied(index, answer);
  }

  /** Entries up to index are applied here: answer the AckSyncs that waited for them. */
  applied(index: number, answer = true): void {
    this.appliedIndex = index;
    // Deliveries waiting for these entries (src/consumer/outbox.ts) go out first, then the
    // AckSync replies: an ack recorded in the same entry as a redelivery of its message came
    // after it (the live ledger had the message pending), so the client must see them in
    // that order. The state is settled before any call (a send may come back here).
    const wi = this.wIdx;
    const w0 = this.wHead;
    let w = w0;
    while (w < wi.length && wi[w]! <= index) w++;
    let ready: CommitWaiter[] | null = null;
    let gens: number[] | null = null;
    if (w > w0) {
      ready = this.waiters.slice(w0, w);
      gens = this.wGen.slice(w0, w);
      if (w === wi.length) {
        wi.length = 0;
        this.wGen.length = 0;
        this.waiters.length = 0;
        this.wHead = 0;
      } else if (w > 1024 && w * 2 > wi.length) {
        wi.splice(0, w);
        this.wGen.splice(0, w);
        this.waiters.splice(0, w);
        this.wHead = 0;
      } else this.wHead = w;
    }
    const idx = this.waitIdx;
    const h0 = this.waitHead;
    let h = h0;
    while (h < idx.length && idx[h]! <= index) h++;
    const replies = h > h0 && answer ? this.waitReply.slice(h0, h) : null;
    if (h === idx.length) {
      idx.length = 0;
      this.waitReply.length = 0;
      h = 0;
    }
    this.waitHead = h;
    if (ready !== null) {
      for (let i = 0; i < ready.length; i++) {
        if (answer) ready[i]!.committed(gens![i]!);
        else ready[i]!.dropped();
      }
    }
    if (replies !== null) for (let i = 0; i < replies.length; i++) this.host.publishReply(replies[i]!);
    if (this.holding && index >= this.lastProposed && !this.flushQueued) {
      this.flushQueued = true;
      this.host.later(this.flushFn);
    }
  }

  /** A plain stream becomes replicated (STREAM.UPDATE to R>1): its consumers, as they were
   *  there, are the group's first copies (they go into its seed snapshot). */
  seed(list: readonly ConsumerSeed[]): void {
    for (const c of list) {
      const ledger = new ConsumerLedger(cloneState(c.state));
      ledger.configure(c.ackPolicy, c.maxDeliver, c.maxAckPending);
      this.shadows.set(c.name, { ledger, policy: c.ackPolicy, maxDeliver: c.maxDeliver, maxAckPending: c.maxAckPending, config: c.config, createdNs: c.createdNs, lpsEnd: c.lpsEnd });
    }
  }

  /** Every consumer's agreed state with its ledger knobs (a replicated stream that becomes a
   *  plain one keeps its consumers from these). */
  seeds(): ConsumerSeed[] {
    const out: ConsumerSeed[] = [];
    for (const [name, s] of this.shadows) {
      out.push({ name, config: s.config, createdNs: s.createdNs, ackPolicy: s.policy, maxDeliver: s.maxDeliver, maxAckPending: s.maxAckPending, state: cloneState(s.ledger.state), lpsEnd: s.lpsEnd });
    }
    return out;
  }

  // ---------- snapshot ----------

  /** Every consumer's copy: u32 count, then per consumer u16 name length, name, u8 policy,
   *  f64 max_deliver, f64 max_ack_pending, f64 created, u32 length + config JSON, the state
   *  as the file consumer store encodes it; then the last_per_subject ends (LPS_TRAILER). */
  encode(): Buffer {
    const parts: Buffer[] = [];
    const head = Buffer.allocUnsafe(4);
    head.writeUInt32LE(this.shadows.size, 0);
    parts.push(head);
    const sorted = [...this.shadows].sort((x, y) => (x[0] < y[0] ? -1 : x[0] > y[0] ? 1 : 0));
    const lps: Buffer[] = [];
    for (const [name, s] of sorted) {
      const nb = Buffer.from(name, "utf8");
      const cb = Buffer.from(s.config, "utf8");
      const h = Buffer.allocUnsafe(2 + nb.length + 29);
      h.writeUInt16LE(nb.length, 0);
      nb.copy(h, 2);
      const q = 2 + nb.length;
      h[q] = POLICIES.indexOf(s.policy);
      h.writeDoubleLE(s.maxDeliver, q + 1);
      h.writeDoubleLE(s.maxAckPending, q + 9);
      h.writeDoubleLE(s.createdNs, q + 17);
      h.writeUInt32LE(cb.length, q + 25);
      parts.push(h, cb, encodeConsumerState(s.ledger.state));
      if (s.lpsEnd > 0) {
        const e = Buffer.allocUnsafe(2 + nb.length + 8);
        e.writeUInt16LE(nb.length, 0);
        nb.copy(e, 2);
        e.writeDoubleLE(s.lpsEnd, 2 + nb.length);
        lps.push(e);
      }
    }
    if (lps.length > 0) {
      const t = Buffer.allocUnsafe(8);
      t.writeUInt32LE(LPS_TRAILER, 0);
      t.writeUInt32LE(lps.length, 4);
      parts.push(t, ...lps);
    }
    return Buffer.concat(parts);
  }

  /** Replace every copy with a snapshot's (an empty buffer: none). */
  restore(b: Buffer): void {
    this.shadows.clear();
    if (b.length === 0) return;
    const n = b.readUInt32LE(0);
    let p = 4;
    for (let i = 0; i < n; i++) {
      const l = b.readUInt16LE(p);
      const name = b.toString("utf8", p + 2, p + 2 + l);
      p += 2 + l;
      const policy = POLICIES[b[p]!] ?? "explicit";
      const maxDeliver = b.readDoubleLE(p + 1);
      const maxAckPending = b.readDoubleLE(p + 9);
      const createdNs = b.readDoubleLE(p + 17);
      const cl = b.readUInt32LE(p + 25);
      const config = b.toString("utf8", p + 29, p + 29 + cl);
      p += 29 + cl;
      const stateLen = b.readUInt32LE(p);
      const ledger = new ConsumerLedger(decodeConsumerState(b, p));
      ledger.configure(policy, maxDeliver, maxAckPending);
      p += stateLen;
      this.shadows.set(name, { ledger, policy, maxDeliver, maxAckPending, config, createdNs, lpsEnd: 0 });
    }
    if (p + 8 <= b.length && b.readUInt32LE(p) === LPS_TRAILER) {
      const m = b.readUInt32LE(p + 4);
      p += 8;
      for (let i = 0; i < m; i++) {
        const l = b.readUInt16LE(p);
        const sh = this.shadows.get(b.toString("utf8", p + 2, p + 2 + l));
        if (sh !== undefined) sh.lpsEnd = b.readDoubleLE(p + 2 + l);
        p += 2 + l + 8;
      }
    }
  }
}

/** The replicator for one consumer: live while the replica leads in the term the consumer was
 *  made in (ConsumerReplicator.bind). */
class TermView implements ConsumerReplicator {
  constructor(
    private readonly r: ConsumerRepl,
    private readonly epoch: number,
  ) {}

  get leading(): boolean {
    return this.r.leading && this.r.epoch === this.epoch;
  }

  state(name: string): ConsumerState | null {
    return this.r.state(name);
  }

  configure(name: string, ackPolicy: LedgerAckPolicy, maxDeliver: number, maxAckPending: number, config: string, createdNs: number): void {
    if (this.r.epoch === this.epoch) this.r.configure(name, ackPolicy, maxDeliver, maxAckPending, config, createdNs);
  }

  consumers(): ReplicatedConsumer[] {
    return this.r.consumers();
  }

  lastPerSubject(name: string, endSeq: number): void {
    if (this.r.epoch === this.epoch) this.r.lastPerSubject(name, endSeq);
  }

  removed(name: string): void {
    if (this.r.epoch === this.epoch) this.r.removed(name);
  }

  op(name: string, kind: LedgerKind, a: number, b: number, c: number, d: number, seqs?: readonly number[]): void {
    if (this.r.epoch === this.epoch) this.r.op(name, kind, a, b, c, d, seqs);
  }

  replyAfterCommit(reply: string): void {
    // A stale consumer's AckSync goes unanswered: the client asks again, and the consumer
    // made for this term answers it.
    if (this.r.epoch === this.epoch) this.r.replyAfterCommit(reply);
  }

  opsGen(): number {
    return this.r.epoch === this.epoch ? this.r.opsGen() : 0;
  }

  afterCommit(w: CommitWaiter): void {
    if (this.r.epoch === this.epoch) this.r.afterCommit(w);
    else w.dropped();
  }

  bind(): ConsumerReplicator {
    return this.r.bind();
  }

  clusterInfo(replicated: boolean): Record<string, unknown> {
    return this.r.clusterInfo(replicated);
  }
}

function opOf(kind: number, a: number, b: number, c: number, d: number): LedgerOp {
  switch (kind) {
    case LedgerKind.Delivered:
      return { op: "delivered", sseq: a, dseq: b, dc: c, ts: d };
    case LedgerKind.Acked:
      return { op: "acked", sseq: a, dseq: b };
    case LedgerKind.Nak:
      return { op: "nak", sseq: a, delay: b };
    case LedgerKind.Expired:
      return { op: "expired", sseq: a };
    case LedgerKind.Term:
      return { op: "term", sseq: a };
    case LedgerKind.Progress:
      return { op: "progress", sseq: a, ts: b };
    case LedgerKind.Skip:
      return { op: "skip", sseq: a };
    case LedgerKind.Purged:
      return { op: "purged", sseq: a, skip: b };
    case LedgerKind.Reset:
      return { op: "reset", sseq: a, dseq: b };
    default:
      throw new Error(`corrupt consumers entry (operation ${kind})`);
  }
}

function cloneState(s: ConsumerState): ConsumerState {
  return {
    delivered: { ...s.delivered },
    ackFloor: { ...s.ackFloor },
    pending: new Map([...s.pending].map(([k, v]) => [k, { ...v }])),
    redelivered: new Map(s.redelivered),
  };
}
