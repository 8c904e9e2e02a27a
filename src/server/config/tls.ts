// `tls {}` blocks of the config file (client port, websocket, monitoring), read like
// nats-server's parseTLS (opts.go) with its error texts. What tsnats does not implement
// (Windows cert stores, OCSP peer checks, several certificate pairs) is an error, never a
// field quietly dropped: a TLS block that does less than it says is a security hole.

import { defaultTlsOptions, type TlsOptions } from "../options.js";
import { GO_CIPHERS, GO_CURVES, GO_INSECURE_CIPHERS } from "../tls.js";
import { parseDurationMs } from "./duration.js";
import { type ConfigMap, type ConfigValue, wasUsedAsVariable } from "./parser.js";

/** What the mapping context (to-options.ts) offers for reporting. */
export interface TlsCtx {
  error(container: object, key: string | number, reason: string): void;
  warn(container: object, key: string | number, reason: string): void;
}

function isMap(v: ConfigValue | undefined): v is ConfigMap {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

const NOT_SUPPORTED: Record<string, string> = {
  cert_store: "certificate stores are a Windows feature",
  cert_match_by: "certificate stores are a Windows feature",
  cert_match: "certificate stores are a Windows feature",
  cert_match_skip_invalid: "certificate stores are a Windows feature",
  ca_certs_match: "certificate stores are a Windows feature",
  certs: "several certificate pairs (SNI) are not supported by tsnats",
  certificates: "several certificate pairs (SNI) are not supported by tsnats",
};

/**
 * parent[key] as TLS options; undefined after recording an error.
 * clientCtx: the block configures a listener for clients (verify_cert_and_check_known_urls
 * is refused there, as nats-server does).
 */
export function tlsBlock(ctx: TlsCtx, parent: ConfigMap, key: string, clientCtx = true): TlsOptions | undefined {
  const m = parent[key];
  if (!isMap(m)) {
    ctx.error(parent, key, `error parsing tls config, expected a map, got ${describe(m)}`);
    return undefined;
  }
  const t = defaultTlsOptions();
  let ok = true;
  let allowInsecure = false;
  const insecureSeen: string[] = [];
  const fail = (k: string | number, reason: string, c: object = m): void => {
    ctx.error(c, k, reason);
    ok = false;
  };
  for (const k of Object.keys(m)) {
    const v = m[k];
    const lk = k.toLowerCase();
    switch (lk) {
      case "cert_file":
      case "key_file":
      case "ca_file": {
        if (typeof v !== "string") {
          fail(k, `error parsing tls config, expected '${lk}' to be filename`);
          break;
        }
        if (lk === "cert_file") t.certFile = v;
        else if (lk === "key_file") t.keyFile = v;
        else t.caFile = v;
        break;
      }
      case "verify":
      case "verify_and_map":
      case "insecure":
      case "allow_insecure_cipher_suites":
      case "verify_cert_and_check_known_urls": {
        if (typeof v !== "boolean") {
          fail(k, `error parsing tls config, expected '${lk}' to be a boolean`);
          break;
        }
        if (lk === "verify") t.verify = v || t.verify;
        else if (lk === "verify_and_map") {
          t.verifyAndMap = v;
          if (v) t.verify = true;
        } else if (lk === "insecure") {
          // Skips verification of the servers an outgoing connection reaches: a listener has
          // none, and nats-server ignores it there too.
          if (v && clientCtx) ctx.warn(m, k, `field "tls.insecure" only concerns outgoing connections and has no effect on a listener`);
          t.insecure = v;
        } else if (lk === "allow_insecure_cipher_suites") allowInsecure = v;
        else if (v) {
          if (clientCtx) fail(k, "verify_cert_and_check_known_urls not supported in this context");
          else fail(k, `field "tls.${k}" is not supported by tsnats`);
        }
        break;
      }
      case "cipher_suites": {
        if (!Array.isArray(v)) {
          fail(k, "error parsing tls config, 'cipher_suites' should be an array");
          break;
        }
        if (v.length === 0) {
          fail(k, "error parsing tls config, 'cipher_suites' cannot be empty");
          break;
        }
        v.forEach((c, i) => {
          const name = typeof c === "string" ? c : String(c);
          if (GO_CIPHERS.has(name)) t.cipherSuites.push(name);
          else if (GO_INSECURE_CIPHERS.has(name)) {
            if (GO_INSECURE_CIPHERS.get(name) === "") return fail(i, `cipher suite ${name} is not available in tsnats (no RC4 or 3DES)`, v);
            insecureSeen.push(name);
            t.cipherSuites.push(name);
          } else fail(i, `unrecognized cipher ${name}`, v);
        });
        break;
      }
      case "curve_preferences": {
        if (!Array.isArray(v)) {
          fail(k, "error parsing tls config, 'curve_preferences' should be an array");
          break;
        }
        if (v.length === 0) {
          fail(k, "error parsing tls config, 'curve_preferences' cannot be empty");
          break;
        }
        v.forEach((c, i) => {
          const name = typeof c === "string" ? c : String(c);
          const o = GO_CURVES.get(name);
          if (o === undefined) fail(i, `unrecognized curve preference ${name}`, v);
          else if (o === "") fail(i, `curve preference ${name} is not available in tsnats`, v);
          else t.curvePreferences.push(name);
        });
        break;
      }
      case "timeout": {
        if (typeof v === "number") t.timeoutMs = v * 1000;
        else if (typeof v === "string") {
          try {
            t.timeoutMs = parseDurationMs(v);
          } catch (err) {
            fail(k, `error parsing tls config, 'timeout' ${(err as Error).message}`);
          }
        } else fail(k, "error parsing tls config, 'timeout' wrong type");
        break;
      }
      case "pinned_certs": {
        if (!Array.isArray(v)) {
          fail(k, "error parsing tls config, expected 'pinned_certs' to be a list of hex-encoded sha256 of DER encoded SubjectPublicKeyInfo");
          break;
        }
        v.forEach((p, i) => {
          const e = typeof p === "string" ? p.toLowerCase() : String(p);
          if (!/^[a-f0-9]{64}$/.test(e)) fail(i, `error parsing tls config, 'pinned_certs' key ${e} does not look like hex-encoded sha256 of DER encoded SubjectPublicKeyInfo`, v);
          else t.pinnedCerts.push(e);
        });
        break;
      }
      case "handshake_first":
      case "first":
      case "immediate": {
        if (typeof v === "boolean") t.handshakeFirst = v;
        else if (typeof v === "string") {
          const s = v.toLowerCase();
          if (s === "true" || s === "on") t.handshakeFirst = true;
          else if (s === "false" || s === "off") t.handshakeFirst = false;
          else if (s === "auto" || s === "auto_fallback") {
            t.handshakeFirst = true;
            t.handshakeFirstFallbackMs = 50; // nats-server DEFAULT_TLS_HANDSHAKE_FIRST_FALLBACK_DELAY
          } else {
            try {
              t.handshakeFirstFallbackMs = parseDurationMs(v);
              t.handshakeFirst = true;
            } catch {
              fail(k, `field "${k}"'s value "${v}" is invalid`);
            }
          }
        } else fail(k, `field "${k}" should be a boolean or a string, got ${describe(v)}`);
        break;
      }
      case "min_version": {
        if (typeof v !== "string") {
          fail(k, `error parsing tls config: 'min_version' wrong type: ${String(v)}`);
          break;
        }
        const s = v.replace(/^tls/i, "").replace(/^v/i, "").trim();
        if (s === "1.2" || s === "1.3") t.minVersion = s;
        else if (s === "1.0" || s === "1.1") fail(k, `error parsing tls config: unsupported TLS version: TLS ${s}`);
        else fail(k, `error parsing tls config: unknown version: ${v}`);
        break;
      }
      case "connection_rate_limit":
        if (typeof v === "number" && Number.isInteger(v)) t.rateLimit = Math.max(0, v);
        else fail(k, "error parsing tls config, 'connection_rate_limit' wrong type");
        break;
      case "ocsp_peer":
        if (v === false) break;
        fail(k, `field "tls.${k}" (OCSP peer verification) is not supported by tsnats`);
        break;
      default: {
        const why = NOT_SUPPORTED[lk];
        if (why !== undefined) fail(k, `field "tls.${k}" is not supported: ${why}`);
        else if (!wasUsedAsVariable(m, k)) fail(k, `error parsing tls config, unknown field "${k}"`);
      }
    }
  }
  if (!allowInsecure && insecureSeen.length > 0) {
    ctx.error(parent, key, `insecure cipher suites configured without 'allow_insecure_cipher_suites' option set: ${insecureSeen.join(", ")}`);
    ok = false;
  }
  if (ok && (t.certFile === "" || t.keyFile === "")) {
    ctx.error(parent, key, "missing 'cert_file' or 'key_file' in tls config");
    ok = false;
  }
  return ok ? t : undefined;
}

function describe(v: ConfigValue | undefined): string {
  if (Array.isArray(v)) return "an array";
  if (isMap(v)) return "a map";
  if (typeof v === "string") return `string "${v}"`;
  return `${typeof v} ${String(v)}`;
}
