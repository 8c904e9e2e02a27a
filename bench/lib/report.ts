// Markdown tables and the JSON results file.

import { mkdirSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import type { ServerName } from "./servers.js";
import type { BenchOptions, Cell, ResultRow } from "./types.js";

export function formatCell(v: Cell, unit: string): string {
  if (typeof v === "string") return v;
  if (!Number.isFinite(v)) return String(v);
  if (unit === "msgs/s" || unit === "ops/s") return Math.round(v).toLocaleString("en-US");
  const abs = Math.abs(v);
  const digits = abs >= 1000 ? 0 : abs >= 100 ? 1 : abs >= 10 ? 1 : 2;
  return v.toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: digits });
}

export function ratioOf(values: Record<ServerName, Cell>): number | null {
  const a = values["tsnats"];
  const b = values["nats-server"];
  if (typeof a !== "number" || typeof b !== "number" || !Number.isFinite(a) || !Number.isFinite(b) || b === 0) {
    return null;
  }
  return a / b;
}

function escapeCell(s: string): string {
  return s.replace(/\|/g, "\\|").replace(/\r?\n/g, " ");
}

export function markdownTable(rows: ResultRow[]): string {
  const lines = ["| case | tsnats | nats-server | ratio |", "|---|---:|---:|---:|"];
  for (const r of rows) {
    const ratio = r.ratio === null ? "–" : `${r.ratio.toFixed(2)}×`;
    const arrow = r.better === "lower" ? " (lower is better)" : "";
    lines.push(
      `| ${escapeCell(`${r.case} — ${r.metric}${r.metric.includes(r.unit) ? "" : ` (${r.unit})`}${arrow}`)} | ${escapeCell(
        formatCell(r.values["tsnats"], r.unit),
      )} | ${escapeCell(formatCell(r.values["nats-server"], r.unit))} | ${ratio} |`,
    );
  }
  return lines.join("\n");
}

export function machineNote(): Record<string, unknown> {
  const cpus = os.cpus();
  return {
    host: os.hostname(),
    cpus: cpus.length,
    cpu_model: cpus[0]?.model ?? "unknown",
    mem_gib: Math.round((os.totalmem() / 1024 ** 3) * 10) / 10,
    os: `${os.type()} ${os.release()}`,
    node: process.version,
  };
}

export function writeResults(
  file: string,
  suite: string,
  opts: BenchOptions,
  servers: Record<string, string>,
  notes: string[],
  rows: ResultRow[],
): void {
  mkdirSync(path.dirname(file), { recursive: true });
  const doc = {
    suite,
    date: new Date().toISOString(),
    machine: machineNote(),
    options: opts,
    servers,
    notes,
    rows,
  };
  writeFileSync(file, JSON.stringify(doc, null, 2) + "\n");
}
