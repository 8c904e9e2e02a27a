// The JetStream domain's subject mappings, as nats-server's generateJSMappingTable lists them.
import { test } from "node:test";
import assert from "node:assert/strict";
import { domainMapped } from "../../src/jetstream/api.js";

const FROM = "$JS.hub.API.";
const map = (s: string): string | null => domainMapped(s, FROM.length);

void test("mapped: INFO, STREAM/CONSUMER/DIRECT/META/SERVER/ACCOUNT, $KV and $OBJ", () => {
  assert.equal(map("$JS.hub.API.INFO"), "$JS.API.INFO");
  assert.equal(map("$JS.hub.API.STREAM.CREATE.S"), "$JS.API.STREAM.CREATE.S");
  assert.equal(map("$JS.hub.API.CONSUMER.MSG.NEXT.S.c"), "$JS.API.CONSUMER.MSG.NEXT.S.c");
  assert.equal(map("$JS.hub.API.DIRECT.GET.KV_b.$KV.b.k"), "$JS.API.DIRECT.GET.KV_b.$KV.b.k");
  assert.equal(map("$JS.hub.API.META.LEADER.STEPDOWN"), "$JS.API.META.LEADER.STEPDOWN");
  assert.equal(map("$JS.hub.API.SERVER.REMOVE"), "$JS.API.SERVER.REMOVE");
  assert.equal(map("$JS.hub.API.ACCOUNT.PURGE.x"), "$JS.API.ACCOUNT.PURGE.x");
  assert.equal(map("$JS.hub.API.$KV.bucket.a.b"), "$KV.bucket.a.b");
  assert.equal(map("$JS.hub.API.$OBJ.store.C.id"), "$OBJ.store.C.id");
});

void test("left alone: other first tokens, INFO with more tokens, a bare $KV or $OBJ", () => {
  for (const s of ["$JS.hub.API.NOPE", "$JS.hub.API.INFO.x", "$JS.hub.API.$KV", "$JS.hub.API.$OBJ", "$JS.hub.API.stream.create.S", "$JS.hub.API."]) {
    assert.equal(map(s), null, s);
  }
});
