// A publish that passed the stream's checks, as a value (StreamEntry), and the seam between
// checking it and applying it (Proposer). Single node: LocalProposer applies at once. A
// replicated stream puts a Raft proposer here: the leader checks, proposes, and every replica
// applies the committed entries in log order through the same EntryApplier.

export const Rollup = { None: 0, Subject: 1, All: 2 } as const;
export type Rollup = (typeof Rollup)[keyof typeof Rollup];

/** Everything applying a message needs. Mutable on purpose: the stream fills one scratch
 *  entry per publish (no allocation on the hot path), so an entry handed to propose() is
 *  valid only during that call. A proposer that keeps it keeps copy() instead. */
export class StreamEntry {
  /** Subject as stored (after the stream's ingest transform). */
  subject = "";
  /** Header block as stored (a TTL raised to the marker minimum is already rewritten), or null. */
  hdr: Buffer | null = null;
  payload: Buffer = EMPTY;
  /** Timestamp the message is stored with (ns since the epoch): the check's clock, or the
   *  origin's for a mirrored message. */
  tsNs = 0;
  /** Per-message TTL in seconds (0: none). */
  ttlSec = 0;
  /** Nats-Msg-Id ("" none): the duplicate window learns it when the entry is applied. */
  msgId = "";
  rollup: Rollup = Rollup.None;
  /** Where the PubAck goes ("" none: sourced, mirrored, markers, or a publish without reply). */
  reply = "";
  /** Bytes the message takes in the store (what discard-new limits count). */
  size = 0;

  set(
    subject: string,
    hdr: Buffer | null,
    payload: Buffer,
    tsNs: number,
    ttlSec: number,
    msgId: string,
    rollup: Rollup,
    reply: string,
    size: number,
  ): this {
    this.subject = subject;
    this.hdr = hdr;
    this.payload = payload;
    this.tsNs = tsNs;
    this.ttlSec = ttlSec;
    this.msgId = msgId;
    this.rollup = rollup;
    this.reply = reply;
    this.size = size;
    return this;
  }

  /** A copy that owns its bytes (hdr and payload may be views of a socket read buffer). */
  copy(): StreamEntry {
    return new StreamEntry().set(
      this.subject,
      this.hdr === null ? null : Buffer.from(this.hdr),
      Buffer.from(this.payload),
      this.tsNs,
      this.ttlSec,
      this.msgId,
      this.rollup,
      this.reply,
      this.size,
    );
  }
}

const EMPTY = Buffer.alloc(0);

/** The commit callback: applies one committed entry (stores it, answers its PubAck). */
export interface EntryApplier {
  applyEntry(e: StreamEntry): void;
}

/** Between the checks and the apply. Entries are applied in the order they were proposed. */
export interface Proposer {
  /** True when propose() applies the entry before it returns (nothing is ever in flight, so
   *  the stream keeps no in-flight table). */
  readonly immediate: boolean;
  /** Hand over a checked entry; valid only during the call (see StreamEntry). */
  propose(e: StreamEntry): void;
}

/** Single node: apply at once, in the caller's turn. */
export class LocalProposer implements Proposer {
  readonly immediate = true;
  constructor(private readonly applier: EntryApplier) {}
  propose(e: StreamEntry): void {
    this.applier.applyEntry(e);
  }
}

/** Proposed, not yet applied: what the checks must count besides the store (a second
 *  publish with the same id, expected sequences, discard-new limits). Entries leave in the
 *  order they came (apply order = propose order). */
export class InflightTable {
  count = 0;
  bytes = 0;
  /** Msg id ("" none) of the newest in-flight entry: the last msg id once all are applied. */
  lastMsgId = "";
  private readonly ids = new Map<string, number>();
  private readonly subjects = new Map<string, number>();

  add(e: StreamEntry): void {
    this.count++;
    this.bytes += e.size;
    this.lastMsgId = e.msgId;
    if (e.msgId !== "") this.ids.set(e.msgId, (this.ids.get(e.msgId) ?? 0) + 1);
    this.subjects.set(e.subject, (this.subjects.get(e.subject) ?? 0) + 1);
  }

  /** e left the proposer (applied, or failed to apply). */
  remove(e: StreamEntry): void {
    if (this.count === 0) return;
    this.count--;
    this.bytes = this.count === 0 ? 0 : Math.max(0, this.bytes - e.size);
    if (e.msgId !== "") dec(this.ids, e.msgId);
    dec(this.subjects, e.subject);
    if (this.count === 0) this.lastMsgId = "";
  }

  hasMsgId(id: string): boolean {
    return this.ids.has(id);
  }

  /** In-flight entries on subject. */
  onSubject(subject: string): number {
    return this.subjects.get(subject) ?? 0;
  }

  clear(): void {
    this.count = 0;
    this.bytes = 0;
    this.lastMsgId = "";
    this.ids.clear();
    this.subjects.clear();
  }
}

function dec(m: Map<string, number>, k: string): void {
  const n = m.get(k);
  if (n === undefined) return;
  if (n <= 1) m.delete(k);
  else m.set(k, n - 1);
}
