// The thin node:http layer: decode the path and query, take a snapshot, call a pure
// builder, write JSON. Loaded lazily by Server.start() when http_port is set.

import http from "node:http";
import https from "node:https";
import type { AddressInfo } from "node:net";
import type { Server } from "../server/server.js";
import type { TlsSetup } from "../server/tls.js";
import { buildConnz, parseConnzOptions } from "./connz.js";
import { buildHealthz, healthzBadRequest, parseHealthzOptions } from "./healthz.js";
import { buildJsz, jszOptions } from "./jsz.js";
import { LoopLagMeter } from "./looplag.js";
import { buildMetrics } from "./metrics.js";
import { buildAccountz, buildGatewayz, buildIndex, buildLeafz, buildRoutez } from "./misc.js";
import { parseGoBool } from "./format.js";
import { BadRequest } from "./query.js";
import { snapshot, type ServerSnap, type SnapshotNeeds } from "./snapshot.js";
import { buildSubsz, parseSubszOptions } from "./subsz.js";
import { buildVarz } from "./varz.js";

export interface MonitorHandle {
  readonly port: number;
  close(): Promise<void>;
  setTls?(t: TlsSetup): void;
}

interface Reply {
  status: number;
  contentType: string;
  body: string;
}

const JSON_TYPE = "application/json";

function json(status: number, body: unknown): Reply {
  return { status, contentType: JSON_TYPE, body: JSON.stringify(body, null, 2) };
}

/** CPU use in percent since the previous sample, like nats-server's periodic pse reading. */
class CpuMeter {
  private lastUsage = process.cpuUsage();
  private lastAt = process.hrtime.bigint();
  private value = 0;

  sample(): number {
    const now = process.hrtime.bigint();
    const elapsedUs = Number(now - this.lastAt) / 1000;
    // Samples closer than 100 ms are too noisy to report; keep the previous value.
    if (elapsedUs < 100_000) return this.value;
    const u = process.cpuUsage(this.lastUsage);
    this.value = Math.round(((u.user + u.system) / elapsedUs) * 10000) / 100;
    this.lastUsage = process.cpuUsage();
    this.lastAt = now;
    return this.value;
  }
}

export class MonitorRouter {
  readonly reqStats: Record<string, number> = {};
  private readonly cpu = new CpuMeter();
  readonly lag: LoopLagMeter;
  httpPort = 0;
  httpsPort = 0;

  constructor(private readonly server: Server) {
    this.lag = new LoopLagMeter(server.clock);
  }

  private snap(needs: SnapshotNeeds): ServerSnap {
    return snapshot(this.server, needs, { httpPort: this.httpPort, httpsPort: this.httpsPort, cpuPercent: this.cpu.sample(), httpReqStats: this.reqStats, loopLag: this.lag.read() });
  }

  handle(method: string, rawUrl: string): Reply {
    const url = new URL(rawUrl, "http://monitor");
    const path = url.pathname.replace(/\/+$/, "") || "/";
    const q = url.searchParams;
    if (method !== "GET" && method !== "HEAD") return { status: 405, contentType: "text/plain; charset=utf-8", body: "method not allowed\n" };
    const known = ROUTES.has(path);
    if (known) this.reqStats[path] = (this.reqStats[path] ?? 0) + 1;
    try {
      switch (path) {
        case "/":
          return { status: 200, contentType: "text/html; charset=utf-8", body: buildIndex(this.snap({ subs: false, jszOpts: null }).version) };
        case "/varz":
          return json(200, buildVarz(this.snap({ subs: false, jszOpts: {} })));
        case "/connz": {
          const o = parseConnzOptions(q);
          return json(200, buildConnz(this.snap({ subs: o.subs !== "none", jszOpts: null }), o));
        }
        case "/subsz":
        case "/subscriptionsz": {
          const o = parseSubszOptions(q);
          return json(200, buildSubsz(this.snap({ subs: o.subs, jszOpts: null }), o));
        }
        case "/jsz":
          return json(200, buildJsz(this.snap({ subs: false, jszOpts: jszOptions(q) })));
        case "/healthz": {
          let r;
          try {
            const o = parseHealthzOptions(q);
            const js = this.server.jetstream;
            r = buildHealthz({ jetstreamRequested: this.server.opts.jetstream.enabled }, js !== null, o, () => js?.healthError?.() ?? "", this.server.notListening());
          } catch (err) {
            if (!(err instanceof BadRequest)) throw err;
            r = healthzBadRequest(err);
          }
          // nats-server writes healthz compactly.
          return { status: r.httpStatus, contentType: JSON_TYPE, body: JSON.stringify(r.body) };
        }
        case "/routez":
          return json(200, buildRoutez(this.snap({ subs: false, routeSubs: parseGoBool(q.get("subs") ?? "") === true, jszOpts: null })));
        case "/leafz":
          return json(200, buildLeafz(this.snap({ subs: false, jszOpts: null })));
        case "/gatewayz":
          return json(200, buildGatewayz(this.snap({ subs: false, jszOpts: null })));
        case "/accountz":
          return json(200, buildAccountz(this.snap({ subs: false, jszOpts: null })));
        case "/metrics":
          return { status: 200, contentType: "text/plain; version=0.0.4; charset=utf-8", body: buildMetrics(this.snap({ subs: false, jszOpts: {} })) };
        default:
          return { status: 404, contentType: "text/plain; charset=utf-8", body: "404 page not found\n" };
      }
    } catch (err) {
      if (err instanceof BadRequest) return { status: 400, contentType: "text/plain; charset=utf-8", body: err.message };
      return { status: 500, contentType: "text/plain; charset=utf-8", body: `internal error: ${(err as Error).message}` };
    }
  }
}

const ROUTES = new Set([
  "/",
  "/varz",
  "/connz",
  "/subsz",
  "/subscriptionsz",
  "/jsz",
  "/healthz",
  "/routez",
  "/leafz",
  "/gatewayz",
  "/accountz",
  "/metrics",
]);

export async function startMonitor(server: Server): Promise<MonitorHandle> {
  const router = new MonitorRouter(server);
  const handler = (req: http.IncomingMessage, res: http.ServerResponse): void => {
    const r = router.handle(req.method ?? "GET", req.url ?? "/");
    res.writeHead(r.status, {
      "Content-Type": r.contentType,
      "Content-Length": Buffer.byteLength(r.body),
      "Access-Control-Allow-Origin": "*",
    });
    res.end(req.method === "HEAD" ? undefined : r.body);
  };
  const o = server.opts;
  // https: the client port's certificate, without asking for client certificates (as
  // nats-server's monitoring TLS config does).
  const t = o.httpsPort !== 0 ? server.tls : null;
  const srv: http.Server | https.Server = t !== null ? https.createServer({ ...t.contextOptions, requestCert: false }, handler) : http.createServer(handler);
  const want = t !== null ? o.httpsPort : o.httpPort;
  const port = want < 0 ? 0 : want;
  await new Promise<void>((resolve, reject) => {
    srv.once("error", reject);
    srv.listen({ host: o.httpHost, port }, () => {
      srv.off("error", reject);
      resolve();
    });
  });
  srv.on("error", (err) => server.log.error(`Monitoring listener error: ${err.message}`));
  const bound = (srv.address() as AddressInfo).port;
  if (t !== null) router.httpsPort = bound;
  else router.httpPort = bound;
  return {
    port: bound,
    setTls: (next: TlsSetup): void => {
      if (srv instanceof https.Server) srv.setSecureContext({ ...next.contextOptions });
    },
    close: () =>
      new Promise<void>((resolve) => {
        router.lag.stop();
        srv.close(() => resolve());
        srv.closeAllConnections();
      }),
  };
}
