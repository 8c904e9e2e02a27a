// A TCP proxy for fault tests on loopback (tc netem is not available on this kernel): it
// forwards to a target and can delay every chunk, stall (hold everything, as a blackholed
// link does, without closing), and cut every connection. Routes between test servers dial the
// proxy instead of the peer.

import net from "node:net";

export class TcpProxy {
  private server: net.Server | null = null;
  private readonly pairs = new Set<{ a: net.Socket; b: net.Socket }>();
  /** Added latency per chunk, each direction, in ms. */
  delayMs = 0;
  private stalled = false;
  private readonly held: Array<() => void> = [];
  port = 0;
  bytes = 0;

  constructor(
    private readonly targetHost: string,
    private readonly targetPort: number,
  ) {}

  async start(port = 0): Promise<number> {
    const srv = net.createServer((a) => this.accept(a));
    this.server = srv;
    await new Promise<void>((resolve, reject) => {
      srv.once("error", reject);
      srv.listen(port, "127.0.0.1", () => resolve());
    });
    const addr = srv.address();
    this.port = typeof addr === "object" && addr !== null ? addr.port : 0;
    return this.port;
  }

  private accept(a: net.Socket): void {
    const b = net.connect(this.targetPort, this.targetHost);
    const pair = { a, b };
    this.pairs.add(pair);
    const pipe = (from: net.Socket, to: net.Socket): void => {
      from.on("data", (d: Buffer) => {
        this.bytes += d.length;
        const send = (): void => {
          if (!to.destroyed) to.write(d);
        };
        if (this.stalled) this.held.push(send);
        else if (this.delayMs > 0) setTimeout(() => (this.stalled ? this.held.push(send) : send()), this.delayMs);
        else send();
      });
    };
    pipe(a, b);
    pipe(b, a);
    const close = (): void => {
      a.destroy();
      b.destroy();
      this.pairs.delete(pair);
    };
    a.on("close", close);
    b.on("close", close);
    a.on("error", close);
    b.on("error", close);
  }

  /** Hold every byte in both directions until resume() (connections stay open). */
  stall(): void {
    this.stalled = true;
  }

  /** Release what was held, in order, and forward again. */
  resume(): void {
    this.stalled = false;
    for (const f of this.held.splice(0)) f();
  }

  /** Reset every connection through the proxy. */
  cut(): void {
    for (const p of this.pairs) {
      p.a.destroy();
      p.b.destroy();
    }
    this.pairs.clear();
    this.held.length = 0;
  }

  get connections(): number {
    return this.pairs.size;
  }

  async close(): Promise<void> {
    this.cut();
    const srv = this.server;
    this.server = null;
    if (srv !== null) await new Promise<void>((r) => srv.close(() => r()));
  }
}
