// `stream add` / `stream edit` flags (natscli's names and defaults), the prompts for values
// not given, and the "Information for Stream ..." rendering.
import * as fs from "node:fs";
import { Option, type Command } from "commander";
import { CliError, Columns, fmtTime, humanDuration, ibytes, isZeroTime } from "./output.js";
import { collect, parseBytes, parseDuration, parseIntStrict, parseKeyValues, splitList } from "./parse.js";
import { askConfirm, askInput, askSelect, interactive } from "./prompt.js";

/** The stream configuration as it travels on the wire (snake_case, durations in ns). */
export type WireStreamConfig = Record<string, unknown> & { name: string };

export interface StreamFlags {
  subjects?: string[];
  description?: string;
  storage?: string;
  compression?: string;
  replicas?: string;
  tag?: string[];
  tags?: string[];
  cluster?: string;
  ack?: boolean;
  retention?: string;
  discard?: string;
  discardPerSubject?: boolean;
  firstSequence?: string;
  maxAge?: string;
  maxBytes?: string;
  maxConsumers?: string;
  maxMsgSize?: string;
  maxMsgs?: string;
  maxMsgsPerSubject?: string;
  dupeWindow?: string;
  mirror?: string;
  source?: string[];
  allowBatch?: boolean;
  allowFast?: boolean;
  allowCounter?: boolean;
  allowRollup?: boolean;
  denyDelete?: boolean;
  denyPurge?: boolean;
  allowDirect?: boolean;
  allowMirrorDirect?: boolean;
  allowMsgTtl?: boolean;
  allowSchedules?: boolean;
  subjectDelMarkersTtl?: string;
  transformSource?: string;
  transformDestination?: string;
  metadata?: string[];
  republishSource?: string;
  republishDestination?: string;
  republishHeaders?: boolean;
  limitConsumerInactive?: string;
  limitConsumerMaxPending?: string;
  persistMode?: string;
  json?: boolean;
  config?: string;
  defaults?: boolean;
  validate?: boolean;
  output?: string;
  force?: boolean;
  dryRun?: boolean;
  noMirror?: boolean;
  noTransform?: boolean;
  noRepublish?: boolean;
}

function bool(cmd: Command, name: string, desc: string, negatable = true): void {
  cmd.option(`--${name}`, desc);
  if (negatable) cmd.option(`--no-${name}`, `Disable --${name}`);
}

/** The flags shared by `stream add` and `stream edit`. */
export function addStreamFlags(cmd: Command, edit: boolean): Command {
  cmd
    .option("--subjects <subjects>", "Subjects that are consumed by the stream (repeatable, comma separated)", collect)
    .option("--description <text>", "Sets a contextual description for the stream")
    .addOption(new Option("--storage <type>", "Storage backend to use (file, memory)").choices(["file", "f", "memory", "m"]))
    .addOption(new Option("--compression <alg>", "Compression algorithm to use (file storage only)").choices(["none", "s2"]))
    .option("--replicas <n>", "When clustered, how many replicas of the data to create")
    .option("--tag <tag>", "Place the stream on servers that has specific tags (pass multiple times)", collect)
    .addOption(new Option("--tags <tag>", "Backward compatibility only, use --tag").hideHelp().argParser(collect))
    .option("--cluster <name>", "Place the stream on a specific cluster");
  bool(cmd, "ack", "Acknowledge publishes (default true)");
  cmd
    .addOption(new Option("--retention <policy>", "Defines a retention policy (limits, interest, work)").choices(["limits", "interest", "workq", "work"]))
    .addOption(new Option("--discard <policy>", "Defines the discard policy (new, old)").choices(["new", "old"]));
  bool(cmd, "discard-per-subject", "Sets the 'new' discard policy and applies it to every subject in the stream");
  if (!edit) cmd.option("--first-sequence <seq>", "Sets the starting sequence");
  cmd
    .option("--max-age <duration>", "Maximum age of messages to keep")
    .option("--max-bytes <bytes>", "Maximum bytes to keep")
    .option("--max-consumers <n>", "Maximum number of consumers to allow (default -1)")
    .option("--max-msg-size <bytes>", "Maximum size any 1 message may be")
    .option("--max-msgs <n>", "Maximum amount of messages to keep (default 0)")
    .option("--max-msgs-per-subject <n>", "Maximum amount of messages to keep per subject (default 0)")
    .option("--dupe-window <duration>", "Duration of the duplicate message tracking window")
    .option("--mirror <stream>", "Completely mirror another stream");
  if (edit) cmd.option("--no-mirror", "Removes current mirror configuration");
  cmd.option("--source <stream>", "Source data from other streams, merging into this one", collect);
  bool(cmd, "allow-batch", "Allow atomic batch publishing");
  bool(cmd, "allow-fast", "Allow fast batch publishing");
  bool(cmd, "allow-counter", "Configures the stream as a distributed counter", false);
  bool(cmd, "allow-rollup", "Allows roll-ups to be done by publishing messages with special headers");
  bool(cmd, "deny-delete", "Deny messages from being deleted via the API");
  bool(cmd, "deny-purge", "Deny entire stream or subject purges via the API");
  bool(cmd, "allow-direct", "Allows fast, direct, access to stream data via the direct get API (default true)");
  bool(cmd, "allow-mirror-direct", "Allows fast, direct, access to stream data via the direct get API on mirrors");
  bool(cmd, "allow-msg-ttl", "Allows per-message TTL handling", false);
  bool(cmd, "allow-schedules", "Allows message schedules");
  cmd
    .option("--subject-del-markers-ttl <duration>", "How long delete markers should persist in the stream")
    .option("--transform-source <source>", "Stream subject transform source")
    .option("--transform-destination <dest>", "Stream subject transform destination");
  if (edit) cmd.option("--no-transform", "Removes current subject transform configuration");
  cmd
    .option("--metadata <key=value>", "Adds metadata to the stream (repeatable)", collect)
    .option("--republish-source <source>", "Republish messages to --republish-destination")
    .option("--republish-destination <dest>", "Republish destination for messages in --republish-source")
    .option("--republish-headers", "Republish only message headers, no bodies");
  if (edit) cmd.option("--no-republish", "Removes current republish configuration");
  if (!edit) {
    cmd
      .option("--limit-consumer-inactive <duration>", "The maximum Consumer inactive threshold the stream allows")
      .option("--limit-consumer-max-pending <n>", "The maximum Consumer Ack Pending the stream Allows")
      .addOption(new Option("--persist-mode <mode>", "Configures the persistence mode").choices(["default", "async"]));
  }
  cmd.option("-j, --json", "Produce JSON output");
  return cmd;
}

function retentionOf(s: string): string {
  const v = s.toLowerCase().replace(/\s+/g, "");
  if (v === "limits") return "limits";
  if (v === "interest") return "interest";
  if (v === "workq" || v === "work" || v === "workqueue") return "workqueue";
  throw new CliError(`invalid retention policy "${s}"`);
}

function storageOf(s: string): string {
  const v = s.toLowerCase();
  if (v === "file" || v === "f") return "file";
  if (v === "memory" || v === "m") return "memory";
  throw new CliError(`invalid storage "${s}"`);
}

export function loadConfigFile(file: string): WireStreamConfig {
  let raw: string;
  try {
    raw = fs.readFileSync(file, "utf8");
  } catch (e) {
    throw new CliError(`could not read ${file}: ${(e as Error).message}`);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch (e) {
    throw new CliError(`invalid JSON in ${file}: ${(e as Error).message}`);
  }
  if (typeof parsed !== "object" || parsed === null) throw new CliError(`${file} does not hold a stream configuration`);
  // natscli accepts both a bare config and a saved StreamInfo-like {config:{...}}.
  const obj = parsed as Record<string, unknown>;
  const cfg = (typeof obj["config"] === "object" && obj["config"] !== null ? obj["config"] : obj) as Record<string, unknown>;
  return { ...cfg, name: typeof cfg["name"] === "string" ? cfg["name"] : "" };
}

function dropReservedMetadata(md: unknown): Record<string, string> | undefined {
  if (typeof md !== "object" || md === null) return undefined;
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(md as Record<string, string>)) if (!k.startsWith("_nats.")) out[k] = v;
  return Object.keys(out).length > 0 ? out : undefined;
}

function sourceOf(spec: string): Record<string, unknown> {
  if (spec.trim().startsWith("{")) {
    try {
      return JSON.parse(spec) as Record<string, unknown>;
    } catch (e) {
      throw new CliError(`invalid source/mirror JSON: ${(e as Error).message}`);
    }
  }
  return { name: spec };
}

/** Builds a new stream's configuration from flags, a --config file and, on a terminal, prompts. */
export async function buildStreamConfig(name: string | undefined, o: StreamFlags): Promise<WireStreamConfig> {
  if (o.tags !== undefined) o.tag = [...(o.tag ?? []), ...o.tags];
  const ask = interactive(o.defaults === true);
  if (o.config !== undefined) {
    const cfg = loadConfigFile(o.config);
    if (name !== undefined) cfg.name = name;
    const md = dropReservedMetadata(cfg["metadata"]);
    if (md === undefined) delete cfg["metadata"];
    else cfg["metadata"] = md;
    const subjects = splitList(o.subjects);
    if (subjects.length > 0) cfg["subjects"] = subjects;
    if (o.description !== undefined) cfg["description"] = o.description;
    if (o.replicas !== undefined) cfg["num_replicas"] = parseIntStrict(o.replicas, "replicas");
    if (o.cluster !== undefined || o.tag !== undefined) cfg["placement"] = { cluster: o.cluster ?? "", tags: o.tag ?? [] };
    if (cfg.name === "") throw new CliError("the stream name is required, pass it as an argument or in the configuration file");
    return cfg;
  }

  let stream = name ?? "";
  if (stream === "") {
    if (!ask) throw new CliError("Stream Name is required, pass it as an argument");
    stream = await askInput("Stream Name", { required: true });
  }

  let subjects = splitList(o.subjects);
  if (o.mirror === undefined && (o.source ?? []).length === 0 && subjects.length === 0) {
    if (!ask) throw new CliError("Subjects are required, pass them with --subjects");
    subjects = splitList(await askInput("Subjects", { required: true }));
  }
  if (o.mirror !== undefined && subjects.length > 0) throw new CliError("mirrors cannot listen for messages on subjects");

  const pick = async (value: string | undefined, prompt: () => Promise<string>, dflt: string): Promise<string> =>
    value !== undefined ? value : ask ? prompt() : dflt;

  const storage = storageOf(await pick(o.storage, () => askSelect("Storage", ["file", "memory"], "file"), "file"));
  const replicas = parseIntStrict(await pick(o.replicas, () => askInput("Replication", { defaultValue: "1" }), "1"), "replicas");
  if (replicas <= 0) throw new CliError("replicas should be >= 1");
  const retention = retentionOf(
    await pick(o.retention, () => askSelect("Retention Policy", ["Limits", "Interest", "Work Queue"], "Limits"), "limits"),
  );
  const discard = (
    await pick(o.discardPerSubject === true ? "new" : o.discard, () => askSelect("Discard Policy", ["New", "Old"], "Old"), "old")
  ).toLowerCase();

  let maxMsgs = parseIntStrict(
    await pick(o.maxMsgs, () => askInput("Stream Messages Limit", { defaultValue: "-1" }), "-1"),
    "max-msgs",
  );
  if (maxMsgs <= 0) maxMsgs = -1;
  let maxPer = parseIntStrict(
    await pick(o.maxMsgsPerSubject, () => askInput("Per Subject Messages Limit", { defaultValue: "-1" }), "-1"),
    "max-msgs-per-subject",
  );
  if (maxPer <= 0) maxPer = -1;
  const maxBytes = parseBytes(await pick(o.maxBytes, () => askInput("Total Stream Size", { defaultValue: "-1" }), "-1"), "max-bytes");
  const ageText = await pick(o.maxAge, () => askInput("Message TTL", { defaultValue: "-1" }), "-1");
  const maxAge = ageText === "-1" ? 0 : parseDuration(ageText, "maximum age limit");
  const maxMsgSize = parseBytes(
    await pick(o.maxMsgSize, () => askInput("Max Message Size", { defaultValue: "-1" }), "-1"),
    "max-msg-size",
  );
  if (maxMsgSize > 2147483647) throw new CliError("max value size is too big maximum is 2,147,483,647");

  let dupe = 0;
  if (o.mirror === undefined) {
    const dflt = maxAge > 0 && maxAge < 120e9 ? `${maxAge / 1e9}s` : "2m";
    dupe = parseDuration(
      await pick(o.dupeWindow, () => askInput("Duplicate tracking time window", { defaultValue: dflt }), dflt),
      "duplicate window",
    );
  } else if (o.dupeWindow !== undefined) {
    dupe = parseDuration(o.dupeWindow, "duplicate window");
  }

  const yes = async (value: boolean | undefined, q: string, dflt: boolean): Promise<boolean> =>
    value !== undefined ? value : ask ? askConfirm(q, dflt) : dflt;
  const allowRollup = await yes(o.allowRollup, "Allow message Roll-ups", false);
  const denyDelete = !(await yes(o.denyDelete === undefined ? undefined : !o.denyDelete, "Allow message deletion", true));
  const denyPurge = !(await yes(o.denyPurge === undefined ? undefined : !o.denyPurge, "Allow purging subjects or the entire stream", true));

  const cfg: WireStreamConfig = {
    name: stream,
    subjects,
    retention,
    max_consumers: o.maxConsumers !== undefined ? parseIntStrict(o.maxConsumers, "max-consumers") : -1,
    max_msgs: maxMsgs,
    max_bytes: maxBytes,
    max_age: maxAge,
    max_msgs_per_subject: maxPer,
    max_msg_size: maxMsgSize,
    discard,
    storage,
    num_replicas: replicas,
    duplicate_window: dupe,
    no_ack: o.ack === false,
    allow_rollup_hdrs: allowRollup,
    deny_delete: denyDelete,
    deny_purge: denyPurge,
    allow_direct: o.allowDirect !== false,
    mirror_direct: o.allowMirrorDirect === true,
  };
  if (o.description !== undefined) cfg["description"] = o.description;
  if (o.compression !== undefined && o.compression !== "none") cfg["compression"] = o.compression;
  if (o.firstSequence !== undefined) cfg["first_seq"] = parseIntStrict(o.firstSequence, "first-sequence");
  if (o.discardPerSubject === true) cfg["discard_new_per_subject"] = true;
  if (o.allowMsgTtl === true) cfg["allow_msg_ttl"] = true;
  if (o.subjectDelMarkersTtl !== undefined) cfg["subject_delete_marker_ttl"] = parseDuration(o.subjectDelMarkersTtl);
  if (o.allowBatch === true) cfg["allow_atomic"] = true;
  if (o.allowFast === true) cfg["allow_batched"] = true;
  if (o.allowCounter === true) cfg["allow_msg_counter"] = true;
  if (o.allowSchedules === true) cfg["allow_msg_schedules"] = true;
  if (o.persistMode === "async") cfg["persist_mode"] = "async";
  const md = parseKeyValues(o.metadata);
  if (md !== undefined) cfg["metadata"] = dropReservedMetadata(md) ?? {};
  if (o.cluster !== undefined || (o.tag ?? []).length > 0) cfg["placement"] = { cluster: o.cluster ?? "", tags: o.tag ?? [] };
  if (o.mirror !== undefined) cfg["mirror"] = sourceOf(o.mirror);
  if ((o.source ?? []).length > 0) cfg["sources"] = (o.source ?? []).map(sourceOf);
  if (o.limitConsumerInactive !== undefined || o.limitConsumerMaxPending !== undefined) {
    const limits: Record<string, number> = {};
    if (o.limitConsumerInactive !== undefined) limits["inactive_threshold"] = parseDuration(o.limitConsumerInactive);
    if (o.limitConsumerMaxPending !== undefined) limits["max_ack_pending"] = parseIntStrict(o.limitConsumerMaxPending, "limit-consumer-max-pending");
    cfg["consumer_limits"] = limits;
  }
  applyRepublishTransform(cfg, o);
  return cfg;
}

function applyRepublishTransform(cfg: WireStreamConfig, o: StreamFlags): void {
  if ((o.republishSource === undefined) !== (o.republishDestination === undefined)) {
    throw new CliError("both --republish-source and --republish-destination are required");
  }
  if (o.republishSource !== undefined && o.republishDestination !== undefined) {
    cfg["republish"] = { src: o.republishSource, dest: o.republishDestination, headers_only: o.republishHeaders === true };
  }
  if ((o.transformSource === undefined) !== (o.transformDestination === undefined)) {
    throw new CliError("both --transform-source and --transform-destination are required");
  }
  if (o.transformSource !== undefined && o.transformDestination !== undefined) {
    cfg["subject_transform"] = { src: o.transformSource, dest: o.transformDestination };
  }
}

/** `stream edit`: the current configuration with only the flags the user set applied. */
export function editStreamConfig(current: WireStreamConfig, o: StreamFlags): WireStreamConfig {
  if (o.tags !== undefined) o.tag = [...(o.tag ?? []), ...o.tags];
  if (o.config !== undefined) {
    const cfg = loadConfigFile(o.config);
    cfg.name = current.name;
    return cfg;
  }
  const cfg: WireStreamConfig = { ...current };
  const subjects = splitList(o.subjects);
  if (subjects.length > 0) cfg["subjects"] = subjects;
  if (o.description !== undefined) cfg["description"] = o.description;
  if (o.storage !== undefined) cfg["storage"] = storageOf(o.storage);
  if (o.compression !== undefined) cfg["compression"] = o.compression;
  if (o.replicas !== undefined) cfg["num_replicas"] = parseIntStrict(o.replicas, "replicas");
  if (o.ack !== undefined) cfg["no_ack"] = !o.ack;
  if (o.retention !== undefined) cfg["retention"] = retentionOf(o.retention);
  if (o.discard !== undefined) cfg["discard"] = o.discard;
  if (o.discardPerSubject !== undefined) {
    cfg["discard_new_per_subject"] = o.discardPerSubject;
    if (o.discardPerSubject) cfg["discard"] = "new";
  }
  if (o.maxAge !== undefined) cfg["max_age"] = o.maxAge === "-1" ? 0 : parseDuration(o.maxAge);
  if (o.maxBytes !== undefined) cfg["max_bytes"] = parseBytes(o.maxBytes);
  if (o.maxConsumers !== undefined) cfg["max_consumers"] = parseIntStrict(o.maxConsumers, "max-consumers");
  if (o.maxMsgSize !== undefined) cfg["max_msg_size"] = parseBytes(o.maxMsgSize);
  if (o.maxMsgs !== undefined) cfg["max_msgs"] = Math.max(-1, parseIntStrict(o.maxMsgs, "max-msgs")) || -1;
  if (o.maxMsgsPerSubject !== undefined) cfg["max_msgs_per_subject"] = Math.max(-1, parseIntStrict(o.maxMsgsPerSubject, "max-msgs-per-subject")) || -1;
  if (o.dupeWindow !== undefined) cfg["duplicate_window"] = parseDuration(o.dupeWindow);
  if (o.allowRollup !== undefined) cfg["allow_rollup_hdrs"] = o.allowRollup;
  if (o.denyDelete !== undefined) cfg["deny_delete"] = o.denyDelete;
  if (o.denyPurge !== undefined) cfg["deny_purge"] = o.denyPurge;
  if (o.allowDirect !== undefined) cfg["allow_direct"] = o.allowDirect;
  if (o.allowMirrorDirect !== undefined) cfg["mirror_direct"] = o.allowMirrorDirect;
  if (o.allowMsgTtl !== undefined) cfg["allow_msg_ttl"] = o.allowMsgTtl;
  if (o.allowBatch !== undefined) cfg["allow_atomic"] = o.allowBatch;
  if (o.allowFast !== undefined) cfg["allow_batched"] = o.allowFast;
  if (o.allowCounter !== undefined) cfg["allow_msg_counter"] = o.allowCounter;
  if (o.allowSchedules !== undefined) cfg["allow_msg_schedules"] = o.allowSchedules;
  if (o.subjectDelMarkersTtl !== undefined) cfg["subject_delete_marker_ttl"] = parseDuration(o.subjectDelMarkersTtl);
  const md = parseKeyValues(o.metadata);
  if (md !== undefined) cfg["metadata"] = md;
  if (o.cluster !== undefined || o.tag !== undefined) cfg["placement"] = { cluster: o.cluster ?? "", tags: o.tag ?? [] };
  // commander turns --no-mirror into mirror === false.
  if ((o.mirror as unknown) === false) delete cfg["mirror"];
  else if (o.mirror !== undefined) cfg["mirror"] = sourceOf(o.mirror);
  if (o.source !== undefined) cfg["sources"] = o.source.map(sourceOf);
  if ((o as { transform?: boolean }).transform === false) delete cfg["subject_transform"];
  if ((o as { republish?: boolean }).republish === false) delete cfg["republish"];
  applyRepublishTransform(cfg, o);
  return cfg;
}

/** Field-by-field differences, for the edit confirmation and --dry-run. */
export function configDiff(a: Record<string, unknown>, b: Record<string, unknown>): string[] {
  const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
  const lines: string[] = [];
  for (const k of [...keys].sort()) {
    const av = JSON.stringify(a[k]);
    const bv = JSON.stringify(b[k]);
    if (av !== bv) lines.push(`  ${k}: ${av ?? "(unset)"} -> ${bv ?? "(unset)"}`);
  }
  return lines;
}

const RETENTION_NAME: Record<string, string> = { limits: "Limits", interest: "Interest", workqueue: "WorkQueue" };
const STORAGE_NAME: Record<string, string> = { file: "File", memory: "Memory" };
const DISCARD_NAME: Record<string, string> = { old: "Old", new: "New" };

function num(v: unknown, dflt = 0): number {
  return typeof v === "number" ? v : dflt;
}
function str(v: unknown): string {
  return typeof v === "string" ? v : "";
}

function renderSource(s: Record<string, unknown> | undefined): string {
  if (s === undefined) return "";
  const parts = [str(s["name"])];
  if (num(s["opt_start_seq"]) > 0) parts.push(`Start Seq: ${num(s["opt_start_seq"])}`);
  if (typeof s["opt_start_time"] === "string") parts.push(`Start Time: ${s["opt_start_time"]}`);
  const ext = s["external"] as Record<string, unknown> | undefined;
  if (ext !== undefined) {
    if (str(ext["api"]) !== "") parts.push(`API Prefix: ${str(ext["api"])}`);
    if (str(ext["deliver"]) !== "") parts.push(`Delivery Prefix: ${str(ext["deliver"])}`);
  }
  return parts.join(", ");
}

export function showStreamConfig(cols: Columns, cfg: Record<string, unknown>): void {
  cols.rowIfNotEmpty("Description", str(cfg["description"]));
  const subjects = (cfg["subjects"] as string[] | undefined) ?? [];
  cols.rowIf("Subjects", subjects, subjects.length > 0);
  cols.row("Replicas", num(cfg["num_replicas"], 1));
  cols.rowIf("Sealed", true, cfg["sealed"] === true);
  cols.row("Storage", STORAGE_NAME[str(cfg["storage"])] ?? str(cfg["storage"]));
  const comp = str(cfg["compression"]);
  cols.rowIf("Compression", comp === "s2" ? "S2 Compression" : comp, comp !== "" && comp !== "none");
  if (num(cfg["first_seq"]) > 0) cols.row("First Sequence", num(cfg["first_seq"]));
  const placement = cfg["placement"] as { cluster?: string; tags?: string[] } | undefined;
  if (placement !== undefined) {
    cols.rowIfNotEmpty("Placement Cluster", placement.cluster);
    cols.rowIf("Placement Tags", placement.tags ?? [], (placement.tags ?? []).length > 0);
  }
  cols.title("Options");
  const st = cfg["subject_transform"] as { src?: string; dest?: string } | undefined;
  if (st !== undefined && str(st.dest) !== "") cols.row("Subject Transform", `${st.src === undefined || st.src === "" ? ">" : st.src} to ${st.dest}`);
  const rp = cfg["republish"] as { src?: string; dest?: string; headers_only?: boolean } | undefined;
  if (rp !== undefined) cols.row(rp.headers_only === true ? "Republishing Headers" : "Republishing", `${str(rp.src)} to ${str(rp.dest)}`);
  cols.row("Retention", RETENTION_NAME[str(cfg["retention"])] ?? str(cfg["retention"]));
  cols.row("Acknowledgments", cfg["no_ack"] !== true);
  cols.row("Discard Policy", cfg["discard_new_per_subject"] === true ? "New Per Subject" : (DISCARD_NAME[str(cfg["discard"])] ?? "Old"));
  cols.row("Duplicate Window", humanDuration(num(cfg["duplicate_window"])));
  cols.rowIf("Direct Get", true, cfg["allow_direct"] === true);
  cols.rowIf("Mirror Direct Get", true, cfg["mirror_direct"] === true);
  cols.row("Allows Atomic Batch Publish", cfg["allow_atomic"] === true);
  cols.row("Allows Fast Batch Publish", cfg["allow_batched"] === true);
  cols.row("Allows Counters", cfg["allow_msg_counter"] === true);
  cols.row("Allows Msg Delete", cfg["deny_delete"] !== true);
  cols.row("Allows Per-Message TTL", cfg["allow_msg_ttl"] === true);
  cols.row("Allows Purge", cfg["deny_purge"] !== true);
  cols.row("Allows Schedules", cfg["allow_msg_schedules"] === true);
  if (cfg["allow_msg_ttl"] === true && num(cfg["subject_delete_marker_ttl"]) > 0) {
    cols.row("Subject Delete Markers TTL", humanDuration(num(cfg["subject_delete_marker_ttl"])));
  }
  cols.row("Allows Rollups", cfg["allow_rollup_hdrs"] === true);
  cols.title("Limits");
  const maxMsgs = num(cfg["max_msgs"], -1);
  cols.row("Maximum Messages", maxMsgs === -1 ? "unlimited" : maxMsgs);
  const maxPer = num(cfg["max_msgs_per_subject"], -1);
  cols.row("Maximum Per Subject", maxPer <= 0 ? "unlimited" : maxPer);
  const maxBytes = num(cfg["max_bytes"], -1);
  cols.row("Maximum Bytes", maxBytes === -1 ? "unlimited" : ibytes(maxBytes));
  const maxAge = num(cfg["max_age"]);
  cols.row("Maximum Age", maxAge <= 0 ? "unlimited" : humanDuration(maxAge));
  const maxSize = num(cfg["max_msg_size"], -1);
  cols.row("Maximum Message Size", maxSize === -1 ? "unlimited" : ibytes(maxSize));
  const maxCons = num(cfg["max_consumers"], -1);
  cols.row("Maximum Consumers", maxCons === -1 ? "unlimited" : maxCons);
  const cl = cfg["consumer_limits"] as { inactive_threshold?: number; max_ack_pending?: number } | undefined;
  if (cl !== undefined) {
    cols.rowIf("Consumer Inactive Threshold", humanDuration(num(cl.inactive_threshold)), num(cl.inactive_threshold) > 0);
    cols.rowIf("Consumer Max Ack Pending", num(cl.max_ack_pending), num(cl.max_ack_pending) > 0);
  }
  const md = dropReservedMetadata(cfg["metadata"]);
  if (md !== undefined) {
    cols.title("Metadata");
    for (const k of Object.keys(md).sort()) cols.row(k, md[k]);
  }
  const mirror = cfg["mirror"] as Record<string, unknown> | undefined;
  const sources = (cfg["sources"] as Array<Record<string, unknown>> | undefined) ?? [];
  if (mirror !== undefined || sources.length > 0) cols.title("Replication");
  cols.rowIfNotEmpty("Mirror", renderSource(mirror));
  [...sources]
    .sort((a, b) => str(a["name"]).localeCompare(str(b["name"])))
    .forEach((s, i) => cols.row(i === 0 ? "Sources" : "", renderSource(s)));
  cols.line();
}

export interface WireStreamInfo {
  config: Record<string, unknown>;
  created: string;
  state: Record<string, unknown>;
  cluster?: { name?: string; leader?: string; replicas?: Array<{ name: string; current: boolean; active: number; lag?: number }> };
  mirror?: Record<string, unknown>;
  sources?: Array<Record<string, unknown>>;
  ts?: string;
}

function showSourceInfo(cols: Columns, s: Record<string, unknown>): void {
  cols.row("Stream Name", str(s["name"]));
  if (str(s["filter_subject"]) !== "") cols.row("Subject Filter", str(s["filter_subject"]));
  cols.row("Lag", num(s["lag"]));
  const active = num(s["active"], -1);
  cols.row("Last Seen", active > 0 ? humanDuration(active) : "never");
  const err = s["error"] as { description?: string } | undefined;
  if (err !== undefined) cols.row("Error", str(err.description));
}

export function renderStreamInfo(info: WireStreamInfo, stateOnly: boolean): string {
  const name = str(info.config["name"]);
  const cols = new Columns(`${stateOnly ? "State" : "Information"} for Stream ${name} created ${fmtTime(info.created)}`);
  if (!stateOnly) showStreamConfig(cols, info.config);
  if (info.cluster?.name !== undefined && info.cluster.name !== "") {
    cols.title("Cluster Information");
    cols.row("Name", info.cluster.name);
    cols.row("Leader", info.cluster.leader ?? "");
    for (const r of info.cluster.replicas ?? []) {
      cols.row("Replica", [r.name, r.current ? "current" : "outdated", r.active > 0 ? `seen ${humanDuration(r.active)} ago` : "not seen"]);
    }
    cols.line();
  }
  if (info.mirror !== undefined) {
    cols.title("Mirror Information");
    showSourceInfo(cols, info.mirror);
  }
  if ((info.sources ?? []).length > 0) {
    cols.title("Source Information");
    for (const s of info.sources ?? []) {
      showSourceInfo(cols, s);
      cols.line();
    }
  }
  const st = info.state;
  cols.title("State");
  cols.row("Messages", num(st["messages"]));
  cols.row("Bytes", ibytes(num(st["bytes"])));
  const firstTs = str(st["first_ts"]);
  const lastTs = str(st["last_ts"]);
  cols.row("First Sequence", isZeroTime(firstTs) ? num(st["first_seq"]) : `${num(st["first_seq"]).toLocaleString("en-US")} @ ${fmtTime(firstTs)}`);
  cols.row("Last Sequence", isZeroTime(lastTs) ? num(st["last_seq"]) : `${num(st["last_seq"]).toLocaleString("en-US")} @ ${fmtTime(lastTs)}`);
  const deleted = st["deleted"] as number[] | undefined;
  if (deleted !== undefined && deleted.length > 0) cols.row("Deleted Messages", deleted.length);
  else if (num(st["num_deleted"]) > 0) cols.row("Deleted Messages", num(st["num_deleted"]));
  cols.row("Active Consumers", num(st["consumer_count"]));
  if (num(st["num_subjects"]) > 0) cols.row("Number of Subjects", num(st["num_subjects"]));
  return cols.render();
}
