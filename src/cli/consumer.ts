// `tsnats consumer ...`: natscli's consumer commands over the JetStream API.
import type { Command } from "commander";
import { createInbox, type Msg } from "@nats-io/transport-node";
import { jsApi } from "./api.js";
import { withSession, type Session } from "./connect.js";
import {
  addConsumerFlags,
  buildConsumerConfig,
  editConsumerConfig,
  parsePauseUntil,
  renderConsumerInfo,
  type ConsumerFlags,
  type WireConsumerConfig,
  type WireConsumerInfo,
} from "./consumer-config.js";
import { CliError, f, fmtTime, humanDuration, out, printJSON, renderTable } from "./output.js";
import { parseDuration, parseIntStrict } from "./parse.js";
import { askInput, askSelect, confirmOrForce, interactive } from "./prompt.js";
import { configDiff } from "./stream-config.js";
import { pickStream, streamInfo } from "./stream.js";

const dec = new TextDecoder();
const enc = new TextEncoder();

export async function consumerInfo(s: Session, stream: string, name: string): Promise<WireConsumerInfo> {
  const info = await jsApi<WireConsumerInfo & { type?: string }>(s.nc, `$JS.API.CONSUMER.INFO.${stream}.${name}`, undefined, s.settings.timeoutMs);
  delete info.type;
  return info;
}

async function consumerNames(s: Session, stream: string): Promise<string[]> {
  const names: string[] = [];
  for (;;) {
    const page = await jsApi<{ consumers: string[] | null; total: number }>(
      s.nc,
      `$JS.API.CONSUMER.NAMES.${stream}`,
      { offset: names.length },
      s.settings.timeoutMs,
    );
    const got = page.consumers ?? [];
    names.push(...got);
    if (got.length === 0 || names.length >= page.total) break;
  }
  return names.sort();
}

async function pickConsumer(s: Session, stream: string, given: string | undefined): Promise<string> {
  if (given !== undefined && given !== "") return given;
  if (!interactive(false)) throw new CliError("a consumer name is required, pass it as an argument");
  const names = await consumerNames(s, stream);
  if (names.length === 0) throw new CliError(`no Consumers are defined on Stream ${stream}`);
  return askSelect("Select a Consumer", names);
}

async function createConsumer(s: Session, stream: string, name: string, cfg: WireConsumerConfig, action: "create" | "update" | ""): Promise<WireConsumerInfo> {
  const subject = name !== "" ? `$JS.API.CONSUMER.CREATE.${stream}.${name}` : `$JS.API.CONSUMER.CREATE.${stream}`;
  const req: Record<string, unknown> = { stream_name: stream, config: cfg };
  if (action !== "") req["action"] = action;
  const info = await jsApi<WireConsumerInfo & { type?: string }>(s.nc, subject, req, s.settings.timeoutMs);
  delete info.type;
  return info;
}

function printConsumerInfo(info: WireConsumerInfo, json: boolean, stateOnly = false): void {
  if (json) printJSON(info);
  else process.stdout.write(renderConsumerInfo(info, stateOnly));
}

interface AckMeta {
  stream: string;
  consumer: string;
  delivered: number;
  streamSeq: number;
  consumerSeq: number;
  timestampNs: bigint;
  pending: number;
}

/** The delivery metadata in a `$JS.ACK...` reply subject (the 9-token and the 12-token forms). */
export function parseAckReply(reply: string | undefined): AckMeta | undefined {
  if (reply === undefined || !reply.startsWith("$JS.ACK.")) return undefined;
  const t = reply.split(".");
  const base = t.length === 9 ? 2 : t.length >= 11 ? 4 : -1;
  if (base < 0) return undefined;
  return {
    stream: t[base] ?? "",
    consumer: t[base + 1] ?? "",
    delivered: Number(t[base + 2]),
    streamSeq: Number(t[base + 3]),
    consumerSeq: Number(t[base + 4]),
    timestampNs: BigInt(t[base + 5] ?? "0"),
    pending: Number(t[base + 6]),
  };
}

interface NextOpts {
  ack?: boolean;
  nak?: boolean;
  term?: boolean;
  raw?: boolean;
  wait?: string;
  count: string;
}

/** One pull of one message, the way natscli's `consumer next` does it: a raw MSG.NEXT request. */
async function nextOne(s: Session, stream: string, consumer: string, o: NextOpts, ackSetByUser: boolean): Promise<void> {
  let ack = o.ack !== false;
  if (o.term === true) {
    if (!ackSetByUser) ack = false;
    if (ack || o.nak === true) throw new CliError("can not both Acknowledge and Terminate message");
  }
  const inbox = createInbox();
  const sub = s.nc.subscribe(inbox, { max: 1 });
  const expiresNs = Math.max(1, s.settings.timeoutMs - 100) * 1e6;
  s.nc.publish(`$JS.API.CONSUMER.MSG.NEXT.${stream}.${consumer}`, enc.encode(JSON.stringify({ batch: 1, expires: expiresNs })), { reply: inbox });
  const got = await new Promise<Msg | undefined>((resolve) => {
    const timer = setTimeout(() => {
      sub.unsubscribe();
      resolve(undefined);
    }, s.settings.timeoutMs + 500);
    void (async () => {
      for await (const m of sub) {
        clearTimeout(timer);
        resolve(m);
        return;
      }
      clearTimeout(timer);
      resolve(undefined);
    })();
  });
  if (got === undefined) throw new CliError("no message received: timeout");
  const status = got.headers?.code ?? 0;
  if (got.data.length === 0 && status >= 400) {
    const info = await consumerInfo(s, stream, consumer);
    if (typeof info.config["deliver_subject"] === "string" && info.config["deliver_subject"] !== "") {
      throw new CliError(`consumer "${consumer}" is not a Pull consumer`);
    }
    throw new CliError(`no message received: ${status} ${got.headers?.description ?? ""}`.trim());
  }
  if (o.raw !== true) {
    const meta = parseAckReply(got.reply);
    if (meta === undefined) out(got.reply !== undefined && got.reply !== "" ? `--- subject: ${got.subject} reply: ${got.reply}` : `--- subject: ${got.subject}`);
    else {
      const now = new Date();
      const hh = [now.getHours(), now.getMinutes(), now.getSeconds()].map((n) => String(n).padStart(2, "0")).join(":");
      out(`[${hh}] subj: ${got.subject} / tries: ${meta.delivered} / cons seq: ${meta.consumerSeq} / str seq: ${meta.streamSeq} / pending: ${f(meta.pending)}`);
    }
    const h = got.headers;
    if (h !== undefined && [...h.keys()].length > 0) {
      out();
      out("Headers:");
      out();
      for (const k of h.keys()) for (const v of h.values(k)) out(`  ${k}: ${v}`);
      out();
      out("Data:");
      out();
    }
    out();
  }
  out(dec.decode(got.data));
  if (o.term === true) {
    got.respond(enc.encode("+TERM"));
    await s.nc.flush();
    out("\nTerminated message");
  }
  if (ack || o.nak === true) {
    let delayMs = 0;
    if (o.wait !== undefined) delayMs = Math.floor(Math.random() * (parseDuration(o.wait) / 1e6));
    if (delayMs > 0) await new Promise((r) => setTimeout(r, delayMs));
    got.respond(enc.encode(o.nak === true ? "-NAK" : "+ACK"));
    await s.nc.flush();
    if (o.raw !== true) {
      const neg = o.nak === true ? "Negative " : "";
      out(delayMs > 0 ? `\n${neg}Acknowledged message after ${delayMs}ms delay` : `\n${neg}Acknowledged message`);
      out();
    }
  }
}

export function registerConsumer(program: Command): void {
  const cons = program.command("consumer").alias("con").alias("c").description("JetStream consumer management");

  addConsumerFlags(
    cons
      .command("add [stream] [consumer]")
      .alias("create")
      .alias("new")
      .description("Creates a new consumer")
      .option("--config <file>", "JSON file to read configuration from")
      .option("--validate", "Only validates the configuration")
      .option("--output <file>", "Save configuration instead of creating")
      .option("--defaults", "Accept default values for all prompts"),
    false,
  ).action(async (streamArg: string | undefined, name: string | undefined, o: ConsumerFlags, cmd: Command) => {
    await withSession(cmd, async (s) => {
      const stream = await pickStream(s, streamArg, o.defaults === true);
      await streamInfo(s, stream);
      const built = await buildConsumerConfig(name, o);
      if (o.validate === true) {
        printJSON(built.cfg);
        out();
        out("Configuration is a valid Consumer");
        return;
      }
      if (o.output !== undefined) {
        const fs = await import("node:fs");
        fs.writeFileSync(o.output, JSON.stringify(built.cfg, null, 2) + "\n", { mode: 0o600 });
        return;
      }
      const info = await createConsumer(s, stream, built.name, built.cfg, "create");
      printConsumerInfo(info, o.json === true);
    });
  });

  addConsumerFlags(
    cons
      .command("edit [stream] [consumer]")
      .alias("update")
      .description("Edits the configuration of a consumer")
      .option("--config <file>", "JSON file to read configuration from")
      .option("-f, --force", "Force edit without prompting")
      .option("--dry-run", "Only shows differences, do not edit the consumer"),
    true,
  ).action(async (streamArg: string | undefined, name: string | undefined, o: ConsumerFlags, cmd: Command) => {
    await withSession(cmd, async (s) => {
      const stream = await pickStream(s, streamArg);
      const consumer = await pickConsumer(s, stream, name);
      const current = (await consumerInfo(s, stream, consumer)).config;
      const next = editConsumerConfig(current, o);
      const diff = configDiff(current, next);
      if (diff.length === 0) throw new CliError("no difference in configuration");
      if (o.dryRun === true || o.force !== true) {
        out("Differences (-old +new):");
        diff.forEach((l) => out(l));
        out();
      }
      if (o.dryRun === true) return;
      if (!(await confirmOrForce(`Really edit Consumer ${stream} > ${consumer}`, o.force))) return;
      const info = await createConsumer(s, stream, consumer, next, "update");
      printConsumerInfo(info, o.json === true);
    });
  });

  for (const [verb, stateOnly] of [
    ["info", false],
    ["state", true],
  ] as const) {
    cons
      .command(`${verb} [stream] [consumer]`)
      .description(stateOnly ? "Consumer state" : "Consumer information")
      .option("-j, --json", "Produce JSON output")
      .action(async (streamArg: string | undefined, name: string | undefined, o: { json?: boolean }, cmd: Command) => {
        await withSession(cmd, async (s) => {
          const stream = await pickStream(s, streamArg);
          const consumer = await pickConsumer(s, stream, name);
          printConsumerInfo(await consumerInfo(s, stream, consumer), o.json === true, stateOnly);
        });
      });
  }

  cons
    .command("ls [stream]")
    .alias("list")
    .description("List known consumers")
    .option("-j, --json", "Produce JSON output")
    .option("-n, --names", "Show just the consumer names")
    .action(async (streamArg: string | undefined, o: { json?: boolean; names?: boolean }, cmd: Command) => {
      await withSession(cmd, async (s) => {
        const stream = await pickStream(s, streamArg);
        await streamInfo(s, stream);
        const names = await consumerNames(s, stream);
        if (o.json === true) return printJSON(names);
        if (o.names === true) return names.forEach((n) => out(n));
        if (names.length === 0) return out("No Consumers defined");
        const rows: Array<Array<string | number>> = [];
        for (const n of names) {
          const i = await consumerInfo(s, stream, n);
          const last = i.delivered.last_active;
          rows.push([
            i.name,
            String(i.config["description"] ?? ""),
            fmtTime(i.created),
            i.num_ack_pending,
            i.num_pending,
            last === undefined || last.startsWith("0001") ? "never" : humanDuration((Date.now() - Date.parse(last)) * 1e6),
          ]);
        }
        out(renderTable("Consumers", ["Name", "Description", "Created", "Ack Pending", "Unprocessed", "Last Delivery"], rows));
        out();
      });
    });

  cons
    .command("rm [stream] [consumer]")
    .alias("delete")
    .alias("del")
    .description("Removes a consumer")
    .option("-f, --force", "Force removal without prompting")
    .action(async (streamArg: string | undefined, name: string | undefined, o: { force?: boolean }, cmd: Command) => {
      await withSession(cmd, async (s) => {
        const stream = await pickStream(s, streamArg);
        const consumer = await pickConsumer(s, stream, name);
        if (!(await confirmOrForce(`Really delete Consumer ${stream} > ${consumer}`, o.force))) return;
        await jsApi(s.nc, `$JS.API.CONSUMER.DELETE.${stream}.${consumer}`, undefined, s.settings.timeoutMs);
      });
    });

  cons
    .command("copy <stream> <source> <destination>")
    .alias("cp")
    .description("Creates a new consumer based on the configuration of another")
    .action(async (stream: string, source: string, dest: string, _o: unknown, cmd: Command) => {
      await withSession(cmd, async (s) => {
        const cfg = { ...(await consumerInfo(s, stream, source)).config };
        if (typeof cfg["durable_name"] === "string" && cfg["durable_name"] !== "") cfg["durable_name"] = dest;
        cfg["name"] = dest;
        printConsumerInfo(await createConsumer(s, stream, dest, cfg, "create"), false);
      });
    });

  cons
    .command("next <stream> <consumer>")
    .description("Retrieves messages from Pull consumers without interactive prompts")
    .option("--ack", "Acknowledge received message (default)")
    .option("--no-ack", "Do not acknowledge the message")
    .option("--nak", "Perform a Negative Acknowledgement on the message")
    .option("--term", "Terms the message")
    .option("-r, --raw", "Show only the message")
    .option("--wait <duration>", "Wait up to this period to acknowledge messages")
    .option("--count <n>", "Number of messages to try to fetch from the pull consumer", "1")
    .action(async (stream: string, consumer: string, o: NextOpts, cmd: Command) => {
      const ackSetByUser = cmd.getOptionValueSource("ack") === "cli";
      const count = parseIntStrict(o.count, "count");
      await withSession(cmd, async (s) => {
        for (let i = 0; i < count; i++) await nextOne(s, stream, consumer, o, ackSetByUser);
      });
    });

  cons
    .command("report [stream]")
    .description("Reports on consumer statistics")
    .option("-j, --json", "Produce JSON output")
    .action(async (streamArg: string | undefined, o: { json?: boolean }, cmd: Command) => {
      await withSession(cmd, async (s) => {
        const stream = await pickStream(s, streamArg);
        const si = await streamInfo(s, stream);
        const infos: WireConsumerInfo[] = [];
        for (const n of await consumerNames(s, stream)) infos.push(await consumerInfo(s, stream, n));
        if (o.json === true) return printJSON(infos);
        const rows = infos.map((i) => [
          i.name,
          typeof i.config["deliver_subject"] === "string" && i.config["deliver_subject"] !== "" ? "Push" : "Pull",
          i.config["ack_policy"] === "none" ? "None" : i.config["ack_policy"] === "all" ? "All" : "Explicit",
          humanDuration(Number(i.config["ack_wait"] ?? 0)),
          i.num_ack_pending,
          i.num_redelivered,
          i.num_pending,
          i.num_waiting,
        ]);
        const msgs = Number(si.state["messages"] ?? 0);
        out(
          renderTable(
            `Consumer report for ${stream} with ${f(infos.length)} consumers`,
            ["Consumer", "Mode", "Ack Policy", "Ack Wait", "Ack Pending", "Redelivered", "Unprocessed", "Waiting Pulls"],
            rows,
          ),
        );
        out(`${f(msgs)} messages in stream`);
      });
    });

  cons
    .command("pause [stream] [consumer] [until]")
    .description("Pause a consumer until a later time")
    .option("-f, --force", "Force pause without prompting")
    .action(async (streamArg: string | undefined, name: string | undefined, untilArg: string | undefined, o: { force?: boolean }, cmd: Command) => {
      await withSession(cmd, async (s) => {
        const stream = await pickStream(s, streamArg);
        const consumer = await pickConsumer(s, stream, name);
        await consumerInfo(s, stream, consumer);
        let until = untilArg;
        if (until === undefined) {
          if (!interactive(false)) throw new CliError("a time or duration to pause until is required, pass it as an argument");
          until = await askInput("Pause until (time or duration)", { defaultValue: "1h", required: true });
        }
        const ts = parsePauseUntil(until);
        if (!(await confirmOrForce(`Really pause Consumer ${stream} > ${consumer} until ${fmtTime(ts)}`, o.force))) return;
        const resp = await jsApi<{ paused: boolean; pause_until: string; pause_remaining?: number }>(
          s.nc,
          `$JS.API.CONSUMER.PAUSE.${stream}.${consumer}`,
          { pause_until: ts },
          s.settings.timeoutMs,
        );
        if (!resp.paused) throw new CliError("consumer failed to pause, perhaps a time in the past was given");
        out(`Paused ${stream} > ${consumer} until ${fmtTime(resp.pause_until)} (${humanDuration(Math.round(Number(resp.pause_remaining ?? 0) / 1e9) * 1e9)})`);
      });
    });

  cons
    .command("resume [stream] [consumer]")
    .description("Resume a paused consumer")
    .option("-f, --force", "Force resume without prompting")
    .action(async (streamArg: string | undefined, name: string | undefined, o: { force?: boolean }, cmd: Command) => {
      await withSession(cmd, async (s) => {
        const stream = await pickStream(s, streamArg);
        const consumer = await pickConsumer(s, stream, name);
        const info = await consumerInfo(s, stream, consumer);
        if (info.paused !== true) throw new CliError("consumer is not paused");
        if (!(await confirmOrForce(`Really resume Consumer ${stream} > ${consumer}`, o.force))) return;
        await jsApi(s.nc, `$JS.API.CONSUMER.PAUSE.${stream}.${consumer}`, {}, s.settings.timeoutMs);
        out(`Consumer ${stream} > ${consumer} was resumed while previously paused until ${fmtTime(String(info.config["pause_until"] ?? ""))}`);
      });
    });
}
