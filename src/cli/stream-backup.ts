// `stream backup` / `stream restore` over the JetStream snapshot API. The CLI never looks
// inside the snapshot: it stores the server's chunks in stream.tar.s2 and sends them back,
// so any server that implements $JS.API.STREAM.SNAPSHOT / RESTORE can take part.
import * as fs from "node:fs";
import * as path from "node:path";
import type { Command } from "commander";
import { createInbox } from "@nats-io/transport-node";
import { jsApi } from "./api.js";
import { withSession } from "./connect.js";
import { CliError, comma, ibytes, out } from "./output.js";
import { parseBytes, parseIntStrict } from "./parse.js";
import { progressBar } from "./progress.js";
import { printStreamInfo, streamInfo } from "./stream.js";
import { loadConfigFile } from "./stream-config.js";

const DEFAULT_CHUNK_BYTES = 128 * 1024;
const RESTORE_CHUNK_BYTES = 64 * 1024;
const IDLE_LIMIT_MS = 30_000;

interface SnapshotResponse {
  config: Record<string, unknown>;
  state: Record<string, unknown>;
}

export function registerBackup(str: Command): void {
  str
    .command("backup <stream> <target>")
    .alias("snapshot")
    .description("Creates a backup of a stream over the NATS network")
    .option("--progress", "Enables progress reporting using a progress bar (default)")
    .option("--no-progress", "Disables the progress bar")
    .option("--check", "Checks the stream for health prior to backup")
    .option("--consumers", "Enable consumer backups (default)")
    .option("--no-consumers", "Disable consumer backups")
    .option("--chunk-size <bytes>", "Sets a specific chunk size that the server will send")
    .action(
      async (
        stream: string,
        target: string,
        o: { progress?: boolean; check?: boolean; consumers?: boolean; chunkSize?: string },
        cmd: Command,
      ) => {
        await withSession(cmd, async (s) => {
          const info = await streamInfo(s, stream);
          if (info.config["storage"] === "memory") throw new CliError("memory streams do not support snapshots");
          fs.mkdirSync(target, { recursive: true, mode: 0o700 });
          const dataFile = path.join(target, "stream.tar.s2");
          const fd = fs.openSync(dataFile, "w", 0o600);
          const inbox = createInbox();
          let resp: SnapshotResponse = { config: {}, state: {} };
          let bytes = 0;
          let chunks = 0;
          const started = Date.now();
          let bar = progressBar("Backup", 1, false);
          let idle: NodeJS.Timeout | undefined;
          let fail: (e: Error) => void = () => undefined;
          const armIdle = (): void => {
            if (idle !== undefined) clearTimeout(idle);
            idle = setTimeout(() => fail(new CliError("backup timed out waiting for data")), IDLE_LIMIT_MS);
          };
          let sub: ReturnType<typeof s.nc.subscribe> | undefined;
          const finished = new Promise<void>((resolve, reject) => {
            fail = reject;
            sub = s.nc.subscribe(inbox, {
              callback: (err, m) => {
                if (err !== null) return reject(err);
                if (m.data.length === 0) {
                  const code = m.headers?.code ?? 0;
                  if (code !== 0 && code !== 204) reject(new CliError(`backup failed: ${code} ${m.headers?.description ?? ""}`));
                  else resolve();
                  return;
                }
                fs.writeSync(fd, m.data);
                bytes += m.data.length;
                chunks++;
                bar.set(bytes);
                // The server waits for these acks before it sends more (its flow control window).
                if (m.reply !== undefined && m.reply !== "") m.respond();
                armIdle();
              },
            });
          });
          try {
            await s.nc.flush();
            const req = {
              deliver_subject: inbox,
              no_consumers: o.consumers === false,
              jsck: o.check === true,
              chunk_size: o.chunkSize !== undefined ? parseBytes(o.chunkSize, "chunk size") : DEFAULT_CHUNK_BYTES,
            };
            resp = await jsApi<SnapshotResponse>(s.nc, `$JS.API.STREAM.SNAPSHOT.${stream}`, req, s.settings.timeoutMs);
            const expected = Number(resp.state["bytes"] ?? 0);
            out(`Starting backup of Stream "${stream}" with ${ibytes(expected)}`);
            bar = progressBar("Backup", Math.max(expected, 1), o.progress !== false, "bytes");
            armIdle();
            await finished;
          } finally {
            if (idle !== undefined) clearTimeout(idle);
            sub?.unsubscribe();
            fs.closeSync(fd);
            // A failure before the snapshot started leaves this promise unobserved.
            finished.catch(() => undefined);
          }
          bar.done();
          fs.writeFileSync(path.join(target, "backup.json"), JSON.stringify({ config: resp.config, state: resp.state }, null, 2), { mode: 0o600 });
          out();
          out(
            `Received ${ibytes(bytes)} compressed data in ${comma(chunks)} chunks for stream "${stream}" in ${Date.now() - started}ms, ${ibytes(Number(resp.state["bytes"] ?? 0))} uncompressed `,
          );
        });
      },
    );

  str
    .command("restore <dir>")
    .description("Restore a stream over the NATS network")
    .option("--progress", "Enables progress reporting using a progress bar (default)")
    .option("--no-progress", "Disables the progress bar")
    .option("--config <file>", "Load a different configuration when restoring the stream")
    .option("--replicas <n>", "Override how many replicas of the data to create")
    .action(async (dir: string, o: { progress?: boolean; config?: string; replicas?: string }, cmd: Command) => {
      const metaFile = path.join(dir, "backup.json");
      const dataFile = path.join(dir, "stream.tar.s2");
      if (!fs.existsSync(metaFile) || !fs.existsSync(dataFile)) throw new CliError(`${dir} does not hold a backup (backup.json and stream.tar.s2)`);
      const meta = JSON.parse(fs.readFileSync(metaFile, "utf8")) as SnapshotResponse;
      if (o.config !== undefined) {
        const cfg = loadConfigFile(o.config);
        if (cfg.name !== meta.config["name"]) throw new CliError("stream name may not be changed during restore");
        meta.config = cfg;
      }
      if (o.replicas !== undefined) meta.config["num_replicas"] = parseIntStrict(o.replicas, "replicas");
      const name = String(meta.config["name"] ?? "");
      await withSession(cmd, async (s) => {
        const exists = await streamInfo(s, name).then(
          () => true,
          () => false,
        );
        if (exists) throw new CliError(`Stream "${name}" already exist`);
        const resp = await jsApi<{ deliver_subject: string }>(s.nc, `$JS.API.STREAM.RESTORE.${name}`, meta, s.settings.timeoutMs);
        out(`Starting restore of Stream "${name}" from file "${dir}"`);
        out();
        const started = Date.now();
        const size = fs.statSync(dataFile).size;
        const bar = progressBar("Restore", size, o.progress !== false, "bytes");
        const fd = fs.openSync(dataFile, "r");
        const buf = Buffer.alloc(RESTORE_CHUNK_BYTES);
        try {
          for (;;) {
            const n = fs.readSync(fd, buf, 0, buf.length, null);
            if (n === 0) break;
            const r = await s.nc.request(resp.deliver_subject, buf.subarray(0, n), { timeout: s.settings.timeoutMs });
            if (r.data.length > 0 && r.string().includes('"error"')) throw new CliError(`restore failed: ${r.string()}`);
            bar.tick(n);
          }
        } finally {
          fs.closeSync(fd);
        }
        bar.done();
        // The empty message ends the upload; the server answers once the stream is rebuilt.
        const final = await s.nc.request(resp.deliver_subject, new Uint8Array(0), { timeout: 3_600_000 });
        const body = JSON.parse(final.string()) as { error?: { description?: string; err_code?: number } };
        if (body.error !== undefined) throw new CliError(`restore failed: ${body.error.description ?? ""} (${body.error.err_code ?? 0})`);
        out();
        out(`Restored stream "${name}" in ${Math.round((Date.now() - started) / 1000)}s`);
        out();
        printStreamInfo(await streamInfo(s, name), false);
      });
    });
}
