// `consumer add` / `consumer edit` flags (natscli's names and defaults), the prompts for values
// not given, and the "Information for Consumer ..." rendering.
import * as fs from "node:fs";
import { Option, type Command } from "commander";
import { CliError, Columns, f, fmtTime, goDuration, humanDuration, ibytes } from "./output.js";
import { collect, parseDuration, parseIntStrict, parseKeyValues, splitList } from "./parse.js";
import { askConfirm, askInput, askSelect, interactive } from "./prompt.js";

export type WireConsumerConfig = Record<string, unknown>;

export interface ConsumerFlags {
  ack?: string;
  bps?: string;
  backoff?: string;
  backoffSteps: string;
  backoffMin: string;
  backoffMax: string;
  deliver?: string;
  deliverGroup?: string;
  description?: string;
  ephemeral?: boolean;
  filter?: string[];
  flowControl?: boolean;
  heartbeat?: string;
  headersOnly?: boolean;
  maxDeliver?: string;
  maxPending?: string;
  maxOutstanding?: string;
  maxWaiting?: string;
  maxPullBatch?: string;
  maxPullExpire?: string;
  maxPullBytes?: string;
  pull?: boolean;
  replay?: string;
  sample?: string;
  target?: string;
  wait?: string;
  inactiveThreshold?: string;
  memory?: boolean;
  replicas?: string;
  metadata?: string[];
  pause?: string;
  pinnedGroups?: string[];
  pinnedTtl?: string;
  overflowGroups?: string[];
  prioritizedGroups?: string[];
  config?: string;
  defaults?: boolean;
  json?: boolean;
  force?: boolean;
  validate?: boolean;
  output?: string;
  dryRun?: boolean;
}

export function addConsumerFlags(cmd: Command, edit: boolean): Command {
  if (!edit) {
    cmd.addOption(new Option("--ack <policy>", "Acknowledgment policy (none, all, explicit)").choices(["none", "all", "explicit"]));
    cmd.option("--bps <bits>", "Restrict message delivery to a certain bit per second");
  }
  cmd
    .addOption(new Option("--backoff <mode>", "Creates a consumer backoff policy using a specific pre-written algorithm (none, linear)").choices(["linear", "none"]))
    .option("--backoff-steps <n>", "Number of steps to use when creating the backoff policy", "10")
    .option("--backoff-min <duration>", "The shortest backoff period that will be generated", "1m")
    .option("--backoff-max <duration>", "The longest backoff period that will be generated", "20m");
  if (!edit) {
    cmd
      .option("--deliver <policy>", "Start policy (all, new, last, subject, 1h, msg sequence)")
      .option("--deliver-group <group>", "Delivers push messages only to subscriptions matching this group");
  }
  cmd.option("--description <text>", "Sets a contextual description for the consumer");
  if (!edit) cmd.option("--ephemeral", "Create an ephemeral consumer");
  cmd.option("--filter <subjects>", "Filter Stream by subjects (repeatable, comma separated)", collect);
  if (!edit) {
    cmd
      .option("--flow-control", "Enable Push consumer flow control")
      .option("--no-flow-control", "Disable Push consumer flow control")
      .option("--heartbeat <duration>", "Enable idle Push consumer heartbeats (-1 disable)");
  }
  cmd
    .option("--headers-only", "Deliver only headers and no bodies")
    .option("--no-headers-only", "Deliver headers and bodies")
    .option("--max-deliver <tries>", "Maximum amount of times a message will be delivered")
    .option("--max-pending <n>", "Maximum pending Acks before consumers are paused")
    .addOption(new Option("--max-outstanding <n>", "Maximum pending Acks before consumers stop delivering messages").hideHelp());
  if (!edit) cmd.option("--max-waiting <pulls>", "Maximum number of outstanding pulls allowed");
  cmd
    .option("--max-pull-batch <n>", "Maximum size batch size for a pull request to accept")
    .option("--max-pull-expire <duration>", "Maximum expire duration for a pull request to accept")
    .option("--max-pull-bytes <bytes>", "Maximum max bytes for a pull request to accept");
  if (!edit) {
    cmd
      .option("--pull", "Deliver messages in 'pull' mode")
      .addOption(new Option("--replay <policy>", "Replay Policy (instant, original)").choices(["instant", "original"]));
  }
  cmd
    .option("--sample <percent>", "Percentage of requests to sample for monitoring purposes")
    .option("--target <subject>", "Push based delivery target subject")
    .option("--wait <duration>", "Acknowledgment waiting time")
    .option("--inactive-threshold <duration>", "How long to allow an ephemeral consumer to be idle before removing it");
  if (!edit) cmd.option("--memory", "Force the consumer state to be stored in memory rather than inherit from the stream");
  cmd.option("--replicas <n>", "Sets a custom replica count rather than inherit from the stream")
    .option("--metadata <key=value>", "Adds metadata to the consumer (repeatable)", collect);
  if (!edit) {
    cmd
      .option("--pause <time>", "Pause the consumer for a duration after start or until a specific timestamp")
      .option("--pinned-groups <groups>", "Create a Pinned Client consumer based on these groups", collect)
      .option("--pinned-ttl <duration>", "The time to allow for a client to pull before losing the pinned status")
      .option("--overflow-groups <groups>", "Create a Overflow consumer based on these groups", collect)
      .option("--prioritized-groups <groups>", "Create a Prioritized consumer based on these groups", collect);
  }
  cmd.option("-j, --json", "Produce JSON output");
  return cmd;
}

/** "all", "new", "last", "subject", a sequence number or a duration ago. */
export function applyStartPolicy(cfg: WireConsumerConfig, policy: string): void {
  if (policy === "all") cfg["deliver_policy"] = "all";
  else if (policy === "last") cfg["deliver_policy"] = "last";
  else if (policy === "new" || policy === "next") cfg["deliver_policy"] = "new";
  else if (policy === "subject" || policy === "last_per_subject") cfg["deliver_policy"] = "last_per_subject";
  else if (/^\d+$/.test(policy)) {
    cfg["deliver_policy"] = "by_start_sequence";
    cfg["opt_start_seq"] = Number(policy);
  } else {
    const d = parseDuration(policy, "starting delta");
    cfg["deliver_policy"] = "by_start_time";
    cfg["opt_start_time"] = new Date(Date.now() - d / 1e6).toISOString();
  }
}

export function parsePauseUntil(until: string): string {
  if (/^\d/.test(until) && /[-:]/.test(until)) {
    const t = new Date(until.includes("T") || until.endsWith("Z") ? until : until.replace(" ", "T"));
    if (Number.isNaN(t.getTime())) throw new CliError(`invalid pause time "${until}"`);
    return t.toISOString();
  }
  return new Date(Date.now() + parseDuration(until, "pause duration") / 1e6).toISOString();
}

function linearBackoff(steps: number, minNs: number, maxNs: number): number[] {
  if (steps < 1) throw new CliError("backoff steps must be at least 1");
  if (steps === 1) return [minNs];
  const stepNs = (maxNs - minNs) / (steps - 1);
  return Array.from({ length: steps }, (_, i) => Math.round(minNs + i * stepNs));
}

export function loadConsumerConfigFile(file: string): WireConsumerConfig {
  let parsed: unknown;
  try {
    parsed = JSON.parse(fs.readFileSync(file, "utf8"));
  } catch (e) {
    throw new CliError(`could not read consumer configuration ${file}: ${(e as Error).message}`);
  }
  if (typeof parsed !== "object" || parsed === null) throw new CliError(`${file} does not hold a consumer configuration`);
  const obj = parsed as Record<string, unknown>;
  return (typeof obj["config"] === "object" && obj["config"] !== null ? obj["config"] : obj) as WireConsumerConfig;
}

/** Builds a new consumer's configuration following natscli's question order and defaults. */
export async function buildConsumerConfig(name: string | undefined, o: ConsumerFlags): Promise<{ name: string; cfg: WireConsumerConfig }> {
  const ask = interactive(o.defaults === true);
  if (o.maxPending === undefined && o.maxOutstanding !== undefined) o.maxPending = o.maxOutstanding;
  if (o.config !== undefined) {
    const cfg = loadConsumerConfigFile(o.config);
    if (name !== undefined) {
      if (typeof cfg["durable_name"] === "string" && cfg["durable_name"] !== "") cfg["durable_name"] = name;
      cfg["name"] = name;
    }
    if (o.target !== undefined && typeof cfg["deliver_subject"] === "string") cfg["deliver_subject"] = o.target;
    const n = String(cfg["name"] ?? cfg["durable_name"] ?? "");
    return { name: n, cfg };
  }
  const cfg: WireConsumerConfig = { ack_policy: "explicit", replay_policy: "instant" };
  if (o.description !== undefined) cfg["description"] = o.description;
  let consumer = name ?? "";
  if (consumer === "" && o.ephemeral !== true) {
    if (!ask) throw new CliError("Consumer name is required, pass it as an argument");
    consumer = await askInput("Consumer name", { required: true });
  }
  if (o.ephemeral === true) {
    if (consumer !== "") cfg["name"] = consumer;
  } else {
    cfg["durable_name"] = consumer;
  }
  if (/[.*>]/.test(consumer)) throw new CliError("durable name can not contain '.', '*', '>'");

  let target = o.target ?? "";
  if (o.pull !== true && o.target === undefined && ask) {
    target = await askInput("Delivery target (empty for Pull Consumers)");
  }
  if (target !== "") cfg["deliver_subject"] = target;
  const push = target !== "";

  if (push) {
    let group = o.deliverGroup;
    if (group === undefined && ask) group = await askInput("Delivery Queue Group");
    if (group !== undefined && group !== "") cfg["deliver_group"] = group;
  }
  const start = o.deliver ?? (ask ? await askInput("Start policy (all, new, last, subject, 1h, msg sequence)", { defaultValue: "all", required: true }) : "all");
  applyStartPolicy(cfg, start);

  const ackDefault = push ? "none" : "explicit";
  const ack = o.ack ?? (ask ? await askSelect("Acknowledgment policy", ["explicit", "all", "none"], ackDefault) : ackDefault);
  cfg["ack_policy"] = ack;
  const replay = o.replay ?? (ask ? await askSelect("Replay policy", ["instant", "original"], "instant") : "instant");
  cfg["replay_policy"] = replay;
  if (ack === "none") cfg["max_deliver"] = -1;
  if (o.wait !== undefined && o.wait !== "-1s") {
    const w = parseDuration(o.wait, "ack wait");
    if (w > 0) cfg["ack_wait"] = w;
  }
  if (o.sample !== undefined) {
    const pct = parseIntStrict(o.sample, "sample");
    if (pct > 100) throw new CliError("sample percent is not between 0 and 100");
    if (pct > 0) cfg["sample_freq"] = String(pct);
  }

  let filters = splitList(o.filter);
  if (filters.length === 0 && ask) filters = splitList(await askInput("Filter Stream by subjects (blank for all)"));
  if (filters.length === 1) cfg["filter_subject"] = filters[0];
  else if (filters.length > 1) cfg["filter_subjects"] = filters;
  if (filters.length === 0 && cfg["deliver_policy"] === "last_per_subject") cfg["filter_subject"] = ">";

  let maxDeliver = o.maxDeliver !== undefined ? parseIntStrict(o.maxDeliver, "max-deliver") : 0;
  if (o.maxDeliver === undefined && ack !== "none" && ask) {
    maxDeliver = parseIntStrict(await askInput("Maximum Allowed Deliveries", { defaultValue: "-1" }), "max-deliver");
  }
  let maxPending = o.maxPending !== undefined ? parseIntStrict(o.maxPending, "max-pending") : -1;
  if (o.maxPending === undefined && ack !== "none" && ask) {
    maxPending = parseIntStrict(await askInput("Maximum Acknowledgments Pending", { defaultValue: "0" }), "max-pending");
  }

  if (push) {
    if (o.heartbeat === "-1") cfg["idle_heartbeat"] = 0;
    else if (o.heartbeat !== undefined) cfg["idle_heartbeat"] = parseDuration(o.heartbeat, "heartbeat");
    else if (ask) cfg["idle_heartbeat"] = parseDuration(await askInput("Idle Heartbeat", { defaultValue: "0s" }), "heartbeat");
    const fc = o.flowControl ?? (ask ? await askConfirm("Enable Flow Control, ie --flow-control", false) : false);
    cfg["flow_control"] = fc;
  }
  const hdrsOnly = o.headersOnly ?? (ask ? await askConfirm("Deliver headers only without bodies", false) : false);
  cfg["headers_only"] = hdrsOnly;

  let backoff = o.backoff;
  if (backoff === undefined && ack !== "none" && ask) backoff = await askSelect("Add a Retry Backoff Policy", ["none", "linear"], "none");
  if (backoff === "linear") {
    const steps = parseIntStrict(o.backoffSteps, "backoff-steps");
    cfg["backoff"] = linearBackoff(steps, parseDuration(o.backoffMin), parseDuration(o.backoffMax));
    if (maxDeliver <= 0) maxDeliver = steps + 1;
  }

  cfg["max_ack_pending"] = maxPending === -1 ? 0 : maxPending;
  if (o.inactiveThreshold !== undefined) cfg["inactive_threshold"] = parseDuration(o.inactiveThreshold);
  if (o.maxPullBatch !== undefined) cfg["max_batch"] = parseIntStrict(o.maxPullBatch, "max-pull-batch");
  if (o.maxPullExpire !== undefined) cfg["max_expires"] = parseDuration(o.maxPullExpire);
  if (o.maxPullBytes !== undefined) cfg["max_bytes"] = parseIntStrict(o.maxPullBytes, "max-pull-bytes");
  if (!push && o.maxWaiting !== undefined) cfg["max_waiting"] = parseIntStrict(o.maxWaiting, "max-waiting");
  if (maxDeliver !== 0 && ack !== "none") cfg["max_deliver"] = maxDeliver;
  if (o.bps !== undefined) {
    if (!push) throw new CliError("rate limits are only possible on Push consumers");
    cfg["rate_limit_bps"] = parseIntStrict(o.bps, "bps");
  }
  if (!push && o.heartbeat !== undefined && o.heartbeat !== "-1") throw new CliError("pull subscribers does not support idle heartbeats");
  if (o.replicas !== undefined) cfg["num_replicas"] = parseIntStrict(o.replicas, "replicas");
  if (o.memory === true) cfg["mem_storage"] = true;
  const md = parseKeyValues(o.metadata);
  if (md !== undefined) cfg["metadata"] = md;
  if (o.pause !== undefined) cfg["pause_until"] = parsePauseUntil(o.pause);
  const pinned = splitList(o.pinnedGroups);
  const overflow = splitList(o.overflowGroups);
  const prioritized = splitList(o.prioritizedGroups);
  if (pinned.length > 0 && overflow.length > 0) throw new CliError("setting both overflow and pinned groups are not supported");
  if (pinned.length > 0) {
    cfg["priority_policy"] = "pinned_client";
    cfg["priority_groups"] = pinned;
    if (o.pinnedTtl !== undefined) cfg["priority_timeout"] = parseDuration(o.pinnedTtl);
  } else if (overflow.length > 0) {
    cfg["priority_policy"] = "overflow";
    cfg["priority_groups"] = overflow;
  } else if (prioritized.length > 0) {
    cfg["priority_policy"] = "prioritized";
    cfg["priority_groups"] = prioritized;
  }
  return { name: consumer, cfg };
}

/** `consumer edit`: only the flags the user set, applied to the current configuration. */
export function editConsumerConfig(current: WireConsumerConfig, o: ConsumerFlags): WireConsumerConfig {
  if (o.config !== undefined) return { ...loadConsumerConfigFile(o.config), durable_name: current["durable_name"], name: current["name"] };
  const cfg: WireConsumerConfig = { ...current };
  if (o.description !== undefined) cfg["description"] = o.description;
  const filters = splitList(o.filter);
  if (filters.length === 1) {
    cfg["filter_subject"] = filters[0];
    delete cfg["filter_subjects"];
  } else if (filters.length > 1) {
    cfg["filter_subjects"] = filters;
    delete cfg["filter_subject"];
  }
  if (o.headersOnly !== undefined) cfg["headers_only"] = o.headersOnly;
  if (o.maxDeliver !== undefined) cfg["max_deliver"] = parseIntStrict(o.maxDeliver, "max-deliver");
  if (o.maxPending !== undefined) cfg["max_ack_pending"] = parseIntStrict(o.maxPending, "max-pending");
  if (o.maxPullBatch !== undefined) cfg["max_batch"] = parseIntStrict(o.maxPullBatch, "max-pull-batch");
  if (o.maxPullExpire !== undefined) cfg["max_expires"] = parseDuration(o.maxPullExpire);
  if (o.maxPullBytes !== undefined) cfg["max_bytes"] = parseIntStrict(o.maxPullBytes, "max-pull-bytes");
  if (o.sample !== undefined) cfg["sample_freq"] = o.sample;
  if (o.target !== undefined) cfg["deliver_subject"] = o.target;
  if (o.wait !== undefined) cfg["ack_wait"] = parseDuration(o.wait);
  if (o.inactiveThreshold !== undefined) cfg["inactive_threshold"] = parseDuration(o.inactiveThreshold);
  if (o.replicas !== undefined) cfg["num_replicas"] = parseIntStrict(o.replicas, "replicas");
  const md = parseKeyValues(o.metadata);
  if (md !== undefined) cfg["metadata"] = md;
  if (o.backoff === "linear") {
    cfg["backoff"] = linearBackoff(parseIntStrict(o.backoffSteps, "backoff-steps"), parseDuration(o.backoffMin), parseDuration(o.backoffMax));
  } else if (o.backoff === "none") delete cfg["backoff"];
  return cfg;
}

const ACK_NAME: Record<string, string> = { none: "None", all: "All", explicit: "Explicit" };
const REPLAY_NAME: Record<string, string> = { instant: "Instant", original: "Original" };

export interface WireConsumerInfo {
  stream_name: string;
  name: string;
  created: string;
  config: WireConsumerConfig;
  delivered: { consumer_seq: number; stream_seq: number; last_active?: string };
  ack_floor: { consumer_seq: number; stream_seq: number; last_active?: string };
  num_ack_pending: number;
  num_redelivered: number;
  num_waiting: number;
  num_pending: number;
  push_bound?: boolean;
  paused?: boolean;
  pause_remaining?: number;
  cluster?: { name?: string; leader?: string };
  ts?: string;
}

function num(v: unknown, dflt = 0): number {
  return typeof v === "number" ? v : dflt;
}
function str(v: unknown): string {
  return typeof v === "string" ? v : "";
}

function since(t: string | undefined): string {
  if (t === undefined || t === "" || t.startsWith("0001")) return "";
  return humanDuration(Math.max(0, Date.now() - Date.parse(t)) * 1e6);
}

export function renderConsumerInfo(info: WireConsumerInfo, stateOnly: boolean): string {
  const c = info.config;
  const cols = new Columns(`${stateOnly ? "State" : "Information"} for Consumer ${info.stream_name} > ${info.name} created ${fmtTime(info.created)}`);
  const push = str(c["deliver_subject"]) !== "";
  if (!stateOnly) {
    cols.title("Configuration");
    cols.rowIfNotEmpty("Name", str(c["name"]) !== "" ? str(c["name"]) : info.name);
    cols.rowIf("Durable Name", str(c["durable_name"]), str(c["durable_name"]) !== "" && str(c["durable_name"]) !== (str(c["name"]) || info.name));
    cols.rowIfNotEmpty("Description", str(c["description"]));
    if (push) cols.row("Delivery Subject", str(c["deliver_subject"]));
    else cols.row("Pull Mode", true);
    const fs1 = str(c["filter_subject"]);
    const fss = (c["filter_subjects"] as string[] | undefined) ?? [];
    if (fs1 !== "") cols.row("Filter Subject", fs1);
    else if (fss.length > 0) cols.row("Filter Subjects", fss);
    switch (str(c["deliver_policy"])) {
      case "all":
      case "":
        cols.row("Deliver Policy", "All");
        break;
      case "last":
        cols.row("Deliver Policy", "Last");
        break;
      case "new":
        cols.row("Deliver Policy", "New");
        break;
      case "last_per_subject":
        cols.row("Deliver Policy", "Last Per Subject");
        break;
      case "by_start_time":
        cols.row("Deliver Policy", `Since ${fmtTime(str(c["opt_start_time"]))}`);
        break;
      case "by_start_sequence":
        cols.row("Deliver Policy", `From Sequence ${num(c["opt_start_seq"])}`);
        break;
    }
    cols.rowIf("Deliver Queue Group", str(c["deliver_group"]), str(c["deliver_group"]) !== "" && push);
    const ack = str(c["ack_policy"]);
    cols.row("Ack Policy", ACK_NAME[ack] ?? ack);
    cols.rowIf("Ack Wait", humanDuration(num(c["ack_wait"])), ack !== "none");
    cols.row("Replay Policy", REPLAY_NAME[str(c["replay_policy"])] ?? str(c["replay_policy"]));
    cols.rowIf("Maximum Deliveries", num(c["max_deliver"]), num(c["max_deliver"], -1) !== -1);
    cols.rowIfNotEmpty("Sampling Rate", str(c["sample_freq"]));
    cols.rowIf("Rate Limit", `${ibytes(num(c["rate_limit_bps"]) / 8)} / second`, num(c["rate_limit_bps"]) > 0);
    cols.rowIf("Max Ack Pending", num(c["max_ack_pending"]), num(c["max_ack_pending"]) > 0);
    cols.rowIf("Max Waiting Pulls", num(c["max_waiting"]), num(c["max_waiting"]) > 0);
    cols.rowIf("Idle Heartbeat", humanDuration(num(c["idle_heartbeat"])), num(c["idle_heartbeat"]) > 0);
    cols.rowIf("Flow Control", c["flow_control"] === true, push);
    cols.rowIf("Headers Only", true, c["headers_only"] === true);
    cols.rowIf("Inactive Threshold", humanDuration(num(c["inactive_threshold"])), num(c["inactive_threshold"]) > 0 && !push);
    cols.rowIf("Max Pull Expire", humanDuration(num(c["max_expires"])), num(c["max_expires"]) > 0);
    cols.rowIf("Max Pull Batch", num(c["max_batch"]), num(c["max_batch"]) > 0);
    cols.rowIf("Max Pull MaxBytes", num(c["max_bytes"]), num(c["max_bytes"]) > 0);
    const bo = (c["backoff"] as number[] | undefined) ?? [];
    cols.rowIf("Backoff", bo.map((d) => goDuration(d)).join(", "), bo.length > 0);
    cols.rowIf("Replicas", num(c["num_replicas"]), num(c["num_replicas"]) > 0);
    cols.rowIf("Memory Storage", true, c["mem_storage"] === true);
    const pu = str(c["pause_until"]);
    if (info.paused === true) cols.row("Paused Until Deadline", `${fmtTime(pu)} (${humanDuration(Math.round(num(info.pause_remaining) / 1e9) * 1e9)} remaining)`);
    else cols.rowIf("Paused Until Deadline", `${fmtTime(pu)} (passed)`, pu !== "" && !pu.startsWith("0001"));
    if (str(c["priority_policy"]) !== "" && str(c["priority_policy"]) !== "none") {
      cols.row("Priority Policy", str(c["priority_policy"]));
      cols.row("Priority Groups", (c["priority_groups"] as string[] | undefined) ?? []);
    }
    const md = c["metadata"] as Record<string, string> | undefined;
    const user = Object.entries(md ?? {}).filter(([k]) => !k.startsWith("_nats."));
    if (user.length > 0) {
      cols.title("Metadata");
      for (const [k, v] of user.sort()) cols.row(k, v);
    }
  }
  if (info.cluster?.name !== undefined && info.cluster.name !== "") {
    cols.title("Cluster Information");
    cols.row("Name", info.cluster.name);
    cols.row("Leader", info.cluster.leader ?? "");
  }
  cols.title("State");
  const d = info.delivered;
  const dl = since(d.last_active);
  cols.row(
    "Last Delivered Message",
    `Consumer sequence: ${f(d.consumer_seq)} Stream sequence: ${f(d.stream_seq)}${dl !== "" ? ` Last delivery: ${dl} ago` : ""}`,
  );
  if (str(c["ack_policy"]) !== "none") {
    const a = info.ack_floor;
    const al = since(a.last_active);
    cols.row("Acknowledgment Floor", `Consumer sequence: ${f(a.consumer_seq)} Stream sequence: ${f(a.stream_seq)}${al !== "" ? ` Last Ack: ${al} ago` : ""}`);
    const map = num(c["max_ack_pending"]);
    cols.row("Outstanding Acks", map > 0 ? `${f(info.num_ack_pending)} out of maximum ${f(map)}` : info.num_ack_pending);
    cols.row("Redelivered Messages", info.num_redelivered);
  }
  cols.row("Unprocessed Messages", info.num_pending);
  if (!push) {
    const mw = num(c["max_waiting"]);
    cols.row("Waiting Pulls", mw > 0 ? `${f(info.num_waiting)} of maximum ${f(mw)}` : `${f(info.num_waiting)} of unlimited`);
  } else if (info.push_bound === true) {
    cols.row("Active Interest", str(c["deliver_group"]) !== "" ? `Active using Queue Group ${str(c["deliver_group"])}` : "Active");
  } else {
    cols.row("Active Interest", "No interest");
  }
  if (info.paused === true) cols.row("Paused Until", `${fmtTime(new Date(Date.now() + num(info.pause_remaining) / 1e6))}`);
  return cols.render();
}
