// The pure decisions of STREAM.UPDATE scaling (src/jetstream/scale.ts): what a change of
// members means for one server's copy, which members a shrink keeps, who answers, and the
// voters a new member starts with.
import { test } from "node:test";
import assert from "node:assert/strict";
import { joinVoters, scaleStep, shrinkPeers, updateAnswerer } from "../../src/jetstream/scale.js";

void test("scaleStep: seed on the R1 holder going up, unseed on the one kept going to R1, join for new members", () => {
  assert.equal(scaleStep(["a"], ["a", "b", "c"], "a"), "seed");
  assert.equal(scaleStep(["a"], ["a", "b", "c"], "b"), "join");
  assert.equal(scaleStep(["a", "b", "c"], ["b"], "b"), "unseed");
  assert.equal(scaleStep(["a", "b", "c"], ["b"], "a"), "none", "removed: not a member any more");
  assert.equal(scaleStep(["a", "b", "c"], ["a", "b", "c", "d", "e"], "a"), "none");
  assert.equal(scaleStep(["a", "b", "c"], ["a", "b", "c", "d", "e"], "e"), "join");
  assert.equal(scaleStep(["a", "b", "c", "d", "e"], ["a", "b", "c"], "c"), "none");
  assert.equal(scaleStep(["a"], ["a"], "a"), "none");
  assert.equal(scaleStep(["a"], ["a"], "z"), "none");
});

void test("shrinkPeers: the leader is kept first, then the others in order; at least one", () => {
  assert.deepEqual(shrinkPeers(["a", "b", "c", "d", "e"], "d", 3), ["d", "a", "b"]);
  assert.deepEqual(shrinkPeers(["a", "b", "c"], "c", 1), ["c"]);
  assert.deepEqual(shrinkPeers(["a", "b", "c"], "", 1), ["a"], "leader unknown: the first");
  assert.deepEqual(shrinkPeers(["a", "b", "c"], "z", 2), ["a", "b"], "a leader not a member is ignored");
  assert.deepEqual(shrinkPeers(["a", "b", "c"], "b", 0), ["b"]);
});

void test("updateAnswerer: the leader when it stays, else the first kept; joinVoters: the members before, unless already one", () => {
  assert.equal(updateAnswerer("b", ["a", "b", "c", "d", "e"]), "b");
  assert.equal(updateAnswerer("a", ["c"]), "c");
  assert.equal(updateAnswerer("", ["c", "a"]), "c");
  assert.equal(updateAnswerer("", []), "");
  assert.deepEqual(joinVoters(["a"], "b"), ["a"]);
  assert.deepEqual(joinVoters(["a", "b", "c"], "d"), ["a", "b", "c"]);
  assert.deepEqual(joinVoters(["a", "b", "c"], "b"), []);
});
