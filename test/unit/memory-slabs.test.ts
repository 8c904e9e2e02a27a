// The memory store keeps message bytes in slabs (src/storage/memory/slabs.ts) and its
// per-message columns in chunks by sequence (msgcols.ts): many small
// messages share a 1 MiB buffer, big ones get their own, an emptied slab is dropped and a
// sparse one has its live messages moved. Checked against a model with random sizes, removals
// in any order, purges and limits: every live message reads back byte for byte, views handed
// out earlier keep their bytes, and the slabs held stay within what the live bytes need.

import { test } from "node:test";
import assert from "node:assert/strict";
import { createMemoryStreamStore } from "../../src/storage/index.js";
import { SLAB_BYTES, OWN_SLAB_BYTES } from "../../src/storage/memory/slabs.js";
import type { MemoryStreamStore } from "../../src/storage/memory/stream.js";
import { CHUNK_MSGS } from "../../src/storage/memory/msgcols.js";
import { SeededRandom } from "../../src/runtime/random.js";

/** A seeded generator's next() as a function. */
function rng(seed: number): () => number {
  const g = new SeededRandom(seed);
  return () => g.next();
}

/** Bytes that name their sequence: any mix-up between messages shows. */
function body(seq: number, len: number): Buffer {
  const b = Buffer.alloc(len);
  for (let i = 0; i < len; i++) b[i] = (seq * 31 + i * 7) & 0xff;
  return b;
}

function slabCount(st: MemoryStreamStore): number {
  return (st as unknown as { slabs: { count: number } }).slabs.count;
}

function checkAll(st: MemoryStreamStore, model: Map<number, { hdr: Buffer | null; data: Buffer }>): void {
  for (const [seq, m] of model) {
    const got = st.loadMsg(seq);
    assert.ok(got !== null, `seq ${seq} missing`);
    assert.ok(got.data.equals(m.data), `seq ${seq}: data differs`);
    if (m.hdr === null) assert.equal(got.hdr, null);
    else assert.ok(got.hdr !== null && got.hdr.equals(m.hdr), `seq ${seq}: header differs`);
  }
  assert.equal(st.state().msgs, model.size);
}

for (const seed of [1, 2, 3, 4, 5]) {
  void test(`slabs against a model (seed ${seed}): random sizes, removals in any order, purges; bytes intact, slabs bounded`, () => {
    const r = rng(seed);
    const st = createMemoryStreamStore(null, null);
    const model = new Map<number, { hdr: Buffer | null; data: Buffer }>();
    const held: { seq: number; view: Buffer; copy: Buffer }[] = [];
    for (let step = 0; step < 30_000; step++) {
      const x = r();
      if (x < 0.6) {
        // Mostly small, some medium, a few of their own slab.
        const y = r();
        const len = y < 0.9 ? Math.floor(r() * 600) : y < 0.995 ? Math.floor(r() * 20_000) : OWN_SLAB_BYTES + Math.floor(r() * 50_000);
        const seq = st.state().lastSeq + 1;
        const hdr = r() < 0.2 ? Buffer.from(`NATS/1.0\r\nSeq: ${seq}\r\n\r\n`) : null;
        const data = body(seq, len);
        assert.equal(st.storeMsg(`s.${seq % 50}`, hdr, data, seq, 0), seq);
        model.set(seq, { hdr, data });
      } else if (x < 0.95) {
        // Remove a random live message (out of order, as acks and KV overwrites do).
        if (model.size === 0) continue;
        const keys = [...model.keys()];
        const seq = keys[Math.floor(r() * keys.length)]!;
        assert.equal(st.removeMsg(seq), true);
        model.delete(seq);
      } else if (x < 0.96) {
        // Hold a view of a message: it must keep its bytes whatever happens to its slab.
        const keys = [...model.keys()];
        if (keys.length === 0) continue;
        const seq = keys[Math.floor(r() * keys.length)]!;
        const m = st.loadMsg(seq)!;
        held.push({ seq, view: m.data, copy: Buffer.from(m.data) });
      } else if (x < 0.962) {
        // Purge one subject, or everything below a sequence.
        if (r() < 0.5) {
          const subj = `s.${Math.floor(r() * 50)}`;
          st.purge({ subject: subj });
          for (const seq of [...model.keys()]) if (`s.${seq % 50}` === subj) model.delete(seq);
        } else {
          const first = st.state().firstSeq;
          const cut = first + Math.floor(r() * 200);
          st.compact(cut);
          for (const seq of [...model.keys()]) if (seq < cut) model.delete(seq);
        }
      }
      if (step % 1000 === 999) {
        checkAll(st, model);
        // Live bytes need at most this many slabs: sparse ones are moved (a quarter live at
        // most), big messages have one each, plus the current slab and one waiting its move.
        let small = 0;
        let own = 0;
        for (const m of model.values()) {
          const n = m.data.length + (m.hdr?.length ?? 0);
          if (n >= OWN_SLAB_BYTES) own++;
          else small += n;
        }
        const bound = own + Math.ceil((small * 4) / SLAB_BYTES) + 3;
        assert.ok(slabCount(st) <= bound, `step ${step}: ${slabCount(st)} slabs for ${small} small bytes and ${own} big messages (bound ${bound})`);
      }
    }
    checkAll(st, model);
    for (const h of held) assert.ok(h.view.equals(h.copy), `a view of seq ${h.seq} changed`);
    // Everything gone: no slab left but the current one at most.
    st.purge({});
    assert.ok(slabCount(st) <= 1, `${slabCount(st)} slabs after purging everything`);
  });
}

void test("slabs: a work queue acked in order drops its slabs as they empty", () => {
  const st = createMemoryStreamStore(null, null);
  const payload = Buffer.alloc(1000, 7);
  for (let i = 1; i <= 10_000; i++) st.storeMsg("q", null, payload, i, 0);
  const full = slabCount(st);
  assert.ok(full >= 12 && full <= 14, `10 MB in ${full} slabs (64, 128, 256 and 512 KiB, then 1 MiB each)`);
  for (let s = 1; s <= 9_000; s++) st.removeMsg(s);
  assert.ok(slabCount(st) <= 3, `${slabCount(st)} slabs for the last 1,000 messages`);
  // The per-message columns let go of their chunks below the first message too.
  const chunks = (st as unknown as { cols: { chunkCount: number } }).cols.chunkCount;
  assert.ok(chunks <= Math.ceil(1000 / CHUNK_MSGS) + 1, `${chunks} column chunks for 1,000 messages`);
  assert.ok(st.loadMsg(9_001)!.data.equals(payload));
});

void test("slabs: a KV-like stream (max 1 per subject) stays within a few slabs of its live bytes", () => {
  const st = createMemoryStreamStore({ maxMsgs: -1, maxBytes: -1, maxAgeMs: 0, maxMsgsPerSubject: 1 }, null);
  const keys = 200;
  for (let round = 0; round < 100; round++) {
    for (let k = 0; k < keys; k++) st.storeMsg(`kv.${k}`, null, body(round * keys + k + 1, 2000), round, 0);
  }
  assert.equal(st.state().msgs, keys);
  // 200 x 2 KB live = 400 KB: a slab or two, not the 40 MB written.
  assert.ok(slabCount(st) <= 4, `${slabCount(st)} slabs for 400 KB live`);
  for (let k = 0; k < keys; k++) assert.ok(st.loadLastMsg(`kv.${k}`)!.data.equals(body(99 * keys + k + 1, 2000)));
});

void test("slabs: after 90% of messages are removed at random, the sparse slabs are moved out as new ones are stored", () => {
  const r = rng(9);
  const st = createMemoryStreamStore(null, null);
  const n = 20_000;
  for (let seq = 1; seq <= n; seq++) st.storeMsg(`w.${seq % 7}`, null, body(seq, 500), seq, 0);
  const before = slabCount(st);
  assert.ok(before >= 9, `10 MB in ${before} slabs`);
  const kept: number[] = [];
  for (let seq = 1; seq <= n; seq++) {
    if (r() < 0.9) st.removeMsg(seq);
    else kept.push(seq);
  }
  // Each old slab is about a tenth live: one moves per store call.
  for (let i = 0; i < 50; i++) st.storeMsg("w.new", null, body(n + 1 + i, 500), n + 1 + i, 0);
  const liveBytes = (kept.length + 50) * 500;
  assert.ok(slabCount(st) <= Math.ceil(liveBytes / SLAB_BYTES) + 2, `${slabCount(st)} slabs for ${liveBytes} live bytes (${before} before)`);
  for (const seq of kept) assert.ok(st.loadMsg(seq)!.data.equals(body(seq, 500)), `seq ${seq}`);
});

void test("slabs: eraseMsg overwrites the message's bytes where they lie, then removes it", () => {
  const st = createMemoryStreamStore(null, null);
  const secret = Buffer.from("the secret payload, 40 bytes long.......");
  st.storeMsg("a", null, body(1, 100), 1, 0);
  st.storeMsg("a", null, secret, 2, 0);
  st.storeMsg("a", null, body(3, 100), 3, 0);
  const view = st.loadMsg(2)!.data; // a view of the slab, where the bytes lie
  assert.ok(view.equals(secret));
  assert.equal(st.eraseMsg(2), true);
  assert.ok(!view.equals(secret), "the bytes in the slab are overwritten");
  assert.equal(st.loadMsg(2), null);
  assert.equal(st.eraseMsg(2), false, "already gone");
  assert.equal(st.eraseMsg(99), false, "never there");
  assert.ok(st.loadMsg(1)!.data.equals(body(1, 100)) && st.loadMsg(3)!.data.equals(body(3, 100)), "neighbours intact");
});

void test("columns: a small stream's first chunk starts small and grows as messages come", () => {
  const st = createMemoryStreamStore(null, null);
  type Cols = { cols: { chunks: ({ slab: Uint32Array } | null)[] } };
  const first = (): Uint32Array => (st as unknown as Cols).cols.chunks[0]!.slab;
  for (let i = 1; i <= 3; i++) st.storeMsg("kv.k", null, body(i, 10), i, 0);
  assert.ok(first().length <= 32, `${first().length} entries for 3 messages`);
  for (let i = 4; i <= 3000; i++) st.storeMsg(`kv.${i % 9}`, null, body(i, 10), i, 0);
  assert.equal(first().length, CHUNK_MSGS, "grown to a full chunk");
  for (let i = 1; i <= 3000; i++) {
    const m = st.loadMsg(i);
    assert.ok(m !== null && m.data.equals(body(i, 10)) && m.tsNs === i, `seq ${i}`);
  }
});
