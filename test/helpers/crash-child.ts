// A tsnats child process on a store directory of its own, to be SIGKILLed and started again on
// the same store: the crash suites' common frame. One client connection at a time, without
// reconnects (each boot() opens a fresh one).
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { startTsnatsChild, type ChildServer } from "./core-child.js";

export class CrashableTsnats {
  readonly dir: string;
  child: ChildServer | null = null;
  nc: NatsConnection | null = null;

  constructor(prefix: string) {
    this.dir = mkdtempSync(join(tmpdir(), prefix));
  }

  /** Starts the server on the store (random port) and connects to it. */
  async boot(): Promise<NatsConnection> {
    assert.equal(this.child, null, "boot() while a server is running");
    this.child = await startTsnatsChild(["-a", "127.0.0.1", "-p", "-1", "-js", "-sd", this.dir]);
    this.nc = await connect({ servers: this.child.url, reconnect: false });
    return this.nc;
  }

  /** SIGKILL, and wait until the process is gone. */
  async sigkill(): Promise<void> {
    const c = this.child;
    assert.ok(c !== null, "sigkill() without a server");
    c.proc.kill("SIGKILL");
    assert.equal(await c.exited, "SIGKILL");
    this.child = null;
    // The connection is dead; closing it only releases the client's resources.
    await this.nc?.close().catch(() => undefined);
    this.nc = null;
  }

  /** Stops whatever runs and removes the store. */
  async dispose(): Promise<void> {
    await this.nc?.close().catch(() => undefined);
    await this.child?.stop();
    rmSync(this.dir, { recursive: true, force: true });
  }
}
