// TLS certificates for the secure suite, made at bench time with the openssl CLI (nothing
// checked in that expires): a CA and a server certificate for localhost / 127.0.0.1, EC P-256.

import { execFileSync } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";

export interface BenchCerts {
  /** PEM file paths, for the server's tls {} block. */
  caFile: string;
  certFile: string;
  keyFile: string;
  /** The CA certificate's PEM bytes, for the client's `ca`. */
  ca: Buffer;
}

/** The name the server certificate carries (and the client checks). */
export const CERT_SERVERNAME = "localhost";

function openssl(args: string[], cwd: string): void {
  try {
    execFileSync("openssl", args, { cwd, stdio: ["ignore", "ignore", "pipe"] });
  } catch (e) {
    const stderr = (e as { stderr?: Buffer }).stderr?.toString().trim() ?? "";
    throw new Error(`openssl ${args[0]} failed: ${stderr.split("\n")[0] ?? (e instanceof Error ? e.message : String(e))}`);
  }
}

/** Make a CA and a server certificate signed by it in `dir` (created if missing). */
export function makeCerts(dir: string): BenchCerts {
  mkdirSync(dir, { recursive: true });
  const ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"];
  const caFile = path.join(dir, "ca.pem");
  const caKey = path.join(dir, "ca-key.pem");
  openssl(["req", "-x509", ...ec, "-keyout", caKey, "-out", caFile, "-days", "2", "-subj", "/CN=tsnats bench CA"], dir);
  const keyFile = path.join(dir, "server-key.pem");
  const csr = path.join(dir, "server.csr");
  const certFile = path.join(dir, "server.pem");
  const ext = path.join(dir, "server.ext");
  openssl(["req", ...ec, "-keyout", keyFile, "-out", csr, "-subj", `/CN=${CERT_SERVERNAME}`], dir);
  writeFileSync(ext, `subjectAltName=DNS:${CERT_SERVERNAME},IP:127.0.0.1\nbasicConstraints=CA:FALSE\n`);
  openssl(
    ["x509", "-req", "-in", csr, "-CA", caFile, "-CAkey", caKey, "-CAcreateserial", "-out", certFile, "-days", "2", "-extfile", ext],
    dir,
  );
  return { caFile, certFile, keyFile, ca: readFileSync(caFile) };
}
