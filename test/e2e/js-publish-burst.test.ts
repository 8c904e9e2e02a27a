// Bursts of publishes read together from one socket: streams borrow the client's read buffer
// (no copy on the way in), so every stored record must still hold its own headers and payload
// after later reads have overwritten that buffer, and every PubAck must name its own sequence.
import { test, after, before } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect, headers, type NatsConnection } from "@nats-io/transport-node";
import { jetstream, jetstreamManager, type JetStreamManager, type JetStreamClient, type PubAck } from "@nats-io/jetstream";
import { startServer, type RunningServer } from "../../src/index.js";

let storeDir = "";
let srv: RunningServer;
let nc: NatsConnection;
let jsm: JetStreamManager;
let js: JetStreamClient;

before(async () => {
  storeDir = mkdtempSync(join(tmpdir(), "tsnats-e2e-burst-"));
  srv = await startServer({ port: 0, host: "127.0.0.1", jetstream: { enabled: true, storeDir } });
  nc = await connect({ servers: srv.url });
  jsm = await jetstreamManager(nc);
  js = jetstream(nc);
});

after(async () => {
  await nc.close();
  await srv.close();
  rmSync(storeDir, { recursive: true, force: true });
});

function body(i: number): Uint8Array {
  // Sizes vary so records do not line up with read boundaries the same way twice.
  return new TextEncoder().encode(`m${i}:`.padEnd(8 + ((i * 37) % 900), String.fromCharCode(97 + (i % 26))));
}

for (const storage of ["file", "memory"] as const) {
  void test(`burst of publishes with and without headers keeps every record intact (${storage})`, async () => {
    const name = `BURST_${storage}`;
    await jsm.streams.add({ name, subjects: [`burst.${storage}.>`], storage });
    const n = 3000;
    const acks: Promise<PubAck>[] = [];
    for (let i = 0; i < n; i++) {
      const subj = `burst.${storage}.${i % 7}`;
      if (i % 3 === 0) {
        const h = headers();
        h.set("X-Idx", String(i));
        acks.push(js.publish(subj, body(i), { headers: h, msgID: `id-${i}` }));
      } else {
        acks.push(js.publish(subj, body(i)));
      }
    }
    const got = await Promise.all(acks);
    for (let i = 0; i < n; i++) {
      assert.equal(got[i]!.seq, i + 1);
      assert.equal(got[i]!.duplicate, false);
    }
    for (const i of [0, 1, 2, 3, 998, 1500, 2047, 2999]) {
      const m = await jsm.streams.getMessage(name, { seq: i + 1 });
      assert.ok(m !== null);
      assert.equal(m.subject, `burst.${storage}.${i % 7}`);
      assert.equal(Buffer.from(m.data).toString(), Buffer.from(body(i)).toString());
      if (i % 3 === 0) {
        assert.equal(m.header.get("X-Idx"), String(i));
        assert.equal(m.header.get("Nats-Msg-Id"), `id-${i}`);
      } else {
        assert.equal(m.header?.get("X-Idx") ?? "", "");
      }
    }
    // Every record, in order, through a consumer.
    const c = await js.consumers.get(name);
    const it = await c.fetch({ max_messages: n, expires: 10_000 });
    let k = 0;
    for await (const m of it) {
      assert.equal(m.seq, k + 1);
      assert.equal(Buffer.from(m.data).toString(), Buffer.from(body(k)).toString());
      if (k % 3 === 0) assert.equal(m.headers?.get("X-Idx"), String(k));
      k++;
      if (k === n) break;
    }
    assert.equal(k, n);
    await jsm.streams.delete(name);
  });
}
