// The route protocol parser: nats-server 2.9's route operations, split across reads at every
// byte, and fuzzed: whatever the bytes, it either reports operations or stops once with an
// error (the route is closed), never throws.
import { test } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import { RouteParser, type RouteParserHandler } from "../../src/cluster/route-parser.js";

type Ev = (string | number | null | string[])[];

function recorder(): { h: RouteParserHandler; evs: Ev[]; errors: string[] } {
  const evs: Ev[] = [];
  const errors: string[] = [];
  const h: RouteParserHandler = {
    onInfo: (j) => evs.push(["INFO", j]),
    onConnect: (j) => evs.push(["CONNECT", j]),
    onPing: () => evs.push(["PING"]),
    onPong: () => evs.push(["PONG"]),
    onErr: (t) => evs.push(["ERR", t]),
    onSub: (a, s, q, w) => evs.push(["SUB", a, s, q, w]),
    onUnsub: (a, s, q) => evs.push(["UNSUB", a, s, q]),
    onMsg: (a, s, r, qs, hdr, buf, st, en) => evs.push(["MSG", a, s, r, qs, hdr === null ? null : hdr.toString("latin1"), buf.toString("latin1", st, en)]),
    onError: (r) => errors.push(r),
  };
  return { h, evs, errors };
}

const LIMITS = { maxControlLineBytes: 4096, maxPayloadBytes: 1024 };

const STREAM =
  'INFO {"server_id":"N1","cluster":"c"}\r\n' +
  'CONNECT {"name":"N1"}\r\n' +
  "PING\r\nPONG\r\n+OK\r\n-ERR 'oops'\r\n" +
  "RS+ $G foo\r\nRS+ $G foo.* grp 3\r\nRS- $G foo\r\nRS- $G foo.* grp\r\n" +
  "LS+ leafc $G bar\r\nLS- leafc $G bar\r\n" +
  "RMSG $G foo 5\r\nhello\r\n" +
  "RMSG $G foo _INBOX.1 2\r\nhi\r\n" +
  "RMSG $G foo + _INBOX.2 g1 g2 3\r\nabc\r\n" +
  "RMSG $G foo | g1 0\r\n\r\n" +
  "HMSG $G foo 12 14\r\nNATS/1.0\r\n\r\nhi\r\n" +
  "HMSG $G foo + r g 12 12\r\nNATS/1.0\r\n\r\n\r\n" +
  "LMSG leafc $G foo r 1\r\nx\r\n";

const EXPECTED: Ev[] = [
  ["INFO", '{"server_id":"N1","cluster":"c"}'],
  ["CONNECT", '{"name":"N1"}'],
  ["PING"],
  ["PONG"],
  ["ERR", "'oops'"],
  ["SUB", "$G", "foo", "", 0],
  ["SUB", "$G", "foo.*", "grp", 3],
  ["UNSUB", "$G", "foo", ""],
  ["UNSUB", "$G", "foo.*", "grp"],
  ["SUB", "$G", "bar", "", 0],
  ["UNSUB", "$G", "bar", ""],
  ["MSG", "$G", "foo", "", null, null, "hello"],
  ["MSG", "$G", "foo", "_INBOX.1", null, null, "hi"],
  ["MSG", "$G", "foo", "_INBOX.2", ["g1", "g2"], null, "abc"],
  ["MSG", "$G", "foo", "", ["g1"], null, ""],
  ["MSG", "$G", "foo", "", null, "NATS/1.0\r\n\r\n", "hi"],
  ["MSG", "$G", "foo", "r", ["g"], "NATS/1.0\r\n\r\n", ""],
  ["MSG", "$G", "foo", "r", null, null, "x"],
];

void test("route operations of nats-server 2.9, in one read", () => {
  const { h, evs, errors } = recorder();
  new RouteParser(h, LIMITS).parse(Buffer.from(STREAM, "latin1"));
  assert.deepEqual(errors, []);
  assert.deepEqual(evs, EXPECTED);
});

void test("the same bytes split at every position give the same operations", () => {
  const b = Buffer.from(STREAM, "latin1");
  for (let cut = 1; cut < b.length; cut++) {
    const { h, evs, errors } = recorder();
    const p = new RouteParser(h, LIMITS);
    p.parse(Buffer.from(b.subarray(0, cut)));
    p.parse(Buffer.from(b.subarray(cut)));
    assert.deepEqual(errors, [], `cut ${cut}`);
    assert.deepEqual(evs, EXPECTED, `cut ${cut}`);
  }
});

void test("a handler that yields after every message: nothing after it is parsed until resume(), and the operations come out the same, split anywhere", () => {
  const b = Buffer.from(STREAM, "latin1");
  for (let cut = 1; cut < b.length; cut += 7) {
    const { h, evs, errors } = recorder();
    const onMsg = h.onMsg;
    let p: RouteParser | null = null;
    let yields = 0;
    h.onMsg = (...args) => {
      onMsg(...args);
      yields++;
      p!.yieldTurn();
    };
    p = new RouteParser(h, LIMITS);
    p.parse(Buffer.from(b.subarray(0, cut)));
    const seen = evs.length;
    const heldBefore = p.isYielded;
    // While yielded, a read is kept, not parsed.
    p.parse(Buffer.from(b.subarray(cut)));
    if (heldBefore) assert.equal(evs.length, seen, `cut ${cut}: nothing parsed while yielded`);
    let rounds = 0;
    while (p.isYielded && rounds++ < 100) {
      const before = evs.length;
      const again = p.resume();
      assert.equal(again, p.isYielded);
      if (again) assert.equal(evs[evs.length - 1]![0], "MSG", "it stopped right after a message");
      assert.ok(evs.length > before || !again, "each resume makes progress");
    }
    assert.deepEqual(errors, [], `cut ${cut}`);
    assert.deepEqual(evs, EXPECTED, `cut ${cut}`);
    assert.equal(yields, EXPECTED.filter((e) => e[0] === "MSG").length);
  }
});

void test("malformed frames stop the parser with one error", () => {
  const bad = [
    "BOGUS x\r\n",
    "RMSG $G\r\n",
    "RMSG $G foo x\r\n",
    "RMSG $G foo * q 3\r\nabc\r\n",
    "RMSG $G foo 3\r\nabcd\r\n",
    "HMSG $G foo 5 3\r\nabc\r\n",
    "RMSG $G foo 2000\r\n",
    "RS+ $G\r\n",
    "RS+ $G foo q w\r\n",
    "RS- $G foo q x\r\n",
    "PING x\r\n",
    "X".repeat(5000),
  ];
  for (const t of bad) {
    const { h, errors } = recorder();
    const p = new RouteParser(h, LIMITS);
    p.parse(Buffer.from(t, "latin1"));
    p.parse(Buffer.from("PING\r\n"));
    assert.equal(errors.length, 1, JSON.stringify(t));
    assert.ok(p.isStopped);
  }
});

const TOKENS = ["RMSG", "HMSG", "LMSG", "RS+", "RS-", "LS+", "PING", "PONG", "INFO", "CONNECT", "$G", "foo", "+", "|", "q", "0", "3", "12", "99999999999", " ", "\t", "\r\n", "\n", "{}", "-ERR", "\x00", "\xff"];

void test("fuzz: random token streams, split anywhere, never throw; an error stops the parser for good", () => {
  fc.assert(
    fc.property(fc.array(fc.oneof(fc.constantFrom(...TOKENS), fc.string({ maxLength: 8 })), { maxLength: 60 }), fc.array(fc.nat(400), { maxLength: 5 }), (parts, cuts) => {
      const b = Buffer.from(parts.join(""), "latin1");
      const { h, errors } = recorder();
      let afterStop = 0;
      const wrapped: RouteParserHandler = {
        ...h,
        onPing: () => {
          if (errors.length > 0) afterStop++;
        },
      };
      const p = new RouteParser(wrapped, LIMITS);
      let at = 0;
      for (const c of [...cuts].sort((x, y) => x - y)) {
        const e = Math.min(c, b.length);
        if (e <= at) continue;
        p.parse(Buffer.from(b.subarray(at, e)));
        at = e;
      }
      p.parse(Buffer.from(b.subarray(at)));
      assert.ok(errors.length <= 1);
      assert.equal(afterStop, 0);
      if (errors.length === 1) assert.ok(p.isStopped);
    }),
    { numRuns: 2000 },
  );
});

void test("fuzz: well-formed RMSG/HMSG with random subjects, replies, queues and payloads round-trip", () => {
  const tok = fc.stringMatching(/^[a-zA-Z0-9_.$>*-]{1,12}$/);
  fc.assert(
    fc.property(tok, fc.option(tok, { nil: "" }), fc.array(tok, { maxLength: 3 }), fc.uint8Array({ maxLength: 200 }), fc.option(fc.uint8Array({ maxLength: 50 }), { nil: null }), fc.nat(300), (subj, reply, queues, payload, hdr, cut) => {
      const p = Buffer.from(payload);
      const hb = hdr === null ? null : Buffer.from(hdr);
      let line = hb !== null ? `HMSG $G ${subj}` : `RMSG $G ${subj}`;
      if (queues.length > 0) line += (reply !== "" ? ` + ${reply} ` : " | ") + queues.join(" ");
      else if (reply !== "") line += ` ${reply}`;
      line += hb !== null ? ` ${hb.length} ${hb.length + p.length}\r\n` : ` ${p.length}\r\n`;
      const frame = Buffer.concat([Buffer.from(line, "latin1"), hb ?? Buffer.alloc(0), p, Buffer.from("\r\n")]);
      const { h, evs, errors } = recorder();
      const parser = new RouteParser(h, LIMITS);
      const c = Math.min(cut, frame.length);
      parser.parse(Buffer.from(frame.subarray(0, c)));
      parser.parse(Buffer.from(frame.subarray(c)));
      assert.deepEqual(errors, []);
      assert.deepEqual(evs, [["MSG", "$G", subj, reply, queues.length > 0 ? queues : null, hb === null ? null : hb.toString("latin1"), p.toString("latin1")]]);
    }),
    { numRuns: 1000 },
  );
});
