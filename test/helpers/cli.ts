// Test helpers for the `tsnats` CLI: start a server (nats-server or tsnats) as a child,
// run the CLI as a child process the way a user would, and drive prompts through a
// pseudo terminal with util-linux `script`.
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { fileURLToPath } from "node:url";

/** dist/test/helpers -> dist/src/bin/{cli,server}.js */
export const CLI_BIN = fileURLToPath(new URL("../../src/bin/cli.js", import.meta.url));
export const SERVER_BIN = fileURLToPath(new URL("../../src/bin/server.js", import.meta.url));

const READY_MS = 20_000;
const STOP_MS = 5_000;
const CLI_TIMEOUT_MS = 60_000;

export interface Target {
  name: "nats-server" | "tsnats";
  /** Why the target cannot run here (only "not on PATH" for nats-server), or undefined. */
  skip: string | undefined;
}

function onPath(bin: string): string | undefined {
  const r = spawnSync("sh", ["-c", `command -v ${bin}`], { encoding: "utf8" });
  const p = r.status === 0 ? r.stdout.trim() : "";
  return p === "" ? undefined : p;
}

/**
 * Every scenario runs against both servers; only a missing nats-server is skipped.
 * TSNATS_CLI_TARGETS=nats-server (or tsnats) narrows a local run to one of them.
 */
const only = process.env["TSNATS_CLI_TARGETS"];
export const TARGETS: Target[] = (
  [
    { name: "nats-server", skip: onPath("nats-server") === undefined ? "nats-server is not on PATH" : undefined },
    { name: "tsnats", skip: undefined },
  ] satisfies Target[]
).filter((t) => only === undefined || only === "" || only.split(",").includes(t.name));

export const HAVE_SCRIPT = onPath("script") !== undefined;

export interface RunningServer {
  url: string;
  port: number;
  storeDir: string;
  log(): string;
  stop(): Promise<void>;
}

const LISTEN_RE = /Listening for client connections on [^\s]*:(\d+)/;

/** Starts the target with JetStream on a random port and waits for "Server is ready". */
export async function startServer(target: Target["name"], extraArgs: string[] = []): Promise<RunningServer> {
  const storeDir = fs.mkdtempSync(path.join(os.tmpdir(), `tsnats-cli-${target}-`));
  const args = ["-a", "127.0.0.1", "-p", "-1", "-js", "-sd", storeDir, ...extraArgs];
  const proc: ChildProcess =
    target === "nats-server"
      ? spawn("nats-server", args, { stdio: ["ignore", "pipe", "pipe"] })
      : spawn(process.execPath, [SERVER_BIN, ...args], { stdio: ["ignore", "pipe", "pipe"] });
  let logText = "";
  const exited = new Promise<void>((resolve) => proc.once("exit", () => resolve()));
  const port = await new Promise<number>((resolve, reject) => {
    let found = 0;
    const timer = setTimeout(() => {
      proc.kill("SIGKILL");
      reject(new Error(`${target} did not become ready in ${READY_MS}ms:\n${logText}`));
    }, READY_MS);
    const onData = (d: Buffer): void => {
      logText += d.toString("utf8");
      if (found === 0) {
        const m = LISTEN_RE.exec(logText);
        if (m !== null) found = Number(m[1]);
      }
      if (found !== 0 && logText.includes("Server is ready")) {
        clearTimeout(timer);
        resolve(found);
      }
    };
    proc.stdout?.on("data", onData);
    proc.stderr?.on("data", onData);
    proc.once("exit", (code, sig) => {
      clearTimeout(timer);
      reject(new Error(`${target} exited early (${code ?? sig}):\n${logText}`));
    });
  });
  return {
    url: `nats://127.0.0.1:${port}`,
    port,
    storeDir,
    log: () => logText,
    stop: async () => {
      if (proc.exitCode === null && proc.signalCode === null) {
        proc.kill("SIGTERM");
        const t = setTimeout(() => proc.kill("SIGKILL"), STOP_MS);
        await exited;
        clearTimeout(t);
      }
      fs.rmSync(storeDir, { recursive: true, force: true });
    },
  };
}

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

export interface CliEnv {
  /** Directory for saved contexts (TSNATS_CONFIG_DIR). */
  configDir: string;
  url: string;
}

export function makeCliEnv(url: string): CliEnv {
  return { configDir: fs.mkdtempSync(path.join(os.tmpdir(), "tsnats-cli-cfg-")), url };
}

export function cleanupCliEnv(env: CliEnv): void {
  fs.rmSync(env.configDir, { recursive: true, force: true });
}

function childEnv(env: CliEnv, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const e: NodeJS.ProcessEnv = { ...process.env, TSNATS_CONFIG_DIR: env.configDir };
  // The caller's own NATS settings must not leak into a test run; extra ones are the test's.
  delete e["NATS_URL"];
  delete e["NATS_CONTEXT"];
  return { ...e, ...extra };
}

/** Runs `tsnats --server <url> ...args` with a pipe (not a terminal) as stdin. */
export function runCli(env: CliEnv, args: string[], opts: { input?: string; noServerFlag?: boolean; extraEnv?: Record<string, string>; timeoutMs?: number } = {}): Promise<CliResult> {
  const full = opts.noServerFlag === true ? args : ["--server", env.url, ...args];
  return runProcess(process.execPath, [CLI_BIN, ...full], childEnv(env, opts.extraEnv), opts.input ?? "", opts.timeoutMs ?? CLI_TIMEOUT_MS);
}

function runProcess(cmd: string, args: string[], env: NodeJS.ProcessEnv, input: string, timeoutMs: number): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const p = spawn(cmd, args, { env, stdio: ["pipe", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    const timer = setTimeout(() => {
      p.kill("SIGKILL");
      reject(new Error(`${path.basename(cmd)} ${args.join(" ")} timed out after ${timeoutMs}ms\nstdout:${stdout}\nstderr:${stderr}`));
    }, timeoutMs);
    p.stdout.on("data", (d: Buffer) => (stdout += d.toString("utf8")));
    p.stderr.on("data", (d: Buffer) => (stderr += d.toString("utf8")));
    p.once("error", (e) => {
      clearTimeout(timer);
      reject(e);
    });
    p.once("close", (code) => {
      clearTimeout(timer);
      resolve({ code: code ?? -1, stdout, stderr });
    });
    p.stdin.end(input);
  });
}

function shellQuote(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}

/**
 * Runs the CLI inside a pseudo terminal (`script -qfec`), writing each answer once the
 * output so far contains its prompt text, so the answers go to the questions they are for.
 * The pty merges stdout and stderr into one stream.
 */
export function runCliPty(env: CliEnv, args: string[], answers: Array<{ prompt: string; reply: string }>, timeoutMs = CLI_TIMEOUT_MS): Promise<CliResult> {
  const cmd = [process.execPath, CLI_BIN, "--server", env.url, ...args].map(shellQuote).join(" ");
  return new Promise((resolve, reject) => {
    const p = spawn("script", ["-qfec", cmd, "/dev/null"], { env: childEnv(env), stdio: ["pipe", "pipe", "pipe"] });
    let output = "";
    let next = 0;
    let searchFrom = 0;
    const timer = setTimeout(() => {
      p.kill("SIGKILL");
      reject(new Error(`pty run timed out after ${timeoutMs}ms, waiting for prompt ${JSON.stringify(answers[next]?.prompt)}\n${output}`));
    }, timeoutMs);
    const feed = (): void => {
      while (next < answers.length) {
        const a = answers[next];
        if (a === undefined) break;
        const at = output.indexOf(a.prompt, searchFrom);
        if (at < 0) break;
        searchFrom = at + a.prompt.length;
        p.stdin.write(a.reply + "\r");
        next++;
      }
    };
    p.stdout.on("data", (d: Buffer) => {
      output += d.toString("utf8");
      feed();
    });
    p.stderr.on("data", (d: Buffer) => (output += d.toString("utf8")));
    p.once("error", (e) => {
      clearTimeout(timer);
      reject(e);
    });
    p.once("close", (code) => {
      clearTimeout(timer);
      resolve({ code: code ?? -1, stdout: output, stderr: "" });
    });
  });
}

/** A long-running CLI process (sub, reply, watch) whose output can be awaited. */
export interface CliChild {
  stdout(): string;
  stderr(): string;
  waitFor(where: "stdout" | "stderr", text: string | RegExp, timeoutMs?: number): Promise<void>;
  done: Promise<CliResult>;
  kill(): void;
}

export function spawnCli(env: CliEnv, args: string[]): CliChild {
  const p = spawn(process.execPath, [CLI_BIN, "--server", env.url, ...args], { env: childEnv(env), stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  let err = "";
  const listeners: Array<() => void> = [];
  p.stdout.on("data", (d: Buffer) => {
    out += d.toString("utf8");
    listeners.forEach((l) => l());
  });
  p.stderr.on("data", (d: Buffer) => {
    err += d.toString("utf8");
    listeners.forEach((l) => l());
  });
  const done = new Promise<CliResult>((resolve) => p.once("close", (code) => resolve({ code: code ?? -1, stdout: out, stderr: err })));
  return {
    stdout: () => out,
    stderr: () => err,
    done,
    kill: () => {
      if (p.exitCode === null && p.signalCode === null) p.kill("SIGTERM");
    },
    waitFor: (where, text, timeoutMs = 20_000) =>
      new Promise<void>((resolve, reject) => {
        const test = (): boolean => {
          const s = where === "stdout" ? out : err;
          return typeof text === "string" ? s.includes(text) : text.test(s);
        };
        if (test()) return resolve();
        const timer = setTimeout(() => reject(new Error(`timed out waiting for ${String(text)} on ${where}\nstdout:${out}\nstderr:${err}`)), timeoutMs);
        const l = (): void => {
          if (test()) {
            clearTimeout(timer);
            resolve();
          }
        };
        listeners.push(l);
        void done.then(() => {
          if (!test()) {
            clearTimeout(timer);
            reject(new Error(`process exited before ${String(text)} appeared on ${where}\nstdout:${out}\nstderr:${err}`));
          }
        });
      }),
  };
}
