// Stream configuration: decoding the request JSON (lenient about unknown fields, strict about
// the types of known ones, like Go's encoding/json), defaults and validation in nats-server's
// order (checkStreamCfg), the update rules (configUpdateCheck) and the wire encoding with
// nats-server's omitempty choices.

import { isValidSubject, subjectsCollide, subjectIsSubsetMatch } from "../subjects/subject.js";
import { jsErr, JsApiError, throwJs, type ApiError } from "../contracts/errors.js";
import type {
  StreamConfig,
  StreamSourceConfig,
  SubjectTransformConfig,
  RePublish,
} from "../contracts/wire.js";
import { SubjectTransform, TransformError } from "./transform.js";
import { goInt, goJsonType, type GoIntKind } from "../contracts/json.js";
import { DEFAULT_OVERLAP_BUDGET, findOverlap, OverlapBudgetExceeded, SupersetIndex, type OverlapPair } from "../subjects/overlap.js";
import { JS_API_LEVEL, SERVER_VERSION } from "../version.js";

export const NS_PER_MS = 1_000_000;
export const DEFAULT_DUPLICATE_WINDOW_NS = 2 * 60 * 1000 * NS_PER_MS;
export const MAX_NAME_LEN = 255;
export const MAX_DESCRIPTION_LEN = 4 * 1024;
export const MAX_METADATA_LEN = 128 * 1024;
export const STREAM_MAX_REPLICAS = 5;

function invalidJson(msg: string): never {
  throw new JsApiError(jsErr("JSInvalidJSONErr", { err: msg }));
}

function invalidCfg(msg: string): never {
  throw new JsApiError(jsErr("JSStreamInvalidConfigF", { err: msg }));
}

type Obj = Record<string, unknown>;

function isObj(v: unknown): v is Obj {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

const goType = goJsonType;

function str(o: Obj, k: string, def = ""): string {
  const v = o[k];
  if (v === undefined || v === null) return def;
  if (typeof v !== "string") invalidJson(`json: cannot unmarshal ${goType(v)} into Go struct field .${k} of type string`);
  return v;
}

function bool(o: Obj, k: string): boolean {
  const v = o[k];
  if (v === undefined || v === null) return false;
  if (typeof v !== "boolean") invalidJson(`json: cannot unmarshal ${goType(v)} into Go struct field .${k} of type bool`);
  return v;
}

/** An integer field of Go type `kind` (int64 unless told): encoding/json's range and sign
 *  rules, with its error text naming `path` (the struct and its parents). */
function int(o: Obj, k: string, kind: GoIntKind = "int64", path = "StreamConfigRequest"): number {
  return goInt(o[k], kind, `${path}.${k}`, invalidJson);
}

function strList(o: Obj, k: string): string[] {
  const v = o[k];
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v) || v.some((x) => typeof x !== "string")) {
    invalidJson(`json: cannot unmarshal ${goType(v)} into Go struct field .${k} of type []string`);
  }
  return [...(v as string[])];
}

function enumVal<T extends string>(o: Obj, k: string, allowed: readonly T[], def: T): T {
  const v = o[k];
  if (v === undefined || v === null) return def;
  if (typeof v !== "string" || !(allowed as readonly string[]).includes(v.toLowerCase())) {
    invalidJson(`can not unmarshal ${JSON.stringify(JSON.stringify(v))}`);
  }
  return v.toLowerCase() as T;
}

function transformOf(v: unknown, k: string): SubjectTransformConfig {
  if (!isObj(v)) invalidJson(`json: cannot unmarshal ${goType(v)} into Go struct field .${k}`);
  return { src: str(v, "src"), dest: str(v, "dest") };
}

function sourceOf(v: unknown, k: string): StreamSourceConfig {
  if (!isObj(v)) invalidJson(`json: cannot unmarshal ${goType(v)} into Go struct field .${k}`);
  const tr = v["subject_transforms"];
  let transforms: SubjectTransformConfig[] = [];
  if (tr !== undefined && tr !== null) {
    if (!Array.isArray(tr)) invalidJson(`json: cannot unmarshal ${goType(tr)} into Go struct field .subject_transforms`);
    transforms = tr.map((x) => transformOf(x, "subject_transforms"));
  }
  const ext = v["external"];
  let external: StreamSourceConfig["external"] = null;
  if (isObj(ext)) external = { api: str(ext, "api"), deliver: str(ext, "deliver") };
  const ost = v["opt_start_time"];
  return {
    name: str(v, "name"),
    opt_start_seq: int(v, "opt_start_seq", "uint64", `StreamConfigRequest.${k}`),
    opt_start_time: typeof ost === "string" && !ost.startsWith("0001-01-01") ? ost : "",
    filter_subject: str(v, "filter_subject"),
    subject_transforms: transforms,
    external,
  };
}

/** Go zero values for every field: what a decoded empty request holds. */
export function zeroConfig(name = ""): StreamConfig {
  return {
    name,
    description: "",
    subjects: [],
    retention: "limits",
    max_consumers: 0,
    max_msgs: 0,
    max_bytes: 0,
    max_age: 0,
    max_msgs_per_subject: 0,
    max_msg_size: 0,
    discard: "old",
    storage: "file",
    num_replicas: 0,
    no_ack: false,
    duplicate_window: 0,
    placement: null,
    mirror: null,
    sources: [],
    compression: "none",
    first_seq: 0,
    subject_transform: null,
    republish: null,
    allow_direct: false,
    mirror_direct: false,
    discard_new_per_subject: false,
    sealed: false,
    deny_delete: false,
    deny_purge: false,
    allow_rollup_hdrs: false,
    consumer_limits: { inactive_threshold: 0, max_ack_pending: 0 },
    allow_msg_ttl: false,
    subject_delete_marker_ttl: 0,
    metadata: null,
  };
}

/** Decode a StreamConfig request object. Unknown fields are ignored (pre-2.12 behaviour). */
export function decodeStreamConfig(o: unknown): StreamConfig {
  if (!isObj(o)) invalidJson(`json: cannot unmarshal ${goType(o)} into Go value of type server.StreamConfigRequest`);
  const c = zeroConfig(str(o, "name"));
  c.description = str(o, "description");
  c.subjects = strList(o, "subjects");
  c.retention = enumVal(o, "retention", ["limits", "interest", "workqueue"] as const, "limits");
  c.max_consumers = int(o, "max_consumers", "int");
  c.max_msgs = int(o, "max_msgs");
  c.max_bytes = int(o, "max_bytes");
  c.max_age = int(o, "max_age", "time.Duration");
  c.max_msgs_per_subject = int(o, "max_msgs_per_subject");
  c.max_msg_size = int(o, "max_msg_size", "int32");
  c.discard = enumVal(o, "discard", ["old", "new"] as const, "old");
  c.storage = enumVal(o, "storage", ["file", "memory"] as const, "file");
  c.num_replicas = int(o, "num_replicas", "int");
  c.no_ack = bool(o, "no_ack");
  c.duplicate_window = int(o, "duplicate_window", "time.Duration");
  const pl = o["placement"];
  if (isObj(pl)) {
    const cluster = str(pl, "cluster");
    const tags = strList(pl, "tags");
    if (str(pl, "preferred") !== "") invalidCfg("preferred server not permitted in placement");
    c.placement = cluster === "" && tags.length === 0 ? null : { cluster, tags };
  }
  if (o["mirror"] !== undefined && o["mirror"] !== null) c.mirror = sourceOf(o["mirror"], "mirror");
  const srcs = o["sources"];
  if (srcs !== undefined && srcs !== null) {
    if (!Array.isArray(srcs)) invalidJson(`json: cannot unmarshal ${goType(srcs)} into Go struct field .sources`);
    c.sources = srcs.map((s) => sourceOf(s, "sources"));
  }
  // jsm.go sends "" for an unset compression.
  c.compression = o["compression"] === "" ? "none" : enumVal(o, "compression", ["none", "s2"] as const, "none");
  c.first_seq = int(o, "first_seq", "uint64");
  if (isObj(o["subject_transform"])) c.subject_transform = transformOf(o["subject_transform"], "subject_transform");
  const rp = o["republish"];
  if (isObj(rp)) c.republish = { src: str(rp, "src"), dest: str(rp, "dest"), headers_only: bool(rp, "headers_only") };
  c.allow_direct = bool(o, "allow_direct");
  c.mirror_direct = bool(o, "mirror_direct");
  c.discard_new_per_subject = bool(o, "discard_new_per_subject");
  c.sealed = bool(o, "sealed");
  c.deny_delete = bool(o, "deny_delete");
  c.deny_purge = bool(o, "deny_purge");
  c.allow_rollup_hdrs = bool(o, "allow_rollup_hdrs");
  const cl = o["consumer_limits"];
  if (isObj(cl)) c.consumer_limits = {
      inactive_threshold: int(cl, "inactive_threshold", "time.Duration", "StreamConfigRequest.consumer_limits"),
      max_ack_pending: int(cl, "max_ack_pending", "int", "StreamConfigRequest.consumer_limits"),
    };
  c.allow_msg_ttl = bool(o, "allow_msg_ttl");
  c.subject_delete_marker_ttl = int(o, "subject_delete_marker_ttl", "time.Duration");
  const md = o["metadata"];
  if (md !== undefined && md !== null) {
    if (!isObj(md) || Object.values(md).some((x) => typeof x !== "string")) {
      invalidJson("json: cannot unmarshal into Go struct field .metadata of type map[string]string");
    }
    c.metadata = { ...(md as Record<string, string>) };
  }
  return c;
}

/** nats-server isValidName: non-empty, no whitespace, '.', '*', '>', '/' or '\'. */
export function isValidAssetName(name: string): boolean {
  if (name.length === 0) return false;
  return !/[\s.*>/\\]/.test(name);
}

/** What validation may ask about other streams. */
export interface StreamLookup {
  get(name: string): StreamConfig | undefined;
}

/** Finds a colliding pair among a stream's own subjects (findOverlap's contract, throwing
 *  OverlapBudgetExceeded past its work limit). The API layer passes one that answers from a
 *  search it worked across turns of the loop. */
export type OwnOverlapSearch = (subjects: readonly string[], maxPairs: number) => OverlapPair | null;

/** Defaults and validation (nats-server checkStreamCfg). Returns a new config. */
export function checkStreamConfig(input: StreamConfig, others: StreamLookup, pedantic: boolean, ownOverlap?: OwnOverlapSearch): StreamConfig {
  if (!isValidAssetName(input.name)) {
    invalidCfg("stream name is required and can not contain '.', '*', '>', '\\', '/'");
  }
  if (input.name.length > MAX_NAME_LEN) invalidCfg(`stream name is too long, maximum allowed is ${MAX_NAME_LEN}`);
  if (input.description.length > MAX_DESCRIPTION_LEN) {
    invalidCfg(`stream description is too long, maximum allowed is ${MAX_DESCRIPTION_LEN}`);
  }
  let mdLen = 0;
  for (const [k, v] of Object.entries(input.metadata ?? {})) mdLen += k.length + v.length;
  if (mdLen > MAX_METADATA_LEN) invalidCfg(`stream metadata exceeds maximum size of ${MAX_METADATA_LEN} bytes`);

  const cfg: StreamConfig = structuredClone(input);
  if (cfg.num_replicas === 0) cfg.num_replicas = 1;
  if (cfg.num_replicas > STREAM_MAX_REPLICAS) invalidCfg(`maximum replicas is ${STREAM_MAX_REPLICAS}`);
  if (cfg.num_replicas < 0) throwJs("JSReplicasCountCannotBeNegative");
  const unlimited = (v: number, field: string): number => {
    if (v === 0 || v < -1) {
      if (pedantic && v < -1) throwJs("JSPedanticErrF", { err: `${field} must be set to -1` });
      return -1;
    }
    return v;
  };
  cfg.max_msgs = unlimited(cfg.max_msgs, "max_msgs");
  cfg.max_msgs_per_subject = unlimited(cfg.max_msgs_per_subject, "max_msgs_per_subject");
  cfg.max_bytes = unlimited(cfg.max_bytes, "max_bytes");
  cfg.max_msg_size = unlimited(cfg.max_msg_size, "max_msg_size");
  cfg.max_consumers = unlimited(cfg.max_consumers, "max_consumers");
  if (cfg.max_age < 0) invalidCfg("max age can not be negative");
  if (cfg.max_age !== 0 && cfg.max_age < 100 * NS_PER_MS) invalidCfg("max age needs to be >= 100ms");

  if (cfg.duplicate_window === 0 && cfg.mirror === null && cfg.sources.length === 0) {
    if (cfg.max_age !== 0 && cfg.max_age < DEFAULT_DUPLICATE_WINDOW_NS) {
      if (pedantic) throwJs("JSPedanticErrF", { err: "duplicate window cannot be bigger than max age" });
      cfg.duplicate_window = cfg.max_age;
    } else {
      cfg.duplicate_window = DEFAULT_DUPLICATE_WINDOW_NS;
    }
  }
  if (cfg.duplicate_window < 0) invalidCfg("duplicates window can not be negative");
  if (cfg.max_age !== 0 && cfg.duplicate_window > cfg.max_age) {
    invalidCfg("duplicates window can not be larger then max age");
  }
  if (cfg.duplicate_window > 0 && cfg.duplicate_window < 100 * NS_PER_MS) {
    invalidCfg("duplicates window needs to be >= 100ms");
  }
  if (cfg.deny_purge && cfg.allow_rollup_hdrs) invalidCfg("roll-ups require the purge permission");
  if (cfg.discard_new_per_subject) {
    if (cfg.discard !== "new") invalidCfg("discard new per subject requires discard new policy to be set");
    if (cfg.max_msgs_per_subject <= 0) invalidCfg("discard new per subject requires max msgs per subject > 0");
  }
  if (cfg.subject_delete_marker_ttl > 0) {
    if (cfg.subject_delete_marker_ttl < 1000 * NS_PER_MS) {
      invalidCfg("subject delete marker TTL must be at least 1 second");
    }
    if (!cfg.allow_msg_ttl) {
      if (pedantic) invalidCfg("subject delete marker cannot be set if message TTLs are disabled");
      cfg.allow_msg_ttl = true;
    }
    if (!cfg.allow_rollup_hdrs) {
      if (pedantic) invalidCfg("subject delete marker cannot be set if roll-ups are disabled");
      cfg.allow_rollup_hdrs = true;
      cfg.deny_purge = false;
    }
  } else if (cfg.subject_delete_marker_ttl < 0) {
    invalidCfg("subject delete marker TTL must not be negative");
  }

  if (cfg.mirror !== null) {
    const m = cfg.mirror;
    if (cfg.first_seq > 0) throwJs("JSMirrorWithFirstSeqErr");
    if (cfg.subjects.length > 0) throwJs("JSMirrorWithSubjectsErr");
    if (cfg.sources.length > 0) throwJs("JSMirrorWithSourcesErr");
    if (m.filter_subject !== "" && m.subject_transforms.length !== 0) throwJs("JSMirrorMultipleFiltersNotAllowed");
    if (cfg.subject_delete_marker_ttl > 0) invalidCfg("subject delete markers forbidden on mirrors");
    m.subject_transforms.forEach((tr, i) => {
      if (tr.src !== "" && !isValidSubject(tr.src)) {
        throwJs("JSMirrorInvalidSubjectFilter", { err: `invalid subject ${tr.src}` });
      }
      validateMapping(tr, "JSMirrorInvalidTransformDestination");
      // One indexed check once every transform is validated (nats-server compares pairs
      // inside its loop, so with both an overlap and a later invalid transform it names
      // the overlap; tsnats the invalid transform).
      if (i === m.subject_transforms.length - 1 && overlapOrLimit(m.subject_transforms.map((t) => t.src || ">")) !== null) {
        throwJs("JSMirrorOverlappingSubjectFilters");
      }
    });
    if (m.external === null) {
      if (!isValidAssetName(m.name)) throwJs("JSMirrorInvalidStreamName");
      const origin = others.get(m.name);
      if (origin) {
        if (cfg.max_msg_size > 0 && origin.max_msg_size > 0 && cfg.max_msg_size < origin.max_msg_size) {
          throwJs("JSMirrorMaxMessageSizeTooBigErr");
        }
        if (pedantic && cfg.mirror_direct !== origin.allow_direct) {
          throwJs("JSPedanticErrF", { err: "origin stream has direct get set, mirror has it disabled" });
        }
        cfg.mirror_direct = origin.allow_direct;
      }
    }
    if (m.filter_subject !== "" && !isValidSubject(m.filter_subject)) {
      throwJs("JSStreamCreateErrF", { err: `subject filter '${m.filter_subject}' for the mirror invalid subject` });
    }
  }

  const inames = new Set<string>();
  for (const src of cfg.sources) {
    if (!isValidAssetName(src.name)) throwJs("JSSourceInvalidStreamName");
    const iname = sourceIndexName(src);
    if (inames.has(iname)) throwJs("JSSourceDuplicateDetected");
    inames.add(iname);
    if (src.filter_subject !== "" && src.subject_transforms.length !== 0) throwJs("JSSourceMultipleFiltersNotAllowed");
    for (const tr of src.subject_transforms) {
      if (tr.src !== "" && !isValidSubject(tr.src)) throwJs("JSSourceInvalidSubjectFilter", { err: `invalid subject ${tr.src}` });
      validateMapping(tr, "JSSourceInvalidTransformDestination");
    }
    if (src.subject_transforms.length > 1) {
      const srcs = src.subject_transforms.map((t) => t.src || ">");
      const idx = new SupersetIndex(srcs);
      srcs.forEach((f, i) => {
        if (idx.superset(f, i) >= 0) throwJs("JSSourceOverlappingSubjectFilters");
      });
    }
    if (src.external === null) {
      const origin = others.get(src.name);
      if (origin && cfg.max_msg_size > 0 && origin.max_msg_size > 0 && cfg.max_msg_size < origin.max_msg_size) {
        throwJs("JSSourceMaxMessageSizeTooBigErr");
      }
    }
    if (src.filter_subject !== "" && !isValidSubject(src.filter_subject)) {
      throwJs("JSStreamCreateErrF", { err: `subject filter '${src.filter_subject}' for the source invalid subject` });
    }
  }

  detectCycle(cfg, others);

  if (cfg.subjects.length === 0) {
    if (cfg.mirror === null && cfg.sources.length === 0) cfg.subjects = [cfg.name];
  } else {
    checkOwnSubjects(cfg, ownOverlap);
  }
  if (cfg.subjects.length === 0 && cfg.sources.length === 0 && cfg.mirror === null) {
    invalidCfg("stream needs at least one configured subject or be a source/mirror");
  }

  if (cfg.subject_transform !== null) {
    const st = cfg.subject_transform;
    if (st.src !== "" && !isValidSubject(st.src)) throwJs("JSStreamTransformInvalidSource", { err: `invalid subject ${st.src}` });
    validateMapping(st, "JSStreamTransformInvalidDestination");
  }

  if (cfg.republish !== null) {
    const rp: RePublish = cfg.republish;
    if (rp.src === "") {
      if (pedantic) throwJs("JSPedanticErrF", { err: "republish source can not be empty" });
      rp.src = ">";
    }
    if (
      rp.dest === ">" &&
      rp.src === ">" &&
      cfg.subject_transform !== null &&
      cfg.subjects.length === 1 &&
      cfg.subject_transform.src === cfg.subjects[0]
    ) {
      rp.src = cfg.subject_transform.dest;
      rp.dest = cfg.subject_transform.dest;
    }
    for (const subj of cfg.subjects) {
      if (subjectsCollide(rp.dest, subj)) invalidCfg("stream configuration for republish destination forms a cycle");
    }
    try {
      SubjectTransform.create(rp.src, rp.dest);
      if (!isValidSubject(rp.dest)) throw new TransformError("bad dest");
    } catch {
      invalidCfg(`stream configuration for republish with transform from '${rp.src}' to '${rp.dest}' not valid`);
    }
  }
  return cfg;
}

/** Most colliding pairs looked at to name the one nats-server's pairwise loop names first. */
export const NAMED_PAIR_SEARCH = 10_000;

/** A colliding pair of `subjects`, or null; a config too costly to check is refused (10052)
 *  rather than allowed to hold the event loop (see subjects/overlap.ts). */
function overlapOrLimit(subjects: readonly string[], maxPairs = 1, search?: OwnOverlapSearch): OverlapPair | null {
  try {
    return search !== undefined ? search(subjects, maxPairs) : findOverlap(subjects, DEFAULT_OVERLAP_BUDGET, maxPairs);
  } catch (e) {
    if (e instanceof OverlapBudgetExceeded) invalidCfg(`stream subjects are too complex to check for overlaps`);
    throw e;
  }
}

/** The stream's own subjects, as nats-server's loop checks them: for each subject in order
 *  its validity, the '>' and API namespace rules, then overlap with every later subject.
 *  The per-subject rules are one pass; the overlaps come from the trie join, and the first
 *  failure in nats-server's order is reported. */
function checkOwnSubjects(cfg: StreamConfig, search?: OwnOverlapSearch): void {
  const subjects = cfg.subjects;
  let bad = -1;
  let badMsg = "";
  for (let i = 0; i < subjects.length && bad < 0; i++) {
    const subj = subjects[i]!;
    const m = subjectRuleError(cfg, subj);
    if (m !== null) {
      bad = i;
      badMsg = m;
    }
  }
  // An invalid subject stops the loop there: only the subjects before it were compared.
  const upTo = bad >= 0 && badMsg === "invalid subject" ? bad : subjects.length;
  const pair = overlapOrLimit(upTo === subjects.length ? subjects : subjects.slice(0, upTo), NAMED_PAIR_SEARCH, search);
  if (pair !== null && (bad < 0 || pair.i < bad)) {
    // Equal subjects collide too, so nats-server's "duplicate subjects detected" is only
    // reachable after an overlap was already reported; the overlap message it is.
    invalidCfg(`subject ${JSON.stringify(subjects[pair.i])} overlaps with ${JSON.stringify(subjects[pair.j])}`);
  }
  if (bad >= 0) invalidCfg(badMsg);
}

/** The per-subject rules of checkStreamCfg's subject loop, or null. */
function subjectRuleError(cfg: StreamConfig, subj: string): string | null {
  if (!isValidSubject(subj)) return "invalid subject";
  if (subj === ">") {
    if (!cfg.no_ack) return "capturing all subjects requires no-ack to be true";
    if (cfg.num_replicas !== 1) return "capturing all subjects requires replicas of 1";
  }
  // Only a subject whose first token is a wildcard or starts with '$' can meet $JS/$SYS.
  const c0 = subj.charCodeAt(0);
  if (!cfg.no_ack && (c0 === 36 || ((c0 === 42 || c0 === 62) && (subj.length === 1 || subj.charCodeAt(1) === 46)))) {
    for (const ns of ["$JS.>", "$JSC.>", "$NRG.>"]) {
      if (subjectsCollide(subj, ns) && !subjectIsSubsetMatch(subj, "$JS.EVENT.>")) {
        return "subjects that overlap with jetstream api require no-ack to be true";
      }
    }
    if (subjectsCollide(subj, "$SYS.>") && !subjectIsSubsetMatch(subj, "$SYS.ACCOUNT.>")) {
      return "subjects that overlap with system api require no-ack to be true";
    }
  }
  return null;
}

function validateMapping(tr: SubjectTransformConfig, errName: "JSMirrorInvalidTransformDestination" | "JSSourceInvalidTransformDestination" | "JSStreamTransformInvalidDestination"): void {
  if (tr.dest === "") return;
  try {
    SubjectTransform.create(tr.src, tr.dest);
  } catch (e) {
    throwJs(errName, { err: (e as Error).message });
  }
}

/** Identity of a source for duplicate detection: name, filter/transforms and api prefix. */
export function sourceIndexName(src: StreamSourceConfig): string {
  let s = src.name;
  if (src.external !== null) s += ":" + src.external.api;
  if (src.subject_transforms.length > 0) {
    for (const t of src.subject_transforms) s += " " + (t.src || ">") + ":" + t.dest;
  } else {
    s += " " + (src.filter_subject || ">");
  }
  return s;
}

function detectCycle(cfg: StreamConfig, others: StreamLookup): void {
  const toVisit: StreamConfig[] = [cfg];
  const visited = new Set<string>();
  const overlaps = (subjects: string[], filter: string): boolean =>
    filter === "" || subjects.some((s) => subjectsCollide(s, filter));
  let guard = 0;
  while (toVisit.length > 0 && guard++ < 10_000) {
    const c = toVisit.shift()!;
    visited.add(c.name);
    for (const src of c.sources) {
      if (src.external !== null) continue;
      if (visited.has(src.name)) {
        if (overlaps(c.subjects, src.filter_subject)) invalidCfg("detected cycle");
      } else {
        const o = others.get(src.name);
        if (o) toVisit.push(o);
      }
    }
    if (c.mirror !== null && c.mirror.external === null) {
      if (visited.has(c.mirror.name)) invalidCfg("detected cycle");
      const o = others.get(c.mirror.name);
      if (o) toVisit.push(o);
    }
  }
}

/** Update rules (nats-server configUpdateCheck); `neu` is already checked by checkStreamConfig. */
/** What checkStreamUpdate needs of an existing consumer for consumer_limits. */
export interface ConsumerLimitsView {
  name: string;
  max_ack_pending: number;
  inactive_threshold: number;
}

export function checkStreamUpdate(old: StreamConfig, neu: StreamConfig, consumers: readonly ConsumerLimitsView[] = []): StreamConfig {
  const cfg = structuredClone(neu);
  if (cfg.name !== old.name) invalidCfg("stream configuration name must match original");
  if (cfg.num_replicas > 1) throwJs("JSStreamReplicasNotSupportedErr");
  if (cfg.storage !== old.storage) invalidCfg("stream configuration update can not change storage type");
  if (cfg.retention !== old.retention && (old.retention === "workqueue" || cfg.retention === "workqueue")) {
    invalidCfg("stream configuration update can not change retention policy to/from workqueue");
  }
  if (!cfg.sealed && old.sealed) invalidCfg("stream configuration update can not unseal a sealed stream");
  if (!cfg.deny_delete && old.deny_delete) invalidCfg("stream configuration update can not cancel deny message deletes");
  if (!cfg.deny_purge && old.deny_purge) invalidCfg("stream configuration update can not cancel deny purge");
  if (cfg.mirror !== null && JSON.stringify(cfg.mirror) !== JSON.stringify(old.mirror)) {
    throwJs("JSStreamMirrorNotUpdatableErr");
  }
  if (old.allow_msg_ttl && !cfg.allow_msg_ttl) invalidCfg("message TTL status can not be disabled");
  checkConsumerLimitsUpdate(old, cfg, consumers);
  if (cfg.sealed) {
    cfg.max_age = 0;
    cfg.discard = "new";
    cfg.deny_delete = true;
    cfg.deny_purge = true;
    cfg.allow_rollup_hdrs = false;
  }
  return cfg;
}

/** nats-server updateWithAdvisory: a changed, non-zero consumer_limits value that an existing
 *  consumer exceeds refuses the update with JSStreamUpdateErrF (500, 10069) naming them
 *  (sorted here; nats-server lists them in map order). */
function checkConsumerLimitsUpdate(old: StreamConfig, cfg: StreamConfig, consumers: readonly ConsumerLimitsView[]): void {
  const ni = cfg.consumer_limits.inactive_threshold;
  const nm = cfg.consumer_limits.max_ack_pending;
  const changed = (ni > 0 && ni !== old.consumer_limits.inactive_threshold) || (nm > 0 && nm !== old.consumer_limits.max_ack_pending);
  if (!changed) return;
  const bad: string[] = [];
  for (const c of consumers) {
    if ((ni > 0 && c.inactive_threshold > ni) || (nm > 0 && c.max_ack_pending > nm)) bad.push(c.name);
  }
  if (bad.length > 0) throwJs("JSStreamUpdateErrF", { err: `change to limits violates consumers: ${bad.sort().join(", ")}` });
}

/** The API level a config needs (nats-server setStaticStreamMetadata). */
export function requiredApiLevel(cfg: StreamConfig): number {
  return cfg.allow_msg_ttl || cfg.subject_delete_marker_ttl > 0 ? 1 : 0;
}

/** Drop the dynamic _nats keys and record _nats.req.level, as stored. */
export function setStaticMetadata(cfg: StreamConfig): void {
  const md: Record<string, string> = {};
  for (const [k, v] of Object.entries(cfg.metadata ?? {})) {
    if (k === "_nats.ver" || k === "_nats.level") continue;
    md[k] = v;
  }
  md["_nats.req.level"] = String(requiredApiLevel(cfg));
  cfg.metadata = md;
}

function transformWire(t: SubjectTransformConfig): Record<string, unknown> {
  return { src: t.src, dest: t.dest };
}

function sourceWire(s: StreamSourceConfig): Record<string, unknown> {
  const o: Record<string, unknown> = { name: s.name };
  if (s.opt_start_seq !== 0) o["opt_start_seq"] = s.opt_start_seq;
  if (s.opt_start_time !== "") o["opt_start_time"] = s.opt_start_time;
  if (s.filter_subject !== "") o["filter_subject"] = s.filter_subject;
  if (s.subject_transforms.length > 0) o["subject_transforms"] = s.subject_transforms.map(transformWire);
  if (s.external !== null) o["external"] = { api: s.external.api, deliver: s.external.deliver };
  return o;
}

/** The config as nats-server marshals it (field order and omitempty). `dynamic` adds
 *  the _nats.ver/_nats.level metadata sent in replies. */
export function configToWire(c: StreamConfig, dynamic: boolean): Record<string, unknown> {
  const o: Record<string, unknown> = { name: c.name };
  if (c.description !== "") o["description"] = c.description;
  if (c.subjects.length > 0) o["subjects"] = [...c.subjects];
  o["retention"] = c.retention;
  o["max_consumers"] = c.max_consumers;
  o["max_msgs"] = c.max_msgs;
  o["max_bytes"] = c.max_bytes;
  o["max_age"] = c.max_age;
  o["max_msgs_per_subject"] = c.max_msgs_per_subject;
  if (c.max_msg_size !== 0) o["max_msg_size"] = c.max_msg_size;
  o["discard"] = c.discard;
  o["storage"] = c.storage;
  o["num_replicas"] = c.num_replicas;
  if (c.no_ack) o["no_ack"] = true;
  if (c.duplicate_window !== 0) o["duplicate_window"] = c.duplicate_window;
  if (c.placement !== null) {
    const p: Record<string, unknown> = {};
    if (c.placement.cluster !== "") p["cluster"] = c.placement.cluster;
    if (c.placement.tags.length > 0) p["tags"] = [...c.placement.tags];
    o["placement"] = p;
  }
  if (c.mirror !== null) o["mirror"] = sourceWire(c.mirror);
  if (c.sources.length > 0) o["sources"] = c.sources.map(sourceWire);
  o["compression"] = c.compression;
  if (c.first_seq !== 0) o["first_seq"] = c.first_seq;
  if (c.subject_transform !== null) o["subject_transform"] = transformWire(c.subject_transform);
  if (c.republish !== null) {
    const r: Record<string, unknown> = {};
    if (c.republish.src !== "") r["src"] = c.republish.src;
    r["dest"] = c.republish.dest;
    if (c.republish.headers_only) r["headers_only"] = true;
    o["republish"] = r;
  }
  o["allow_direct"] = c.allow_direct;
  o["mirror_direct"] = c.mirror_direct;
  if (c.discard_new_per_subject) o["discard_new_per_subject"] = true;
  o["sealed"] = c.sealed;
  o["deny_delete"] = c.deny_delete;
  o["deny_purge"] = c.deny_purge;
  o["allow_rollup_hdrs"] = c.allow_rollup_hdrs;
  const cl: Record<string, unknown> = {};
  if (c.consumer_limits.inactive_threshold !== 0) cl["inactive_threshold"] = c.consumer_limits.inactive_threshold;
  if (c.consumer_limits.max_ack_pending !== 0) cl["max_ack_pending"] = c.consumer_limits.max_ack_pending;
  o["consumer_limits"] = cl;
  o["allow_msg_ttl"] = c.allow_msg_ttl;
  if (c.subject_delete_marker_ttl !== 0) o["subject_delete_marker_ttl"] = c.subject_delete_marker_ttl;
  const md: Record<string, string> = { ...(c.metadata ?? {}) };
  if (dynamic) {
    md["_nats.ver"] = SERVER_VERSION;
    md["_nats.level"] = String(JS_API_LEVEL);
  }
  if (Object.keys(md).length > 0) o["metadata"] = md;
  return o;
}

/** Equality as nats-server's create idempotency check sees it (ignoring _nats.* keys). */
export function sameConfig(a: StreamConfig, b: StreamConfig): boolean {
  const strip = (c: StreamConfig): string => {
    const w = configToWire(c, false);
    const md = { ...((w["metadata"] as Record<string, string> | undefined) ?? {}) };
    for (const k of Object.keys(md)) if (k.startsWith("_nats.")) delete md[k];
    w["metadata"] = md;
    return JSON.stringify(w);
  };
  return strip(a) === strip(b);
}

export function apiErrorOf(e: unknown): ApiError | null {
  return e instanceof JsApiError ? e.apiError : null;
}
