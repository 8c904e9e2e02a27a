// /routez, and endpoints for features tsnats does not have yet (leafnodes, gateways,
// accounts): valid, empty nats-server shapes so tools that poll them keep working.

import { rfc3339 } from "./format.js";
import type { ServerSnap } from "./snapshot.js";

type Head = Pick<ServerSnap, "serverId" | "serverName" | "nowMs">;

/** /routez (nats-server Routez): the cluster's routes, with ?subs=1 their interest. */
export function buildRoutez(s: Head & Pick<ServerSnap, "routez">): Record<string, unknown> {
  const r = s.routez;
  if (r === null) return { server_id: s.serverId, server_name: s.serverName, now: rfc3339(s.nowMs), num_routes: 0, routes: [] };
  return { server_id: s.serverId, server_name: s.serverName, now: rfc3339(s.nowMs), ...r };
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
