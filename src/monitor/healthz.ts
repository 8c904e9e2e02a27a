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

/**
 * nats-server's order: a listener that is not up is a 500; js-server-only stops after the
 * server itself (ok); JetStream not
 * running is 503 "JetStream not enabled"; js-enabled-only stops there; the full check asks
 * JetStream (`jsHealth`: "" when healthy, else nats-server's text, e.g. "JetStream stream
 * '$G > S' is not current: stream catching up"; clustered: the meta group has a leader and
 * this server is current with it, every local replica of every stream assigned here is).
 */
export function buildHealthz(
  s: Pick<ServerSnap, "jetstreamRequested">,
  jsRunning: boolean,
  o: HealthzOptions,
  jsHealth?: () => string,
  notListening: readonly string[] = [],
): HealthResult {
  // nats-server (readyForConnections, checked first, with a 1 ms bound): a listener not up
  // yet, as while JetStream recovers its streams at start, is a 500.
  if (notListening.length > 0) {
    const error = `failed to be ready for connections after 1ms: ${notListening.join(", ")}`;
    return { httpStatus: 500, body: { status: "error", status_code: 500, error } };
  }
  if (o.jsServerOnly || !s.jetstreamRequested) return { httpStatus: 200, body: { status: "ok" } };
  if (!jsRunning) {
    return { httpStatus: 503, body: { status: "unavailable", status_code: 503, error: "JetStream not enabled" } };
  }
  if (o.jsEnabledOnly) return { httpStatus: 200, body: { status: "ok" } };
  const err = jsHealth?.() ?? "";
  if (err !== "") return { httpStatus: 503, body: { status: "unavailable", status_code: 503, error: err } };
  return { httpStatus: 200, body: { status: "ok" } };
}

export function healthzBadRequest(err: BadRequest): HealthResult {
  return { httpStatus: 400, body: { status: "error", status_code: 400, error: err.message } };
}
