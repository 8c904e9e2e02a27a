// Client workloads for fault tests, with the official clients, recording every operation:
// publishers that give each message a Nats-Msg-Id and retry it (same id) until acked or out of
// attempts, and a KV register workload (put, compare-and-set by revision, leader get) whose
// history the linearizability checker judges.

import { connect, type NatsConnection } from "@nats-io/transport-node";
import { jetstream, JetStreamApiError } from "@nats-io/jetstream";
import { Kvm, type KV } from "@nats-io/kv";
import type { QueueHistory } from "../checkers/queue.js";
import type { KvInput, KvOutput, Operation } from "../checkers/linearizable.js";

export type Outcome = "ok" | "fail" | "unknown";

export interface PubRecord {
  value: string;
  writer: number;
  n: number;
  outcome: Outcome;
  /** The sequence of every PubAck received for this id (retries may be acked as duplicates). */
  seqs: number[];
  duplicates: number;
  attempts: number;
  /** Error names per failed attempt. */
  errors: string[];
}

export interface PubStats {
  records: PubRecord[];
  /** performance.now() of every PubAck, for failover times. */
  ackTimes: number[];
}

/** No server had interest in the subject (503): nobody took the message. nats.js turns it
 *  into "JetStreamNotEnabled" (not exported as a class). */
function noResponders(e: unknown): boolean {
  return e instanceof Error && e.name === "JetStreamNotEnabled";
}

/** How one publish attempt ended. */
function classify(e: unknown): "refused" | "noresp" | "unknown" {
  if (e instanceof JetStreamApiError) return "refused";
  if (noResponders(e)) return "noresp";
  return "unknown";
}

export interface PublishersOptions {
  urls: string[];
  writers: number;
  subject: (writer: number, n: number) => string;
  /** Attempts per message (same Nats-Msg-Id) before giving up on it. */
  attempts: number;
  timeoutMs: number;
  /** Pause between messages of one writer, ms (0: as fast as acks come). */
  gapMs: number;
}

/** Run writers until stop() resolves; every writer has its own connection to a rotated URL
 *  list (so they start on different servers and fail over along the list). */
export class Publishers {
  readonly stats: PubStats = { records: [], ackTimes: [] };
  private stopped = false;
  private readonly conns: NatsConnection[] = [];
  private readonly loops: Array<Promise<void>> = [];

  constructor(private readonly o: PublishersOptions) {}

  async start(): Promise<void> {
    for (let w = 0; w < this.o.writers; w++) {
      const urls = this.o.urls.map((_, i) => this.o.urls[(i + w) % this.o.urls.length]!);
      const nc = await connect({ servers: urls, reconnectTimeWait: 100, maxReconnectAttempts: -1, noRandomize: true, timeout: 5000 });
      this.conns.push(nc);
      this.loops.push(this.loop(nc, w));
    }
  }

  private async loop(nc: NatsConnection, w: number): Promise<void> {
    const js = jetstream(nc);
    for (let n = 0; !this.stopped; n++) {
      const value = `w${w}-${n}`;
      const rec: PubRecord = { value, writer: w, n, outcome: "unknown", seqs: [], duplicates: 0, attempts: 0, errors: [] };
      this.stats.records.push(rec);
      let unknown = false;
      for (let a = 0; a < this.o.attempts; a++) {
        rec.attempts++;
        try {
          const ack = await js.publish(this.o.subject(w, n), value, { msgID: value, timeout: this.o.timeoutMs, retries: 1 });
          rec.seqs.push(ack.seq);
          if (ack.duplicate) rec.duplicates++;
          this.stats.ackTimes.push(performance.now());
          break;
        } catch (e) {
          const k = classify(e);
          rec.errors.push(k === "refused" ? `refused:${(e as JetStreamApiError).code}` : k === "noresp" ? "503" : (e as Error).name);
          if (k === "unknown") unknown = true;
          await new Promise((r) => setTimeout(r, 50 + 50 * a));
        }
        if (this.stopped && a > 0) break;
      }
      rec.outcome = rec.seqs.length > 0 ? "ok" : unknown ? "unknown" : "fail";
      if (this.o.gapMs > 0) await new Promise((r) => setTimeout(r, this.o.gapMs));
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await Promise.all(this.loops);
    for (const nc of this.conns) await nc.close().catch(() => undefined);
  }

  history(reads: string[]): QueueHistory {
    return { attempts: this.stats.records.map((r) => ({ value: r.value, writer: r.writer, n: r.n, outcome: r.outcome })), reads };
  }

  /** Acked messages, by the time of their first PubAck after t (failover measurement). */
  firstAckAfter(t: number): number | null {
    let best: number | null = null;
    for (const x of this.stats.ackTimes) if (x > t && (best === null || x < best)) best = x;
    return best;
  }
}

// ---- KV register workload ----

export type KvOp = Operation<KvInput, KvOutput>;

export interface KvWorkloadOptions {
  urls: string[];
  bucket: string;
  clients: number;
  keys: number;
  timeoutMs: number;
  seed: number;
}

/** Clients doing put / CAS / get on a few keys. Gets ask the stream leader
 *  (`$JS.API.STREAM.MSG.GET` by last subject), not Direct Get, which any replica may answer and
 *  which is therefore not linearizable (ADR-31). */
export class KvWorkload {
  readonly ops: KvOp[] = [];
  /** Errors that left an op's outcome unknown. */
  readonly errors: string[] = [];
  /** Writes left out of the history because they were refused or nobody took them. */
  readonly dropped: Array<{ op: KvOp; why: string; at: number }> = [];

  private drop(op: KvOp, why: string): void {
    this.ops.splice(this.ops.indexOf(op), 1);
    this.dropped.push({ op, why, at: performance.now() });
  }
  private stopped = false;
  private readonly conns: NatsConnection[] = [];
  private readonly loops: Array<Promise<void>> = [];
  private rnd: number;

  constructor(private readonly o: KvWorkloadOptions) {
    this.rnd = o.seed >>> 0 || 1;
  }

  private next(n: number): number {
    // xorshift32: the op mix is reproducible for one seed (timing is not).
    let x = this.rnd;
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    this.rnd = x >>> 0;
    return this.rnd % n;
  }

  async start(): Promise<void> {
    for (let c = 0; c < this.o.clients; c++) {
      const urls = this.o.urls.map((_, i) => this.o.urls[(i + c) % this.o.urls.length]!);
      const nc = await connect({ servers: urls, reconnectTimeWait: 100, maxReconnectAttempts: -1, noRandomize: true, timeout: 5000 });
      this.conns.push(nc);
      const kv = await new Kvm(nc).open(this.o.bucket);
      this.loops.push(this.loop(nc, kv, c));
    }
  }

  private async leaderGet(nc: NatsConnection, key: string): Promise<{ value: string | null; rev: number }> {
    const subj = `$KV.${this.o.bucket}.${key}`;
    const r = await nc.request(`$JS.API.STREAM.MSG.GET.KV_${this.o.bucket}`, JSON.stringify({ last_by_subj: subj }), { timeout: this.o.timeoutMs });
    const j = r.json<{ message?: { seq: number; data?: string; hdrs?: string }; error?: { err_code: number } }>();
    if (j.error !== undefined) {
      if (j.error.err_code === 10037) return { value: null, rev: 0 };
      throw new Error(`get: ${JSON.stringify(j.error)}`);
    }
    const m = j.message!;
    return { value: m.data === undefined ? "" : Buffer.from(m.data, "base64").toString(), rev: m.seq };
  }

  private async loop(nc: NatsConnection, kv: KV, c: number): Promise<void> {
    const lastRev = new Map<string, number>();
    for (let n = 0; !this.stopped; n++) {
      const key = `k${this.next(this.o.keys)}`;
      const kind = this.next(10);
      const call = performance.now();
      const value = `c${c}-${n}`;
      if (kind < 4) {
        const op: KvOp = { part: key, input: { f: "get" }, output: "unknown", call, ret: Infinity, client: c };
        try {
          const g = await this.leaderGet(nc, key);
          op.output = g;
          op.ret = performance.now();
          if (g.rev > 0) lastRev.set(key, g.rev);
          this.ops.push(op);
        } catch {
          // A read that failed changed nothing: it is left out of the history.
        }
      } else if (kind < 7) {
        const op: KvOp = { part: key, input: { f: "put", value }, output: "unknown", call, ret: Infinity, client: c };
        this.ops.push(op);
        try {
          const rev = await kv.put(key, value, { timeout: this.o.timeoutMs });
          op.output = { rev };
          op.ret = performance.now();
          lastRev.set(key, rev);
        } catch (e) {
          // Nobody took it: it did not happen. Anything else (an API error included, to be
          // safe) leaves its outcome unknown.
          if (noResponders(e)) this.drop(op, "503");
          else this.errors.push(`put: ${(e as Error).name}: ${(e as Error).message}`);
        }
      } else {
        const expect = lastRev.get(key) ?? 0;
        const op: KvOp = { part: key, input: { f: "cas", expect, value }, output: "unknown", call, ret: Infinity, client: c };
        this.ops.push(op);
        try {
          const rev = await kv.put(key, value, { previousSeq: expect, timeout: this.o.timeoutMs });
          op.output = { rev };
          op.ret = performance.now();
          lastRev.set(key, rev);
        } catch (e) {
          if (e instanceof JetStreamApiError && e.code === 10071) {
            op.output = "fail";
            op.ret = performance.now();
          } else if (noResponders(e) || (e instanceof JetStreamApiError && e.code === 10164)) {
            // Nobody took it, or the leader refused it because a write of the same key was in
            // flight (10164): it did not happen, and says nothing about the revision.
            this.drop(op, noResponders(e) ? "503" : `${(e as JetStreamApiError).code}`);
          } else this.errors.push(`cas: ${(e as Error).name}: ${(e as Error).message}`);
        }
      }
      await new Promise((r) => setTimeout(r, 5));
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await Promise.all(this.loops);
    for (const nc of this.conns) await nc.close().catch(() => undefined);
  }
}
