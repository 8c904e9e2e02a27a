// Route links between test servers on loopback through one TCP proxy per server (tc netem is
// not available here). Every server advertises its proxy as its cluster address and lists the
// other servers' proxies as its routes, so every route connection passes through the proxy of
// the server it was dialled to. The proxy reads the dialler's server id from its CONNECT line
// and learns every server's id -> name from the INFO lines passing by, so links are known by
// pair of names: block(a, b) holds every byte between
// a and b in both directions without closing anything (a blackholed link: the servers find it
// stale by their pings), heal() lets bytes flow again (or resets the blocked connections),
// cut(a, b) resets them at once.

import net from "node:net";

interface Conn {
  /** Dialler's server id (CONNECT "name"), "" until seen. */
  fromId: string;
  to: string;
  a: net.Socket;
  b: net.Socket;
  held: Array<() => void>;
  preA: string;
  preB: string;
}

export class RouteMesh {
  private readonly servers: net.Server[] = [];
  private readonly conns = new Set<Conn>();
  /** Blocked pairs, "a|b" with a < b. */
  private readonly blocked = new Set<string>();
  /** Server id -> name, from the INFO lines seen. */
  private readonly names_ = new Map<string, string>();
  /** Proxy ports by server index (what each server advertises). */
  readonly ports: number[] = [];
  /** The servers' real route ports by index (set before start()). */
  constructor(
    readonly names: readonly string[],
    private readonly routePorts: readonly number[],
  ) {}

  async start(): Promise<number[]> {
    for (let i = 0; i < this.names.length; i++) {
      const to = this.names[i]!;
      const port = this.routePorts[i]!;
      const srv = net.createServer((a) => this.accept(a, to, port));
      this.servers.push(srv);
      await new Promise<void>((resolve, reject) => {
        srv.once("error", reject);
        srv.listen(0, "127.0.0.1", () => resolve());
      });
      this.ports.push((srv.address() as net.AddressInfo).port);
    }
    return this.ports;
  }

  private key(a: string, b: string): string {
    return a < b ? `${a}|${b}` : `${b}|${a}`;
  }

  private from(c: Conn): string {
    return this.names_.get(c.fromId) ?? "";
  }

  private isBlocked(c: Conn): boolean {
    const f = this.from(c);
    if (f === "") return false;
    return this.blocked.has(this.key(f, c.to));
  }

  /** Read INFO and CONNECT lines from the start of a connection (both ways). */
  private snoop(c: Conn, text: string): string {
    let rest = text;
    for (;;) {
      const nl = rest.indexOf("\r\n");
      if (nl < 0) return rest.length > 64 * 1024 ? "" : rest;
      const line = rest.slice(0, nl);
      rest = rest.slice(nl + 2);
      const m = /^(INFO|CONNECT) (\{.*\})$/.exec(line);
      if (m === null) continue;
      try {
        const j = JSON.parse(m[2]!) as Record<string, unknown>;
        if (m[1] === "INFO" && typeof j["server_id"] === "string" && typeof j["server_name"] === "string") this.names_.set(j["server_id"], j["server_name"]);
        if (m[1] === "CONNECT" && typeof j["name"] === "string") c.fromId = j["name"];
      } catch {
        /* not ours to judge */
      }
    }
  }

  private accept(a: net.Socket, to: string, port: number): void {
    const b = net.connect(port, "127.0.0.1");
    const c: Conn = { fromId: "", to, a, b, held: [], preA: "", preB: "" };
    let snooped = 0;
    this.conns.add(c);
    const forward = (d: Buffer, dst: net.Socket): void => {
      const send = (): void => {
        if (!dst.destroyed) dst.write(d);
      };
      if (this.isBlocked(c)) c.held.push(send);
      else send();
    };
    // Only the handshake is read: the first few chunks each way.
    a.on("data", (d: Buffer) => {
      if (snooped++ < 16) c.preA = this.snoop(c, c.preA + d.toString("latin1"));
      forward(d, b);
    });
    b.on("data", (d: Buffer) => {
      if (snooped++ < 16) c.preB = this.snoop(c, c.preB + d.toString("latin1"));
      forward(d, a);
    });
    const close = (): void => {
      a.destroy();
      b.destroy();
      this.conns.delete(c);
    };
    a.on("close", close);
    b.on("close", close);
    a.on("error", close);
    b.on("error", close);
  }

  /** Hold every byte between servers a and b (by name), both ways, until heal(). */
  block(a: string, b: string): void {
    this.blocked.add(this.key(a, b));
  }

  /** Block every link of one server. */
  isolate(name: string): void {
    for (const o of this.names) if (o !== name) this.block(name, o);
  }

  /** Split into groups of names: links across groups are blocked. */
  partition(groups: string[][]): void {
    this.heal();
    for (const g of groups) for (const x of g) for (const y of this.names) if (!g.includes(y)) this.block(x, y);
  }

  /** Unblock everything. reset: close the connections that were blocked (as a long partition
   *  ends in resets) instead of delivering what they held. */
  heal(reset = false): void {
    const was = [...this.conns].filter((c) => this.isBlocked(c));
    this.blocked.clear();
    for (const c of was) {
      if (reset) {
        c.a.destroy();
        c.b.destroy();
      } else for (const f of c.held.splice(0)) f();
    }
  }

  /** Reset every connection between a and b now. */
  cut(a: string, b: string): void {
    const k = this.key(a, b);
    for (const c of this.conns) if (this.from(c) !== "" && this.key(this.from(c), c.to) === k) {
      c.a.destroy();
      c.b.destroy();
    }
  }

  /** Connections through the mesh by "from>to" (for checking that routes use it). */
  links(): Map<string, number> {
    const m = new Map<string, number>();
    for (const c of this.conns) {
      const k = `${this.from(c) || "?"}>${c.to}`;
      m.set(k, (m.get(k) ?? 0) + 1);
    }
    return m;
  }

  async close(): Promise<void> {
    for (const c of this.conns) {
      c.a.destroy();
      c.b.destroy();
    }
    this.conns.clear();
    for (const s of this.servers) await new Promise<void>((r) => s.close(() => r()));
  }
}
