// Server options: one flat, fully-initialised shape. The config file parser and the
// command-line flags both produce a Partial<ServerOptions>; flags win over the file.

import type { JetStreamOptions } from "../contracts/options.js";
import type { Permissions } from "./permissions.js";

export interface UserEntry {
  user: string;
  password: string; // plain text, or a bcrypt hash starting with "$2"
  /** An nkey user ("U..." public key): authenticated by a signature of the INFO nonce.
   *  "" for user/password entries. `user` is then the nkey too. */
  nkey?: string;
  /** allowed_connection_types (upper case: STANDARD, WEBSOCKET, …); absent or empty = any. */
  connectionTypes?: string[];
  /** null: no permissions (everything allowed). default_permissions are filled in by the
   *  config mapping for users that have none, as nats-server's applyDefaultPermissions. */
  permissions: Permissions | null;
}

export interface AuthorizationOptions {
  user: string;
  password: string;
  token: string;
  users: UserEntry[];
  timeoutMs: number;
  /** authorization.permissions / default_permissions: apply to `users` entries without
   *  their own (nats-server ignores them for the single user/password form). */
  defaultPermissions: Permissions | null;
}

export type { JetStreamOptions };

/** A `tls {}` block (client port, websocket, monitoring): nats-server's TLSConfigOpts. */
export interface TlsOptions {
  certFile: string;
  keyFile: string;
  caFile: string;
  /** Require and verify a client certificate. */
  verify: boolean;
  /** verify, and map the certificate (email/DNS SANs, then the RFC 2253 subject) to a user. */
  verifyAndMap: boolean;
  /** Handshake deadline (nats-server `timeout`, seconds in the file; default 2 s). */
  timeoutMs: number;
  /** Go cipher suite names (TLS 1.2); empty = the defaults. */
  cipherSuites: string[];
  /** Go curve names (CurveP256, X25519, ...); empty = the defaults. */
  curvePreferences: string[];
  /** Hex SHA-256 of the peer certificate's SubjectPublicKeyInfo; empty = no pinning. */
  pinnedCerts: string[];
  /** TLS before INFO (2.10 handshake_first); a duration allows a plaintext fallback. */
  handshakeFirst: boolean;
  handshakeFirstFallbackMs: number;
  /** Minimum TLS version, "1.2" or "1.3". */
  minVersion: string;
  /** connection_rate_limit: TLS connections accepted per second; 0 = no limit. */
  rateLimit: number;
  /** Outgoing connections (routes): do not verify the peer's certificate. */
  insecure: boolean;
}

export interface WebSocketOptions {
  host: string;
  port: number; // 0 = off, -1 = random
  advertise: string;
  noTls: boolean;
  tls: TlsOptions | null;
  sameOrigin: boolean;
  allowedOrigins: string[];
  compression: boolean;
  handshakeTimeoutMs: number;
  jwtCookie: string;
  noAuthUser: string;
  /** websocket.authorization: overrides the server's for websocket clients when set. */
  authorization: AuthorizationOptions | null;
}

/** A `cluster {}` block (routes to other servers, nats-server 2.9's no-pool protocol). */
export interface ClusterOptions {
  /** The cluster name; "" = dynamic (a random name, given up for a peer's, as nats-server). */
  name: string;
  host: string;
  /** 0 = no route listener; -1 = a random port. */
  port: number;
  /** Routes to solicit (nats-route://[user:pass@]host:port). */
  routes: string[];
  /** authorization { user, password, timeout } for routes that connect to us. */
  user: string;
  password: string;
  authTimeoutMs: number;
  /** host:port to tell other servers instead of the listen address. */
  advertise: string;
  /** Do not advertise other servers' client URLs to clients. */
  noAdvertise: boolean;
  /** Attempts at an implicit (gossiped) route before giving up; 0 = one attempt. */
  connectRetries: number;
  /** TLS on routes (both directions); null = plaintext. tls.insecure: solicited routes do
   *  not verify the peer's certificate. */
  tls: TlsOptions | null;
  /** permissions { import, export } (nats-server RoutePermissions, read as publish and
   *  subscribe): we announce interest only in subjects we may import, and take a peer's
   *  interest only in subjects we export. null = everything. */
  permissions: Permissions | null;
  /** pool_size (nats-server 2.10): route connections per peer, each account's traffic on
   *  one of them by a hash of its name. 0 = not set: the 2.9 protocol (one route per peer),
   *  unless accounts are pinned (then 3, nats-server's default); -1 = off. */
  poolSize: number;
  /** accounts: each gets a dedicated (pinned) route to every peer. tsnats knows "$G" and
   *  "$SYS" (where its own peer frames travel). */
  accounts: string[];
}

export function defaultClusterOptions(): ClusterOptions {
  return {
    name: "",
    host: "0.0.0.0",
    port: 0,
    routes: [],
    user: "",
    password: "",
    authTimeoutMs: 2000,
    advertise: "",
    noAdvertise: false,
    connectRetries: 0,
    tls: null,
    permissions: null,
    poolSize: 0,
    accounts: [],
  };
}

export interface ServerOptions {
  host: string;
  port: number; // 0 or -1 = pick a free port
  /** client_advertise: the "host[:port]" clients are told in other servers' connect_urls
   *  instead of this server's own addresses; "" = derive them from host and port. */
  clientAdvertise: string;
  serverName: string;
  /** server_tags, lower-cased (nats-server jwt.TagList): /varz and JetStream placement. */
  serverTags: string[];
  httpHost: string;
  httpPort: number; // 0 = off, -1 = random
  maxPayloadBytes: number;
  maxConnections: number;
  /** Subscriptions per connection; 0 = unlimited (max_subs). */
  maxSubs: number;
  maxControlLineBytes: number;
  maxPendingBytes: number;
  pingIntervalMs: number;
  pingMax: number;
  writeDeadlineMs: number;
  authorization: AuthorizationOptions;
  noAuthUser: string;
  /** TLS on the client port; null = plaintext. */
  tls: TlsOptions | null;
  /** With tls: accept plaintext clients too (INFO tls_available instead of tls_required). */
  allowNonTls: boolean;
  /** Monitoring over HTTPS (https / https_port, on httpHost), with `tls`. 0 = off, -1 =
   *  random. Not together with httpPort (nats-server refuses both). */
  httpsPort: number;
  websocket: WebSocketOptions | null;
  /** null: no cluster block and no cluster flags. */
  cluster: ClusterOptions | null;
  jetstream: JetStreamOptions;
  lameDuckDurationMs: number;
  lameDuckGracePeriodMs: number;
  pidFile: string;
  portsFileDir: string;
  logFile: string;
  debug: boolean;
  trace: boolean;
  noLog: boolean;
  logTime: boolean;
  configFile: string;
}

export const DEFAULT_PORT = 4222;
export const DEFAULT_HTTP_PORT = 8222;

export function defaultOptions(): ServerOptions {
  return {
    host: "0.0.0.0",
    port: DEFAULT_PORT,
    serverName: "",
    httpHost: "0.0.0.0",
    httpPort: 0,
    maxPayloadBytes: 1024 * 1024,
    maxConnections: 64 * 1024,
    maxSubs: 0,
    maxControlLineBytes: 4096,
    maxPendingBytes: 64 * 1024 * 1024,
    pingIntervalMs: 2 * 60 * 1000,
    pingMax: 2,
    writeDeadlineMs: 10 * 1000,
    authorization: { user: "", password: "", token: "", users: [], timeoutMs: 2000, defaultPermissions: null },
    noAuthUser: "",
    clientAdvertise: "",
    serverTags: [],
    tls: null,
    allowNonTls: false,
    httpsPort: 0,
    websocket: null,
    cluster: null,
    jetstream: {
      enabled: false,
      storeDir: "",
      maxMemoryStoreBytes: -1,
      maxFileStoreBytes: -1,
      syncIntervalMs: "always",
      domain: "",
      cipher: "",
      key: "",
      prevKey: "",
    },
    lameDuckDurationMs: 2 * 60 * 1000,
    lameDuckGracePeriodMs: 10 * 1000,
    pidFile: "",
    portsFileDir: "",
    logFile: "",
    debug: false,
    trace: false,
    noLog: false,
    logTime: true,
    configFile: "",
  };
}

export type OptionsPatch = Partial<Omit<ServerOptions, "authorization" | "jetstream" | "tls" | "cluster">> & {
  /** The cluster block (config file) or some fields over it (the cluster flags). */
  cluster?: Partial<ClusterOptions>;
  authorization?: Partial<AuthorizationOptions>;
  jetstream?: Partial<JetStreamOptions>;
  /** A whole block (config file), or some fields over it (the --tls* flags); null = off. */
  tls?: Partial<TlsOptions> | null;
};

/** Apply patches left to right over the defaults; nested blocks merge field by field. */
export function mergeOptions(...patches: OptionsPatch[]): ServerOptions {
  const out = defaultOptions();
  for (const p of patches) {
    const { authorization, jetstream, tls, cluster, ...flat } = p;
    Object.assign(out, flat);
    if (cluster !== undefined) out.cluster = { ...(out.cluster ?? defaultClusterOptions()), ...cluster };
    if (tls === null) out.tls = null;
    else if (tls !== undefined) out.tls = { ...(out.tls ?? defaultTlsOptions()), ...tls };
    if (authorization) Object.assign(out.authorization, authorization);
    if (jetstream) Object.assign(out.jetstream, jetstream);
  }
  return out;
}

export function defaultTlsOptions(): TlsOptions {
  return {
    certFile: "",
    keyFile: "",
    caFile: "",
    verify: false,
    verifyAndMap: false,
    timeoutMs: 2000,
    cipherSuites: [],
    curvePreferences: [],
    pinnedCerts: [],
    handshakeFirst: false,
    handshakeFirstFallbackMs: 0,
    minVersion: "1.2",
    rateLimit: 0,
    insecure: false,
  };
}

export function defaultWebSocketOptions(): WebSocketOptions {
  return {
    host: "0.0.0.0",
    port: 0,
    advertise: "",
    noTls: false,
    tls: null,
    sameOrigin: false,
    allowedOrigins: [],
    compression: false,
    handshakeTimeoutMs: 2000,
    jwtCookie: "",
    noAuthUser: "",
    authorization: null,
  };
}
