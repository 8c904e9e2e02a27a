// nats-server configuration file syntax -> a plain JS tree.
//
// Exported API:
//   parseConfigText(text, { file?, env?, baseDir? }) -> ConfigMap   (throws ConfigError)
//   parseConfigFile(path, env?)                       -> ConfigMap   (throws ConfigError)
//   positionOf(container, key)  -> ConfigPos | undefined  where a key (or array index) was written
//   wasUsedAsVariable(map, key) -> boolean  a key was referenced as $key (nats-server then does not
//                                            report it as an unknown field)
//   ConfigError: message is "file:line:col: reason"; fields file, line, col, reason.
//
// Values: maps are plain objects, arrays are arrays, integers and floats are numbers (sizes already
// multiplied out), booleans are booleans, everything else is a string. Durations stay strings
// ("2s"); to-options.ts interprets them. Datetimes are left as strings.
//
// Syntax, following nats-server conf/lex.go + conf/parse.go (behaviour, not code):
//   key: value | key = value | key value; keys may be quoted.
//   Entries end at a newline, ';' or ','. Comments start with '#' or '//'.
//   Maps {...}; arrays [...] with ',' or newline between items.
//   "double quoted" (escapes \t \n \r \" \\ \xHH), 'single quoted' (raw), or unquoted strings.
//   true/false/yes/no/on/off (any case) are booleans when unquoted.
//   Integers may carry a size suffix: k/m/g/t/p/e = powers of 1000; kb/ki/kib (etc.) = powers
//   of 1024. So 1K = 1000, 1KB = 1KiB = 1024. Note that an unquoted "1m" is therefore a
//   million, not a minute: durations should be quoted, as nats-server's docs say.
//   $NAME resolves from the enclosing maps (innermost first, keys defined before the
//   reference), then from the environment (whose value is itself parsed as a config value);
//   undefined is an error. "$2a$..." (a bcrypt hash) is kept as a literal string.
//   include "file" (or include file) merges that file's keys, relative to the including file.

import { readFileSync } from "node:fs";
import { dirname, resolve } from "node:path";

export type ConfigValue = string | number | boolean | ConfigValue[] | ConfigMap;
export interface ConfigMap {
  [key: string]: ConfigValue;
}

export interface ConfigPos {
  file: string;
  line: number; // 1-based
  col: number; // 1-based
}

export class ConfigError extends Error {
  readonly code = "CONFIG_ERROR";
  readonly file: string;
  readonly line: number;
  readonly col: number;
  readonly reason: string;
  constructor(pos: ConfigPos | undefined, reason: string) {
    super(pos ? `${formatPos(pos)}: ${reason}` : reason);
    this.name = "ConfigError";
    this.file = pos?.file ?? "";
    this.line = pos?.line ?? 0;
    this.col = pos?.col ?? 0;
    this.reason = reason;
  }
}

export function formatPos(pos: ConfigPos): string {
  return `${pos.file}:${pos.line}:${pos.col}`;
}

export interface ParseOptions {
  /** Name used in positions and as the base for relative includes. */
  file?: string;
  /** Environment for $VAR fallback; defaults to process.env. */
  env?: Record<string, string | undefined>;
  /** Directory includes are relative to; defaults to dirname(file) or the cwd. */
  baseDir?: string;
}

// Side tables, so the tree itself stays plain JSON-like data.
const positions = new WeakMap<object, Map<string, ConfigPos>>();
const usedVars = new WeakMap<object, Set<string>>();

export function positionOf(container: object, key: string | number): ConfigPos | undefined {
  return positions.get(container)?.get(String(key));
}

export function wasUsedAsVariable(map: object, key: string): boolean {
  return usedVars.get(map)?.has(key) ?? false;
}

function setPos(container: object, key: string, pos: ConfigPos): void {
  let m = positions.get(container);
  if (!m) {
    m = new Map();
    positions.set(container, m);
  }
  m.set(key, pos);
}

const MAX_INCLUDE_DEPTH = 32;

export function parseConfigText(text: string, opts: ParseOptions = {}): ConfigMap {
  const file = opts.file ?? "config";
  const baseDir = opts.baseDir ?? (opts.file ? dirname(resolve(opts.file)) : process.cwd());
  const p = new Parser(text, file, baseDir, opts.env ?? process.env, 0, new Set());
  return p.parseDocument();
}

export function parseConfigFile(path: string, env?: Record<string, string | undefined>): ConfigMap {
  return parseFileAt(path, env ?? process.env, 0, new Set());
}

function parseFileAt(
  path: string,
  env: Record<string, string | undefined>,
  depth: number,
  envRefs: Set<string>,
  from?: ConfigPos,
): ConfigMap {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (err) {
    throw new ConfigError(from, `error opening config file: ${(err as Error).message}`);
  }
  return new Parser(text, path, dirname(resolve(path)), env, depth, envRefs).parseDocument();
}

const BOOLS: Record<string, boolean> = { true: true, yes: true, on: true, false: false, no: false, off: false };

// Size suffix multipliers; decimal for the bare letter, binary for b / i / ib (parse.go's rule).
const SIZE_RE = /^(-?\d+)([kmgtpe])(b|i|ib)?$/i;
const POWERS: Record<string, number> = { k: 1, m: 2, g: 3, t: 4, p: 5, e: 6 };
const BCRYPT_RE = /^2[aby]\$/;

function isSpace(c: string): boolean {
  return c === " " || c === "\t";
}
function isNL(c: string): boolean {
  return c === "\n" || c === "\r";
}
// Characters that end an unquoted value (lexString's set, also used for numbers here).
function endsUnquoted(c: string): boolean {
  return c === "" || isSpace(c) || isNL(c) || c === ";" || c === "," || c === "]" || c === "}";
}

type Frame = ConfigMap;

class Parser {
  private i = 0;
  private line = 1;
  private lineStart = 0;
  // Maps being built, outermost first: variable lookup walks it from the end.
  private readonly scopes: Frame[] = [];

  constructor(
    private readonly src: string,
    private readonly file: string,
    private readonly baseDir: string,
    private readonly env: Record<string, string | undefined>,
    private readonly depth: number,
    // Environment variables currently being expanded, to catch $A -> $B -> $A cycles.
    private readonly envRefs: Set<string>,
  ) {}

  parseDocument(): ConfigMap {
    const root: ConfigMap = {};
    this.skipBlank();
    // nats-server accepts a whole file wrapped in one pair of braces.
    if (this.peek() === "{") {
      this.advance();
      this.parseEntries(root, "}");
    } else {
      this.parseEntries(root, "");
    }
    this.skipBlank();
    if (this.i < this.src.length) this.fail(`unexpected '${this.peek()}' after the end of the configuration`);
    return root;
  }

  // ---- low-level cursor ----
  private peek(off = 0): string {
    return this.src[this.i + off] ?? "";
  }
  private advance(): string {
    const c = this.src[this.i] ?? "";
    this.i++;
    if (c === "\n") {
      this.line++;
      this.lineStart = this.i;
    }
    return c;
  }
  private pos(): ConfigPos {
    return { file: this.file, line: this.line, col: this.i - this.lineStart + 1 };
  }
  private fail(reason: string, at?: ConfigPos): never {
    throw new ConfigError(at ?? this.pos(), reason);
  }
  private atComment(): boolean {
    const c = this.peek();
    return c === "#" || (c === "/" && this.peek(1) === "/");
  }
  private skipComment(): void {
    while (this.i < this.src.length && !isNL(this.peek())) this.advance();
  }
  private skipSpaces(): void {
    while (isSpace(this.peek())) this.advance();
  }
  /** Whitespace, newlines and comments. */
  private skipBlank(): void {
    for (;;) {
      const c = this.peek();
      if (isSpace(c) || isNL(c)) this.advance();
      else if (this.atComment()) this.skipComment();
      else return;
    }
  }

  // ---- entries ----
  /** Entries of a map (or the top level) until `close` ("}" or "" for end of input). */
  private parseEntries(target: ConfigMap, close: string): void {
    this.scopes.push(target);
    for (;;) {
      this.skipBlank();
      // Stray separators between entries are harmless in nats-server at top level.
      while (this.peek() === ";" || (close === "" && this.peek() === ",")) {
        this.advance();
        this.skipBlank();
      }
      const c = this.peek();
      if (c === "") {
        if (close !== "") this.fail("unexpected end of input inside a map, expected '}'");
        break;
      }
      if (c === close) {
        this.advance();
        break;
      }
      if (c === "}" || c === "]" || c === ",") this.fail(`unexpected '${c}'`);
      this.parseEntry(target);
      this.endEntry(close);
    }
    this.scopes.pop();
  }

  /** After a value: spaces, then a comment, newline, ';', ',', the closer or end of input. */
  private endEntry(close: string): void {
    this.skipSpaces();
    const c = this.peek();
    if (this.atComment()) return this.skipComment();
    if (isNL(c) || c === ";" || c === ",") {
      this.advance();
      return;
    }
    if (c === "" || (close !== "" && c === close)) return;
    const where = close === "" ? "top-level" : "map";
    this.fail(`expected a ${where} value to end with a new line, comment or ';', but got '${c}' instead`);
  }

  private parseEntry(target: ConfigMap): void {
    const keyPos = this.pos();
    const c = this.peek();
    if (c === ":" || c === "=") this.fail(`unexpected key separator '${c}'`);
    let key: string;
    let quoted = false;
    if (c === '"' || c === "'") {
      quoted = true;
      this.advance();
      const start = this.i;
      while (this.peek() !== c) {
        if (this.peek() === "" || isNL(this.peek())) this.fail("unterminated quoted key", keyPos);
        this.advance();
      }
      key = this.src.slice(start, this.i);
      this.advance();
    } else {
      const start = this.i;
      while (this.peek() !== "" && !isSpace(this.peek()) && !isNL(this.peek()) && this.peek() !== ":" && this.peek() !== "=") {
        this.advance();
      }
      key = this.src.slice(start, this.i);
    }
    if (!quoted && key.toLowerCase() === "include" && isSpace(this.peek())) {
      this.parseInclude(target, keyPos);
      return;
    }
    this.skipSpaces();
    if (this.peek() === ":" || this.peek() === "=") {
      this.advance();
      this.skipSpaces();
    }
    const n = this.peek();
    if (n === "" || isNL(n) || this.atComment()) this.fail(`expected a value for key "${key}"`);
    const value = this.parseValue();
    target[key] = value;
    setPos(target, key, keyPos);
  }

  private parseInclude(target: ConfigMap, at: ConfigPos): void {
    this.skipSpaces();
    const c = this.peek();
    let name: string;
    if (c === '"' || c === "'") {
      this.advance();
      const start = this.i;
      while (this.peek() !== c) {
        if (this.peek() === "" || isNL(this.peek())) this.fail("unterminated include file name", at);
        this.advance();
      }
      name = this.src.slice(start, this.i);
      this.advance();
    } else {
      if (c === "" || isNL(c)) this.fail("expected include value but found new line");
      if (c === "{" || c === "[" || c === "-" || /\d/.test(c)) this.fail(`expected include file name but found '${c}'`);
      const start = this.i;
      while (!endsUnquoted(this.peek())) this.advance();
      name = this.src.slice(start, this.i);
    }
    if (this.depth >= MAX_INCLUDE_DEPTH) this.fail(`include nesting deeper than ${MAX_INCLUDE_DEPTH} (a cycle?)`, at);
    const path = resolve(this.baseDir, name);
    let sub: ConfigMap;
    try {
      sub = parseFileAt(path, this.env, this.depth + 1, this.envRefs, at);
    } catch (err) {
      if (err instanceof ConfigError && err.file === path) throw err;
      const reason = err instanceof ConfigError ? err.message : String(err);
      throw new ConfigError(at, `error parsing include file '${name}': ${reason}`);
    }
    for (const [k, v] of Object.entries(sub)) {
      target[k] = v;
      const p = positionOf(sub, k);
      if (p) setPos(target, k, p);
    }
  }

  // ---- values ----
  private parseValue(): ConfigValue {
    const c = this.peek();
    switch (c) {
      case "[":
        return this.parseArray();
      case "{": {
        this.advance();
        const m: ConfigMap = {};
        this.parseEntries(m, "}");
        return m;
      }
      case '"':
        return this.parseDqString();
      case "'":
        return this.parseSqString();
      case "(":
        return this.parseBlockString();
      case ".":
        return this.fail("floats must start with a digit");
      default:
        return this.parseBare();
    }
  }

  private parseArray(): ConfigValue[] {
    const open = this.pos();
    this.advance();
    const arr: ConfigValue[] = [];
    for (;;) {
      this.skipBlank();
      const c = this.peek();
      if (c === "") this.fail("unexpected end of input inside an array, expected ']'", open);
      if (c === "]") {
        this.advance();
        return arr;
      }
      if (c === ",") this.fail("unexpected array value terminator ','");
      const at = this.pos();
      const v = this.parseValue();
      setPos(arr, String(arr.length), at);
      arr.push(v);
      this.skipSpaces();
      const e = this.peek();
      if (this.atComment()) this.skipComment();
      else if (e === "," || isNL(e)) this.advance();
      else if (e === "]") continue;
      else if (e === "") continue;
      else this.fail(`expected ',' or ']' in array, but got '${e}' instead`);
    }
  }

  private parseDqString(): string {
    const start = this.pos();
    this.advance();
    let out = "";
    for (;;) {
      const c = this.advance();
      if (c === "") this.fail("unexpected end of input inside a quoted string", start);
      if (c === '"') return out;
      if (c !== "\\") {
        out += c;
        continue;
      }
      const e = this.advance();
      switch (e) {
        case "t":
          out += "\t";
          break;
        case "n":
          out += "\n";
          break;
        case "r":
          out += "\r";
          break;
        case '"':
          out += '"';
          break;
        case "\\":
          out += "\\";
          break;
        case "x": {
          const hex = this.src.slice(this.i, this.i + 2);
          if (!/^[0-9a-fA-F]{2}$/.test(hex)) this.fail(`expected two hexadecimal digits after '\\x', but got '${hex}'`);
          this.advance();
          this.advance();
          out += String.fromCharCode(parseInt(hex, 16));
          break;
        }
        default:
          this.fail(`invalid escape character '${e}'; allowed: \\xXX, \\t, \\n, \\r, \\", \\\\`);
      }
    }
  }

  private parseSqString(): string {
    const start = this.pos();
    this.advance();
    const from = this.i;
    while (this.peek() !== "'") {
      if (this.peek() === "") this.fail("unexpected end of input inside a quoted string", start);
      this.advance();
    }
    const s = this.src.slice(from, this.i);
    this.advance();
    return s;
  }

  // "( ... \n)" : raw multi-line text ending with ')' alone at the start of a line.
  private parseBlockString(): string {
    const start = this.pos();
    this.advance();
    const from = this.i;
    for (;;) {
      const c = this.peek();
      if (c === "") this.fail("unexpected end of input inside a block", start);
      if (c === ")" && this.i > from && this.src[this.i - 1] === "\n") {
        const s = this.src.slice(from, this.i - 1);
        this.advance();
        return s;
      }
      this.advance();
    }
  }

  private parseBare(): ConfigValue {
    const at = this.pos();
    const from = this.i;
    while (!endsUnquoted(this.peek())) {
      // A quote ends an unquoted string in nats-server's lexer; keep that.
      if (this.peek() === "'" || this.peek() === '"') break;
      this.advance();
    }
    const tok = this.src.slice(from, this.i);
    if (tok === "") this.fail(`expected a value but got '${this.peek()}'`);
    const first = tok[0] ?? "";
    if (first === "-" && !/^-\d/.test(tok)) this.fail(`expected a digit but got '${tok[1] ?? ""}'`, at);
    if (/^-?\d/.test(tok)) return this.numberish(tok, at);
    const b = BOOLS[tok.toLowerCase()];
    if (b !== undefined) return b;
    if (first === "$") return this.variable(tok.slice(1), at);
    return tok;
  }

  private numberish(tok: string, at: ConfigPos): ConfigValue {
    if (/^-?\d+$/.test(tok)) return this.safeInt(Number(tok), tok, at);
    if (/^-?\d+\.\d+$/.test(tok)) return Number(tok);
    const m = SIZE_RE.exec(tok);
    if (m) {
      const power = POWERS[(m[2] ?? "").toLowerCase()] ?? 0;
      const base = m[3] ? 1024 : 1000;
      return this.safeInt(Number(m[1]) * base ** power, tok, at);
    }
    if (/^-?\d+[kmgtpe][bi]+$/i.test(tok)) this.fail(`invalid size suffix in '${tok}'`, at);
    if (/^-?\d+\.$/.test(tok) || /^-?\d+\.[^\d.]/.test(tok)) this.fail(`floats must have a digit after the '.': '${tok}'`, at);
    // IP addresses, "host:port", "2s" and the like stay strings, as in nats-server.
    return tok;
  }

  private safeInt(n: number, tok: string, at: ConfigPos): number {
    if (!Number.isSafeInteger(n)) this.fail(`integer '${tok}' is out of the range`, at);
    return n;
  }

  private variable(name: string, at: ConfigPos): ConfigValue {
    if (BCRYPT_RE.test(name)) return "$" + name;
    if (name === "") this.fail("empty variable reference '$'", at);
    for (let s = this.scopes.length - 1; s >= 0; s--) {
      const scope = this.scopes[s];
      if (scope && Object.prototype.hasOwnProperty.call(scope, name)) {
        let used = usedVars.get(scope);
        if (!used) {
          used = new Set();
          usedVars.set(scope, used);
        }
        used.add(name);
        return scope[name] as ConfigValue;
      }
    }
    const raw = this.env[name];
    if (raw === undefined) {
      this.fail(`variable reference for '${name}' on line ${at.line} can not be found`, at);
    }
    if (this.envRefs.has(name)) this.fail(`variable reference cycle for '${name}'`, at);
    this.envRefs.add(name);
    try {
      // nats-server parses the environment value as a config value, so "4222" is a number.
      const sub = new Parser(`pk=${raw}`, `env:${name}`, this.baseDir, this.env, this.depth, this.envRefs).parseDocument();
      const v = sub["pk"];
      if (v === undefined) this.fail(`variable reference for '${name}' has no value`, at);
      return v;
    } catch (err) {
      if (err instanceof ConfigError && err.file.startsWith("env:")) {
        this.fail(`variable reference for '${name}' on line ${at.line} could not be parsed: ${err.reason}`, at);
      }
      throw err;
    } finally {
      this.envRefs.delete(name);
    }
  }
}
