// Shared setup for the consumer e2e tests: one in-process tsnats with JetStream on a temp
// store, the @nats-io/jetstream clients, bounded waits and advisory collection.

import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect, type Msg, type NatsConnection, type Subscription } from "@nats-io/transport-node";
import { jetstream, jetstreamManager, type JetStreamClient, type JetStreamManager, type JsMsg } from "@nats-io/jetstream";
import { startServer, type RunningServer } from "../../src/index.js";
import type { UserEntry } from "../../src/server/options.js";

export interface JsEnv {
  readonly srv: RunningServer;
  readonly nc: NatsConnection;
  readonly jsm: JetStreamManager;
  readonly js: JetStreamClient;
  close(): Promise<void>;
}

/** users: an authorization users list; the env's own connection is then user "admin",
 *  password "admin", which the list must hold. */
export async function bootJs(prefix: string, users: UserEntry[] | null = null): Promise<JsEnv> {
  const dir = mkdtempSync(join(tmpdir(), `tsnats-e2e-${prefix}-`));
  const srv = await startServer({
    port: 0,
    host: "127.0.0.1",
    jetstream: { enabled: true, storeDir: dir },
    ...(users !== null ? { authorization: { users } } : {}),
  });
  const nc = await connect({ servers: srv.url, ...(users !== null ? { user: "admin", pass: "admin" } : {}) });
  const jsm = await jetstreamManager(nc);
  const js = jetstream(nc);
  return {
    srv,
    nc,
    jsm,
    js,
    close: async () => {
      await nc.close();
      await srv.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

import { until } from "./until.js";
export { until };

/** The err_code of a JetStream API error, from @nats-io/jetstream or nats 2.x. */
export function errCode(e: unknown): number | undefined {
  const x = e as { api_error?: { err_code?: number }; apiError?: () => { err_code?: number }; code?: unknown };
  if (typeof x.apiError === "function") return x.apiError().err_code;
  if (x.api_error?.err_code !== undefined) return x.api_error.err_code;
  return typeof x.code === "number" ? x.code : undefined;
}

export async function rejects(p: Promise<unknown>, code: number): Promise<void> {
  try {
    await p;
  } catch (e) {
    assert.equal(errCode(e), code, String(e));
    return;
  }
  assert.fail(`expected error ${code}`);
}

/** Collects JSON advisories published on a subject (wildcards allowed). */
export class Advisories {
  readonly got: { subject: string; body: Record<string, unknown> }[] = [];
  private readonly sub: Subscription;
  constructor(nc: NatsConnection, subject: string) {
    this.sub = nc.subscribe(subject, {
      callback: (err: Error | null, m: Msg) => {
        if (err === null) this.got.push({ subject: m.subject, body: m.json() });
      },
    });
  }
  async wait(n: number, boundMs = 10_000): Promise<{ subject: string; body: Record<string, unknown> }[]> {
    await until(`${n} advisories on ${this.sub.getSubject()} (have ${this.got.length})`, () => this.got.length >= n, boundMs);
    return this.got;
  }
  stop(): void {
    this.sub.unsubscribe();
  }
}

/** Fetches from a pull consumer until `n` messages arrived or `boundMs` passed. */
export async function fetchN(
  c: { fetch(o: { max_messages: number; expires: number }): Promise<AsyncIterable<JsMsg>> },
  n: number,
  boundMs = 5_000,
): Promise<JsMsg[]> {
  const out: JsMsg[] = [];
  const end = Date.now() + boundMs;
  while (out.length < n) {
    const left = end - Date.now();
    if (left < 1_000) break; // nats.js refuses expires below 1 s
    const it = await c.fetch({ max_messages: n - out.length, expires: Math.min(left, 2_000) });
    for await (const m of it) out.push(m);
  }
  return out;
}

/** One raw pull request for one message: its stream sequence and ack subject, or the status
 *  code that ended the request (404 for no_wait with nothing to deliver, 408 once `expiresMs`
 *  passed without a delivery). */
export async function pullOne(
  nc: NatsConnection,
  stream: string,
  consumer: string,
  req: { no_wait?: boolean; expiresMs?: number },
): Promise<{ seq: number; reply: string } | { status: number }> {
  const body: Record<string, unknown> = { batch: 1 };
  if (req.no_wait === true) body["no_wait"] = true;
  if (req.expiresMs !== undefined) body["expires"] = req.expiresMs * 1e6;
  const m = await nc.request(`$JS.API.CONSUMER.MSG.NEXT.${stream}.${consumer}`, JSON.stringify(body), {
    timeout: (req.expiresMs ?? 0) + 5_000,
    noMux: true, // a delivery keeps its stream subject: only a subscription of its own sees it
  });
  const reply = m.reply ?? "";
  if (!reply.startsWith("$JS.ACK.")) return { status: m.headers?.code ?? 0 };
  return { seq: Number(reply.split(".")[5]), reply };
}

export const seqs = (ms: readonly JsMsg[]): number[] => ms.map((m) => m.seq);
