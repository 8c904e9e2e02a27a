// What every case context shares: raw connections to one server, remembered so the runner can
// close them after the case.
import { RawConn, type ConnMode } from "./conn.js";
import { Requester } from "./request.js";
import { HOST } from "./servers.js";

export abstract class ServerConns {
  readonly conns: RawConn[] = [];

  /** The port of the server under test now (it may be replaced between cases). */
  protected abstract serverPort(): number;

  async connect(mode: ConnMode): Promise<RawConn> {
    const c = await RawConn.connect({ port: this.serverPort(), host: HOST, mode, handshakeTimeoutMs: 10_000 });
    this.conns.push(c);
    return c;
  }

  async requester(): Promise<Requester> {
    return new Requester(await this.connect("detail"));
  }
}
