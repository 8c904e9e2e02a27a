// Request/reply over a detail-mode RawConn, for setup calls ($JS.API.*) and probes.
// Not used on measured hot paths, which drive their own inbox tokens.

import { randomBytes } from "node:crypto";
import { lastTokenNumber, statusCode, type RawConn } from "./conn.js";

export interface Reply {
  status: number;
  hdr: string;
  payload: Buffer;
}

interface Pending {
  resolve: (r: Reply) => void;
  reject: (e: Error) => void;
  timer: NodeJS.Timeout;
}

export function newInboxPrefix(): string {
  return `_INBOX.${randomBytes(8).toString("hex")}`;
}

export class Requester {
  readonly conn: RawConn;
  private readonly prefix: string;
  private readonly pending = new Map<number, Pending>();
  private next = 1;

  constructor(conn: RawConn) {
    this.conn = conn;
    this.prefix = newInboxPrefix();
    conn.sub(`${this.prefix}.*`, (subject, _reply, hdr, payload) => {
      const id = lastTokenNumber(subject);
      const p = this.pending.get(id);
      if (p === undefined) return;
      this.pending.delete(id);
      clearTimeout(p.timer);
      p.resolve({
        status: statusCode(hdr),
        hdr: hdr === null ? "" : hdr.toString("latin1"),
        payload: Buffer.from(payload),
      });
    });
    conn.flush();
  }

  request(subject: string, body: string | Buffer, timeoutMs = 10_000): Promise<Reply> {
    const id = this.next++;
    const payload = typeof body === "string" ? Buffer.from(body) : body;
    return new Promise<Reply>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new Error(`request to ${subject} timed out after ${timeoutMs} ms`));
      }, timeoutMs);
      this.pending.set(id, { resolve, reject, timer });
      this.conn.queuePub(subject, `${this.prefix}.${id}`, payload);
      this.conn.flush();
    });
  }

  /** A JSON API call; throws with the server's description when the reply carries an error. */
  async api<T>(subject: string, body: unknown, timeoutMs = 10_000): Promise<T> {
    const r = await this.request(subject, body === undefined ? "" : JSON.stringify(body), timeoutMs);
    if (r.status === 503) throw new Error(`no responders for ${subject}`);
    if (r.status !== 0) throw new Error(`${subject}: status ${r.hdr.split("\r\n")[0] ?? r.status}`);
    const parsed = JSON.parse(r.payload.toString("utf8")) as { error?: { code?: number; err_code?: number; description?: string } };
    if (parsed.error !== undefined) {
      const e = parsed.error;
      throw new Error(`${subject}: ${e.description ?? "error"} (${e.code ?? "?"}/${e.err_code ?? "?"})`);
    }
    return parsed as T;
  }
}
