// Stream snapshots and restores over the network: $JS.API.STREAM.SNAPSHOT.<stream> and
// $JS.API.STREAM.RESTORE.<stream>, with nats-server's wire protocol (the clients treat the
// bytes as opaque, so the archive format is tsnats' own):
//
//   snapshot: the API reply {config, state} comes first; then the archive goes to the
//   request's deliver_subject in chunks (chunk_size, 1 KiB..1 MiB, default 128 KiB), each
//   with a reply subject $JS.SNAPSHOT.ACK.<stream>.<id>.<len>.<index>. The receiver answers
//   each chunk; at most window_size/chunk_size chunks are unanswered at once (default
//   8 MiB window). An empty message with status 204 ends it; 408 No Flow Response when the
//   receiver stops answering for 5 s, 408 No Interest when it unsubscribes.
//   restore: the API reply names a deliver_subject ($JS.SNAPSHOT.RESTORE.<stream>.<id>);
//   the client sends chunks to it as requests, each answered with an empty message; an
//   empty chunk ends the upload and is answered with a stream create response once the
//   stream is rebuilt. No chunk for 5 s abandons the restore.
//
// Archive: the codec in storage/archive.ts ("TSNSNAP1", deflated frames of records): META
// (JSON: config, created, state), MSG per message (seq, time, subject, header, data),
// CONSUMER (JSON: name, config, created, state) and END (JSON: counts). A missing END means a
// truncated archive. Messages are read with a StoreSnapshotReader and restored with a
// StoreSnapshotWriter (storeMsgAt, then skipMsgs up to END's last_seq), as a replica's store
// snapshot is; TTLs come back from the Nats-TTL header.
//
// The snapshot is of the stream as it was when the request arrived: messages up to the
// last sequence then (messages removed while it streams are left out) and the durable
// consumers' state then. A restore writes the stream into a hidden directory beside the
// others, fsyncs it, renames it into place and opens it as a restart would, so dedup
// windows, per-message TTLs and consumers come back the way recovery brings them back.
// Memory streams have nothing on disk to restore into; both directions refuse them.

import { join } from "node:path";
import type { TimerHandle } from "../runtime/clock.js";
import { randomName } from "./ids.js";
import type { Bus, InternalSubscription } from "../contracts/bus.js";
import { getHeader, statusHeaders } from "../protocol/headers.js";
import {
  ARCHIVE_MAGIC as MAGIC,
  ArchiveDecoder,
  FRAME_RAW_TARGET,
  REC_CONSUMER,
  REC_END,
  REC_META,
  REC_MSG,
  StoreSnapshotReader,
  StoreSnapshotWriter,
  decodeMsgRecord,
  encodeFrame as frame,
  encodeJsonRecord as jsonRecord,
  encodeMsgRecord as msgRecord,
} from "../storage/archive.js";
import { FileStreamStore, FileConsumerStore } from "../storage/index.js";
import type { ConsumerState } from "../storage/types.js";
import { parseMsgTtlSec, parseRfc3339Ns, rfc3339Ns } from "../stream/time.js";
import type { Stream } from "../stream/stream.js";
import { HDR_TTL } from "../stream/stream.js";
import { jsErr, type ApiError } from "../contracts/errors.js";
import { ApiType, type StreamConfig } from "../contracts/wire.js";
import type { JetStreamCore } from "./core.js";

const DEFAULT_CHUNK = 128 * 1024;
const DEFAULT_WINDOW = 8 * 1024 * 1024;
const ACK_TIMEOUT_MS = 5_000;
const INTEREST_GRACE_MS = 2_000;
const RESTORE_IDLE_MS = 5_000;
/** Frames built per turn of the event loop while streaming out. */
const FRAMES_PER_TURN = 8;
const EMPTY = Buffer.alloc(0);

/** nats-server's bounds: chunk 1 KiB..1 MiB (and never above max_payload), window
 *  1 KiB..32 MiB and at least one chunk; 0 or less takes the default. */
export function snapshotSizes(chunkSize: number, windowSize: number, maxPayload: number): { chunkSize: number; windowSize: number } {
  const chunk = Math.min(Math.max(1024, chunkSize > 0 ? chunkSize : DEFAULT_CHUNK), 1024 * 1024, maxPayload);
  const window = Math.max(Math.min(Math.max(1024, windowSize > 0 ? windowSize : DEFAULT_WINDOW), 32 * 1024 * 1024), chunk);
  return { chunkSize: chunk, windowSize: window };
}

export interface SnapshotRequest {
  deliverSubject: string;
  noConsumers: boolean;
  chunkSize: number;
  windowSize: number;
}

/** What a durable consumer carries into a snapshot (see Consumer.exportDurable). */
export interface DurableExport {
  name: string;
  createdNs: number;
  config: Record<string, unknown>;
  state: ConsumerState;
}

interface Exporting {
  exportDurable?(): DurableExport | null;
}

function stateToJson(s: ConsumerState): Record<string, unknown> {
  return {
    delivered: [s.delivered.consumerSeq, s.delivered.streamSeq],
    ack_floor: [s.ackFloor.consumerSeq, s.ackFloor.streamSeq],
    pending: [...s.pending].map(([seq, p]) => [seq, p.cseq, p.tsNs]),
    redelivered: [...s.redelivered],
  };
}

function stateFromJson(o: Record<string, unknown>): ConsumerState {
  const pair = (v: unknown): [number, number] => {
    const a = Array.isArray(v) ? v : [];
    return [Number(a[0] ?? 0), Number(a[1] ?? 0)];
  };
  const [dc, ds] = pair(o["delivered"]);
  const [ac, as] = pair(o["ack_floor"]);
  const pending = new Map<number, { cseq: number; tsNs: number }>();
  for (const e of (o["pending"] as unknown[] | undefined) ?? []) {
    const a = e as number[];
    pending.set(Number(a[0]), { cseq: Number(a[1]), tsNs: Number(a[2]) });
  }
  const redelivered = new Map<number, number>();
  for (const e of (o["redelivered"] as unknown[] | undefined) ?? []) {
    const a = e as number[];
    redelivered.set(Number(a[0]), Number(a[1]));
  }
  return { delivered: { consumerSeq: dc, streamSeq: ds }, ackFloor: { consumerSeq: ac, streamSeq: as }, pending, redelivered };
}

// ---------------------------------------------------------------- snapshot (server → client)

/** Streams one stream's archive to a deliver subject under acked flow control. */
class SnapshotSender {
  private readonly ackSubject: string;
  private ackSub: InternalSubscription | null = null;
  private slots: number;
  private index = 1;
  private nextSeq: number;
  private readonly lastSeq: number;
  private readonly reader: StoreSnapshotReader;
  private phase: "meta" | "msgs" | "tail" | "done" = "meta";
  /** Compressed bytes waiting to go out. */
  private out: Buffer[] = [];
  private outLen = 0;
  private ackTimer: TimerHandle | null = null;
  private scheduled = false;
  private finished = false;
  private readonly startedNs: number;
  private msgs = 0;

  constructor(
    private readonly svc: JetStreamCore,
    private readonly st: Stream,
    private readonly req: SnapshotRequest,
    private readonly meta: Record<string, unknown>,
    private readonly consumers: DurableExport[],
    private readonly onDone: (err: string) => void,
  ) {
    this.ackSubject = `$JS.SNAPSHOT.ACK.${st.name}.${randomName(22)}`;
    this.slots = Math.max(1, Math.floor(req.windowSize / req.chunkSize));
    // TTLs are not in this archive's records (a restore reads them from the Nats-TTL header)
    this.reader = new StoreSnapshotReader(st.store, false);
    this.nextSeq = this.reader.state.firstSeq;
    this.lastSeq = this.reader.state.lastSeq;
    this.startedNs = svc.deps.clock.nowNs();
  }

  private get bus(): Bus {
    return this.svc.deps.bus;
  }

  start(): void {
    this.ackSub = this.bus.subscribe(`${this.ackSubject}.>`, () => {
      this.slots++;
      this.clearAckTimer();
      this.schedule();
    });
    this.out.push(MAGIC);
    this.outLen += MAGIC.length;
    // Give the receiver a moment to subscribe, as nats-server does, then go regardless.
    const clock = this.svc.deps.clock;
    const deadline = clock.nowMs() + INTEREST_GRACE_MS;
    const wait = (): void => {
      if (this.finished) return;
      if (this.bus.hasInterest(this.req.deliverSubject) || clock.nowMs() >= deadline) this.schedule();
      else clock.setTimer(wait, 10, true);
    };
    wait();
  }

  startedAt(): number {
    return this.startedNs;
  }

  private schedule(): void {
    if (this.scheduled || this.finished) return;
    this.scheduled = true;
    this.svc.deps.sched.nextTurn(() => {
      this.scheduled = false;
      this.pump();
    });
  }

  private pump(): void {
    if (this.finished) return;
    if (!this.bus.hasInterest(this.req.deliverSubject)) return this.end(408, "No Interest", "no interest");
    let frames = 0;
    while (this.slots > 0) {
      while (this.outLen < this.req.chunkSize && this.phase !== "done") {
        if (frames >= FRAMES_PER_TURN) return this.schedule();
        this.produce();
        frames++;
      }
      if (this.outLen === 0) return this.end(204, "", "");
      const chunk = this.take(Math.min(this.req.chunkSize, this.outLen));
      this.bus.publish(this.req.deliverSubject, `${this.ackSubject}.${chunk.length}.${this.index}`, null, chunk);
      this.index++;
      this.slots--;
    }
    this.armAckTimer();
  }

  private take(n: number): Buffer {
    const first = this.out[0]!;
    let chunk: Buffer;
    if (first.length === n) {
      this.out.shift();
      chunk = first;
    } else if (first.length > n) {
      chunk = first.subarray(0, n);
      this.out[0] = first.subarray(n);
    } else {
      chunk = Buffer.allocUnsafe(n);
      let p = 0;
      while (p < n) {
        const b = this.out[0]!;
        const k = Math.min(b.length, n - p);
        b.copy(chunk, p, 0, k);
        p += k;
        if (k === b.length) this.out.shift();
        else this.out[0] = b.subarray(k);
      }
    }
    this.outLen -= n;
    return chunk;
  }

  /** Build one frame of records and queue it. */
  private produce(): void {
    const recs: Buffer[] = [];
    let raw = 0;
    if (this.phase === "meta") {
      const r = jsonRecord(REC_META, this.meta);
      recs.push(r);
      raw += r.length;
      this.phase = "msgs";
    }
    while (this.phase === "msgs" && raw < FRAME_RAW_TARGET) {
      const m = this.reader.next(this.nextSeq);
      if (m === null) {
        this.phase = "tail";
        break;
      }
      const r = msgRecord(m.seq, m.tsNs, m.subject, m.hdr, m.data);
      recs.push(r);
      raw += r.length;
      this.nextSeq = m.seq + 1;
      this.msgs++;
    }
    if (this.phase === "tail") {
      for (const c of this.consumers) {
        const r = jsonRecord(REC_CONSUMER, { name: c.name, created_ns: c.createdNs, config: c.config, state: stateToJson(c.state) });
        recs.push(r);
      }
      recs.push(jsonRecord(REC_END, { msgs: this.msgs, consumers: this.consumers.length, last_seq: this.lastSeq }));
      this.phase = "done";
    }
    if (recs.length === 0) return;
    const f = frame(recs.length === 1 ? recs[0]! : Buffer.concat(recs));
    this.out.push(f);
    this.outLen += f.length;
  }

  private armAckTimer(): void {
    if (this.ackTimer !== null || this.finished) return;
    this.ackTimer = this.svc.deps.clock.setTimer(() => {
      this.ackTimer = null;
      this.end(408, "No Flow Response", "no flow response");
    }, ACK_TIMEOUT_MS, true);
  }

  private clearAckTimer(): void {
    if (this.ackTimer === null) return;
    this.svc.deps.clock.clearTimer(this.ackTimer);
    this.ackTimer = null;
  }

  private end(code: number, description: string, err: string): void {
    if (this.finished) return;
    this.finished = true;
    this.clearAckTimer();
    this.ackSub?.unsubscribe();
    this.ackSub = null;
    this.out = [];
    this.bus.publish(this.req.deliverSubject, "", statusHeaders(code, description), EMPTY);
    this.onDone(err);
  }

  abort(): void {
    if (this.finished) return;
    this.end(503, "Server Stopping", "server stopping");
  }
}

// ---------------------------------------------------------------- restore (client → server)

class RestoreFailure extends Error {}

/** Receives an archive and writes it into a hidden stream directory. */
class RestoreReceiver {
  readonly deliverSubject: string;
  private sub: InternalSubscription | null = null;
  private readonly decoder = new ArchiveDecoder((kind, body) => this.record(kind, body));
  private writer: StoreSnapshotWriter | null = null;
  private meta: Record<string, unknown> | null = null;
  private store: FileStreamStore | null = null;
  private readonly consumers: Array<Record<string, unknown>> = [];
  private end: Record<string, unknown> | null = null;
  private idle: TimerHandle | null = null;
  private done = false;
  private bytes = 0;
  private readonly tmpDir: string;
  private readonly startedNs: number;

  constructor(
    private readonly svc: JetStreamCore,
    private readonly cfg: StreamConfig,
    private readonly finish: (r: RestoreReceiver, err: Error | null, reply: string) => void,
  ) {
    const id = randomName(22);
    this.deliverSubject = `$JS.SNAPSHOT.RESTORE.${cfg.name}.${id}`;
    this.tmpDir = join(svc.streamsDir(), `.restore-${cfg.name}-${id}`);
    this.startedNs = svc.deps.clock.nowNs();
  }

  get name(): string {
    return this.cfg.name;
  }

  get dir(): string {
    return this.tmpDir;
  }

  get totalBytes(): number {
    return this.bytes;
  }

  startedAt(): number {
    return this.startedNs;
  }

  start(): void {
    const fs = this.svc.fs;
    fs.mkdirp(join(this.tmpDir, "msgs"));
    fs.mkdirp(join(this.tmpDir, "obs"));
    this.store = new FileStreamStore({
      dir: join(this.tmpDir, "msgs"),
      fs,
      clock: this.svc.deps.clock,
      // Limits apply when the restored stream opens; while writing, nothing is evicted.
      limits: { maxMsgs: 0, maxBytes: 0, maxAgeMs: 0, maxMsgsPerSubject: 0 },
      syncIntervalMs: 0,
    });
    this.store.open();
    this.writer = new StoreSnapshotWriter(this.store);
    this.sub = this.svc.deps.bus.subscribe(this.deliverSubject, (_s, reply, _h, payload) => this.onChunk(reply, payload));
    this.armIdle();
  }

  private armIdle(): void {
    if (this.idle !== null) this.svc.deps.clock.clearTimer(this.idle);
    this.idle = this.svc.deps.clock.setTimer(() => {
      this.idle = null;
      this.fail(new RestoreFailure(`restore for stream '$G > ${this.cfg.name}' is stalled`), "");
    }, RESTORE_IDLE_MS, true);
  }

  private onChunk(reply: string, payload: Buffer): void {
    if (this.done) return;
    if (reply === "") {
      this.fail(new RestoreFailure(`restore for stream '$G > ${this.cfg.name}' requires reply subject for each chunk`), "");
      return;
    }
    if (payload.length === 0) {
      this.complete(reply);
      return;
    }
    this.armIdle();
    this.bytes += payload.length;
    try {
      this.feed(payload);
    } catch (e) {
      this.fail(e as Error, reply);
      return;
    }
    this.svc.deps.bus.publish(reply, "", null, EMPTY);
  }

  private feed(chunk: Buffer): void {
    this.decoder.push(chunk);
  }

  private record(kind: number, body: Buffer): void {
    if (kind !== REC_META && this.meta === null) throw new RestoreFailure("snapshot does not start with its metadata");
    switch (kind) {
      case REC_META:
        this.meta = JSON.parse(body.toString("utf8")) as Record<string, unknown>;
        break;
      case REC_MSG:
        this.message(body);
        break;
      case REC_CONSUMER:
        this.consumers.push(JSON.parse(body.toString("utf8")) as Record<string, unknown>);
        break;
      case REC_END:
        this.end = JSON.parse(body.toString("utf8")) as Record<string, unknown>;
        break;
      default:
        throw new RestoreFailure(`unknown snapshot record kind ${kind}`);
    }
  }

  private message(b: Buffer): void {
    const m = decodeMsgRecord(b, false);
    if (m.hdr !== null) {
      const v = getHeader(m.hdr, HDR_TTL);
      if (v !== undefined) {
        const t = parseMsgTtlSec(v);
        if (Number.isFinite(t) && t > 0) m.ttlSec = t;
      }
    }
    this.writer!.put(m);
  }

  /** Time of the stream's last sequence when the snapshot was taken (the META state's
   *  last_ts), for sequences deleted at the end; else that of the last message restored. */
  private lastTsNs(): number {
    const st = this.meta?.["state"] as Record<string, unknown> | undefined;
    const v = st?.["last_ts"];
    const ns = typeof v === "string" ? parseRfc3339Ns(v) : Number.NaN;
    return Number.isFinite(ns) && ns > 0 ? ns : this.store!.state().lastTsNs;
  }

  private complete(reply: string): void {
    if (this.idle !== null) this.svc.deps.clock.clearTimer(this.idle);
    this.idle = null;
    if (this.end === null) {
      this.fail(new RestoreFailure(this.bytes === 0 ? "snapshot is empty" : "snapshot is truncated"), reply);
      return;
    }
    const lastSeq = Number(this.end["last_seq"] ?? 0);
    try {
      if (!Number.isSafeInteger(lastSeq)) throw new RestoreFailure(`snapshot last sequence ${lastSeq} is not valid`);
      if (lastSeq > this.store!.state().lastSeq) this.writer!.finish(lastSeq, this.lastTsNs());
    } catch (e) {
      this.fail(e as Error, reply);
      return;
    }
    this.done = true;
    this.sub?.unsubscribe();
    this.sub = null;
    const store = this.store!;
    this.store = null;
    store.close().then(
      () => this.finish(this, null, reply),
      (e: unknown) => this.finish(this, e as Error, reply),
    );
  }

  /** Durable consumers from the archive, as they should be written under obs/. */
  restoredConsumers(): Array<{ name: string; createdNs: number; config: Record<string, unknown>; state: ConsumerState }> {
    return this.consumers.map((c) => ({
      name: String(c["name"] ?? ""),
      createdNs: Number(c["created_ns"] ?? 0),
      config: (c["config"] as Record<string, unknown> | undefined) ?? {},
      state: stateFromJson((c["state"] as Record<string, unknown> | undefined) ?? {}),
    }));
  }

  createdNs(): number {
    const n = Number(this.meta?.["created_ns"] ?? 0);
    return Number.isFinite(n) && n > 0 ? n : this.svc.deps.clock.nowNs();
  }

  private fail(err: Error, reply: string): void {
    if (this.done) return;
    this.done = true;
    if (this.idle !== null) this.svc.deps.clock.clearTimer(this.idle);
    this.idle = null;
    this.sub?.unsubscribe();
    this.sub = null;
    const store = this.store;
    this.store = null;
    const cleanup = (): void => this.finish(this, err, reply);
    if (store === null) cleanup();
    else store.close().then(cleanup, cleanup);
  }

  abort(): void {
    this.fail(new RestoreFailure("server stopping"), "");
  }
}

// ---------------------------------------------------------------- the service side

export class Snapshots {
  private readonly senders = new Set<SnapshotSender>();
  private readonly restores = new Map<string, RestoreReceiver>();

  constructor(
    private readonly svc: JetStreamCore,
    /** Reload a stream directory as at start and bring its consumers back. */
    private readonly load: (dir: string) => Stream,
    private readonly respond: (reply: string, obj: unknown) => void,
  ) {}

  restoring(name: string): boolean {
    return this.restores.has(name);
  }

  /** Validated request → the API reply body; the archive follows on the next turn. */
  snapshot(st: Stream, req: SnapshotRequest): { config: Record<string, unknown>; state: Record<string, unknown> } | ApiError {
    if (st.cfg.storage !== "file" || st.dir === null) return jsErr("JSStreamSnapshotErrF", { err: "memory streams do not support snapshots" });
    const info = st.info();
    const config = info.config as unknown as Record<string, unknown>;
    const state = { ...(info.state as unknown as Record<string, unknown>) };
    const consumers: DurableExport[] = [];
    if (!req.noConsumers) {
      for (const c of st.consumers()) {
        const d = (c as Exporting).exportDurable?.() ?? null;
        if (d !== null) consumers.push(structuredClone(d));
      }
    }
    const meta = { version: 1, config: st.wireConfig(), created_ns: st.createdNs, state };
    const sender = new SnapshotSender(this.svc, st, req, meta, consumers, (err) => {
      this.senders.delete(sender);
      const end = this.svc.deps.clock.nowNs();
      const msg = `${err === "" ? "Completed" : "Failed"} snapshot for stream '$G > ${st.name}'${err === "" ? "" : `: ${err}`}`;
      if (err === "") this.svc.deps.log.info(msg);
      else this.svc.deps.log.warn(msg);
      this.svc.advisory(`$JS.EVENT.ADVISORY.STREAM.SNAPSHOT_COMPLETE.${st.name}`, {
        type: "io.nats.jetstream.advisory.v1.snapshot_complete",
        stream: st.name,
        start: rfc3339Ns(sender.startedAt()),
        end: rfc3339Ns(end),
        client: {},
        ...(err === "" ? {} : { error: err }),
      });
    });
    this.senders.add(sender);
    this.svc.deps.log.info(`Starting snapshot for stream '$G > ${st.name}'`);
    this.svc.advisory(`$JS.EVENT.ADVISORY.STREAM.SNAPSHOT_CREATE.${st.name}`, {
      type: "io.nats.jetstream.advisory.v1.snapshot_create",
      stream: st.name,
      state,
      client: {},
    });
    this.svc.deps.sched.nextTurn(() => sender.start());
    return { config, state };
  }

  /** A checked config → the deliver subject for the chunks. */
  restore(cfg: StreamConfig): { deliver_subject: string } | ApiError {
    if (cfg.storage !== "file") return jsErr("JSStreamRestoreErrF", { err: "memory streams can not be restored" });
    if (this.restores.has(cfg.name)) return jsErr("JSStreamRestoreErrF", { err: `a restore of stream '${cfg.name}' is already in progress` });
    const r = new RestoreReceiver(this.svc, cfg, (rr, err, reply) => {
      this.finishRestore(rr, cfg, err, reply).catch((e: unknown) => this.svc.deps.log.error(`restore of '${cfg.name}': ${(e as Error).stack ?? String(e)}`));
    });
    try {
      r.start();
    } catch (e) {
      this.svc.fs.rmrf(r.dir);
      return jsErr("JSRestoreSubscribeFailedErrF", { subject: r.deliverSubject, err: (e as Error).message });
    }
    this.restores.set(cfg.name, r);
    this.svc.deps.log.info(`Starting restore for stream '$G > ${cfg.name}'`);
    this.svc.advisory(`$JS.EVENT.ADVISORY.STREAM.RESTORE_CREATE.${cfg.name}`, {
      type: "io.nats.jetstream.advisory.v1.restore_create",
      stream: cfg.name,
      client: {},
    });
    return { deliver_subject: r.deliverSubject };
  }

  private async finishRestore(r: RestoreReceiver, cfg: StreamConfig, failure: Error | null, reply: string): Promise<void> {
    this.restores.delete(cfg.name);
    const fs = this.svc.fs;
    let err = failure;
    let st: Stream | null = null;
    if (err === null) {
      try {
        for (const c of r.restoredConsumers()) {
          if (c.name === "" || /[\\/.]/.test(c.name)) continue;
          const store = new FileConsumerStore({ dir: join(r.dir, "obs", c.name), fs, clock: this.svc.deps.clock, syncIntervalMs: 0 });
          store.open();
          store.writeConfig(JSON.stringify({ stream: cfg.name, name: c.name, created_ns: c.createdNs, config: c.config }));
          store.update(c.state);
          await store.close();
        }
        this.svc.writeStreamMeta(r.dir, cfg, r.createdNs());
        // Checked again here: the API answers one request at a time, but chunks do not wait.
        if (this.svc.streams.has(cfg.name)) throw new RestoreFailure("stream name already in use");
        const final = join(this.svc.streamsDir(), cfg.name);
        fs.rmrf(final);
        fs.rename(r.dir, final);
        fs.fsyncDirSync(this.svc.streamsDir());
        st = this.load(final);
      } catch (e) {
        err = e as Error;
      }
    }
    if (err !== null) fs.rmrf(r.dir);
    const end = this.svc.deps.clock.nowNs();
    this.svc.advisory(`$JS.EVENT.ADVISORY.STREAM.RESTORE_COMPLETE.${cfg.name}`, {
      type: "io.nats.jetstream.advisory.v1.restore_complete",
      stream: cfg.name,
      start: rfc3339Ns(r.startedAt()),
      end: rfc3339Ns(end),
      bytes: r.totalBytes,
      client: {},
    });
    if (err !== null || st === null) {
      const msg = err?.message ?? "restore did not create a stream";
      this.svc.deps.log.warn(`Restore failed for stream '$G > ${cfg.name}': ${msg}`);
      this.respond(reply, { type: ApiType.StreamCreate, error: jsErr("JSStreamRestoreErrF", { err: msg }) });
      return;
    }
    this.svc.deps.log.info(`Completed restore of ${r.totalBytes} bytes for stream '$G > ${cfg.name}'`);
    const i = st.info();
    this.respond(reply, { type: ApiType.StreamCreate, config: i.config, created: i.created, state: i.state, ts: i.ts });
  }

  stop(): void {
    for (const s of [...this.senders]) s.abort();
    for (const r of [...this.restores.values()]) r.abort();
  }
}
