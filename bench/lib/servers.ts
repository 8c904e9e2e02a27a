// Starting and stopping the servers under test as child processes. Only processes started
// here are ever signalled, by their own pid.

import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, openSync, closeSync, readFileSync, rmSync, readdirSync, statSync, writeFileSync } from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

export const SERVER_NAMES = ["tsnats", "nats-server"] as const;
export type ServerName = (typeof SERVER_NAMES)[number];

export const HOST = "127.0.0.1";

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..", "..");
// TSNATS_BENCH_BIN: another build's server (a before/after comparison with this bench).
const tsnatsBin = process.env["TSNATS_BENCH_BIN"] ?? path.join(repoRoot, "dist", "src", "bin", "server.js");

/** The node flags package.json's "start" script runs tsnats with (`node <flags> dist/...`),
 *  so that the bench measures tsnats as `npm start` runs it. */
export const productNodeFlags: string[] = (() => {
  try {
    const pkg = JSON.parse(readFileSync(path.join(repoRoot, "package.json"), "utf8")) as { scripts?: Record<string, string> };
    const m = /^node\s+((?:--\S+\s+)*)dist\//.exec(pkg.scripts?.["start"] ?? "");
    return m?.[1] !== undefined ? m[1].split(/\s+/).filter((f) => f !== "") : [];
  } catch {
    return [];
  }
})();

export interface Availability {
  ok: boolean;
  note: string;
}

function findOnPath(cmd: string): string | null {
  for (const dir of (process.env["PATH"] ?? "").split(path.delimiter)) {
    if (dir === "") continue;
    const p = path.join(dir, cmd);
    if (existsSync(p)) return p;
  }
  return null;
}

export function availability(name: ServerName): Availability {
  if (name === "tsnats") {
    return existsSync(tsnatsBin)
      ? { ok: true, note: ["node", ...productNodeFlags, path.relative(repoRoot, tsnatsBin)].join(" ") }
      : { ok: false, note: `skipped: ${path.relative(repoRoot, tsnatsBin)} not built` };
  }
  const p = findOnPath("nats-server");
  return p !== null ? { ok: true, note: p } : { ok: false, note: "skipped: nats-server not on PATH" };
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.on("error", reject);
    srv.listen(0, HOST, () => {
      const addr = srv.address();
      const port = typeof addr === "object" && addr !== null ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

export interface ServerSpec {
  name: ServerName;
  jetstream: boolean;
  /** Configuration file text (given with -c; the command-line flags still apply over it), or a
   *  function of the server's temp directory that returns it, for configs naming files made
   *  there (certificates); they are removed with the directory by stop(). */
  config?: string | ((workDir: string) => string);
}

/** One server under test; restartable on the same port and store dir. */
export class ServerProc {
  readonly name: ServerName;
  readonly port: number;
  readonly storeDir: string; // "" without JetStream
  readonly workDir: string;
  readonly logPath: string;
  /** Path of the configuration file written for the spec's config, or "". */
  readonly configPath: string;
  private child: ChildProcess | null = null;
  private exited: Promise<void> = Promise.resolve();
  private starts = 0;

  private constructor(name: ServerName, port: number, workDir: string, storeDir: string, configPath: string) {
    this.name = name;
    this.port = port;
    this.workDir = workDir;
    this.storeDir = storeDir;
    this.configPath = configPath;
    this.logPath = path.join(workDir, "server.log");
  }

  static async start(spec: ServerSpec, readyTimeoutMs = 30_000): Promise<ServerProc> {
    const workDir = mkdtempSync(path.join(os.tmpdir(), `tsnats-bench-${spec.name}-`));
    const storeDir = spec.jetstream ? path.join(workDir, "store") : "";
    let configPath = "";
    if (spec.config !== undefined) {
      configPath = path.join(workDir, "server.conf");
      try {
        writeFileSync(configPath, typeof spec.config === "string" ? spec.config : spec.config(workDir));
      } catch (e) {
        rmSync(workDir, { recursive: true, force: true });
        throw e;
      }
    }
    const s = new ServerProc(spec.name, await freePort(), workDir, storeDir, configPath);
    try {
      await s.launch(readyTimeoutMs);
    } catch (e) {
      await s.stop();
      throw e;
    }
    return s;
  }

  get pid(): number {
    return this.child?.pid ?? 0;
  }

  get running(): boolean {
    return this.child !== null && this.child.exitCode === null && this.child.signalCode === null;
  }

  /** Spawn the process and wait until the port answers with INFO. Returns ms until ready. */
  async launch(readyTimeoutMs = 30_000): Promise<number> {
    const args = this.configPath !== "" ? ["-c", this.configPath] : [];
    args.push("-a", HOST, "-p", String(this.port));
    if (this.storeDir !== "") args.push("-js", "-sd", this.storeDir);
    // TSNATS_NODE_FLAGS (e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof") go to the tsnats node
    // process only; NODE_OPTIONS refuses --cpu-prof.
    const nodeFlags = [...productNodeFlags, ...(process.env["TSNATS_NODE_FLAGS"] ?? "").split(" ").filter((f) => f !== "")];
    const [cmd, argv] =
      this.name === "tsnats" ? [process.execPath, [...nodeFlags, tsnatsBin, ...args]] : ["nats-server", args];
    const logFd = openSync(this.logPath, "a");
    const t0 = performance.now();
    const child = spawn(cmd, argv, { stdio: ["ignore", logFd, logFd] });
    closeSync(logFd);
    this.starts++;
    this.child = child;
    this.exited = new Promise((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) resolve();
      else child.once("exit", () => resolve());
    });
    child.on("error", () => {
      /* reported as "exited before ready" */
    });
    await waitForInfo(this.port, readyTimeoutMs, () => !this.running, () => this.logTail());
    return performance.now() - t0;
  }

  /** Send a signal to our own child and wait (bounded) for it to exit. */
  async kill(signal: NodeJS.Signals, waitMs = 10_000): Promise<void> {
    const child = this.child;
    if (child === null || !this.running) return;
    child.kill(signal);
    const done = await Promise.race([
      this.exited.then(() => true),
      new Promise<boolean>((r) => setTimeout(() => r(false), waitMs).unref()),
    ]);
    if (!done && this.running) {
      child.kill("SIGKILL");
      await this.exited;
    }
  }

  /** Stop the server and remove its temp directory (store included). */
  async stop(): Promise<void> {
    await this.kill("SIGTERM");
    rmSync(this.workDir, { recursive: true, force: true });
  }

  logTail(lines = 15): string {
    try {
      const all = readFileSync(this.logPath, "utf8").trimEnd().split("\n");
      return all.slice(-lines).join("\n");
    } catch {
      return "";
    }
  }

  /** CPU time (user + system, every thread) the process has used, in seconds, from
   *  /proc/<pid>/stat (Linux only; 100 ticks per second); NaN when unavailable. */
  cpuSeconds(): number {
    try {
      const stat = readFileSync(`/proc/${this.pid}/stat`, "utf8");
      // Fields after the ")" that ends the command name: state is field 3, utime 14, stime 15.
      const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      return (Number(f[11]) + Number(f[12])) / CLOCK_TICKS;
    } catch {
      return Number.NaN;
    }
  }

  /** Resident set size in bytes from /proc (Linux only); 0 when unavailable. */
  rssBytes(): number {
    try {
      const status = readFileSync(`/proc/${this.pid}/status`, "utf8");
      const m = /^VmRSS:\s+(\d+)\s+kB/m.exec(status);
      return m?.[1] !== undefined ? Number(m[1]) * 1024 : 0;
    } catch {
      return 0;
    }
  }
}

const CLOCK_TICKS = 100; // USER_HZ on Linux

/** Sum of file sizes under dir (apparent bytes, like `du -b`). */
export function dirBytes(dir: string): number {
  let total = 0;
  let entries: string[];
  try {
    entries = readdirSync(dir);
  } catch {
    return 0;
  }
  for (const e of entries) {
    const p = path.join(dir, e);
    const st = statSync(p, { throwIfNoEntry: false });
    if (st === undefined) continue;
    total += st.isDirectory() ? dirBytes(p) : st.size;
  }
  return total;
}

/** Poll until a TCP connect to port gets an INFO line, bounded by timeoutMs. */
export async function waitForInfo(
  port: number,
  timeoutMs: number,
  gaveUp: () => boolean,
  diag: () => string,
): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    if (gaveUp()) throw new Error(`server exited before it was ready:\n${diag()}`);
    if (await probeInfo(port)) return;
    if (performance.now() > deadline) throw new Error(`server not ready after ${timeoutMs} ms:\n${diag()}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Poll until a TCP connect to port succeeds (a listener other than the client port, e.g.
 *  websocket, which the INFO probe does not see), bounded by timeoutMs. */
export async function waitForListen(port: number, timeoutMs: number): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const ok = await new Promise<boolean>((resolve) => {
      const s = net.connect({ port, host: HOST });
      s.once("connect", () => {
        s.destroy();
        resolve(true);
      });
      s.once("error", () => resolve(false));
    });
    if (ok) return;
    if (performance.now() > deadline) throw new Error(`nothing listening on ${HOST}:${port} after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

function probeInfo(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect({ port, host: HOST });
    const t = setTimeout(() => finish(false), 1000);
    let buf = "";
    function finish(ok: boolean): void {
      clearTimeout(t);
      s.destroy();
      resolve(ok);
    }
    s.on("data", (d: Buffer) => {
      buf += d.toString("latin1");
      if (buf.includes("\n")) finish(buf.startsWith("INFO "));
    });
    s.on("error", () => finish(false));
    s.on("close", () => finish(false));
  });
}
