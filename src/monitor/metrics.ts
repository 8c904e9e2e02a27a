// /metrics: Prometheus text exposition (format 0.0.4), written by hand because prom-client
// is not a dependency. Names follow prometheus-nats-exporter ("gnatsd_varz_*") so existing
// dashboards find them.

import type { ServerSnap } from "./snapshot.js";

interface Metric {
  name: string;
  help: string;
  type: "counter" | "gauge";
  value: number;
}

function line(m: Metric, serverId: string): string {
  const v = Number.isFinite(m.value) ? String(m.value) : "0";
  return `# HELP ${m.name} ${m.help}\n# TYPE ${m.name} ${m.type}\n${m.name}{server_id="${serverId}"} ${v}\n`;
}

function num(v: unknown): number {
  return typeof v === "number" && Number.isFinite(v) ? v : 0;
}

export function buildMetrics(s: ServerSnap): string {
  const ms: Metric[] = [
    { name: "gnatsd_varz_connections", help: "Current client connections", type: "gauge", value: s.open.length },
    { name: "gnatsd_varz_total_connections", help: "Client connections accepted since start", type: "counter", value: s.totalConnections },
    { name: "gnatsd_varz_subscriptions", help: "Current subscriptions", type: "gauge", value: s.sublist.num_subscriptions },
    { name: "gnatsd_varz_in_msgs", help: "Messages received from clients", type: "counter", value: s.inMsgs },
    { name: "gnatsd_varz_out_msgs", help: "Messages sent to clients", type: "counter", value: s.outMsgs },
    { name: "gnatsd_varz_in_bytes", help: "Payload bytes received from clients", type: "counter", value: s.inBytes },
    { name: "gnatsd_varz_out_bytes", help: "Payload bytes sent to clients", type: "counter", value: s.outBytes },
    { name: "gnatsd_varz_slow_consumers", help: "Clients closed or flagged as slow consumers", type: "counter", value: s.slowConsumers },
    { name: "gnatsd_varz_mem", help: "Resident set size in bytes", type: "gauge", value: s.rssBytes },
    { name: "gnatsd_varz_cpu", help: "CPU use in percent of one core", type: "gauge", value: s.cpuPercent },
    { name: "gnatsd_varz_uptime_seconds", help: "Seconds since the server started", type: "gauge", value: Math.floor((s.nowMs - s.startMs) / 1000) },
    // tsnats only: event loop lag over the recent window (/varz tsnats_event_loop_lag).
    { name: "tsnats_event_loop_lag_p50_seconds", help: "Event loop lag, median over the recent window", type: "gauge", value: s.loopLag.p50_ms / 1000 },
    { name: "tsnats_event_loop_lag_p99_seconds", help: "Event loop lag, 99th percentile over the recent window", type: "gauge", value: s.loopLag.p99_ms / 1000 },
    { name: "tsnats_event_loop_lag_max_seconds", help: "Event loop lag, maximum over the recent window", type: "gauge", value: s.loopLag.max_ms / 1000 },
    { name: "tsnats_event_loop_lag_max_since_start_seconds", help: "Event loop lag, maximum since the server started", type: "gauge", value: s.loopLag.max_ms_since_start / 1000 },
  ];
  if (s.jsz !== null) {
    const j = s.jsz;
    const api = j["api"] !== null && typeof j["api"] === "object" ? (j["api"] as Record<string, unknown>) : {};
    ms.push(
      { name: "gnatsd_jetstream_streams", help: "JetStream streams", type: "gauge", value: num(j["streams"]) },
      { name: "gnatsd_jetstream_consumers", help: "JetStream consumers", type: "gauge", value: num(j["consumers"]) },
      { name: "gnatsd_jetstream_messages", help: "Messages stored in JetStream streams", type: "gauge", value: num(j["messages"]) },
      { name: "gnatsd_jetstream_bytes", help: "Bytes stored in JetStream streams", type: "gauge", value: num(j["bytes"]) },
      { name: "gnatsd_jetstream_memory_bytes", help: "JetStream memory storage in use", type: "gauge", value: num(j["memory"]) },
      { name: "gnatsd_jetstream_storage_bytes", help: "JetStream file storage in use", type: "gauge", value: num(j["storage"]) },
      { name: "gnatsd_jetstream_api_total", help: "JetStream API requests", type: "counter", value: num(api["total"]) },
      { name: "gnatsd_jetstream_api_errors", help: "JetStream API requests that failed", type: "counter", value: num(api["errors"]) },
    );
  }
  const id = s.serverId.replace(/[\\"\n]/g, "_");
  return ms.map((m) => line(m, id)).join("");
}
