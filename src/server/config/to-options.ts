// Parsed config tree -> OptionsPatch (src/server/options.ts).
//
// Exported API:
//   toOptions(tree, { file? }) -> { patch: OptionsPatch, warnings: string[] }
//       throws ConfigProblems (message: one "file:line:col: reason" per line; .errors has each
//       ConfigError, .warnings the warnings collected so far).
//   loadConfigFile(path, env?) -> { patch, warnings, tree }   parse + map in one call.
//   IGNORED_TOP_LEVEL: keys nats-server knows that tsnats accepts with a warning (harmless).
//   REFUSED_TOP_LEVEL: keys nats-server knows that tsnats refuses (startup error, with why).
//
// Rules (after nats-server server/opts.go): unknown keys are errors `unknown field "x"` unless the
// key was only defined to be used as a $variable; durations are Go duration strings, and a bare
// number is taken as seconds with a warning (nats-server's backward-compatible reading);
// max_connections 0 means unlimited and is mapped to -1.

import { defaultWebSocketOptions, type AuthorizationOptions, type OptionsPatch, type UserEntry } from "../options.js";
import { ConfigError, type ConfigMap, parseConfigFile } from "./parser.js";
import { permissionsBlock } from "./permissions.js";
import { tlsBlock } from "./tls.js";
import { isValidPublicUserKey } from "../auth.js";
import { Ctx, describe, hostPort, isMap, set, stringList } from "./ctx.js";
import { cluster, routeUrlProblem } from "./cluster.js";

export { routeUrlProblem };

export class ConfigProblems extends Error {
  readonly code = "CONFIG_ERROR";
  constructor(
    readonly errors: ConfigError[],
    readonly warnings: string[],
  ) {
    super(errors.map((e) => e.message).join("\n"));
    this.name = "ConfigProblems";
  }
}

export interface ToOptionsResult {
  patch: OptionsPatch;
  warnings: string[];
}

// Fail closed: a setting nats-server knows and tsnats does not implement stops the server at
// startup (REFUSED_*), naming the file, line and field. Only settings that change nothing a
// client or an operator relies on stay warnings (IGNORED_*): log rotation and formatting,
// profiling, cluster-only tuning on a single server, cosmetic metadata.

/** Harmless to ignore: accepted with a warning. */
export const IGNORED_TOP_LEVEL: ReadonlySet<string> = new Set([
  "trace_verbose", "trace_headers", "logtime_utc",
  "disable_sublist_cache", "no_sublist_cache",
  "logfile_size_limit", "log_size_limit", "logfile_max_num", "log_max_num",
  "prof_port", "prof_block_rate", "max_traced_msg_len",
  "connect_error_reports", "reconnect_error_reports",
  "server_metadata", "no_fast_producer_stall", "max_closed_clients", "write_timeout",
  // tsnats has no system account, which is what these ask for.
  "no_system_account", "no_system", "no_sys_acc",
]);

/** Not implemented, and ignoring them would change security or behaviour: startup errors. */
export const REFUSED_TOP_LEVEL: ReadonlyMap<string, string> = new Map([
  ["accounts", "multiple accounts are not supported by tsnats yet"],
  ["operator", "JWT operator mode is not supported by tsnats yet"],
  ["operators", "JWT operator mode is not supported by tsnats yet"],
  ["roots", "JWT operator mode is not supported by tsnats yet"],
  ["root", "JWT operator mode is not supported by tsnats yet"],
  ["root_operators", "JWT operator mode is not supported by tsnats yet"],
  ["root_operator", "JWT operator mode is not supported by tsnats yet"],
  ["resolver", "account resolvers (JWT) are not supported by tsnats yet"],
  ["account_resolver", "account resolvers (JWT) are not supported by tsnats yet"],
  ["accounts_resolver", "account resolvers (JWT) are not supported by tsnats yet"],
  ["resolver_tls", "account resolvers (JWT) are not supported by tsnats yet"],
  ["resolver_preload", "account resolvers (JWT) are not supported by tsnats yet"],
  ["resolver_pinned_accounts", "account resolvers (JWT) are not supported by tsnats yet"],
  ["trusted", "trusted operator keys (JWT) are not supported by tsnats yet"],
  ["trusted_keys", "trusted operator keys (JWT) are not supported by tsnats yet"],
  ["default_sentinel", "JWT sentinels are not supported by tsnats yet"],
  ["system_account", "a system account needs accounts, which tsnats does not support yet"],
  ["system", "a system account needs accounts, which tsnats does not support yet"],
  ["ocsp", "OCSP stapling is not supported by tsnats"],
  ["ocsp_cache", "OCSP is not supported by tsnats"],
  ["proxies", "trusted proxies are not supported by tsnats"],
  ["proxy_protocol", "the PROXY protocol is not supported by tsnats"],
  ["mappings", "subject mappings are not supported by tsnats yet"],
  ["maps", "subject mappings are not supported by tsnats yet"],
  ["no_header_support", "turning header support off is not supported by tsnats"],
  ["max_sub_tokens", "a limit on subscription tokens is not enforced by tsnats yet"],
  ["max_subscription_tokens", "a limit on subscription tokens is not enforced by tsnats yet"],
  ["http_base_path", "a monitoring base path is not supported by tsnats yet"],
  ["syslog", "logging to syslog is not supported by tsnats"],
  ["remote_syslog", "logging to syslog is not supported by tsnats"],
  ["feature_flags", "feature flags are not supported by tsnats"],
  ["default_js_domain", "default JetStream domains (leaf nodes) are not supported by tsnats yet"],
  ["lame_duck_mode", "unknown to tsnats"],
]);

/** jetstream {} fields without effect on one server. */
const IGNORED_JETSTREAM = new Set([
  "strict", "extension_hint", "max_outstanding_catchup",
  "max_buffered_size", "max_buffered_msgs",
  "meta_compact", "meta_compact_size", "meta_compact_sync", "max_concurrent_io", "max_ha_assets",
]);

const REFUSED_JETSTREAM: ReadonlyMap<string, string> = new Map([
  ["limits", "JetStream server limits are not enforced by tsnats yet"],
  ["tpm", "TPM-sealed keys are not supported by tsnats"],
]);

const REFUSED_AUTH: ReadonlyMap<string, string> = new Map([
  ["auth_callout", "auth callout is not supported by tsnats yet"],
  ["auth_hook", "auth callout is not supported by tsnats yet"],
  ["proxy_required", "trusted proxies are not supported by tsnats"],
]);

const REFUSED_USER: ReadonlyMap<string, string> = new Map([
  ["account", "accounts are not supported by tsnats yet"],
  ["proxy_required", "trusted proxies are not supported by tsnats"],
]);



/** nats-server's connection types (jwt.ConnectionType*): tsnats has STANDARD and WEBSOCKET
 *  clients; the others name connections it does not accept, so a user limited to them
 *  cannot connect at all (as intended). */
const CONNECTION_TYPES: ReadonlySet<string> = new Set(["STANDARD", "WEBSOCKET", "LEAFNODE", "LEAFNODE_WS", "MQTT", "MQTT_WS", "IN_PROCESS"]);






export function toOptions(tree: ConfigMap, opts: { file?: string } = {}): ToOptionsResult {
  const ctx = new Ctx(opts.file ?? "config");
  const patch: OptionsPatch = {};
  if (Object.keys(tree).length === 0) ctx.warnings.push(`${ctx.file}: config has no values or is empty`);
  for (const k of Object.keys(tree)) topLevel(ctx, tree, k, patch);
  if (ctx.errors.length > 0) throw new ConfigProblems(ctx.errors, ctx.warnings);
  return { patch, warnings: ctx.warnings };
}

export function loadConfigFile(
  path: string,
  env?: Record<string, string | undefined>,
): ToOptionsResult & { tree: ConfigMap } {
  const tree = parseConfigFile(path, env);
  const r = toOptions(tree, { file: path });
  r.patch.configFile = path;
  return { ...r, tree };
}


function topLevel(ctx: Ctx, m: ConfigMap, k: string, patch: OptionsPatch): void {
  switch (k.toLowerCase()) {
    case "listen": {
      const hp = hostPort(ctx, m, k);
      set(patch, "host", hp.host);
      set(patch, "port", hp.port);
      return;
    }
    case "host":
    case "net":
      return set(patch, "host", ctx.str(m, k));
    case "port":
      return set(patch, "port", ctx.int(m, k));
    case "client_advertise":
      return set(patch, "clientAdvertise", ctx.str(m, k));
    case "server_tags": {
      const list = stringList(ctx, m, k, "tags");
      if (list === undefined) return;
      const tags: string[] = [];
      for (const t of list) {
        const v = t.trim().toLowerCase();
        if (v !== "" && !tags.includes(v)) tags.push(v);
      }
      return set(patch, "serverTags", tags);
    }
    case "server_name": {
      const s = ctx.str(m, k);
      if (s !== undefined && /\s/.test(s)) return ctx.error(m, k, "server name cannot contain spaces");
      return set(patch, "serverName", s);
    }
    case "http": {
      const hp = hostPort(ctx, m, k);
      set(patch, "httpHost", hp.host);
      set(patch, "httpPort", hp.port);
      return;
    }
    case "http_port":
    case "monitor_port":
      return set(patch, "httpPort", ctx.int(m, k));
    case "max_payload":
    case "max_control_line": {
      const n = ctx.size(m, k);
      if (n !== undefined && n > 2 ** 31 - 1) return ctx.error(m, k, `${k} value is too big`);
      return set(patch, k === "max_payload" ? "maxPayloadBytes" : "maxControlLineBytes", n);
    }
    case "max_pending":
      return set(patch, "maxPendingBytes", ctx.size(m, k));
    case "max_subscriptions":
    case "max_subs": {
      // nats-server: 0 (and, in effect, a negative number) means no limit.
      const n = ctx.int(m, k);
      return set(patch, "maxSubs", n !== undefined && n < 0 ? 0 : n);
    }
    case "max_connections":
    case "max_conn": {
      const n = ctx.int(m, k);
      return set(patch, "maxConnections", n === 0 ? -1 : n);
    }
    case "ping_interval":
      return set(patch, "pingIntervalMs", ctx.durationMs(m, k));
    case "ping_max":
      return set(patch, "pingMax", ctx.int(m, k));
    case "write_deadline":
      return set(patch, "writeDeadlineMs", ctx.durationMs(m, k));
    case "lame_duck_duration":
      return set(patch, "lameDuckDurationMs", ctx.durationMs(m, k));
    case "lame_duck_grace_period":
      return set(patch, "lameDuckGracePeriodMs", ctx.durationMs(m, k));
    case "pid_file":
    case "pidfile":
      return set(patch, "pidFile", ctx.str(m, k));
    case "ports_file_dir":
      return set(patch, "portsFileDir", ctx.str(m, k));
    case "logfile":
    case "log_file":
      return set(patch, "logFile", ctx.str(m, k));
    case "debug":
      return set(patch, "debug", ctx.bool(m, k));
    case "trace":
      return set(patch, "trace", ctx.bool(m, k));
    case "logtime":
      return set(patch, "logTime", ctx.bool(m, k));
    case "no_auth_user":
      return set(patch, "noAuthUser", ctx.str(m, k));
    case "store_dir":
    case "storedir": {
      const s = ctx.str(m, k);
      if (s !== undefined) patch.jetstream = { ...patch.jetstream, storeDir: s };
      return;
    }
    case "authorization":
      return authorization(ctx, m, k, patch);
    case "jetstream":
      return jetstream(ctx, m, k, patch);
    case "tls": {
      const t = tlsBlock(ctx, m, k);
      if (t !== undefined) patch.tls = t;
      return;
    }
    case "allow_non_tls":
      return set(patch, "allowNonTls", ctx.bool(m, k));
    case "https": {
      const hp = hostPort(ctx, m, k);
      set(patch, "httpHost", hp.host);
      set(patch, "httpsPort", hp.port);
      return;
    }
    case "https_port":
      return set(patch, "httpsPort", ctx.int(m, k));
    case "leaf":
    case "leafnodes":
      return unopenedListener(ctx, m, k, "leaf node", ["remotes"]);
    case "mqtt":
      return unopenedListener(ctx, m, k, "MQTT", []);
    case "gateway":
      return unopenedListener(ctx, m, k, "gateway", ["gateways"]);
    case "cluster":
      return cluster(ctx, m, k, patch);
    case "websocket":
    case "ws":
      return websocket(ctx, m, k, patch);
    default: {
      const lk = k.toLowerCase();
      const why = REFUSED_TOP_LEVEL.get(lk);
      if (why !== undefined) return ctx.refused(m, k, "", why);
      if (IGNORED_TOP_LEVEL.has(lk)) return ctx.ignored(m, k, "");
      return ctx.unknown(m, k);
    }
  }
}

/**
 * A listener tsnats does not implement (leaf nodes, MQTT, gateways): nothing
 * listens, so what the block says about accepting connections (listen, authorization, tls of
 * that port) protects nothing that exists; it is accepted with a warning that the port is not
 * opened. The nats.js test launcher writes `leafnodes { listen }` into every config. What
 * would make this server act for others (`refusedKeys`: remotes, routes, gateways) or secure
 * a connection it would make is refused: ignoring it changes what the operator gets.
 */
function unopenedListener(ctx: Ctx, parent: ConfigMap, key: string, what: string, refusedKeys: readonly string[]): void {
  const m = ctx.map(parent, key);
  if (!m) return;
  let refused = false;
  for (const k of Object.keys(m)) {
    if (refusedKeys.includes(k.toLowerCase())) {
      ctx.refused(m, k, `${key}.`, `${what} connections are not supported by tsnats yet`);
      refused = true;
    }
  }
  if (!refused) ctx.warn(parent, key, `field "${key}": ${what} connections are not supported by tsnats; no ${what} port is opened`);
}

function authorization(ctx: Ctx, parent: ConfigMap, key: string, patch: OptionsPatch): void {
  const m = ctx.map(parent, key);
  if (!m) return;
  const auth: NonNullable<OptionsPatch["authorization"]> = { ...patch.authorization };
  for (const k of Object.keys(m)) {
    switch (k.toLowerCase()) {
      case "user":
      case "username":
        {
          const s = ctx.str(m, k);
          if (s !== undefined) auth.user = s;
        }
        break;
      case "pass":
      case "password":
        {
          const s = ctx.str(m, k);
          if (s !== undefined) auth.password = s;
        }
        break;
      case "token":
        {
          const s = ctx.str(m, k);
          if (s !== undefined) auth.token = s;
        }
        break;
      case "timeout": {
        // Seconds as a number (nats-server's form) or a duration string.
        const v = m[k];
        if (typeof v === "number") auth.timeoutMs = v * 1000;
        else if (typeof v === "string") {
          const ms = ctx.durationMs(m, k);
          if (ms !== undefined) auth.timeoutMs = ms;
        } else ctx.error(m, k, "error parsing authorization config, 'timeout' wrong type");
        break;
      }
      case "users": {
        const users = usersList(ctx, m, k);
        if (users) auth.users = users;
        break;
      }
      case "default_permission":
      case "default_permissions":
      case "permissions": {
        const p = permissionsBlock(ctx, m, k);
        if (p !== undefined) auth.defaultPermissions = p;
        break;
      }
      default: {
        const why = REFUSED_AUTH.get(k.toLowerCase());
        if (why !== undefined) ctx.refused(m, k, "authorization.", why);
        else ctx.unknown(m, k);
      }
    }
  }
  // nats-server applyDefaultPermissions: users without permissions of their own get them.
  const dp = auth.defaultPermissions;
  if (dp !== undefined && dp !== null && auth.users) for (const u of auth.users) if (u.permissions === null) u.permissions = dp;
  // nats-server silently ignores them for the single user/password and token forms.
  if (dp !== undefined && dp !== null && !auth.users) {
    const k = Object.keys(m).find((x) => /^(default_permissions?|permissions)$/i.test(x)) ?? "permissions";
    ctx.warn(m, k, `field "authorization.${k}" applies only to the users list and is ignored here`);
  }
  patch.authorization = auth;
}

function usersList(ctx: Ctx, parent: ConfigMap, key: string): UserEntry[] | undefined {
  const arr = parent[key];
  if (!Array.isArray(arr)) {
    ctx.error(parent, key, `expected an array of users for "${key}", got ${describe(arr)}`);
    return undefined;
  }
  const out: UserEntry[] = [];
  const names = new Set<string>();
  arr.forEach((u, i) => {
    if (!isMap(u)) return ctx.error(arr, i, `expected a user map in "${key}", got ${describe(u)}`);
    const entry: UserEntry = { user: "", password: "", permissions: null };
    let nkey = "";
    for (const k of Object.keys(u)) {
      switch (k.toLowerCase()) {
        case "nkey":
          nkey = ctx.str(u, k) ?? "";
          break;
        case "user":
        case "username":
          entry.user = ctx.str(u, k) ?? "";
          break;
        case "pass":
        case "password":
          entry.password = ctx.str(u, k) ?? "";
          break;
        case "allowed_connection_types":
        case "connection_types":
        case "clients": {
          const v = u[k];
          const list = typeof v === "string" ? [v] : Array.isArray(v) ? v : null;
          if (list === null) {
            ctx.error(u, k, `error parsing allowed connection types: unsupported type ${describe(v)}`);
            break;
          }
          const types: string[] = [];
          list.forEach((t, i) => {
            const up = typeof t === "string" ? t.toUpperCase() : "";
            if (!CONNECTION_TYPES.has(up)) ctx.error(list, i, `unknown connection type ${JSON.stringify(typeof t === "string" ? t : String(t))}`);
            else types.push(up);
          });
          entry.connectionTypes = types;
          break;
        }
        case "permission":
        case "permissions":
        case "authorization": {
          const p = permissionsBlock(ctx, u, k);
          if (p !== undefined) entry.permissions = p;
          break;
        }
        default: {
          const why = REFUSED_USER.get(k.toLowerCase());
          if (why !== undefined) ctx.refused(u, k, "authorization.users.", why);
          else ctx.unknown(u, k);
        }
      }
    }
    // nats-server parseUsers: an entry is an nkey user or a user/password one, never both;
    // its messages, which never show the key or the password.
    if (nkey !== "") {
      if (!isValidPublicUserKey(nkey)) return ctx.error(arr, i, "Not a valid public nkey for a user");
      if (entry.user !== "" || entry.password !== "") return ctx.error(arr, i, "Nkey users do not take usernames or passwords");
      entry.user = nkey;
      entry.nkey = nkey;
    } else if (entry.user === "") {
      return ctx.error(arr, i, "user entry requires a user");
    }
    // nats-server checks users and nkeys against one set of names.
    if (names.has(entry.user)) return ctx.error(arr, i, `Duplicate ${nkey !== "" ? "nkey" : "user"} "${entry.user}" detected`);
    names.add(entry.user);
    out.push(entry);
  });
  return out;
}

function jetstream(ctx: Ctx, parent: ConfigMap, key: string, patch: OptionsPatch): void {
  const v = parent[key];
  const js: NonNullable<OptionsPatch["jetstream"]> = { ...patch.jetstream };
  if (typeof v === "boolean") js.enabled = v;
  else if (typeof v === "string") {
    const s = v.toLowerCase();
    if (s === "enabled" || s === "enable") js.enabled = true;
    else if (s === "disabled" || s === "disable") js.enabled = false;
    else return ctx.error(parent, key, `Expected 'enabled' or 'disabled' for string value, got '${v}'`);
  } else if (isMap(v)) {
    js.enabled = true;
    for (const k of Object.keys(v)) jetstreamField(ctx, v, k, js);
  } else {
    return ctx.error(parent, key, `Expected map, bool or string to define JetStream, got ${describe(v)}`);
  }
  patch.jetstream = js;
}

function jetstreamField(ctx: Ctx, m: ConfigMap, k: string, js: NonNullable<OptionsPatch["jetstream"]>): void {
  switch (k.toLowerCase()) {
    case "store":
    case "store_dir":
    case "storedir": {
      const s = ctx.str(m, k);
      if (s !== undefined) js.storeDir = s;
      return;
    }
    case "max_memory_store":
    case "max_mem_store":
    case "max_mem": {
      const n = ctx.size(m, k);
      if (n !== undefined) js.maxMemoryStoreBytes = n;
      return;
    }
    case "max_file_store":
    case "max_file": {
      const n = ctx.size(m, k);
      if (n !== undefined) js.maxFileStoreBytes = n;
      return;
    }
    case "sync":
    case "sync_interval": {
      const v = m[k];
      if (typeof v === "string" && v.toLowerCase() === "always") {
        js.syncIntervalMs = "always";
        return;
      }
      const ms = ctx.durationMs(m, k);
      if (ms !== undefined) js.syncIntervalMs = ms;
      return;
    }
    case "unique_tag": {
      const s = ctx.str(m, k);
      if (s !== undefined) js.uniqueTag = s.trim().toLowerCase();
      return;
    }
    case "domain": {
      const s = ctx.str(m, k);
      if (s !== undefined) js.domain = s;
      return;
    }
    // The JetStream API queue (src/jetstream/api.ts); 0 or less is nats-server's default.
    case "request_queue_limit": {
      const n = ctx.size(m, k);
      if (n !== undefined) js.requestQueueLimit = n;
      return;
    }
    // The info requests' own queue (nats-server 2.11+); 0 or less: request_queue_limit.
    case "info_queue_limit": {
      const n = ctx.size(m, k);
      if (n !== undefined) js.infoQueueLimit = n;
      return;
    }
    case "enable":
    case "enabled": {
      const b = ctx.bool(m, k);
      if (b !== undefined) js.enabled = b;
      return;
    }
    // Encryption at rest (src/storage/cryptfs.ts). nats-server's names: key/ek/encryption_key,
    // prev_key/prev_ek/prev_encryption_key, cipher chacha|chachapoly|aes (any case).
    case "key":
    case "ek":
    case "encryption_key": {
      const s = ctx.str(m, k);
      if (s !== undefined) js.key = s;
      return;
    }
    case "prev_key":
    case "prev_ek":
    case "prev_encryption_key": {
      const s = ctx.str(m, k);
      if (s !== undefined) js.prevKey = s;
      return;
    }
    case "cipher": {
      const s = ctx.str(m, k);
      if (s === undefined) return;
      const c = s.toLowerCase();
      if (c === "chacha" || c === "chachapoly") js.cipher = "chachapoly";
      else if (c === "aes") js.cipher = "aes";
      else ctx.error(m, k, `Unknown cipher type: ${JSON.stringify(s)}`);
      return;
    }
    default: {
      const lk = k.toLowerCase();
      const why = REFUSED_JETSTREAM.get(lk);
      if (why !== undefined) return ctx.refused(m, k, "jetstream.", why);
      if (IGNORED_JETSTREAM.has(lk)) return ctx.ignored(m, k, "jetstream.");
      return ctx.unknown(m, k);
    }
  }
}

// nats-server fields of the websocket block that tsnats does not implement: an error, never
// silently ignored (each changes who may connect or how).
const UNSUPPORTED_WEBSOCKET: Record<string, string> = {
  jwt_cookie: "needs JWT authentication (trusted operators), which tsnats does not support",
  user_cookie: "is not supported by tsnats",
  pass_cookie: "is not supported by tsnats",
  token_cookie: "is not supported by tsnats",
  headers: "is not supported by tsnats",
  ping_interval: "is not supported by tsnats (websocket clients use the server's ping_interval)",
};

/** websocket { ... } (nats-server parseWebsocket). */
function websocket(ctx: Ctx, parent: ConfigMap, key: string, patch: OptionsPatch): void {
  const m = ctx.map(parent, key);
  if (!m) return;
  const ws = { ...defaultWebSocketOptions(), ...patch.websocket };
  for (const k of Object.keys(m)) {
    const lk = k.toLowerCase();
    switch (lk) {
      case "listen": {
        const hp = hostPort(ctx, m, k);
        if (hp.host !== undefined) ws.host = hp.host;
        if (hp.port !== undefined) ws.port = hp.port;
        break;
      }
      case "port":
        ws.port = ctx.int(m, k) ?? ws.port;
        break;
      case "host":
      case "net":
        ws.host = ctx.str(m, k) ?? ws.host;
        break;
      case "advertise":
        ws.advertise = ctx.str(m, k) ?? ws.advertise;
        break;
      case "no_tls":
        ws.noTls = ctx.bool(m, k) ?? ws.noTls;
        break;
      case "tls": {
        const t = tlsBlock(ctx, m, k);
        if (t !== undefined) ws.tls = t;
        break;
      }
      case "same_origin":
        ws.sameOrigin = ctx.bool(m, k) ?? ws.sameOrigin;
        break;
      case "allowed_origins":
      case "allowed_origin":
      case "allow_origins":
      case "allow_origin":
      case "origins":
      case "origin": {
        const list = stringList(ctx, m, k, "allowed origins");
        if (list === undefined) break;
        for (const o of list) {
          try {
            new URL(o);
          } catch {
            ctx.error(m, k, `unable to parse allowed origin: ${JSON.stringify(o)}`);
          }
        }
        ws.allowedOrigins = list;
        break;
      }
      case "handshake_timeout": {
        // nats-server: a number is seconds (without the duration warning), or a duration.
        const v = m[k];
        if (typeof v === "number") ws.handshakeTimeoutMs = v * 1000;
        else if (typeof v === "string") ws.handshakeTimeoutMs = ctx.durationMs(m, k) ?? ws.handshakeTimeoutMs;
        else ctx.error(m, k, `error parsing handshake timeout: unsupported type ${describe(v)}`);
        break;
      }
      case "compress":
      case "compression":
        ws.compression = ctx.bool(m, k) ?? ws.compression;
        break;
      case "authorization":
      case "authentication": {
        const a = simpleAuth(ctx, m, k);
        if (a !== undefined) ws.authorization = a;
        break;
      }
      case "no_auth_user":
        ws.noAuthUser = ctx.str(m, k) ?? ws.noAuthUser;
        break;
      default:
        if (UNSUPPORTED_WEBSOCKET[lk] !== undefined) ctx.error(m, k, `field "websocket.${k}" ${UNSUPPORTED_WEBSOCKET[lk]}`);
        else ctx.unknown(m, k);
    }
  }
  // nats-server validateWebsocketOptions: TLS unless no_tls.
  if (ws.port !== 0 && !ws.noTls && ws.tls === null && !Object.keys(m).some((x) => x.toLowerCase() === "tls")) ctx.error(parent, key, "websocket requires TLS configuration");
  patch.websocket = ws;
}


/** The websocket block's authorization: user, password, token, timeout (nats-server
 *  parseSimpleAuth; no users list). */
function simpleAuth(ctx: Ctx, parent: ConfigMap, key: string): AuthorizationOptions | undefined {
  const m = ctx.map(parent, key);
  if (!m) return undefined;
  // timeoutMs 0: the server's authorization timeout.
  const a: AuthorizationOptions = { user: "", password: "", token: "", users: [], timeoutMs: 0, defaultPermissions: null };
  for (const k of Object.keys(m)) {
    switch (k.toLowerCase()) {
      case "user":
      case "username":
        a.user = ctx.str(m, k) ?? a.user;
        break;
      case "pass":
      case "password":
        a.password = ctx.str(m, k) ?? a.password;
        break;
      case "token":
        a.token = ctx.str(m, k) ?? a.token;
        break;
      case "timeout": {
        const v = m[k];
        if (typeof v === "number") a.timeoutMs = v * 1000;
        else if (typeof v === "string") a.timeoutMs = ctx.durationMs(m, k) ?? a.timeoutMs;
        else ctx.error(m, k, "error parsing websocket authorization config, 'timeout' wrong type");
        break;
      }
      default:
        ctx.unknown(m, k);
    }
  }
  return a;
}
