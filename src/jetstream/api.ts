// The $JS.API router. Requests are handled one at a time in arrival order (serial queues)
// so that create/update/delete never interleave. Two queues, as nats-server 2.11+: info
// requests (INFO, STREAM.INFO/NAMES/LIST, CONSUMER.INFO/NAMES/LIST) wait in their own and are
// worked only when the other is empty. The queues are worked on a Pacer (pacer.ts): at most
// about API_SLICE_MS or API_PER_TURN requests per turn of the loop, and a request that means
// a lot of work (a stream with thousands of subjects: its overlap searches and its
// subscriptions) is itself done in steps across turns, its reply sent after the last one;
// requests behind it wait. Each queue holds at most its limit (request_queue_limit and
// info_queue_limit, nats-server's JSDefaultRequestQueueLimit, 10,000): reaching it drops
// every request queued there unanswered, logs a warning and publishes
// $JS.EVENT.ADVISORY.API.LIMIT_REACHED, as nats-server does.
// Consumer subjects go to the consumer layer's handleConsumerApi (consumer-api.ts).

import type { Bus, InternalSubscription } from "../contracts/bus.js";
import { getHeader, statusHeaders } from "../protocol/headers.js";
import { jsErr, JsApiError, type ApiError } from "../contracts/errors.js";
import { ApiType, type StreamConfig } from "../contracts/wire.js";
import { handleConsumerApi, recoverConsumers, recoverConsumersPaced } from "./consumer-api.js";
import type { ConsumerApiContext, HandleConsumerApi } from "./api-context.js";
import {
  checkStreamConfig,
  checkStreamUpdate,
  type ConsumerLimitsView,
  decodeStreamConfig,
  NAMED_PAIR_SEARCH,
  sameConfig,
  setStaticMetadata,
} from "../stream/config.js";
import { decodeMsgGet, msgGet, msgGetIsBad } from "../stream/get.js";
import type { Stream } from "../stream/stream.js";
import { isValidLiteralSubject, subjectsCollide } from "../subjects/subject.js";
import { Snapshots, snapshotSizes } from "./snapshot.js";
import { JS_API_LEVEL } from "../version.js";
import { DEFAULT_OVERLAP_BUDGET, findOverlap, OverlapBudgetExceeded, OverlapSearch, type OverlapPair } from "../subjects/overlap.js";
import type { JetStreamCore } from "./core.js";
import { Pacer } from "./pacer.js";
import { ERROR_EXTRAS, Fail, fail, optBool, optInt, optStr, parseBody, RawBody, responseType, type Body } from "./api-body.js";
import { isInfoRequest, RequestQueue, type QueuedRequest } from "./queue.js";
import { StreamInfoText } from "./info-json.js";
import type { ClusterApiHooks } from "./cluster-types.js";
import { domainMapped, STREAM_PATTERNS } from "./api-subjects.js";

export { domainMapped };

const NAMES_LIMIT = 1024;
const LIST_LIMIT = 256;
const MAX_SUBJECT_DETAILS = 100_000;
/** The queue group of a clustered server's $JS.API subscriptions. */
const API_QUEUE = "_tsnats_jsapi";
const API_PREFIX = "$JS.API.";
const AUDIT_SUBJECT = "$JS.EVENT.ADVISORY.API";
const EMPTY = Buffer.alloc(0);
/** nats-server JSDefaultRequestQueueLimit: queued API requests before they are dropped. */
export const DEFAULT_REQUEST_QUEUE_LIMIT = 10_000;
/** Work the queues for at most this many requests per turn of the loop (and at most the
 *  pacer's slice of time). */
const API_PER_TURN = 256;
/** ... and yield once the replies published in the turn pass this many bytes: they are
 *  written to the requesters' sockets when the turn's work is done (thousands of
 *  STREAM.INFO replies of a few KiB each made multi-megabyte writes). */
const API_REPLY_BYTES_PER_TURN = 256 * 1024;
/** Node pairs of an overlap search per step (well under a slice). */
const OVERLAP_STEP_UNITS = 2048;

/** The stream's own subjects need a search that has not been done (checkConfig). */
class NeedOverlapSearch extends Error {
  constructor(readonly subjects: readonly string[]) {
    super("overlap search needed");
  }
}

export class ApiRouter {
  private readonly queue = new RequestQueue("JetStream API queue");
  private readonly infoQueue = new RequestQueue("JetStream API info queue");
  readonly pacer: Pacer;
  private readonly infoText: StreamInfoText;
  /** Reply bytes published by the queue's requests in this turn (drain). */
  private turnReplyBytes = 0;
  private draining = false;
  private idleWaiters: (() => void)[] = [];
  /** Requests dropped because the queue reached its limit, since start. */
  dropped = 0;
  private limitWarnedMs = -Infinity;
  private consumerApi: HandleConsumerApi | null = null;
  private consumerApiLoaded = false;
  private recoverConsumersFn: ((ctx: ConsumerApiContext, st: Stream) => number) | null = null;
  readonly ctx: ConsumerApiContext;
  readonly snapshots: Snapshots;
  /** Clustered JetStream (cluster-api.ts): routing, meta-level requests, the cluster block. */
  cluster: ClusterApiHooks | null = null;

  constructor(private readonly svc: JetStreamCore) {
    const d = svc.deps;
    this.pacer = new Pacer(d.clock, d.sched);
    this.infoText = new StreamInfoText({
      domain: () => svc.domain,
      serverName: () => d.serverName,
      clusterBlock: (name) => (this.cluster !== null ? this.cluster.clusterBlock(name) : undefined),
      mirrorInfo: (st) => svc.sourcing.mirrorInfo(st),
      sourcesInfo: (st) => svc.sourcing.sourcesInfo(st),
      nowNs: () => d.clock.nowNs(),
    });
    this.ctx = {
      bus: d.bus,
      clock: d.clock,
      sched: d.sched,
      log: d.log,
      opts: d.opts,
      serverName: d.serverName,
      serverId: d.serverId,
      maxPayloadBytes: d.maxPayloadBytes,
      fs: svc.fs,
      getStream: (name) => svc.streams.get(name),
      streamNames: () => [...svc.streams.keys()].sort(),
      respond: (reply, obj) => this.respond(reply, obj),
      respondError: (reply, type, err) => this.respond(reply, { type, error: err }),
      canAddConsumer: () => true,
      advisory: (subject, body) => svc.advisory(subject, body),
      breathe: () => this.pacer.breathe(),
    };
    this.snapshots = new Snapshots(
      svc,
      (dir) => this.openStreamDir(dir),
      (reply, obj) => this.respond(reply, obj),
    );
  }

  /** Clustered: consumers subscribe on a bus whose subscriptions are announced over routes. */
  useBus(bus: Bus): void {
    (this.ctx as { bus: Bus }).bus = bus;
  }

  /** Open a stream directory as recovery does, with its durable consumers. */
  openStreamDir(dir: string): Stream {
    const st = this.svc.loadStreamDir(dir);
    this.recoverConsumersFn?.(this.ctx, st);
    return st;
  }

  /** Bring back every stream's durable consumers (at start, so push consumers deliver
   *  without waiting for an API request to touch them), one at a time on the pacer. */
  async recoverAllConsumers(pacer: Pacer): Promise<void> {
    for (const st of [...this.svc.streams.values()]) {
      try {
        await recoverConsumersPaced(this.ctx, st, () => pacer.breathe());
      } catch (e) {
        this.svc.deps.log.error(`JetStream could not recover consumers of '${st.name}': ${(e as Error).message}`);
      }
    }
  }

  async loadConsumerApi(): Promise<void> {
    if (this.consumerApiLoaded) return;
    this.consumerApiLoaded = true;
    // The consumer API (and with it src/consumer) is a static import: no fallback for a build
    // without it.
    this.consumerApi = handleConsumerApi;
    this.recoverConsumersFn = recoverConsumers;
  }

  /** The API's subscriptions. Clustered, they form one queue group announced over routes,
   *  so a server without JetStream (or a nats-server peer) routes its clients' requests to
   *  a JetStream server, as nats-server's JetStream servers' API subscriptions do; a request
   *  made on a JetStream server is taken by that server (preferLocal), and whichever server
   *  takes it routes it on to the one that answers (cluster-api.ts). */
  subscribe(): InternalSubscription[] {
    const bus = this.svc.deps.bus;
    const subs: InternalSubscription[] = [];
    const clustered = this.cluster !== null;
    const queue = clustered ? API_QUEUE : "";
    const opts = clustered ? { cluster: true, preferLocal: true } : undefined;
    for (const pat of STREAM_PATTERNS) {
      // Borrowing: enqueue copies what it keeps.
      subs.push(
        bus.subscribe(
          API_PREFIX + pat,
          (subject, reply, hdr, payload) => {
            if (this.cluster?.intercept(subject, reply, hdr, payload) !== true) this.enqueue(API_PREFIX, subject, reply, hdr, payload);
          },
          queue,
          true,
          opts,
        ),
      );
    }
    return subs;
  }

  /** Resolves when every queued request has been handled. */
  idle(): Promise<void> {
    if (!this.draining && this.pending === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /** Requests queued and not started yet. */
  get pending(): number {
    return this.queue.length + this.infoQueue.length;
  }

  private get queueLimit(): number {
    const l = this.svc.deps.opts.requestQueueLimit;
    return l !== undefined && l > 0 ? l : DEFAULT_REQUEST_QUEUE_LIMIT;
  }

  /** nats-server: info_queue_limit, request_queue_limit when not set. */
  private get infoQueueLimit(): number {
    const l = this.svc.deps.opts.infoQueueLimit;
    return l !== undefined && l > 0 ? l : this.queueLimit;
  }

  /** A request another server forwarded here (local: on this server's streams, no routing). */
  enqueueForwarded(subject: string, reply: string, hdr: Buffer | null, payload: Buffer, local: boolean): void {
    this.enqueue(API_PREFIX, subject, reply, hdr, payload, local);
  }

  private enqueue(prefix: string, subject: string, reply: string, hdr: Buffer | null, payload: Buffer, local = false): void {
    // Buffers are only valid during the bus callback.
    const h = hdr === null ? null : Buffer.from(hdr);
    const p = payload.length === 0 ? EMPTY : Buffer.from(payload);
    const rest = subject.slice(prefix.length);
    const info = isInfoRequest(rest);
    const q = info ? this.infoQueue : this.queue;
    // nats-server (jsAPIRoutedReqs / jsAPIRoutedInfoReqs): at its limit, everything queued in
    // that queue is dropped without a reply (the requesters time out), with a rate-limited
    // warning and an advisory. The request being handled, if any, goes on.
    const pending = q.push({ subject, rest, reply, hdr: h, payload: p, local });
    if (pending >= (info ? this.infoQueueLimit : this.queueLimit)) {
      q.clear();
      this.dropped += pending;
      // nats-server rate-limits this warning by its format; here once a minute.
      const now = this.svc.deps.clock.nowMs();
      if (now - this.limitWarnedMs >= 60_000) {
        this.limitWarnedMs = now;
        this.svc.deps.log.warn(`${q.name} limit reached, dropping ${pending} requests`);
      }
      this.svc.advisory("$JS.EVENT.ADVISORY.API.LIMIT_REACHED", {
        type: "io.nats.jetstream.advisory.v1.api_limit_reached",
        server: this.svc.deps.serverName,
        dropped: pending,
      });
      return;
    }
    if (!this.draining) {
      this.draining = true;
      // Started as a microtask, as before: a lone request is answered within the turn.
      this.svc.deps.sched.microtask(() => void this.drain());
    }
  }

  /** Works the queues in order, one request at a time (awaiting the asynchronous ones), the
   *  info queue only while the other is empty, and yields to the loop when the pacer's
   *  slice is used up or after API_PER_TURN requests. */
  private async drain(): Promise<void> {
    const pacer = this.pacer;
    pacer.begin();
    let n = 0;
    this.turnReplyBytes = 0;
    while (this.pending > 0) {
      if (n >= API_PER_TURN || this.turnReplyBytes >= API_REPLY_BYTES_PER_TURN || pacer.due) {
        await pacer.nextTurn();
        n = 0;
        this.turnReplyBytes = 0;
        continue;
      }
      const r = this.queue.shift() ?? this.infoQueue.shift()!;
      n++;
      if (this.plainStreamInfo(r)) continue;
      try {
        await this.dispatch(r.rest.split("."), r.reply, r.hdr, r.payload, r.local === true);
      } catch (e) {
        this.svc.deps.log.error(`JetStream API request ${r.subject} failed: ${(e as Error).stack ?? String(e)}`);
      }
    }
    this.draining = false;
    const w = this.idleWaiters;
    this.idleWaiters = [];
    for (const f of w) f();
  }

  /** STREAM.INFO without a body or headers on a local stream, the common burst: answered
   *  here and now from the cached reply head (StreamInfoText.infoReply), without a promise
   *  per request; false for anything else (dispatch's way). */
  private plainStreamInfo(r: QueuedRequest): boolean {
    if (r.payload.length !== 0 || r.hdr !== null || this.cluster !== null || r.reply === "" || !r.rest.startsWith("STREAM.INFO.")) return false;
    const name = r.rest.slice(12);
    const st = name.indexOf(".") < 0 ? this.svc.streams.get(name) : undefined;
    if (st === undefined) return false;
    this.svc.apiStats.total++;
    const bytes = this.infoText.infoReply(st);
    this.turnReplyBytes += bytes.length;
    this.svc.deps.bus.publish(r.reply, "", null, bytes);
    if (this.svc.deps.bus.hasInterest(AUDIT_SUBJECT)) this.audit(r.rest.split("."), r.payload, bytes.toString("utf8"));
    return true;
  }

  respond(reply: string, obj: unknown): void {
    if (typeof obj === "object" && obj !== null && (obj as { error?: unknown }).error !== undefined) {
      this.svc.apiStats.errors++;
    }
    if (reply === "") return;
    const bytes = Buffer.from(JSON.stringify(obj));
    this.turnReplyBytes += bytes.length;
    this.svc.deps.bus.publish(reply, "", null, bytes);
  }

  /** Nats-Required-Api-Level above ours: 10185 (JSON) or status 412 (direct get). */
  refuseApiLevel(hdr: Buffer | null, reply: string, asStatus: boolean, type = ""): boolean {
    if (hdr === null) return false;
    const v = getHeader(hdr, "Nats-Required-Api-Level");
    if (v === undefined) return false;
    const n = Number.parseInt(v, 10);
    if (Number.isFinite(n) && n <= JS_API_LEVEL) return false;
    if (asStatus) {
      if (reply !== "") this.svc.deps.bus.publish(reply, "", statusHeaders(412, "Required Api Level"), Buffer.alloc(0));
    } else {
      this.respond(reply, { type, error: jsErr("JSRequiredApiLevelErr") });
    }
    return true;
  }

  private async dispatch(t: string[], reply: string, hdr: Buffer | null, payload: Buffer, local = false): Promise<void> {
    this.svc.apiStats.total++;
    if (t[0] === "CONSUMER") {
      if (t[1] === "LEADER" && t[2] === "STEPDOWN" && this.cluster?.stepdownStream !== undefined) return this.consumerStepdown(t[3] ?? "", t[4] ?? "", reply);
      await this.loadConsumerApi();
      return await this.consumer(t, reply, hdr, payload);
    }
    const type = responseType(t);
    if (this.refuseApiLevel(hdr, reply, false, type)) return;
    let resp: Record<string, unknown>;
    try {
      const c = this.cluster !== null && !local ? await this.cluster.handle(t, reply, hdr, payload) : undefined;
      if (c === null) return;
      const out = c === undefined ? await this.stream(t, payload) : typeof c["raw"] === "string" ? new RawBody(c["raw"]) : (c as Record<string, unknown>);
      if (out instanceof RawBody) {
        const text = `{"type":${JSON.stringify(type)},${out.json.slice(1)}`;
        if (reply !== "") {
          const bytes = Buffer.from(text);
          this.turnReplyBytes += bytes.length;
          this.svc.deps.bus.publish(reply, "", null, bytes);
        }
        this.audit(t, payload, text);
        return;
      }
      resp = { type, ...out };
    } catch (e) {
      if (!(e instanceof Fail || e instanceof JsApiError)) throw e;
      // Go's non-omitempty fields still appear next to the error.
      resp = { type, error: e.apiError, ...(ERROR_EXTRAS[type] ?? {}) };
    }
    this.respond(reply, resp);
    this.audit(t, payload, resp);
  }

  /** A local stream's info as STREAM.LIST shows it (JSON text). */
  listInfoJson(st: Stream): string {
    return this.infoText.json(st, "");
  }

  private infoJson(st: Stream, head: string, opts?: { deletedDetails?: boolean }, withCluster = true, tail = ""): string {
    return this.infoText.json(st, head, opts, withCluster, tail);
  }

  /** $JS.EVENT.ADVISORY.API, only built when someone listens. */
  private audit(t: string[], payload: Buffer, resp: Record<string, unknown> | string): void {
    if (!this.svc.deps.bus.hasInterest(AUDIT_SUBJECT)) return;
    this.svc.advisory(AUDIT_SUBJECT, {
      type: ApiType.ApiAudit,
      server: this.svc.deps.serverName,
      client: {},
      subject: API_PREFIX + t.join("."),
      request: payload.toString("utf8"),
      response: typeof resp === "string" ? resp : JSON.stringify(resp),
    });
  }

  /** CONSUMER.LEADER.STEPDOWN.<stream>.<consumer>: a consumer leads where its stream leads,
   *  so the stream's leadership moves (its consumers with it). */
  private async consumerStepdown(stream: string, name: string, reply: string): Promise<void> {
    const type = ApiType.ConsumerLeaderStepdown;
    try {
      const st = this.svc.streams.get(stream);
      if (st === undefined) throw new JsApiError(jsErr("JSStreamNotFoundErr"));
      if (!st.consumers().some((c) => c.name === name)) throw new JsApiError(jsErr("JSConsumerNotFoundErr"));
      await this.cluster!.stepdownStream!(stream);
      this.respond(reply, { type, success: true });
    } catch (e) {
      if (!(e instanceof JsApiError)) throw e;
      this.respond(reply, { type, error: e.apiError });
    }
  }

  private async consumer(t: string[], reply: string, hdr: Buffer | null, payload: Buffer): Promise<void> {
    const op = t[1] ?? "";
    const tokens = t.slice(2);
    if (this.consumerApi !== null) {
      // A create that builds its start over several turns answers later (consumer-api.ts).
      const later = this.consumerApi(this.ctx, op, tokens, reply, hdr, payload);
      if (later !== undefined) await later;
      this.cluster?.consumerDone?.(op, tokens);
      return;
    }
    // No consumer layer: answer like a server whose consumers cannot be found.
    if (op === "MSG") return;
    const streamName = op === "DURABLE" ? (tokens[1] ?? "") : (tokens[0] ?? "");
    const type =
      op === "CREATE" || op === "DURABLE"
        ? ApiType.ConsumerCreate
        : op === "NAMES"
          ? ApiType.ConsumerNames
          : op === "LIST"
            ? ApiType.ConsumerList
            : op === "DELETE"
              ? ApiType.ConsumerDelete
              : ApiType.ConsumerInfo;
    if (!this.svc.streams.has(streamName)) return this.respond(reply, { type, error: jsErr("JSStreamNotFoundErr") });
    if (op === "CREATE" || op === "DURABLE") {
      return this.respond(reply, { type, error: jsErr("JSConsumerCreateErrF", { err: "consumers are not available" }) });
    }
    if (op === "NAMES") return this.respond(reply, { type, total: 0, offset: 0, limit: NAMES_LIMIT, consumers: [] });
    if (op === "LIST") return this.respond(reply, { type, total: 0, offset: 0, limit: LIST_LIMIT, consumers: [] });
    this.respond(reply, { type, error: jsErr("JSConsumerNotFoundErr") });
  }

  private lookup(name: string): Stream {
    const st = this.svc.streams.get(name);
    if (st === undefined) fail("JSStreamNotFoundErr");
    return st;
  }

  private info(st: Stream, opts?: { deletedDetails?: boolean; subjectsFilter?: string }): Record<string, unknown> {
    const i = st.info(opts, { mirror: this.svc.sourcing.mirrorInfo(st), sources: this.svc.sourcing.sourcesInfo(st) });
    const o: Record<string, unknown> = { config: i.config, created: i.created, state: i.state };
    if (this.svc.domain !== "") o["domain"] = this.svc.domain;
    o["cluster"] = this.cluster !== null ? this.cluster.clusterBlock(st.name) : i.cluster;
    if (i.mirror) o["mirror"] = i.mirror;
    if (i.sources) o["sources"] = i.sources;
    o["ts"] = i.ts;
    return o;
  }

  private async stream(t: string[], payload: Buffer): Promise<Record<string, unknown> | RawBody> {
    const [a, b, c, d] = t;
    if (a === "INFO" && t.length === 1) {
      const rest = { ...(this.svc.accountInfo() as Record<string, unknown>) };
      delete rest["type"];
      return rest;
    }
    if (a !== "STREAM") fail("JSBadRequestErr");
    switch (b ?? "") {
      case "CREATE":
        return this.create(c ?? "", payload);
      case "UPDATE":
        return this.update(c ?? "", payload);
      case "DELETE": {
        const st = this.lookup(c ?? "");
        await this.svc.deleteStream(st, this.pacer);
        return { success: true };
      }
      case "INFO":
        return this.streamInfo(c ?? "", payload);
      case "NAMES":
        return this.names(payload);
      case "LIST":
        return this.list(payload);
      case "PURGE":
        return this.purge(c ?? "", payload);
      case "MSG":
        if (c === "GET") return this.msgGet(d ?? "", payload);
        if (c === "DELETE") return this.msgDelete(d ?? "", payload);
        return fail("JSBadRequestErr");
      case "LEADER":
      case "PEER":
        this.lookup(d ?? "");
        return fail("JSClusterRequiredErr");
      case "SNAPSHOT":
        return this.snapshot(c ?? "", payload);
      case "RESTORE":
        return this.restore(c ?? "", payload);
      default:
        return fail("JSBadRequestErr");
    }
  }

  private others(except: string): { get(name: string): StreamConfig | undefined } {
    return { get: (n) => (n === except ? undefined : this.svc.streams.get(n)?.cfg) };
  }

  /** Does a subject of cfg collide with one of another stream's (nats-server subjectsOverlap)?
   *  One trie join of cfg's subjects against all the others', not every pair, worked in
   *  steps on the pacer. */
  private async overlapsOthers(cfg: StreamConfig): Promise<boolean> {
    const others: string[] = [];
    for (const st of this.svc.streams.values()) {
      if (st.name === cfg.name) continue;
      for (const s of st.cfg.subjects) others.push(s);
    }
    const search = new OverlapSearch(cfg.subjects, others);
    try {
      await this.pacer.run(() => search.step(OVERLAP_STEP_UNITS));
    } catch (e) {
      if (e instanceof OverlapBudgetExceeded) fail("JSStreamInvalidConfigF", { err: "stream subjects are too complex to check for overlaps" });
      throw e;
    }
    return search.crossIndex >= 0;
  }

  /** checkStreamConfig with the search among the stream's own subjects done beforehand in
   *  steps on the pacer (a list of thousands takes longer than a turn should), so the check
   *  itself only reads its answer. The check asks for the whole list, or for the part before
   *  an invalid subject: a part not searched yet is searched and the check run again. */
  private async checkConfig(raw: StreamConfig, others: { get(name: string): StreamConfig | undefined }, pedantic: boolean): Promise<StreamConfig> {
    // By the length of the list asked about: always a prefix of raw.subjects.
    const found = new Map<number, OverlapPair | null | "over budget">();
    let next: readonly string[] | null = raw.subjects;
    for (;;) {
      if (next !== null) {
        const search = new OverlapSearch(next, null, DEFAULT_OVERLAP_BUDGET, NAMED_PAIR_SEARCH);
        try {
          await this.pacer.run(() => search.step(OVERLAP_STEP_UNITS));
          found.set(next.length, search.pair);
        } catch (e) {
          if (!(e instanceof OverlapBudgetExceeded)) throw e;
          found.set(next.length, "over budget");
        }
        await this.pacer.breathe();
      }
      try {
        return checkStreamConfig(raw, others, pedantic, (subjects, maxPairs) => {
          const r = maxPairs === NAMED_PAIR_SEARCH ? found.get(subjects.length) : undefined;
          if (r === "over budget") throw new OverlapBudgetExceeded();
          if (r !== undefined) return r;
          if (subjects.length < 64) return findOverlap(subjects, DEFAULT_OVERLAP_BUDGET, maxPairs);
          throw new NeedOverlapSearch(subjects);
        });
      } catch (e) {
        if (!(e instanceof NeedOverlapSearch)) throw e;
        next = e.subjects;
      }
    }
  }

  /** STREAM.SNAPSHOT: nats-server's checks in its order, then the archive streams out. */
  private snapshot(name: string, payload: Buffer): Record<string, unknown> {
    if (payload.toString("utf8").trim().length === 0) fail("JSBadRequestErr");
    const st = this.lookup(name);
    const body = parseBody(payload, true);
    const deliver = optStr(body, "deliver_subject");
    if (!isValidLiteralSubject(deliver)) fail("JSSnapshotDeliverSubjectInvalidErr");
    const sizes = snapshotSizes(optInt(body, "chunk_size", "int", "JSApiStreamSnapshotRequest"), optInt(body, "window_size", "int", "JSApiStreamSnapshotRequest"), this.svc.deps.maxPayloadBytes);
    const r = this.snapshots.snapshot(st, { deliverSubject: deliver, noConsumers: optBool(body, "no_consumers"), ...sizes });
    if ("code" in r) throw new Fail(r as ApiError);
    return r;
  }

  /** STREAM.RESTORE: the config is checked as a create would check it, before any data. */
  private async restore(name: string, payload: Buffer): Promise<Record<string, unknown>> {
    if (payload.toString("utf8").trim().length === 0) fail("JSBadRequestErr");
    const body = parseBody(payload, true) ?? {};
    const rawCfg = body["config"];
    const cfgBody = typeof rawCfg === "object" && rawCfg !== null && !Array.isArray(rawCfg) ? { ...(rawCfg as Body) } : {};
    if ((cfgBody["name"] ?? "") === "") cfgBody["name"] = name;
    const raw = decodeStreamConfig(cfgBody);
    if (raw.name !== name) fail("JSStreamMismatchErr");
    if (/[\\/]/.test(name)) fail("JSStreamNameContainsPathSeparatorsErr");
    const cfg = checkStreamConfig({ ...raw, sealed: false }, this.others(name), false);
    cfg.sealed = raw.sealed;
    if (cfg.num_replicas > 1) fail("JSStreamReplicasNotSupportedErr");
    setStaticMetadata(cfg);
    if (this.svc.streams.has(name) || this.snapshots.restoring(name)) fail("JSStreamNameExistRestoreFailedErr");
    const res = this.svc.reservationError(cfg, "");
    if (res !== null) fail(res);
    if (await this.overlapsOthers(cfg)) fail("JSStreamSubjectOverlapErr");
    const r = this.snapshots.restore(cfg);
    if ("code" in r) throw new Fail(r as ApiError);
    return r;
  }

  /** STREAM.CREATE, in steps on the pacer: the JSON, the config check (with its search among
   *  the subjects), the search against other streams' subjects, the store and meta.json,
   *  the subscriptions a slice at a time, then the reply. */
  private async create(name: string, payload: Buffer): Promise<RawBody> {
    const body = parseBody(payload, true);
    await this.pacer.breathe();
    const pedantic = optBool(body, "pedantic");
    const raw = decodeStreamConfig(body ?? {});
    if (name !== raw.name) fail("JSStreamMismatchErr");
    if (/[\\/]/.test(name)) fail("JSStreamNameContainsPathSeparatorsErr");
    if (raw.sealed) fail("JSStreamInvalidConfigF", { err: "stream configuration for create can not be sealed" });
    if (raw.mirror_direct && raw.mirror === null) {
      fail("JSStreamInvalidConfigF", { err: "stream has no mirror but does have mirror direct" });
    }
    await this.pacer.breathe();
    const cfg = await this.checkConfig(raw, this.others(name), pedantic);
    if (cfg.num_replicas > 1 && this.cluster === null) fail("JSStreamReplicasNotSupportedErr");
    setStaticMetadata(cfg);
    await this.pacer.breathe();
    const existing = this.svc.streams.get(name);
    if (existing !== undefined) {
      if (!sameConfig(existing.cfg, cfg)) fail("JSStreamNameExistErr");
      return this.createInfo(existing, true);
    }
    const res = this.svc.reservationError(cfg, "");
    if (res !== null) fail(res);
    if (await this.overlapsOthers(cfg)) fail("JSStreamSubjectOverlapErr");
    // A restore may have finished meanwhile.
    if (this.svc.streams.has(name)) fail("JSStreamNameExistErr");
    let st: Stream;
    try {
      st = await this.svc.createStream(cfg, this.pacer);
    } catch (e) {
      if (e instanceof Fail || e instanceof JsApiError) throw e;
      this.svc.deps.log.warn(`Stream create failed for '$G > ${name}': ${(e as Error).message}`);
      fail("JSStreamCreateErrF", { err: (e as Error).message });
    }
    await this.pacer.breathe();
    return this.createInfo(st, true);
  }

  /** Publish a create (didCreate) or update reply for a local stream (clustered: the
   *  stream's responder answers once the meta op applied). */
  replyInfo(reply: string, type: string, st: Stream, didCreate: boolean): void {
    const text = `{"type":${JSON.stringify(type)},${this.createInfo(st, didCreate).json.slice(1)}`;
    if (reply !== "") this.svc.deps.bus.publish(reply, "", null, Buffer.from(text));
  }

  /** Create/update replies carry no cluster block (nats-server builds them without it);
   *  a create's ends with did_create. */
  private createInfo(st: Stream, didCreate: boolean): RawBody {
    return new RawBody(this.infoJson(st, "", undefined, false, didCreate ? ',"did_create":true' : ""));
  }

  /** STREAM.UPDATE, in steps on the pacer as create. */
  private async update(name: string, payload: Buffer): Promise<RawBody> {
    const body = parseBody(payload, true);
    await this.pacer.breathe();
    const pedantic = optBool(body, "pedantic");
    const raw = decodeStreamConfig(body ?? {});
    if (name !== raw.name) fail("JSStreamMismatchErr");
    const st = this.lookup(name);
    let cfg: StreamConfig;
    try {
      const limits: ConsumerLimitsView[] = [];
      for (const h of st.consumers()) {
        const l = h.consumerLimits?.();
        if (l !== undefined) limits.push({ name: h.name, ...l });
      }
      await this.pacer.breathe();
      const checked = await this.checkConfig(raw, this.others(name), pedantic);
      // The stream may have gone while the check was worked.
      if (this.svc.streams.get(name) !== st) fail("JSStreamNotFoundErr");
      cfg = checkStreamUpdate(st.cfg, checked, limits);
    } catch (e) {
      if (e instanceof JsApiError) throw e;
      throw e;
    }
    setStaticMetadata(cfg);
    if (await this.overlapsOthers(cfg)) fail("JSStreamSubjectOverlapErr");
    if (this.svc.streams.get(name) !== st) fail("JSStreamNotFoundErr");
    if (cfg.max_bytes > 0 && cfg.max_bytes !== st.cfg.max_bytes) {
      const res = this.svc.reservationError(cfg, name);
      if (res !== null) fail(res);
    }
    await this.svc.updateStream(st, cfg, this.pacer);
    await this.pacer.breathe();
    return this.createInfo(st, false);
  }

  private streamInfo(name: string, payload: Buffer): Record<string, unknown> | RawBody {
    const body = parseBody(payload, false);
    const deletedDetails = optBool(body, "deleted_details");
    const subjectsFilter = optStr(body, "subjects_filter");
    const offset = Math.max(0, optInt(body, "offset", "int", "JSApiStreamInfoRequest"));
    const st = this.lookup(name);
    // Clustered: the stream and its mirrors (nats-server streamAlternates).
    const domain = this.svc.domain;
    const alts = this.cluster?.alternates?.(st.name)?.map((a) => (domain !== "" ? { name: a.name, domain, cluster: a.cluster } : a)) ?? null;
    if (subjectsFilter === "") return new RawBody(this.infoJson(st, '"total":0,"offset":0,"limit":0,', { deletedDetails }, true, alts === null ? "" : `,"alternates":${JSON.stringify(alts)}`));
    const out: Record<string, unknown> = { total: 0, offset: 0, limit: 0 };
    const infoOpts: { deletedDetails: boolean; subjectsFilter?: string } = { deletedDetails };
    const i = this.info(st, infoOpts);
    if (subjectsFilter !== "") {
      const all = st.store.subjectsState(subjectsFilter);
      if (all.size > 0) {
        out["total"] = all.size;
        out["offset"] = offset;
        out["limit"] = MAX_SUBJECT_DETAILS;
        const names = [...all.keys()];
        if (offset > 0 || names.length > MAX_SUBJECT_DETAILS) names.sort();
        const page = offset === 0 && names.length <= MAX_SUBJECT_DETAILS ? names : names.slice(offset, offset + MAX_SUBJECT_DETAILS);
        const subjects: Record<string, number> = {};
        for (const s of page) subjects[s] = all.get(s)!.msgs;
        const state = i["state"] as Record<string, unknown>;
        const cc = state["consumer_count"];
        delete state["consumer_count"];
        if (page.length > 0) {
          // Keep nats-server's field order: subjects after num_subjects.
          const ordered: Record<string, unknown> = {};
          for (const [k, v] of Object.entries(state)) {
            ordered[k] = v;
            if (k === "num_subjects") ordered["subjects"] = subjects;
          }
          if (ordered["subjects"] === undefined) ordered["subjects"] = subjects;
          ordered["consumer_count"] = cc;
          i["state"] = ordered;
        } else {
          state["consumer_count"] = cc;
        }
      }
    }
    if (alts !== null) i["alternates"] = alts;
    return { ...out, ...i };
  }

  private filteredNames(filter: string): string[] {
    const names = [...this.svc.streams.keys()].sort();
    if (filter === "") return names;
    return names.filter((n) => {
      const st = this.svc.streams.get(n)!;
      if (st.cfg.subjects.length === 0) return subjectsCollide(filter, n);
      return st.cfg.subjects.some((s) => subjectsCollide(filter, s));
    });
  }

  private names(payload: Buffer): Record<string, unknown> {
    const body = parseBody(payload, false);
    const offset = Math.max(0, optInt(body, "offset", "int", "JSApiStreamNamesRequest"));
    const names = this.filteredNames(optStr(body, "subject"));
    const off = Math.min(offset, names.length);
    const page = names.slice(off, off + NAMES_LIMIT);
    return { total: names.length, offset: off, limit: NAMES_LIMIT, streams: page.length > 0 ? page : null };
  }

  private list(payload: Buffer): RawBody {
    const body = parseBody(payload, false);
    const offset = Math.max(0, optInt(body, "offset", "int", "JSApiStreamListRequest"));
    const names = this.filteredNames(optStr(body, "subject"));
    const off = Math.min(offset, names.length);
    const page = names.slice(off, off + LIST_LIMIT);
    const infos = page.map((n) => this.infoJson(this.svc.streams.get(n)!, ""));
    return new RawBody(`{"total":${names.length},"offset":${off},"limit":${LIST_LIMIT},"streams":[${infos.join(",")}]}`);
  }

  private async purge(name: string, payload: Buffer): Promise<Record<string, unknown>> {
    const body = parseBody(payload, false);
    const filter = optStr(body, "filter");
    const seq = optInt(body, "seq", "uint64", "JSApiStreamPurgeRequest");
    const keep = optInt(body, "keep", "uint64", "JSApiStreamPurgeRequest");
    if (seq > 0 && keep > 0) fail("JSBadRequestErr");
    const st = this.lookup(name);
    if (st.cfg.sealed) fail("JSStreamSealedErr");
    if (st.cfg.deny_purge) fail("JSStreamPurgeFailedF", { err: "stream purge not permitted" });
    const opts: { filter?: string; seq?: number; keep?: number } = {};
    if (filter !== "") opts.filter = filter;
    if (seq > 0) opts.seq = seq;
    if (keep > 0) opts.keep = keep;
    // A replicated stream purges through its group (every replica applies it, at once);
    // a local one a slice at a time on the pacer (requests behind it wait: the queue is serial).
    const purged = (await this.cluster?.purge?.(name, opts)) ?? (await st.purgePaced(opts, (step) => this.pacer.run(step)));
    // The stream tells consumers about removals below its first sequence; a purge by subject
    // also removes messages above it, which pending acks may still name.
    if (filter !== "" && purged > 0) for (const c of st.consumers()) c.onMessagesRemoved?.(filter);
    return { success: true, purged };
  }

  private msgGet(name: string, payload: Buffer): Record<string, unknown> {
    if (payload.toString("utf8").trim().length === 0) fail("JSBadRequestErr");
    const body = parseBody(payload, true);
    const req = decodeMsgGet(body ?? {});
    if (req === null) fail("JSInvalidJSONErr", { err: "json: cannot unmarshal request" });
    if (msgGetIsBad(req)) fail("JSBadRequestErr");
    const st = this.lookup(name);
    const r = msgGet(st.store, req);
    if ("error" in r) throw new Fail(r.error);
    return { message: r.msg };
  }

  private async msgDelete(name: string, payload: Buffer): Promise<Record<string, unknown>> {
    if (payload.toString("utf8").trim().length === 0) fail("JSBadRequestErr");
    const body = parseBody(payload, true);
    const seq = optInt(body, "seq", "uint64", "JSApiMsgDeleteRequest");
    const noErase = optBool(body, "no_erase");
    const st = this.lookup(name);
    if (st.cfg.sealed) fail("JSStreamSealedErr");
    if (st.cfg.deny_delete) fail("JSStreamMsgDeleteFailedF", { err: "message delete not permitted" });
    const s = st.store.state();
    if (seq > s.lastSeq) fail("JSStreamMsgDeleteFailedF", { err: "stream store EOF" });
    const done = seq === 0 ? false : ((await this.cluster?.deleteMsg?.(name, seq, noErase !== true)) ?? st.deleteMsg(seq, noErase !== true));
    if (!done) fail("JSStreamMsgDeleteFailedF", { err: "no message found" });
    return { success: true };
  }
}

export const _internal = { parseBody };
