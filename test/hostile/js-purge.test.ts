// Hostile: purges of big streams (keep, seq, subject) are worked a slice per turn of the
// loop, so a bystander's PINGs are answered while one runs (counted as missed deadlines, no
// timing assertion), and publishes that arrive while it runs end as if the purge had been
// done at once when it was accepted: the purge takes only what was stored then, `keep`
// counts only that, and a second purge sent behind it is worked after it.

import { test } from "node:test";
import assert from "node:assert/strict";
import net from "node:net";
import { connected, missBudget, Replies, withBystander, withJsHostile } from "./harness.js";

/** Publishes n messages (no reply) on p.<i % 10> through a fresh socket, in big writes. */
async function fill(port: number, n: number): Promise<void> {
  const s = net.connect({ port, host: "127.0.0.1" });
  s.on("error", () => {});
  await new Promise<void>((res, rej) => {
    s.once("connect", res);
    s.once("error", rej);
  });
  s.write('CONNECT {"verbose":false,"pedantic":false}\r\n');
  const lines: string[] = [];
  for (let i = 0; i < 10; i++) lines.push(`PUB p.${i} 2\r\nxx\r\n`);
  const PER = 50_000;
  for (let done = 0; done < n; ) {
    const k = Math.min(PER, n - done);
    const parts: string[] = [];
    for (let i = 0; i < k; i++) parts.push(lines[(done + i) % 10]!);
    done += k;
    if (!s.write(parts.join(""))) await new Promise((r) => s.once("drain", r));
  }
  await new Promise<void>((r) => s.end(r));
}

async function info(c: Replies, name: string, tag: string, body = ""): Promise<{ messages: number; first_seq: number; last_seq: number; num_subjects?: number; subjects?: Record<string, number> }> {
  c.pub(`$JS.API.STREAM.INFO.${name}`, `_R.${tag}`, body);
  const r = await c.json(`_R.${tag}`);
  assert.equal(r["error"], undefined, JSON.stringify(r["error"]));
  return r["state"] as { messages: number; first_seq: number; last_seq: number };
}

let infoTag = 0;

async function filled(c: Replies, name: string, n: number): Promise<void> {
  for (let i = 0; ; i++) {
    const st = await info(c, name, `fill${infoTag++}`);
    if (st.messages >= n) return;
    if (i > 600) throw new Error(`only ${st.messages} of ${n} stored`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function create(c: Replies, name: string, storage: string, direct = false): Promise<void> {
  c.pub(`$JS.API.STREAM.CREATE.${name}`, `_R.create.${name}`, JSON.stringify({ name, subjects: ["p.*"], storage, allow_direct: direct }));
  const r = await c.json(`_R.create.${name}`);
  assert.equal(r["error"], undefined, JSON.stringify(r["error"]));
}

const N = 1_000_000;

void test("1M-message stream: keep and subject purges answered while a bystander's PONGs stay prompt", { timeout: 300_000 }, async () => {
  await withJsHostile("purge", async (h) => {
    const by = await connected(h.port);
    const c = await Replies.open(h.port);
    try {
      await create(c, "BIG", "file");
      await fill(h.port, N);
      await filled(c, "BIG", N);
      const by2 = await connected(h.port);
      for (const [tag, body, want] of [
        ["subject", { filter: "p.3" }, N / 10],
        // keep counts sequences from the last, as nats-server's (N - 9 .. N, less the p.3 one)
        ["keep", { keep: 10 }, N - N / 10 - 9],
      ] as const) {
        by2.text = "";
        const { value, pings } = await withBystander(
          by,
          async () => {
            c.pub("$JS.API.STREAM.PURGE.BIG", `_R.purge.${tag}`, JSON.stringify(body));
            // A PING sent right behind the purge request is answered before the purge is done
            // (a purge in one piece answers it only after its reply).
            by2.write("PING\r\n");
            const r = await c.json(`_R.purge.${tag}`);
            return { r, pongBeforeReply: by2.text.includes("PONG") };
          },
          40,
        );
        assert.deepEqual({ success: value.r["success"], purged: value.r["purged"] }, { success: true, purged: want }, tag);
        const b = missBudget(pings);
        assert.ok(b.ok, `${tag}: ${b.text}`);
        assert.ok(value.pongBeforeReply, `${tag}: the PING sent behind the purge was answered only after it`);
      }
      by2.destroy();
      const st = await info(c, "BIG", "after");
      assert.deepEqual({ messages: st.messages, first: st.first_seq, last: st.last_seq }, { messages: 9, first: N - 9, last: N });
    } finally {
      c.close();
      by.destroy();
    }
  });
});

/** While the reply on `until` has not come, asks the stream (DIRECT.GET, answered at once,
 *  outside the API queue) for its last message on `subj`, one request at a time on c. Returns
 *  the sequences answered before that reply: c is one socket, so its replies come in the
 *  order the server sent them, and a sequence seen here was stored before the reply went. */
async function watchLast(c: Replies, stream: string, subj: string, until: string): Promise<number[]> {
  const seen: number[] = [];
  for (let i = 0; !c.msgs.some((m) => m.subject === until); i++) {
    c.pub(`$JS.API.DIRECT.GET.${stream}`, `_R.dg.${i}`, JSON.stringify({ last_by_subj: subj }));
    const r = await c.reply(`_R.dg.${i}`);
    const q = /Nats-Sequence: *(\d+)/i.exec(r.hdr);
    const before = c.msgs.findIndex((m) => m.subject === until);
    if (q !== null && (before < 0 || before > r.index)) seen.push(Number(q[1]));
  }
  return seen;
}

/** A publisher that keeps PUBs with replies in flight on p.<subj> until stopped; acks[i] is
 *  the stream sequence of the i-th, and `whenDone` the number acked when the purge reply came. */
async function racing(port: number, subj: string): Promise<{ stop(): Promise<number[]>; acked(): number }> {
  const c = await Replies.open(port);
  const acks: number[] = [];
  let running = true;
  let sent = 0;
  const loop = (async (): Promise<void> => {
    while (running) {
      for (let k = 0; k < 50; k++) c.pub(subj, `_R.ack.${sent++}`, "yy");
      const want = sent;
      for (let i = acks.length; i < want; i++) {
        const r = JSON.parse((await c.reply(`_R.ack.${i}`)).body) as { seq?: number; error?: unknown };
        assert.equal(r.error, undefined, JSON.stringify(r));
        acks.push(r.seq!);
      }
      c.msgs.length = 0;
    }
  })();
  return {
    acked: () => acks.length,
    stop: async () => {
      running = false;
      await loop;
      c.close();
      return acks;
    },
  };
}

for (const storage of ["file", "memory"]) {
  void test(`${storage} stream: publishes during a paced purge are kept; keep counts only what was there; a second purge waits`, { timeout: 300_000 }, async () => {
    await withJsHostile("purge", async (h) => {
      const c = await Replies.open(h.port);
      const M = 300_000;
      try {
        // keep: the purge removes below (last sequence when accepted) - keep + 1
        await create(c, "K", storage, true);
        await fill(h.port, M);
        await filled(c, "K", M);
        const pub = await racing(h.port, "p.1");
        while (pub.acked() < 100) await new Promise((r) => setTimeout(r, 5));
        c.pub("$JS.API.STREAM.PURGE.K", "_R.keep", JSON.stringify({ keep: 1000 }));
        const seenDuring = await watchLast(c, "K", "p.1", "_R.keep");
        const kept = await c.json("_R.keep");
        const acks = await pub.stop();
        assert.equal(kept["success"], true, JSON.stringify(kept));
        const purged = kept["purged"] as number;
        const lastAtAccept = purged + 1000; // no gaps before the purge
        const st = await info(c, "K", "k1");
        assert.equal(st.first_seq, lastAtAccept - 1000 + 1, "first sequence: keep counted only what was stored when the purge was accepted");
        assert.equal(st.messages, st.last_seq - st.first_seq + 1, "every message stored after the purge was accepted is still there");
        assert.equal(st.last_seq, acks[acks.length - 1]);
        // Asked of the store itself (a PubAck waits for its fsync, the purge's reply does not).
        assert.ok(seenDuring.some((q) => q > lastAtAccept), `no publish was stored while the purge ran (last p.1 seen before its reply: ${seenDuring.slice(-3).join(", ")}; last at accept ${lastAtAccept})`);
        c.pub("$JS.API.STREAM.DELETE.K", "_R.delk", "");
        assert.equal((await c.json("_R.delk"))["success"], true);

        // subject: only p.3 messages stored before it was accepted go; a purge behind it
        // (sent in the same write) is worked after it.
        await create(c, "S", storage);
        await fill(h.port, M);
        await filled(c, "S", M);
        const pub3 = await racing(h.port, "p.3");
        while (pub3.acked() < 100) await new Promise((r) => setTimeout(r, 5));
        c.pub("$JS.API.STREAM.PURGE.S", "_R.subj", JSON.stringify({ filter: "p.3" }));
        c.pub("$JS.API.STREAM.PURGE.S", "_R.subj2", JSON.stringify({ filter: "p.7", keep: 5 }));
        const r1 = await c.json("_R.subj");
        const r2 = await c.json("_R.subj2");
        const acks3 = await pub3.stop();
        assert.ok(r2.index > r1.index, "the second purge was answered first");
        assert.equal(r2["purged"], M / 10 - 5);
        const s2 = await info(c, "S", "s1", JSON.stringify({ subjects_filter: "p.*" }));
        const left3 = s2.subjects?.["p.3"] ?? 0;
        const total3 = M / 10 + acks3.length;
        assert.equal(left3 + (r1["purged"] as number), total3, "every p.3 message either purged or kept");
        // the kept ones are exactly the newest: sequences above the last one purged
        assert.equal(s2.subjects?.["p.7"], 5);
        assert.equal(s2.messages, M - (2 * M) / 10 + 5 + left3);
        const firstKept = acks3[acks3.length - left3];
        c.pub("$JS.API.STREAM.MSG.GET.S", "_R.get", JSON.stringify({ next_by_subj: "p.3", seq: 1 }));
        const g = await c.json("_R.get");
        assert.equal((g["message"] as { seq: number } | undefined)?.seq, firstKept, "the p.3 messages kept are the newest ones");
        assert.ok(left3 > 0 && left3 < acks3.length, `publishes during the purge: ${left3} of ${acks3.length} kept`);
      } finally {
        c.close();
      }
    });
  });
}
