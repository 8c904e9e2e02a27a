#!/usr/bin/env node
// tsnats-server: nats-server's command line, config file and signals.

import { createWriteStream } from "node:fs";
import { parseServerFlags, usageText } from "../server/flags.js";
import { loadConfigFile } from "../server/config/to-options.js";
import { mergeOptions, type OptionsPatch, type ServerOptions } from "../server/options.js";
import { StdLogger, type LogSink } from "../runtime/log.js";
import { createServer } from "../compose.js";
import { SERVER_VERSION, TSNATS_VERSION } from "../version.js";

function fail(msg: string): never {
  process.stderr.write(`tsnats-server: ${msg}\n`);
  process.exit(1);
}

function loadOptions(argv: string[]): { opts: ServerOptions; flags: OptionsPatch; configFile: string } {
  let parsed: ReturnType<typeof parseServerFlags>;
  try {
    parsed = parseServerFlags(argv);
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\n\n${usageText()}`);
    process.exit(1);
  }
  if (parsed.showHelp) {
    process.stdout.write(usageText());
    process.exit(0);
  }
  if (parsed.showVersion) {
    process.stdout.write(`tsnats-server: v${TSNATS_VERSION} (nats-server v${SERVER_VERSION} compatible)\n`);
    process.exit(0);
  }
  let fromFile: OptionsPatch = {};
  if (parsed.configFile) {
    try {
      const r = loadConfigFile(parsed.configFile);
      fromFile = r.patch;
      for (const w of r.warnings) process.stderr.write(`[WRN] ${w}\n`);
    } catch (err) {
      fail((err as Error).message);
    }
  }
  if (parsed.checkConfig) {
    process.stdout.write(`tsnats-server: configuration file ${parsed.configFile} is valid\n`);
    process.exit(0);
  }
  const opts = mergeOptions(fromFile, parsed.patch);
  if (opts.jetstream.enabled && opts.jetstream.storeDir === "") opts.jetstream.storeDir = "./data";
  return { opts, flags: parsed.patch, configFile: parsed.configFile };
}

async function main(): Promise<void> {
  const { opts, flags, configFile } = loadOptions(process.argv.slice(2));
  let sink: LogSink = { write: (l) => process.stderr.write(l) };
  if (opts.logFile) {
    const stream = createWriteStream(opts.logFile, { flags: "a" });
    sink = { write: (l) => stream.write(l) };
  }
  const log = new StdLogger(sink, opts.debug, opts.trace, opts.logTime);
  const server = createServer(opts, log);
  try {
    await server.start();
  } catch (err) {
    log.fatal((err as Error).message);
    process.exit(1);
  }

  let stopping = false;
  const stop = (sig: string): void => {
    if (stopping) return;
    stopping = true;
    log.info(`Trapped "${sig}" signal`);
    server.shutdown().then(
      () => process.exit(0),
      (err: unknown) => {
        log.error(String(err));
        process.exit(1);
      },
    );
  };
  process.on("SIGINT", () => stop("interrupt"));
  process.on("SIGTERM", () => stop("terminated"));
  process.on("SIGUSR2", () => {
    server.enterLameDuck().then(
      () => process.exit(0),
      (err: unknown) => {
        log.error(String(err));
        process.exit(1);
      },
    );
  });
  process.on("SIGHUP", () => {
    log.info(`Trapped "hangup" signal`);
    if (!configFile) {
      log.warn("Config reload: no configuration file");
      return;
    }
    try {
      const r = loadConfigFile(configFile);
      server.reload(mergeOptions(r.patch, flags));
    } catch (err) {
      log.error(`Failed to reload server configuration: ${(err as Error).message}`);
    }
  });
}

main().catch((err: unknown) => fail(String(err)));
