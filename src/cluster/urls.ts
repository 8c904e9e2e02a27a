// Route URLs and the client URLs a cluster announces: host:port forms as nats-server writes
// them, listener addresses (advertise, or every interface for 0.0.0.0), credentials hidden.

import { networkInterfaces } from "node:os";
import type { RouteInfo } from "./route.js";

export function subjectPermissionJson(p: { allow: string[] | null; deny: string[] }): Record<string, string[]> {
  const o: Record<string, string[]> = {};
  if (p.allow !== null) o["allow"] = p.allow;
  if (p.deny.length > 0) o["deny"] = p.deny;
  return o;
}

export function urlKey(u: URL): string {
  return u.host.toLowerCase();
}

export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password !== "") u.password = "xxxxx";
    return u.toString();
  } catch {
    return url;
  }
}

export function joinHostPort(host: string, port: number): string {
  return host.includes(":") ? `[${host}]:${port}` : `${host}:${port}`;
}

export function splitHostPort(s: string, defPort: number): { host: string; port: number } {
  const v6 = /^\[([^\]]*)\](?::(\d+))?$/.exec(s);
  if (v6) return { host: v6[1]!, port: v6[2] !== undefined ? Number(v6[2]) : defPort };
  const i = s.lastIndexOf(":");
  if (i < 0) return { host: s, port: defPort };
  return { host: s.slice(0, i), port: Number(s.slice(i + 1)) || defPort };
}

/** A peer's client-facing URLs matter to our clients: it announced some. */
export function announcesUrls(info: RouteInfo | null | undefined): boolean {
  return (info?.connect_urls ?? []).length > 0 || (info?.ws_connect_urls ?? []).length > 0;
}

/** The "host:port" URLs a listener is announced with (nats-server getConnectURLs): the
 *  advertise setting when given (its port defaulting to the bound one), else the bound
 *  address, or every non-loopback interface address when bound to 0.0.0.0 / ::. */
export function listenerUrls(advertise: string, host: string, port: number): string[] {
  if (advertise !== "") {
    const hp = splitHostPort(advertise, port);
    return [joinHostPort(hp.host, hp.port)];
  }
  if (host !== "0.0.0.0" && host !== "::") return [joinHostPort(host, port)];
  const out: string[] = [];
  for (const list of Object.values(networkInterfaces())) {
    for (const a of list ?? []) {
      if (a.internal) continue;
      if (a.family === "IPv6" && a.address.startsWith("fe80")) continue;
      out.push(joinHostPort(a.address, port));
    }
  }
  if (out.length === 0) out.push(joinHostPort("127.0.0.1", port));
  return out;
}
