// RefusalGate (src/stream/refusal-gate.ts): a replicated leader's refusals are sent only after
// a leadership confirmation that started after them succeeds, and dropped when it fails or
// leadership changes.

import { test } from "node:test";
import assert from "node:assert/strict";
import { RefusalGate } from "../../src/stream/refusal-gate.js";

function harness(): { gate: RefusalGate; sent: string[]; rounds: Array<{ ok: () => void; fail: () => void }> } {
  const sent: string[] = [];
  const rounds: Array<{ ok: () => void; fail: () => void }> = [];
  const gate = new RefusalGate(
    () => new Promise<void>((resolve, reject) => rounds.push({ ok: resolve, fail: () => reject(new Error("not leader")) })),
    (reply, body) => sent.push(`${reply} ${body.toString()}`),
  );
  return { gate, sent, rounds };
}

const tick = (): Promise<void> => new Promise((r) => setImmediate(r));

void test("refusal gate: held until a round started after them confirms; later ones wait for the next round", async () => {
  const { gate, sent, rounds } = harness();
  gate.hold("r1", Buffer.from("a"));
  assert.equal(rounds.length, 1);
  gate.hold("r2", Buffer.from("b"));
  assert.equal(rounds.length, 1, "one round at a time");
  assert.deepEqual(sent, []);
  rounds[0]!.ok();
  await tick();
  assert.deepEqual(sent, ["r1 a"], "r2 came after the round started");
  assert.equal(rounds.length, 2);
  rounds[1]!.ok();
  await tick();
  assert.deepEqual(sent, ["r1 a", "r2 b"]);
  assert.equal(gate.held, 0);
});

void test("refusal gate: a failed confirmation drops what is held; clear() drops a round in flight", async () => {
  const { gate, sent, rounds } = harness();
  gate.hold("r1", Buffer.from("a"));
  gate.hold("r2", Buffer.from("b"));
  rounds[0]!.fail();
  await tick();
  assert.deepEqual(sent, []);
  assert.equal(gate.held, 0);
  gate.hold("r3", Buffer.from("c"));
  assert.equal(rounds.length, 2);
  gate.clear();
  rounds[1]!.ok();
  await tick();
  assert.deepEqual(sent, [], "leadership changed meanwhile: nothing sent");
  gate.hold("r4", Buffer.from("d"));
  rounds[2]!.ok();
  await tick();
  assert.deepEqual(sent, ["r4 d"]);
});
