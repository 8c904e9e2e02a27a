import Table from "cli-table3";
// Formatting shared by every command: the natscli "columns" layout, number and
// byte humanising, durations and timestamps, JSON output and CLI errors.

/** An error meant for the user: printed as `tsnats: error: <message>`, exit 1. */
export class CliError extends Error {
  readonly exitCode: number;
  constructor(message: string, exitCode = 1) {
    super(message);
    this.name = "CliError";
    this.exitCode = exitCode;
  }
}

/** Thousands separators, as go-humanize Comma does. */
export function comma(n: number | bigint): string {
  const s = typeof n === "bigint" ? n.toString() : Math.trunc(n).toString();
  const neg = s.startsWith("-");
  const digits = neg ? s.slice(1) : s;
  const out = digits.replace(/\B(?=(\d{3})+(?!\d))/g, ",");
  return neg ? "-" + out : out;
}

/** Float with up to 3 decimals and thousands separators (go-humanize CommafWithDigits). */
export function commaf(n: number, digits = 3): string {
  if (!Number.isFinite(n)) return String(n);
  const fixed = n.toFixed(digits).replace(/\.?0+$/, "");
  const [int = "0", frac] = fixed.split(".");
  return comma(Number(int)) + (frac !== undefined ? "." + frac : "");
}

const IEC = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"] as const;

/** Binary byte sizes the way go-humanize IBytes prints them: "44 B", "1.0 KiB", "256 MiB". */
export function ibytes(n: number): string {
  if (n < 10) return `${Math.max(0, Math.trunc(n))} B`;
  const e = Math.min(Math.floor(Math.log(n) / Math.log(1024)), IEC.length - 1);
  const val = Math.floor((n / Math.pow(1024, e)) * 10 + 0.5) / 10;
  const unit = IEC[e] ?? "B";
  return val < 10 ? `${val.toFixed(1)} ${unit}` : `${val.toFixed(0)} ${unit}`;
}

const NS_PER_MS = 1_000_000;
const NS_PER_S = 1_000_000_000;

import { goDuration } from "../contracts/duration.js";
export { goDuration };

function trimFloat(n: number): string {
  return n.toFixed(9).replace(/\.?0+$/, "");
}

/** natscli's HumanizeDuration: days and years for long spans, rounded for short ones. */
export function humanDuration(ns: number): string {
  if (ns >= Number.MAX_SAFE_INTEGER) return "never";
  if (ns < 0) return "-" + humanDuration(-ns);
  if (ns < NS_PER_MS) return goDuration(Math.round(ns / 1000) * 1000);
  if (ns < NS_PER_S) return goDuration(Math.round(ns / NS_PER_MS) * NS_PER_MS);
  const tsecs = Math.floor(ns / NS_PER_S);
  const tmins = Math.floor(tsecs / 60);
  const thrs = Math.floor(tmins / 60);
  const tdays = Math.floor(thrs / 24);
  const tyrs = Math.floor(tdays / 365);
  if (tyrs > 0) return `${tyrs}y${tdays % 365}d${thrs % 24}h${tmins % 60}m${tsecs % 60}s`;
  if (tdays > 0) return `${tdays}d${thrs % 24}h${tmins % 60}m${tsecs % 60}s`;
  if (thrs > 0) return `${thrs}h${tmins % 60}m${tsecs % 60}s`;
  if (tmins > 0) return `${tmins}m${tsecs % 60}s`;
  const frac = (ns % NS_PER_S) / NS_PER_S;
  return `${trimFloat(Number((tsecs + frac).toFixed(2)))}s`;
}

function pad2(n: number): string {
  return n < 10 ? "0" + n : String(n);
}

/** Local time as natscli prints it: "2006-01-02 15:04:05". */
export function fmtTime(t: Date | string | undefined): string {
  if (t === undefined) return "";
  const d = typeof t === "string" ? new Date(t) : t;
  if (Number.isNaN(d.getTime())) return String(t);
  return (
    `${d.getFullYear()}-${pad2(d.getMonth() + 1)}-${pad2(d.getDate())} ` +
    `${pad2(d.getHours())}:${pad2(d.getMinutes())}:${pad2(d.getSeconds())}`
  );
}

/** True for unset timestamps: missing, the Go zero time, or the Unix epoch. */
export function isZeroTime(t: string | undefined): boolean {
  if (t === undefined || t === "") return true;
  if (t.startsWith("0001-01-01")) return true;
  const ms = Date.parse(t);
  return Number.isNaN(ms) || ms === 0;
}

/** A value rendered the way natscli's F() renders it. */
export function f(v: unknown): string {
  if (Array.isArray(v)) return v.map((x) => String(x)).join(", ");
  if (typeof v === "number") return Number.isInteger(v) ? comma(v) : commaf(v);
  if (typeof v === "bigint") return comma(v);
  if (v instanceof Date) return fmtTime(v);
  return String(v);
}

type Row =
  | { kind: "row"; label: string; value: string }
  | { kind: "title"; text: string }
  | { kind: "line"; text: string | undefined };

/** The natscli columns writer: a heading, section titles, and right-aligned "Label: value" rows. */
export class Columns {
  private readonly heading: string;
  private readonly rows: Row[] = [];

  constructor(heading: string) {
    this.heading = heading;
  }

  row(label: string, value: unknown): void {
    this.rows.push({ kind: "row", label: label.replace(/:$/, ""), value: f(value) });
  }

  rowIf(label: string, value: unknown, cond: boolean): void {
    if (cond) this.row(label, value);
  }

  rowIfNotEmpty(label: string, value: string | undefined): void {
    if (value !== undefined && value !== "") this.row(label, value);
  }

  title(text: string): void {
    this.rows.push({ kind: "title", text });
  }

  line(text?: string): void {
    this.rows.push({ kind: "line", text });
  }

  render(): string {
    let longest = 0;
    for (const r of this.rows) {
      if (r.kind === "row" && r.label.length > longest) longest = r.label.length;
    }
    const out: string[] = [];
    if (this.heading !== "") out.push(this.heading, "");
    let prev: Row["kind"] | "" = "";
    let prevEmpty = false;
    this.rows.forEach((r, i) => {
      switch (r.kind) {
        case "title":
          if ((i !== 0 && prev !== "title" && prev !== "line") || (prev === "line" && !prevEmpty)) out.push("");
          out.push(r.text.endsWith(":") ? r.text : r.text + ":", "");
          prev = "title";
          prevEmpty = false;
          break;
        case "row": {
          const padding = Math.max(0, longest - [...r.label].length + 2);
          if (r.label === "") out.push(" ".repeat(padding + 1) + " " + r.value);
          else out.push(" ".repeat(padding) + r.label + ": " + r.value);
          prev = "row";
          prevEmpty = false;
          break;
        }
        case "line":
          if (prev === "title" && r.text === undefined) break;
          out.push(r.text ?? "");
          prev = "line";
          prevEmpty = r.text === undefined;
          break;
      }
    });
    return out.join("\n") + "\n";
  }

  print(): void {
    process.stdout.write(this.render());
  }
}

/** JSON the way the API sent it, indented like natscli's PrintJSON. */
export function printJSON(v: unknown): void {
  process.stdout.write(JSON.stringify(v, null, 2) + "\n");
}

/** natscli logs progress lines on stderr with a "15:04:05 " prefix (Go's log package). */
export function log(msg: string): void {
  const d = new Date();
  process.stderr.write(`${pad2(d.getHours())}:${pad2(d.getMinutes())}:${pad2(d.getSeconds())} ${msg}\n`);
}

export function out(msg = ""): void {
  process.stdout.write(msg + "\n");
}


/** A bordered table like natscli's (rounded corners, no colours), with its title above. */
export function renderTable(title: string, head: string[], rows: Array<Array<string | number>>): string {
  const t = new Table({
    head,
    style: { head: [], border: [], compact: false },
    chars: {
      top: "─", "top-mid": "┬", "top-left": "╭", "top-right": "╮",
      bottom: "─", "bottom-mid": "┴", "bottom-left": "╰", "bottom-right": "╯",
      left: "│", "left-mid": "├", mid: "─", "mid-mid": "┼", right: "│", "right-mid": "┤", middle: "│",
    },
  });
  for (const r of rows) t.push(r.map((c) => (typeof c === "number" ? f(c) : c)));
  // cli-table3 draws a rule between every row; natscli only draws one under the header.
  const lines = t.toString().split("\n");
  const kept = lines.filter((l, i) => !(l.startsWith("├") && i > 2));
  return (title !== "" ? title + "\n" : "") + kept.join("\n");
}
