// Permissions, reserved subjects and max_subs: the same raw-protocol conversations against
// nats-server 2.9.10 and tsnats, both started with one config file, compared after the
// INFO lines are dropped. Skipped when nats-server is not on PATH.
//
// Deliberate differences, tested in test/e2e/permissions.test.ts instead: "$NRG." publishes
// are refused since nats-server 2.11; queue subscriptions are filtered by a deny since 2.10+
// (2.9.10 does not); the INFO with connect_info after the first PONG is 2.12 (only sent to
// protocol 1 clients; these scripts use protocol 0).

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { RawClient } from "../helpers/core-raw.js";
import { findNatsServer, startNatsServerChild, startTsnatsChild, type ChildServer } from "../helpers/core-child.js";

const CONFIG = `
listen: "127.0.0.1:-1"
max_subs: 4
authorization {
  default_permissions: { publish: "def.>", subscribe: "def.>" }
  users: [
    { user: a, password: a, permissions: {
        publish: { allow: ["foo.*", "req"], deny: "foo.bad" }
        subscribe: { allow: ["foo.>", "_INBOX.>"], deny: ["foo.secret"] } } }
    { user: q, password: q, permissions: { subscribe: ["foo v1", "bar"] } }
    { user: r, password: r, permissions: { publish: "svc", subscribe: "svc", allow_responses: true } }
    { user: m, password: m, permissions: { publish: "svc", subscribe: "svc", allow_responses: { max: 2 } } }
    { user: d, password: d }
    { user: free, password: free, permissions: { publish: ">", subscribe: ">" } }
  ]
}
`;

// "free" may do anything (default_permissions would apply without a block): reload narrows it.
const RELOADED = CONFIG.replace('permissions: { publish: ">", subscribe: ">" }', 'permissions: { publish: "ok.>", subscribe: "ok.>" }');

const C = (user: string, o: Record<string, unknown> = {}): string =>
  `CONNECT ${JSON.stringify({ verbose: false, pedantic: false, user, pass: user, ...o })}\r\n`;

interface Script {
  name: string;
  send: string;
}

const scripts: Script[] = [
  {
    name: "publish allow/deny, subscribe allow/deny, deny filters a wider wildcard",
    send:
      C("a") +
      "SUB foo.> 1\r\nPUB foo.ok 1\r\na\r\nPUB foo.bad 1\r\nb\r\nPUB bar 1\r\nc\r\nPUB foo.secret 1\r\nd\r\nPUB foo.x.y 1\r\ne\r\n" +
      "SUB bar 2\r\nSUB foo.secret 3\r\nSUB foo.* 4\r\nPUB foo.secret 1\r\nf\r\nPUB foo.open 1\r\ng\r\nPING\r\n",
  },
  { name: "verbose: a refused publish gets -ERR and no +OK", send: C("a", { verbose: true }) + "PUB bar 1\r\nx\r\nPUB foo.a 1\r\ny\r\nSUB nope 1\r\nPING\r\n" },
  { name: "queue group permissions", send: C("q") + "SUB foo v1 1\r\nSUB foo v2 2\r\nSUB foo 3\r\nSUB bar any 4\r\nSUB baz 5\r\nPING\r\n" },
  {
    name: "allow_responses: once per received reply by default",
    send: C("r") + "SUB svc 1\r\nPUB svc rep.1 1\r\nx\r\nPUB rep.1 1\r\ny\r\nPUB rep.1 1\r\nz\r\nPUB rep.2 1\r\nw\r\nPUB other 1\r\nv\r\nPING\r\n",
  },
  {
    name: "allow_responses: max 2",
    send: C("m") + "SUB svc 1\r\nSUB rep.* 2\r\nSUB rep.1 3\r\nPUB svc rep.1 1\r\nx\r\nPUB rep.1 1\r\ny\r\nPUB rep.1 1\r\nz\r\nPUB rep.1 1\r\nw\r\nPING\r\n",
  },
  { name: "default_permissions apply to users without their own", send: C("d") + "SUB def.x 1\r\nSUB other 2\r\nPUB def.x 1\r\na\r\nPUB other 1\r\nb\r\nPING\r\n" },
  {
    name: "reserved subjects and replies, _sys_ queue",
    send: C("free") + "SUB > 1\r\nPUB _GR_.abc.x 1\r\na\r\nPUB foo _R_.abc 1\r\nb\r\nPUB foo $JS.ACK.s.c 1\r\nc\r\nPUB foo _GR_.x.y 1\r\nd\r\nPUB foo _INBOX.ok 1\r\ne\r\nSUB q _sys_ 2\r\nPING\r\n",
  },
  { name: "max_subs: -ERR, the sub is dropped, connection stays", send: C("free") + "SUB a 1\r\nSUB b 2\r\nSUB c 3\r\nSUB d 4\r\nSUB e 5\r\nSUB a 1\r\nUNSUB 4\r\nSUB e 5\r\nPUB e 1\r\nx\r\nPING\r\n" },
];

function strip(text: string): string {
  return text.replace(/INFO \{[^\r\n]*\} ?\r\n/g, "");
}

async function converse(port: number, send: string): Promise<string> {
  const c = await RawClient.connect(port);
  try {
    await c.waitForText("\r\n");
    c.write(send);
    await c.waitForCount("PONG\r\n", send.split("PING\r\n").length - 1);
    assert.equal(c.closed, false);
    return strip(c.text);
  } finally {
    c.close();
  }
}

const natsBin = findNatsServer();
let dir = "";
let natsConf = "";
let tsConf = "";
const servers: { nats: ChildServer | null; ts: ChildServer | null } = { nats: null, ts: null };

before(async () => {
  if (!natsBin) return;
  dir = mkdtempSync(join(tmpdir(), "tsnats-perm-interop-"));
  // One file per server: the reload test rewrites them.
  natsConf = join(dir, "nats.conf");
  tsConf = join(dir, "ts.conf");
  writeFileSync(natsConf, CONFIG);
  writeFileSync(tsConf, CONFIG);
  [servers.nats, servers.ts] = await Promise.all([startNatsServerChild(["-c", natsConf]), startTsnatsChild(["-c", tsConf])]);
});

after(async () => {
  await Promise.all(Object.values(servers).map((s) => s?.stop()));
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const skip = natsBin ? false : "nats-server not on PATH";

for (const s of scripts) {
  void test(`interop permissions: ${s.name}`, { skip }, async () => {
    const [want, got] = await Promise.all([converse(servers.nats!.port, s.send), converse(servers.ts!.port, s.send)]);
    assert.equal(got, want);
    assert.match(want, /-ERR|MSG/); // the conversation did exercise something
  });
}

// Last: it changes the configuration of both servers.
void test("interop permissions: reload removes subscriptions the new permissions refuse, then applies them", { skip }, async () => {
  async function run(srv: ChildServer, conf: string): Promise<string> {
    const c = await RawClient.connect(srv.port);
    try {
      await c.waitForText("\r\n");
      c.write(C("free") + "SUB ok.1 1\r\nSUB no.1 2\r\nPING\r\n");
      await c.waitForText("PONG\r\n");
      writeFileSync(conf, RELOADED);
      srv.proc.kill("SIGHUP");
      await c.waitForText('(sid "2")');
      c.write("PUB no.1 1\r\na\r\nPUB ok.1 1\r\nb\r\nSUB no.2 3\r\nPING\r\n");
      await c.waitForCount("PONG\r\n", 2);
      assert.equal(c.closed, false);
      return strip(c.text);
    } finally {
      c.close();
    }
  }
  const [want, got] = await Promise.all([run(servers.nats!, natsConf), run(servers.ts!, tsConf)]);
  assert.equal(got, want);
  assert.match(want, /Permissions Violation for Subscription to "no.1" \(sid "2"\)/);
});
