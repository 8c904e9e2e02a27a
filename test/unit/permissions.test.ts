// Permission matching (src/server/permissions.ts) and the config permission blocks
// (src/server/config/permissions.ts), after nats-server's client.go and opts.go.

import { test } from "node:test";
import assert from "node:assert/strict";
import { parseConfigText } from "../../src/server/config/parser.js";
import { ConfigProblems, toOptions } from "../../src/server/config/to-options.js";
import {
  ClientPermissions,
  isGatewayReplySubject,
  isNrgSubject,
  isReservedReply,
  type Permissions,
} from "../../src/server/permissions.js";

function perms(p: Partial<Permissions>): ClientPermissions {
  return new ClientPermissions({ publish: null, subscribe: null, response: null, ...p });
}

function auth(text: string): NonNullable<ReturnType<typeof toOptions>["patch"]["authorization"]> {
  const r = toOptions(parseConfigText(text, { file: "t.conf", env: {} }), { file: "t.conf" });
  return r.patch.authorization!;
}

function problems(text: string): string[] {
  try {
    toOptions(parseConfigText(text, { file: "t.conf", env: {} }), { file: "t.conf" });
  } catch (err) {
    assert.ok(err instanceof ConfigProblems, String(err));
    return err.errors.map((e) => e.message);
  }
  assert.fail("expected config problems");
}

void test("publish: allow with wildcards, deny wins", () => {
  const p = perms({ publish: { allow: ["foo.*", "bar.>"], deny: ["bar.secret", "foo.x"] } });
  assert.equal(p.pubAllowed("foo.a", 0), true);
  assert.equal(p.pubAllowed("foo.a.b", 0), false);
  assert.equal(p.pubAllowed("foo.x", 0), false);
  assert.equal(p.pubAllowed("bar.a.b.c", 0), true);
  assert.equal(p.pubAllowed("bar.secret", 0), false);
  assert.equal(p.pubAllowed("baz", 0), false);
  // Cached answers are the same answers.
  assert.equal(p.pubAllowed("foo.a", 0), true);
  assert.equal(p.pubAllowed("foo.x", 0), false);
  const d = perms({ publish: { allow: null, deny: ["$JS.API.>"] } });
  assert.equal(d.pubAllowed("anything", 0), true);
  assert.equal(d.pubAllowed("$JS.API.INFO", 0), false);
  assert.equal(perms({}).checksPublish, false);
});

void test("publish cache stays bounded and correct past its size", () => {
  const p = perms({ publish: { allow: ["a.*"], deny: [] } });
  for (let i = 0; i < 1000; i++) assert.equal(p.pubAllowed(`a.${i}`, 0), true);
  for (let i = 0; i < 1000; i++) assert.equal(p.pubAllowed(`b.${i}`, 0), false);
});

void test("subscribe: wildcard subjects are matched against the lists token by token", () => {
  const p = perms({ subscribe: { allow: ["foo.>", "bar.*"], deny: ["foo.secret"] } });
  assert.equal(p.canSubscribe("foo.a", ""), true);
  assert.equal(p.canSubscribe("foo.*", ""), true);
  assert.equal(p.canSubscribe("foo.>", ""), true);
  assert.equal(p.canSubscribe("bar.*", ""), true);
  assert.equal(p.canSubscribe("bar.>", ""), true); // nats-server: '*' in the list matches the '>' token
  assert.equal(p.canSubscribe("bar.a.b", ""), false);
  assert.equal(p.canSubscribe(">", ""), false);
  assert.equal(p.canSubscribe("foo.secret", ""), false);
  // A wider wildcard is allowed but gets a delivery filter; literal ones need none.
  const f = p.filterFor("foo.*", "");
  assert.ok(f !== null);
  assert.equal(f.denies("foo.secret", ""), true);
  assert.equal(f.denies("foo.public", ""), false);
  assert.equal(p.filterFor("foo.a", ""), null);
  assert.equal(p.filterFor("bar.*", ""), null); // no deny entry overlaps
});

void test("subscribe: queue group entries", () => {
  // allow ["foo v1"]: only queue subscriptions in v1; adding "foo" allows plain ones too.
  const q = perms({ subscribe: { allow: ["foo v1", "bar.> v.*"], deny: [] } });
  assert.equal(q.canSubscribe("foo", "v1"), true);
  assert.equal(q.canSubscribe("foo", "v2"), false);
  assert.equal(q.canSubscribe("foo", ""), false);
  assert.equal(q.canSubscribe("bar.x", "v.x"), true); // wildcard queue names
  assert.equal(q.canSubscribe("bar.x", "w"), false);
  const both = perms({ subscribe: { allow: ["foo", "foo v1"], deny: [] } });
  assert.equal(both.canSubscribe("foo", ""), true);
  assert.equal(both.canSubscribe("foo", "v1"), true);
  assert.equal(both.canSubscribe("foo", "v2"), false);
  const plain = perms({ subscribe: { allow: ["foo"], deny: [] } });
  assert.equal(plain.canSubscribe("foo", "any"), true);
  const deny = perms({ subscribe: { allow: null, deny: ["foo bad", "x.> q"] } });
  assert.equal(deny.canSubscribe("foo", "bad"), false);
  assert.equal(deny.canSubscribe("foo", "good"), true);
  assert.equal(deny.canSubscribe("foo", ""), true);
  const f = deny.filterFor("x.*", "q");
  assert.ok(f !== null);
  assert.equal(f.denies("x.a", "q"), true);
  assert.equal(f.denies("x.a", "r"), false);
  // An empty subscribe allow list is no list at all.
  assert.equal(perms({ subscribe: { allow: [], deny: [] } }).canSubscribe("any", ""), true);
});

void test("allow_responses: reply subjects of delivered messages, max and expiry", () => {
  const p = perms({ publish: { allow: [], deny: [] }, response: { maxMsgs: 2, expiresMs: 1000 } });
  assert.equal(p.pubAllowed("_INBOX.a", 0), false);
  p.trackReply("_INBOX.a", 0);
  assert.equal(p.pubAllowed("_INBOX.a", 10), true);
  assert.equal(p.pubAllowed("_INBOX.a", 20), true);
  assert.equal(p.pubAllowed("_INBOX.a", 30), false); // max 2
  p.trackReply("_INBOX.b", 100);
  assert.equal(p.pubAllowed("_INBOX.b", 1200), false); // expired
  const unlimited = perms({ publish: { allow: ["ok"], deny: [] }, response: { maxMsgs: -1, expiresMs: -1 } });
  unlimited.trackReply("r", 0);
  for (let i = 0; i < 10; i++) assert.equal(unlimited.pubAllowed("r", i * 1e9), true);
  assert.equal(unlimited.pubAllowed("ok", 0), true);
});

void test("reserved subjects", () => {
  assert.equal(isGatewayReplySubject("_GR_.abc.x"), true);
  assert.equal(isGatewayReplySubject("_GR_."), false);
  assert.equal(isGatewayReplySubject("_INBOX.x"), false);
  assert.equal(isNrgSubject("$NRG.AE.x"), true);
  assert.equal(isNrgSubject("$JS.API.INFO"), false);
  for (const r of ["_R_.x", "$JS.ACK.s.c.1.1.1.1.0", "_GR_.x.y"]) assert.equal(isReservedReply(r), true, r);
  for (const r of ["_INBOX.x", "$JS.API.x", "_R_", "reply", "$JS.ACK."]) assert.equal(isReservedReply(r), false, r);
});

void test("config: permission forms and default_permissions", () => {
  const a = auth(`
authorization {
  default_permissions: { publish: "pub.>", subscribe: { deny: ["secret.>", "q.* grp"] } }
  users: [
    { user: a, password: a }
    { user: b, password: b, permissions: { pub: { allow: ["x", "y.*"], deny: "y.z" }, sub: ["foo.> q1"], allow_responses: true } }
    { user: c, password: c, permissions: { publish: { deny: ">" }, allow_responses: { max: 5, expires: "1m" } } }
    { user: d, password: d, permissions: { subscribe: {} } }
  ]
}
`);
  const byUser = new Map(a.users!.map((u) => [u.user, u.permissions]));
  assert.deepEqual(byUser.get("a"), {
    publish: { allow: ["pub.>"], deny: [] },
    subscribe: { allow: null, deny: ["secret.>", "q.* grp"] },
    response: null,
  });
  assert.deepEqual(byUser.get("b"), {
    publish: { allow: ["x", "y.*"], deny: ["y.z"] },
    subscribe: { allow: ["foo.> q1"], deny: [] },
    response: { maxMsgs: 1, expiresMs: 120_000 },
  });
  // allow_responses turns off the blanket publish allow.
  assert.deepEqual(byUser.get("c"), { publish: { allow: [], deny: [">"] }, subscribe: null, response: { maxMsgs: 5, expiresMs: 60_000 } });
  assert.deepEqual(byUser.get("d"), { publish: null, subscribe: null, response: null });
  assert.deepEqual(auth("authorization { users: [ {user: a, password: b, permissions: { allow_responses: true }} ] }\n").users![0]!.permissions, {
    publish: { allow: [], deny: [] },
    subscribe: null,
    response: { maxMsgs: 1, expiresMs: 120_000 },
  });
});

void test("config: bad permission blocks are errors with nats-server's texts", () => {
  const errs = problems(`
authorization {
  users: [
    { user: a, password: a, permissions: "pub" }
    { user: b, password: b, permissions: { publish: "a b" } }
    { user: c, password: c, permissions: { subscribe: ["ok", "a b c"] } }
    { user: d, password: d, permissions: { subscribe: "foo bar.>.x" } }
    { user: e, password: e, permissions: { publish: { allow: "x", permit: "y" } } }
    { user: f, password: f, permissions: { colour: red } }
    { user: g, password: g, permissions: { publish: [1] } }
    { user: h, password: h, permissions: { allow_responses: "yes" } }
    { user: i, password: i, permissions: { allow_responses: { expires: 5 } } }
    { user: j, password: j, permissions: { allow_responses: { ttl: "soon" } } }
    { user: k, password: k, permissions: { publish: 7 } }
  ]
}
`);
  assert.deepEqual(
    errs.map((e) => e.replace(/^t\.conf:\d+:\d+: /, "")),
    [
      'Expected permissions to be a map/struct, got "pub"',
      'subject "a b" is not a valid subject',
      'subject "a b c" is not a valid subject',
      'queue "bar.>.x" is not a valid queue',
      "Unknown field name \"permit\" parsing subject permissions, only 'allow' or 'deny' are permitted",
      'Unknown field "colour" parsing permissions',
      "Subject in permissions array cannot be cast to string",
      "error parsing response permissions, expected a boolean or a map",
      "error parsing expires, not a duration string",
      'error parsing expires: time: invalid duration "soon"',
      "Expected subject permissions to be a subject, or array of subjects, got int64",
    ],
  );
  assert.match(errs[1]!, /^t\.conf:5:\d+: /);
});

void test("config: permissions beside a single user are ignored (as nats-server) with a warning", () => {
  const r = toOptions(parseConfigText('authorization { user: a, password: b, permissions: { publish: "x" } }\n', { file: "t.conf", env: {} }), { file: "t.conf" });
  assert.equal(r.patch.authorization?.user, "a");
  assert.deepEqual(r.warnings, ['t.conf:1:39: field "authorization.permissions" applies only to the users list and is ignored here']);
});

void test("config: max_subs", () => {
  const r = toOptions(parseConfigText("max_subs: 10\n", { file: "t.conf", env: {} }), { file: "t.conf" });
  assert.equal(r.patch.maxSubs, 10);
  assert.equal(r.warnings.length, 0);
  const r2 = toOptions(parseConfigText("max_subscriptions: 0\n", { file: "t.conf", env: {} }), { file: "t.conf" });
  assert.equal(r2.patch.maxSubs, 0);
});
