// `tsnats stream ...`: natscli's stream commands over the JetStream API.
import * as fs from "node:fs";
import type { Command } from "commander";
import type { Consumer, JsMsg } from "@nats-io/jetstream";
import type { MsgHdrs } from "@nats-io/transport-node";
import { jsApi } from "./api.js";
import { withSession, type Session } from "./connect.js";
import { CliError, fmtTime, humanDuration, ibytes, log, out, printJSON, renderTable } from "./output.js";
import { parseDuration, parseIntStrict } from "./parse.js";
import { askConfirm, askInput, askSelect, confirmOrForce, interactive } from "./prompt.js";
import {
  addStreamFlags,
  buildStreamConfig,
  configDiff,
  editStreamConfig,
  renderStreamInfo,
  type StreamFlags,
  type WireStreamConfig,
  type WireStreamInfo,
} from "./stream-config.js";

const dec = new TextDecoder();

export async function streamInfo(s: Session, name: string): Promise<WireStreamInfo> {
  const info = await jsApi<WireStreamInfo & { type?: string }>(s.nc, `$JS.API.STREAM.INFO.${name}`, undefined, s.settings.timeoutMs);
  delete info.type;
  return info;
}

export async function streamNames(s: Session, subject?: string): Promise<string[]> {
  const names: string[] = [];
  for (;;) {
    const req: Record<string, unknown> = { offset: names.length };
    if (subject !== undefined) req["subject"] = subject;
    const page = await jsApi<{ streams: string[] | null; total: number; limit: number }>(
      s.nc,
      "$JS.API.STREAM.NAMES",
      req,
      s.settings.timeoutMs,
    );
    const got = page.streams ?? [];
    names.push(...got);
    if (got.length === 0 || names.length >= page.total) break;
  }
  return names.sort();
}

/** The stream named on the command line, or one picked from a list on a terminal. */
export async function pickStream(s: Session, given: string | undefined, acceptDefaults = false): Promise<string> {
  if (given !== undefined && given !== "") return given;
  if (!interactive(acceptDefaults)) throw new CliError("a stream name is required, pass it as an argument");
  const names = await streamNames(s);
  if (names.length === 0) throw new CliError("no Streams are defined");
  return askSelect("Select a Stream", names);
}

export function printStreamInfo(info: WireStreamInfo, json: boolean, stateOnly = false): void {
  if (json) printJSON(info);
  else process.stdout.write(renderStreamInfo(info, stateOnly));
}

async function createStream(s: Session, cfg: WireStreamConfig): Promise<WireStreamInfo> {
  const info = await jsApi<WireStreamInfo & { type?: string }>(s.nc, `$JS.API.STREAM.CREATE.${cfg.name}`, cfg, s.settings.timeoutMs);
  delete info.type;
  return info;
}

async function updateStream(s: Session, cfg: WireStreamConfig): Promise<WireStreamInfo> {
  const info = await jsApi<WireStreamInfo & { type?: string }>(s.nc, `$JS.API.STREAM.UPDATE.${cfg.name}`, cfg, s.settings.timeoutMs);
  delete info.type;
  return info;
}

function headerLines(h: MsgHdrs | undefined, skipNats: boolean): string[] {
  if (h === undefined) return [];
  const lines: string[] = [];
  const hidden = new Set(["Nats-Subject", "Nats-Stream", "Nats-Sequence", "Nats-Time-Stamp", "Nats-Num-Pending", "Nats-Last-Sequence"]);
  for (const k of h.keys()) {
    if (skipNats && hidden.has(k)) continue;
    for (const v of h.values(k)) lines.push(`  ${k}: ${v}`);
  }
  return lines;
}

/** natscli's body output: the data, then blank lines so consecutive messages stand apart. */
export function printBody(data: Uint8Array): void {
  if (data.length === 0) {
    out("nil body");
    out();
    return;
  }
  const text = dec.decode(data);
  process.stdout.write(text.endsWith("\n") ? text : text + "\n");
  out();
  if (!text.endsWith("\n")) out();
}

interface ViewOpts {
  id?: string;
  since?: string;
  raw?: boolean;
  subject?: string;
}

/**
 * A short-lived, unacknowledged pull consumer, created over the plain API so that it works
 * on servers without 2.10's filter_subjects (a single filter goes in filter_subject).
 */
export async function ephemeralConsumer(s: Session, stream: string, cfg: Record<string, unknown>, filters: string[]): Promise<Consumer> {
  const config: Record<string, unknown> = {
    ack_policy: "none",
    deliver_policy: "all",
    replay_policy: "instant",
    inactive_threshold: 5e9,
    mem_storage: true,
    num_replicas: 1,
    ...cfg,
  };
  if (filters.length === 1) config["filter_subject"] = filters[0];
  else if (filters.length > 1) config["filter_subjects"] = filters;
  const info = await jsApi<{ name: string }>(s.nc, `$JS.API.CONSUMER.CREATE.${stream}`, { stream_name: stream, config }, s.settings.timeoutMs);
  return s.js().consumers.get(stream, info.name);
}

async function viewAction(s: Session, stream: string, sizeArg: string | undefined, o: ViewOpts): Promise<void> {
  let size = sizeArg === undefined ? 10 : parseIntStrict(sizeArg, "page size");
  if (size > 25) {
    log("Page size is limited to 25, setting to 25...");
    size = 25;
  }
  if (size < 1) throw new CliError("page size must be at least 1");
  await streamInfo(s, stream);
  const cfg: Record<string, unknown> = {};
  if (o.since !== undefined) {
    cfg["deliver_policy"] = "by_start_time";
    cfg["opt_start_time"] = new Date(Date.now() - parseDuration(o.since) / 1e6).toISOString();
  } else if (o.id !== undefined) {
    cfg["deliver_policy"] = "by_start_sequence";
    cfg["opt_start_seq"] = parseIntStrict(o.id, "id");
  }
  const consumer = await ephemeralConsumer(s, stream, cfg, o.subject !== undefined ? [o.subject] : []);
  // A terminal pages with a "Next Page?" question; without one natscli refuses to run,
  // we print the first page so scripts and pipes still see the data.
  const tty = process.stdin.isTTY === true && process.stdout.isTTY === true;
  let shown = 0;
  for (;;) {
    const m: JsMsg | null = await consumer.next({ expires: 2000 });
    if (m === null) {
      log("Reached apparent end of data");
      break;
    }
    shown++;
    if (o.raw === true) out(dec.decode(m.data));
    else {
      out(`[${m.info.streamSequence}] Subject: ${m.subject} Received: ${fmtTime(m.time)}`);
      const hl = headerLines(m.headers, true);
      if (hl.length > 0) {
        out();
        hl.forEach((l) => out(l));
      }
      printBody(m.data);
    }
    if (m.info.pending === 0) {
      log("Reached apparent end of data");
      break;
    }
    if (shown % size === 0) {
      if (!tty) break;
      if (!(await askConfirm("Next Page?", true))) break;
    }
  }
  await consumer.delete().catch(() => undefined);
}

interface StoredMsgWire {
  subject: string;
  seq: number;
  hdrs?: string;
  data?: string;
  time: string;
}

function decodeHeaders(b64: string | undefined): string[] {
  if (b64 === undefined || b64 === "") return [];
  const text = Buffer.from(b64, "base64").toString("utf8");
  return text
    .split("\r\n")
    .slice(1)
    .filter((l) => l !== "")
    .map((l) => {
      const i = l.indexOf(":");
      return i < 0 ? `  ${l}` : `  ${l.slice(0, i)}: ${l.slice(i + 1).trim()}`;
    });
}

async function getAction(s: Session, stream: string, id: string | undefined, o: { lastFor?: string; json?: boolean }, acceptPrompt: boolean): Promise<void> {
  let seq = id === undefined ? -1 : parseIntStrict(id, "message sequence");
  let lastFor = o.lastFor;
  if (seq === -1 && lastFor === undefined) {
    if (!acceptPrompt) throw new CliError("a message sequence or --last-for SUBJECT is required");
    seq = parseIntStrict(await askInput("Message Sequence to retrieve", { defaultValue: "-1" }), "message sequence");
    if (seq === -1) lastFor = await askInput("Subject to retrieve last message for", { required: true });
  }
  const req = seq > -1 ? { seq } : { last_by_subj: lastFor };
  const resp = await jsApi<{ message: StoredMsgWire }>(s.nc, `$JS.API.STREAM.MSG.GET.${stream}`, req, s.settings.timeoutMs);
  const m = resp.message;
  if (o.json === true) return printJSON(m);
  const age = humanDuration((Date.now() - Date.parse(m.time)) * 1e6);
  out(`Item: ${stream}#${m.seq} received ${m.time} (${age}) on Subject ${m.subject}`);
  out();
  const hl = decodeHeaders(m.hdrs);
  if (hl.length > 0) {
    out("Headers:");
    hl.forEach((l) => out(l));
    out();
  }
  printBody(Buffer.from(m.data ?? "", "base64"));
}

async function reportAction(s: Session, o: { subject?: string; json?: boolean }): Promise<void> {
  const names = await streamNames(s, o.subject);
  const infos: WireStreamInfo[] = [];
  for (const n of names) infos.push(await streamInfo(s, n));
  if (o.json === true) return printJSON(infos);
  if (infos.length === 0) return out("No Streams defined");
  infos.sort((a, b) => Number(a.state["bytes"] ?? 0) - Number(b.state["bytes"] ?? 0));
  const rows = infos.map((i) => [
    String(i.config["name"]),
    i.config["storage"] === "memory" ? "Memory" : "File",
    i.cluster?.name ?? "",
    Number(i.state["consumer_count"] ?? 0),
    Number(i.state["messages"] ?? 0),
    ibytes(Number(i.state["bytes"] ?? 0)),
    Number(i.state["num_deleted"] ?? 0),
    Number(i.config["num_replicas"] ?? 1),
  ]);
  out(renderTable("Obtaining Stream stats\n\nStream Report", ["Stream", "Storage", "Placement", "Consumers", "Messages", "Bytes", "Deleted", "Replicas"], rows));
}

/** Registers `stream` and its subcommands; returns the command (main adds backup/restore). */
export function registerStream(program: Command): Command {
  const str = program.command("stream").alias("str").alias("s").description("JetStream stream management");
  str.option("-a, --all", "When listing or selecting streams show all streams including system ones");

  addStreamFlags(
    str
      .command("add [stream]")
      .alias("create")
      .alias("new")
      .description("Create a new stream")
      .option("--config <file>", "JSON file to read configuration from")
      .option("--validate", "Only validates the configuration")
      .option("--output <file>", "Save configuration instead of creating")
      .option("--defaults", "Accept default values for all prompts"),
    false,
  ).action(async (name: string | undefined, o: StreamFlags, cmd: Command) => {
    if (o.config !== undefined && !fs.existsSync(o.config)) throw new CliError(`path '${o.config}' does not exist`);
    const cfg = await buildStreamConfig(name, o);
    if (o.validate === true) {
      printJSON(cfg);
      out();
      out("Configuration is a valid Stream");
      return;
    }
    if (o.output !== undefined) {
      fs.writeFileSync(o.output, JSON.stringify(cfg, null, 2) + "\n", { mode: 0o600 });
      return;
    }
    await withSession(cmd, async (s) => {
      const info = await createStream(s, cfg);
      if (o.json === true) return printJSON(info);
      out(`Stream ${cfg.name} was created`);
      out();
      printStreamInfo(await streamInfo(s, cfg.name), false);
    });
  });

  addStreamFlags(
    str
      .command("edit [stream]")
      .alias("update")
      .description("Edits an existing stream")
      .option("--config <file>", "JSON file to read configuration from")
      .option("-f, --force", "Force edit without prompting")
      .option("--dry-run", "Only shows differences, do not edit the stream"),
    true,
  ).action(async (name: string | undefined, o: StreamFlags, cmd: Command) => {
    await withSession(cmd, async (s) => {
      const stream = await pickStream(s, name);
      const current = (await streamInfo(s, stream)).config as WireStreamConfig;
      const next = editStreamConfig(current, o);
      const diff = configDiff(current, next);
      if (diff.length === 0) throw new CliError("no difference in configuration");
      if (o.dryRun === true || o.force !== true) {
        out(`Differences (-old +new):`);
        diff.forEach((l) => out(l));
        out();
      }
      if (o.dryRun === true) return;
      if (!(await confirmOrForce(`Really edit Stream ${stream}`, o.force))) return;
      await updateStream(s, next);
      out(`Stream ${stream} was updated`);
      out();
      printStreamInfo(await streamInfo(s, stream), o.json === true);
    });
  });

  str
    .command("info [stream]")
    .alias("i")
    .description("Stream information")
    .option("-j, --json", "Produce JSON output")
    .option("--state", "Shows only the stream state")
    .action(async (name: string | undefined, o: { json?: boolean; state?: boolean }, cmd: Command) => {
      await withSession(cmd, async (s) => {
        const stream = await pickStream(s, name);
        printStreamInfo(await streamInfo(s, stream), o.json === true, o.state === true);
      });
    });

  str
    .command("state [stream]")
    .description("Stream state")
    .option("-j, --json", "Produce JSON output")
    .action(async (name: string | undefined, o: { json?: boolean }, cmd: Command) => {
      await withSession(cmd, async (s) => {
        const stream = await pickStream(s, name);
        printStreamInfo(await streamInfo(s, stream), o.json === true, true);
      });
    });

  str
    .command("ls")
    .alias("list")
    .description("List all known streams")
    .option("--subject <subject>", "Limit the list to streams with matching subjects")
    .option("-n, --names", "Show just the stream names")
    .option("-j, --json", "Produce JSON output")
    .action(async (o: { subject?: string; names?: boolean; json?: boolean }, cmd: Command) => {
      const all = cmd.optsWithGlobals<{ all?: boolean }>().all === true;
      await withSession(cmd, async (s) => {
        let names = await streamNames(s, o.subject);
        const hidden = names.filter((n) => !all && isSystemStream(n));
        names = names.filter((n) => all || !isSystemStream(n));
        if (o.json === true) return printJSON(names);
        if (o.names === true) return names.forEach((n) => out(n));
        if (names.length === 0) return out(hidden.length > 0 ? "No Streams defined, pass -a to include system streams" : "No Streams defined");
        const infos: WireStreamInfo[] = [];
        for (const n of names) infos.push(await streamInfo(s, n));
        infos.sort((a, b) => Number(a.state["bytes"] ?? 0) - Number(b.state["bytes"] ?? 0));
        const rows = infos.map((i) => {
          const last = String(i.state["last_ts"] ?? "");
          const since = last.startsWith("0001") || last === "" ? "never" : humanDuration((Date.now() - Date.parse(last)) * 1e6);
          return [
            String(i.config["name"]),
            String(i.config["description"] ?? ""),
            fmtTime(i.created),
            Number(i.state["messages"] ?? 0),
            ibytes(Number(i.state["bytes"] ?? 0)),
            since,
          ];
        });
        out(renderTable(o.subject === undefined ? "Streams" : `Streams matching ${o.subject}`, ["Name", "Description", "Created", "Messages", "Size", "Last Message"], rows));
        out();
      });
    });

  str
    .command("rm [stream]")
    .alias("delete")
    .alias("del")
    .description("Removes a stream")
    .option("-f, --force", "Force removal without prompting")
    .action(async (name: string | undefined, o: { force?: boolean }, cmd: Command) => {
      if (o.force === true && name === undefined) throw new CliError("--force requires a stream name");
      await withSession(cmd, async (s) => {
        const stream = await pickStream(s, name);
        if (!(await confirmOrForce(`Really delete Stream ${stream}`, o.force))) return;
        await jsApi(s.nc, `$JS.API.STREAM.DELETE.${stream}`, undefined, s.settings.timeoutMs);
      });
    });

  str
    .command("purge [stream]")
    .description("Bulk removes messages from a stream")
    .option("-j, --json", "Produce JSON output")
    .option("-f, --force", "Force removal without prompting")
    .option("--subject <subject>", "Limits the purge to a specific subject")
    .option("--seq <sequence>", "Purge up to but not including a specific message sequence")
    .option("--keep <messages>", "Keeps a certain number of messages after the purge")
    .action(async (name: string | undefined, o: { json?: boolean; force?: boolean; subject?: string; seq?: string; keep?: string }, cmd: Command) => {
      if (o.seq !== undefined && o.keep !== undefined) throw new CliError("sequence and keep cannot be combined when purging");
      await withSession(cmd, async (s) => {
        const stream = await pickStream(s, name);
        if (!(await confirmOrForce(`Really purge Stream ${stream}`, o.force))) return;
        const req: Record<string, unknown> = {};
        if (o.subject !== undefined) req["filter"] = o.subject;
        if (o.seq !== undefined) req["seq"] = parseIntStrict(o.seq, "seq");
        if (o.keep !== undefined) req["keep"] = parseIntStrict(o.keep, "keep");
        const resp = await jsApi<{ purged: number }>(
          s.nc,
          `$JS.API.STREAM.PURGE.${stream}`,
          Object.keys(req).length > 0 ? req : undefined,
          s.settings.timeoutMs,
        );
        const info = await streamInfo(s, stream);
        if (o.json === true) return printJSON(info);
        out(`Purged ${resp.purged} messages from ${stream}`);
        out();
        printStreamInfo(info, false, true);
      });
    });

  addStreamFlags(
    str.command("copy <source> <destination>").alias("cp").description("Creates a new stream based on the configuration of another, does not copy data"),
    true,
  ).action(async (source: string, dest: string, o: StreamFlags, cmd: Command) => {
    await withSession(cmd, async (s) => {
      const cfg = editStreamConfig((await streamInfo(s, source)).config as WireStreamConfig, o);
      cfg.name = dest;
      // A copy must not inherit the source's exclusive subjects, or the server refuses the overlap.
      if (o.subjects === undefined && cfg["mirror"] === undefined) cfg["subjects"] = [];
      const info = await createStream(s, cfg);
      if (o.json === true) return printJSON(info);
      out(`Stream ${dest} was created`);
      out();
      printStreamInfo(info, false);
    });
  });

  str
    .command("rmm [stream] [id]")
    .description("Securely removes an individual message from a stream")
    .option("-f, --force", "Force removal without prompting")
    .action(async (name: string | undefined, id: string | undefined, o: { force?: boolean }, cmd: Command) => {
      await withSession(cmd, async (s) => {
        const stream = await pickStream(s, name);
        let seqText = id;
        if (seqText === undefined) {
          if (!interactive(false)) throw new CliError("a message sequence is required, pass it as an argument");
          seqText = await askInput("Message Sequence to remove", { required: true });
        }
        const seq = parseIntStrict(seqText, "message sequence");
        if (seq <= 0) throw new CliError("positive message ID required");
        await streamInfo(s, stream);
        if (!(await confirmOrForce(`Really remove message ${seq} from Stream ${stream}`, o.force))) return;
        await jsApi(s.nc, `$JS.API.STREAM.MSG.DELETE.${stream}`, { seq }, s.settings.timeoutMs);
      });
    });

  str
    .command("view [stream] [size]")
    .description("View messages in a stream")
    .option("--id <seq>", "Start at a specific message Sequence")
    .option("--since <duration>", "Delivers messages received since a duration like 1d3h5m2s")
    .option("--raw", "Show the raw data received")
    .option("--subject <subject>", "Filter the stream using a subject")
    .action(async (name: string | undefined, size: string | undefined, o: ViewOpts, cmd: Command) => {
      await withSession(cmd, async (s) => viewAction(s, await pickStream(s, name), size, o));
    });

  str
    .command("get [stream] [id]")
    .description("Retrieves a specific message from a Stream")
    .option("-S, --last-for <subject>", "Retrieves the message for a specific subject")
    .option("-j, --json", "Produce JSON output")
    .action(async (name: string | undefined, id: string | undefined, o: { lastFor?: string; json?: boolean }, cmd: Command) => {
      await withSession(cmd, async (s) => getAction(s, await pickStream(s, name), id, o, interactive(false)));
    });

  str
    .command("report")
    .description("Reports on stream statistics")
    .option("--subject <subject>", "Limit the report to streams with matching subjects")
    .option("-j, --json", "Produce JSON output")
    .action(async (o: { subject?: string; json?: boolean }, cmd: Command) => {
      await withSession(cmd, async (s) => reportAction(s, o));
    });

  str
    .command("seal <stream>")
    .description("Seals a stream preventing further updates")
    .option("-f, --force", "Force sealing without prompting")
    .action(async (name: string, o: { force?: boolean }, cmd: Command) => {
      await withSession(cmd, async (s) => {
        if (!(await confirmOrForce(`Really seal Stream ${name}, sealed streams can not be unsealed or modified`, o.force))) return;
        const cfg = { ...((await streamInfo(s, name)).config as WireStreamConfig), sealed: true };
        await updateStream(s, cfg);
        printStreamInfo(await streamInfo(s, name), false);
      });
    });

  return str;
}

function isSystemStream(name: string): boolean {
  return name.startsWith("KV_") || name.startsWith("OBJ_") || name.startsWith("$");
}
