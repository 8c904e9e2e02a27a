// Secure transports (issue 13): core pub -> sub over TLS and over WebSocket, and the rate of
// TLS connection setup, with plain TCP reference rows so the overhead shows.
//
// The runner's server for this suite is a plain one (the reference rows run there). Each TLS
// or WebSocket case starts its own server of the same kind with a config holding only what
// that group needs, so a server that refuses one block (tsnats has no WebSocket listener yet)
// still runs the other group; its refusal becomes that row's error cell.

import path from "node:path";
import tls from "node:tls";
import { makeCerts, CERT_SERVERNAME, type BenchCerts } from "../lib/certs.js";
import { RawConn, TCP, type Transport } from "../lib/conn.js";
import { OwnServerContext } from "../lib/context.js";
import { deadlineAfter, latencyStats, nowNs } from "../lib/load.js";
import { freePort, HOST, ServerProc, waitForListen } from "../lib/servers.js";
import type { BenchOptions, CaseContext, CaseDef, MetricDef, SuiteDef } from "../lib/types.js";
import { pubSub, RATE_METRICS } from "./core.js";

const SETUP_METRICS: MetricDef[] = [
  { label: "connections/s", unit: "conns/s", better: "higher" },
  { label: "p50", unit: "µs", better: "lower" },
  { label: "server CPU µs/conn", unit: "µs", better: "lower" },
];

type Group = "tls" | "ws";

function tlsConfig(certs: BenchCerts): string {
  return `tls {\n  cert_file: "${certs.certFile}"\n  key_file: "${certs.keyFile}"\n  timeout: 5\n}\n`;
}

function wsConfig(port: number): string {
  return `websocket {\n  listen: "${HOST}:${port}"\n  no_tls: true\n}\n`;
}

/** The one line that says why a server did not start (its last log line), temp paths cut. */
function startFailure(e: unknown): string {
  const text = e instanceof Error ? e.message : String(e);
  const lines = text.split("\n").filter((l) => l.trim() !== "");
  const why = lines.length > 1 ? lines[lines.length - 1]! : (lines[0] ?? "");
  // "tsnats-server: /tmp/.../server.conf:1:1: field ...; refusing to start ..." -> "server.conf:1:1: field ..."
  return why
    .replace(/^\S+: (?=\S*server\.conf)/, "")
    .replace(/\S*\/(server\.conf)/g, "$1")
    .split("; ")[0]!;
}

/**
 * Start a server of ctx.server's kind configured for `group` (TLS on the client port, or a
 * WebSocket listener without TLS), run `body` against it with connections over that
 * transport, then stop it (its temp dir, certificates included, goes with it).
 */
async function onGroupServer<R>(
  ctx: CaseContext,
  group: Group,
  body: (own: OwnServerContext, transport: Transport) => Promise<R>,
): Promise<R> {
  const made: { certs?: BenchCerts } = {};
  const wsPort = group === "ws" ? await freePort() : 0;
  let proc: ServerProc;
  try {
    proc = await ServerProc.start({
      name: ctx.server.name,
      jetstream: false,
      config: (dir) => {
        if (group === "ws") return wsConfig(wsPort);
        made.certs = makeCerts(path.join(dir, "certs"));
        return tlsConfig(made.certs);
      },
    });
  } catch (e) {
    throw new Error(`${group} server did not start: ${startFailure(e)}`);
  }
  const own = new OwnServerContext(
    proc,
    ctx.opts,
    ctx,
    group === "ws"
      ? { kind: "ws", port: wsPort }
      : { kind: "tls", context: tls.createSecureContext({ ca: made.certs!.ca }), servername: CERT_SERVERNAME },
  );
  try {
    if (group === "ws") await waitForListen(wsPort, 10_000);
    return await body(own, own.via);
  } finally {
    own.closeAll();
    await proc.stop();
  }
}

/** Sequential connection setups for --duration: connect, INFO, (TLS handshake,) CONNECT,
 *  PING, PONG, close; the next starts when the previous is closed. */
async function connectionSetup(
  server: ServerProc,
  transport: Transport,
  opts: BenchOptions,
): Promise<Record<string, number>> {
  const lat: number[] = [];
  const cpu0 = server.cpuSeconds();
  const t0 = nowNs();
  const deadline = deadlineAfter(opts.durationS);
  while (nowNs() < deadline) {
    const s = nowNs();
    const c = await RawConn.connect({ port: server.port, host: HOST, mode: "count", handshakeTimeoutMs: 10_000, transport });
    lat.push(nowNs() - s);
    c.close();
  }
  const secs = (nowNs() - t0) / 1e9;
  const cpu = server.cpuSeconds() - cpu0;
  return {
    "connections/s": lat.length / secs,
    p50: latencyStats(lat).p50,
    "server CPU µs/conn": (cpu * 1e6) / lat.length,
  };
}

export const secureSuite: SuiteDef = {
  name: "secure",
  jetstream: false,
  notes: [
    "TLS rows: a server started for the case with tls { cert_file, key_file, timeout: 5 } on the client port (EC P-256 certificates made with openssl at bench time); the client reads the plaintext INFO, then upgrades with node:tls (one SecureContext, CA-verified, no session reuse).",
    'WebSocket rows: a server started for the case with websocket { listen: "127.0.0.1:<port>", no_tls: true } only; the client is bench/lib/ws.ts (HTTP upgrade, each 256 KiB publisher write one binary frame with a zero masking key, no compression).',
    "Plain TCP reference rows run on the suite's own plain server. pub -> sub: one publisher, one counting subscriber, gated as in core; MB/s counts payload bytes only.",
    "Connection setup: sequential connect, INFO, (TLS handshake,) CONNECT, PING, PONG, close for --duration; p50 is one setup. The rate includes the generator's own TLS client work (node:tls, ~1-1.5 ms of CPU per handshake here, more than either server's), so its ratio understates the servers' difference; server CPU µs/conn (/proc/<pid>/stat, 10 ms ticks) is the servers' own cost.",
  ],
  cases(_opts: BenchOptions): CaseDef[] {
    const onTls = (size: number) => (ctx: CaseContext) => onGroupServer(ctx, "tls", (own) => pubSub(own, size, 1));
    const onWs = (size: number) => (ctx: CaseContext) => onGroupServer(ctx, "ws", (own) => pubSub(own, size, 1));
    return [
      { name: "pub -> sub 16 B, plain TCP (reference)", metrics: RATE_METRICS, run: (c) => pubSub(c, 16, 1) },
      { name: "pub -> sub 16 B over TLS", metrics: RATE_METRICS, run: onTls(16) },
      { name: "pub -> sub 1 KiB over TLS", metrics: RATE_METRICS, run: onTls(1024) },
      { name: "pub -> sub 16 B over WebSocket", metrics: RATE_METRICS, run: onWs(16) },
      { name: "pub -> sub 1 KiB over WebSocket", metrics: RATE_METRICS, run: onWs(1024) },
      {
        name: "connection setup, plain TCP (reference)",
        metrics: SETUP_METRICS,
        run: (c) => connectionSetup(c.server, TCP, c.opts),
      },
      {
        name: "TLS connection setup",
        metrics: SETUP_METRICS,
        run: (c) => onGroupServer(c, "tls", (own, transport) => connectionSetup(own.server, transport, own.opts)),
      },
    ];
  },
};
