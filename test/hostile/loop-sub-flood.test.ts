// Hostile: one client sends 100k SUBs in one write (one subject, distinct subjects,
// wildcards), then UNSUBs them, then disconnects. Another client's PINGs must go on being
// answered within a few ms: the Sublist takes each SUB in O(1), the parser yields after
// OPS_PER_TURN operations per turn, and a closed connection's subscriptions leave the
// Sublist in slices. Latency is asserted by counting missed deadlines, never one timing.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import net from "node:net";
import { startTsnatsChild, type ChildServer } from "../helpers/core-child.js";
import { missedSlots, startBystander, summary } from "../helpers/bystander.js";

const N = 100_000;
const PINGS = 200;
const DEADLINE_MS = 50;
// 5 ms slots spent more than DEADLINE_MS overdue (missedSlots). Before the fix: distinct
// subjects 143 (one ~300 ms stall plus the disconnect's), one subject a minute. Under the
// full suite on two shared cores a fixed server still lost 33 once (p50 4 ms: the machine,
// not the server), so the bound is 60 (300 ms overdue in all).
const MAX_MISSED = 60;

let srv: ChildServer;
before(async () => {
  srv = await startTsnatsChild(["-p", "-1", "-a", "127.0.0.1"]);
});
after(async () => {
  await srv.stop();
});

function lines(kind: string): Buffer {
  const out: string[] = ['CONNECT {"verbose":false,"pedantic":false}\r\n'];
  for (let i = 0; i < N; i++) {
    const subj = kind === "same" ? "flood.same" : kind === "wild" ? `flood.${i}.*` : `flood.${i}`;
    out.push(`SUB ${subj} ${i + 1}\r\n`);
  }
  out.push("PING\r\n");
  return Buffer.from(out.join(""));
}

/** Writes `data` on a new connection and resolves once `pongs` PONGs came back (bounded). */
function flood(sock: net.Socket, data: Buffer, pongs: number, ms = 30000): Promise<void> {
  return new Promise((resolve, reject) => {
    let text = "";
    const timer = setTimeout(() => reject(new Error(`no PONG after the flood within ${ms} ms`)), ms);
    const onData = (d: Buffer): void => {
      text += d.toString("latin1");
      if (text.split("PONG\r\n").length - 1 >= pongs) {
        clearTimeout(timer);
        sock.off("data", onData);
        resolve();
      }
    };
    sock.on("data", onData);
    sock.write(data);
  });
}

function connect(port: number): Promise<net.Socket> {
  return new Promise((res, rej) => {
    const s = net.connect({ port, host: "127.0.0.1" });
    s.once("error", rej);
    s.once("connect", () => res(s));
  });
}

for (const kind of ["same", "distinct", "wild"]) {
  void test(`100k SUBs (${kind}) in one write, their UNSUBs, and the disconnect leave a bystander's PING fast`, { timeout: 90000 }, async () => {
    const subs = lines(kind);
    const unsubs = Buffer.from(Array.from({ length: N }, (_, i) => `UNSUB ${i + 1}\r\n`).join("") + "PING\r\n");
    const resubs = lines(kind).subarray('CONNECT {"verbose":false,"pedantic":false}\r\n'.length);
    const sock = await connect(srv.port);
    sock.on("error", () => {});
    const by = await startBystander(srv.port, PINGS);
    try {
      await flood(sock, subs, 1);
      await flood(sock, unsubs, 1);
      // Subscribe again and leave with them all in place.
      await flood(sock, resubs, 1);
      sock.destroy();
      const rtts = await by.done;
      const missed = missedSlots(rtts, DEADLINE_MS);
      assert.ok(missed <= MAX_MISSED, `${missed} slots missed by PINGs over ${DEADLINE_MS} ms (${summary(rtts)})`);
    } finally {
      by.close();
      sock.destroy();
    }
  });
}

void test("the flooder's subscriptions work after the burst (one subject, 100k subs)", { timeout: 60000 }, async () => {
  const sock = await connect(srv.port);
  sock.on("error", () => {});
  try {
    await flood(sock, lines("distinct"), 1);
    // One message to one of the 100k distinct subjects reaches exactly that sid.
    let text = "";
    const got = new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no MSG; got ${JSON.stringify(text.slice(-200))}`)), 10000);
      sock.on("data", (d: Buffer) => {
        text += d.toString("latin1");
        if (text.includes("MSG flood.77777 77778 2\r\nhi\r\n")) {
          clearTimeout(timer);
          resolve();
        }
      });
    });
    sock.write("PUB flood.77777 2\r\nhi\r\n");
    await got;
  } finally {
    sock.destroy();
  }
});
