// cluster { } -> ClusterOptions (nats-server parseCluster), and the route URL check the
// command-line flags share.

import { defaultClusterOptions, type OptionsPatch } from "../options.js";
import type { ConfigMap } from "./parser.js";
import type { Permissions } from "../permissions.js";
import { permissionsBlock } from "./permissions.js";
import { tlsBlock } from "./tls.js";
import { Ctx, hostPort, isMap, stringList } from "./ctx.js";

/** cluster { ... } (nats-server parseCluster, with 2.10's pool_size, accounts and
 *  compression): routes to other servers. What tsnats does not implement (compression, a
 *  route ping interval, pinned accounts other than $G and $SYS) is a startup error naming
 *  the field. */
export function cluster(ctx: Ctx, parent: ConfigMap, key: string, patch: OptionsPatch): void {
  const m = ctx.map(parent, key);
  if (!m) return;
  const c = { ...defaultClusterOptions(), ...patch.cluster };
  for (const k of Object.keys(m)) {
    const lk = k.toLowerCase();
    switch (lk) {
      case "name": {
        const s = ctx.str(m, k);
        if (s !== undefined && /\s/.test(s)) ctx.error(m, k, "cluster name cannot contain spaces or new lines");
        else if (s !== undefined) c.name = s;
        break;
      }
      case "listen": {
        const hp = hostPort(ctx, m, k);
        if (hp.host !== undefined) c.host = hp.host;
        if (hp.port !== undefined) c.port = hp.port;
        break;
      }
      case "port":
        c.port = ctx.int(m, k) ?? c.port;
        break;
      case "host":
      case "net":
        c.host = ctx.str(m, k) ?? c.host;
        break;
      case "authorization": {
        const am = ctx.map(m, k);
        if (!am) break;
        for (const ak of Object.keys(am)) {
          switch (ak.toLowerCase()) {
            case "user":
            case "username":
              c.user = ctx.str(am, ak) ?? c.user;
              break;
            case "pass":
            case "password":
              c.password = ctx.str(am, ak) ?? c.password;
              break;
            case "timeout": {
              const v = am[ak];
              if (typeof v === "number") c.authTimeoutMs = v * 1000;
              else c.authTimeoutMs = ctx.durationMs(am, ak) ?? c.authTimeoutMs;
              break;
            }
            case "users":
              ctx.error(am, ak, "Cluster authorization does not allow multiple users");
              break;
            case "token":
              ctx.error(am, ak, "Cluster authorization does not support tokens");
              break;
            case "permissions":
            case "default_permissions": {
              // nats-server: used unless the cluster block has permissions of its own.
              const p = routePermissions(ctx, am, ak);
              if (p !== undefined && !Object.keys(m).some((x) => x.toLowerCase() === "permissions")) c.permissions = p;
              break;
            }
            default:
              ctx.unknown(am, ak);
          }
        }
        break;
      }
      case "routes": {
        const list = stringList(ctx, m, k, "routes");
        if (list === undefined) break;
        list.forEach((u, i) => {
          const bad = routeUrlProblem(u);
          if (bad !== null) ctx.error(Array.isArray(m[k]) ? (m[k] as object) : m, Array.isArray(m[k]) ? i : k, `error parsing route url [${JSON.stringify(u)}]: ${bad}`);
        });
        c.routes = list;
        break;
      }
      case "tls": {
        const t = tlsBlock(ctx, m, k, false);
        if (t !== undefined) c.tls = t;
        break;
      }
      case "cluster_advertise":
      case "advertise":
        c.advertise = ctx.str(m, k) ?? c.advertise;
        break;
      case "no_advertise":
        c.noAdvertise = ctx.bool(m, k) ?? c.noAdvertise;
        break;
      case "connect_retries":
        c.connectRetries = ctx.int(m, k) ?? c.connectRetries;
        break;
      case "pool_size": {
        // nats-server 2.10: N connections per peer; -1 turns pooling off (the 2.9 protocol).
        const n = ctx.int(m, k);
        if (n === undefined) break;
        if (n < -1) ctx.error(m, k, `pool_size must be -1 (off) or a positive number, not ${n}`);
        else c.poolSize = n;
        break;
      }
      case "compression": {
        const v = m[k];
        const off = v === false || (typeof v === "string" && /^(off|disabled|false|not supported)$/i.test(v)) || (isMap(v) && typeof v["mode"] === "string" && /^(off|disabled)$/i.test(v["mode"]));
        if (!off) ctx.refused(m, k, `${key}.`, "route compression is not supported by tsnats yet; use compression: off");
        break;
      }
      case "accounts": {
        const list = stringList(ctx, m, k, "accounts");
        if (list === undefined) break;
        const seen = new Set<string>();
        for (const a of list) {
          if (seen.has(a)) ctx.error(m, k, `found duplicate account name "${a}" in pinned accounts list ${JSON.stringify(list)}`);
          else if (a !== "$G" && a !== "$SYS") ctx.refused(m, k, `${key}.`, `a pinned route for account "${a}": multiple accounts are not supported by tsnats yet (it pins "$G" and "$SYS")`);
          seen.add(a);
        }
        c.accounts = [...seen];
        break;
      }
      case "permissions": {
        const p = routePermissions(ctx, m, k);
        if (p !== undefined) c.permissions = p;
        break;
      }
      case "ping_interval":
      case "ping_max":
        ctx.refused(m, k, `${key}.`, "a route ping interval of its own is not supported by tsnats yet (routes use the server's)");
        break;
      default:
        ctx.unknown(m, k);
    }
  }
  const accKey = Object.keys(m).find((x) => x.toLowerCase() === "accounts");
  if (accKey !== undefined && c.accounts.length > 0 && c.poolSize < 0) ctx.error(m, accKey, "pool_size cannot be negative if pinned accounts are specified");
  patch.cluster = c;
}

/** permissions { import, export } of a cluster block (publish and subscribe are the same
 *  fields to nats-server); allow_responses makes no sense there. */
export function routePermissions(ctx: Ctx, m: ConfigMap, k: string): Permissions | undefined {
  const p = permissionsBlock(ctx, m, k);
  if (p === undefined || p === null) return undefined;
  if (p.response !== null) {
    ctx.error(m, k, "Cluster permissions do not support dynamic responses");
    return undefined;
  }
  return p;
}

/** Why a route URL is not usable, or null. */
export function routeUrlProblem(u: string): string | null {
  let url: URL;
  try {
    url = new URL(u);
  } catch {
    return "not a URL";
  }
  if (url.hostname === "" || url.port === "") return "expected scheme://host:port";
  return null;
}
