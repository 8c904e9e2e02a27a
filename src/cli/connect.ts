// Connection settings from flags, environment and saved contexts, and the helpers every
// command uses to get a connection and a JetStream manager.
import * as fs from "node:fs";
import { connect, credsAuthenticator } from "@nats-io/transport-node";
import type { NatsConnection, ConnectionOptions } from "@nats-io/transport-node";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import type { JetStreamClient, JetStreamManager } from "@nats-io/jetstream";
import type { Command } from "commander";
import { loadContext, selectedContext } from "./context.js";
import { CliError } from "./output.js";
import { parseDuration } from "./parse.js";

export interface GlobalOpts {
  server?: string;
  user?: string;
  password?: string;
  token?: string;
  creds?: string;
  context?: string;
  timeout?: string;
  json?: boolean;
}

export interface ConnSettings {
  servers: string[];
  user: string;
  password: string;
  token: string;
  creds: string;
  timeoutMs: number;
}

const DEFAULT_URL = "nats://127.0.0.1:4222";

function env(name: string): string | undefined {
  const v = process.env[name];
  return v === undefined || v === "" ? undefined : v;
}

/** Flags win over NATS_* environment variables, which win over the context. */
export function resolveSettings(g: GlobalOpts): ConnSettings {
  const ctxName = g.context ?? env("NATS_CONTEXT") ?? selectedContext();
  const ctx = ctxName !== "" ? loadContext(ctxName) : undefined;
  const url = g.server ?? env("NATS_URL") ?? (ctx?.url !== "" ? ctx?.url : undefined) ?? DEFAULT_URL;
  const timeoutNs = parseDuration(g.timeout ?? "5s", "timeout");
  return {
    servers: url.split(",").map((s) => s.trim()).filter((s) => s !== ""),
    user: g.user ?? env("NATS_USER") ?? ctx?.user ?? "",
    password: g.password ?? env("NATS_PASSWORD") ?? ctx?.password ?? "",
    token: g.token ?? env("NATS_TOKEN") ?? ctx?.token ?? "",
    creds: g.creds ?? env("NATS_CREDS") ?? ctx?.creds ?? "",
    timeoutMs: Math.max(1, Math.round(timeoutNs / 1e6)),
  };
}

export function settingsOf(cmd: Command): ConnSettings {
  return resolveSettings(cmd.optsWithGlobals<GlobalOpts>());
}

export async function openConnection(s: ConnSettings, name = "tsnats"): Promise<NatsConnection> {
  const opts: ConnectionOptions = {
    servers: s.servers,
    name,
    timeout: s.timeoutMs,
    // A CLI run should fail fast rather than retry a dead server in the background.
    maxReconnectAttempts: 0,
  };
  if (s.user !== "") opts.user = s.user;
  if (s.password !== "") opts.pass = s.password;
  if (s.token !== "") opts.token = s.token;
  if (s.creds !== "") {
    let creds: Uint8Array;
    try {
      creds = fs.readFileSync(s.creds);
    } catch (e) {
      throw new CliError(`could not read credentials ${s.creds}: ${(e as Error).message}`);
    }
    opts.authenticator = credsAuthenticator(creds);
  }
  try {
    return await connect(opts);
  } catch (e) {
    throw new CliError(`could not connect to ${s.servers.join(",")}: ${(e as Error).message}`);
  }
}

export interface Session {
  nc: NatsConnection;
  settings: ConnSettings;
  jsm(): Promise<JetStreamManager>;
  js(): JetStreamClient;
}

/** Runs fn with a connection, always closing it afterwards. */
export async function withSession<T>(cmd: Command, fn: (s: Session) => Promise<T>): Promise<T> {
  const settings = settingsOf(cmd);
  const nc = await openConnection(settings);
  let manager: JetStreamManager | undefined;
  const session: Session = {
    nc,
    settings,
    async jsm() {
      manager ??= await jetstreamManager(nc, { timeout: settings.timeoutMs });
      return manager;
    },
    js() {
      return jetstream(nc, { timeout: settings.timeoutMs });
    },
  };
  try {
    return await fn(session);
  } finally {
    await nc.drain().catch(() => nc.close());
  }
}
