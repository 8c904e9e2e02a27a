// What the hostile cases share: a tsnats server as a child process (so that its RSS, read
// from /proc/<pid>/status, is the server's alone), raw sockets, and a bystander that keeps
// sending PING while a case runs and counts the PONGs that missed a deadline.
//
// No case asserts a single timing on the normal path: the bystander's bound is a count of
// missed deadlines (a shared 2-core machine has slow moments), the memory bound a ceiling on
// RSS growth far below what buffering the hostile input would take.

import net from "node:net";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { startTsnatsChild, type ChildServer } from "../helpers/core-child.js";

export const MB = 1024 * 1024;

export interface Hostile {
  readonly child: ChildServer;
  readonly port: number;
  /** The server's resident set now, bytes (Linux /proc; 0 elsewhere). */
  rss(): number;
  stop(): Promise<void>;
}

/** A tsnats child on a random port; `config` (text) is passed with -c. */
export async function startHostile(args: string[] = [], config?: string): Promise<Hostile> {
  let dir = "";
  const argv = ["-a", "127.0.0.1", "-p", "-1", ...args];
  if (config !== undefined) {
    dir = mkdtempSync(path.join(os.tmpdir(), "tsnats-hostile-"));
    const f = path.join(dir, "server.conf");
    writeFileSync(f, config);
    argv.unshift("-c", f);
  }
  const child = await startTsnatsChild(argv);
  return {
    child,
    port: child.port,
    rss: () => rssOf(child.proc.pid ?? 0),
    stop: async () => {
      await child.stop();
      if (dir !== "") rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A JetStream tsnats child with its store in a fresh temp directory, removed after `fn`. */
export async function withJsHostile(tag: string, fn: (h: Hostile) => Promise<void>): Promise<void> {
  const dir = mkdtempSync(path.join(os.tmpdir(), `tsnats-hostile-${tag}-`));
  const h = await startHostile(["-js", "-sd", dir]);
  try {
    await fn(h);
  } finally {
    await h.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Counts the MSGs to `<prefix>.<n>` arriving on a raw socket until `count` came (rejects
 *  after `boundMs`); resolves whether they came in the order n = 0, 1, 2, ... Reads bytes as
 *  they come, without keeping them. */
export function orderedReplies(sock: net.Socket, prefix: string, count: number, boundMs: number): Promise<boolean> {
  let got = 0;
  let inOrder = true;
  let tail = "";
  const re = new RegExp(`MSG ${prefix.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}\\.(\\d+) `, "g");
  return new Promise<boolean>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`only ${got} of ${count} replies`)), boundMs);
    sock.on("data", (d: Buffer) => {
      const s = tail + d.toString("latin1");
      re.lastIndex = 0;
      let m;
      let last = 0;
      while ((m = re.exec(s)) !== null) {
        if (Number(m[1]) !== got) inOrder = false;
        got++;
        last = re.lastIndex;
      }
      tail = s.slice(Math.max(last, s.length - 32));
      if (got >= count) {
        clearTimeout(timer);
        resolve(inOrder);
      }
    });
  });
}

export function rssOf(pid: number): number {
  try {
    const m = /^VmRSS:\s+(\d+)\s+kB/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return m?.[1] !== undefined ? Number(m[1]) * 1024 : 0;
  } catch {
    return 0;
  }
}

/** A raw socket that collects what the server sends (latin1) until it closes. */
export class Sock {
  readonly s: net.Socket;
  text = "";
  closed = false;
  private readonly waiters: (() => void)[] = [];

  private constructor(s: net.Socket) {
    this.s = s;
    s.setEncoding("latin1");
    s.on("data", (d: string) => {
      // Bounded: a case never needs more than the first few KiB.
      if (this.text.length < 64 * 1024) this.text += d;
      this.wake();
    });
    s.on("error", () => {
      /* resets from a server that closed on us are expected */
    });
    s.on("close", () => {
      this.closed = true;
      this.wake();
    });
  }

  static open(port: number): Promise<Sock> {
    return new Promise((resolve, reject) => {
      const s = net.connect({ port, host: "127.0.0.1" });
      s.once("error", reject);
      s.once("connect", () => {
        s.off("error", reject);
        resolve(new Sock(s));
      });
    });
  }

  private wake(): void {
    for (const w of this.waiters.splice(0)) w();
  }

  /** Resolves true once pred holds, false after ms (or at the close if it never will). */
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

/** Connected and authenticated (CONNECT + PING answered). */
export async function connected(port: number, connect: Record<string, unknown> = {}): Promise<Sock> {
  const c = await Sock.open(port);
  if (!(await c.until((t) => t.includes("\r\n"), 10_000))) throw new Error(`no INFO: ${JSON.stringify(c.text)}`);
  c.write(`CONNECT ${JSON.stringify({ verbose: false, pedantic: false, ...connect })}\r\nPING\r\n`);
  if (!(await c.until((t) => t.includes("PONG\r\n"), 10_000))) throw new Error(`no PONG: ${JSON.stringify(c.text)}`);
  c.text = "";
  return c;
}

export interface PingReport {
  sent: number;
  answered: number;
  /** PONGs later than the deadline (or never). */
  missed: number;
  maxMs: number;
}

/**
 * A bystander's PING loop: one PING in flight, a new one `gapMs` after each PONG, until
 * stop() is called; a PONG later than `deadlineMs` counts as missed (the loop then waits for
 * it up to `giveUpMs` before counting the rest of the run as missed too).
 */
export function bystanderPings(c: Sock, deadlineMs = 250, gapMs = 10, giveUpMs = 10_000): { stop(): Promise<PingReport> } {
  const r: PingReport = { sent: 0, answered: 0, missed: 0, maxMs: 0 };
  let running = true;
  const loop = (async (): Promise<void> => {
    let pongs = 0;
    while (running && !c.closed) {
      const want = pongs + 1;
      const t0 = performance.now();
      c.write("PING\r\n");
      r.sent++;
      const ok = await c.until((t) => count(t, "PONG\r\n") >= want, giveUpMs);
      const ms = performance.now() - t0;
      if (!ok) {
        r.missed++;
        return;
      }
      pongs = want;
      r.answered++;
      if (ms > r.maxMs) r.maxMs = ms;
      if (ms > deadlineMs) r.missed++;
      await new Promise((res) => setTimeout(res, gapMs));
    }
  })();
  return {
    stop: async () => {
      running = false;
      await loop;
      return r;
    },
  };
}

function count(t: string, needle: string): number {
  let n = 0;
  for (let i = t.indexOf(needle); i >= 0; i = t.indexOf(needle, i + needle.length)) n++;
  return n;
}

/** Writes chunk repeatedly until capBytes were handed to the kernel or the socket fails;
 *  resolves with the bytes written. */
export function pump(s: net.Socket, chunk: Buffer, capBytes: number): Promise<number> {
  return new Promise((resolve) => {
    let done = false;
    const finish = (): void => {
      if (done) return;
      done = true;
      resolve(s.bytesWritten);
    };
    s.on("error", finish);
    s.on("close", finish);
    const go = (): void => {
      while (!done) {
        if (s.bytesWritten >= capBytes) return finish();
        if (!s.write(chunk)) return void s.once("drain", go);
      }
    };
    go();
  });
}

/** Runs fn while a bystander pings; returns fn's result and the bystander's report. */
export async function withBystander<T>(by: Sock, fn: () => Promise<T>, deadlineMs = 250): Promise<{ value: T; pings: PingReport }> {
  const p = bystanderPings(by, deadlineMs);
  try {
    const value = await fn();
    // A few more rounds after the load, so that a server still busy with it shows.
    await new Promise((r) => setTimeout(r, 200));
    return { value, pings: await p.stop() };
  } catch (e) {
    await p.stop();
    throw e;
  }
}

/** The bystander bound: answered every time in the end, and at most `fraction` of the PINGs
 *  (and never fewer than `floor`) late. */
export function missBudget(p: PingReport, fraction = 0.2, floor = 3): { ok: boolean; text: string } {
  const allowed = Math.max(floor, Math.floor(p.sent * fraction));
  const ok = p.answered === p.sent && p.missed <= allowed;
  return { ok, text: `bystander: ${p.sent} PINGs, ${p.answered} answered, ${p.missed} over the deadline (allowed ${allowed}), slowest ${p.maxMs.toFixed(0)} ms` };
}

/** Raw client that reads whole MSG/HMSG frames (the replies here are ~200 KB). */
export class Replies {
  private buf = Buffer.alloc(0);
  readonly msgs: { subject: string; hdr: string; body: string }[] = [];
  private waiters: (() => void)[] = [];
  private constructor(readonly s: net.Socket) {
    s.on("data", (d: Buffer) => {
      this.buf = Buffer.concat([this.buf, d]);
      this.parse();
      for (const w of this.waiters.splice(0)) w();
    });
    s.on("error", () => {});
  }

  static async open(port: number): Promise<Replies> {
    const s = net.connect({ port, host: "127.0.0.1" });
    await new Promise<void>((res, rej) => {
      s.once("connect", res);
      s.once("error", rej);
    });
    const r = new Replies(s);
    s.write('CONNECT {"verbose":false,"pedantic":false,"headers":true,"no_responders":true}\r\nSUB _R.> 1\r\n');
    return r;
  }

  private parse(): void {
    for (;;) {
      const eol = this.buf.indexOf("\r\n");
      if (eol < 0) return;
      const line = this.buf.subarray(0, eol).toString("latin1");
      const t = line.split(" ");
      const op = t[0];
      if (op !== "MSG" && op !== "HMSG") {
        this.buf = this.buf.subarray(eol + 2);
        continue;
      }
      const total = Number(t[t.length - 1]);
      const hlen = op === "HMSG" ? Number(t[t.length - 2]) : 0;
      const m = [line, "", t[1]];
      if (this.buf.length < eol + 2 + total + 2) return;
      const frame = this.buf.subarray(eol + 2, eol + 2 + total);
      this.msgs.push({ subject: m[2]!, hdr: frame.subarray(0, hlen).toString("latin1"), body: frame.subarray(hlen).toString("utf8") });
      this.buf = this.buf.subarray(eol + 2 + total + 2);
    }
  }

  pub(subject: string, reply: string, body: string): void {
    this.s.write(`PUB ${subject} ${reply} ${Buffer.byteLength(body)}\r\n${body}\r\n`);
  }

  /** The reply on `subject`, waiting up to ms. */
  async reply(subject: string, ms = 60_000): Promise<{ hdr: string; body: string; index: number }> {
    const end = Date.now() + ms;
    for (;;) {
      const i = this.msgs.findIndex((m) => m.subject === subject);
      if (i >= 0) return { ...this.msgs[i]!, index: i };
      const left = end - Date.now();
      if (left <= 0) throw new Error(`no reply on ${subject}`);
      await new Promise<void>((r) => {
        const t = setTimeout(r, left);
        this.waiters.push(() => {
          clearTimeout(t);
          r();
        });
      });
    }
  }

  async json(subject: string): Promise<Record<string, unknown> & { index: number }> {
    const r = await this.reply(subject);
    return { ...(JSON.parse(r.body) as Record<string, unknown>), index: r.index };
  }

  close(): void {
    this.s.destroy();
  }
}


/** What a subscriber with sids 1..subs on one subject got, counted as it arrives: messages
 *  whose payload is "m<digit>"; each sid must get m0, m1, ... in order. Takes over s's data. */
export class FanoutReceiver {
  got = 0;
  outOfOrder = 0;
  private readonly next: Int32Array;
  private tail = "";

  constructor(s: net.Socket, subject: string, subs: number) {
    this.next = new Int32Array(subs + 1);
    const re = new RegExp(`MSG ${subject} (\\d+) 2\\r\\nm(\\d)\\r\\n`, "g");
    s.removeAllListeners("data");
    s.on("data", (d: string) => {
      const t = this.tail + d;
      re.lastIndex = 0;
      let m: RegExpExecArray | null;
      let last = 0;
      while ((m = re.exec(t)) !== null) {
        const sid = Number(m[1]);
        if (Number(m[2]) !== this.next[sid]) this.outOfOrder++;
        this.next[sid]!++;
        this.got++;
        last = re.lastIndex;
      }
      this.tail = t.slice(last);
    });
  }
}

/** Samples count() once per turn of this process's loop (a setImmediate ticker) until
 *  stop(), which answers the most it grew between two samples. */
export function perTurnGrowth(count: () => number): { stop(): number } {
  const samples: number[] = [count()];
  let ticking = true;
  const tick = (): void => {
    samples.push(count());
    if (ticking) setImmediate(tick);
  };
  setImmediate(tick);
  return {
    stop(): number {
      ticking = false;
      samples.push(count());
      let most = 0;
      for (let i = 1; i < samples.length; i++) most = Math.max(most, samples[i]! - samples[i - 1]!);
      return most;
    },
  };
}
