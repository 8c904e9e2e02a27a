// nkey users in the config file (nats-server opts.go parseUsers): an entry with `nkey` maps to
// a UserEntry whose user is the nkey; an invalid key, an nkey with a user or password, and a
// duplicate are errors whose messages never show a secret; default permissions reach nkey
// users too.

import { test } from "node:test";
import assert from "node:assert/strict";
import { createAccount, createUser } from "@nats-io/nkeys";
import { parseConfigText } from "../../src/server/config/parser.js";
import { ConfigProblems, toOptions, type ToOptionsResult } from "../../src/server/config/to-options.js";

function map(text: string): ToOptionsResult {
  return toOptions(parseConfigText(text, { file: "t.conf", env: {} }), { file: "t.conf" });
}

function problems(text: string): ConfigProblems {
  try {
    map(text);
  } catch (err) {
    assert.ok(err instanceof ConfigProblems, `expected ConfigProblems, got ${String(err)}`);
    return err;
  }
  assert.fail("expected config problems");
}

const U1 = createUser().getPublicKey();
const U2 = createUser().getPublicKey();

void test("nkey users map to entries named by their key, beside password users", () => {
  const { patch, warnings } = map(`authorization {
  users: [
    { nkey: ${U1} }
    { nkey: "${U2}", permissions: { publish: "a.>" } }
    { user: pw, password: secret }
  ]
}
`);
  assert.deepEqual(warnings, []);
  assert.deepEqual(patch.authorization?.users, [
    { user: U1, password: "", nkey: U1, permissions: null },
    { user: U2, password: "", nkey: U2, permissions: { publish: { allow: ["a.>"], deny: [] }, subscribe: null, response: null } },
    { user: "pw", password: "secret", permissions: null },
  ]);
});

void test("default permissions apply to nkey users without their own", () => {
  const { patch } = map(`authorization {
  default_permissions: { subscribe: "d.>" }
  users: [ { nkey: ${U1} } ]
}
`);
  assert.deepEqual(patch.authorization?.users?.[0]?.permissions, { publish: null, subscribe: { allow: ["d.>"], deny: [] }, response: null });
});

void test("invalid nkeys are errors that do not echo the key", () => {
  const seed = new TextDecoder().decode(createUser().getSeed());
  const cases = [
    "UABC", // too short, bad checksum
    U1.slice(0, -1) + (U1.endsWith("A") ? "B" : "A"), // checksum broken
    createAccount().getPublicKey(), // an account key, not a user key
    seed, // a seed is never a public key (and must not land in a message)
  ];
  for (const k of cases) {
    const p = problems(`authorization { users: [ { nkey: "${k}" } ] }\n`);
    assert.match(p.message, /^t\.conf:1:\d+: Not a valid public nkey for a user$/, k);
    assert.ok(!p.message.includes(k), "the message shows the key");
  }
});

void test("an nkey user with a user name or password is an error; so is a duplicate", () => {
  assert.match(problems(`authorization { users: [ { nkey: ${U1}, user: x } ] }\n`).message, /Nkey users do not take usernames or passwords/);
  const withPass = problems(`authorization { users: [ { nkey: ${U1}, password: hunter2 } ] }\n`).message;
  assert.match(withPass, /Nkey users do not take usernames or passwords/);
  assert.ok(!withPass.includes("hunter2"));
  assert.match(problems(`authorization { users: [ { nkey: ${U1} }, { nkey: ${U1} } ] }\n`).message, new RegExp(`Duplicate nkey "${U1}" detected`));
  assert.match(problems(`authorization { users: [ { user: a, pass: x }, { user: a, pass: y } ] }\n`).message, /Duplicate user "a" detected/);
  assert.match(problems(`authorization { users: [ { permissions: { publish: x } } ] }\n`).message, /user entry requires a user/);
});
