// Route pooling pieces without sockets: the slot an account hashes to (FNV-1a 32, as
// nats-server computeRoutePoolIdx), a Peer's slots and pinned routes, and the parser on a
// route pinned to an account (the account left out of every operation).
import { test } from "node:test";
import assert from "node:assert/strict";
import { Peer, poolIndex } from "../../src/cluster/pool.js";
import { RouteParser, type RouteParserHandler } from "../../src/cluster/route-parser.js";
import type { Route } from "../../src/cluster/route.js";

/** FNV-1a 32 reference (the published test vectors: "" -> 0x811c9dc5, "a" -> 0xe40c292c,
 *  "foobar" -> 0xbf9cf968). */
function fnv1a(s: string): number {
  let h = 0x811c9dc5;
  for (const b of Buffer.from(s, "utf8")) h = Math.imul(h ^ b, 0x01000193) >>> 0;
  return h;
}

void test("pool index: FNV-1a 32 of the account name modulo the pool size; 0 without a pool", () => {
  assert.equal(fnv1a(""), 0x811c9dc5);
  assert.equal(fnv1a("a"), 0xe40c292c);
  assert.equal(fnv1a("foobar"), 0xbf9cf968);
  for (const acc of ["$G", "$SYS", "ACME", "Ünïcode"]) {
    for (const n of [2, 3, 5, 16]) assert.equal(poolIndex(n, acc), fnv1a(acc) % n, `${acc} / ${n}`);
    assert.equal(poolIndex(1, acc), 0);
    assert.equal(poolIndex(-1, acc), 0);
  }
});

function fakeRoute(account: string, poolIdx: number): Route {
  return { account, poolIdx } as unknown as Route;
}

void test("peer: slots and pinned routes, the carrier of an account", () => {
  const p = new Peer("ID", { server_id: "ID", server_name: "n2" }, false, 3);
  assert.equal(p.conns.length, 3);
  const r0 = fakeRoute("", 0);
  const r2 = fakeRoute("", 2);
  const pin = fakeRoute("$G", -1);
  p.conns[0] = r0;
  p.conns[2] = r2;
  p.pinned.set("$G", pin);
  assert.equal(p.size, 3);
  assert.equal(p.pooled, 2);
  const g = poolIndex(3, "$G");
  assert.equal(p.carrier("$G", false, g), p.conns[g]);
  assert.equal(p.carrier("$G", true, g), pin, "pinned here: its dedicated route");
  assert.equal(p.carrier("$SYS", true, 0), null, "pinned but not up: none (no fallback that would double interest)");
  assert.equal(p.anyPooled(), r0);
  assert.ok(p.holds(r2) && p.holds(pin));
  assert.equal(p.remove(r2), true);
  assert.equal(p.remove(r2), false);
  assert.equal(p.remove(pin), true);
  assert.deepEqual(p.all(), [r0]);
  p.growTo(5);
  assert.equal(p.conns.length, 5);
  const old = new Peer("OLD", { server_id: "OLD" }, true, 3);
  assert.equal(old.conns.length, 1, "a no-pool peer: one route");
  old.conns[0] = r0;
  assert.equal(old.carrier("$G", true, 2), r0, "everything on the one route");
});

void test("parser on a pinned route: the account is implied in RS+/RS-/RMSG/HMSG/LS+/LMSG", () => {
  const evs: unknown[] = [];
  const errors: string[] = [];
  const h: RouteParserHandler = {
    onInfo: () => undefined,
    onConnect: () => undefined,
    onPing: () => undefined,
    onPong: () => undefined,
    onErr: () => undefined,
    onSub: (a, s, q, w) => evs.push(["SUB", a, s, q, w]),
    onUnsub: (a, s, q) => evs.push(["UNSUB", a, s, q]),
    onMsg: (a, s, r, qs, hdr, buf, st, en) => evs.push(["MSG", a, s, r, qs, hdr === null ? null : hdr.toString("latin1"), buf.toString("latin1", st, en)]),
    onError: (r) => errors.push(r),
  };
  const p = new RouteParser(h, { maxControlLineBytes: 4096, maxPayloadBytes: 1024 });
  p.account = "ACC";
  const stream = "RS+ foo\r\nRS+ foo.* grp 3\r\nRS- foo\r\nRS- foo.* grp\r\nLS+ leafc bar\r\nRMSG foo 5\r\nhello\r\nRMSG foo + r g1 g2 2\r\nhi\r\nHMSG foo r 12 14\r\nNATS/1.0\r\n\r\nhi\r\nLMSG leafc foo 1\r\nx\r\n";
  const b = Buffer.from(stream, "latin1");
  for (let cut = 1; cut < b.length; cut += 7) {
    evs.length = 0;
    const q = new RouteParser(h, { maxControlLineBytes: 4096, maxPayloadBytes: 1024 });
    q.account = "ACC";
    q.parse(Buffer.from(b.subarray(0, cut)));
    q.parse(Buffer.from(b.subarray(cut)));
    assert.equal(evs.length, 9, `cut ${cut}`);
  }
  evs.length = 0;
  p.parse(b);
  assert.deepEqual(errors, []);
  assert.deepEqual(evs, [
    ["SUB", "ACC", "foo", "", 0],
    ["SUB", "ACC", "foo.*", "grp", 3],
    ["UNSUB", "ACC", "foo", ""],
    ["UNSUB", "ACC", "foo.*", "grp"],
    ["SUB", "ACC", "bar", "", 0],
    ["MSG", "ACC", "foo", "", null, null, "hello"],
    ["MSG", "ACC", "foo", "r", ["g1", "g2"], null, "hi"],
    ["MSG", "ACC", "foo", "r", null, "NATS/1.0\r\n\r\n", "hi"],
    ["MSG", "ACC", "foo", "", null, null, "x"],
  ]);
});
