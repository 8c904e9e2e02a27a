import { test } from "node:test";
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { join } from "node:path";
import { mkdtempSync, writeFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import {
  ConfigError,
  parseConfigFile,
  parseConfigText,
  positionOf,
  wasUsedAsVariable,
  type ConfigMap,
} from "../../src/server/config/parser.js";
import { parseDurationMs } from "../../src/server/config/duration.js";

// dist/test/unit -> repo root
const FIXTURES = fileURLToPath(new URL("../../../test/fixtures/config/", import.meta.url));
const noEnv = {};
const parse = (text: string, env: Record<string, string> = noEnv): ConfigMap => parseConfigText(text, { file: "t.conf", env });

function parseError(text: string, env: Record<string, string> = noEnv): ConfigError {
  try {
    parse(text, env);
  } catch (err) {
    assert.ok(err instanceof ConfigError, `expected ConfigError, got ${String(err)}`);
    return err;
  }
  assert.fail("expected a parse error");
}

void test("three key/value separators", () => {
  assert.deepEqual(parse("a: 1\nb = 2\nc 3\nd:4\ne=5\n"), { a: 1, b: 2, c: 3, d: 4, e: 5 });
});

void test("entries separated by ; and , on one line", () => {
  assert.deepEqual(parse("a: 1; b: 2, c: 3"), { a: 1, b: 2, c: 3 });
});

void test("comments with # and //, also after values", () => {
  const t = parse("# top\n// another\na: 1 # trailing\nb: \"x\" // trailing\nm {\n  # inside\n  c: 2 // c\n}\n");
  assert.deepEqual(t, { a: 1, b: "x", m: { c: 2 } });
});

void test("quoted, single-quoted and unquoted strings; escapes", () => {
  const t = parse(`a: "hello world"\nb: 'raw \\n'\nc: unquoted.value\nd: "tab\\tnl\\nq\\"bs\\\\x\\x41"\n"quoted key": 1\n'sq key' = 2\n`);
  assert.equal(t["a"], "hello world");
  assert.equal(t["b"], "raw \\n");
  assert.equal(t["c"], "unquoted.value");
  assert.equal(t["d"], 'tab\tnl\nq"bs\\xA');
  assert.equal(t["quoted key"], 1);
  assert.equal(t["sq key"], 2);
});

void test("integers, floats, booleans", () => {
  const t = parse("i: 42\nn: -7\nf: 1.5\nb1: true\nb2: FALSE\nb3: yes\nb4: no\nb5: on\nb6: off\ns: \"true\"\n");
  assert.deepEqual(t, { i: 42, n: -7, f: 1.5, b1: true, b2: false, b3: true, b4: false, b5: true, b6: false, s: "true" });
});

void test("size units: bare letter is decimal, b/i/ib binary", () => {
  const t = parse("a: 1K\nb: 1KB\nc: 1KiB\nd: 1ki\ne: 1M\nf: 1MB\ng: 1GB\nh: 2g\ni: 1T\nj: 1TiB\nk: 3mib\n");
  assert.equal(t["a"], 1000);
  assert.equal(t["b"], 1024);
  assert.equal(t["c"], 1024);
  assert.equal(t["d"], 1024);
  assert.equal(t["e"], 1_000_000);
  assert.equal(t["f"], 1024 * 1024);
  assert.equal(t["g"], 1024 ** 3);
  assert.equal(t["h"], 2e9);
  assert.equal(t["i"], 1e12);
  assert.equal(t["j"], 1024 ** 4);
  assert.equal(t["k"], 3 * 1024 * 1024);
});

void test("addresses and unit-looking strings stay strings", () => {
  const t = parse("a: 127.0.0.1:4222\nb: 10.0.0.1\nc: 2s\nd: \"1m30s\"\ne: 500ms\n");
  assert.deepEqual(t, { a: "127.0.0.1:4222", b: "10.0.0.1", c: "2s", d: "1m30s", e: "500ms" });
});

void test("nested maps and arrays, comma or newline separated", () => {
  const t = parse(`
outer {
  inner { x: 1, y: [1, 2, 3] }
  list: [
    "a"
    b, c
    { k: v }
    [nested, 1]
  ]
  empty_map {}
  empty_list []
}
`);
  assert.deepEqual(t, {
    outer: {
      inner: { x: 1, y: [1, 2, 3] },
      list: ["a", "b", "c", { k: "v" }, ["nested", 1]],
      empty_map: {},
      empty_list: [],
    },
  });
});

void test("whole file wrapped in braces", () => {
  assert.deepEqual(parse("{\n  a: 1\n  b: 2\n}\n"), { a: 1, b: 2 });
});

void test("variables: enclosing block first, shadowing, then environment", () => {
  const t = parse(
    `
NAME: top
PORT: 1
blk {
  NAME: inner
  a: $NAME
  deeper { b: $NAME, c: $PORT, e: $FROM_ENV }
}
d: $NAME
`,
    { FROM_ENV: "4222", NAME: "env-loses" },
  );
  const blk = t["blk"] as ConfigMap;
  assert.equal(blk["a"], "inner");
  assert.deepEqual(blk["deeper"], { b: "inner", c: 1, e: 4222 });
  assert.equal(t["d"], "top");
  assert.ok(wasUsedAsVariable(t, "PORT"));
  assert.ok(!wasUsedAsVariable(t, "d"));
});

void test("environment values are parsed as config values", () => {
  const t = parse("a: $A\nb: $B\nc: $C\n", { A: "1KB", B: "true", C: "[1, 2]" });
  assert.deepEqual(t, { a: 1024, b: true, c: [1, 2] });
});

void test("undefined variable is an error with position", () => {
  const e = parseError("a: 1\nb:   $NOPE\n");
  assert.equal(e.line, 2);
  assert.equal(e.col, 6);
  assert.match(e.message, /^t\.conf:2:6: variable reference for 'NOPE' on line 2 can not be found$/);
});

void test("environment variable cycle is an error", () => {
  const e = parseError("a: $A\n", { A: "$B", B: "$A" });
  assert.match(e.message, /cycle/);
});

void test("bcrypt hashes are not variables", () => {
  const h = "$2a$11$W2zko751KUvVy59mUTWmpOdWjpEm5qhcCZRd05GjI/sSOT.xtiHyG";
  assert.equal(parse(`p: ${h}\n`)["p"], h);
});

void test("syntax error position: line and column", () => {
  const e = parseError("port: 4222\nauthorization {\n  user: foo\n  password: bar baz\n}\n");
  assert.equal(e.file, "t.conf");
  assert.equal(e.line, 4);
  assert.equal(e.col, 17);
  assert.match(e.message, /^t\.conf:4:17: /);
});

void test("more syntax errors", () => {
  assert.match(parseError("a: [1, 2\n").message, /t\.conf:1:4: .*']'/);
  assert.match(parseError("m {\n a: 1\n").message, /expected '}'/);
  assert.match(parseError('a: "open\n').message, /quoted string/);
  assert.match(parseError("a: .5\n").message, /floats must start with a digit/);
  assert.match(parseError("a: -x\n").message, /expected a digit/);
  assert.match(parseError("a:\nb: 1\n").message, /t\.conf:1:3: expected a value for key "a"/);
  assert.match(parseError(": 1\n").message, /unexpected key separator/);
  assert.match(parseError('a: "\\q"\n').message, /invalid escape/);
  assert.match(parseError("a: 99999999999999999999\n").message, /out of the range/);
});

void test("key positions are kept for maps and arrays", () => {
  const t = parse("a: 1\nm {\n    k: v\n}\nl: [\n  {x: 1}\n]\n");
  assert.deepEqual(positionOf(t, "a"), { file: "t.conf", line: 1, col: 1 });
  assert.deepEqual(positionOf(t["m"] as object, "k"), { file: "t.conf", line: 3, col: 5 });
  const l = t["l"] as object;
  assert.deepEqual(positionOf(l, 0), { file: "t.conf", line: 6, col: 3 });
});

void test("include is relative to the including file; nested includes", () => {
  const t = parseConfigFile(join(FIXTURES, "main.conf"), { BOB_PASS: "pw" });
  const auth = t["authorization"] as ConfigMap;
  assert.deepEqual(auth["users"], [
    { user: "alice", password: "s3cret" },
    { user: "bob", password: "pw" },
  ]);
  assert.equal(t["max_payload"], 2 * 1024 * 1024);
  // Included keys keep the included file's positions.
  const p = positionOf(t, "max_payload");
  assert.ok(p?.file.endsWith(join("sub", "limits.conf")));
  assert.equal(p?.line, 1);
});

void test("include inside a map merges into that map", () => {
  const dir = mkdtempSync(join(tmpdir(), "tsnats-conf-"));
  try {
    writeFileSync(join(dir, "js.conf"), "store_dir: /data\nmax_mem: 1K\n");
    writeFileSync(join(dir, "main.conf"), "jetstream {\n  include js.conf\n  domain: hub\n}\n");
    assert.deepEqual(parseConfigFile(join(dir, "main.conf"), {}), {
      jetstream: { store_dir: "/data", max_mem: 1000, domain: "hub" },
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

void test("missing include is an error at the include line", () => {
  try {
    parseConfigFile(join(FIXTURES, "include-missing.conf"), {});
    assert.fail("expected an error");
  } catch (err) {
    assert.ok(err instanceof ConfigError);
    assert.equal(err.line, 1);
    assert.match(err.message, /include-missing\.conf:1:1: error opening config file/);
  }
});

void test("include cycle is stopped", () => {
  const dir = mkdtempSync(join(tmpdir(), "tsnats-conf-"));
  try {
    writeFileSync(join(dir, "a.conf"), "include b.conf\n");
    writeFileSync(join(dir, "b.conf"), "include a.conf\n");
    assert.throws(() => parseConfigFile(join(dir, "a.conf"), {}), /include nesting/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

void test("durations in Go syntax", () => {
  assert.equal(parseDurationMs("2s"), 2000);
  assert.equal(parseDurationMs("1m30s"), 90_000);
  assert.equal(parseDurationMs("500ms"), 500);
  assert.equal(parseDurationMs("1h"), 3_600_000);
  assert.equal(parseDurationMs("1.5s"), 1500);
  assert.equal(parseDurationMs("0"), 0);
  assert.equal(parseDurationMs("-2s"), -2000);
  assert.equal(parseDurationMs("1500us"), 1.5);
  assert.throws(() => parseDurationMs("10"), /missing unit/);
  assert.throws(() => parseDurationMs("2x"), /invalid duration/);
  assert.throws(() => parseDurationMs(""), /invalid duration/);
});

void test("property: arbitrary input either parses or throws ConfigError", async () => {
  const fc = (await import("fast-check")).default;
  const alphabet = fc.constantFrom(..."ab1 \t\n:=;,{}[]\"'#/$\\-.KkBi()x".split(""));
  fc.assert(
    fc.property(fc.array(alphabet, { maxLength: 60 }), (chars) => {
      try {
        parseConfigText(chars.join(""), { file: "f", env: {} });
      } catch (err) {
        if (!(err instanceof ConfigError)) throw err;
        assert.ok(err.line >= 1 && err.col >= 1, err.message);
      }
    }),
    { numRuns: 3000, seed: 42 },
  );
});

void test("property: serialised trees parse back to themselves", async () => {
  const fc = (await import("fast-check")).default;
  const key = fc.stringMatching(/^[a-z][a-z0-9_]{0,8}$/).filter((k) => !["include", "true", "false", "yes", "no", "on", "off"].includes(k));
  const scalar = fc.oneof(
    fc.integer({ min: -1e9, max: 1e9 }),
    fc.boolean(),
    fc.string({ maxLength: 12 }).filter((s) => !/[\\"\n\r]/.test(s)),
  );
  const { tree } = fc.letrec((tie) => ({
    value: fc.oneof({ depthSize: "small" }, scalar, tie("tree"), fc.array(tie("value"), { maxLength: 4 })),
    tree: fc.dictionary(key, tie("value"), { maxKeys: 5 }),
  }));
  const enc = (v: unknown, pad: string): string => {
    if (Array.isArray(v)) return `[\n${v.map((x) => pad + "  " + enc(x, pad + "  ")).join(",\n")}\n${pad}]`;
    if (typeof v === "object" && v !== null) {
      return `{\n${Object.entries(v).map(([k, x]) => `${pad}  ${k} = ${enc(x, pad + "  ")}`).join("\n")}\n${pad}}`;
    }
    if (typeof v === "string") return JSON.stringify(v);
    return String(v);
  };
  fc.assert(
    fc.property(tree, (t) => {
      const text = Object.entries(t).map(([k, v]) => `${k}: ${enc(v, "")}`).join("\n");
      assert.deepEqual(parseConfigText(text, { env: {} }), JSON.parse(JSON.stringify(t)));
    }),
    { numRuns: 500, seed: 7 },
  );
});
