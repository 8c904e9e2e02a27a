// TLS for listeners: a node:tls SecureContext from nats-server's `tls {}` options, the Go
// names nats-server uses for cipher suites, curves and versions, pinned certificates, and the
// identities verify_and_map looks up (email and DNS SANs, URIs, then the RFC 2253 subject).
//
// Exported API:
//   GO_CIPHERS, GO_INSECURE_CIPHERS, GO_CURVES: Go name -> OpenSSL name
//   TlsSetup.build(opts): the context and the per-socket options (throws TlsSetupError)
//   peerIdentities(socket): what verify_and_map tries, in nats-server's order
//   pinnedOk(socket, pins): the peer's SPKI hash is one of the pins
//   tlsVersionName / tlsCipherName: what /connz shows

import { createHash, X509Certificate } from "node:crypto";
import { readFileSync } from "node:fs";
import tls from "node:tls";
import type { TlsOptions, UserEntry } from "./options.js";

export class TlsSetupError extends Error {
  readonly code = "TLS_SETUP";
  constructor(message: string) {
    super(message);
    this.name = "TlsSetupError";
  }
}

/** Go's secure cipher suites (crypto/tls CipherSuites()) by their OpenSSL names. The TLS 1.3
 *  suites are listed for completeness: Go (and so nats-server) does not let them be chosen. */
export const GO_CIPHERS: ReadonlyMap<string, string> = new Map([
  ["TLS_AES_128_GCM_SHA256", "TLS_AES_128_GCM_SHA256"],
  ["TLS_AES_256_GCM_SHA384", "TLS_AES_256_GCM_SHA384"],
  ["TLS_CHACHA20_POLY1305_SHA256", "TLS_CHACHA20_POLY1305_SHA256"],
  ["TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA", "ECDHE-ECDSA-AES128-SHA"],
  ["TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA", "ECDHE-ECDSA-AES256-SHA"],
  ["TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA", "ECDHE-RSA-AES128-SHA"],
  ["TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA", "ECDHE-RSA-AES256-SHA"],
  ["TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256", "ECDHE-ECDSA-AES128-GCM-SHA256"],
  ["TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384", "ECDHE-ECDSA-AES256-GCM-SHA384"],
  ["TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", "ECDHE-RSA-AES128-GCM-SHA256"],
  ["TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384", "ECDHE-RSA-AES256-GCM-SHA384"],
  ["TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256", "ECDHE-RSA-CHACHA20-POLY1305"],
  ["TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256", "ECDHE-ECDSA-CHACHA20-POLY1305"],
  // Go's older aliases of the two CHACHA20 names.
  ["TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305", "ECDHE-RSA-CHACHA20-POLY1305"],
  ["TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305", "ECDHE-ECDSA-CHACHA20-POLY1305"],
]);

/** Go's InsecureCipherSuites(): allowed only with allow_insecure_cipher_suites. An empty
 *  OpenSSL name means OpenSSL here does not offer it (RC4, 3DES): refused with a clear error. */
export const GO_INSECURE_CIPHERS: ReadonlyMap<string, string> = new Map([
  ["TLS_RSA_WITH_AES_128_CBC_SHA", "AES128-SHA"],
  ["TLS_RSA_WITH_AES_256_CBC_SHA", "AES256-SHA"],
  ["TLS_RSA_WITH_AES_128_GCM_SHA256", "AES128-GCM-SHA256"],
  ["TLS_RSA_WITH_AES_256_GCM_SHA384", "AES256-GCM-SHA384"],
  ["TLS_RSA_WITH_AES_128_CBC_SHA256", "AES128-SHA256"],
  ["TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256", "ECDHE-ECDSA-AES128-SHA256"],
  ["TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256", "ECDHE-RSA-AES128-SHA256"],
  ["TLS_RSA_WITH_RC4_128_SHA", ""],
  ["TLS_RSA_WITH_3DES_EDE_CBC_SHA", ""],
  ["TLS_ECDHE_ECDSA_WITH_RC4_128_SHA", ""],
  ["TLS_ECDHE_RSA_WITH_RC4_128_SHA", ""],
  ["TLS_ECDHE_RSA_WITH_3DES_EDE_CBC_SHA", ""],
]);

/** Go curve names; X25519MLKEM768 needs an OpenSSL this Node does not ship (empty). */
export const GO_CURVES: ReadonlyMap<string, string> = new Map([
  ["CurveP256", "P-256"],
  ["CurveP384", "P-384"],
  ["CurveP521", "P-521"],
  ["X25519", "X25519"],
  ["X25519MLKEM768", ""],
  ["SecP256r1MLKEM768", ""],
  ["SecP384r1MLKEM1024", ""],
]);

/** What a listener needs: a context, and the socket options that go with it. */
export interface TlsSetup {
  readonly context: tls.SecureContext;
  /** What the context was made from (an https server takes these). */
  readonly contextOptions: tls.SecureContextOptions;
  readonly requestCert: boolean;
  readonly opts: TlsOptions;
  /** The certificate's notAfter, for /varz (tls_cert_not_after). */
  readonly certNotAfter: string;
}

function readPem(what: string, path: string): Buffer {
  try {
    return readFileSync(path);
  } catch (err) {
    throw new TlsSetupError(`error loading ${what} "${path}": ${(err as Error).message}`);
  }
}

/** Builds the secure context; every problem (missing or unreadable files, a key that does not
 *  match the certificate, unknown ciphers) is a TlsSetupError, so a server never starts with
 *  TLS configured but not working. */
export function buildTls(o: TlsOptions): TlsSetup {
  if (o.certFile === "" || o.keyFile === "") throw new TlsSetupError("TLS Server certificate must be present and valid (cert_file and key_file)");
  const cert = readPem("certificate", o.certFile);
  const key = readPem("key", o.keyFile);
  const ca = o.caFile !== "" ? readPem("CA file", o.caFile) : undefined;
  const sc: tls.SecureContextOptions = { cert, key, minVersion: o.minVersion === "1.3" ? "TLSv1.3" : "TLSv1.2" };
  if (ca !== undefined) sc.ca = ca;
  if (o.cipherSuites.length > 0) {
    const names: string[] = [];
    for (const n of o.cipherSuites) {
      const v = GO_CIPHERS.get(n) ?? GO_INSECURE_CIPHERS.get(n);
      if (v === undefined || v === "") throw new TlsSetupError(`unsupported cipher suite ${n}`);
      if (!v.startsWith("TLS_")) names.push(v);
    }
    // OpenSSL takes TLS 1.2 suites in `ciphers`; Go ignores the list for TLS 1.3 and so do we.
    if (names.length > 0) sc.ciphers = names.join(":");
  }
  if (o.curvePreferences.length > 0) {
    const names = o.curvePreferences.map((n) => {
      const v = GO_CURVES.get(n);
      if (v === undefined || v === "") throw new TlsSetupError(`unsupported curve preference ${n}`);
      return v;
    });
    sc.ecdhCurve = names.join(":");
  }
  let context: tls.SecureContext;
  try {
    context = tls.createSecureContext(sc);
  } catch (err) {
    throw new TlsSetupError(`error parsing X509 certificate/key pair: ${(err as Error).message}`);
  }
  let certNotAfter = "";
  try {
    certNotAfter = new X509Certificate(cert).validTo;
  } catch {
    /* validated by createSecureContext already */
  }
  return { context, contextOptions: sc, requestCert: o.verify || o.verifyAndMap || o.pinnedCerts.length > 0, opts: o, certNotAfter };
}

/** The server-side options for a TLSSocket over an accepted socket. */
export function serverSocketOptions(t: TlsSetup): tls.TLSSocketOptions {
  const verify = t.opts.verify || t.opts.verifyAndMap;
  return {
    isServer: true,
    secureContext: t.context,
    requestCert: t.requestCert,
    rejectUnauthorized: verify,
  };
}

interface VerifyHandle {
  _handle?: { verifyError?: () => Error | null } | null;
}

/**
 * Why the peer's certificate chain did not verify, or null when it did. OpenSSL refuses a
 * client without a certificate (requestCert + rejectUnauthorized), but node checks the chain
 * itself, in tls.Server's connection handler (onServerSocketSecure), which a TLSSocket over an
 * accepted socket does not run: so the same check is made here, on the handle node uses. A
 * node without it fails closed.
 */
export function peerVerifyError(socket: tls.TLSSocket): string | null {
  if (socket.getPeerX509Certificate() === undefined) return "no certificate";
  const h = (socket as unknown as VerifyHandle)._handle;
  if (h === null || h === undefined || typeof h.verifyError !== "function") return "cannot verify the certificate on this node version";
  const err = h.verifyError();
  return err === null ? null : ((err as Error & { code?: string }).code ?? err.message);
}

/** Why a finished handshake must be refused, or null: the chain did not verify (when
 *  `verify`), or the certificate is not pinned. One check for every listener (client port,
 *  websocket, routes). */
export function peerRejection(socket: tls.TLSSocket, o: TlsOptions, verify: boolean): string | null {
  const err = verify ? peerVerifyError(socket) : null;
  if (err !== null) return `peer certificate not verified: ${err}`;
  return pinnedOk(socket, o.pinnedCerts) ? null : "peer certificate is not pinned";
}

/** True when the peer's certificate (its SubjectPublicKeyInfo, hashed) is pinned. */
export function pinnedOk(socket: tls.TLSSocket, pins: readonly string[]): boolean {
  if (pins.length === 0) return true;
  const x = socket.getPeerX509Certificate();
  if (x === undefined) return false;
  const spki = x.publicKey.export({ type: "spki", format: "der" });
  const h = createHash("sha256").update(spki).digest("hex");
  return pins.includes(h);
}

/** "1.3" as Go's tlsVersion() names it for /connz. */
export function tlsVersionName(socket: tls.TLSSocket): string {
  const p = socket.getProtocol();
  if (p === null) return "";
  const m = /^TLSv(\d(?:\.\d)?)$/.exec(p);
  if (!m) return p;
  return m[1] === "1" ? "1.0" : m[1]!;
}

/** The cipher suite by its IANA name, which is what Go's tls.CipherSuiteName gives. */
export function tlsCipherName(socket: tls.TLSSocket): string {
  const c = socket.getCipher();
  if (!c) return "";
  return c.standardName ?? c.name;
}

/** What verify_and_map tries, in nats-server's order: email SANs, DNS SANs, URI SANs, then
 *  the subject in RFC 2253 form (the last RDN first), with and without domain components. */
export function peerIdentities(socket: tls.TLSSocket): string[] {
  const x = socket.getPeerX509Certificate();
  if (x === undefined) return [];
  return certIdentities(x);
}

export function certIdentities(x: X509Certificate): string[] {
  const out: string[] = [];
  const san = x.subjectAltName ?? "";
  const emails: string[] = [];
  const dns: string[] = [];
  const uris: string[] = [];
  for (const part of splitSan(san)) {
    const i = part.indexOf(":");
    if (i < 0) continue;
    const kind = part.slice(0, i).trim();
    const val = unquote(part.slice(i + 1).trim());
    if (kind === "email") emails.push(val);
    else if (kind === "DNS") dns.push(val);
    else if (kind === "URI") uris.push(val);
  }
  out.push(...emails, ...dns, ...uris);
  const dn = rfc2253(x.subject);
  if (dn !== "") out.push(dn);
  return out;
}

// subjectAltName: `DNS:a, email:b` — values with a comma are JSON-quoted by node.
function splitSan(s: string): string[] {
  const out: string[] = [];
  let cur = "";
  let q = false;
  for (let i = 0; i < s.length; i++) {
    const ch = s[i]!;
    if (ch === '"' && s[i - 1] !== "\\") q = !q;
    if (ch === "," && !q) {
      out.push(cur.trim());
      cur = "";
      continue;
    }
    cur += ch;
  }
  if (cur.trim() !== "") out.push(cur.trim());
  return out;
}

function unquote(v: string): string {
  if (v.startsWith('"') && v.endsWith('"')) {
    try {
      return JSON.parse(v) as string;
    } catch {
      return v.slice(1, -1);
    }
  }
  return v;
}

// Go's pkix short names; node prints the rest by their OpenSSL short names.
const GO_ATTR: Record<string, string> = {
  C: "C",
  O: "O",
  OU: "OU",
  CN: "CN",
  L: "L",
  ST: "ST",
  street: "STREET",
  postalCode: "POSTALCODE",
  serialNumber: "SERIALNUMBER",
  DC: "DC",
  emailAddress: "1.2.840.113549.1.9.1",
};

/** Node's `subject` (one "type=value" per line, in certificate order) as Go's
 *  pkix.Name.String(): reversed, comma-separated, RFC 2253 escaping. */
export function rfc2253(subject: string): string {
  if (subject === "") return "";
  const rdns = subject.split("\n").filter((l) => l !== "");
  const parts: string[] = [];
  for (let i = rdns.length - 1; i >= 0; i--) {
    const line = rdns[i]!;
    const eq = line.indexOf("=");
    if (eq < 0) continue;
    const type = line.slice(0, eq);
    const value = line.slice(eq + 1);
    parts.push(`${GO_ATTR[type] ?? type}=${escapeDnValue(value)}`);
  }
  return parts.join(",");
}

function escapeDnValue(v: string): string {
  let out = "";
  for (let i = 0; i < v.length; i++) {
    const ch = v[i]!;
    if (',+"\\<>;'.includes(ch) || (i === 0 && (ch === " " || ch === "#")) || (i === v.length - 1 && ch === " ")) out += "\\" + ch;
    else out += ch;
  }
  return out;
}

/** Compares a configured user name with a certificate DN the way go-ldap's DN.Equal does:
 *  RDN by RDN, attribute types case-insensitive, values exact, spaces around separators
 *  ignored. */
export function dnEqual(a: string, b: string): boolean {
  const pa = parseDn(a);
  const pb = parseDn(b);
  if (pa === null || pb === null || pa.length !== pb.length) return false;
  for (let i = 0; i < pa.length; i++) if (pa[i]![0] !== pb[i]![0] || pa[i]![1] !== pb[i]![1]) return false;
  return true;
}

function parseDn(s: string): Array<[string, string]> | null {
  const out: Array<[string, string]> = [];
  let cur = "";
  const flush = (): boolean => {
    const eq = cur.indexOf("=");
    if (eq <= 0) return false;
    out.push([cur.slice(0, eq).trim().toUpperCase(), cur.slice(eq + 1).trim()]);
    cur = "";
    return true;
  };
  for (let i = 0; i < s.length; i++) {
    const ch = s[i]!;
    if (ch === "\\" && i + 1 < s.length) {
      cur += s[++i]!;
      continue;
    }
    if (ch === "," || ch === ";" || ch === "+") {
      if (!flush()) return null;
      continue;
    }
    cur += ch;
  }
  if (cur.trim() !== "" && !flush()) return null;
  return out.length > 0 ? out : null;
}

/** verify_and_map: the configured user a certificate's identities name (an exact match in
 *  nats-server's order, then the subject compared as a DN), or null. */
export function mapCertUser(users: readonly UserEntry[], ids: readonly string[]): string | null {
  for (const id of ids) for (const u of users) if (u.user === id) return u.user;
  const dn = ids.length > 0 ? ids[ids.length - 1]! : "";
  if (dn !== "" && dn.includes("=")) for (const u of users) if (u.user.includes("=") && dnEqual(u.user, dn)) return u.user;
  return null;
}
