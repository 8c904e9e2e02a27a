// Shapes shared by the suites and the runner.

import type { ConnMode, RawConn } from "./conn.js";
import type { Requester } from "./request.js";
import type { ServerName, ServerProc } from "./servers.js";

export interface BenchOptions {
  /** Seconds per throughput case. */
  durationS: number;
  /** Stored messages for recovery/memory (js) and consume; 1 KiB cases use a tenth. */
  msgs: number;
  /** Round trips for latency cases (after a warm-up of a tenth). */
  rtt: number;
  /** Bound for one case against one server. */
  caseTimeoutS: number;
  only: ServerName | null;
  /** Run only the cases whose name matches (e.g. "fill|push, ack none"). */
  filter: string | null;
  /** cluster-js catch-up: MiB a stopped follower misses (--catchup-mib). */
  catchupMib: number;
}

export interface MetricDef {
  label: string;
  unit: string;
  better: "higher" | "lower";
}

export interface CaseContext {
  readonly server: ServerProc;
  readonly opts: BenchOptions;
  /** A connection closed automatically when the case ends. */
  connect(mode: ConnMode): Promise<RawConn>;
  /** A request helper on its own detail connection. */
  requester(): Promise<Requester>;
  /** Stop the current server and start a fresh one (new store dir); it becomes ctx.server. */
  freshServer(): Promise<ServerProc>;
  note(text: string): void;
}

export interface CaseDef {
  name: string;
  metrics: MetricDef[];
  /** Returns one value per metric label. */
  run(ctx: CaseContext): Promise<Record<string, number>>;
}

export interface SuiteDef {
  name: string;
  jetstream: boolean;
  notes: string[];
  cases(opts: BenchOptions): CaseDef[];
}

export type Cell = number | string;

export interface ResultRow {
  case: string;
  metric: string;
  unit: string;
  better: "higher" | "lower";
  values: Record<ServerName, Cell>;
  ratio: number | null;
}
