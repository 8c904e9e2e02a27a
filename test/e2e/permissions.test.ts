// User permissions, reserved subjects, max_subs and the connect_info INFO, seen through the
// official clients (@nats-io/transport-node v3 and `nats` 2.x): the errors they surface, the
// connection staying open, other clients unaffected, and a reload narrowing permissions.

import { test } from "node:test";
import assert from "node:assert/strict";
import { connect, errors, type NatsConnection, type Status } from "@nats-io/transport-node";
import * as nats2 from "nats";
import { startServer, type RunningServer } from "../../src/index.js";
import { mergeOptions, type UserEntry } from "../../src/server/options.js";
import type { Permissions } from "../../src/server/permissions.js";
import { RawClient, waitUntil } from "../helpers/core-raw.js";
import { Collector } from "../helpers/core-wait.js";

const P = (p: Partial<Permissions>): Permissions => ({ publish: null, subscribe: null, response: null, ...p });

const USERS: UserEntry[] = [
  {
    user: "app",
    password: "app",
    permissions: P({
      publish: { allow: ["app.>", "svc", "$JS.API.INFO"], deny: ["app.secret"] },
      subscribe: { allow: ["app.>", "_INBOX.>", "work.* workers"], deny: ["app.secret"] },
    }),
  },
  { user: "svc", password: "svc", permissions: P({ publish: { allow: [], deny: [] }, subscribe: { allow: ["svc"], deny: [] }, response: { maxMsgs: 1, expiresMs: 60_000 } }) },
  { user: "admin", password: "admin", permissions: null },
];

async function withServer(fn: (s: RunningServer) => Promise<void>, maxSubs = 0): Promise<void> {
  const s = await startServer({ host: "127.0.0.1", port: 0, maxSubs, authorization: { users: USERS } });
  try {
    await fn(s);
  } finally {
    await s.close();
  }
}

function watchStatus(nc: NatsConnection): Status[] {
  const seen: Status[] = [];
  void (async () => {
    for await (const s of nc.status()) seen.push(s);
  })();
  return seen;
}

type PermError = InstanceType<typeof errors.PermissionViolationError>;

function permErrors(seen: Status[]): PermError[] {
  const out: PermError[] = [];
  for (const s of seen) if (s.type === "error" && s.error instanceof errors.PermissionViolationError) out.push(s.error);
  return out;
}

const conn = (s: RunningServer, user: string): Promise<NatsConnection> => connect({ servers: s.url, user, pass: user, maxReconnectAttempts: 0 });

void test("publish: a denied subject reaches the status iterator; the connection stays open; others unaffected", async () => {
  await withServer(async (s) => {
    const app = await conn(s, "app");
    const admin = await conn(s, "admin");
    try {
      const seen = watchStatus(app);
      const all = new Collector(admin.subscribe(">"));
      await admin.flush();
      app.publish("other.x", "no");
      app.publish("app.secret", "no");
      app.publish("app.ok", "yes");
      await all.waitCount(1);
      await waitUntil(() => permErrors(seen).length === 2, "two permission errors");
      assert.deepEqual(
        permErrors(seen).map((e) => [e.operation, e.subject, e.message]),
        [
          ["publish", "other.x", 'Permissions Violation for Publish to "other.x"'],
          ["publish", "app.secret", 'Permissions Violation for Publish to "app.secret"'],
        ],
      );
      await app.flush();
      assert.equal(app.isClosed(), false);
      app.publish("app.ok", "again");
      await all.waitCount(2);
      assert.deepEqual(all.msgs.map((m) => m.subject), ["app.ok", "app.ok"]);
      // A request to a denied subject is rejected with the permission error.
      await assert.rejects(
        () => app.request("other.req", "", { timeout: 2000 }),
        (err: unknown) => err instanceof errors.PermissionViolationError || (err instanceof Error && err.cause instanceof errors.PermissionViolationError),
      );
    } finally {
      await app.close();
      await admin.close();
    }
  });
});

void test("subscribe: a denied subscription ends with the permission error; queue form; the deny filters a wider wildcard", async () => {
  await withServer(async (s) => {
    const app = await conn(s, "app");
    const admin = await conn(s, "admin");
    try {
      const denied = app.subscribe("other");
      const done = (async () => {
        for await (const _m of denied) {
          /* nothing arrives */
        }
      })();
      await assert.rejects(done, (err: unknown) => {
        assert.ok(err instanceof errors.PermissionViolationError, String(err));
        assert.equal(err.operation, "subscription");
        assert.equal(err.subject, "other");
        return true;
      });
      const q = app.subscribe("work.x", { queue: "others" });
      await assert.rejects(
        (async () => {
          for await (const _m of q) {
            /* nothing */
          }
        })(),
        (err: unknown) => err instanceof errors.PermissionViolationError && err.queue === "others" && err.message === 'Permissions Violation for Subscription to "work.x" using queue "others"',
      );
      const okq = new Collector(app.subscribe("work.x", { queue: "workers" }));
      const wide = new Collector(app.subscribe("app.>"));
      await app.flush();
      assert.equal(app.isClosed(), false);
      // Same publisher, one connection: app.secret goes out first, so had it been delivered
      // it would be there before app.public.
      admin.publish("app.secret", "hidden");
      admin.publish("app.public", "shown");
      admin.publish("work.x", "job");
      await wide.waitCount(1);
      await okq.waitCount(1);
      await app.flush();
      assert.deepEqual(wide.msgs.map((m) => m.subject), ["app.public"]);
    } finally {
      await app.close();
      await admin.close();
    }
  });
});

void test("allow_responses: a responder may answer a request once, nothing else", async () => {
  await withServer(async (s) => {
    const svc = await conn(s, "svc");
    const app = await conn(s, "app");
    try {
      const seen = watchStatus(svc);
      const sub = svc.subscribe("svc", {
        callback: (_err, m) => {
          m.respond("answer");
          m.respond("second answer"); // max 1: refused
          svc.publish("elsewhere", "x"); // never allowed
        },
      });
      await svc.flush();
      const r = await app.request("svc", "q", { timeout: 2000 });
      assert.equal(r.string(), "answer");
      await waitUntil(() => permErrors(seen).length === 2, "two permission errors");
      assert.match(permErrors(seen)[0]!.message, /^Permissions Violation for Publish to "_INBOX\./);
      assert.equal(permErrors(seen)[1]!.message, 'Permissions Violation for Publish to "elsewhere"');
      assert.equal(svc.isClosed(), false);
      sub.unsubscribe();
    } finally {
      await svc.close();
      await app.close();
    }
  });
});

void test("reserved subjects: $NRG. (nats-server 2.11) and _GR_. publishes, _R_./$JS.ACK. replies, the _sys_ queue", async () => {
  await withServer(async (s) => {
    const c = await RawClient.connect(s.port);
    try {
      await c.handshake({ verbose: false, pedantic: false, user: "admin", pass: "admin" });
      c.clear();
      c.write("SUB > 1\r\nPUB $NRG.AE.x 1\r\na\r\nPUB _GR_.x.y 1\r\nb\r\nPUB foo _R_.x 1\r\nc\r\nPUB foo $JS.ACK.a.b.1 1\r\nd\r\nSUB q _sys_ 2\r\nPUB ok 1\r\ne\r\nPING\r\n");
      await c.waitForText("PONG\r\n");
      assert.equal(
        c.text,
        [
          `-ERR 'Permissions Violation for Publish to "$NRG.AE.x"'`,
          `-ERR 'Permissions Violation for Publish to "_GR_.x.y"'`,
          `-ERR 'Permissions Violation for Publish with Reply of "_R_.x"'`,
          `-ERR 'Permissions Violation for Publish with Reply of "$JS.ACK.a.b.1"'`,
          `-ERR 'Permissions Violation for Subscription to "q" using queue "_sys_"'`,
          "MSG ok 1 1",
          "e",
          "PONG",
          "",
        ].join("\r\n"),
      );
    } finally {
      c.close();
    }
  });
});

void test("max_subs: the client sees 'maximum subscriptions exceeded', the connection stays open", async () => {
  await withServer(async (s) => {
    const nc = await conn(s, "admin");
    try {
      const seen = watchStatus(nc);
      const a = new Collector(nc.subscribe("m.a"));
      nc.subscribe("m.b");
      nc.subscribe("m.c"); // third: refused
      await nc.flush();
      await waitUntil(() => seen.some((x) => x.type === "error"), "an error status");
      const e = seen.find((x) => x.type === "error");
      assert.ok(e && e.type === "error");
      assert.match(e.error.message, /maximum subscriptions exceeded/);
      assert.equal(nc.isClosed(), false);
      nc.publish("m.a", "x");
      await a.waitCount(1);
      // /varz-style options report the limit.
      assert.equal(s.server.opts.maxSubs, 2);
    } finally {
      await nc.close();
    }
  }, 2);
});

void test("nats 2.x: permission errors reach the subscription callback and the status iterator", async () => {
  await withServer(async (s) => {
    const nc = await nats2.connect({ servers: s.url, user: "app", pass: "app", maxReconnectAttempts: 0 });
    try {
      const statuses: nats2.Status[] = [];
      void (async () => {
        for await (const st of nc.status()) statuses.push(st);
      })();
      let subErr: nats2.NatsError | null = null;
      nc.subscribe("other", { callback: (err) => (subErr = err) });
      nc.publish("nope", nats2.StringCodec().encode("x"));
      await nc.flush();
      await waitUntil(() => subErr !== null && statuses.filter((x) => x.type === nats2.Events.Error).length >= 2, "sub error and status errors");
      assert.equal((subErr as nats2.NatsError | null)?.code, nats2.ErrorCode.PermissionsViolation);
      // nats 2.x keeps the quotes of the -ERR text in the message.
      assert.equal((subErr as nats2.NatsError | null)?.message, `'Permissions Violation for Subscription to "other"'`);
      // nats 2.x: data is the error code, permissionContext what was refused.
      const ctx = statuses
        .filter((x) => x.type === nats2.Events.Error && x.data === nats2.ErrorCode.PermissionsViolation)
        .map((x) => (x as { permissionContext?: { operation: string; subject: string } }).permissionContext);
      assert.deepEqual(
        ctx.map((c) => `${c?.operation} ${c?.subject}`).sort(),
        ["publish nope", "subscription other"],
      );
      assert.equal(nc.isClosed(), false);
    } finally {
      await nc.close();
    }
  });
});

void test("reload: narrowed permissions remove subscriptions with an error naming the sid, and apply to publishes", async () => {
  await withServer(async (s) => {
    const nc = await conn(s, "admin");
    try {
      const seen = watchStatus(nc);
      const keep = new Collector(nc.subscribe("keep.x"));
      const lost = nc.subscribe("lost.x");
      const lostDone = (async () => {
        for await (const _m of lost) {
          /* nothing */
        }
      })();
      await nc.flush();
      const users = USERS.map((u) => (u.user === "admin" ? { ...u, permissions: P({ publish: { allow: ["keep.>"], deny: [] }, subscribe: { allow: ["keep.>"], deny: [] } }) } : u));
      s.server.reload(mergeOptions({ host: "127.0.0.1", port: s.port, authorization: { users } }));
      await assert.rejects(lostDone, (err: unknown) => err instanceof errors.PermissionViolationError && /\(sid "\d+"\)$/.test(err.message));
      nc.publish("lost.x", "no");
      nc.publish("keep.x", "yes");
      await keep.waitCount(1);
      await waitUntil(() => permErrors(seen).some((e) => e.message === 'Permissions Violation for Publish to "lost.x"'), "publish refused after reload");
      assert.equal(nc.isClosed(), false);
    } finally {
      await nc.close();
    }
  });
});

void test("connect_info: a protocol 1 client gets one INFO with connect_info after its first PONG (nats-server 2.12)", async () => {
  await withServer(async (s) => {
    const c = await RawClient.connect(s.port);
    const old = await RawClient.connect(s.port);
    try {
      await c.waitForText("\r\n");
      c.clear();
      c.write(`CONNECT ${JSON.stringify({ verbose: false, pedantic: false, protocol: 1, user: "admin", pass: "admin" })}\r\nPING\r\nPING\r\n`);
      await c.waitForCount("PONG\r\n", 2);
      const lines = c.text.split("\r\n");
      assert.equal(lines[0], "PONG");
      assert.ok(lines[1]!.startsWith("INFO "), c.text);
      const info = JSON.parse(lines[1]!.slice(5)) as Record<string, unknown>;
      assert.equal(info["connect_info"], true);
      assert.equal(info["remote_account"], "$G");
      assert.equal(info["auth_required"], true);
      assert.equal(typeof info["client_id"], "number");
      assert.deepEqual(lines.slice(2), ["PONG", ""]);
      await old.handshake({ verbose: false, pedantic: false, user: "admin", pass: "admin" });
      assert.equal(old.text.split("INFO ").length - 1, 1); // protocol 0: only the greeting
    } finally {
      c.close();
      old.close();
    }
  });
});
