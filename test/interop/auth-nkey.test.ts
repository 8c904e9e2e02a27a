// nkey auth and the limits before auth, the same raw conversations against nats-server and
// tsnats started with the same config file, compared byte for byte after normalising what
// must differ (ids, versions, ports, the nonce's value). Skipped when nats-server is absent.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createUser } from "@nats-io/nkeys";
import { RawClient } from "../helpers/core-raw.js";
import { findNatsServer, startNatsServerChild, startTsnatsChild, type ChildServer } from "../helpers/core-child.js";

const alice = createUser();
const stranger = createUser();
const PK = alice.getPublicKey();

interface Script {
  name: string;
  /** Sent right after INFO; gets the nonce that INFO carried ("" when none). */
  send: (nonce: string) => string;
  end: "pong" | "close";
  /** Run against the max_connections: 1 pair, with one connection already held. */
  maxConn?: boolean;
}

const C = (o: Record<string, unknown>): string => `CONNECT ${JSON.stringify({ verbose: false, pedantic: false, ...o })}\r\n`;
const sig = (nonce: string, enc: "base64url" | "base64" = "base64url", kp = alice): string => Buffer.from(kp.sign(Buffer.from(nonce, "latin1"))).toString(enc);

const scripts: Script[] = [
  { name: "nkey: right signature, then pub/sub", send: (n) => C({ nkey: PK, sig: sig(n) }) + "SUB a 1\r\nPUB a 2\r\nhi\r\nPING\r\n", end: "pong" },
  { name: "nkey: signature in standard base64", send: (n) => C({ nkey: PK, sig: sig(n, "base64") }) + "PING\r\n", end: "pong" },
  { name: "nkey: permissions of the nkey user", send: (n) => C({ nkey: PK, sig: sig(n) }) + "SUB other 1\r\nPUB other 1\r\nx\r\nSUB nk.x 2\r\nPING\r\n", end: "pong" },
  { name: "nkey: signature missing", send: () => C({ nkey: PK }) + "PING\r\n", end: "close" },
  { name: "nkey: bad signature", send: () => C({ nkey: PK, sig: "AAAA" }) + "PING\r\n", end: "close" },
  { name: "nkey: signed by another key", send: (n) => C({ nkey: PK, sig: sig(n, "base64url", stranger) }) + "PING\r\n", end: "close" },
  { name: "nkey: unknown nkey", send: (n) => C({ nkey: stranger.getPublicKey(), sig: sig(n, "base64url", stranger) }) + "PING\r\n", end: "close" },
  { name: "nkey: unknown nkey beside a right password", send: () => C({ user: "u", pass: "p", nkey: stranger.getPublicKey(), sig: "AAAA" }) + "PING\r\n", end: "close" },
  { name: "password user beside nkey users", send: () => C({ user: "u", pass: "p" }) + "PING\r\n", end: "pong" },
  { name: "the nkey as a user name with no password", send: () => C({ user: PK, pass: "" }) + "PING\r\n", end: "close" },
  { name: "before CONNECT: PUB of 1 MB, no payload", send: () => "PUB x 1048576\r\n", end: "close" },
  { name: "before CONNECT: PING", send: () => "PING\r\n", end: "close" },
  { name: "before CONNECT: SUB", send: () => "SUB x 1\r\n", end: "close" },
  { name: "before CONNECT: CONNECT beyond max_control_line", send: () => C({ name: "n".repeat(600) }), end: "close" },
  { name: "max_connections: INFO, then the -ERR", send: () => "", end: "close", maxConn: true },
];

const VOLATILE = new Set(["server_id", "server_name", "version", "go", "host", "port", "client_id", "client_ip", "git_commit", "nonce", "xkey"]);

function normalise(text: string): string {
  return text.replace(/INFO (\{[^\r\n]*\}) ?\r\n/g, (_m, json: string) => {
    const o = JSON.parse(json) as Record<string, unknown>;
    if (Array.isArray(o["connect_urls"]) && o["connect_urls"].length === 0) delete o["connect_urls"];
    delete o["git_commit"];
    const n: Record<string, unknown> = {};
    for (const k of Object.keys(o).sort()) n[k] = VOLATILE.has(k) ? "<" + k + ">" : o[k];
    return `INFO ${JSON.stringify(n)}\r\n`;
  });
}

async function converse(port: number, s: Script): Promise<string> {
  const c = await RawClient.connect(port);
  try {
    const info = await c.waitForText("\r\n");
    const nonce = (JSON.parse(/^INFO (\{.*\})/.exec(info)![1]!) as { nonce?: string }).nonce ?? "";
    const send = s.send(nonce);
    if (send !== "") c.write(send);
    if (s.end === "close") await c.waitClosed();
    else await c.waitForCount("PONG\r\n", send.split("PING\r\n").length - 1);
    return normalise(c.text);
  } finally {
    c.close();
  }
}

const natsBin = findNatsServer();
const servers: { nats: ChildServer | null; ts: ChildServer | null; natsMax: ChildServer | null; tsMax: ChildServer | null } = {
  nats: null,
  ts: null,
  natsMax: null,
  tsMax: null,
};
const held: RawClient[] = [];
let dir = "";

before(async () => {
  if (!natsBin) return;
  dir = mkdtempSync(join(tmpdir(), "tsnats-nkey-interop-"));
  const conf = join(dir, "auth.conf");
  writeFileSync(
    conf,
    `max_control_line: 512
authorization {
  users: [
    { user: u, password: p }
    { nkey: ${PK}, permissions: { publish: "nk.>", subscribe: "nk.>" } }
  ]
}
`,
  );
  const maxConf = join(dir, "max.conf");
  writeFileSync(maxConf, "max_connections: 1\n");
  const base = ["-a", "127.0.0.1", "-p", "-1"];
  [servers.nats, servers.ts, servers.natsMax, servers.tsMax] = await Promise.all([
    startNatsServerChild([...base, "-c", conf]),
    startTsnatsChild([...base, "-c", conf]),
    startNatsServerChild([...base, "-c", maxConf]),
    startTsnatsChild([...base, "-c", maxConf]),
  ]);
  for (const s of [servers.natsMax!, servers.tsMax!]) {
    const c = await RawClient.connect(s.port);
    await c.handshake();
    held.push(c);
  }
});

after(async () => {
  for (const c of held) c.close();
  await Promise.all(Object.values(servers).map((s) => s?.stop()));
  if (dir !== "") rmSync(dir, { recursive: true, force: true });
});

for (const s of scripts) {
  void test(`interop: ${s.name}`, { skip: natsBin ? false : "nats-server not on PATH" }, async () => {
    const ref = s.maxConn ? servers.natsMax! : servers.nats!;
    const ours = s.maxConn ? servers.tsMax! : servers.ts!;
    const [want, got] = await Promise.all([converse(ref.port, s), converse(ours.port, s)]);
    assert.equal(got, want);
  });
}
