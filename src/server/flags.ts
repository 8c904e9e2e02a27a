// nats-server compatible command-line flags.
//
// Exported API:
//   parseServerFlags(argv) -> ServerFlags  (argv without "node script"; throws FlagError)
//   usageText()            -> string       nats-server-like usage text for -h
//   configCheck(path, env?) -> ConfigCheckResult   what `-t` does: parse + map, never throws
//   FlagError: Error with code "FLAG_ERROR".
//
// Semantics follow Go's `flag` package, which nats-server uses: one or two dashes are the
// same (`-port` == `--port`), values come as `-p 4222` or `-p=4222`, boolean flags take a
// value only as `-T=false`, parsing stops at `--` or the first non-flag argument (which is an
// error here, since nats-server takes no positional arguments). Flags win over the config
// file: the caller merges mergeOptions(filePatch, flags.patch).

import { createHash } from "node:crypto";
import type { OptionsPatch } from "./options.js";
import { ConfigError } from "./config/parser.js";
import { ConfigProblems, loadConfigFile, routeUrlProblem } from "./config/to-options.js";

export class FlagError extends Error {
  readonly code = "FLAG_ERROR";
  constructor(message: string) {
    super(message);
    this.name = "FlagError";
  }
}

export interface ServerFlags {
  patch: OptionsPatch;
  configFile: string;
  checkConfig: boolean;
  showVersion: boolean;
  showHelp: boolean;
  /** -sl/--signal value, e.g. "stop" or "reload=1234"; "" when absent. */
  signal: string;
}

type FlagKind = "string" | "int" | "bool";
type Apply = (out: ServerFlags, v: string) => void;
interface FlagDef {
  kind: FlagKind;
  apply: Apply;
}

function parseIntFlag(name: string, v: string): number {
  if (!/^[-+]?\d+$/.test(v)) throw new FlagError(`invalid value "${v}" for flag -${name}: parse error`);
  return Number(v);
}

function parseBoolFlag(name: string, v: string): boolean {
  // Go's strconv.ParseBool set.
  if (["1", "t", "T", "TRUE", "true", "True"].includes(v)) return true;
  if (["0", "f", "F", "FALSE", "false", "False"].includes(v)) return false;
  throw new FlagError(`invalid boolean value "${v}" for -${name}: parse error`);
}

const js = (out: ServerFlags): NonNullable<OptionsPatch["jetstream"]> => (out.patch.jetstream ??= {});
const auth = (out: ServerFlags): NonNullable<OptionsPatch["authorization"]> => (out.patch.authorization ??= {});

const DEFS: Record<string, FlagDef> = {};
function def(names: string[], kind: FlagKind, apply: Apply): void {
  for (const n of names) DEFS[n] = { kind, apply };
}

def(["a", "addr", "net"], "string", (o, v) => (o.patch.host = v));
def(["p", "port"], "int", (o, v) => (o.patch.port = parseIntFlag("port", v)));
def(["n", "name", "server_name"], "string", (o, v) => (o.patch.serverName = v));
def(["m", "http_port"], "int", (o, v) => (o.patch.httpPort = parseIntFlag("http_port", v)));
def(["c", "config"], "string", (o, v) => {
  o.configFile = v;
  o.patch.configFile = v;
});
def(["t"], "bool", (o, v) => (o.checkConfig = parseBoolFlag("t", v)));
def(["P", "pid"], "string", (o, v) => (o.patch.pidFile = v));
def(["l", "log"], "string", (o, v) => (o.patch.logFile = v));
def(["D", "debug"], "bool", (o, v) => (o.patch.debug = parseBoolFlag("D", v)));
def(["V", "trace", "VV"], "bool", (o, v) => (o.patch.trace = parseBoolFlag("V", v)));
def(["DV", "DVV"], "bool", (o, v) => {
  const b = parseBoolFlag("DV", v);
  o.patch.debug = b;
  o.patch.trace = b;
});
def(["T", "logtime"], "bool", (o, v) => (o.patch.logTime = parseBoolFlag("T", v)));
def(["ports_file_dir"], "string", (o, v) => (o.patch.portsFileDir = v));
def(["js", "jetstream"], "bool", (o, v) => (js(o).enabled = parseBoolFlag("jetstream", v)));
def(["sd", "store_dir"], "string", (o, v) => (js(o).storeDir = v));
def(["user"], "string", (o, v) => (auth(o).user = v));
def(["pass"], "string", (o, v) => (auth(o).password = v));
def(["auth"], "string", (o, v) => (auth(o).token = v));
const tlsFlag = (out: ServerFlags): NonNullable<OptionsPatch["tls"]> => (out.patch.tls ??= {});
def(["tls"], "bool", (o, v) => {
  if (parseBoolFlag("tls", v)) tlsFlag(o);
});
def(["tlscert"], "string", (o, v) => (tlsFlag(o).certFile = v));
def(["tlskey"], "string", (o, v) => (tlsFlag(o).keyFile = v));
def(["tlscacert"], "string", (o, v) => (tlsFlag(o).caFile = v));
def(["tlsverify"], "bool", (o, v) => {
  if (parseBoolFlag("tlsverify", v)) tlsFlag(o).verify = true;
});
const clusterFlag = (out: ServerFlags): NonNullable<OptionsPatch["cluster"]> => (out.patch.cluster ??= {});
// --cluster nats://[user:pass@]host:port: the route listener (and its authorization), as
// nats-server's Cluster.ListenStr.
// The port may be -1 (random), which WHATWG URLs refuse: parsed by hand.
const CLUSTER_URL = /^[a-z][a-z0-9+.-]*:\/\/(?:([^:@/]*)(?::([^@/]*))?@)?(\[[^\]]*\]|[^:/@[\]]+):(-?\d+)\/?$/i;
def(["cluster", "cluster_listen"], "string", (o, v) => {
  const m = CLUSTER_URL.exec(v);
  if (m === null) throw new FlagError(`invalid value "${v}" for flag -cluster: expected a URL like nats://host:port`);
  const c = clusterFlag(o);
  c.host = m[3]!.replace(/^\[(.*)\]$/, "$1");
  c.port = Number(m[4]);
  if (m[1] !== undefined && m[1] !== "") c.user = decodeURIComponent(m[1]);
  if (m[2] !== undefined && m[2] !== "") c.password = decodeURIComponent(m[2]);
});
def(["cluster_name"], "string", (o, v) => (clusterFlag(o).name = v));
def(["routes"], "string", (o, v) => {
  const list = v.split(",").map((x) => x.trim()).filter((x) => x !== "");
  for (const r of list) if (routeUrlProblem(r) !== null) throw new FlagError(`invalid value "${r}" for flag -routes: ${routeUrlProblem(r)}`);
  clusterFlag(o).routes = list;
});
def(["no_advertise"], "bool", (o, v) => (clusterFlag(o).noAdvertise = parseBoolFlag("no_advertise", v)));
def(["client_advertise"], "string", (o, v) => (o.patch.clientAdvertise = v));
def(["cluster_advertise"], "string", (o, v) => (clusterFlag(o).advertise = v));
def(["https_port"], "int", (o, v) => (o.patch.httpsPort = parseIntFlag("https_port", v)));
def(["v", "version"], "bool", (o, v) => (o.showVersion = parseBoolFlag("version", v)));
def(["h", "help"], "bool", (o, v) => (o.showHelp = parseBoolFlag("help", v)));
def(["sl", "signal"], "string", (o, v) => (o.signal = v));

export function parseServerFlags(argv: readonly string[]): ServerFlags {
  const out: ServerFlags = {
    patch: {},
    configFile: "",
    checkConfig: false,
    showVersion: false,
    showHelp: false,
    signal: "",
  };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] ?? "";
    if (arg === "--") {
      if (i + 1 < argv.length) throw new FlagError(`unexpected argument "${argv[i + 1]}"`);
      break;
    }
    if (!arg.startsWith("-") || arg === "-") throw new FlagError(`unexpected argument "${arg}"`);
    const body = arg.startsWith("--") ? arg.slice(2) : arg.slice(1);
    if (body === "" || body.startsWith("-") || body.startsWith("=")) throw new FlagError(`bad flag syntax: ${arg}`);
    const eq = body.indexOf("=");
    const name = eq === -1 ? body : body.slice(0, eq);
    const d = DEFS[name];
    if (!d) throw new FlagError(`flag provided but not defined: -${name}`);
    let value: string;
    if (eq !== -1) value = body.slice(eq + 1);
    else if (d.kind === "bool") value = "true";
    else {
      const next = argv[i + 1];
      if (next === undefined) throw new FlagError(`flag needs an argument: -${name}`);
      value = next;
      i++;
    }
    d.apply(out, value);
  }
  return out;
}

export function usageText(): string {
  return `
Usage: tsnats-server [options]

Server Options:
    -a, --addr, --net <host>         Bind to host address (default: 0.0.0.0)
    -p, --port <port>                Use port for clients (default: 4222, -1 for random)
    -n, --name
        --server_name <server_name>  Server name (default: auto)
    -P, --pid <file>                 File to store PID
    -m, --http_port <port>           Use port for http monitoring (-1 for random)
        --https_port <port>          Use port for https monitoring (needs TLS)
    -c, --config <file>              Configuration file
    -t                               Test configuration and exit
    -sl,--signal <signal>[=<pid>]    Send signal to tsnats-server process (ldm, stop, quit, term, reopen, reload)
        --ports_file_dir <dir>       Creates a ports file in the specified directory (<executable_name>_<pid>.ports)

Logging Options:
    -l, --log <file>                 File to redirect log output
    -T, --logtime                    Timestamp log entries (default: true)
    -D, --debug                      Enable debugging output
    -V, --trace                      Trace the raw protocol
    -VV                              Verbose trace
    -DV                              Debug and trace
    -DVV                             Debug and verbose trace

JetStream Options:
    -js, --jetstream                 Enable JetStream functionality
    -sd, --store_dir <dir>           Set the storage directory

Authorization Options:
        --user <user>                User required for connections
        --pass <password>            Password required for connections
        --auth <token>               Authorization token required for connections

TLS Options:
        --tls                        Enable TLS, do not verify clients (default: false)
        --tlscert <file>             Server certificate file
        --tlskey <file>              Private key for server certificate
        --tlsverify                  Enable TLS, verify client certificates
        --tlscacert <file>           Client certificate CA for verification

Cluster Options:
        --routes <rurl-1, rurl-2>    Routes to solicit and connect
        --cluster <cluster-url>      Cluster URL for solicited routes
        --cluster_name <string>      Cluster Name, if not set one will be dynamically generated
        --no_advertise <bool>        Do not advertise known cluster information to clients
        --cluster_advertise <string> Cluster URL to advertise to other servers
        --client_advertise <string>  Client URL to advertise to other servers

Common Options:
    -h, --help                       Show this message
    -v, --version                    Show version
`;
}

export interface ConfigCheckResult {
  valid: boolean;
  /** One line for the user: "configuration file X is valid (sha256:...)" or the error(s). */
  message: string;
  warnings: string[];
  /** sha256 of the parsed tree, like nats-server's config digest; "" when invalid. */
  digest: string;
}

export function configCheck(path: string, env?: Record<string, string | undefined>): ConfigCheckResult {
  try {
    const { tree, warnings } = loadConfigFile(path, env);
    const digest = "sha256:" + createHash("sha256").update(JSON.stringify(tree)).digest("hex");
    return { valid: true, message: `configuration file ${path} is valid (${digest})`, warnings, digest };
  } catch (err) {
    if (err instanceof ConfigProblems) return { valid: false, message: err.message, warnings: err.warnings, digest: "" };
    if (err instanceof ConfigError) return { valid: false, message: err.message, warnings: [], digest: "" };
    throw err;
  }
}
