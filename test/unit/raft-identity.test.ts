// Storage identities (raft/identity.ts, CLUSTERING.md §3.7): a server whose disk was wiped
// comes back under its name as a new member. It must not help elect a leader that lacks
// entries the old member acknowledged (the Jepsen scenario: a blank voter voting for a stale
// candidate loses committed writes); the leader replaces the old identity by the new one in
// one membership change, and from then on the new member counts.
import { test } from "node:test";
import assert from "node:assert/strict";
import { rmSync } from "node:fs";
import { join } from "node:path";
import { IDS, withTempCluster } from "../helpers/raft-cluster.js";
import { planConfChange } from "../../src/raft/conflog.js";
import { decodeVoters, RaftError, splitMembers } from "../../src/raft/types.js";
import { ID_MARK } from "../../src/raft/identity.js";

void test("membership lists carry identities; re-identifying one voter is one change, with anything else it is refused", () => {
  const cur = { voters: ["a", "b", "c"], learners: [], ids: new Map([["a", "ia"], ["b", "ib"], ["c", "ic"]]) };
  const data = planConfChange(cur, ["a", "b", "c"], [], new Map([["b", "ib2"]]));
  assert.ok(data !== null);
  const list = decodeVoters(data);
  assert.deepEqual(list, [`a${ID_MARK}ia`, `b${ID_MARK}ib2`, `c${ID_MARK}ic`]);
  const back = splitMembers(list);
  assert.deepEqual(back.voters, ["a", "b", "c"]);
  assert.equal(back.ids.get("b"), "ib2");
  // Nothing to change.
  assert.equal(planConfChange(cur, ["a", "b", "c"], []), null);
  // Two at once: re-identify b and add d, or re-identify two voters.
  assert.throws(() => planConfChange(cur, ["a", "b", "c", "d"], [], new Map([["b", "ib2"], ["d", "id"]])), RaftError);
  assert.throws(() => planConfChange(cur, ["a", "b", "c"], [], new Map([["b", "ib2"], ["c", "ic2"]])), RaftError);
  // A learner added keeps the voters' identities and pins its own.
  const withL = splitMembers(decodeVoters(planConfChange(cur, ["a", "b", "c"], ["d"], new Map([["d", "id"]]))!));
  assert.deepEqual(withL.learners, ["d"]);
  assert.equal(withL.ids.get("d"), "id");
  assert.equal(withL.ids.get("a"), "ia");
});

void test("a wiped server comes back as a new member: it does not help a stale server lead; the leader re-identifies it, it catches up and then counts", async () => {
  const ids = new Map(IDS.map((id) => [id, `${id}first`]));
  await withTempCluster("raft-ident-", ["g"], async (c, root) => {
    await c.proposeAll("g", ["a"]);
    // One server is cut off: b and c commit on the other two only.
    const lagger = IDS.find((id) => id !== c.leader("g"))!;
    const holders = IDS.filter((id) => id !== lagger);
    c.hub.down.add(lagger);
    await c.proposeAll("g", ["b", "c"], holders);
    assert.deepEqual(c.app(lagger, "g").items, ["a"]);
    // One holder's disk is wiped; it restarts blank with a new identity. The other holder
    // stops, and the cut-off server is reachable again.
    const [wiped, keep] = holders as [string, string];
    c.stop(wiped);
    rmSync(join(root, wiped), { recursive: true, force: true });
    ids.set(wiped, `${wiped}second`);
    c.start(wiped);
    const w = c.hosts.get(wiped)!.node("g")!;
    assert.equal(w.status().lastIndex, 0, "blank");
    assert.equal(w.superseded(), true, "the group pins its old identity");
    c.stop(keep);
    c.hub.down.delete(lagger);
    // Without identities the blank server would vote for the stale one, which would lead
    // without b and c. Here nobody leads: the old member is gone and the new one is not a
    // member yet.
    for (let i = 0; i < 300; i++) {
      c.clock.advance(10);
      await new Promise((r) => setTimeout(r, 1));
    }
    assert.equal(c.leader("g"), undefined, "no leader from a stale server and a wiped one");
    assert.ok(c.hosts.get(lagger)!.stats.notAdmitted > 0, "the wiped server's messages were not counted");
    // The other holder back: a leader re-identifies the wiped server, which catches up.
    c.start(keep);
    await c.until("re-identified", () => {
      const l = c.leader("g");
      return l !== undefined && c.hosts.get(l)!.node("g")!.ids.get(wiped) === `${wiped}second`;
    });
    assert.ok(c.logged.some((m) => m.includes(`${wiped} came back with a new storage identity`)), c.logged.join("\n"));
    await c.proposeAll("g", ["d"]);
    for (const id of IDS) assert.deepEqual(c.app(id, "g").items, ["a", "b", "c", "d"], id);
    await c.until("the wiped server is a member again", () => !c.hosts.get(wiped)!.node("g")!.superseded());
    // It counts now: with the other holder down, it and the once-stale server commit.
    c.stop(keep);
    await c.proposeAll("g", ["e"], [lagger, wiped]);
    assert.deepEqual(c.app(wiped, "g").items, ["a", "b", "c", "d", "e"]);
    // And after a restart of its own (same disk, same identity) it is still the member.
    c.stop(wiped);
    c.start(wiped);
    await c.proposeAll("g", ["f"], [lagger, wiped]);
    assert.equal(c.hosts.get(wiped)!.node("g")!.superseded(), false);
  }, undefined, ids);
});
