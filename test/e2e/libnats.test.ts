// The C client (libnats / nats.c) against tsnats: test/fixtures/libnats/client.c is built
// with `cc ... -lnats` into a temp dir and run against tsnats and, when installed,
// nats-server. Skipped when the header or library is missing (.ci/run installs libnats-dev).

import { test, after } from "node:test";
import assert from "node:assert/strict";
import { startServer } from "../../src/index.js";
import { findNatsServer, startNatsServerChild } from "../helpers/core-child.js";
import { buildFixture, describeRun, fixtureDir, runFixture } from "../fixtures/libnats/harness.js";

const work = fixtureDir();
after(() => work.cleanup());

const fx = buildFixture("client", work.dir);
const EXPECTED = ["ok connect", "ok pubsub", "ok request", "ok headers", "ok noresponders", "ok done"];
// The program's own waits are 5s each; the bound only keeps a hung run from stalling the suite.
const RUN_BOUND_MS = 30_000;

void test("libnats: connect, pub/sub, request/reply, headers, no responders", { skip: fx.skip }, async () => {
  assert.equal(fx.buildError, "", `compiling client.c failed:\n${fx.buildError}`);
  const srv = await startServer({ host: "127.0.0.1", port: 0 });
  try {
    const r = await runFixture(fx.exe, srv.url, RUN_BOUND_MS);
    assert.equal(r.code, 0, describeRun("client against tsnats", r));
    assert.deepEqual(r.steps, EXPECTED);
  } finally {
    await srv.close();
  }
});

void test("libnats: the same program against nats-server", { skip: fx.skip || (findNatsServer() === null ? "nats-server not installed" : false) }, async () => {
  assert.equal(fx.buildError, "", `compiling client.c failed:\n${fx.buildError}`);
  const srv = await startNatsServerChild(["-a", "127.0.0.1", "-p", "-1"]);
  try {
    const r = await runFixture(fx.exe, srv.url, RUN_BOUND_MS);
    assert.equal(r.code, 0, describeRun("client against nats-server", r));
    assert.deepEqual(r.steps, EXPECTED);
  } finally {
    await srv.stop();
  }
});
