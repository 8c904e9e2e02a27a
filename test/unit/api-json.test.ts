// parseApiJson and the Go-typed integer readers: what encoding/json accepts for int64, int32,
// int and uint64 fields, decided from the number's source text (JSON.parse alone rounds
// 2^63 and reads 1e18 as an integer).
import { test } from "node:test";
import assert from "node:assert/strict";
import { goIntOrNull, parseApiJson, RawNumber, unmarshalMsg } from "../../src/jetstream/json.js";

void test("plain integers of up to 15 digits come back as numbers, with no second parse", () => {
  const v = parseApiJson('{"a":1,"b":-5,"c":"1e18 and 9223372036854775808 in a string","d":[123456789012345]}') as Record<string, unknown>;
  assert.deepEqual(v, { a: 1, b: -5, c: "1e18 and 9223372036854775808 in a string", d: [123456789012345] });
});

void test("fractions, exponents and long literals keep their text as RawNumber", () => {
  const v = parseApiJson('{"a":1.0,"b":1e18,"c":9223372036854775808,"d":{"e":[-1.5E-3]},"s":"x\\"1e3"}') as Record<string, unknown>;
  assert.ok(v["a"] instanceof RawNumber && v["a"].literal === "1.0");
  assert.ok(v["b"] instanceof RawNumber && v["b"].literal === "1e18");
  assert.ok(v["c"] instanceof RawNumber && v["c"].literal === "9223372036854775808");
  const e = (v["d"] as { e: unknown[] }).e[0];
  assert.ok(e instanceof RawNumber && e.literal === "-1.5E-3");
  assert.equal(v["s"], 'x"1e3');
});

void test("malformed JSON throws JSON.parse's own error even when numbers were rewritten", () => {
  assert.throws(() => parseApiJson('{"a":1e18,'), SyntaxError);
  assert.throws(() => parseApiJson("{\"a\":1e18}}"), SyntaxError);
});

void test("int64: exact range check on the source digits", () => {
  const p = (s: string): unknown => (parseApiJson(`{"v":${s}}`) as { v: unknown }).v;
  assert.equal(goIntOrNull(p("9223372036854775807"), "int64"), 9223372036854775807);
  assert.equal(goIntOrNull(p("-9223372036854775808"), "int64"), -9223372036854775808);
  assert.equal(goIntOrNull(p("9223372036854775808"), "int64"), null);
  assert.equal(goIntOrNull(p("-9223372036854775809"), "int64"), null);
  assert.equal(goIntOrNull(p("31536000000000000"), "time.Duration"), 31536000000000000);
  assert.equal(goIntOrNull(p("1e18"), "int64"), null);
  assert.equal(goIntOrNull(p("1.0"), "int64"), null);
  assert.equal(goIntOrNull(p("-0"), "int64"), 0);
  assert.equal(goIntOrNull(undefined, "int64"), 0);
  assert.equal(goIntOrNull(null, "int64"), 0);
  assert.equal(goIntOrNull("1", "int64"), null);
  assert.equal(goIntOrNull(1.5, "int64"), null);
});

void test("uint64 refuses negatives and accepts up to 2^64-1; int32 has its own range", () => {
  const p = (s: string): unknown => (parseApiJson(`{"v":${s}}`) as { v: unknown }).v;
  assert.equal(goIntOrNull(p("-1"), "uint64"), null);
  assert.equal(goIntOrNull(p("18446744073709551615"), "uint64"), 18446744073709551615);
  assert.equal(goIntOrNull(p("18446744073709551616"), "uint64"), null);
  assert.equal(goIntOrNull(p("2147483647"), "int32"), 2147483647);
  assert.equal(goIntOrNull(p("2147483648"), "int32"), null);
  assert.equal(goIntOrNull(p("-2147483649"), "int32"), null);
});

void test("the error text is encoding/json's", () => {
  assert.equal(
    unmarshalMsg(new RawNumber("9223372036854775808"), "StreamConfigRequest.max_bytes", "int64"),
    "json: cannot unmarshal number 9223372036854775808 into Go struct field StreamConfigRequest.max_bytes of type int64",
  );
  assert.equal(unmarshalMsg(-1, "JSApiStreamPurgeRequest.keep", "uint64"), "json: cannot unmarshal number -1 into Go struct field JSApiStreamPurgeRequest.keep of type uint64");
  assert.equal(unmarshalMsg("x", "S.f", "int64"), "json: cannot unmarshal string into Go struct field S.f of type int64");
});
