// `pub`, `sub`, `req` and `reply`: core NATS messaging plus JetStream publish and subscribe.
import { Option, type Command } from "commander";
import { headers as makeHeaders, nuid, type Msg, type MsgHdrs, type NatsConnection } from "@nats-io/transport-node";
import type { ConsumerMessages, JsMsg } from "@nats-io/jetstream";
import { withSession, type Session } from "./connect.js";
import { CliError, f, fmtTime, goDuration, log, out } from "./output.js";
import { collect, parseDuration, parseHeaderFlags, parseIntStrict } from "./parse.js";
import { progressBar } from "./progress.js";
import { ephemeralConsumer, printBody, streamNames } from "./stream.js";

const dec = new TextDecoder();
const enc = new TextEncoder();

/**
 * natscli's body/subject templates: {{Count}}, {{ID}}, {{Time}}, {{TimeStamp}}, {{Unix}},
 * {{UnixNano}}, {{Random min max}} (Go template syntax, with or without the leading dot).
 */
export function expandTemplate(text: string, count: number): string {
  return text.replace(/\{\{\s*\.?([A-Za-z]+)((?:\s+-?\d+)*)\s*\}\}/g, (whole, fn: string, args: string) => {
    const a = args.trim() === "" ? [] : args.trim().split(/\s+/).map(Number);
    switch (fn) {
      case "Count":
        return String(count);
      case "ID":
        return nuid.next();
      case "Time":
        return new Date().toTimeString().slice(0, 8);
      case "TimeStamp":
        return new Date().toISOString();
      case "Unix":
        return String(Math.floor(Date.now() / 1000));
      case "UnixNano":
        return (BigInt(Date.now()) * 1_000_000n).toString();
      case "Random": {
        const lo = a[0] ?? 0;
        const hi = a[1] ?? lo + 100;
        return String(lo + Math.floor(Math.random() * Math.max(1, hi - lo)));
      }
      default:
        return whole;
    }
  });
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of process.stdin) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}

async function bodyOf(body: string | undefined, forceStdin: boolean | undefined, quiet: boolean): Promise<string> {
  if (body !== undefined && forceStdin !== true) return body;
  if (forceStdin === true || process.stdin.isTTY !== true) {
    if (!quiet) log("Reading payload from STDIN");
    return readStdin();
  }
  return "";
}

function buildHeaders(flags: string[] | undefined, count: number, templates: boolean): MsgHdrs | undefined {
  const pairs = parseHeaderFlags(flags);
  if (pairs.length === 0) return undefined;
  const h = makeHeaders();
  for (const [k, v] of pairs) h.append(k, templates ? expandTemplate(v, count) : v);
  return h;
}

function printHeaders(h: MsgHdrs | undefined): void {
  if (h === undefined) return;
  let any = false;
  for (const k of h.keys()) {
    for (const v of h.values(k)) {
      out(`${k}: ${v}`);
      any = true;
    }
  }
  if (any) out();
}

interface PubOpts {
  reply?: string;
  header?: string[];
  count: string;
  jetstream?: boolean;
  quiet?: boolean;
  sleep?: string;
  forceStdin?: boolean;
  templates?: boolean;
}

async function pubAction(s: Session, subject: string, bodyArg: string | undefined, o: PubOpts): Promise<void> {
  const count = parseIntStrict(o.count, "count");
  if (count < 1) throw new CliError("--count must be at least 1");
  const quiet = o.quiet === true;
  const body = await bodyOf(bodyArg, o.forceStdin, quiet);
  const templates = o.templates !== false;
  const sleepMs = o.sleep !== undefined ? parseDuration(o.sleep) / 1e6 : 0;
  // natscli swaps the per-message lines for a progress bar on bulk publishes.
  const bulk = count > 20;
  const bar = progressBar("Publishing", count, bulk && !quiet);
  const js = o.jetstream === true ? s.js() : undefined;
  for (let i = 1; i <= count; i++) {
    const data = templates ? expandTemplate(body, i) : body;
    const subj = templates ? expandTemplate(subject, i) : subject;
    const hdrs = buildHeaders(o.header, i, templates);
    if (js !== undefined) {
      if (!bulk && !quiet) log(`Published ${enc.encode(data).length} bytes to "${subj}"`);
      const ack = await js.publish(subj, data, hdrs !== undefined ? { headers: hdrs } : {});
      if (!bulk && !quiet) {
        let line = `Stored in Stream: ${ack.stream} Sequence: ${f(ack.seq)}`;
        if (ack.domain !== undefined && ack.domain !== "") line += ` Domain: "${ack.domain}"`;
        if (ack.duplicate) line += " Duplicate: true";
        log(line);
      }
    } else {
      const opts: { headers?: MsgHdrs; reply?: string } = {};
      if (hdrs !== undefined) opts.headers = hdrs;
      if (o.reply !== undefined) opts.reply = o.reply;
      s.nc.publish(subj, data, opts);
      if (!bulk && !quiet) log(`Published ${enc.encode(data).length} bytes to "${subj}"`);
    }
    bar.tick();
    if (sleepMs > 0 && i < count) await new Promise((r) => setTimeout(r, sleepMs));
  }
  bar.done();
  await s.nc.flush();
}

interface SubOpts {
  queue?: string;
  durable?: string;
  raw?: boolean;
  ack?: boolean;
  count?: string;
  headersOnly?: boolean;
  subjectsOnly?: boolean;
  startSequence?: string;
  all?: boolean;
  new?: boolean;
  last?: boolean;
  since?: string;
  lastPerSubject?: boolean;
  terminateAtEnd?: boolean;
  stream?: string;
  wait?: string;
  timestamp?: boolean;
}

function printCore(m: Msg, n: number, o: SubOpts): void {
  if (o.raw === true) {
    out(dec.decode(m.data));
    return;
  }
  out(`[#${n}] Received on "${m.subject}"${m.reply !== undefined && m.reply !== "" ? ` with reply "${m.reply}"` : ""}`);
  if (o.subjectsOnly === true) return;
  printHeaders(m.headers);
  if (o.headersOnly !== true) printBody(m.data);
}

function printJs(m: JsMsg, n: number, o: SubOpts): void {
  if (o.raw === true) {
    out(dec.decode(m.data));
    return;
  }
  const i = m.info;
  out(
    `[#${n}] Received JetStream message: stream: ${i.stream} seq: ${f(i.streamSequence)} / pending: ${f(i.pending)} / subject: ${m.subject} / time: ${fmtTime(m.time)}`,
  );
  if (o.subjectsOnly === true) return;
  printHeaders(m.headers);
  if (o.headersOnly !== true) printBody(m.data);
}

/** Resolves when fn says stop, on SIGINT/SIGTERM, or after `wait` of silence. */
function untilDone(waitNs: number): { done: Promise<void>; stop: () => void; poke: () => void } {
  let stop: () => void = () => undefined;
  let timer: NodeJS.Timeout | undefined;
  const done = new Promise<void>((resolve) => {
    stop = () => {
      if (timer !== undefined) clearTimeout(timer);
      process.off("SIGINT", stop);
      process.off("SIGTERM", stop);
      resolve();
    };
  });
  process.on("SIGINT", stop);
  process.on("SIGTERM", stop);
  const poke = (): void => {
    if (waitNs <= 0) return;
    if (timer !== undefined) clearTimeout(timer);
    timer = setTimeout(stop, waitNs / 1e6);
  };
  poke();
  return { done, stop, poke };
}

function jsRequested(o: SubOpts): boolean {
  return (
    o.stream !== undefined ||
    o.durable !== undefined ||
    o.all === true ||
    o.new === true ||
    o.last === true ||
    o.since !== undefined ||
    o.lastPerSubject === true ||
    o.startSequence !== undefined
  );
}

async function subJetStream(s: Session, subjects: string[], o: SubOpts, limit: number): Promise<void> {
  let stream = o.stream;
  if (stream === undefined) {
    if (subjects.length === 0) throw new CliError("No subjects or --stream flag provided.");
    const names = await streamNames(s, subjects[0]);
    if (names.length !== 1) throw new CliError(`could not find a single stream holding subject ${subjects[0] ?? ""}, pass --stream`);
    stream = names[0] ?? "";
  }
  const js = s.js();
  const ctl = untilDone(o.wait !== undefined ? parseDuration(o.wait) : 0);
  if (o.durable !== undefined) {
    const c = await js.consumers.get(stream, o.durable);
    log(`Subscribing to JetStream Stream "${stream}" using existing pull consumer "${o.durable}"`);
    await printConsumed(await c.consume(), ctl, o, limit, o.ack !== false);
    return;
  }
  const opts: Record<string, unknown> = {};
  let how = "for new messages";
  if (o.startSequence !== undefined) {
    opts["deliver_policy"] = "by_start_sequence";
    opts["opt_start_seq"] = parseIntStrict(o.startSequence, "start-sequence");
    how = `starting at sequence ${o.startSequence}`;
  } else if (o.all === true) {
    opts["deliver_policy"] = "all";
    how = "from first received message";
  } else if (o.last === true) {
    opts["deliver_policy"] = "last";
    how = "from last received message";
  } else if (o.since !== undefined) {
    const d = parseDuration(o.since);
    opts["deliver_policy"] = "by_start_time";
    opts["opt_start_time"] = new Date(Date.now() - d / 1e6).toISOString();
    how = `since ${goDuration(d)}`;
  } else if (o.lastPerSubject === true) {
    opts["deliver_policy"] = "last_per_subject";
    how = "for last message per subject";
  } else {
    opts["deliver_policy"] = "new";
  }
  log(`Subscribing to JetStream Stream holding messages with subject ${subjects.length > 0 ? subjects.join(", ") : ">"} ${how}`);
  // Older servers insist on a filter for last-per-subject delivery; ">" means all of them.
  const filters = subjects.length === 0 && opts["deliver_policy"] === "last_per_subject" ? [">"] : subjects;
  const c = await ephemeralConsumer(s, stream, opts, filters);
  await printConsumed(await c.consume(), ctl, o, limit, false);
  await c.delete().catch(() => undefined);
}

/** Prints what a consumer delivers (acking each when ack) until limit messages, the end of
 *  the stream with --terminate-at-end, or ctl is done (--wait without a message, a signal). */
async function printConsumed(messages: ConsumerMessages, ctl: ReturnType<typeof untilDone>, o: SubOpts, limit: number, ack: boolean): Promise<void> {
  void ctl.done.then(() => messages.stop());
  let n = 0;
  for await (const m of messages) {
    n++;
    ctl.poke();
    printJs(m, n, o);
    if (ack) m.ack();
    if ((limit > 0 && n >= limit) || (o.terminateAtEnd === true && m.info.pending === 0)) break;
  }
  ctl.stop();
}

async function subCore(nc: NatsConnection, subjects: string[], o: SubOpts, limit: number): Promise<void> {
  if (subjects.length === 0) throw new CliError("No subjects or --stream flag provided.");
  const ctl = untilDone(o.wait !== undefined ? parseDuration(o.wait) : 0);
  let n = 0;
  const subs = subjects.map((subj) =>
    nc.subscribe(subj, {
      ...(o.queue !== undefined ? { queue: o.queue } : {}),
      callback: (err, m) => {
        if (err !== null) {
          log(`subscription error: ${err.message}`);
          ctl.stop();
          return;
        }
        n++;
        ctl.poke();
        printCore(m, n, o);
        // --ack acknowledges JetStream deliveries that reach a plain subscription.
        if (o.ack === true && m.reply?.startsWith("$JS.ACK.") === true) m.respond();
        if (limit > 0 && n >= limit) ctl.stop();
      },
    }),
  );
  await nc.flush();
  log(`Subscribing on ${subjects.join(", ")}${o.queue !== undefined ? ` in group ${o.queue}` : ""}`);
  await ctl.done;
  subs.forEach((x) => x.unsubscribe());
}

export function registerPubSub(program: Command): void {
  program
    .command("pub <subject> [body]")
    .alias("publish")
    .description("Generic data publish utility")
    .option("--reply <subject>", "Sets a custom reply to subject")
    .option("-H, --header <K:V>", "Adds headers to the message using K:V format", collect)
    .option("--count <n>", "Publish multiple messages", "1")
    .option("-J, --jetstream", "Publish messages to JetStream")
    .option("-q, --quiet", "Show just the output received")
    .option("--sleep <duration>", "When publishing multiple messages, sleep between publishes")
    .option("--force-stdin", "Force reading from stdin")
    .option("--templates", "Enables template functions in the body and subject (default)")
    .option("--no-templates", "Disables template functions")
    .action(async (subject: string, body: string | undefined, o: PubOpts, cmd: Command) => {
      await withSession(cmd, (s) => pubAction(s, subject, body, o));
    });

  program
    .command("sub [subjects...]")
    .alias("subscribe")
    .description("Generic subscription client")
    .option("--queue <group>", "Subscribe to a named queue group")
    .option("--durable <name>", "Use a durable consumer (requires JetStream)")
    .option("-r, --raw", "Show the raw data received")
    .option("--ack", "Acknowledge JetStream message that have the correct metadata")
    .option("--no-ack", "Do not acknowledge JetStream messages")
    .option("--count <n>", "Quit after receiving this many messages")
    .option("--headers-only", "Do not render any data, shows only headers")
    .option("--subjects-only", "Prints only the messages' subjects")
    .option("--start-sequence <seq>", "Starts at a specific Stream sequence (requires JetStream)")
    .option("--all", "Delivers all messages found in the Stream (requires JetStream)")
    .option("--new", "Delivers only future messages (requires JetStream)")
    .option("--last", "Delivers the most recent and all future messages (requires JetStream)")
    .option("--since <duration>", "Delivers messages received since a duration like 1d3h5m2s (requires JetStream)")
    .option("--last-per-subject", "Deliver the most recent messages for each subject in the Stream (requires JetStream)")
    .option("-T, --terminate-at-end", "Stops consuming messages from JetStream once all messages were received")
    .option("--stream <stream>", "Subscribe to a specific stream (required JetStream)")
    .option("--wait <duration>", "Unsubscribe after this amount of time without any traffic")
    .action(async (subjects: string[], o: SubOpts, cmd: Command) => {
      const limit = o.count !== undefined ? parseIntStrict(o.count, "count") : 0;
      await withSession(cmd, (s) => (jsRequested(o) ? subJetStream(s, subjects, o, limit) : subCore(s.nc, subjects, o, limit)));
    });

  program
    .command("req <subject> [body]")
    .alias("request")
    .description("Generic request-reply request utility")
    .option("-r, --raw", "Show just the output received")
    .option("-H, --header <K:V>", "Adds headers to the message using K:V format", collect)
    .option("--count <n>", "Publish multiple messages", "1")
    .option("--replies <n>", "Wait for multiple replies from services. 0 waits until timeout", "1")
    .option("--reply-timeout <duration>", "Maximum time between replies when waiting for more than one", "300ms")
    .option("--force-stdin", "Force reading from stdin")
    .addOption(new Option("--no-templates", "Disables template functions"))
    .action(
      async (
        subject: string,
        bodyArg: string | undefined,
        o: { raw?: boolean; header?: string[]; count: string; replies: string; replyTimeout: string; forceStdin?: boolean; templates?: boolean },
        cmd: Command,
      ) => {
        await withSession(cmd, async (s) => {
          const count = parseIntStrict(o.count, "count");
          const replies = parseIntStrict(o.replies, "replies");
          const body = await bodyOf(bodyArg, o.forceStdin, o.raw === true);
          const templates = o.templates !== false;
          for (let i = 1; i <= count; i++) {
            const data = templates ? expandTemplate(body, i) : body;
            const subj = templates ? expandTemplate(subject, i) : subject;
            const hdrs = buildHeaders(o.header, i, templates);
            if (o.raw !== true) log(`Sending request on "${subj}"`);
            const start = process.hrtime.bigint();
            const show = (m: Msg): void => {
              if (o.raw !== true) {
                log(`Received with rtt ${goDuration(Number(process.hrtime.bigint() - start))}`);
                printHeaders(m.headers);
              }
              printBody(m.data);
            };
            if (replies === 1) {
              try {
                show(await s.nc.request(subj, data, { timeout: s.settings.timeoutMs, ...(hdrs !== undefined ? { headers: hdrs } : {}) }));
              } catch (e) {
                if ((e as Error).message.includes("503") || (e as Error).name === "NoRespondersError") {
                  throw new CliError("no responders are available");
                }
                throw e;
              }
            } else {
              const it = await s.nc.requestMany(subj, data, {
                maxWait: s.settings.timeoutMs,
                ...(replies > 0 ? { maxMessages: replies } : {}),
                ...(hdrs !== undefined ? { headers: hdrs } : {}),
              });
              for await (const m of it) show(m);
            }
          }
        });
      },
    );

  program
    .command("reply <subject> [body]")
    .description("Generic service reply utility")
    .option("--echo", "Echo back what is received")
    .option("-q, --queue <group>", "Queue group name", "NATS-RPLY-22")
    .option("-H, --header <K:V>", "Adds headers to the message using K:V format", collect)
    .option("--count <n>", "Quit after receiving this many messages")
    .action(
      async (subject: string, body: string | undefined, o: { echo?: boolean; queue: string; header?: string[]; count?: string }, cmd: Command) => {
        const limit = o.count !== undefined ? parseIntStrict(o.count, "count") : 0;
        const echo = o.echo === true || body === undefined;
        if (body === undefined && o.echo !== true) log("No body or command supplied, enabling echo mode");
        await withSession(cmd, async (s) => {
          const ctl = untilDone(0);
          let n = 0;
          const sub = s.nc.subscribe(subject, {
            queue: o.queue,
            callback: (err, m) => {
              if (err !== null) return ctl.stop();
              n++;
              log(`[#${n}] Received on subject "${m.subject}":`);
              if (m.headers !== undefined) for (const k of m.headers.keys()) for (const v of m.headers.values(k)) log(`${k}: ${v}`);
              out();
              out(dec.decode(m.data));
              const hdrs = buildHeaders(o.header, n, true);
              const reply = echo ? m.data : enc.encode(expandTemplate(body ?? "", n));
              m.respond(reply, hdrs !== undefined ? { headers: hdrs } : undefined);
              if (limit > 0 && n >= limit) ctl.stop();
            },
          });
          await s.nc.flush();
          log(`Listening on "${subject}" in group "${o.queue}"`);
          await ctl.done;
          sub.unsubscribe();
        });
      },
    );
}
