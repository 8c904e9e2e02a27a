// The same scripted raw-protocol conversations against nats-server and tsnats, compared
// byte for byte after normalising what must differ (ids, versions, ports, client ids/ips).
// Skipped when nats-server is not on PATH.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { RawClient } from "../helpers/core-raw.js";
import { findNatsServer, startNatsServerChild, startTsnatsChild, type ChildServer } from "../helpers/core-child.js";

interface Script {
  name: string;
  /** Sent right after the server's INFO arrives. */
  send: string;
  /** "pong": done when every PING sent is answered; "close": done when the server closes. */
  end: "pong" | "close";
  /** PONGs to wait for when the payload itself holds the text "PING". */
  pings?: number;
  /** Run against the servers started with user/password auth. */
  auth?: boolean;
}

const C = (o: Record<string, unknown> = {}): string => `CONNECT ${JSON.stringify({ verbose: false, pedantic: false, ...o })}\r\n`;
const HDR1 = "NATS/1.0\r\n\r\n";
const HDR2 = "NATS/1.0\r\nA: b\r\nA: c\r\n\r\n";
const len = (s: string): number => Buffer.byteLength(s, "latin1");

const scripts: Script[] = [
  { name: "connect + ping", send: C() + "PING\r\n", end: "pong" },
  { name: "ping before connect", send: "PING\r\n" + C() + "PING\r\n", end: "pong" },
  { name: "verbose +OK", send: C({ verbose: true }) + "SUB foo 1\r\nPUB foo 2\r\nhi\r\nUNSUB 1\r\nPING\r\n", end: "pong" },
  { name: "defaults: verbose and pedantic on", send: "CONNECT {}\r\nSUB foo.* 1\r\nPUB foo.x 1\r\na\r\nPUB foo.* 1\r\nb\r\nPING\r\n", end: "pong" },
  {
    name: "sub + pub + msg: literal, wildcards, reply, empty payload",
    send: C() + "SUB foo.bar 1\r\nSUB foo.* 2\r\nSUB foo.> 3\r\nSUB > 4\r\nPUB foo.bar reply.x 5\r\nhello\r\nPUB foo.bar.baz 0\r\n\r\nPUB other 3\r\nabc\r\nPING\r\n",
    end: "pong",
  },
  { name: "case-insensitive verbs, tabs, LF-only", send: "connect {\"verbose\":false,\"pedantic\":false}\r\nsub\tfoo\t\t1\r\npUb foo 1\nx\r\nping\n", end: "pong" },
  { name: "payload with CRLF inside", send: C() + "SUB p 1\r\nPUB p 8\r\nPING\r\nab\r\nPING\r\n", end: "pong", pings: 1 },
  {
    name: "hpub / hmsg",
    send: C({ headers: true }) + `SUB h 1\r\nHPUB h ${len(HDR1)} ${len(HDR1) + 2}\r\n${HDR1}hi\r\nHPUB h r.1 ${len(HDR2)} ${len(HDR2)}\r\n${HDR2}\r\nPUB h 1\r\nx\r\nPING\r\n`,
    end: "pong",
  },
  { name: "queue group plus plain sub", send: C() + "SUB q.x 3\r\nSUB q.x g1 1\r\nSUB q.* g2 2\r\nPUB q.x 1\r\na\r\nPING\r\n", end: "pong" },
  { name: "unsub with max", send: C() + "SUB u 1\r\nUNSUB 1 2\r\nPUB u 1\r\na\r\nPUB u 1\r\nb\r\nPUB u 1\r\nc\r\nPING\r\n", end: "pong" },
  { name: "unsub max already reached", send: C() + "SUB u 1\r\nPUB u 1\r\na\r\nPUB u 1\r\nb\r\nUNSUB 1 1\r\nPUB u 1\r\nc\r\nUNSUB 9\r\nPING\r\n", end: "pong" },
  { name: "repeated sid is ignored", send: C() + "SUB foo 1\r\nSUB bar 1\r\nPUB bar 1\r\nx\r\nPUB foo 1\r\ny\r\nPING\r\n", end: "pong" },
  { name: "publish to a subject with an empty token reaches nobody", send: C() + "SUB > 1\r\nPUB foo. 1\r\nx\r\nPUB .foo 1\r\ny\r\nPUB ok 1\r\nz\r\nPING\r\n", end: "pong" },
  { name: "no responders (503)", send: C({ headers: true, no_responders: true }) + "SUB inbox.* 1\r\nPUB nobody inbox.1 0\r\n\r\nPING\r\n", end: "pong" },
  { name: "echo off", send: C({ echo: false }) + "SUB e 1\r\nPUB e 1\r\nx\r\nPING\r\n", end: "pong" },
  // ---- errors ----
  { name: "invalid subject: -ERR, connection stays", send: C() + "SUB a..b 1\r\nSUB foo. 2\r\nSUB a.>.b 3\r\nPING\r\n", end: "pong" },
  { name: "unknown op", send: C() + "FOO bar\r\nPING\r\n", end: "close" },
  { name: "garbage before connect", send: "\x00\x01\x02garbage\r\n", end: "close" },
  { name: "maximum payload", send: C() + "PUB foo 2000000\r\n", end: "close" },
  { name: "maximum control line", send: C() + "SUB " + "x".repeat(5000) + " 1\r\n", end: "close" },
  { name: "payload not followed by CRLF", send: C() + "PUB foo 2\r\nabc\r\nPING\r\n", end: "close" },
  { name: "PUB with too many arguments", send: C() + "PUB a b c 1\r\nx\r\n", end: "close" },
  { name: "PUB with a bad size", send: C() + "PUB a x\r\n", end: "close" },
  { name: "HPUB without headers negotiated", send: C() + `HPUB h ${len(HDR1)} ${len(HDR1)}\r\n${HDR1}\r\n`, end: "close" },
  { name: "no_responders without headers", send: C({ no_responders: true }), end: "close" },
  { name: "unsupported protocol version", send: C({ protocol: 2 }), end: "close" },
  { name: "bad CONNECT json", send: "CONNECT {nope\r\n", end: "close" },
  { name: "auth: wrong password", auth: true, send: C({ user: "u", pass: "x" }) + "PING\r\n", end: "close" },
  { name: "auth: op before CONNECT", auth: true, send: "PING\r\n", end: "close" },
  { name: "auth: right password", auth: true, send: C({ user: "u", pass: "p" }) + "SUB a 1\r\nPUB a 1\r\nx\r\nPING\r\n", end: "pong" },
];

// Values that legitimately differ per server or connection.
const VOLATILE = new Set(["server_id", "server_name", "version", "go", "host", "port", "client_id", "client_ip", "git_commit", "nonce", "xkey"]);

/** INFO lines become a stable JSON of the key set, volatile values replaced. */
function normalise(text: string): string {
  let out = text.replace(/INFO (\{[^\r\n]*\}) ?\r\n/g, (_m, json: string) => {
    const o = JSON.parse(json) as Record<string, unknown>;
    // nats-server omits connect_urls when it has none; tsnats sends []. Same meaning.
    if (Array.isArray(o["connect_urls"]) && o["connect_urls"].length === 0) delete o["connect_urls"];
    // git_commit is a Go build stamp with nothing to stamp in tsnats.
    delete o["git_commit"];
    const n: Record<string, unknown> = {};
    for (const k of Object.keys(o).sort()) n[k] = VOLATILE.has(k) ? "<" + k + ">" : o[k];
    return `INFO ${JSON.stringify(n)}\r\n`;
  });
  // Deliberate difference: tsnats follows 2.12 and adds Nats-Subject to the 503 status
  // message; nats-server before 2.12 sends the bare status line. Drop it (and fix sizes).
  out = out.replace(/HMSG (\S+) (\S+) \d+ \d+\r\nNATS\/1\.0 503\r\nNats-Subject: [^\r\n]*\r\n\r\n/g, (_m, subj: string, sid: string) => {
    return `HMSG ${subj} ${sid} 16 16\r\nNATS/1.0 503\r\n\r\n`;
  });
  return out;
}

async function converse(port: number, s: Script): Promise<string> {
  const c = await RawClient.connect(port);
  try {
    await c.waitForText("\r\n");
    c.write(s.send);
    if (s.end === "close") {
      await c.waitClosed();
    } else {
      const pings = s.pings ?? s.send.split(/ping\r?\n/i).length - 1;
      await c.waitForCount("PONG\r\n", pings);
    }
    return normalise(c.text);
  } finally {
    c.close();
  }
}

const natsBin = findNatsServer();
const servers: { nats: ChildServer | null; ts: ChildServer | null; natsAuth: ChildServer | null; tsAuth: ChildServer | null } = {
  nats: null,
  ts: null,
  natsAuth: null,
  tsAuth: null,
};

before(async () => {
  if (!natsBin) return;
  const base = ["-a", "127.0.0.1", "-p", "-1"];
  const auth = [...base, "--user", "u", "--pass", "p"];
  [servers.nats, servers.ts, servers.natsAuth, servers.tsAuth] = await Promise.all([
    startNatsServerChild(base),
    startTsnatsChild(base),
    startNatsServerChild(auth),
    startTsnatsChild(auth),
  ]);
});

after(async () => {
  await Promise.all(Object.values(servers).map((s) => s?.stop()));
});

for (const s of scripts) {
  void test(`interop: ${s.name}`, { skip: natsBin ? false : "nats-server not on PATH" }, async () => {
    const ref = s.auth ? servers.natsAuth! : servers.nats!;
    const ours = s.auth ? servers.tsAuth! : servers.ts!;
    const [want, got] = await Promise.all([converse(ref.port, s), converse(ours.port, s)]);
    assert.equal(got, want);
  });
}
