// PayloadReader: the payload accumulation both hot-path parsers (client and route) share.

import { test } from "node:test";
import assert from "node:assert/strict";
import { PayloadReader } from "../../src/protocol/payload.js";

/** Feeds `frame` (payload + CRLF + `after`) to a reader in the given pieces; returns the
 *  payload and the bytes left after it, or "error". */
function feed(size: number, pieces: Buffer[]): { payload: string; rest: string; viewOfRead: boolean } | "error" {
  const r = new PayloadReader();
  r.begin(size);
  for (let p = 0; p < pieces.length; p++) {
    const buf = pieces[p]!;
    const next = r.take(buf, 0, buf.length);
    if (next < 0) return "error";
    const data = r.done();
    if (data !== null) {
      const rest = Buffer.concat([buf.subarray(next), ...pieces.slice(p + 1)]).toString();
      return { payload: data.toString("latin1", r.start, r.end), rest, viewOfRead: data === buf };
    }
    assert.equal(next, buf.length, "an incomplete payload takes the whole read");
  }
  throw new Error("payload never completed");
}

void test("a payload whole in one read is a view of the read; split anywhere it is copied once and equal", () => {
  const frame = Buffer.from("hello world\r\nPING\r\n");
  const whole = feed(11, [frame]);
  assert.deepEqual(whole, { payload: "hello world", rest: "PING\r\n", viewOfRead: true });
  for (let a = 0; a <= 13; a++) {
    for (let b = a; b <= 13; b++) {
      const got = feed(11, [frame.subarray(0, a), frame.subarray(a, b), frame.subarray(b)]);
      assert.notEqual(got, "error");
      if (got === "error") continue;
      assert.equal(got.payload, "hello world", `split at ${a}/${b}`);
      assert.equal(got.rest, "PING\r\n", `split at ${a}/${b}`);
    }
  }
});

void test("an empty payload needs only its CRLF", () => {
  assert.deepEqual(feed(0, [Buffer.from("\r\nX")]), { payload: "", rest: "X", viewOfRead: true });
  const got = feed(0, [Buffer.from("\r"), Buffer.from("\nX")]);
  assert.notEqual(got, "error");
  if (got !== "error") assert.equal(got.rest, "X");
});

void test("a payload not followed by CRLF is an error, whole or split", () => {
  assert.equal(feed(3, [Buffer.from("abcX\n")]), "error");
  assert.equal(feed(3, [Buffer.from("abc\rX")]), "error");
  assert.equal(feed(3, [Buffer.from("ab"), Buffer.from("c\r"), Buffer.from("Y")]), "error");
});
