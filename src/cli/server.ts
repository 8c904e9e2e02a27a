// `account info`, `server ping`, `server info` and `server check jetstream`.
// The $SYS requests need a system account; without one these commands fall back to what
// the connected server announced in its INFO, so they work against any server.
import type { Command } from "commander";
import type { ServerInfo } from "@nats-io/transport-node";
import { jsApi } from "./api.js";
import { withSession, type Session } from "./connect.js";
import { CliError, Columns, f, goDuration, humanDuration, ibytes, out, printJSON } from "./output.js";
import { parseIntStrict } from "./parse.js";

interface AccountInfoResp {
  memory: number;
  storage: number;
  reserved_memory?: number;
  reserved_storage?: number;
  streams: number;
  consumers: number;
  domain?: string;
  limits: {
    max_memory: number;
    max_storage: number;
    max_streams: number;
    max_consumers: number;
    max_ack_pending?: number;
    memory_max_stream_bytes?: number;
    storage_max_stream_bytes?: number;
    max_bytes_required?: boolean;
  };
  api: { total: number; errors: number; level?: number };
}

function unl(n: number | undefined, render: (n: number) => string = f): string {
  return n === undefined || n <= 0 ? "Unlimited" : render(n);
}

async function rttOf(s: Session): Promise<number> {
  return Math.round((await s.nc.rtt()) * 1e6);
}

function serverInfo(s: Session): ServerInfo {
  const i = s.nc.info;
  if (i === undefined) throw new CliError("not connected");
  return i;
}

async function accountInfo(s: Session, json: boolean): Promise<void> {
  const info = serverInfo(s);
  let js: AccountInfoResp | undefined;
  let jsErr = "";
  try {
    js = await jsApi<AccountInfoResp>(s.nc, "$JS.API.INFO", undefined, s.settings.timeoutMs);
  } catch (e) {
    jsErr = (e as Error).message;
  }
  if (json) return printJSON({ server: info, jetstream: js ?? null });
  const rtt = await rttOf(s);
  const cols = new Columns("Account Information");
  cols.row("User", s.settings.user);
  cols.row("Account", (info as { account?: string }).account ?? "$G");
  cols.row("Expires", "never");
  cols.row("Client ID", info.client_id);
  cols.row("Client IP", info.client_ip ?? "");
  cols.row("RTT", goDuration(rtt));
  cols.row("Headers Supported", info.headers === true);
  cols.row("Maximum Payload", ibytes(info.max_payload));
  cols.row("Connected URL", s.nc.getServer());
  cols.row("Connected Address", `${info.host}:${info.port}`);
  cols.row("Connected Server ID", info.server_id);
  cols.row("Connected Server Version", info.version);
  cols.row("TLS Connection", info.tls_required === true ? "yes" : "no");
  if (js === undefined) {
    cols.title("JetStream Account Information");
    cols.row("JetStream", `not available: ${jsErr}`);
    cols.print();
    return;
  }
  cols.title("JetStream Account Information");
  cols.title("Account Usage");
  cols.row("Storage", ibytes(js.storage));
  cols.row("Memory", ibytes(js.memory));
  cols.row("Streams", js.streams);
  cols.row("Consumers", js.consumers);
  cols.title("Account Limits");
  cols.row("Max Message Payload", ibytes(info.max_payload));
  cols.title("Configuration Requirements");
  cols.row("Stream Requires Max Bytes Set", js.limits.max_bytes_required === true);
  cols.row("Consumer Maximum Ack Pending", unl(js.limits.max_ack_pending));
  cols.title("Stream Resource Usage Limits");
  cols.row("Memory", `${ibytes(js.memory)} of ${unl(js.limits.max_memory, ibytes)}`);
  cols.row("Memory Per Stream", unl(js.limits.memory_max_stream_bytes, ibytes));
  cols.row("Storage", `${ibytes(js.storage)} of ${unl(js.limits.max_storage, ibytes)}`);
  cols.row("Storage Per Stream", unl(js.limits.storage_max_stream_bytes, ibytes));
  cols.row("Streams", `${f(js.streams)} of ${unl(js.limits.max_streams)}`);
  cols.row("Consumers", `${f(js.consumers)} of ${unl(js.limits.max_consumers)}`);
  cols.print();
}

interface PingReply {
  server: { name: string; id: string };
}

/** $SYS.REQ.SERVER.PING answers, or [] when there is no system account to answer. */
async function sysPing(s: Session, waitMs: number, expect: number): Promise<Array<{ name: string; id: string; rttNs: number }>> {
  const start = process.hrtime.bigint();
  const replies: Array<{ name: string; id: string; rttNs: number }> = [];
  try {
    const it = await s.nc.requestMany("$SYS.REQ.SERVER.PING", new Uint8Array(0), {
      maxWait: waitMs,
      ...(expect > 0 ? { maxMessages: expect } : {}),
    });
    for await (const m of it) {
      if (m.data.length === 0) continue;
      const r = JSON.parse(m.string()) as PingReply;
      replies.push({ name: r.server.name, id: r.server.id, rttNs: Number(process.hrtime.bigint() - start) });
    }
  } catch {
    return [];
  }
  return replies;
}

export function registerAccount(program: Command): void {
  const acct = program.command("account").alias("a").description("Account information and status");
  acct
    .command("info")
    .description("Account information")
    .option("-j, --json", "Produce JSON output")
    .action(async (o: { json?: boolean }, cmd: Command) => {
      await withSession(cmd, (s) => accountInfo(s, o.json === true));
    });
}

export function registerServer(program: Command): void {
  const srv = program.command("server").alias("sv").description("Server information");

  srv
    .command("ping")
    .description("Ping all servers")
    .option("--expect <n>", "How many servers to expect")
    .option("--id", "Include the Server ID in the output")
    .action(async (o: { expect?: string; id?: boolean }, cmd: Command) => {
      const expect = o.expect !== undefined ? parseIntStrict(o.expect, "expect") : 0;
      await withSession(cmd, async (s) => {
        let replies = await sysPing(s, Math.min(s.settings.timeoutMs, 2000), expect);
        if (replies.length === 0) {
          // No system account: ping the connected server at the protocol level instead.
          const info = serverInfo(s);
          replies = [{ name: info.server_name ?? info.server_id, id: info.server_id, rttNs: await rttOf(s) }];
        }
        for (const r of replies) {
          const rtt = humanDuration(r.rttNs);
          out(o.id === true ? `${r.id} ${r.name.padEnd(60)} rtt=${rtt}` : `${r.name.padEnd(60)} rtt=${rtt}`);
        }
        if (expect > 0 && replies.length < expect) out(`\nMissing ${expect - replies.length} server(s)`);
        const ms = replies.map((r) => r.rttNs / 1e6);
        out();
        out("---- ping statistics ----");
        out(
          `${replies.length} replies max: ${Math.max(...ms).toFixed(2)} min: ${Math.min(...ms).toFixed(2)} avg: ${(ms.reduce((a, b) => a + b, 0) / ms.length).toFixed(2)}`,
        );
      });
    });

  srv
    .command("info")
    .description("Show information about the connected server")
    .option("-j, --json", "Produce JSON output")
    .action(async (o: { json?: boolean }, cmd: Command) => {
      await withSession(cmd, async (s) => {
        const info = serverInfo(s);
        let varz: Record<string, unknown> | undefined;
        try {
          const m = await s.nc.request(`$SYS.REQ.SERVER.${info.server_id}.VARZ`, new Uint8Array(0), { timeout: 1000 });
          const parsed = JSON.parse(m.string()) as { data?: Record<string, unknown> };
          varz = parsed.data;
        } catch {
          varz = undefined;
        }
        if (o.json === true) return printJSON(varz ?? info);
        const cols = new Columns(`Server information for ${info.server_name ?? info.server_id} (${info.server_id})`);
        cols.title("Process Details");
        cols.row("Version", info.version);
        if (typeof info.git_commit === "string") cols.row("Git Commit", info.git_commit);
        if (typeof info.go === "string") cols.row("Go Version", info.go);
        if (varz !== undefined) {
          cols.row("Start Time", String(varz["start"] ?? ""));
          cols.row("Uptime", String(varz["uptime"] ?? ""));
        }
        cols.title("Connection Details");
        cols.row("Auth Required", info.auth_required === true);
        cols.row("TLS Required", info.tls_required === true);
        cols.row("Host", `${info.host}:${info.port}`);
        for (const [i, u] of (info.connect_urls ?? []).entries()) cols.row(i === 0 ? "Client URLs" : "", u);
        cols.title("JetStream");
        cols.row("Enabled", info.jetstream === true);
        if (varz !== undefined) {
          const js = varz["jetstream"] as { config?: { store_dir?: string; max_memory?: number; max_storage?: number } } | undefined;
          if (js?.config !== undefined) {
            cols.row("Storage Directory", js.config.store_dir ?? "");
            cols.row("Maximum Memory Storage", ibytes(js.config.max_memory ?? 0));
            cols.row("Maximum File Storage", ibytes(js.config.max_storage ?? 0));
          }
        }
        cols.title("Limits");
        cols.row("Maximum Payload", ibytes(info.max_payload));
        if (varz !== undefined) {
          cols.row("Maximum Connections", Number(varz["max_connections"] ?? 0));
          cols.title("Statistics");
          cols.row("Connections", Number(varz["connections"] ?? 0));
          cols.row("Subscriptions", Number(varz["subscriptions"] ?? 0));
          cols.row("Messages", `${f(Number(varz["in_msgs"] ?? 0))} in ${f(Number(varz["out_msgs"] ?? 0))} out`);
          cols.row("Bytes", `${ibytes(Number(varz["in_bytes"] ?? 0))} in ${ibytes(Number(varz["out_bytes"] ?? 0))} out`);
          cols.row("Slow Consumers", Number(varz["slow_consumers"] ?? 0));
        } else {
          cols.line();
          cols.line("(statistics need a system account; showing the server's INFO only)");
        }
        cols.print();
      });
    });

  const check = srv.command("check").description("Health check for NATS servers");
  check
    .command("jetstream")
    .description("Checks JetStream availability and usage of the connected account")
    .option("--mem-warn <pct>", "Warning threshold for memory usage, in percent", "75")
    .option("--mem-critical <pct>", "Critical threshold for memory usage, in percent", "90")
    .option("--store-warn <pct>", "Warning threshold for storage usage, in percent", "75")
    .option("--store-critical <pct>", "Critical threshold for storage usage, in percent", "90")
    .action(async (o: { memWarn: string; memCritical: string; storeWarn: string; storeCritical: string }, cmd: Command) => {
      await withSession(cmd, async (s) => {
        let js: AccountInfoResp;
        try {
          js = await jsApi<AccountInfoResp>(s.nc, "$JS.API.INFO", undefined, s.settings.timeoutMs);
        } catch (e) {
          out(`JetStream CRITICAL - ${(e as Error).message}`);
          throw new CliError("JetStream check failed", 2);
        }
        const pct = (used: number, max: number): number => (max > 0 ? (used / max) * 100 : 0);
        const memPct = pct(js.memory, js.limits.max_memory);
        const storePct = pct(js.storage, js.limits.max_storage);
        const crit = memPct >= Number(o.memCritical) || storePct >= Number(o.storeCritical);
        const warn = memPct >= Number(o.memWarn) || storePct >= Number(o.storeWarn);
        const status = crit ? "CRITICAL" : warn ? "WARNING" : "OK";
        out(
          `JetStream ${status} memory=${js.memory}B memory_pct=${memPct.toFixed(0)}% storage=${js.storage}B storage_pct=${storePct.toFixed(0)}% streams=${js.streams} consumers=${js.consumers}`,
        );
        if (crit) throw new CliError("JetStream usage is critical", 2);
        if (warn) throw new CliError("JetStream usage is above the warning threshold", 1);
      });
    });
}
