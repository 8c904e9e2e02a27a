// `tsnats object ...`: Object Store buckets through @nats-io/obj, with natscli's output.
import * as fs from "node:fs";
import * as path from "node:path";
import { Readable } from "node:stream";
import { Option, type Command } from "commander";
import { headers as makeHeaders } from "@nats-io/transport-node";
import { Objm, type ObjectInfo, type ObjectStore, type ObjectStoreMeta } from "@nats-io/obj";
import { withSession, type Session } from "./connect.js";
import { CliError, Columns, f, fmtTime, humanDuration, ibytes, out, renderTable } from "./output.js";
import { collect, parseBytes, parseDuration, parseHeaderFlags, parseIntStrict } from "./parse.js";
import { progressBar } from "./progress.js";
import { confirmOrForce } from "./prompt.js";
import { streamInfo, streamNames } from "./stream.js";

async function openStore(s: Session, bucket: string): Promise<ObjectStore> {
  await streamInfo(s, `OBJ_${bucket}`);
  return new Objm(s.nc).open(bucket);
}

async function showBucket(s: Session, bucket: string): Promise<void> {
  const info = await streamInfo(s, `OBJ_${bucket}`);
  const st = await (await openStore(s, bucket)).status();
  const cols = new Columns(`Information for Object Store Bucket ${bucket} created ${fmtTime(info.created)}`);
  cols.title("Configuration");
  cols.row("Bucket Name", bucket);
  cols.rowIfNotEmpty("Description", st.description);
  cols.row("Replicas", st.replicas);
  cols.row("TTL", st.ttl <= 0 ? "unlimited" : humanDuration(st.ttl));
  cols.row("Sealed", st.sealed);
  cols.row("Size", ibytes(st.size));
  const mb = Number(info.config["max_bytes"] ?? -1);
  cols.row("Maximum Bucket Size", mb === -1 ? "unlimited" : ibytes(mb));
  cols.row("Storage", st.storage === "memory" ? "Memory" : "File");
  cols.row("Backing Store Kind", st.backingStore);
  cols.row("JetStream Stream", String(info.config["name"]));
  cols.print();
}

function showObject(i: ObjectInfo): void {
  const cols = new Columns(`Object information for ${i.bucket} > ${i.name}`);
  cols.rowIfNotEmpty("Description", i.description);
  cols.row("Size", ibytes(i.size));
  cols.row("Modification Time", fmtTime(i.mtime));
  cols.row("Chunks", i.chunks);
  const [alg = "", b64 = ""] = i.digest.split("=", 2);
  const hex = Buffer.from(i.digest.slice(alg.length + 1) || b64, "base64url").toString("hex");
  cols.row("Digest", `${alg.replace(/-$/, "")} ${hex}`);
  cols.rowIf("Deleted", true, i.deleted);
  if (i.headers !== undefined) {
    const keys = [...i.headers.keys()];
    if (keys.length > 0) {
      cols.title("Headers");
      for (const k of keys) cols.row(k, i.headers.values(k).join(", "));
    }
  }
  cols.print();
}

export function registerObject(program: Command): void {
  const obj = program.command("object").alias("obj").description("Interacts with a JetStream based Object store");

  obj
    .command("add <bucket>")
    .description("Adds a new Object Store Bucket")
    .option("--ttl <duration>", "How long to keep objects for")
    .option("--replicas <n>", "How many replicas of the data to store", "1")
    .option("--max-bucket-size <bytes>", "Maximum size for the bucket")
    .option("--description <text>", "A description for the bucket")
    .addOption(new Option("--storage <type>", "Storage backend to use (file, memory)").choices(["file", "f", "memory", "m"]))
    .option("--compress", "Compress the bucket data")
    .action(
      async (bucket: string, o: { ttl?: string; replicas: string; maxBucketSize?: string; description?: string; storage?: string; compress?: boolean }, cmd: Command) => {
        await withSession(cmd, async (s) => {
          const exists = await streamInfo(s, `OBJ_${bucket}`).then(
            () => true,
            () => false,
          );
          if (exists) throw new CliError(`bucket ${bucket} already exists`);
          const opts: Record<string, unknown> = {
            replicas: parseIntStrict(o.replicas, "replicas"),
            storage: o.storage === "memory" || o.storage === "m" ? "memory" : "file",
          };
          if (o.ttl !== undefined) opts["ttl"] = parseDuration(o.ttl);
          if (o.maxBucketSize !== undefined) opts["max_bytes"] = parseBytes(o.maxBucketSize);
          if (o.description !== undefined) opts["description"] = o.description;
          if (o.compress === true) opts["compression"] = true;
          await new Objm(s.nc).create(bucket, opts);
          await showBucket(s, bucket);
        });
      },
    );

  obj
    .command("put <bucket> [file]")
    .description("Puts a file into the store")
    .option("--name <name>", "Override the name supplied to the object store")
    .option("--description <text>", "Sets an optional description for the object")
    .option("-H, --header <K:V>", "Adds headers to the object using K:V format", collect)
    .option("--no-progress", "Disable progress bars")
    .option("-f, --force", "Act without confirmation")
    .action(
      async (bucket: string, file: string | undefined, o: { name?: string; description?: string; header?: string[]; progress?: boolean; force?: boolean }, cmd: Command) => {
        if (file === undefined && o.name === undefined) throw new CliError("--name is required when reading from STDIN");
        if (file !== undefined && !fs.existsSync(file)) throw new CliError(`path '${file}' does not exist`);
        const name = o.name ?? path.basename(file ?? "");
        await withSession(cmd, async (s) => {
          const store = await openStore(s, bucket);
          const existing = await store.info(name);
          if (existing !== null && !existing.deleted && !(await confirmOrForce(`Replace existing file ${bucket} > ${name}`, o.force))) {
            return out("Skipping put");
          }
          const meta: ObjectStoreMeta = { name };
          if (o.description !== undefined) meta.description = o.description;
          const pairs = parseHeaderFlags(o.header);
          if (pairs.length > 0) {
            const h = makeHeaders();
            for (const [k, v] of pairs) h.append(k, v);
            meta.headers = h;
          }
          const size = file !== undefined ? fs.statSync(file).size : 0;
          const bar = progressBar("Uploading", size, o.progress !== false, "bytes");
          const source = file !== undefined ? fs.createReadStream(file) : process.stdin;
          source.on("data", (c: Buffer | string) => bar.tick(c.length));
          const rs = Readable.toWeb(source) as ReadableStream<Uint8Array>;
          const info = await store.put(meta, rs);
          bar.done();
          showObject(info);
        });
      },
    );

  obj
    .command("get <bucket> <file>")
    .description("Retrieves a file from the store")
    .option("-O, --output <file>", "Override the output file name")
    .option("--no-progress", "Disable progress bars")
    .option("-f, --force", "Act without confirmation")
    .action(async (bucket: string, file: string, o: { output?: string; progress?: boolean; force?: boolean }, cmd: Command) => {
      await withSession(cmd, async (s) => {
        const store = await openStore(s, bucket);
        const res = await store.get(file);
        if (res === null) throw new CliError("nats: object not found");
        const target = o.output ?? path.basename(file);
        const toStdout = target === "-";
        if (!toStdout && fs.existsSync(target) && !(await confirmOrForce(`Replace existing target file ${target}`, o.force))) return out("Skipping write");
        const started = Date.now();
        const bar = progressBar("Downloading", res.info.size, o.progress !== false && !toStdout, "bytes");
        const fd = toStdout ? 1 : fs.openSync(target, "w", 0o600);
        let written = 0;
        const reader = res.data.getReader();
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          fs.writeSync(fd, value);
          written += value.length;
          bar.tick(value.length);
        }
        const err = await res.error;
        if (!toStdout) fs.closeSync(fd);
        bar.done();
        if (err !== null && err !== undefined) throw err;
        if (!toStdout) out(`Wrote: ${ibytes(written)} to ${target} in ${humanDuration((Date.now() - started) * 1e6)}`);
      });
    });

  obj
    .command("ls [bucket]")
    .description("List buckets or contents of a specific bucket")
    .option("-n, --names", "When listing buckets, show just the bucket names")
    .action(async (bucket: string | undefined, o: { names?: boolean }, cmd: Command) => {
      await withSession(cmd, async (s) => {
        if (bucket !== undefined) {
          const list = (await (await openStore(s, bucket)).list()).filter((i) => !i.deleted);
          if (o.names === true) return list.forEach((i) => out(i.name));
          if (list.length === 0) return out("No entries found");
          out(renderTable("Bucket Contents", ["Name", "Size", "Time"], list.map((i) => [i.name, ibytes(i.size), fmtTime(i.mtime)])));
          out();
          return;
        }
        const names = (await streamNames(s)).filter((n) => n.startsWith("OBJ_"));
        if (names.length === 0) return out("No Object Store buckets found");
        if (o.names === true) return names.forEach((n) => out(n.slice(4)));
        const rows = [];
        for (const n of names) {
          const i = await streamInfo(s, n);
          const last = String(i.state["last_ts"] ?? "");
          rows.push([
            n.slice(4),
            String(i.config["description"] ?? ""),
            fmtTime(i.created),
            ibytes(Number(i.state["bytes"] ?? 0)),
            last === "" || last.startsWith("0001") ? "never" : humanDuration((Date.now() - Date.parse(last)) * 1e6),
          ]);
        }
        out(renderTable("Object Store Buckets", ["Bucket", "Description", "Created", "Size", "Last Update"], rows));
        out();
      });
    });

  obj
    .command("info <bucket> [file]")
    .alias("show")
    .description("Get information about a bucket or object")
    .action(async (bucket: string, file: string | undefined, _o: unknown, cmd: Command) => {
      await withSession(cmd, async (s) => {
        if (file === undefined) return showBucket(s, bucket);
        const i = await (await openStore(s, bucket)).info(file);
        if (i === null) throw new CliError("nats: object not found");
        showObject(i);
      });
    });

  obj
    .command("rm <bucket> [file]")
    .alias("del")
    .description("Deletes a file or bucket from the store")
    .option("-f, --force", "Act without confirmation")
    .action(async (bucket: string, file: string | undefined, o: { force?: boolean }, cmd: Command) => {
      await withSession(cmd, async (s) => {
        const store = await openStore(s, bucket);
        if (file === undefined) {
          if (!(await confirmOrForce(`Delete bucket ${bucket}?`, o.force))) return out("Skipping delete");
          await store.destroy();
          return;
        }
        const i = await store.info(file);
        if (i === null || i.deleted) throw new CliError("nats: object not found");
        if (!(await confirmOrForce(`Delete ${f(i.size)} byte file ${bucket} > ${file}?`, o.force))) return out("Skipping delete");
        await store.delete(file);
        out(`Removed ${bucket} > ${file}`);
      });
    });
}
