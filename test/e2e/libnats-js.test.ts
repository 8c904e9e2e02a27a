// JetStream through the C client (libnats / nats.c, Debian libnats-dev): the programs in
// test/fixtures/libnats run unchanged against tsnats and, when it is installed, nats-server,
// and must print the same steps on both (error steps carry the jsErrCode, so the codes are
// compared too). js.c: streams and publish options; stream.c: limits, deny/seal, mirror,
// sources, republish, direct get; consumer.c: pull/push/queue/ordered consumers, acks, flow
// control; delivery.c: deliver/ack policies, nak delay, backoff + max deliver advisory, max ack
// pending, fetch max bytes, headers only, drain, bind, inactive threshold; kv.c: KeyValue.
// Skipped when libnats-dev is missing.

import { test, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startServer } from "../../src/index.js";
import { findNatsServer, startNatsServerChild } from "../helpers/core-child.js";
import { buildFixture, describeRun, fixtureDir, runFixture } from "../fixtures/libnats/harness.js";

const work = fixtureDir();
after(() => work.cleanup());

// The steps each program prints, in order (kept in step with the C sources).
const PROGRAMS = {
  js: [
    "connect", "addstream", "addstream-exists", "streaminfo", "updatestream", "publish", "dedup",
    "expectlastseq", "expectations", "publishmsg", "publishasync", "getmsg", "getlastmsg", "deletemsg",
    "streaminfo-subjects", "purge", "streams", "streamnames", "accountinfo", "deletestream", "done",
  ],
  stream: [
    "connect", "discardold", "discardnew 10077", "maxmsgsize 10054", "maxmsgspersubject",
    "discardnewpersubject 10077", "discardnewpersubject-other", "denydelete 10057", "denypurge 10110",
    "sealed-publish 10109", "sealed-unseal 10052", "purge-sequence", "deleted-details", "directget", "mirror",
    "sources", "republish", "publishasync-error 10071", "done",
  ],
  consumer: [
    "connect", "addconsumer", "updateconsumer", "consumerinfo", "consumers", "deleteconsumer", "fetch",
    "fetch-timeout", "fetch-partial", "fetch-acked", "fetch-heartbeat", "pull-ephemeral", "nak", "term",
    "inprogress", "redelivery", "push-async", "push-unsubscribe", "push-sync", "push-sync-durable", "queue",
    "ordered", "ordered-reset", "flowcontrol", "heartbeat", "done",
  ],
  delivery: [
    "connect", "deliver-all", "deliver-last", "deliver-last-per-subject", "deliver-start-seq", "deliver-start-time",
    "deliver-new", "ack-all", "ack-none", "nak-delay", "backoff-config 100", "backoff-maxdeliver",
    "maxackpending-first 2", "maxackpending", "fetch-maxbytes-small", "fetch-maxbytes 5", "headersonly", "drain",
    "pull-bind", "inactive-threshold", "done",
  ],
  kv: [
    "connect", "createkv", "bindkv", "put", "get", "create-exists", "update-wrong-rev", "maxvaluesize",
    "delete", "history", "keys", "purge", "purgedeletes", "watch-initial", "watch-update", "watch-history",
    "status", "deletekv", "done",
  ],
} as const;

// Bound for one program run; the slowest (consumer.c) needs a few seconds of ack-wait and heartbeats.
const RUN_BOUND_MS = 90_000;
const natsServer = findNatsServer();

function tempStore(): { dir: string; cleanup(): void } {
  const dir = mkdtempSync(join(tmpdir(), "tsnats-libnats-js-"));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

for (const [name, steps] of Object.entries(PROGRAMS)) {
  const fx = buildFixture(name, work.dir);
  const expected = steps.map((s) => `ok ${s}`);

  void test(`libnats ${name}.c against tsnats`, { skip: fx.skip }, async () => {
    assert.equal(fx.buildError, "", `compiling ${name}.c failed:\n${fx.buildError}`);
    const store = tempStore();
    const srv = await startServer({ host: "127.0.0.1", port: 0, jetstream: { enabled: true, storeDir: store.dir } });
    try {
      const r = await runFixture(fx.exe, srv.url, RUN_BOUND_MS);
      assert.equal(r.code, 0, describeRun(`${name} against tsnats`, r));
      assert.deepEqual(r.steps, expected);
    } finally {
      await srv.close();
      store.cleanup();
    }
  });

  void test(`libnats ${name}.c against nats-server`, { skip: fx.skip || (natsServer === null ? "nats-server not installed" : false) }, async () => {
    assert.equal(fx.buildError, "", `compiling ${name}.c failed:\n${fx.buildError}`);
    const store = tempStore();
    const srv = await startNatsServerChild(["-a", "127.0.0.1", "-p", "-1", "-js", "-sd", store.dir]);
    try {
      const r = await runFixture(fx.exe, srv.url, RUN_BOUND_MS);
      assert.equal(r.code, 0, describeRun(`${name} against nats-server`, r));
      assert.deepEqual(r.steps, expected);
    } finally {
      await srv.stop();
      store.cleanup();
    }
  });
}
