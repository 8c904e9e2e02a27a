// The meta group's boot size (src/jscluster/meta-group.ts expectedClusterSize): configured
// routes plus this server, its own route URL and duplicates counted once.

import { test } from "node:test";
import assert from "node:assert/strict";
import { expectedClusterSize, serverHash } from "../../src/jscluster/meta-group.js";

void test("expected meta size: routes + self, own URL and duplicates once, bad URLs ignored", () => {
  assert.equal(expectedClusterSize([], 7000), 1);
  assert.equal(expectedClusterSize(["nats-route://127.0.0.1:7001", "nats-route://127.0.0.1:7002"], 7000), 3);
  // nats-server style: every server lists all of them, itself included.
  assert.equal(expectedClusterSize(["nats-route://127.0.0.1:7000", "nats-route://127.0.0.1:7001", "nats-route://localhost:7002"], 7000), 3);
  assert.equal(expectedClusterSize(["nats-route://127.0.0.1:7001", "nats-route://localhost:7001", "nats-route://u:p@127.0.0.1:7001"], 7000), 2);
  assert.equal(expectedClusterSize(["nats-route://10.0.0.5:7000", "::not a url::"], 7000), 2);
  // Own port not known yet: nothing is taken for self.
  assert.equal(expectedClusterSize(["nats-route://127.0.0.1:7000"], 0), 2);
});

void test("peer ids: nats-server's hash of the server name", () => {
  // What a nats-server 2.9.10 cluster of n1, n2, n3 shows in /jsz meta_cluster.
  assert.equal(serverHash("n1"), "fjFyEjc1");
  assert.equal(serverHash("n2"), "44jzkV9D");
  assert.equal(serverHash("n3"), "BXScrY9i");
});
