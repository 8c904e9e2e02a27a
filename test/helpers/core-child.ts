// Child-process servers for tests: the tsnats CLI (dist/src/bin/server.js) or nats-server.
// The port is read from the "Listening for client connections on host:port" log line, so
// `-p -1` (random port) works for both; stop() kills only the process we started.

import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";

/** dist/test/helpers -> dist/src/bin/server.js */
export const TSNATS_BIN = fileURLToPath(new URL("../../src/bin/server.js", import.meta.url));

export interface ChildServer {
  readonly proc: ChildProcess;
  readonly port: number;
  readonly url: string;
  /** stderr + stdout so far (the server log). */
  log(): string;
  /** Resolves with the exit code (or signal name) once the process has exited. */
  readonly exited: Promise<number | string>;
  /** SIGTERM, then SIGKILL after a bound; resolves when the process is gone. */
  stop(): Promise<void>;
}

let natsServerPath: string | null | undefined;

/** The nats-server binary on PATH, or null. */
export function findNatsServer(): string | null {
  if (natsServerPath !== undefined) return natsServerPath;
  const r = spawnSync("sh", ["-c", "command -v nats-server"], { encoding: "utf8" });
  const p = r.status === 0 ? r.stdout.trim() : "";
  natsServerPath = p === "" ? null : p;
  return natsServerPath;
}

export function startTsnatsChild(args: string[], readyMs = 15000): Promise<ChildServer> {
  return startChild(process.execPath, [TSNATS_BIN, ...args], readyMs);
}

export function startNatsServerChild(args: string[], readyMs = 15000): Promise<ChildServer> {
  const bin = findNatsServer();
  if (!bin) throw new Error("nats-server is not on PATH");
  return startChild(bin, args, readyMs);
}

/** A tsnats server inside a network namespace (`ip netns exec`, which execs: the pid is the
 *  server's), reached at host. */
export function startTsnatsChildInNetns(netns: string, host: string, args: string[], readyMs = 15000): Promise<ChildServer> {
  return startChild("ip", ["netns", "exec", netns, process.execPath, TSNATS_BIN, ...args], readyMs, host);
}

const LISTEN_RE = /Listening for client connections on [^\s]*:(\d+)/;

function startChild(cmd: string, args: string[], readyMs: number, host = "127.0.0.1"): Promise<ChildServer> {
  const proc = spawn(cmd, args, { stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  const exited = new Promise<number | string>((resolve) => {
    proc.once("exit", (code, sig) => resolve(code ?? sig ?? -1));
  });
  return new Promise<ChildServer>((resolve, reject) => {
    let port = 0;
    const timer = setTimeout(() => {
      proc.kill("SIGKILL");
      reject(new Error(`server did not become ready in ${readyMs}ms: ${out}`));
    }, readyMs);
    const onData = (d: Buffer): void => {
      out += d.toString("utf8");
      if (port === 0) {
        const m = LISTEN_RE.exec(out);
        if (m) port = Number(m[1]);
      }
      if (port !== 0 && out.includes("Server is ready")) {
        clearTimeout(timer);
        resolve({
          proc,
          port,
          url: `nats://${host}:${port}`,
          log: () => out,
          exited,
          stop: async () => {
            if (proc.exitCode !== null || proc.signalCode !== null) return;
            proc.kill("SIGTERM");
            const t = setTimeout(() => proc.kill("SIGKILL"), 5000);
            await exited;
            clearTimeout(t);
          },
        });
      }
    };
    proc.stdout?.on("data", onData);
    proc.stderr?.on("data", onData);
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`server exited (${String(code)}) before ready: ${out}`));
    });
  });
}
