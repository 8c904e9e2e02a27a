// Hostile: streams with 10,000 subjects, created, updated and deleted while a bystander
// pings, against a tsnats child process. The create's overlap searches and its 10,000
// subscriptions are worked a slice per turn of the loop, the reply after the last one, so
// the bystander's PONGs stay prompt (a count of late ones, no timing assertion). Requests
// for the same stream sent while the create is under way wait for it and get the answers
// nats-server gives after a create. Then a burst of 5,000 STREAM.INFO requests.

import { test } from "node:test";
import assert from "node:assert/strict";
import net from "node:net";
import { connected, missBudget, Replies, withBystander, withJsHostile, orderedReplies } from "./harness.js";

const N = 10_000;

function cfg(prefix: string, extra: Record<string, unknown> = {}): string {
  const subjects = Array.from({ length: N }, (_, i) => `${prefix}.${i}`);
  return JSON.stringify({ name: "BIG", subjects, storage: "file", ...extra });
}

const errCode = (r: Record<string, unknown>): number | undefined => (r["error"] as { err_code?: number } | undefined)?.err_code;
const subjectsOf = (r: Record<string, unknown>): string[] => (r["config"] as { subjects: string[] }).subjects;

void test("10k-subject stream: create, update and delete answered as nats-server does while a bystander's PONGs stay prompt", { timeout: 180_000 }, async () => {
  await withJsHostile("big", async (h) => {
    const by = await connected(h.port);
    const c = await Replies.open(h.port);
    try {
      const { pings } = await withBystander(by, async () => {
        // The create, and right behind it (in the same write) requests for the same stream.
        c.pub("$JS.API.STREAM.CREATE.BIG", "_R.create", cfg("big.s"));
        c.pub("$JS.API.STREAM.INFO.BIG", "_R.info", "");
        c.pub("$JS.API.STREAM.CREATE.BIG", "_R.again", cfg("big.s"));
        c.pub("$JS.API.STREAM.CREATE.BIG", "_R.other", cfg("big.x"));
        const created = await c.json("_R.create");
        assert.equal(created["type"], "io.nats.jetstream.api.v1.stream_create_response");
        assert.equal(created["error"], undefined, JSON.stringify(created["error"]));
        assert.equal(subjectsOf(created).length, N);
        // They waited for the create: the stream is there, with all its subjects.
        const info = await c.json("_R.info");
        assert.equal(info["error"], undefined, JSON.stringify(info["error"]));
        assert.equal(subjectsOf(info).length, N);
        assert.ok(info.index > created.index, "the info request was answered before the create");
        const again = await c.json("_R.again");
        assert.equal(again["error"], undefined, "the same config again is not an error");
        assert.equal(errCode(await c.json("_R.other")), 10058, "another config under the same name");
        // Every subject is subscribed once the reply is out.
        c.pub(`big.s.${N - 1}`, "_R.pub1", "x");
        c.pub("big.s.0", "_R.pub2", "y");
        assert.deepEqual(JSON.parse((await c.reply("_R.pub1")).body), { stream: "BIG", seq: 1 });
        assert.deepEqual(JSON.parse((await c.reply("_R.pub2")).body), { stream: "BIG", seq: 2 });

        // An update that replaces all 10,000 subjects.
        c.pub("$JS.API.STREAM.UPDATE.BIG", "_R.update", cfg("big.u"));
        const updated = await c.json("_R.update");
        assert.equal(updated["error"], undefined, JSON.stringify(updated["error"]));
        assert.equal(subjectsOf(updated)[0], "big.u.0");
        c.pub("big.s.5", "_R.old", "z");
        assert.match((await c.reply("_R.old")).hdr, /^NATS\/1\.0 503/, "the old subjects are gone");
        c.pub(`big.u.${N - 1}`, "_R.new", "z");
        assert.deepEqual(JSON.parse((await c.reply("_R.new")).body), { stream: "BIG", seq: 3 });
        // An update that changes a limit only.
        c.pub("$JS.API.STREAM.UPDATE.BIG", "_R.update2", cfg("big.u", { max_msgs: 100 }));
        const updated2 = await c.json("_R.update2");
        assert.equal(updated2["error"], undefined, JSON.stringify(updated2["error"]));
        assert.equal((updated2["config"] as { max_msgs: number }).max_msgs, 100);

        // Delete, and a create of the same name behind it in the same write.
        c.pub("$JS.API.STREAM.DELETE.BIG", "_R.delete", "");
        c.pub("$JS.API.STREAM.INFO.BIG", "_R.info2", "");
        const deleted = await c.json("_R.delete");
        assert.equal(deleted["success"], true, JSON.stringify(deleted));
        assert.equal(errCode(await c.json("_R.info2")), 10059, "stream not found after the delete");
        c.pub("big.u.7", "_R.gone", "z");
        assert.match((await c.reply("_R.gone")).hdr, /^NATS\/1\.0 503/, "no subscription left after the delete reply");
      });
      const b = missBudget(pings);
      assert.ok(b.ok, b.text);
    } finally {
      c.close();
      by.destroy();
    }
  });
});

void test("5,000 STREAM.INFO requests in one write: all answered in order, bystander's PONGs prompt", { timeout: 120_000 }, async () => {
  await withJsHostile("big", async (h) => {
    const by = await connected(h.port);
    const c = await Replies.open(h.port);
    const flood = net.connect({ port: h.port, host: "127.0.0.1" });
    flood.on("error", () => {});
    try {
      c.pub("$JS.API.STREAM.CREATE.I", "_R.c", JSON.stringify({ name: "I", subjects: Array.from({ length: 1000 }, (_, i) => `i.${i}`), storage: "memory" }));
      assert.equal((await c.json("_R.c"))["error"], undefined);
      const { value, pings } = await withBystander(by, async () => {
        const all = orderedReplies(flood, "_F", 5000, 60_000);
        const parts = ['CONNECT {"verbose":false,"pedantic":false}\r\nSUB _F.* 1\r\n'];
        for (let i = 0; i < 5000; i++) parts.push(`PUB $JS.API.STREAM.INFO.I _F.${i} 0\r\n\r\n`);
        flood.write(parts.join(""));
        return await all;
      });
      assert.ok(value, "replies out of order");
      const b = missBudget(pings);
      assert.ok(b.ok, b.text);
    } finally {
      flood.destroy();
      c.close();
      by.destroy();
    }
  });
});
