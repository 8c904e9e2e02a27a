// A publish workload that keeps every reply: each attempt is published with its own reply
// subject, and a subscription records whatever arrives on it, also after the attempt timed
// out and was retried (a deposed leader that was paused answers late, if it answers at all).
// The test then judges each reply against what the replicas finally store: a PubAck must name
// the sequence that holds that message, an error must be for a message that is not stored.
//
// Two shapes: stream writers (each message has a Nats-Msg-Id, retried with the same id until
// acked), and KV compare-and-set writers (Nats-Expected-Last-Subject-Sequence from the last
// revision they saw; every attempt carries its own value, so an attempt's outcome is its own).

import { headers as natsHeaders, type NatsConnection, type Subscription } from "@nats-io/transport-node";

export type ReplyKind = "ack" | "dup" | "err" | "noresp" | "other";

export interface Reply {
  /** The message (stream writers) or the attempt's value (KV writers). */
  value: string;
  attempt: number;
  kind: ReplyKind;
  seq: number;
  code: number;
  text: string;
  /** performance.now() it arrived. */
  at: number;
}

export interface SentAttempt {
  value: string;
  attempt: number;
  subject: string;
  at: number;
}

function parseReply(data: Uint8Array, status: number): Omit<Reply, "value" | "attempt" | "at"> {
  if (status === 503) return { kind: "noresp", seq: 0, code: 503, text: "no responders" };
  const text = Buffer.from(data).toString();
  try {
    const j = JSON.parse(text) as { seq?: number; duplicate?: boolean; error?: { err_code?: number; description?: string } };
    if (j.error !== undefined) return { kind: "err", seq: 0, code: j.error.err_code ?? 0, text: j.error.description ?? "" };
    if (typeof j.seq === "number") return { kind: j.duplicate === true ? "dup" : "ack", seq: j.seq, code: 0, text: "" };
  } catch {
    // not JSON
  }
  return { kind: "other", seq: 0, code: status, text: text.slice(0, 200) };
}

/** One reply inbox per workload: `<prefix>.<value>.<attempt>` (values have no dots). */
class Inbox {
  readonly replies: Reply[] = [];
  readonly waiters = new Map<string, (r: Reply) => void>();
  private readonly sub: Subscription;

  constructor(
    nc: NatsConnection,
    readonly prefix: string,
  ) {
    this.sub = nc.subscribe(`${prefix}.>`, {
      callback: (_e, m) => {
        const t = m.subject.slice(prefix.length + 1).split(".");
        const value = t[0] ?? "";
        const attempt = Number(t[1] ?? -1);
        const status = m.headers?.code ?? 0;
        const r: Reply = { value, attempt, at: performance.now(), ...parseReply(m.data, status) };
        this.replies.push(r);
        const w = this.waiters.get(`${value}.${attempt}`);
        if (w !== undefined) {
          this.waiters.delete(`${value}.${attempt}`);
          w(r);
        }
      },
    });
  }

  /** The first reply to this attempt, or null after timeoutMs. */
  wait(value: string, attempt: number, timeoutMs: number): Promise<Reply | null> {
    return new Promise((resolve) => {
      const key = `${value}.${attempt}`;
      const timer = setTimeout(() => {
        this.waiters.delete(key);
        resolve(null);
      }, timeoutMs);
      this.waiters.set(key, (r) => {
        clearTimeout(timer);
        resolve(r);
      });
    });
  }

  close(): void {
    this.sub.unsubscribe();
  }
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

export interface StreamWritersOptions {
  conns: NatsConnection[];
  /** Writers per connection. */
  perConn: number;
  subject: (writer: number) => string;
  /** Per attempt: after this long without a reply, the same id is sent again. */
  attemptMs: number;
}

/** Writer loops, `perConn` on each connection, each with its connection's reply inbox. */
abstract class Writers {
  readonly sent: SentAttempt[] = [];
  protected stopped = false;
  private readonly inboxes: Inbox[];
  private readonly loops: Array<Promise<void>> = [];

  constructor(
    private readonly writerConns: NatsConnection[],
    private readonly perConn: number,
    tag: string,
  ) {
    this.inboxes = writerConns.map((nc, i) => new Inbox(nc, `_RPL.${tag}${i}`));
  }

  get replies(): Reply[] {
    return this.inboxes.flatMap((b) => b.replies);
  }

  start(): void {
    let w = 0;
    this.writerConns.forEach((nc, ci) => {
      for (let k = 0; k < this.perConn; k++, w++) this.loops.push(this.loop(nc, this.inboxes[ci]!, w));
    });
  }

  protected abstract loop(nc: NatsConnection, box: Inbox, w: number): Promise<void>;

  async stop(): Promise<void> {
    this.stopped = true;
    await Promise.all(this.loops);
  }

  close(): void {
    for (const b of this.inboxes) b.close();
  }
}

/** Writers publishing with Nats-Msg-Id, each retrying its message (same id) until acked. */
export class StreamWriters extends Writers {
  readonly acked = new Set<string>();

  constructor(
    private readonly o: StreamWritersOptions,
    tag: string,
  ) {
    super(o.conns, o.perConn, tag);
  }

  protected async loop(nc: NatsConnection, box: Inbox, w: number): Promise<void> {
    for (let n = 0; !this.stopped; n++) {
      const value = `w${w}-${n}`;
      for (let a = 0; ; a++) {
        const h = natsHeaders();
        h.set("Nats-Msg-Id", value);
        const subject = this.o.subject(w);
        this.sent.push({ value, attempt: a, subject, at: performance.now() });
        const waiting = box.wait(value, a, this.o.attemptMs);
        nc.publish(subject, value, { reply: `${box.prefix}.${value}.${a}`, headers: h });
        const r = await waiting;
        if (r !== null && (r.kind === "ack" || r.kind === "dup")) {
          this.acked.add(value);
          break;
        }
        // Once stopping, a message not acked after a few attempts is left as it is.
        if (this.stopped && a >= 2) break;
        if (r !== null) await sleep(r.kind === "noresp" ? 50 : 100);
      }
    }
  }
}

export interface KvCasWritersOptions {
  conns: NatsConnection[];
  bucket: string;
  keys: number;
  /** Writers per connection. */
  perConn: number;
  attemptMs: number;
}

/** KV compare-and-set writers on a few keys, through the stream subject (what kv.update
 *  sends). An attempt's value is its own: `c<writer>-<n>-<attempt>`. */
export class KvCasWriters extends Writers {
  constructor(
    private readonly o: KvCasWritersOptions,
    tag: string,
  ) {
    super(o.conns, o.perConn, tag);
  }

  protected async loop(nc: NatsConnection, box: Inbox, w: number): Promise<void> {
    const rev = new Map<string, number>();
    for (let n = 0; !this.stopped; n++) {
      const key = `k${(w + n) % this.o.keys}`;
      const subject = `$KV.${this.o.bucket}.${key}`;
      const value = `c${w}-${n}-0`;
      const h = natsHeaders();
      h.set("Nats-Expected-Last-Subject-Sequence", String(rev.get(key) ?? 0));
      this.sent.push({ value, attempt: 0, subject, at: performance.now() });
      const waiting = box.wait(value, 0, this.o.attemptMs);
      nc.publish(subject, value, { reply: `${box.prefix}.${value}.0`, headers: h });
      const r = await waiting;
      if (r === null) continue;
      if (r.kind === "ack") rev.set(key, r.seq);
      else if (r.kind === "err") {
        // "wrong last sequence: N" says where the key is now.
        const m = /wrong last sequence: (\d+)/.exec(r.text);
        if (m !== null) rev.set(key, Number(m[1]));
        await sleep(20);
      } else await sleep(50);
    }
  }
}

/** Judge every reply against the final stored copy (seq -> [subject, value]): a PubAck names
 *  the sequence holding that value; an error is for a value that is not stored. With
 *  `perAttempt` (KV: every attempt its own value) a no-responders status too; stream writers
 *  retry one message id, so a retry nobody took says nothing about an earlier attempt. */
export function judgeReplies(replies: Reply[], stored: Map<number, [string, string]>, perAttempt: boolean): string[] {
  const where = new Map<string, number[]>();
  for (const [seq, [, v]] of stored) {
    const l = where.get(v);
    if (l === undefined) where.set(v, [seq]);
    else l.push(seq);
  }
  const byValue = new Map<string, Reply[]>();
  for (const r of replies) {
    const l = byValue.get(r.value);
    if (l === undefined) byValue.set(r.value, [r]);
    else l.push(r);
  }
  const all = (v: string): string => ` (its replies: ${(byValue.get(v) ?? []).map((x) => `#${x.attempt} ${x.kind}${x.code > 0 ? ` ${x.code}` : ""}${x.seq > 0 ? ` seq ${x.seq}` : ""} at ${Math.round(x.at)}`).join("; ")})`;
  const bad: string[] = [];
  for (const r of replies) {
    const at = where.get(r.value) ?? [];
    if (r.kind === "ack" || r.kind === "dup") {
      if (!at.includes(r.seq)) bad.push(`${r.value} (attempt ${r.attempt}) ${r.kind} seq ${r.seq}, but that value is stored at [${at.join(",")}] and seq ${r.seq} holds ${JSON.stringify(stored.get(r.seq)?.[1] ?? null)}${all(r.value)}`);
    } else if (r.kind === "err" || (r.kind === "noresp" && perAttempt)) {
      // A retry's "in process" conflict (10158) says another attempt of the same id is being
      // stored: it makes no claim that the message is not stored.
      if (at.length > 0 && r.code !== 10158) bad.push(`${r.value} (attempt ${r.attempt}) answered ${r.kind} ${r.code} "${r.text}", but it is stored at [${at.join(",")}]${all(r.value)}`);
    } else if (r.kind === "other") bad.push(`${r.value} (attempt ${r.attempt}) unexpected reply ${r.code} ${r.text}`);
  }
  return bad;
}
