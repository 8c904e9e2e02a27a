// Shared setup for the JetStream interop suites: nats-server (a child process, when installed)
// and tsnats (in-process) side by side, each with JetStream on its own temporary store, one
// @nats-io/transport-node connection to each; and the JSON comparison they all use.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { startServer, type RunningServer } from "../../src/index.js";
import { findNatsServer, startNatsServerChild, type ChildServer } from "./core-child.js";

export const haveNatsServer = findNatsServer() !== null;

export interface JsPair {
  readonly ncRef: NatsConnection;
  readonly ncOurs: NatsConnection;
  /** nats-server's version from its INFO. */
  readonly refVersion: string;
  close(): Promise<void>;
}

/** Starts both servers with JetStream (stores under tmpdir()/<prefix>*) and connects to each. */
export async function startJsPair(prefix: string): Promise<JsPair> {
  const dirs: string[] = [];
  const tmp = (): string => {
    const d = mkdtempSync(join(tmpdir(), prefix));
    dirs.push(d);
    return d;
  };
  let ref: ChildServer | null = null;
  let ours: RunningServer | null = null;
  const conns: NatsConnection[] = [];
  const close = async (): Promise<void> => {
    for (const nc of conns) await nc.close().catch(() => undefined);
    await ref?.stop();
    await ours?.close();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  };
  try {
    ref = await startNatsServerChild(["-a", "127.0.0.1", "-p", "-1", "-js", "-sd", tmp()]);
    ours = await startServer({ port: 0, host: "127.0.0.1", jetstream: { enabled: true, storeDir: tmp() } });
    const ncRef = await connect({ servers: ref.url });
    conns.push(ncRef);
    const ncOurs = await connect({ servers: ours.url });
    conns.push(ncOurs);
    return { ncRef, ncOurs, refVersion: ncRef.info?.version ?? "0.0.0", close };
  } catch (e) {
    await close();
    throw e;
  }
}

const TIME_RE = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$/;

/** Replaces RFC 3339 timestamps (not the zero time) by "<time>", recursively. */
export function normTimes(v: unknown): unknown {
  if (typeof v === "string") return TIME_RE.test(v) && !v.startsWith("0001-01-01") ? "<time>" : v;
  if (Array.isArray(v)) return v.map(normTimes);
  if (v !== null && typeof v === "object") {
    const o: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) o[k] = normTimes(x);
    return o;
  }
  return v;
}

export interface CoversOptions {
  /** Keys not compared at any depth. */
  skip: Set<string>;
  /** Called for every key of an object in `got` that `ref` lacks (fields newer than the reference). */
  onExtra?: (path: string, key: string) => void;
  /** When `ref` is not an error, `got` must not be one either. */
  strictErrors?: boolean;
}

/** Every field of `refv` must appear in `got` with the same value; error replies are compared
 *  by code and err_code only (descriptions change wording between releases). */
export function covers(got: unknown, refv: unknown, path: string, o: CoversOptions): void {
  if (refv !== null && typeof refv === "object" && !Array.isArray(refv)) {
    assert.ok(got !== null && typeof got === "object", `${path}: expected object, got ${JSON.stringify(got)}`);
    const g = got as Record<string, unknown>;
    const r = refv as Record<string, unknown>;
    if ("error" in r) {
      const re = r["error"] as Record<string, unknown>;
      const ge = g["error"] as Record<string, unknown> | undefined;
      assert.ok(ge !== undefined, `${path}: expected error ${JSON.stringify(re)}, got ${JSON.stringify(got).slice(0, 300)}`);
      assert.equal(ge["err_code"], re["err_code"], `${path}.error.err_code (ours ${JSON.stringify(ge)} vs ${JSON.stringify(re)})`);
      assert.equal(ge["code"], re["code"], `${path}.error.code`);
      if (o.strictErrors === true) return;
    } else if (o.strictErrors === true) {
      assert.ok(!("error" in g), `${path}: unexpected error ${JSON.stringify(g["error"])} (nats-server: ${JSON.stringify(r).slice(0, 200)})`);
    }
    if (o.onExtra !== undefined) for (const k of Object.keys(g)) if (!(k in r)) o.onExtra(path, k);
    for (const [k, x] of Object.entries(r)) {
      if (k === "error" || o.skip.has(k)) continue;
      covers(g[k], x, `${path}.${k}`, o);
    }
    return;
  }
  if (Array.isArray(refv) && refv.some((x) => x !== null && typeof x === "object")) {
    assert.ok(Array.isArray(got) && got.length === refv.length, `${path}: ${JSON.stringify(got)} vs ${JSON.stringify(refv)}`);
    refv.forEach((x, i) => covers((got as unknown[])[i], x, `${path}[${i}]`, o));
    return;
  }
  assert.deepEqual(got, refv, path);
}
