// Certificates made at test time with the openssl CLI (nothing checked in that expires): a
// CA, a server certificate for 127.0.0.1/localhost, and client certificates with or without
// SANs. Each call makes a fresh directory.

import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export interface CertSet {
  dir: string;
  caCert: string;
  caKey: string;
  serverCert: string;
  serverKey: string;
  /** Makes a client certificate signed by the CA (or self-signed with selfSigned). */
  client(name: string, subject: string, san?: string, selfSigned?: boolean): { cert: string; key: string };
  /** The PEM text of a file. */
  pem(path: string): string;
}

function ossl(args: string[], cwd: string): void {
  execFileSync("openssl", args, { cwd, stdio: ["ignore", "ignore", "pipe"] });
}

export function makeCerts(): CertSet {
  const dir = mkdtempSync(join(tmpdir(), "tsnats-certs-"));
  const caKey = join(dir, "ca-key.pem");
  const caCert = join(dir, "ca.pem");
  ossl(["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", caKey, "-out", caCert, "-days", "2", "-subj", "/CN=tsnats test CA"], dir);
  const sign = (name: string, subject: string, san: string | undefined, selfSigned: boolean): { cert: string; key: string } => {
    const key = join(dir, `${name}-key.pem`);
    const cert = join(dir, `${name}.pem`);
    const csr = join(dir, `${name}.csr`);
    ossl(["req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", key, "-out", csr, "-subj", subject], dir);
    const ext = join(dir, `${name}.ext`);
    writeFileSync(ext, san !== undefined ? `subjectAltName=${san}\n` : "basicConstraints=CA:FALSE\n");
    if (selfSigned) ossl(["x509", "-req", "-in", csr, "-signkey", key, "-out", cert, "-days", "2", "-extfile", ext], dir);
    else ossl(["x509", "-req", "-in", csr, "-CA", caCert, "-CAkey", caKey, "-CAcreateserial", "-out", cert, "-days", "2", "-extfile", ext], dir);
    return { cert, key };
  };
  const server = sign("server", "/CN=localhost", "DNS:localhost,IP:127.0.0.1", false);
  return {
    dir,
    caCert,
    caKey,
    serverCert: server.cert,
    serverKey: server.key,
    client: (name, subject, san, selfSigned = false) => sign(name, subject, san, selfSigned),
    pem: (path) => readFileSync(path, "utf8"),
  };
}
