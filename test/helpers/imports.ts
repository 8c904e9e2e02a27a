// The import graph of src/: every relative import of every .ts file (static, `export … from`,
// `import type`, and `import("literal")`), as edges between repo-relative paths; strongly
// connected components by Tarjan's algorithm give the cycles.
import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve, sep } from "node:path";

export interface ImportEdge {
  from: string;
  to: string;
  /** Every import of `to` in `from` is `import type` / `export type`. */
  typeOnly: boolean;
}

export interface ImportGraph {
  files: string[];
  edges: ImportEdge[];
  /** from -> set of to */
  adj: Map<string, Set<string>>;
  /** `import(x)` where x is not a string literal: file -> count */
  dynamicNonLiteral: Map<string, number>;
}

function listTs(dir: string, out: string[]): void {
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) listTs(p, out);
    else if (name.endsWith(".ts") && !name.endsWith(".d.ts")) out.push(p);
  }
}

/** Strips comments but keeps strings (imports live in strings). Good enough for our sources. */
function stripComments(src: string): string {
  let out = "";
  let i = 0;
  const n = src.length;
  while (i < n) {
    const c = src[i];
    const d = src[i + 1];
    if (c === "/" && d === "/") {
      while (i < n && src[i] !== "\n") i++;
    } else if (c === "/" && d === "*") {
      i += 2;
      while (i < n && !(src[i] === "*" && src[i + 1] === "/")) i++;
      i += 2;
    } else if (c === '"' || c === "'" || c === "`") {
      const q = c;
      let j = i + 1;
      while (j < n && src[j] !== q) {
        if (src[j] === "\\") j++;
        j++;
      }
      out += src.slice(i, j + 1);
      i = j + 1;
    } else {
      out += c;
      i++;
    }
  }
  return out;
}

const STATIC_RE = /(?:^|[;\n}])\s*(import|export)\s+(type\s+)?([^'";]*?)\s*from\s*["']([^"']+)["']/g;
const BARE_RE = /(?:^|[;\n])\s*import\s+["']([^"']+)["']/g;
const DYN_RE = /\bimport\(\s*([^)]*?)\s*\)/g;

function resolveSpec(fromFile: string, spec: string, root: string): string | undefined {
  if (!spec.startsWith(".")) return undefined;
  let p = resolve(dirname(fromFile), spec);
  if (p.endsWith(".js")) p = p.slice(0, -3) + ".ts";
  else if (!p.endsWith(".ts")) p += ".ts";
  return relative(root, p).split(sep).join("/");
}

/** Builds the graph of `dir` (e.g. "src") under the repository `root`. */
export function importGraph(root: string, dir = "src"): ImportGraph {
  const abs: string[] = [];
  listTs(join(root, dir), abs);
  const files = abs.map((f) => relative(root, f).split(sep).join("/")).sort();
  const edgeMap = new Map<string, ImportEdge>();
  const dynamicNonLiteral = new Map<string, number>();
  const add = (from: string, to: string, typeOnly: boolean): void => {
    const key = `${from}\0${to}`;
    const e = edgeMap.get(key);
    if (e === undefined) edgeMap.set(key, { from, to, typeOnly });
    else if (!typeOnly) e.typeOnly = false;
  };
  for (const f of files) {
    const file = join(root, f);
    const src = stripComments(readFileSync(file, "utf8"));
    for (const m of src.matchAll(STATIC_RE)) {
      const clause = m[3] ?? "";
      // `import { type A, type B } from` is type-only too.
      const inner = /^\{([^}]*)\}$/.exec(clause.trim());
      const allTypeNames =
        inner !== null &&
        inner[1]!.split(",").map((s) => s.trim()).filter((s) => s !== "").every((s) => s.startsWith("type "));
      const to = resolveSpec(file, m[4]!, root);
      if (to !== undefined) add(f, to, m[2] !== undefined || allTypeNames);
    }
    for (const m of src.matchAll(BARE_RE)) {
      const to = resolveSpec(file, m[1]!, root);
      if (to !== undefined) add(f, to, false);
    }
    for (const m of src.matchAll(DYN_RE)) {
      const arg = m[1]!;
      const lit = /^["']([^"']+)["']$/.exec(arg);
      if (lit === null) {
        dynamicNonLiteral.set(f, (dynamicNonLiteral.get(f) ?? 0) + 1);
        continue;
      }
      const to = resolveSpec(file, lit[1]!, root);
      if (to !== undefined) add(f, to, false);
    }
  }
  const edges = [...edgeMap.values()];
  const adj = new Map<string, Set<string>>();
  for (const f of files) adj.set(f, new Set());
  for (const e of edges) {
    let s = adj.get(e.from);
    if (s === undefined) adj.set(e.from, (s = new Set()));
    s.add(e.to);
  }
  return { files, edges, adj, dynamicNonLiteral };
}

/** Tarjan's strongly connected components; returns those of size > 1 (and self-loops), sorted. */
export function cycles(adj: Map<string, Set<string>>): string[][] {
  let index = 0;
  const idx = new Map<string, number>();
  const low = new Map<string, number>();
  const onStack = new Set<string>();
  const stack: string[] = [];
  const out: string[][] = [];
  // Iterative to stay clear of deep recursion.
  for (const start of adj.keys()) {
    if (idx.has(start)) continue;
    const work: Array<{ v: string; it: Iterator<string> }> = [];
    const visit = (v: string): void => {
      idx.set(v, index);
      low.set(v, index);
      index++;
      stack.push(v);
      onStack.add(v);
      work.push({ v, it: (adj.get(v) ?? new Set<string>()).values() });
    };
    visit(start);
    while (work.length > 0) {
      const top = work[work.length - 1]!;
      const nx = top.it.next();
      if (!nx.done) {
        const w = nx.value;
        if (!idx.has(w)) visit(w);
        else if (onStack.has(w)) low.set(top.v, Math.min(low.get(top.v)!, idx.get(w)!));
        continue;
      }
      work.pop();
      if (work.length > 0) {
        const parent = work[work.length - 1]!.v;
        low.set(parent, Math.min(low.get(parent)!, low.get(top.v)!));
      }
      if (low.get(top.v) === idx.get(top.v)) {
        const comp: string[] = [];
        let w: string;
        do {
          w = stack.pop()!;
          onStack.delete(w);
          comp.push(w);
        } while (w !== top.v);
        if (comp.length > 1 || adj.get(top.v)?.has(top.v) === true) out.push(comp.sort());
      }
    }
  }
  return out.sort((a, b) => (a[0]! < b[0]! ? -1 : 1));
}

/** The layer of a src file: its first directory under src/ ("server", "cluster", …), or the file name for top-level files. */
export function layerOf(file: string): string {
  const parts = file.split("/");
  if (parts[0] !== "src") return parts[0]!;
  return parts.length > 2 ? parts[1]! : parts[1]!.replace(/\.ts$/, "");
}
