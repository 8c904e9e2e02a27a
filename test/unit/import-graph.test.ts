// The import graph of src/ (test/helpers/imports.ts): no cycles between files, and every
// import across layers is one that ARCHITECTURE.md's layer table allows.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { cycles, importGraph, layerOf } from "../helpers/imports.js";

// dist/test/unit -> repository root
const ROOT = join(fileURLToPath(new URL(".", import.meta.url)), "..", "..", "..");

/** Cycles tolerated for now (none): each entry would be the sorted list of files of one
 *  strongly connected component. */
const KNOWN_CYCLES: string[][] = [];

/** Layer imports that exist today but the table does not allow (being removed, issue 15). */
const KNOWN_LAYER_EDGES = new Set<string>([]);

/** Files that still import() a computed specifier (being removed, issue 15). */
const KNOWN_DYNAMIC: string[] = [];

/** Parses the "may import" table under ARCHITECTURE.md's "## Layers": rows `| layer | a, b |`. */
export function layerTable(md: string): Map<string, Set<string>> {
  const start = md.indexOf("## Layers");
  assert.ok(start >= 0, "ARCHITECTURE.md has a ## Layers section");
  const end = md.indexOf("\n## ", start + 3);
  const section = md.slice(start, end < 0 ? undefined : end);
  const table = new Map<string, Set<string>>();
  for (const line of section.split("\n")) {
    const m = /^\|\s*`?([a-z][a-z_-]*)\/?`?\s*\|\s*([^|]*)\|/.exec(line);
    if (m === null || m[1] === "layer") continue;
    const allowed = m[2]!
      .split(",")
      .map((s) => s.trim().replace(/[`/]/g, ""))
      .filter((s) => s !== "" && s !== "—" && s !== "-" && s !== "(none)");
    table.set(m[1]!, new Set(allowed));
  }
  return table;
}

const graph = importGraph(ROOT, "src");

void test("import graph: the helper sees the tree (sanity)", () => {
  assert.ok(graph.files.length > 50, `found ${graph.files.length} files`);
  assert.ok(graph.edges.length > 100);
  assert.ok(graph.files.includes("src/server/server.ts"));
  // A known edge is found.
  assert.ok(graph.adj.get("src/bin/server.ts")!.size > 0);
});

void test("import graph: no cycles in src/ (beyond the allow-listed ones)", () => {
  const found = cycles(graph.adj);
  const known = new Set(KNOWN_CYCLES.map((c) => [...c].sort().join(" ")));
  const unexpected = found.filter((c) => !known.has(c.join(" ")));
  assert.deepEqual(unexpected, [], `import cycles:\n${unexpected.map((c) => "  " + c.join(" -> ")).join("\n")}`);
});

void test("import graph: no import() of a computed specifier in src/", () => {
  assert.deepEqual([...graph.dynamicNonLiteral.keys()].filter((f) => !KNOWN_DYNAMIC.includes(f)), []);
});

void test("import graph: every import across layers is allowed by ARCHITECTURE.md's layer table", () => {
  const table = layerTable(readFileSync(join(ROOT, "ARCHITECTURE.md"), "utf8"));
  assert.ok(table.size >= 10, `layer table has ${table.size} rows`);
  const bad: string[] = [];
  const missing = new Set<string>();
  for (const f of graph.files) if (!table.has(layerOf(f))) missing.add(layerOf(f));
  assert.deepEqual([...missing], [], "layers missing from ARCHITECTURE.md's table");
  for (const e of graph.edges) {
    const a = layerOf(e.from);
    const b = layerOf(e.to);
    if (a === b) continue;
    if (!table.get(a)!.has(b) && !KNOWN_LAYER_EDGES.has(`${a}->${b}`)) bad.push(`${e.from} -> ${e.to} (${a} may not import ${b})`);
  }
  assert.deepEqual(bad, []);
});

void test("import graph: the layer table itself points one way (no cycle between layers)", () => {
  const table = layerTable(readFileSync(join(ROOT, "ARCHITECTURE.md"), "utf8"));
  const adj = new Map<string, Set<string>>();
  for (const [a, s] of table) adj.set(a, new Set([...s].filter((b) => table.has(b))));
  assert.deepEqual(cycles(adj), []);
});

void test("import graph: Tarjan finds a planted cycle and ignores a DAG", () => {
  const adj = new Map<string, Set<string>>([
    ["a", new Set(["b"])],
    ["b", new Set(["c"])],
    ["c", new Set(["a", "d"])],
    ["d", new Set(["e"])],
    ["e", new Set<string>()],
    ["f", new Set(["f"])],
  ]);
  assert.deepEqual(cycles(adj), [["a", "b", "c"], ["f"]]);
  assert.deepEqual(cycles(new Map([["x", new Set(["y"])], ["y", new Set<string>()]])), []);
});
