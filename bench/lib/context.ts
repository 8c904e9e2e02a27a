// What every case context shares: raw connections to one server, remembered so the runner can
// close them after the case.
import { RawConn, TCP, type ConnMode, type Transport } from "./conn.js";
import { Requester } from "./request.js";
import { HOST, type ServerProc } from "./servers.js";
import type { BenchOptions, CaseContext } from "./types.js";

export abstract class ServerConns {
  readonly conns: RawConn[] = [];

  /** The port of the server under test now (it may be replaced between cases). */
  protected abstract serverPort(): number;

  /** How connections reach the server: plain TCP unless a context says otherwise. */
  protected transport(): Transport {
    return TCP;
  }

  async connect(mode: ConnMode): Promise<RawConn> {
    const c = await RawConn.connect({
      port: this.serverPort(),
      host: HOST,
      mode,
      handshakeTimeoutMs: 10_000,
      transport: this.transport(),
    });
    this.conns.push(c);
    return c;
  }

  async requester(): Promise<Requester> {
    return new Requester(await this.connect("detail"));
  }
}

/** A case context on a server the case started itself (connections closed by closeAll), its
 *  connections over `transport`. */
export class OwnServerContext extends ServerConns implements CaseContext {
  constructor(
    readonly server: ServerProc,
    readonly opts: BenchOptions,
    private readonly outer: CaseContext,
    readonly via: Transport = TCP,
  ) {
    super();
  }

  protected serverPort(): number {
    return this.server.port;
  }

  protected override transport(): Transport {
    return this.via;
  }

  freshServer(): Promise<ServerProc> {
    return Promise.reject(new Error("freshServer is not available on a server a case started itself"));
  }

  note(text: string): void {
    this.outer.note(text);
  }

  closeAll(): void {
    for (const c of this.conns.splice(0)) c.close();
  }
}
