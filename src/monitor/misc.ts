// /routez, and endpoints for features tsnats does not have (leaf nodes, gateways, accounts).
// /leafz and /gatewayz answer exactly what nats-server answers when leaf nodes or gateways
// are not configured (Server.Leafz with no leaf connections, Server.Gatewayz with the
// gateway disabled: no name, host or port), which is always true of tsnats: the config
// refuses remotes and gateways and opens no leaf-node or gateway port (it warns so). Tools
// that poll them keep working and are told, truthfully, that there is nothing there.

import { goDuration, rfc3339, uptime } from "./format.js";
import type { ServerSnap } from "./snapshot.js";

type Head = Pick<ServerSnap, "serverId" | "serverName" | "nowMs">;

/** /routez (nats-server Routez): the cluster's routes, with ?subs=1 their interest. */
export function buildRoutez(s: Head & Pick<ServerSnap, "routez">): Record<string, unknown> {
  const r = s.routez;
  const head = { server_id: s.serverId, server_name: s.serverName, now: rfc3339(s.nowMs) };
  if (r === null) return { ...head, num_routes: 0, routes: [] };
  const routes = (r["routes"] as Record<string, unknown>[]).map((x) => {
    const { startMs, lastActivityMs, rttMs, ...rest } = x as Record<string, unknown> & { startMs: number; lastActivityMs: number; rttMs: number };
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(rest)) {
      out[k] = v;
      if (k === "port") {
        out["start"] = rfc3339(startMs);
        out["last_activity"] = rfc3339(lastActivityMs);
        if (rttMs > 0) out["rtt"] = goDuration(rttMs * 1_000_000);
        out["uptime"] = uptime(s.nowMs - startMs);
        out["idle"] = uptime(s.nowMs - lastActivityMs);
      }
    }
    return out;
  });
  return { ...head, num_routes: r["num_routes"], routes };
}

export function buildLeafz(s: Head): Record<string, unknown> {
  return { server_id: s.serverId, now: rfc3339(s.nowMs), leafnodes: 0, leafs: [] };
}

export function buildGatewayz(s: Head): Record<string, unknown> {
  return { server_id: s.serverId, now: rfc3339(s.nowMs), outbound_gateways: {}, inbound_gateways: {} };
}

export function buildAccountz(s: Head): Record<string, unknown> {
  return { server_id: s.serverId, now: rfc3339(s.nowMs), system_account: "", accounts: ["$G"] };
}

export const ENDPOINTS = ["varz", "jsz", "connz", "accountz", "subsz", "routez", "leafz", "gatewayz", "healthz", "metrics"] as const;

export function buildIndex(version: string): string {
  const links = ENDPOINTS.map((e) => `    <a href=./${e}>${e}</a><br/>`).join("\n");
  return `<html lang="en">
  <head><title>tsnats monitoring</title></head>
  <body>
    <h3>tsnats (nats-server ${version})</h3>
${links}
    <a href=https://docs.nats.io/running-a-nats-service/nats_admin/monitoring>Help</a>
  </body>
</html>
`;
}
