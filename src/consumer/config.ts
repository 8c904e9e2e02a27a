// Consumer configuration: decoding the request JSON (lenient about unknown fields, strict
// about the types of known ones, like Go's encoding/json), defaults (nats-server
// setConsumerConfigDefaults), validation in checkConsumerCfg's order, the update rules
// (checkNewConsumerConfig) and the wire encoding with nats-server's omitempty choices.
//
// Beyond nats-server: `x_dead_letter_subject` names a subject to which a message that
// reached max_deliver or was terminated is republished (see deadletter.ts). The "x_" prefix
// cannot clash with a nats-server field; clients keep unknown fields as opaque JSON.

import { isValidSubject, isLiteral, subjectMatches } from "../subjects/subject.js";
import { jsErr, JsApiError, type JsErrName } from "../contracts/errors.js";
import { goDuration } from "../contracts/duration.js";
import { parseRfc3339Ns, rfc3339Ns } from "../stream/time.js";
import { JS_API_LEVEL, SERVER_VERSION } from "../version.js";
import { goInt, goJsonType, RawNumber, type GoIntKind } from "../contracts/json.js";
import { findCrossOverlap, findOverlap, OverlapBudgetExceeded } from "../subjects/overlap.js";
import { DEFAULT_PRIORITY_TIMEOUT_NS, PriorityPolicies, VALID_GROUP_NAME } from "./priority.js";

export const NS_PER_MS = 1_000_000;
export const DEFAULT_ACK_WAIT_NS = 30_000 * NS_PER_MS;
export const DEFAULT_MAX_ACK_PENDING = 1000;
export const DEFAULT_MAX_WAITING = 512;
export const DEFAULT_INACTIVE_THRESHOLD_NS = 5_000 * NS_PER_MS;
export const MIN_HEARTBEAT_NS = 100 * NS_PER_MS;
export const MAX_NAME_LEN = 255;
export const MAX_DESCRIPTION_LEN = 4 * 1024;
export const MAX_METADATA_LEN = 128 * 1024;
export const DEAD_LETTER_FIELD = "x_dead_letter_subject";

export const DeliverPolicies = ["all", "last", "new", "by_start_sequence", "by_start_time", "last_per_subject"] as const;
export type DeliverPolicy = (typeof DeliverPolicies)[number];
export const AckPolicies = ["none", "all", "explicit"] as const;
export type AckPolicy = (typeof AckPolicies)[number];
export const ReplayPolicies = ["instant", "original"] as const;
export type ReplayPolicy = (typeof ReplayPolicies)[number];

/** A consumer configuration (Go zero values where unset; times as ns, 0 = unset). */
export interface ConsumerConfig {
  durable_name: string;
  name: string;
  description: string;
  deliver_policy: DeliverPolicy;
  opt_start_seq: number;
  opt_start_time_ns: number;
  ack_policy: AckPolicy;
  ack_wait: number; // ns
  max_deliver: number;
  backoff: number[]; // ns
  filter_subject: string;
  filter_subjects: string[];
  replay_policy: ReplayPolicy;
  rate_limit_bps: number;
  sample_freq: string;
  max_waiting: number;
  max_ack_pending: number;
  idle_heartbeat: number; // ns
  flow_control: boolean;
  headers_only: boolean;
  max_batch: number;
  max_expires: number; // ns
  max_bytes: number;
  deliver_subject: string;
  deliver_group: string;
  inactive_threshold: number; // ns
  num_replicas: number;
  mem_storage: boolean;
  direct: boolean;
  metadata: Record<string, string> | null;
  pause_until_ns: number;
  priority_groups: string[];
  priority_policy: string;
  priority_timeout: number;
  dead_letter_subject: string;
}

/** What validation needs to know about the stream. */
export interface StreamView {
  name: string;
  subjects: string[];
  retention: "limits" | "interest" | "workqueue";
  num_replicas: number;
  consumer_limits: { inactive_threshold: number; max_ack_pending: number };
}

type Obj = Record<string, unknown>;

function fail(name: JsErrName, args?: Record<string, string | number>): never {
  throw new JsApiError(jsErr(name, args));
}

function invalidJson(msg: string): never {
  fail("JSInvalidJSONErr", { err: msg });
}

function policyErr(msg: string): never {
  fail("JSConsumerInvalidPolicyErrF", { err: msg });
}

const goType = goJsonType;

function str(o: Obj, k: string): string {
  const v = o[k];
  if (v === undefined || v === null) return "";
  if (typeof v !== "string") invalidJson(`json: cannot unmarshal ${goType(v)} into Go struct field ConsumerConfig.${k} of type string`);
  return v;
}

function bool(o: Obj, k: string): boolean {
  const v = o[k];
  if (v === undefined || v === null) return false;
  if (typeof v !== "boolean") invalidJson(`json: cannot unmarshal ${goType(v)} into Go struct field ConsumerConfig.${k} of type bool`);
  return v;
}

/** An integer field of Go type `kind`: encoding/json's range and sign rules and its text. */
function int(o: Obj, k: string, kind: GoIntKind): number {
  return goInt(o[k], kind, `ConsumerConfig.${k}`, invalidJson);
}

function strList(o: Obj, k: string): string[] {
  const v = o[k];
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v) || v.some((x) => typeof x !== "string")) {
    invalidJson(`json: cannot unmarshal ${goType(v)} into Go struct field ConsumerConfig.${k} of type []string`);
  }
  return [...(v as string[])];
}

function intList(o: Obj, k: string): number[] {
  const v = o[k];
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v)) invalidJson(`json: cannot unmarshal ${goType(v)} into Go struct field ConsumerConfig.${k} of type []time.Duration`);
  return v.map((x: unknown) => {
    if (x === null || typeof x === "number" || x instanceof RawNumber) return goInt(x, "time.Duration", `ConsumerConfig.${k}`, invalidJson);
    return invalidJson(`json: cannot unmarshal ${goType(x)} into Go struct field ConsumerConfig.${k} of type time.Duration`);
  });
}

function enumVal<T extends string>(o: Obj, k: string, allowed: readonly T[], def: T, aliases: Record<string, T> = {}): T {
  const v = o[k];
  if (v === undefined || v === null || v === "") return def;
  if (typeof v === "string") {
    const l = v.toLowerCase();
    if ((allowed as readonly string[]).includes(l)) return l as T;
    const a = aliases[l];
    if (a !== undefined) return a;
  }
  invalidJson(`can not unmarshal ${JSON.stringify(JSON.stringify(v))}`);
}

function timeNs(o: Obj, k: string): number {
  const v = o[k];
  if (v === undefined || v === null) return 0;
  if (typeof v !== "string") invalidJson(`json: cannot unmarshal ${goType(v)} into Go struct field ConsumerConfig.${k} of type time.Time`);
  if (v.startsWith("0001-01-01")) return 0;
  const ns = parseRfc3339Ns(v);
  if (Number.isNaN(ns)) invalidJson(`parsing time ${JSON.stringify(v)} as "2006-01-02T15:04:05Z07:00": cannot parse`);
  return ns;
}

function metadataOf(o: Obj): Record<string, string> | null {
  const v = o["metadata"];
  if (v === undefined || v === null) return null;
  if (typeof v !== "object" || Array.isArray(v)) invalidJson(`json: cannot unmarshal ${goType(v)} into Go struct field ConsumerConfig.metadata of type map[string]string`);
  const out: Record<string, string> = {};
  for (const [mk, mv] of Object.entries(v as Obj)) {
    if (typeof mv !== "string") invalidJson(`json: cannot unmarshal ${goType(mv)} into Go struct field ConsumerConfig.metadata of type string`);
    out[mk] = mv;
  }
  return out;
}

export function zeroConsumerConfig(): ConsumerConfig {
  return {
    durable_name: "",
    name: "",
    description: "",
    deliver_policy: "all",
    opt_start_seq: 0,
    opt_start_time_ns: 0,
    ack_policy: "none",
    ack_wait: 0,
    max_deliver: 0,
    backoff: [],
    filter_subject: "",
    filter_subjects: [],
    replay_policy: "instant",
    rate_limit_bps: 0,
    sample_freq: "",
    max_waiting: 0,
    max_ack_pending: 0,
    idle_heartbeat: 0,
    flow_control: false,
    headers_only: false,
    max_batch: 0,
    max_expires: 0,
    max_bytes: 0,
    deliver_subject: "",
    deliver_group: "",
    inactive_threshold: 0,
    num_replicas: 0,
    mem_storage: false,
    direct: false,
    metadata: null,
    pause_until_ns: 0,
    priority_groups: [],
    priority_policy: "",
    priority_timeout: 0,
    dead_letter_subject: "",
  };
}

/** Decode the `config` object of a create request (or a stored config). */
export function decodeConsumerConfig(v: unknown): ConsumerConfig {
  if (typeof v !== "object" || v === null || Array.isArray(v)) {
    if (v === undefined || v === null) fail("JSConsumerConfigRequiredErr");
    invalidJson(`json: cannot unmarshal ${goType(v)} into Go struct field CreateConsumerRequest.config of type server.ConsumerConfig`);
  }
  const o = v as Obj;
  const c = zeroConsumerConfig();
  c.durable_name = str(o, "durable_name");
  c.name = str(o, "name");
  c.description = str(o, "description");
  c.deliver_policy = enumVal(o, "deliver_policy", DeliverPolicies, "all", { undefined: "all" });
  c.opt_start_seq = int(o, "opt_start_seq", "uint64");
  c.opt_start_time_ns = timeNs(o, "opt_start_time");
  c.ack_policy = enumVal(o, "ack_policy", AckPolicies, "none");
  c.ack_wait = int(o, "ack_wait", "time.Duration");
  c.max_deliver = int(o, "max_deliver", "int");
  c.backoff = intList(o, "backoff");
  c.filter_subject = str(o, "filter_subject");
  c.filter_subjects = strList(o, "filter_subjects");
  c.replay_policy = enumVal(o, "replay_policy", ReplayPolicies, "instant");
  c.rate_limit_bps = int(o, "rate_limit_bps", "uint64");
  c.sample_freq = str(o, "sample_freq");
  c.max_waiting = int(o, "max_waiting", "int");
  c.max_ack_pending = int(o, "max_ack_pending", "int");
  c.idle_heartbeat = int(o, "idle_heartbeat", "time.Duration");
  c.flow_control = bool(o, "flow_control");
  c.headers_only = bool(o, "headers_only");
  c.max_batch = int(o, "max_batch", "int");
  c.max_expires = int(o, "max_expires", "time.Duration");
  c.max_bytes = int(o, "max_bytes", "int");
  c.deliver_subject = str(o, "deliver_subject");
  c.deliver_group = str(o, "deliver_group");
  c.inactive_threshold = int(o, "inactive_threshold", "time.Duration");
  c.num_replicas = int(o, "num_replicas", "int");
  c.mem_storage = bool(o, "mem_storage");
  c.direct = bool(o, "direct");
  c.metadata = metadataOf(o);
  c.pause_until_ns = timeNs(o, "pause_until");
  c.priority_groups = strList(o, "priority_groups");
  c.priority_policy = priorityPolicyOf(o);
  c.priority_timeout = int(o, "priority_timeout", "time.Duration");
  c.dead_letter_subject = str(o, DEAD_LETTER_FIELD);
  return c;
}

/** priority_policy as nats-server's PriorityPolicy.UnmarshalJSON reads it: exact names, the
 *  raw JSON in the error. "" is taken as none (nats-server refuses it; it never sends it). */
function priorityPolicyOf(o: Obj): string {
  const v = o["priority_policy"];
  if (v === undefined || v === null || v === "" || v === "none") return "";
  if (typeof v === "string" && (PriorityPolicies as readonly string[]).includes(v)) return v;
  invalidJson(`unknown priority policy: ${JSON.stringify(v)}`);
}

/** The filters as a list; `>` alone means "no filter" (nats.js ordered consumers send it). */
export function filtersOf(c: ConsumerConfig): string[] {
  const f = c.filter_subject !== "" ? [c.filter_subject] : c.filter_subjects;
  if (f.length === 1 && f[0] === ">") return [];
  return f;
}

export function isPush(c: ConsumerConfig): boolean {
  return c.deliver_subject !== "";
}

export function isDurable(c: ConsumerConfig): boolean {
  return c.durable_name !== "";
}

/** nats-server isValidName plus the path separator rule. */
function checkName(n: string): void {
  if (n === "") return;
  if (/[/\\]/.test(n)) fail("JSConsumerNameContainsPathSeparatorsErr");
  if (/[\s.*>]/.test(n)) fail("JSConsumerBadDurableNameErr");
  if (n.length > MAX_NAME_LEN) fail("JSConsumerNameTooLongErrF", { max: MAX_NAME_LEN });
}

function forms_cycle(stream: StreamView, deliver: string): boolean {
  for (const s of stream.subjects) if (subjectMatches(s, deliver)) return true;
  return false;
}

/** Defaults (setConsumerConfigDefaults) then validation (checkConsumerCfg). Returns a copy. */
export function checkConsumerConfig(input: ConsumerConfig, stream: StreamView, pedantic: boolean): ConsumerConfig {
  const c: ConsumerConfig = { ...input, backoff: [...input.backoff], filter_subjects: [...input.filter_subjects] };
  // Defaults.
  // nats-server (setConsumerConfigDefaults): 0 and anything below -1 mean unlimited (-1);
  // pedantic mode refuses the negative ones.
  if (c.max_deliver < -1 && pedantic) fail("JSPedanticErrF", { err: "max_deliver must be set to -1" });
  if (c.max_deliver <= 0) c.max_deliver = -1;
  if (c.ack_wait === 0 && c.ack_policy !== "none") c.ack_wait = DEFAULT_ACK_WAIT_NS;
  if (c.backoff.length > 0) {
    if (pedantic && c.ack_wait !== c.backoff[0]) {
      fail("JSPedanticErrF", { err: "first backoff value has to equal batch AckWait" });
    }
    c.ack_wait = c.backoff[0]!;
  }
  // The stream's consumer_limits fill both fields for every consumer (any ack policy,
  // durable or not), as in nats-server; pedantic mode wants them set explicitly.
  const lims = stream.consumer_limits;
  if (c.max_ack_pending === 0) {
    if (pedantic && lims.max_ack_pending > 0) {
      fail("JSPedanticErrF", { err: "max_ack_pending must be set if it's configured in stream limits" });
    }
    c.max_ack_pending = lims.max_ack_pending;
  }
  if (c.inactive_threshold === 0) {
    if (pedantic && lims.inactive_threshold > 0) {
      fail("JSPedanticErrF", { err: "inactive_threshold must be set if it's configured in stream limits" });
    }
    c.inactive_threshold = lims.inactive_threshold;
  }
  if (c.max_ack_pending === 0 && c.ack_policy !== "none") c.max_ack_pending = DEFAULT_MAX_ACK_PENDING;
  if (c.deliver_subject === "" && c.max_waiting === 0) c.max_waiting = DEFAULT_MAX_WAITING;
  if (c.durable_name === "" && c.inactive_threshold === 0) c.inactive_threshold = DEFAULT_INACTIVE_THRESHOLD_NS;
  if (c.durable_name !== "" && c.name === "") c.name = c.durable_name;
  if (c.priority_timeout < 0) {
    if (pedantic) fail("JSPedanticErrF", { err: "priority_timeout must not be negative" });
    c.priority_timeout = 0;
  }
  if (c.priority_policy === "pinned_client" && c.priority_timeout === 0) c.priority_timeout = DEFAULT_PRIORITY_TIMEOUT_NS;

  // Validation, in checkConsumerCfg's order.
  if (c.durable_name !== "" && c.name !== "" && c.durable_name !== c.name) fail("JSConsumerCreateDurableAndNameMismatch");
  checkName(c.durable_name);
  checkName(c.name);
  if (c.num_replicas < 0) fail("JSReplicasCountCannotBeNegative");
  if (c.num_replicas > 0 && c.num_replicas > Math.max(1, stream.num_replicas)) fail("JSConsumerReplicasExceedsStream");
  for (const b of c.backoff) if (b < 0) fail("JSConsumerBackOffNegativeErr");
  if (c.ack_wait < 0) fail("JSConsumerAckWaitNegativeErr");
  if (c.backoff.length > 0 && c.max_deliver !== -1 && c.backoff.length > c.max_deliver) fail("JSConsumerMaxDeliverBackoffErr");
  if (c.description.length > MAX_DESCRIPTION_LEN) fail("JSConsumerDescriptionTooLongErrF", { max: MAX_DESCRIPTION_LEN });
  if (c.deliver_subject !== "") {
    if (!isLiteral(c.deliver_subject)) fail("JSConsumerDeliverToWildcardsErr");
    if (!isValidSubject(c.deliver_subject)) fail("JSConsumerInvalidDeliverSubject");
    if (forms_cycle(stream, c.deliver_subject)) fail("JSConsumerDeliverCycleErr");
    if (c.max_waiting !== 0) fail("JSConsumerPushMaxWaitingErr");
    if (c.max_ack_pending > 0 && c.ack_policy === "none") fail("JSConsumerMaxPendingAckPolicyRequiredErr");
    if (c.idle_heartbeat > 0 && c.idle_heartbeat < MIN_HEARTBEAT_NS) fail("JSConsumerSmallHeartbeatErr");
  } else {
    if (c.ack_policy === "none" && stream.retention === "workqueue") fail("JSConsumerPullRequiresAckErr");
    if (c.rate_limit_bps > 0) fail("JSConsumerPullWithRateLimitErr");
    if (c.max_waiting < 0) fail("JSConsumerMaxWaitingNegativeErr");
    if (c.idle_heartbeat > 0) fail("JSConsumerHBRequiresPushErr");
    if (c.flow_control) fail("JSConsumerFCRequiresPushErr");
    if (c.max_batch < 0) fail("JSConsumerMaxRequestBatchNegativeErr");
    if (c.max_expires !== 0 && c.max_expires < NS_PER_MS) fail("JSConsumerMaxRequestExpiresTooSmall");
  }
  const limMap = stream.consumer_limits.max_ack_pending;
  if (limMap > 0 && c.max_ack_pending > limMap) fail("JSConsumerMaxPendingAckExcessErrF", { limit: limMap });
  const limIt = stream.consumer_limits.inactive_threshold;
  if (limIt > 0 && c.inactive_threshold > limIt) fail("JSConsumerInactiveThresholdExcess", { limit: goDuration(limIt) });
  if (c.direct) {
    if (c.deliver_subject === "") fail("JSConsumerDirectRequiresPushErr");
    if (c.durable_name !== "") fail("JSConsumerDirectRequiresEphemeralErr");
  }
  checkFilters(c);
  checkStart(c);
  if (c.sample_freq !== "") {
    const s = c.sample_freq.endsWith("%") ? c.sample_freq.slice(0, -1) : c.sample_freq;
    if (!/^[+-]?\d+$/.test(s) || Number(s) < 0) {
      fail("JSConsumerInvalidSamplingErrF", { err: `strconv.Atoi: parsing ${JSON.stringify(s)}: invalid syntax` });
    }
  }
  if (c.flow_control && c.idle_heartbeat === 0) fail("JSConsumerWithFlowControlNeedsHeartbeats");
  let mdLen = 0;
  for (const [k, v] of Object.entries(c.metadata ?? {})) mdLen += k.length + v.length;
  if (mdLen > MAX_METADATA_LEN) fail("JSConsumerMetadataLengthErrF", { limit: "128KB" });
  if (c.priority_policy !== "") {
    if (c.deliver_subject !== "") fail("JSConsumerPushWithPriorityGroupErr");
    if (c.priority_groups.length === 0) fail("JSConsumerPriorityPolicyWithoutGroup");
    for (const g of c.priority_groups) {
      if (g === "") fail("JSConsumerEmptyGroupName");
      if (!VALID_GROUP_NAME.test(g)) fail("JSConsumerInvalidGroupNameErr");
    }
  } else {
    if (c.priority_groups.length > 0) fail("JSConsumerPriorityGroupWithPolicyNone");
    if (c.priority_timeout > 0) fail("JSConsumerPinnedTTLWithoutPriorityPolicyNone");
  }
  if (c.dead_letter_subject !== "" && (!isValidSubject(c.dead_letter_subject) || !isLiteral(c.dead_letter_subject))) {
    fail("JSConsumerCreateErrF", { err: `${DEAD_LETTER_FIELD} must be a valid literal subject` });
  }
  return c;
}

function checkStart(c: ConsumerConfig): void {
  const seq = c.opt_start_seq > 0;
  const time = c.opt_start_time_ns > 0;
  const p = c.deliver_policy;
  switch (p) {
    case "all":
    case "last":
    case "new":
    case "last_per_subject": {
      const label = p === "all" ? "deliver all" : p === "last" ? "deliver last" : p === "new" ? "deliver new" : "deliver last per subject";
      if (seq) policyErr(`consumer delivery policy is ${label}, but optional start sequence is also set`);
      if (time) policyErr(`consumer delivery policy is ${label}, but optional start time is also set`);
      if (p === "last_per_subject" && filtersOf(c).length === 0 && c.filter_subject === "" && c.filter_subjects.length === 0) {
        policyErr("consumer delivery policy is deliver last per subject, but FilterSubject is not set");
      }
      return;
    }
    case "by_start_sequence":
      if (!seq) policyErr("consumer delivery policy is deliver by start sequence, but optional start sequence is not set");
      if (time) policyErr("consumer delivery policy is deliver by start sequence, but optional start time is also set");
      return;
    case "by_start_time":
      if (!time) policyErr("consumer delivery policy is deliver by start time, but optional start time is not set");
      if (seq) policyErr("consumer delivery policy is deliver by start time, but optional start sequence is also set");
      return;
  }
}

/** nats-server 2.10+: an invalid filter is a stream config error ("invalid subject"). */
function checkFilters(c: ConsumerConfig): void {
  if (c.filter_subject !== "" && c.filter_subjects.length > 0) fail("JSConsumerDuplicateFilterSubjects");
  if (c.filter_subject !== "" && !isValidSubject(c.filter_subject)) fail("JSStreamInvalidConfigF", { err: "invalid subject" });
  for (const f of c.filter_subjects) if (f === "") fail("JSConsumerEmptyFilter");
  const fs = c.filter_subject !== "" ? [c.filter_subject] : c.filter_subjects;
  for (const f of fs) if (!isValidSubject(f)) fail("JSStreamInvalidConfigF", { err: "invalid subject" });
  // Pairwise in nats-server; one trie join here (thousands of filters stay cheap).
  if (fs.length > 1) {
    let pair;
    try {
      pair = findOverlap(fs);
    } catch (e) {
      if (e instanceof OverlapBudgetExceeded) fail("JSConsumerCreateErrF", { err: "consumer filters are too complex to check for overlaps" });
      throw e;
    }
    if (pair !== null) fail("JSConsumerOverlappingSubjectFilters");
  }
}

/** Why an update of `old` to `neu` is refused (checkNewConsumerConfig), or "" when allowed. */
export function updateError(old: ConsumerConfig, neu: ConsumerConfig): string {
  if (old.deliver_subject === "" && neu.deliver_subject !== "") return "can not update pull consumer to push based";
  if (old.deliver_subject !== "" && neu.deliver_subject === "") return "can not update push consumer to pull based";
  if (old.deliver_policy !== neu.deliver_policy) return "deliver policy can not be updated";
  if (old.opt_start_seq !== neu.opt_start_seq) return "start sequence can not be updated";
  if (old.opt_start_time_ns !== neu.opt_start_time_ns) return "start time can not be updated";
  if (old.ack_policy !== neu.ack_policy) return "ack policy can not be updated";
  if (old.replay_policy !== neu.replay_policy) return "replay policy can not be updated";
  if (old.idle_heartbeat !== neu.idle_heartbeat) return "heart beats can not be updated";
  if (old.flow_control !== neu.flow_control) return "flow control can not be updated";
  if (old.max_waiting !== neu.max_waiting) return "max waiting can not be updated";
  if (old.mem_storage !== neu.mem_storage) return "memory storage can not be updated";
  if (old.direct !== neu.direct) return "direct can not be updated";
  return "";
}

export { goDuration };

/** The API level the config needs (pause_until and priority groups are 2.11). */
export function requiredApiLevel(c: ConsumerConfig): number {
  return c.pause_until_ns > 0 || c.priority_policy !== "" ? 1 : 0;
}

/** Drop the dynamic _nats keys and record _nats.req.level, as stored. */
export function setStaticMetadata(c: ConsumerConfig): void {
  const md: Record<string, string> = {};
  for (const [k, v] of Object.entries(c.metadata ?? {})) {
    if (k === "_nats.ver" || k === "_nats.level") continue;
    md[k] = v;
  }
  md["_nats.req.level"] = String(requiredApiLevel(c));
  c.metadata = md;
}

/** The config as nats-server marshals it. `dynamic` adds _nats.ver/_nats.level. */
export function consumerConfigToWire(c: ConsumerConfig, dynamic: boolean): Record<string, unknown> {
  const o: Record<string, unknown> = {};
  if (c.durable_name !== "") o["durable_name"] = c.durable_name;
  if (c.name !== "") o["name"] = c.name;
  if (c.description !== "") o["description"] = c.description;
  o["deliver_policy"] = c.deliver_policy;
  if (c.opt_start_seq !== 0) o["opt_start_seq"] = c.opt_start_seq;
  if (c.opt_start_time_ns !== 0) o["opt_start_time"] = rfc3339Ns(c.opt_start_time_ns);
  o["ack_policy"] = c.ack_policy;
  if (c.ack_wait !== 0) o["ack_wait"] = c.ack_wait;
  if (c.max_deliver !== 0) o["max_deliver"] = c.max_deliver;
  if (c.backoff.length > 0) o["backoff"] = [...c.backoff];
  if (c.filter_subject !== "") o["filter_subject"] = c.filter_subject;
  if (c.filter_subjects.length > 0) o["filter_subjects"] = [...c.filter_subjects];
  o["replay_policy"] = c.replay_policy;
  if (c.rate_limit_bps !== 0) o["rate_limit_bps"] = c.rate_limit_bps;
  if (c.sample_freq !== "") o["sample_freq"] = c.sample_freq;
  if (c.max_waiting !== 0) o["max_waiting"] = c.max_waiting;
  if (c.max_ack_pending !== 0) o["max_ack_pending"] = c.max_ack_pending;
  if (c.idle_heartbeat !== 0) o["idle_heartbeat"] = c.idle_heartbeat;
  if (c.flow_control) o["flow_control"] = true;
  if (c.headers_only) o["headers_only"] = true;
  if (c.max_batch !== 0) o["max_batch"] = c.max_batch;
  if (c.max_expires !== 0) o["max_expires"] = c.max_expires;
  if (c.max_bytes !== 0) o["max_bytes"] = c.max_bytes;
  if (c.deliver_subject !== "") o["deliver_subject"] = c.deliver_subject;
  if (c.deliver_group !== "") o["deliver_group"] = c.deliver_group;
  if (c.inactive_threshold !== 0) o["inactive_threshold"] = c.inactive_threshold;
  o["num_replicas"] = c.num_replicas;
  if (c.mem_storage) o["mem_storage"] = true;
  if (c.direct) o["direct"] = true;
  if (c.metadata !== null) {
    const md: Record<string, string> = { ...c.metadata };
    if (dynamic) {
      md["_nats.ver"] = SERVER_VERSION;
      md["_nats.level"] = String(JS_API_LEVEL);
    }
    o["metadata"] = md;
  }
  if (c.pause_until_ns !== 0) o["pause_until"] = rfc3339Ns(c.pause_until_ns);
  if (c.priority_groups.length > 0) o["priority_groups"] = [...c.priority_groups];
  if (c.priority_policy !== "") o["priority_policy"] = c.priority_policy;
  if (c.priority_timeout !== 0) o["priority_timeout"] = c.priority_timeout;
  if (c.dead_letter_subject !== "") o[DEAD_LETTER_FIELD] = c.dead_letter_subject;
  return o;
}

/** Equal for the purpose of `action:"create"` on an existing consumer. pause_until is
 *  ignored: creating an existing consumer never changes it. */
export function sameConsumerConfig(a: ConsumerConfig, b: ConsumerConfig): boolean {
  const wa = consumerConfigToWire({ ...a, pause_until_ns: 0, metadata: stripNats(a.metadata) }, false);
  const wb = consumerConfigToWire({ ...b, pause_until_ns: 0, metadata: stripNats(b.metadata) }, false);
  return JSON.stringify(wa) === JSON.stringify(wb);
}

function stripNats(md: Record<string, string> | null): Record<string, string> | null {
  if (md === null) return null;
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(md)) if (!k.startsWith("_nats.")) out[k] = v;
  return Object.keys(out).length === 0 ? null : out;
}

/** Work-queue rules that need the other consumers (nats-server addConsumerWithAction). */
export function checkWorkQueue(c: ConsumerConfig, others: { name: string; filters: string[] }[]): void {
  if (c.direct) return;
  if (c.ack_policy !== "explicit") fail("JSConsumerWQRequiresExplicitAckErr");
  const mine = filtersOf(c);
  const rest = others.filter((o) => o.name !== c.name);
  if (rest.length > 0) {
    if (mine.length === 0) fail("JSConsumerWQMultipleUnfilteredErr");
    for (const o of rest) {
      if (o.filters.length === 0) fail("JSConsumerWQConsumerNotUniqueErr");
      let hit: number;
      try {
        hit = findCrossOverlap(mine, o.filters);
      } catch (e) {
        if (e instanceof OverlapBudgetExceeded) fail("JSConsumerCreateErrF", { err: "consumer filters are too complex to check for overlaps" });
        throw e;
      }
      if (hit >= 0) fail("JSConsumerWQConsumerNotUniqueErr");
    }
  }
  if (c.deliver_policy !== "all") fail("JSConsumerWQConsumerNotDeliverAllErr");
}
