// /healthz: "ok", or nats-server's error shape with the HTTP status to send.

import { BadRequest, boolParam, type Query } from "./query.js";
import type { ServerSnap } from "./snapshot.js";

export interface HealthzOptions {
  jsEnabledOnly: boolean;
  jsServerOnly: boolean;
}

export function parseHealthzOptions(q: Query): HealthzOptions {
  // "js-enabled" is the pre-2.9 spelling, still accepted by nats-server.
  const jsEnabledOnly = boolParam(q, "js-enabled-only") || boolParam(q, "js-enabled");
  return { jsEnabledOnly, jsServerOnly: boolParam(q, "js-server-only") };
}

export interface HealthResult {
  httpStatus: number;
  body: Record<string, unknown>;
}

export function buildHealthz(s: Pick<ServerSnap, "jetstreamRequested">, jsRunning: boolean, _o: HealthzOptions): HealthResult {
  if (!s.jetstreamRequested) return { httpStatus: 200, body: { status: "ok" } };
  if (!jsRunning) {
    return { httpStatus: 503, body: { status: "unavailable", status_code: 503, error: "JetStream not enabled" } };
  }
  // Single server: once the service runs its streams were recovered during start, so the
  // js-enabled-only, js-server-only and full checks all agree.
  return { httpStatus: 200, body: { status: "ok" } };
}

export function healthzBadRequest(err: BadRequest): HealthResult {
  return { httpStatus: 400, body: { status: "error", status_code: 400, error: err.message } };
}
