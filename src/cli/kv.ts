// `tsnats kv ...`: Key-Value buckets through @nats-io/kv, with natscli's output.
import { Option, type Command } from "commander";
import { Kvm, type KV, type KvEntry, type KvOptions } from "@nats-io/kv";
import { withSession, type Session } from "./connect.js";
import { CliError, Columns, f, fmtTime, humanDuration, ibytes, out, printJSON, renderTable } from "./output.js";
import { parseBytes, parseDuration, parseIntStrict, parseKeyValues } from "./parse.js";
import { confirmOrForce } from "./prompt.js";
import { streamInfo, streamNames } from "./stream.js";

const dec = new TextDecoder();

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of process.stdin) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}

async function valueOf(v: string | undefined): Promise<string> {
  if (v !== undefined) return v;
  if (process.stdin.isTTY === true) throw new CliError("a value is required, pass it as an argument or on STDIN");
  return readStdin();
}

/** Opens an existing bucket; natscli reports a missing one as an error rather than creating it. */
async function openBucket(s: Session, bucket: string): Promise<KV> {
  await streamInfo(s, `KV_${bucket}`);
  return new Kvm(s.nc).open(bucket, { timeout: s.settings.timeoutMs });
}

function opName(op: string): string {
  return op === "PUT" ? "PUT" : op === "DEL" ? "DELETE" : op === "PURGE" ? "PURGE" : op;
}

function printable(v: Uint8Array): string {
  const text = dec.decode(v);
  // eslint-disable-next-line no-control-regex
  return /[\x00-\x08\x0e-\x1f]/.test(text) ? Buffer.from(v).toString("base64") : text;
}

function shortValue(v: Uint8Array): string {
  const val = printable(v);
  return val.length > 40 ? `${val.slice(0, 15)}...${val.slice(-15)}` : val;
}

async function showStatus(s: Session, bucket: string, json: boolean): Promise<void> {
  const info = await streamInfo(s, `KV_${bucket}`);
  if (json) return printJSON(info);
  const cfg = info.config;
  const cols = new Columns(`Information for Key-Value Store Bucket ${bucket} created ${fmtTime(info.created)}`);
  cols.title("Configuration");
  cols.row("Bucket Name", bucket);
  cols.row("History Kept", Number(cfg["max_msgs_per_subject"] ?? 1));
  cols.row("Values Stored", Number(info.state["messages"] ?? 0));
  cols.row("Compressed", cfg["compression"] === "s2");
  cols.row("Per-Key TTL Supported", cfg["allow_msg_ttl"] === true);
  cols.row("Backing Store Kind", "JetStream");
  cols.rowIfNotEmpty("Description", typeof cfg["description"] === "string" ? cfg["description"] : "");
  cols.row("Bucket Size", ibytes(Number(info.state["bytes"] ?? 0)));
  const mb = Number(cfg["max_bytes"] ?? -1);
  cols.row("Maximum Bucket Size", mb === -1 ? "unlimited" : ibytes(mb));
  const mv = Number(cfg["max_msg_size"] ?? -1);
  cols.row("Maximum Value Size", mv === -1 ? "unlimited" : ibytes(mv));
  const age = Number(cfg["max_age"] ?? 0);
  cols.row("Maximum Age", age <= 0 ? "unlimited" : humanDuration(age));
  cols.row("JetStream Stream", String(cfg["name"]));
  cols.row("Storage", cfg["storage"] === "memory" ? "Memory" : "File");
  const rp = cfg["republish"] as { src?: string; dest?: string; headers_only?: boolean } | undefined;
  if (rp !== undefined) cols.row(rp.headers_only === true ? "Republishing Headers" : "Republishing", `${rp.src ?? ""} to ${rp.dest ?? ""}`);
  cols.print();
}

interface AddOpts {
  description?: string;
  history: string;
  storage?: string;
  ttl?: string;
  replicas: string;
  maxValueSize?: string;
  maxBucketSize?: string;
  compress?: boolean;
  metadata?: string[];
  republishSource?: string;
  republishDestination?: string;
  republishHeaders?: boolean;
  json?: boolean;
}

export function registerKv(program: Command): void {
  const kv = program.command("kv").description("Interacts with a JetStream based Key-Value store");

  kv.command("add <bucket>")
    .alias("new")
    .description("Adds a new KV Store Bucket")
    .option("--description <text>", "A description for the bucket")
    .option("--history <n>", "How many historic values to keep per key", "1")
    .addOption(new Option("--storage <type>", "Storage backend to use (file, memory)").choices(["file", "f", "memory", "m"]))
    .option("--ttl <duration>", "How long to keep values for")
    .option("--replicas <n>", "How many replicas of the data to store", "1")
    .option("--max-value-size <bytes>", "Maximum size for any single value")
    .option("--max-bucket-size <bytes>", "Maximum size for the bucket")
    .option("--compress", "Compress the bucket data")
    .option("--metadata <key=value>", "Adds metadata to the stream", (v: string, p: string[] | undefined) => [...(p ?? []), v])
    .option("--republish-source <src>", "Republish messages to --republish-destination")
    .option("--republish-destination <dest>", "Republish destination for messages in --republish-source")
    .option("--republish-headers", "Republish only message headers, no bodies")
    .option("-j, --json", "Produce JSON output")
    .action(async (bucket: string, o: AddOpts, cmd: Command) => {
      const history = parseIntStrict(o.history, "history");
      if (history < 1 || history > 64) throw new CliError("history must be between 1 and 64");
      const opts: Partial<KvOptions> = {
        history,
        replicas: parseIntStrict(o.replicas, "replicas"),
        storage: o.storage === "memory" || o.storage === "m" ? "memory" : "file",
      } as Partial<KvOptions>;
      if (o.description !== undefined) opts.description = o.description;
      if (o.ttl !== undefined) opts.ttl = parseDuration(o.ttl) / 1e6;
      if (o.maxValueSize !== undefined) opts.maxValueSize = parseBytes(o.maxValueSize);
      if (o.maxBucketSize !== undefined) opts.max_bytes = parseBytes(o.maxBucketSize);
      if (o.compress === true) opts.compression = true;
      const md = parseKeyValues(o.metadata);
      if (md !== undefined) opts.metadata = md;
      if (o.republishSource !== undefined && o.republishDestination !== undefined) {
        opts.republish = { src: o.republishSource, dest: o.republishDestination, headers_only: o.republishHeaders === true };
      }
      await withSession(cmd, async (s) => {
        const exists = await streamInfo(s, `KV_${bucket}`).then(
          () => true,
          () => false,
        );
        if (exists) throw new CliError(`bucket ${bucket} already exists`);
        await new Kvm(s.nc).create(bucket, { ...opts, timeout: s.settings.timeoutMs });
        await showStatus(s, bucket, o.json === true);
      });
    });

  kv.command("put <bucket> <key> [value]")
    .description("Puts a value into a key")
    .action(async (bucket: string, key: string, value: string | undefined, _o: unknown, cmd: Command) => {
      const v = await valueOf(value);
      await withSession(cmd, async (s) => {
        await (await openBucket(s, bucket)).put(key, v);
        out(v);
      });
    });

  kv.command("get <bucket> <key>")
    .description("Gets a value for a key")
    .option("--revision <n>", "Gets a specific revision")
    .option("--raw", "Show only the value string")
    .action(async (bucket: string, key: string, o: { revision?: string; raw?: boolean }, cmd: Command) => {
      await withSession(cmd, async (s) => {
        const store = await openBucket(s, bucket);
        const e = await store.get(key, o.revision !== undefined ? { revision: parseIntStrict(o.revision, "revision") } : undefined);
        if (e === null || e.operation !== "PUT") throw new CliError("nats: key not found");
        if (o.raw === true) {
          process.stdout.write(e.value);
          return;
        }
        out(`${e.bucket} > ${e.key} revision: ${e.revision} created @ ${fmtTime(e.created)}`);
        out();
        out(printable(e.value));
        out();
      });
    });

  kv.command("create <bucket> <key> [value]")
    .description("Puts a value into a key only if the key is new or it's last operation was a delete")
    .action(async (bucket: string, key: string, value: string | undefined, _o: unknown, cmd: Command) => {
      const v = await valueOf(value);
      await withSession(cmd, async (s) => {
        await (await openBucket(s, bucket)).create(key, v);
        out(v);
      });
    });

  kv.command("update <bucket> <key> <value> <revision>")
    .description("Updates a key with a new value if the previous value matches the given revision")
    .action(async (bucket: string, key: string, value: string, revision: string, _o: unknown, cmd: Command) => {
      const rev = parseIntStrict(revision, "revision");
      await withSession(cmd, async (s) => {
        await (await openBucket(s, bucket)).update(key, value, rev);
        out(value);
      });
    });

  kv.command("del <bucket> [key]")
    .description("Deletes a key or the entire bucket")
    .option("-f, --force", "Act without confirmation")
    .action(async (bucket: string, key: string | undefined, o: { force?: boolean }, cmd: Command) => {
      await withSession(cmd, async (s) => {
        const store = await openBucket(s, bucket);
        if (key === undefined) {
          if (!(await confirmOrForce(`Delete bucket ${bucket}?`, o.force))) return out("Skipping delete");
          await store.destroy();
          return;
        }
        if (!(await confirmOrForce(`Delete key ${bucket} > ${key}?`, o.force))) return out("Skipping delete");
        await store.delete(key);
      });
    });

  kv.command("purge <bucket> <key>")
    .description("Deletes a key from the bucket, clearing history before creating a delete marker")
    .option("-f, --force", "Act without confirmation")
    .action(async (bucket: string, key: string, o: { force?: boolean }, cmd: Command) => {
      await withSession(cmd, async (s) => {
        const store = await openBucket(s, bucket);
        if (!(await confirmOrForce(`Purge key ${bucket} > ${key}?`, o.force))) return out("Skipping purge");
        await store.purge(key);
      });
    });

  kv.command("history <bucket> <key>")
    .description("Shows the full history for a key")
    .action(async (bucket: string, key: string, _o: unknown, cmd: Command) => {
      await withSession(cmd, async (s) => {
        const store = await openBucket(s, bucket);
        const rows: Array<Array<string | number>> = [];
        for await (const e of await store.history({ key })) {
          rows.push([e.key, e.revision, opName(e.operation), fmtTime(e.created), f(e.length), shortValue(e.value)]);
        }
        out(renderTable(`History for ${bucket} > ${key}`, ["Key", "Revision", "Op", "Created", "Length", "Value"], rows));
        out();
      });
    });

  kv.command("watch <bucket> [key]")
    .description("Watch the bucket or a specific key for updated")
    .option("--history", "Includes historic values")
    .option("--no-deletes", "Excludes deletes from watched values")
    .option("--updates", "Only show new values written")
    .option("--count <n>", "Exit after this many updates (tsnats extension)")
    .action(async (bucket: string, key: string | undefined, o: { history?: boolean; deletes?: boolean; updates?: boolean; count?: string }, cmd: Command) => {
      const limit = o.count !== undefined ? parseIntStrict(o.count, "count") : 0;
      await withSession(cmd, async (s) => {
        const store = await openBucket(s, bucket);
        const include = o.history === true ? "history" : o.updates === true ? "updates" : "";
        const w = await store.watch({ key: key ?? ">", include, ignoreDeletes: o.deletes === false } as Parameters<KV["watch"]>[0]);
        const stop = (): void => w.stop();
        process.once("SIGINT", stop);
        process.once("SIGTERM", stop);
        let n = 0;
        for await (const e of w as AsyncIterable<KvEntry>) {
          if (e.operation === "PUT") out(`[${fmtTime(e.created)}] ${opName(e.operation)} ${e.bucket} > ${e.key}: ${dec.decode(e.value)}`);
          else out(`[${fmtTime(e.created)}] ${opName(e.operation)} ${e.bucket} > ${e.key}`);
          n++;
          if (limit > 0 && n >= limit) break;
        }
        process.off("SIGINT", stop);
        process.off("SIGTERM", stop);
      });
    });

  kv.command("ls [bucket]")
    .alias("list")
    .description("List available buckets or the keys in a bucket")
    .option("-n, --names", "Show just the bucket names")
    .action(async (bucket: string | undefined, o: { names?: boolean }, cmd: Command) => {
      await withSession(cmd, async (s) => {
        if (bucket !== undefined) {
          const store = await openBucket(s, bucket);
          const keys: string[] = [];
          for await (const k of await store.keys()) keys.push(k);
          if (keys.length === 0) return out("No keys found in bucket");
          keys.sort().forEach((k) => out(k));
          return;
        }
        const names = (await streamNames(s)).filter((n) => n.startsWith("KV_"));
        if (o.names === true) return names.forEach((n) => out(n.slice(3)));
        if (names.length === 0) return out("No Key-Value buckets found");
        const infos = [];
        for (const n of names) infos.push(await streamInfo(s, n));
        infos.sort((a, b) => Number(a.state["bytes"] ?? 0) - Number(b.state["bytes"] ?? 0));
        const rows = infos.map((i) => {
          const last = String(i.state["last_ts"] ?? "");
          return [
            String(i.config["name"]).slice(3),
            String(i.config["description"] ?? ""),
            fmtTime(i.created),
            ibytes(Number(i.state["bytes"] ?? 0)),
            Number(i.state["messages"] ?? 0),
            last === "" || last.startsWith("0001") ? "never" : humanDuration((Date.now() - Date.parse(last)) * 1e6),
          ];
        });
        out(renderTable("Key-Value Buckets", ["Bucket", "Description", "Created", "Size", "Values", "Last Update"], rows));
        out();
      });
    });

  kv.command("status <bucket>")
    .alias("info")
    .description("View the status of a KV store")
    .option("-j, --json", "Produce JSON output")
    .action(async (bucket: string, o: { json?: boolean }, cmd: Command) => {
      await withSession(cmd, (s) => showStatus(s, bucket, o.json === true));
    });

  kv.command("rm <bucket>")
    .description("Removes a bucket (natscli: kv del <bucket>)")
    .option("-f, --force", "Act without confirmation")
    .action(async (bucket: string, o: { force?: boolean }, cmd: Command) => {
      await withSession(cmd, async (s) => {
        const store = await openBucket(s, bucket);
        if (!(await confirmOrForce(`Delete bucket ${bucket}?`, o.force))) return out("Skipping delete");
        await store.destroy();
      });
    });
}
