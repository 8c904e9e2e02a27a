// redactSecrets: the trace form of a CONNECT hides every credential's value and nothing else
// (the cases of nats-server's removeSecretsFromTrace tests, plus jwt).

import { test } from "node:test";
import assert from "node:assert/strict";
import { redactSecrets } from "../../src/server/redact.js";

void test("credential values become [REDACTED]; the rest of the line is kept", () => {
  const cases: [string, string][] = [
    ['CONNECT {"user":"u","pass":"s3cr3t","verbose":false}', 'CONNECT {"user":"u","pass":"[REDACTED]","verbose":false}'],
    ['CONNECT {"auth_token":"tok","name":"n"}', 'CONNECT {"auth_token":"[REDACTED]","name":"n"}'],
    ['CONNECT {"password": "a", "passwd":"b"}', 'CONNECT {"password": "[REDACTED]", "passwd":"[REDACTED]"}'],
    ['CONNECT {"nkey":"UABC","sig":"c2ln"}', 'CONNECT {"nkey":"[REDACTED]","sig":"[REDACTED]"}'],
    ['CONNECT {"jwt":"eyJ0.x.y","sig":"z"}', 'CONNECT {"jwt":"[REDACTED]","sig":"[REDACTED]"}'],
    ['CONNECT {"proxy_sig":"p","sig":"s"}', 'CONNECT {"proxy_sig":"[REDACTED]","sig":"[REDACTED]"}'],
    ["CONNECT {pass = x, auth_token=y}", "CONNECT {pass = [REDACTED], auth_token=[REDACTED]}"],
    ['CONNECT {"pass":"a","pass":"b"}', 'CONNECT {"pass":"[REDACTED]","pass":"[REDACTED]"}'],
    // sig only as a whole field name, not inside another one
    ['CONNECT {"design":"x","user":"u"}', 'CONNECT {"design":"x","user":"u"}'],
    ['CONNECT {"name":"n","sig_x":"v"}', 'CONNECT {"name":"n","sig_x":"v"}'],
    ["PUB foo 5", "PUB foo 5"],
    ["", ""],
  ];
  for (const [line, want] of cases) assert.equal(redactSecrets(line), want, line);
});

void test("a value cut off at the end of a line is still hidden", () => {
  assert.equal(redactSecrets('CONNECT {"user":"u","pass":"s3cr'), 'CONNECT {"user":"u","pass":"[REDACTED]');
});
