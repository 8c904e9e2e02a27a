// Builds the `tsnats` command tree and turns every failure into one error line and exit 1.
import { Command, CommanderError } from "commander";
import { JetStreamApiError } from "@nats-io/jetstream";
import { TSNATS_VERSION } from "../version.js";
import { ApiError } from "./api.js";
import { registerAccount, registerServer } from "./server.js";
import { registerBench } from "./bench.js";
import { registerConsumer } from "./consumer.js";
import { registerContext } from "./context.js";
import { registerKv } from "./kv.js";
import { registerObject } from "./object.js";
import { CliError } from "./output.js";
import { closePrompts } from "./prompt.js";
import { registerPubSub } from "./pubsub.js";
import { registerStream } from "./stream.js";
import { registerBackup } from "./stream-backup.js";

export function buildProgram(): Command {
  const program = new Command("tsnats");
  program
    .description("NATS utility (a nats CLI work-alike for tsnats and nats-server)")
    .version(TSNATS_VERSION, "--version")
    .option("-s, --server <url>", "NATS server urls (env NATS_URL)")
    .option("--user <user>", "Username or Token (env NATS_USER)")
    .option("--password <password>", "Password (env NATS_PASSWORD)")
    .option("--token <token>", "Token (env NATS_TOKEN)")
    .option("--creds <file>", "User credentials file (env NATS_CREDS)")
    .option("--context <name>", "Configuration context (env NATS_CONTEXT)")
    .option("--timeout <duration>", "Time to wait on responses from NATS", "5s")
    .showSuggestionAfterError(true)
    .exitOverride();
  registerBackup(registerStream(program));
  registerConsumer(program);
  registerPubSub(program);
  registerKv(program);
  registerObject(program);
  registerAccount(program);
  registerServer(program);
  registerBench(program);
  registerContext(program);
  // Subcommands inherit the exit override so that their parse errors return a code too.
  const inherit = (c: Command): void => {
    for (const sub of c.commands) {
      sub.exitOverride();
      sub.showSuggestionAfterError(true);
      inherit(sub);
    }
  };
  inherit(program);
  return program;
}

/** The message a user sees for an error, with the server's description and err_code. */
export function describeError(err: unknown): string {
  if (err instanceof ApiError || err instanceof CliError) return err.message;
  if (err instanceof JetStreamApiError) {
    const api = err.apiError();
    return `${api.description} (${api.err_code})`;
  }
  if (err instanceof Error) {
    const code = (err as { code?: unknown }).code;
    const msg = err.message !== "" ? err.message : err.name;
    if (typeof code === "string" && code !== "" && !msg.includes(code)) return `${msg} (${code})`;
    return msg;
  }
  return String(err);
}

export async function main(argv: string[]): Promise<number> {
  const program = buildProgram();
  try {
    await program.parseAsync(argv);
    return 0;
  } catch (err) {
    if (err instanceof CommanderError) {
      // commander has already printed its message (unknown option, missing argument, help).
      return err.exitCode;
    }
    process.stderr.write(`tsnats: error: ${describeError(err)}\n`);
    return err instanceof CliError ? err.exitCode : 1;
  } finally {
    closePrompts();
  }
}
