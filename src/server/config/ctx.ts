// The config mapping's shared context: Ctx (errors and warnings with positions, typed
// field readers) and the small helpers every block's mapping uses.

import type { OptionsPatch } from "../options.js";
import { ConfigError, type ConfigMap, type ConfigPos, type ConfigValue, positionOf, wasUsedAsVariable } from "./parser.js";
import { parseDurationMs } from "./duration.js";

export class Ctx {
  readonly errors: ConfigError[] = [];
  readonly warnings: string[] = [];
  constructor(readonly file: string) {}

  pos(container: object, key: string | number): ConfigPos {
    return positionOf(container, key) ?? { file: this.file, line: 0, col: 0 };
  }
  error(container: object, key: string | number, reason: string): void {
    this.errors.push(new ConfigError(this.pos(container, key), reason));
  }
  warn(container: object, key: string | number, reason: string): void {
    this.warnings.push(new ConfigError(this.pos(container, key), reason).message);
  }
  unknown(map: ConfigMap, key: string): void {
    if (!wasUsedAsVariable(map, key)) this.error(map, key, `unknown field "${key}"`);
  }
  ignored(map: ConfigMap, key: string, where: string): void {
    this.warn(map, key, `field "${where}${key}" is not supported by tsnats and is ignored`);
  }
  /** A setting tsnats does not implement: a startup error, never a warning. */
  refused(map: ConfigMap, key: string, where: string, why: string): void {
    this.error(map, key, `field "${where}${key}" is not supported: ${why}; refusing to start rather than ignore it`);
  }

  // ---- typed readers: undefined (after recording an error) on a wrong type ----
  str(m: ConfigMap, k: string): string | undefined {
    const v = m[k];
    if (typeof v === "string") return v;
    // A secret of the wrong type (pass: 12345) is not echoed back into the error (or the log).
    this.error(m, k, `expected a string for "${k}", got ${SECRET_FIELD.test(k) ? typeName(v) : describe(v)}`);
    return undefined;
  }
  int(m: ConfigMap, k: string): number | undefined {
    const v = m[k];
    if (typeof v === "number" && Number.isInteger(v)) return v;
    this.error(m, k, `expected an integer for "${k}", got ${describe(v)}`);
    return undefined;
  }
  bool(m: ConfigMap, k: string): boolean | undefined {
    const v = m[k];
    if (typeof v === "boolean") return v;
    this.error(m, k, `expected a boolean for "${k}", got ${describe(v)}`);
    return undefined;
  }
  /** An integer (already unit-expanded by the parser) or a size string like "1GB". */
  size(m: ConfigMap, k: string): number | undefined {
    const v = m[k];
    if (typeof v === "number" && Number.isInteger(v)) return v;
    if (typeof v === "string") {
      const n = parseSizeString(v);
      if (n !== undefined) return n;
    }
    this.error(m, k, `expected a size for "${k}" (like 1024, 1K, 1MB), got ${describe(v)}`);
    return undefined;
  }
  /** A duration string, or a number of seconds (with nats-server's warning). */
  durationMs(m: ConfigMap, k: string): number | undefined {
    const v = m[k];
    if (typeof v === "string") {
      try {
        return parseDurationMs(v);
      } catch (err) {
        this.error(m, k, `error parsing ${k}: ${(err as Error).message}`);
        return undefined;
      }
    }
    if (typeof v === "number") {
      this.warn(m, k, `invalid use of field "${k}": ${k} should be converted to a duration`);
      return v * 1000;
    }
    this.error(m, k, `expected a duration for "${k}" (like "2s"), got ${describe(v)}`);
    return undefined;
  }
  map(m: ConfigMap, k: string): ConfigMap | undefined {
    const v = m[k];
    if (isMap(v)) return v;
    this.error(m, k, `expected a map for "${k}", got ${describe(v)}`);
    return undefined;
  }
}

export function isMap(v: ConfigValue | undefined): v is ConfigMap {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** Fields whose values are secrets: errors name their type only. */
export const SECRET_FIELD = /^(pass|password|token|auth_token|key|ek|encryption_key|prev_key|prev_ek|prev_encryption_key|seed|nkey_seed)$/i;

export function typeName(v: ConfigValue | undefined): string {
  if (Array.isArray(v)) return "an array";
  if (isMap(v)) return "a map";
  return typeof v;
}

export function describe(v: ConfigValue | undefined): string {
  if (Array.isArray(v)) return "an array";
  if (isMap(v)) return "a map";
  if (typeof v === "string") return `string "${v}"`;
  return `${typeof v} ${String(v)}`;
}

// Size given as a string ("1G", "512M"): nats-server's getStorageSize reads the letter as a
// power of 1024 (unlike an unquoted 1G, which the parser reads as 10^9). "1GB"/"1GiB" are
// accepted too, with the same binary meaning.
export function parseSizeString(s: string): number | undefined {
  const m = /^\s*(\d+)\s*(?:([kmgtpe])(b|i|ib)?)?\s*$/i.exec(s);
  if (!m) return undefined;
  const powers: Record<string, number> = { k: 1, m: 2, g: 3, t: 4, p: 5, e: 6 };
  const p = m[2] ? (powers[m[2].toLowerCase()] ?? 0) : 0;
  return Number(m[1]) * 1024 ** p;
}

/** "host:port", "[v6]:port", ":port" or a bare port number. */
export function hostPort(ctx: Ctx, m: ConfigMap, k: string): { host?: string; port?: number } {
  const v = m[k];
  if (typeof v === "number" && Number.isInteger(v)) return { port: v };
  if (typeof v !== "string") {
    ctx.error(m, k, `expected "host:port" for "${k}", got ${describe(v)}`);
    return {};
  }
  const r = /^\[([^\]]*)\]:(-?\d+)$/.exec(v) ?? /^([^:]*):(-?\d+)$/.exec(v);
  if (!r) {
    ctx.error(m, k, `could not parse address string "${v}" for "${k}": expected "host:port"`);
    return {};
  }
  const out: { host?: string; port?: number } = { port: Number(r[2]) };
  if (r[1]) out.host = r[1];
  return out;
}

export function set<K extends keyof OptionsPatch>(patch: OptionsPatch, key: K, v: OptionsPatch[K] | undefined): void {
  if (v !== undefined) patch[key] = v;
}

/** A string or an array of strings (nats-server parseStringArray). */
export function stringList(ctx: Ctx, m: ConfigMap, k: string, what: string): string[] | undefined {
  const v = m[k];
  if (typeof v === "string") return [v];
  if (!Array.isArray(v)) {
    ctx.error(m, k, `error parsing ${what}: expected a string or an array of strings, got ${describe(v)}`);
    return undefined;
  }
  const out: string[] = [];
  v.forEach((x, i) => {
    if (typeof x === "string") out.push(x);
    else ctx.error(v, i, `error parsing ${what}: unsupported type in array ${describe(x)}`);
  });
  return out;
}
