// The embedding API: start a tsnats server in-process, for tests and applications.
//
//   import { startServer } from "tsnats";
//   const srv = await startServer({ port: 0, jetstream: { enabled: true, storeDir } });
//   ... connect to srv.url ...
//   await srv.close();

import { mergeOptions, type OptionsPatch } from "./server/options.js";
import { createServer } from "./compose.js";
import type { Server } from "./server/server.js";
import { nullLogger, StdLogger, type Logger } from "./runtime/log.js";

export interface StartOptions extends OptionsPatch {
  /** true: log to stderr in nats-server style; a Logger: log there; default: silent. */
  logger?: boolean | Logger;
}

export interface RunningServer {
  readonly url: string;
  readonly port: number;
  readonly server: Server;
  close(): Promise<void>;
}

export async function startServer(opts: StartOptions = {}): Promise<RunningServer> {
  const { logger, ...patch } = opts;
  // Embedded servers default to loopback: tests and apps rarely mean to listen publicly.
  const o = mergeOptions({ host: "127.0.0.1" }, patch);
  if (o.port < 0) o.port = 0;
  // The monitor listens where the clients do unless told otherwise (nats-server's http_host
  // defaults to host), so an embedded server with a monitor port stays on loopback too.
  if (o.httpPort !== 0 && patch.httpHost === undefined) o.httpHost = o.host;
  if (o.jetstream.enabled && o.jetstream.storeDir === "") {
    throw new Error("jetstream.storeDir is required when JetStream is enabled");
  }
  const log: Logger =
    logger === true
      ? new StdLogger({ write: (l) => process.stderr.write(l) }, o.debug, o.trace)
      : logger && typeof logger === "object"
        ? logger
        : nullLogger;
  const server = createServer(o, log);
  await server.start();
  const host = o.host === "0.0.0.0" ? "127.0.0.1" : o.host;
  return {
    url: `nats://${host}:${server.port}`,
    port: server.port,
    server,
    close: () => server.shutdown(),
  };
}

export { Server } from "./server/server.js";
export { createServer } from "./compose.js";
export type { ServerOptions, OptionsPatch } from "./server/options.js";
export { SERVER_VERSION, TSNATS_VERSION } from "./version.js";
