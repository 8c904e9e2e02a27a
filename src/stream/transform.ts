// Subject transforms (ADR-30/36): a source pattern with wildcards and a destination that
// may reference them as $n / {{wildcard(n)}} or through the mapping functions
// partition, split, splitfromleft, splitfromright, slicefromleft, slicefromright.
// Used by stream subject_transform, mirror/source subject_transforms and republish.

import { isValidSubject, subjectMatches } from "../subjects/subject.js";

type DestPart =
  | { kind: "lit"; text: string }
  | { kind: "wc"; idx: number }
  | { kind: "fwc" }
  | { kind: "partition"; buckets: number; idxs: number[] }
  | { kind: "split"; idx: number; delim: string }
  | { kind: "splitLeft" | "splitRight" | "sliceLeft" | "sliceRight"; idx: number; n: number };

export class TransformError extends Error {}

function fnv1a32(s: string): number {
  let h = 0x811c9dc5;
  const b = Buffer.from(s, "utf8");
  for (let i = 0; i < b.length; i++) {
    h ^= b[i]!;
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h >>> 0;
}

function parseIntArg(s: string | undefined, what: string): number {
  const t = (s ?? "").trim();
  if (!/^-?\d+$/.test(t)) throw new TransformError(`invalid mapping destination: bad ${what} argument '${t}'`);
  return Number(t);
}

export class SubjectTransform {
  readonly src: string;
  readonly dest: string;
  private readonly srcTokens: string[];
  /** Token positions (in the source) of each '*' wildcard, 1-based order. */
  private readonly wcPos: number[];
  private readonly parts: DestPart[];
  private readonly identity: boolean;

  private constructor(src: string, dest: string) {
    this.src = src === "" ? ">" : src;
    this.dest = dest;
    this.srcTokens = this.src.split(".");
    this.wcPos = [];
    this.srcTokens.forEach((t, i) => {
      if (t === "*") this.wcPos.push(i);
    });
    this.identity = dest === "" || dest === this.src;
    this.parts = this.identity ? [] : this.parseDest(dest);
  }

  /** Throws TransformError (message in nats-server's spirit) when invalid. */
  static create(src: string, dest: string): SubjectTransform {
    const s = src === "" ? ">" : src;
    if (!isValidSubject(s)) throw new TransformError(`invalid source subject '${src}'`);
    return new SubjectTransform(src, dest);
  }

  private parseDest(dest: string): DestPart[] {
    // Split on '.' outside of {{ }} (split() takes a delimiter that may be '.').
    const toks: string[] = [];
    let cur = "";
    let depth = 0;
    for (let i = 0; i < dest.length; i++) {
      const c = dest[i]!;
      if (dest.startsWith("{{", i)) {
        depth++;
        cur += "{{";
        i++;
        continue;
      }
      if (dest.startsWith("}}", i) && depth > 0) {
        depth--;
        cur += "}}";
        i++;
        continue;
      }
      if (c === "." && depth === 0) {
        toks.push(cur);
        cur = "";
        continue;
      }
      cur += c;
    }
    toks.push(cur);
    const nwc = this.wcPos.length;
    const checkIdx = (n: number): number => {
      if (n < 1 || n > nwc) throw new TransformError(`invalid mapping destination: wildcard index ${n} out of range`);
      return n;
    };
    const out: DestPart[] = [];
    toks.forEach((t, i) => {
      if (t.length === 0 || /\s/.test(t)) throw new TransformError(`invalid mapping destination: invalid subject '${dest}'`);
      if (t === ">") {
        if (i !== toks.length - 1 || this.srcTokens[this.srcTokens.length - 1] !== ">") {
          throw new TransformError("invalid mapping destination: full wildcard must be last and in the source");
        }
        out.push({ kind: "fwc" });
        return;
      }
      if (t === "*") throw new TransformError("invalid mapping destination: wildcard not allowed in destination");
      const dollar = /^\$(\d+)$/.exec(t);
      if (dollar) {
        out.push({ kind: "wc", idx: checkIdx(Number(dollar[1])) });
        return;
      }
      const fn = /^\{\{\s*([A-Za-z]+)\s*\((.*)\)\s*\}\}$/.exec(t);
      if (!fn) {
        if (t.includes("{{") || t.includes("}}")) throw new TransformError(`invalid mapping destination: '${t}'`);
        out.push({ kind: "lit", text: t });
        return;
      }
      const name = fn[1]!.toLowerCase();
      const rawArgs = fn[2]!;
      const args = rawArgs.split(",").map((a) => a.trim());
      switch (name) {
        case "wildcard":
          if (args.length !== 1) throw new TransformError("invalid mapping destination: wildcard takes one argument");
          out.push({ kind: "wc", idx: checkIdx(parseIntArg(args[0], "wildcard")) });
          return;
        case "partition": {
          const buckets = parseIntArg(args[0], "partition");
          if (buckets <= 0) throw new TransformError("invalid mapping destination: partition count must be > 0");
          const idxs = args.slice(1).map((a) => checkIdx(parseIntArg(a, "partition")));
          out.push({ kind: "partition", buckets, idxs });
          return;
        }
        case "split": {
          // The delimiter is everything after the first comma (may itself be ',').
          const comma = rawArgs.indexOf(",");
          if (comma < 0) throw new TransformError("invalid mapping destination: split takes two arguments");
          const idx = checkIdx(parseIntArg(rawArgs.slice(0, comma), "split"));
          const delim = rawArgs.slice(comma + 1).trim();
          if (delim.length === 0) throw new TransformError("invalid mapping destination: split delimiter empty");
          out.push({ kind: "split", idx, delim });
          return;
        }
        case "splitfromleft":
        case "splitfromright":
        case "slicefromleft":
        case "slicefromright": {
          if (args.length !== 2) throw new TransformError(`invalid mapping destination: ${name} takes two arguments`);
          const idx = checkIdx(parseIntArg(args[0], name));
          const n = parseIntArg(args[1], name);
          if (n <= 0) throw new TransformError(`invalid mapping destination: ${name} position must be > 0`);
          const kind =
            name === "splitfromleft"
              ? "splitLeft"
              : name === "splitfromright"
                ? "splitRight"
                : name === "slicefromleft"
                  ? "sliceLeft"
                  : "sliceRight";
          out.push({ kind, idx, n });
          return;
        }
        default:
          throw new TransformError(`invalid mapping destination: unknown function '${name}'`);
      }
    });
    return out;
  }

  /** Does the source pattern match this subject? */
  matches(subject: string): boolean {
    return subjectMatches(this.src, subject);
  }

  /** The transformed subject, or null when the subject does not match the source. */
  apply(subject: string): string | null {
    if (!subjectMatches(this.src, subject)) return null;
    if (this.identity) return subject;
    const toks = subject.split(".");
    const wc = (n: number): string => toks[this.wcPos[n - 1]!] ?? "";
    const out: string[] = [];
    for (const p of this.parts) {
      switch (p.kind) {
        case "lit":
          out.push(p.text);
          break;
        case "wc":
          out.push(wc(p.idx));
          break;
        case "fwc":
          out.push(toks.slice(this.srcTokens.length - 1).join("."));
          break;
        case "partition": {
          const key = p.idxs.length > 0 ? p.idxs.map(wc).join("") : toks.join(".");
          out.push(String(fnv1a32(key) % p.buckets));
          break;
        }
        case "split": {
          const pieces = wc(p.idx)
            .split(p.delim)
            .filter((x) => x.length > 0);
          out.push(pieces.join("."));
          break;
        }
        case "splitLeft": {
          const t = wc(p.idx);
          out.push(p.n >= t.length ? t : t.slice(0, p.n) + "." + t.slice(p.n));
          break;
        }
        case "splitRight": {
          const t = wc(p.idx);
          out.push(p.n >= t.length ? t : t.slice(0, t.length - p.n) + "." + t.slice(t.length - p.n));
          break;
        }
        case "sliceLeft": {
          const t = wc(p.idx);
          const s: string[] = [];
          for (let i = 0; i < t.length; i += p.n) s.push(t.slice(i, i + p.n));
          out.push(s.join("."));
          break;
        }
        case "sliceRight": {
          const t = wc(p.idx);
          const s: string[] = [];
          let end = t.length;
          while (end > 0) {
            s.unshift(t.slice(Math.max(0, end - p.n), end));
            end -= p.n;
          }
          out.push(s.join("."));
          break;
        }
      }
    }
    return out.join(".");
  }
}
