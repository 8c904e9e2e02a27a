// TLS on the client port with the official client: TLS required (upgrade after INFO),
// allow_non_tls, handshake_first (with and without a fallback), client certificates (verify),
// verify_and_map to users and their permissions, pinned certificates, /connz and /varz, and
// a plaintext client that never gets a PONG. Certificates are made by the test (openssl).

import { test } from "node:test";
import assert from "node:assert/strict";
import { createHash, X509Certificate } from "node:crypto";
import { readFileSync } from "node:fs";
import https from "node:https";
import net from "node:net";
import { connect, type ConnectionOptions } from "@nats-io/transport-node";
import { startServer, type RunningServer, type OptionsPatch } from "../../src/index.js";
import { defaultTlsOptions, type TlsOptions } from "../../src/server/options.js";
import { makeCerts } from "../helpers/certs.js";
import { Collector } from "../helpers/core-wait.js";
import { until } from "../helpers/until.js";

const certs = makeCerts();
const alice = certs.client("alice", "/CN=alice/O=Acme", "email:alice@example.com");
const bob = certs.client("bob", "/C=US/O=Acme/CN=bob");
const carol = certs.client("carol", "/CN=carol/O=Acme", "DNS:carol.example.com");
const mallory = certs.client("mallory", "/CN=mallory", undefined, true); // not signed by the CA

function tlsOpts(extra: Partial<TlsOptions> = {}): TlsOptions {
  return { ...defaultTlsOptions(), certFile: certs.serverCert, keyFile: certs.serverKey, caFile: certs.caCert, ...extra };
}

async function withServer(opts: OptionsPatch, fn: (s: RunningServer) => Promise<void>): Promise<void> {
  const s = await startServer({ host: "127.0.0.1", port: 0, ...opts });
  try {
    await fn(s);
  } finally {
    await s.close();
  }
}

async function roundTrip(url: string, opts: Partial<ConnectionOptions>, subject = "tls.ok"): Promise<void> {
  const nc = await connect({ servers: url, maxReconnectAttempts: 0, reconnect: false, ...opts });
  try {
    const col = new Collector(nc.subscribe(subject));
    await nc.flush();
    nc.publish(subject, "x");
    await col.waitCount(1);
  } finally {
    await nc.close();
  }
}

async function refused(url: string, opts: Partial<ConnectionOptions>, re?: RegExp): Promise<void> {
  await assert.rejects(
    () => connect({ servers: url, maxReconnectAttempts: 0, reconnect: false, timeout: 5000, ...opts }),
    (err: unknown) => {
      if (re) assert.match(String(err), re);
      return true;
    },
  );
}

/** A raw socket: reads the INFO line, then sends `send` and collects until close or bound. */
async function raw(port: number, send: string, waitMs = 3000): Promise<{ info: Record<string, unknown>; rest: string }> {
  const s = net.connect(port, "127.0.0.1");
  let buf = "";
  let sent = false;
  let info: Record<string, unknown> = {};
  await new Promise<void>((resolve) => {
    const t = setTimeout(() => {
      s.destroy();
      resolve();
    }, waitMs);
    s.on("data", (d) => {
      buf += d.toString("latin1");
      const nl = buf.indexOf("\r\n");
      if (!sent && nl > 0) {
        info = JSON.parse(buf.slice(5, nl)) as Record<string, unknown>;
        buf = buf.slice(nl + 2);
        sent = true;
        s.write(send);
      }
    });
    s.on("close", () => {
      clearTimeout(t);
      resolve();
    });
    s.on("error", () => undefined);
  });
  return { info, rest: buf };
}

void test("tls required: the official client upgrades after INFO; a plaintext client gets no PONG", async () => {
  await withServer({ tls: tlsOpts() }, async (s) => {
    await roundTrip(s.url, { tls: { caFile: certs.caCert } });
    const r = await raw(s.port, "CONNECT {}\r\nPING\r\n");
    assert.equal(r.info["tls_required"], true);
    assert.equal(r.info["tls_available"], undefined);
    assert.ok(!r.rest.includes("PONG"), `a plaintext client got ${JSON.stringify(r.rest)}`);
    // A client that does not trust the server's CA does not connect.
    await refused(s.url, { tls: {} });
  });
});

/** Bounded wait until the server holds no client connection. */
async function noClients(s: RunningServer, what: string): Promise<void> {
  const end = Date.now() + 5000;
  while (s.server.clients.size > 0 && Date.now() < end) await new Promise((r) => setTimeout(r, 10));
  assert.equal(s.server.clients.size, 0, `${what}: the server let the connection go`);
}

void test("a client that closes is let go at once, over TLS and in plaintext beside it (the listener allows half-open sockets)", async () => {
  await withServer({ tls: tlsOpts(), allowNonTls: true }, async (s) => {
    for (const [what, tlsOpt] of [["TLS", { caFile: certs.caCert }], ["plaintext", null]] as const) {
      const nc = await connect({ servers: s.url, maxReconnectAttempts: 0, reconnect: false, tls: tlsOpt });
      await nc.flush();
      assert.equal(s.server.clients.size, 1);
      await nc.close();
      await noClients(s, what);
    }
  });
});

void test("allow_non_tls: plaintext and TLS clients both connect; INFO says tls_available", async () => {
  await withServer({ tls: tlsOpts(), allowNonTls: true }, async (s) => {
    const r = await raw(s.port, "CONNECT {\"verbose\":false}\r\nPING\r\n");
    assert.equal(r.info["tls_available"], true);
    assert.equal(r.info["tls_required"], undefined);
    assert.ok(r.rest.includes("PONG"));
    await roundTrip(s.url, { tls: null }); // the client's way of saying "no TLS"
    await roundTrip(s.url, { tls: { caFile: certs.caCert } });
  });
});

void test("handshake_first: TLS before INFO; with a fallback delay, clients that wait for INFO still connect", async () => {
  await withServer({ tls: tlsOpts({ handshakeFirst: true }) }, async (s) => {
    await roundTrip(s.url, { tls: { caFile: certs.caCert, handshakeFirst: true } });
    // Without a fallback the server sends nothing in plaintext.
    const sock = net.connect(s.port, "127.0.0.1");
    let got = "";
    sock.on("data", (d) => (got += d.toString("latin1")));
    sock.on("error", () => undefined);
    sock.write("CONNECT {}\r\nPING\r\n");
    await new Promise<void>((resolve) => sock.on("close", () => resolve()));
    assert.ok(!got.includes("INFO") && !got.includes("PONG"), `got ${JSON.stringify(got)}`);
  });
  await withServer({ tls: tlsOpts({ handshakeFirst: true, handshakeFirstFallbackMs: 50 }) }, async (s) => {
    await roundTrip(s.url, { tls: { caFile: certs.caCert, handshakeFirst: true } });
    await roundTrip(s.url, { tls: { caFile: certs.caCert } });
  });
});

void test("verify: a client certificate from the CA is required", async () => {
  await withServer({ tls: tlsOpts({ verify: true }) }, async (s) => {
    await roundTrip(s.url, { tls: { caFile: certs.caCert, certFile: alice.cert, keyFile: alice.key } });
    await refused(s.url, { tls: { caFile: certs.caCert } });
    await refused(s.url, { tls: { caFile: certs.caCert, certFile: mallory.cert, keyFile: mallory.key } });
    const r = await raw(s.port, "");
    assert.equal(r.info["tls_verify"], true);
  });
});

void test("verify_and_map: email SAN, DNS SAN and subject DN name users with their permissions; an unmapped certificate is refused", async () => {
  const users = [
    { user: "alice@example.com", password: "", permissions: { publish: { allow: ["alice.>"], deny: [] }, subscribe: { allow: ["alice.>"], deny: [] }, response: null } },
    { user: "CN=bob,O=Acme,C=US", password: "", permissions: null },
    { user: "carol.example.com", password: "", permissions: null },
  ];
  await withServer({ tls: tlsOpts({ verifyAndMap: true }), authorization: { users } }, async (s) => {
    const cert = (c: { cert: string; key: string }): Partial<ConnectionOptions> => ({ tls: { caFile: certs.caCert, certFile: c.cert, keyFile: c.key } });
    await roundTrip(s.url, cert(alice), "alice.x");
    await roundTrip(s.url, cert(bob));
    await roundTrip(s.url, cert(carol));
    // alice's permissions apply.
    const nc = await connect({ servers: s.url, ...cert(alice), maxReconnectAttempts: 0 });
    const errs: string[] = [];
    void (async () => {
      for await (const st of nc.status()) if (st.type === "error") errs.push(String(st.error));
    })();
    nc.publish("other.subject", "x");
    await nc.flush().catch(() => undefined);
    await until("a permissions error", () => errs.length > 0, 5000);
    assert.ok(errs.some((e) => /Permissions Violation for Publish to "other.subject"/.test(e)), `errors: ${errs.join(";")}`);
    await nc.close();
    // A certificate from the CA that maps to no user.
    const dave = certs.client("dave", "/CN=dave");
    await refused(s.url, cert(dave), /Authorization/i);
  });
});

void test("pinned_certs: only the pinned client certificate is let in", async () => {
  const spki = new X509Certificate(readFileSync(alice.cert)).publicKey.export({ type: "spki", format: "der" });
  const pin = createHash("sha256").update(spki).digest("hex");
  await withServer({ tls: tlsOpts({ verify: true, pinnedCerts: [pin] }) }, async (s) => {
    await roundTrip(s.url, { tls: { caFile: certs.caCert, certFile: alice.cert, keyFile: alice.key } });
    await refused(s.url, { tls: { caFile: certs.caCert, certFile: bob.cert, keyFile: bob.key } });
  });
});

void test("/connz shows tls_version and tls_cipher_suite; https monitoring serves /varz with the TLS fields", async () => {
  await withServer({ tls: tlsOpts(), httpsPort: -1, httpHost: "127.0.0.1" }, async (s) => {
    const nc = await connect({ servers: s.url, tls: { caFile: certs.caCert }, name: "tls-conn" });
    try {
      const port = s.server.monitor!.port;
      const get = (path: string): Promise<Record<string, unknown>> =>
        new Promise((resolve, reject) => {
          https
            .get({ host: "127.0.0.1", port, path, ca: readFileSync(certs.caCert), servername: "localhost" }, (res) => {
              let body = "";
              res.on("data", (d: Buffer) => (body += d.toString()));
              res.on("end", () => resolve(JSON.parse(body) as Record<string, unknown>));
            })
            .on("error", reject);
        });
      const varz = await get("/varz");
      assert.equal(varz["tls_required"], true);
      assert.equal(varz["https_port"], port);
      assert.equal(varz["tls_timeout"], 2);
      assert.ok(typeof varz["tls_cert_not_after"] === "string");
      const connz = await get("/connz");
      const conns = connz["connections"] as Array<Record<string, unknown>>;
      const mine = conns.find((c) => c["name"] === "tls-conn");
      assert.ok(mine);
      assert.match(String(mine["tls_version"]), /^1\.[23]$/);
      assert.match(String(mine["tls_cipher_suite"]), /^TLS_/);
      // Plain http on the https port gets nothing useful.
      await assert.rejects(() => fetch(`http://127.0.0.1:${port}/varz`));
    } finally {
      await nc.close();
    }
  });
});

void test("a TLS block whose files do not load stops the server at start", async () => {
  await assert.rejects(() => startServer({ host: "127.0.0.1", port: 0, tls: tlsOpts({ certFile: "/nonexistent/cert.pem" }) }), /certificate/);
  await assert.rejects(() => startServer({ host: "127.0.0.1", port: 0, tls: tlsOpts({ keyFile: alice.key }) }), /certificate\/key|key/i);
  await assert.rejects(() => startServer({ host: "127.0.0.1", port: 0, httpsPort: -1 }), /TLS cert and key required for HTTPS/);
});

void test("connection_rate_limit: TLS connections over the per-second limit get nats-server's throttling error in plaintext", async () => {
  await withServer({ tls: tlsOpts({ rateLimit: 2 }) }, async (s) => {
    // Raw sockets opened together: the first two get INFO only, the rest the -ERR (within the
    // same second; the window is the server's clock, so allow a window boundary: at most 4 pass).
    const results = await Promise.all(Array.from({ length: 8 }, () => raw(s.port, "", 1500)));
    const throttled = results.filter((r) => r.rest.includes("Connection throttling is active. Please try again later."));
    assert.ok(throttled.length >= 4, `throttled: ${throttled.length} of 8`);
    assert.ok(throttled.every((r) => r.info["tls_required"] === true));
  });
});
