// $JS.API.CONSUMER.* (the router hands over op and the remaining tokens): CREATE (legacy
// ephemeral, named, named with filter), DURABLE.CREATE, INFO, NAMES, LIST, DELETE,
// MSG.NEXT, PAUSE, UNPIN; plus consumer recovery at start (recoverConsumers).
//
// Consumers are registered with their stream (StreamHandle.addConsumer); this module keeps
// no registry of its own beyond the one Ticker per API context.

import { dirname, join } from "node:path";
import { randomName } from "./ids.js";
import type { ConsumerApiContext, HandleConsumerApi } from "./api-context.js";
import type { ConsumerSeed, ReplicatedConsumer, StreamHandle } from "../contracts/jetstream.js";
import { jsErr, JsApiError, type ApiError, type JsErrName } from "../contracts/errors.js";
import { ApiType } from "../contracts/wire.js";
import { getHeader, statusHeaders } from "../protocol/headers.js";
import { JS_API_LEVEL } from "../version.js";
import { FileConsumerStore } from "../storage/index.js";
import type { ConsumerStore } from "../storage/types.js";
import { rfc3339Ns, parseRfc3339Ns } from "../stream/time.js";
import {
  checkConsumerConfig,
  checkWorkQueue,
  consumerConfigToWire,
  decodeConsumerConfig,
  filtersOf,
  sameConsumerConfig,
  setStaticMetadata,
  updateError,
  type ConsumerConfig,
  type StreamView,
} from "../consumer/config.js";
import { Consumer, type ConsumerEnv } from "../consumer/consumer.js";
import { buildLastPerSubject, type LastPerSubjectPlan } from "../consumer/lps-build.js";
import { Ticker } from "../consumer/wheel.js";
import { PIN_ID_LEN, VALID_GROUP_NAME } from "../consumer/priority.js";
import { parseApiJson } from "../contracts/json.js";

const NAMES_LIMIT = 1024;
const LIST_LIMIT = 256;
const PAUSE_TYPE = "io.nats.jetstream.api.v1.consumer_pause_response";
const UNPIN_TYPE = "io.nats.jetstream.api.v1.consumer_unpin_response";
const ADV = "$JS.EVENT.ADVISORY.CONSUMER.";
const ACTION_TYPE = "io.nats.jetstream.advisory.v1.consumer_action";
const PAUSE_ADV_TYPE = "io.nats.jetstream.advisory.v1.consumer_pause";
const EMPTY = Buffer.alloc(0);

type Body = Record<string, unknown>;

interface CtxState {
  ticker: Ticker;
  recovered: WeakSet<StreamHandle>;
}

const perCtx = new WeakMap<ConsumerApiContext, CtxState>();

function stateOf(ctx: ConsumerApiContext): CtxState {
  let s = perCtx.get(ctx);
  if (s === undefined) {
    s = {
      ticker: new Ticker(ctx.clock, (e) => ctx.log.error(`JetStream consumer timer: ${(e as Error).stack ?? String(e)}`)),
      recovered: new WeakSet(),
    };
    perCtx.set(ctx, s);
  }
  return s;
}

function fail(name: JsErrName, args?: Record<string, string | number>): never {
  throw new JsApiError(jsErr(name, args));
}

function parseBody(payload: Buffer): Body | null {
  const text = payload.toString("utf8").trim();
  if (text.length === 0) return null;
  let v: unknown;
  try {
    v = parseApiJson(text);
  } catch (e) {
    fail("JSInvalidJSONErr", { err: (e as Error).message });
  }
  if (v === null) return null;
  if (typeof v !== "object" || Array.isArray(v)) fail("JSInvalidJSONErr", { err: "json: cannot unmarshal into Go value" });
  return v as Body;
}

function streamView(st: StreamHandle): StreamView {
  const w = st.wireConfig();
  const cl = (w["consumer_limits"] ?? {}) as Record<string, unknown>;
  return {
    name: st.name,
    subjects: Array.isArray(w["subjects"]) ? (w["subjects"] as string[]) : [],
    retention: st.retention(),
    num_replicas: typeof w["num_replicas"] === "number" ? w["num_replicas"] : 1,
    consumer_limits: {
      inactive_threshold: typeof cl["inactive_threshold"] === "number" ? cl["inactive_threshold"] : 0,
      max_ack_pending: typeof cl["max_ack_pending"] === "number" ? cl["max_ack_pending"] : 0,
    },
  };
}

/** The consumers of a stream that this layer created. */
export function consumersOf(st: StreamHandle): Consumer[] {
  const out: Consumer[] = [];
  for (const h of st.consumers()) if (h instanceof Consumer) out.push(h);
  return out;
}

function findConsumer(st: StreamHandle, name: string): Consumer | undefined {
  for (const h of st.consumers()) if (h instanceof Consumer && h.name === name) return h;
  return undefined;
}

function syncIntervalMs(ctx: ConsumerApiContext): number {
  const s = ctx.opts.syncIntervalMs;
  return s === "always" ? 0 : s;
}

function envFor(ctx: ConsumerApiContext): ConsumerEnv {
  const cs = stateOf(ctx);
  return {
    bus: ctx.bus,
    clock: ctx.clock,
    sched: ctx.sched,
    log: ctx.log,
    ticker: cs.ticker,
    serverName: ctx.serverName,
    advisory: (subject, body) => ctx.advisory(subject, body),
    onSelfDelete: (c) => {
      removeConsumer(ctx, c);
    },
    newPinId: () => randomName(PIN_ID_LEN),
  };
}

function removeConsumer(ctx: ConsumerApiContext, c: Consumer): void {
  c.stream.removeConsumer(c.name);
  c.stop(true).catch((e: unknown) => ctx.log.warn(`deleting consumer '${c.stream.name} > ${c.name}': ${(e as Error).message}`));
  ctx.advisory(`${ADV}DELETED.${c.stream.name}.${c.name}`, {
    type: ACTION_TYPE,
    stream: c.stream.name,
    consumer: c.name,
    action: "delete",
  });
}

/** Consumers of file streams keep their state on disk unless mem_storage, ephemerals too:
 *  like nats-server, a restart brings an ephemeral back (its inactivity clock starts again),
 *  so a client that resubscribes its deliver subject after reconnecting (an ordered push
 *  consumer, a KV watcher) keeps receiving without waiting out missed heartbeats. */
function openStore(ctx: ConsumerApiContext, st: StreamHandle, cfg: ConsumerConfig): FileConsumerStore | null {
  if (cfg.mem_storage) return null;
  const dir = st.consumerDir(cfg.name);
  if (dir === null) return null;
  const store = new FileConsumerStore({ dir, fs: ctx.fs, clock: ctx.clock, syncIntervalMs: syncIntervalMs(ctx) });
  store.open();
  return store;
}

function writeConfig(store: ConsumerStore | null, c: Consumer): void {
  if (store === null) return;
  store.writeConfig(
    JSON.stringify({
      stream: c.stream.name,
      name: c.name,
      created_ns: c.createdNs,
      config: consumerConfigToWire(c.cfg, false),
      lps_end: c.lastPerSubjectEnd(),
    }),
  );
}

function ensureRecovered(ctx: ConsumerApiContext): void {
  const cs = stateOf(ctx);
  for (const n of ctx.streamNames()) {
    const st = ctx.getStream(n);
    if (st !== undefined && !cs.recovered.has(st)) recoverConsumers(ctx, st);
  }
}

/** Reload the consumers stored under a stream's obs/ directory. Idempotent per
 *  stream; the API also calls it lazily on first use for every stream. */
export function recoverConsumers(ctx: ConsumerApiContext, st: StreamHandle): number {
  const r = consumersToRecover(ctx, st);
  if (r === null) return 0;
  let n = 0;
  for (const name of r.names) if (recoverConsumer(ctx, st, r.obs, name)) n++;
  return n;
}

/** recoverConsumers at start: `breathe` between consumers (each may read its store and
 *  compute what it has pending). */
export async function recoverConsumersPaced(ctx: ConsumerApiContext, st: StreamHandle, breathe: () => Promise<void>): Promise<number> {
  const r = consumersToRecover(ctx, st);
  if (r === null) return 0;
  let n = 0;
  for (const name of r.names) {
    const found = readRecovered(ctx, st, r.obs, name);
    if (found !== null) {
      // A last_per_subject consumer stopped inside its first phase resumes it: over many
      // subjects that start is built over turns, as a create builds it.
      const plan = found.lpsEnd > 0 && found.cfg.deliver_policy === "last_per_subject" && st.store.state().numSubjects > LPS_STEPPED_SUBJECTS
        ? await buildLastPerSubject(st.store, filtersOf(found.cfg), breathe, found.lpsEnd)
        : null;
      if (plan !== null && ctx.getStream(st.name) !== st) {
        void found.store.close(); // the stream went while the start was built
        return n;
      }
      if (startRecovered(ctx, st, name, found, plan)) n++;
    }
    await breathe();
  }
  return n;
}

/** The stream's consumer directories (sorted), once per stream; null when none or done. */
function consumersToRecover(ctx: ConsumerApiContext, st: StreamHandle): { obs: string; names: string[] } | null {
  const cs = stateOf(ctx);
  if (cs.recovered.has(st)) return null;
  cs.recovered.add(st);
  const probe = st.consumerDir("_");
  if (probe === null) return null;
  const obs = dirname(probe);
  let names: string[];
  try {
    names = ctx.fs.readdir(obs);
  } catch {
    return null;
  }
  return { obs, names: names.filter((n) => !n.startsWith(".")).sort() };
}

/** One durable consumer from its directory; true when it was brought back. */
function recoverConsumer(ctx: ConsumerApiContext, st: StreamHandle, obs: string, name: string): boolean {
  const found = readRecovered(ctx, st, obs, name);
  return found !== null && startRecovered(ctx, st, name, found, null);
}

/** A consumer directory read back: its open store, checked config and what it had stored. */
interface RecoveredConsumer {
  store: FileConsumerStore;
  cfg: ConsumerConfig;
  createdNs: number;
  lpsEnd: number;
}

/** Reads a consumer's directory; null (logged) when there is nothing to bring back. */
function readRecovered(ctx: ConsumerApiContext, st: StreamHandle, obs: string, name: string): RecoveredConsumer | null {
  if (findConsumer(st, name) !== undefined) return null;
  let store: FileConsumerStore | null = null;
  try {
    store = new FileConsumerStore({ dir: join(obs, name), fs: ctx.fs, clock: ctx.clock, syncIntervalMs: syncIntervalMs(ctx) });
    store.open();
    const raw = store.readConfig();
    if (raw === null) {
      void store.close();
      return null;
    }
    const meta = JSON.parse(raw) as { created_ns?: number; config?: unknown; lps_end?: number };
    let cfg = decodeConsumerConfig(meta.config);
    try {
      cfg = checkConsumerConfig(cfg, streamView(st), false);
    } catch (e) {
      ctx.log.warn(`consumer '${st.name} > ${name}' config no longer valid, kept as stored: ${(e as Error).message}`);
    }
    const lpsEnd = typeof meta.lps_end === "number" && meta.lps_end > 0 ? meta.lps_end : 0;
    return { store, cfg, createdNs: meta.created_ns ?? ctx.clock.nowNs(), lpsEnd };
  } catch (e) {
    if (store !== null) void store.close();
    ctx.log.error(`JetStream could not recover consumer '${st.name} > ${name}': ${(e as Error).message}`);
    return null;
  }
}

/** Starts a consumer read back by readRecovered (plan: its last_per_subject start, built
 *  beforehand, or null). false when it cannot be (logged), or one of its name came meanwhile. */
function startRecovered(ctx: ConsumerApiContext, st: StreamHandle, name: string, r: RecoveredConsumer, plan: LastPerSubjectPlan | null): boolean {
  try {
    if (findConsumer(st, name) !== undefined) {
      void r.store.close();
      return false;
    }
    const c = new Consumer(envFor(ctx), st, r.cfg, r.createdNs, r.store, r.store.load());
    if (r.lpsEnd > 0) c.resumeLastPerSubject(r.lpsEnd, plan);
    st.addConsumer(c);
    c.start();
    serveNext(ctx, c);
    return true;
  } catch (e) {
    ctx.log.error(`JetStream could not recover consumer '${st.name} > ${name}': ${(e as Error).message}`);
    return false;
  }
}

/** Subscribe a started consumer's $JS.API.CONSUMER.MSG.NEXT.<stream>.<name> (and the domain
 *  form): like nats-server's per-consumer request subscription, a pull for a consumer that
 *  does not exist finds no subscriber. nats-server 2.11+ then answers a client that asked for
 *  no_responders with a 503 (its $JS.API.> service import declines MSG.NEXT and no longer
 *  counts as a delivery); 2.9/2.10 stayed silent. */
function serveNext(ctx: ConsumerApiContext, c: Consumer): void {
  const tail = `CONSUMER.MSG.NEXT.${c.stream.name}.${c.name}`;
  const handler = (_s: string, reply: string, hdr: Buffer | null, payload: Buffer): void => nextRequest(ctx, c, reply, hdr, payload);
  c.attach(ctx.bus.subscribe(`$JS.API.${tail}`, handler));
  const domain = ctx.opts.domain;
  if (domain !== "") c.attach(ctx.bus.subscribe(`$JS.${domain}.API.${tail}`, handler));
}

function nextRequest(ctx: ConsumerApiContext, c: Consumer, reply: string, hdr: Buffer | null, payload: Buffer): void {
  if (reply === "") return;
  if (apiLevelTooHigh(hdr)) {
    ctx.bus.publish(reply, "", statusHeaders(412, "Required Api Level"), EMPTY);
    return;
  }
  c.pull(reply, payload);
}

function respondErr(ctx: ConsumerApiContext, reply: string, type: string, e: unknown): void {
  if (e instanceof JsApiError) {
    ctx.respondError(reply, type, e.apiError);
    return;
  }
  const ae = (e as { apiError?: ApiError }).apiError;
  if (ae !== undefined) {
    ctx.respondError(reply, type, ae);
    return;
  }
  throw e;
}

function apiLevelTooHigh(hdr: Buffer | null): boolean {
  if (hdr === null) return false;
  const v = getHeader(hdr, "Nats-Required-Api-Level");
  if (v === undefined) return false;
  const n = Number.parseInt(v, 10);
  return !(Number.isFinite(n) && n <= JS_API_LEVEL);
}

export const handleConsumerApi: HandleConsumerApi = (ctx, op, tokens, reply, hdr, payload): void | Promise<void> => {
  ensureRecovered(ctx);
  if (op === "MSG") {
    // The router does not subscribe MSG.NEXT (consumers do, serveNext); a request handed
    // over anyway goes to its consumer, and one for a missing consumer is not answered.
    if (tokens[0] !== "NEXT") return;
    const st = ctx.getStream(tokens[1] ?? "");
    const c = st === undefined ? undefined : findConsumer(st, tokens[2] ?? "");
    if (c !== undefined) nextRequest(ctx, c, reply, hdr, payload);
    return;
  }
  const type = typeFor(op);
  if (apiLevelTooHigh(hdr)) {
    ctx.respondError(reply, type, jsErr("JSRequiredApiLevelErr"));
    return;
  }
  try {
    switch (op) {
      case "CREATE":
        return create(ctx, tokens[0] ?? "", tokens[1] ?? "", tokens.slice(2).join("."), false, tokens.length >= 2, reply, payload);
      case "DURABLE":
        if (tokens[0] !== "CREATE") fail("JSBadRequestErr");
        // nats-server's handler is on DURABLE.CREATE.*.*: nothing else gets an answer.
        if (tokens.length !== 3) return;
        return create(ctx, tokens[1] ?? "", tokens[2] ?? "", "", true, true, reply, payload);
      case "INFO":
        return info(ctx, tokens[0] ?? "", tokens[1] ?? "", reply);
      case "NAMES":
      case "LIST":
        return list(ctx, op, tokens[0] ?? "", reply, payload);
      case "DELETE":
        return del(ctx, tokens[0] ?? "", tokens[1] ?? "", reply);
      case "PAUSE":
        return pause(ctx, tokens[0] ?? "", tokens[1] ?? "", reply, payload);
      case "UNPIN":
        return unpin(ctx, tokens[0] ?? "", tokens[1] ?? "", reply, payload);
      default:
        fail("JSBadRequestErr");
    }
  } catch (e) {
    respondErr(ctx, reply, type, e);
  }
};

function typeFor(op: string): string {
  switch (op) {
    case "CREATE":
    case "DURABLE":
      return ApiType.ConsumerCreate;
    case "NAMES":
      return ApiType.ConsumerNames;
    case "LIST":
      return ApiType.ConsumerList;
    case "DELETE":
      return ApiType.ConsumerDelete;
    case "PAUSE":
      return PAUSE_TYPE;
    case "UNPIN":
      return UNPIN_TYPE;
    case "INFO":
      return ApiType.ConsumerInfo;
    default:
      return ApiType.ApiError;
  }
}

function lookup(ctx: ConsumerApiContext, stream: string): StreamHandle {
  const st = ctx.getStream(stream);
  if (st === undefined) fail("JSStreamNotFoundErr");
  return st;
}

/** A last_per_subject consumer of a stream with more subjects than this builds its start over
 *  several turns before it is created (lps-build.ts); below, in the one call. */
const LPS_STEPPED_SUBJECTS = 4096;

function create(
  ctx: ConsumerApiContext,
  streamName: string,
  subjName: string,
  subjFilter: string,
  durableForm: boolean,
  named: boolean,
  reply: string,
  payload: Buffer,
  plan: LastPerSubjectPlan | null = null,
  planned = false,
): void | Promise<void> {
  // Go decodes an empty request as an error and `null` as a zero request.
  if (payload.toString("utf8").trim() === "") fail("JSInvalidJSONErr", { err: "unexpected end of JSON input" });
  const body = parseBody(payload) ?? {};
  const reqStream = body["stream_name"];
  if (reqStream !== undefined && reqStream !== null && typeof reqStream !== "string") fail("JSInvalidJSONErr", { err: "stream_name" });
  if ((reqStream ?? "") !== streamName) fail("JSStreamMismatchErr");
  const actionRaw = body["action"] ?? "";
  if (typeof actionRaw !== "string" || !["", "create", "update"].includes(actionRaw)) {
    fail("JSInvalidJSONErr", { err: `can not unmarshal ${JSON.stringify(JSON.stringify(actionRaw))}` });
  }
  const action = actionRaw;
  const pedantic = body["pedantic"] === true;
  // A request without "config" is a zero config, as Go decodes it into a struct value.
  const cfg = decodeConsumerConfig(body["config"] ?? {});
  if (subjName !== "" && /[/\\]/.test(subjName)) fail("JSConsumerNameContainsPathSeparatorsErr");
  // The name in the subject wins over config.name (nats-server overwrites it).
  if (durableForm) {
    if (cfg.durable_name === "") fail("JSConsumerDurableNameNotSetErr");
    if (cfg.durable_name !== subjName) fail("JSConsumerDurableNameNotMatchSubjectErr");
    cfg.name = subjName;
  } else if (named) {
    if (cfg.durable_name !== "" && cfg.durable_name !== subjName) fail("JSConsumerDurableNameNotMatchSubjectErr");
    cfg.name = subjName;
    if (subjFilter !== "") {
      if (cfg.filter_subjects.length > 0) fail("JSConsumerMultipleFiltersNotAllowed");
      if (cfg.filter_subject !== subjFilter) fail("JSConsumerCreateFilterSubjectMismatchErr");
    }
  } else {
    if (cfg.durable_name !== "") fail("JSConsumerEphemeralWithDurableNameErr");
  }
  // A single server refuses replicas > 1 (as its streams do). Clustered, a consumer of a
  // replicated stream may ask for up to the stream's replicas (it runs on the stream leader
  // only until consumers are replicated, issue 18).
  if (cfg.num_replicas > 1) {
    const sr = Number(ctx.getStream(streamName)?.wireConfig()["num_replicas"] ?? 1);
    if (sr <= 1) fail("JSStreamReplicasNotSupportedErr");
    if (cfg.num_replicas > sr) fail("JSConsumerReplicasExceedsStream");
  }
  const st = lookup(ctx, streamName);
  recoverConsumers(ctx, st);
  const view = streamView(st);
  if (cfg.name === "" && cfg.durable_name === "") cfg.name = randomName(8);
  const checked = checkConsumerConfig(cfg, view, pedantic);
  setStaticMetadata(checked);
  const others = consumersOf(st).map((o) => ({ name: o.name, filters: filtersOf(o.cfg) }));
  const existing = findConsumer(st, checked.name);
  if (existing !== undefined) {
    if (action === "create" && !sameConsumerConfig(existing.cfg, checked)) fail("JSConsumerAlreadyExists");
    if (view.retention === "workqueue") checkWorkQueue(checked, others);
    const why = updateError(existing.cfg, checked);
    if (why !== "") fail("JSConsumerCreateErrF", { err: why });
    checked.pause_until_ns = existing.cfg.pause_until_ns;
    if (!sameConsumerConfig(existing.cfg, checked)) {
      existing.updateConfig(checked);
      writeConfig(existing.storeOf(), existing);
    }
    ctx.respond(reply, existing.info(ApiType.ConsumerCreate));
    return;
  }
  if (action === "update") fail("JSConsumerDoesNotExist");
  if (view.retention === "workqueue") checkWorkQueue(checked, others);
  if (!ctx.canAddConsumer()) fail("JSMaximumConsumersLimitErr");
  if (!planned && checked.deliver_policy === "last_per_subject" && ctx.breathe !== undefined && st.store.state().numSubjects > LPS_STEPPED_SUBJECTS) {
    // The request is checked again once the start is built (the stream or a consumer of that
    // name may have come or gone meanwhile); its buffer is only ours during this call.
    const copy = Buffer.from(payload);
    return createAfterPlan(ctx, st, filtersOf(checked), reply, ctx.breathe.bind(ctx), (p) => create(ctx, streamName, subjName, subjFilter, durableForm, named, reply, copy, p, true));
  }
  let store: FileConsumerStore | null;
  try {
    store = openStore(ctx, st, checked);
  } catch (e) {
    fail("JSConsumerStoreFailedErrF", { err: (e as Error).message });
  }
  const c = new Consumer(envFor(ctx), st, checked, ctx.clock.nowNs(), store, null, plan);
  try {
    st.addConsumer(c);
  } catch (e) {
    if (store !== null) void store.delete();
    throw e;
  }
  writeConfig(store, c);
  c.start();
  serveNext(ctx, c);
  ctx.advisory(`${ADV}CREATED.${st.name}.${c.name}`, { type: ACTION_TYPE, stream: st.name, consumer: c.name, action: "create" });
  ctx.respond(reply, c.info(ApiType.ConsumerCreate));
}

/** Builds a last_per_subject start over several turns, then creates the consumer with it
 *  (again: the request's checks run once more). A stream replaced meanwhile gets no plan:
 *  its consumer computes its start in the one call. */
async function createAfterPlan(
  ctx: ConsumerApiContext,
  st: StreamHandle,
  filters: string[],
  reply: string,
  breathe: () => Promise<void>,
  again: (plan: LastPerSubjectPlan | null) => void | Promise<void>,
): Promise<void> {
  try {
    const plan = await buildLastPerSubject(st.store, filters, breathe);
    if (ctx.stillWanted?.() === false) return;
    await again(ctx.getStream(st.name) === st ? plan : null);
  } catch (e) {
    respondErr(ctx, reply, ApiType.ConsumerCreate, e);
  }
}

function getConsumer(ctx: ConsumerApiContext, stream: string, name: string): Consumer {
  const st = lookup(ctx, stream);
  const c = findConsumer(st, name);
  if (c === undefined) fail("JSConsumerNotFoundErr");
  return c;
}

function info(ctx: ConsumerApiContext, stream: string, name: string, reply: string): void {
  ctx.respond(reply, getConsumer(ctx, stream, name).info(ApiType.ConsumerInfo));
}

function del(ctx: ConsumerApiContext, stream: string, name: string, reply: string): void {
  const c = getConsumer(ctx, stream, name);
  removeConsumer(ctx, c);
  ctx.respond(reply, { type: ApiType.ConsumerDelete, success: true });
}

function list(ctx: ConsumerApiContext, op: string, stream: string, reply: string, payload: Buffer): void {
  const body = parseBody(payload);
  let offset = 0;
  const o = body?.["offset"];
  if (typeof o === "number" && Number.isInteger(o) && o > 0) offset = o;
  const st = lookup(ctx, stream);
  const all = consumersOf(st).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const limit = op === "NAMES" ? NAMES_LIMIT : LIST_LIMIT;
  const page = all.slice(offset, offset + limit);
  if (op === "NAMES") {
    ctx.respond(reply, { type: ApiType.ConsumerNames, total: all.length, offset, limit, consumers: page.map((c) => c.name) });
  } else {
    ctx.respond(reply, { type: ApiType.ConsumerList, total: all.length, offset, limit, consumers: page.map((c) => c.info(ApiType.ConsumerInfo)) });
  }
}

function pause(ctx: ConsumerApiContext, stream: string, name: string, reply: string, payload: Buffer): void {
  const body = parseBody(payload);
  const c = getConsumer(ctx, stream, name);
  let untilNs = 0;
  const v = body?.["pause_until"];
  if (typeof v === "string" && !v.startsWith("0001-01-01")) {
    untilNs = parseRfc3339Ns(v);
    if (Number.isNaN(untilNs)) fail("JSInvalidJSONErr", { err: `parsing time ${JSON.stringify(v)}` });
  } else if (v !== undefined && v !== null && typeof v !== "string") {
    fail("JSInvalidJSONErr", { err: "json: cannot unmarshal into Go struct field .pause_until of type time.Time" });
  }
  const nowNs = ctx.clock.nowNs();
  if (untilNs > 0 && untilNs <= nowNs) untilNs = 0;
  c.setPause(untilNs);
  writeConfig(c.storeOf(), c);
  const paused = c.isPaused();
  const adv: Record<string, unknown> = { type: PAUSE_ADV_TYPE, stream: c.stream.name, consumer: c.name, paused };
  if (paused) adv["pause_until"] = rfc3339Ns(untilNs);
  ctx.advisory(`${ADV}PAUSE.${c.stream.name}.${c.name}`, adv);
  const out: Record<string, unknown> = { type: PAUSE_TYPE, paused, pause_until: rfc3339Ns(untilNs) };
  if (paused) out["pause_remaining"] = untilNs - nowNs;
  ctx.respond(reply, out);
}

/** CONSUMER.UNPIN {"group"} (nats-server jsConsumerUnpinRequest): the request is checked
 *  before the stream and consumer are looked up; the UNPINNED advisory goes out even when
 *  nothing was pinned. */
function unpin(ctx: ConsumerApiContext, stream: string, name: string, reply: string, payload: Buffer): void {
  if (payload.toString("utf8").trim().length === 0) fail("JSInvalidJSONErr", { err: "unexpected end of JSON input" });
  const body = parseBody(payload);
  const g = body?.["group"] ?? "";
  if (typeof g !== "string") {
    fail("JSInvalidJSONErr", { err: "json: cannot unmarshal into Go struct field JSApiConsumerUnpinRequest.group of type string" });
  }
  if (g === "") fail("JSInvalidJSONErr", { err: "consumer group not specified" });
  if (!VALID_GROUP_NAME.test(g)) fail("JSConsumerInvalidGroupNameErr");
  const c = getConsumer(ctx, stream, name);
  if (!c.cfg.priority_groups.includes(g)) fail("JSConsumerInvalidPriorityGroupErr");
  c.unpin(g);
  ctx.respond(reply, { type: UNPIN_TYPE });
}

// ---------- clustered JetStream (cluster-api.ts): consumers on a replicated stream's leader ----------

/** The durable consumers of a stream as config values (wire JSON), for the meta state. */
export function durableConfigs(st: StreamHandle): Array<{ name: string; config: Record<string, unknown>; created: number }> {
  const out: Array<{ name: string; config: Record<string, unknown>; created: number }> = [];
  for (const c of consumersOf(st)) {
    if (c.cfg.durable_name === "") continue;
    out.push({ name: c.name, config: consumerConfigToWire(c.cfg, false), created: c.createdNs });
  }
  return out;
}

/** A replicated stream's new leader: make every consumer its replicas know (durables and
 *  ephemerals) from the config, creation time and state they agreed on; returns how many.
 *  A last_per_subject consumer inside its first phase resumes it; over many subjects that
 *  start is built over turns first (with ctx.breathe), and then nothing is made unless
 *  still() holds (this replica still leads). */
export async function restoreReplicatedConsumers(ctx: ConsumerApiContext, st: StreamHandle, still: () => boolean): Promise<number> {
  const repl = st.consumerRepl ?? null;
  if (repl === null) return 0;
  const list = repl.consumers();
  const plans = new Map<string, LastPerSubjectPlan>();
  const breathe = ctx.breathe;
  if (breathe !== undefined && st.store.state().numSubjects > LPS_STEPPED_SUBJECTS) {
    for (const r of list) {
      if (r.lpsEnd <= r.state.delivered.streamSeq || findConsumer(st, r.name) !== undefined) continue;
      let filters: string[];
      try {
        filters = filtersOf(decodeConsumerConfig(JSON.parse(r.config)));
      } catch {
        continue; // restoreConsumers logs it
      }
      const plan = await buildLastPerSubject(st.store, filters, breathe.bind(ctx), r.lpsEnd);
      if (plan !== null) plans.set(r.name, plan);
    }
    if (plans.size > 0 && !still()) return 0;
  }
  return restoreConsumers(ctx, st, list, plans);
}

/** Make these consumers on the stream (the ones it has by name are left alone), each from
 *  its config, creation time and state (and a last_per_subject consumer's first phase as of
 *  lpsEnd, from `plans` when built beforehand); its store (file) is written that state. Lazy
 *  recovery from obs/ is off for the stream from now on. Returns how many were made. */
export function restoreConsumers(ctx: ConsumerApiContext, st: StreamHandle, list: readonly ReplicatedConsumer[], plans?: ReadonlyMap<string, LastPerSubjectPlan>): number {
  stateOf(ctx).recovered.add(st);
  let n = 0;
  for (const r of list) {
    if (findConsumer(st, r.name) !== undefined) continue;
    try {
      let cfg = decodeConsumerConfig(JSON.parse(r.config));
      try {
        cfg = checkConsumerConfig(cfg, streamView(st), false);
      } catch (e) {
        ctx.log.warn(`consumer '${st.name} > ${r.name}' config no longer valid, kept as replicated: ${(e as Error).message}`);
      }
      const store = openStore(ctx, st, cfg);
      const c = new Consumer(envFor(ctx), st, cfg, r.createdNs, store, r.state);
      if (r.lpsEnd > 0) c.resumeLastPerSubject(r.lpsEnd, plans?.get(r.name) ?? null);
      st.addConsumer(c);
      writeConfig(store, c);
      c.persist();
      c.start();
      serveNext(ctx, c);
      n++;
    } catch (e) {
      ctx.log.error(`JetStream could not start consumer '${st.name} > ${r.name}': ${(e as Error).message}`);
    }
  }
  return n;
}

/** Every consumer of a plain stream (its durables recovered from obs/ first) with its config,
 *  creation time, ledger knobs and state: what a stream that becomes replicated hands over. */
export function consumerSeeds(ctx: ConsumerApiContext, st: StreamHandle): ConsumerSeed[] {
  recoverConsumers(ctx, st);
  return consumersOf(st).map((c) => ({
    name: c.name,
    config: JSON.stringify(consumerConfigToWire(c.cfg, false)),
    createdNs: c.createdNs,
    ackPolicy: c.cfg.ack_policy,
    maxDeliver: c.cfg.max_deliver,
    maxAckPending: c.cfg.max_ack_pending,
    state: c.ledger.state,
    lpsEnd: c.lastPerSubjectEnd(),
  }));
}

/** Make a durable consumer from its recorded config when the stream has none by that name
 *  (a new stream leader brings back the durables the meta state lists). Without `wanted` it
 *  is made in this call (the caller goes on with it); with it, a last_per_subject start over
 *  many subjects may be built over several turns first, and the consumer is made only if
 *  wanted() still holds then. */
export function ensureDurable(ctx: ConsumerApiContext, st: StreamHandle, name: string, config: Record<string, unknown>, wanted?: () => boolean): void {
  if (findConsumer(st, name) !== undefined) return;
  const body = Buffer.from(JSON.stringify({ stream_name: st.name, config: { ...config, durable_name: name } }));
  const apiCtx = wanted === undefined
    ? (Object.create(ctx, { breathe: { value: undefined } }) as ConsumerApiContext)
    : (Object.create(ctx, { stillWanted: { value: wanted } }) as ConsumerApiContext);
  void handleConsumerApi(apiCtx, "DURABLE", ["CREATE", st.name, name], "", null, body);
}

/** Delete a consumer by name, if there is one (a remove op applied on the stream leader). */
export function dropConsumer(ctx: ConsumerApiContext, st: StreamHandle, name: string): void {
  const c = findConsumer(st, name);
  if (c !== undefined) removeConsumer(ctx, c);
}

/** Keep the lazy recovery away from a stream's obs/ directory (a replicated stream: its
 *  consumers run on the leader, made from the replicas' copies by restoreReplicatedConsumers). */
export function holdConsumers(ctx: ConsumerApiContext, st: StreamHandle): void {
  stateOf(ctx).recovered.add(st);
}
