// A raw TCP client for protocol-level tests: write bytes, collect everything the server
// sends, and wait (with a bound) for a condition on the collected text or for the close.

import net from "node:net";

export const DEFAULT_WAIT_MS = 5000;

export class RawClient {
  readonly socket: net.Socket;
  private data = "";
  closed = false;
  private waiters: (() => void)[] = [];

  private constructor(socket: net.Socket) {
    this.socket = socket;
    socket.setEncoding("latin1");
    socket.on("data", (d: string) => {
      this.data += d;
      this.wake();
    });
    socket.on("error", () => {
      /* peers closing on us are expected in these tests */
    });
    socket.on("close", () => {
      this.closed = true;
      this.wake();
    });
  }

  /** Connects; with `paused` the socket never reads (a client that stops reading). */
  static connect(port: number, host = "127.0.0.1", paused = false): Promise<RawClient> {
    return new Promise((resolve, reject) => {
      const s = net.connect({ port, host });
      s.once("error", reject);
      s.once("connect", () => {
        s.off("error", reject);
        const c = new RawClient(s);
        if (paused) s.pause();
        resolve(c);
      });
    });
  }

  /** Everything received so far. */
  get text(): string {
    return this.data;
  }

  /** Drop what has been received so far. */
  clear(): void {
    this.data = "";
  }

  write(s: string | Buffer): void {
    if (!this.closed) this.socket.write(s);
  }

  private wake(): void {
    const w = this.waiters;
    this.waiters = [];
    for (const f of w) f();
  }

  /** Waits until `pred(text)` is true; throws after `ms` with what was received. */
  async waitFor(pred: (text: string) => boolean, what: string, ms = DEFAULT_WAIT_MS): Promise<string> {
    const deadline = Date.now() + ms;
    for (;;) {
      if (pred(this.data)) return this.data;
      const left = deadline - Date.now();
      if (left <= 0 || (this.closed && !pred(this.data))) {
        if (this.closed && left > 0) throw new Error(`connection closed while waiting for ${what}; got ${JSON.stringify(this.data)}`);
        throw new Error(`timed out waiting for ${what}; got ${JSON.stringify(this.data)}`);
      }
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(t);
          resolve();
        });
      });
    }
  }

  /** Waits for `needle` to appear in the received text. */
  waitForText(needle: string, ms = DEFAULT_WAIT_MS): Promise<string> {
    return this.waitFor((t) => t.includes(needle), JSON.stringify(needle), ms);
  }

  /** Waits until the text holds `n` occurrences of `needle`. */
  waitForCount(needle: string, n: number, ms = DEFAULT_WAIT_MS): Promise<string> {
    return this.waitFor((t) => t.split(needle).length - 1 >= n, `${n} x ${JSON.stringify(needle)}`, ms);
  }

  /** Waits for the server to close the connection. */
  async waitClosed(ms = DEFAULT_WAIT_MS): Promise<void> {
    const deadline = Date.now() + ms;
    while (!this.closed) {
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`connection not closed within ${ms}ms; got ${JSON.stringify(this.data)}`);
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(t);
          resolve();
        });
      });
    }
  }

  /** Sends CONNECT (with the given fields) + PING and waits for the PONG. */
  async handshake(connect: Record<string, unknown> = { verbose: false, pedantic: false }): Promise<void> {
    await this.waitForText("\r\n"); // INFO
    this.write(`CONNECT ${JSON.stringify(connect)}\r\nPING\r\n`);
    await this.waitForText("PONG\r\n");
  }

  /** Round trip: PING and wait for one more PONG than seen so far. */
  async ping(): Promise<void> {
    const have = this.data.split("PONG\r\n").length - 1;
    this.write("PING\r\n");
    await this.waitForCount("PONG\r\n", have + 1);
  }

  close(): void {
    this.socket.destroy();
  }
}

/** Resolves once `cond()` holds; throws after `ms`. Polls on a short interval. */
export async function waitUntil(cond: () => boolean, what: string, ms = DEFAULT_WAIT_MS): Promise<void> {
  const deadline = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}
