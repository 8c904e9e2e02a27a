// Raw sockets for the hostile suite: many short-lived connections (each a plain net.Socket
// collecting latin1 text, bounded), the handshake with optional credentials, and the
// bystander, a connection that keeps one PING in flight while a case runs and records each
// round trip.

import { spawn, type ChildProcess } from "node:child_process";
import net from "node:net";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { HOST } from "./servers.js";
import { latencyStats, nowNs } from "./load.js";

export class HSock {
  readonly s: net.Socket;
  text = "";
  closed = false;
  private waiters: (() => void)[] = [];

  private constructor(s: net.Socket) {
    this.s = s;
    s.setNoDelay(true);
    s.setEncoding("latin1");
    s.on("data", (d: string) => {
      if (this.text.length < 16 * 1024) this.text += d;
      this.wake();
    });
    s.on("error", () => {
      /* resets from a server closing on a hostile peer are expected */
    });
    s.on("close", () => {
      this.closed = true;
      this.wake();
    });
  }

  static open(port: number): Promise<HSock> {
    return new Promise((resolve, reject) => {
      const s = net.connect({ port, host: HOST });
      s.once("error", reject);
      s.once("connect", () => {
        s.off("error", reject);
        resolve(new HSock(s));
      });
    });
  }

  private wake(): void {
    const w = this.waiters;
    this.waiters = [];
    for (const f of w) f();
  }

  /** True once pred holds; false after ms or at the close. */
  async until(pred: (t: string) => boolean, ms: number): Promise<boolean> {
    const end = performance.now() + ms;
    for (;;) {
      if (pred(this.text)) return true;
      const left = end - performance.now();
      if (left <= 0 || this.closed) return pred(this.text);
      await new Promise<void>((r) => {
        const t = setTimeout(r, left);
        this.waiters.push(() => {
          clearTimeout(t);
          r();
        });
      });
    }
  }

  write(b: string | Buffer): void {
    if (!this.closed && !this.s.destroyed) this.s.write(b);
  }

  destroy(): void {
    this.s.destroy();
  }
}

export interface Creds {
  user: string;
  pass: string;
}

/** INFO, CONNECT (with creds when given), PING, PONG; throws after timeoutMs. */
export async function handshake(c: HSock, creds: Creds | null, timeoutMs = 20_000): Promise<void> {
  if (!(await c.until((t) => t.includes("\r\n"), timeoutMs))) throw new Error(`no INFO (${c.closed ? "closed" : "timed out"})`);
  const connect: Record<string, unknown> = { verbose: false, pedantic: false, protocol: 1 };
  if (creds !== null) Object.assign(connect, creds);
  c.write(`CONNECT ${JSON.stringify(connect)}\r\nPING\r\n`);
  if (!(await c.until((t) => t.includes("PONG\r\n"), timeoutMs))) throw new Error(`no PONG: ${JSON.stringify(c.text.slice(0, 200))}`);
  c.text = "";
}

export async function connectRaw(port: number, creds: Creds | null): Promise<HSock> {
  const c = await HSock.open(port);
  await handshake(c, creds);
  return c;
}

/**
 * The bystander: PING, wait for its PONG, PING again after gapMs, until stop(). The round
 * trips are its view of the server's event loop while another client loads it.
 */
export class Bystander {
  private readonly lat: number[] = [];
  private running = true;
  private readonly loop: Promise<void>;

  constructor(private readonly c: HSock, gapMs = 2) {
    this.loop = (async () => {
      let pongs = 0;
      while (this.running && !c.closed) {
        const t0 = nowNs();
        c.write("PING\r\n");
        const want = pongs + 1;
        if (!(await c.until((t) => countOf(t, "PONG\r\n") >= want, 60_000))) return;
        pongs = want;
        if (c.text.length > 8192) {
          c.text = "";
          pongs = 0;
        }
        this.lat.push(nowNs() - t0);
        await new Promise((r) => setTimeout(r, gapMs));
      }
    })();
  }

  /** Stops after the PING in flight; p50/p99 in ms and the count of round trips. */
  async stop(): Promise<{ p50: number; p99: number; pings: number }> {
    this.running = false;
    await this.loop;
    if (this.lat.length === 0) throw new Error("the bystander got no PONG");
    const s = latencyStats(this.lat);
    return { p50: s.p50 / 1000, p99: s.p99 / 1000, pings: this.lat.length };
  }
}

function countOf(t: string, needle: string): number {
  let n = 0;
  for (let i = t.indexOf(needle); i >= 0; i = t.indexOf(needle, i + needle.length)) n++;
  return n;
}

/** A Bystander in a process of its own (bystander-child.ts), so that its round trips show the
 *  server's loop and not the bench process's, which is busy with the load. */
export class RemoteBystander {
  private out = "";
  private waiters: (() => void)[] = [];

  private constructor(private readonly child: ChildProcess) {
    child.stdout!.setEncoding("utf8");
    child.stdout!.on("data", (d: string) => {
      this.out += d;
      const w = this.waiters;
      this.waiters = [];
      for (const f of w) f();
    });
    child.on("exit", () => {
      const w = this.waiters;
      this.waiters = [];
      for (const f of w) f();
    });
  }

  private async line(n: number, ms: number): Promise<string> {
    const end = performance.now() + ms;
    for (;;) {
      const lines = this.out.split("\n");
      if (lines.length > n) return lines[n - 1]!;
      if (this.child.exitCode !== null || performance.now() > end) throw new Error(`bystander: no answer (${this.out.slice(0, 200)})`);
      await new Promise<void>((r) => {
        const t = setTimeout(r, Math.max(1, end - performance.now()));
        this.waiters.push(() => {
          clearTimeout(t);
          r();
        });
      });
    }
  }

  /** Started, connected and handshaken on port. */
  static async start(port: number, creds: Creds | null): Promise<RemoteBystander> {
    const entry = path.join(path.dirname(fileURLToPath(import.meta.url)), "bystander-child.js");
    const args = [entry, String(port), creds?.user ?? "", creds?.pass ?? ""];
    const b = new RemoteBystander(spawn(process.execPath, args, { stdio: ["pipe", "pipe", "inherit"] }));
    if ((await b.line(1, 20_000)) !== "ready") throw new Error(`bystander: ${b.out.slice(0, 200)}`);
    return b;
  }

  /** Stops after the PING in flight; p50/p99 in ms and the count of round trips. */
  async stop(): Promise<{ p50: number; p99: number; pings: number }> {
    this.child.stdin!.write("stop\n");
    const r = JSON.parse(await this.line(2, 70_000)) as { p50: number; p99: number; pings: number; error?: string };
    if (r.error !== undefined) throw new Error(`bystander: ${r.error}`);
    return r;
  }

  kill(): void {
    if (this.child.exitCode === null) this.child.kill("SIGKILL");
  }
}
