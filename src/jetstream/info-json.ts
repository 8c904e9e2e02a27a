// A stream's info as JSON text for STREAM.INFO, CREATE, UPDATE and LIST replies, the same
// fields in the same order as nats-server. What only changes with the config (the config
// JSON, thousands of subjects, and the created time) is kept per config object, so a burst of
// STREAM.INFO costs the state, a timestamp and one buffer per reply: the plain request (no
// body) is answered from a cached head of bytes and a short tail (infoReply), without the
// reply being built as one long string and encoded again.

import { ApiType, type StreamConfig, type StreamSourceInfoWire } from "../contracts/wire.js";
import { rfc3339Ns } from "../stream/time.js";
import type { Stream } from "../stream/stream.js";

/** What the info text needs of the API router and the service. */
export interface InfoJsonHost {
  /** The JetStream domain, "" for none. */
  domain(): string;
  serverName(): string;
  /** The cluster block of a clustered stream; undefined: not clustered (this server leads). */
  clusterBlock(name: string): Record<string, unknown> | undefined;
  mirrorInfo(st: Stream): StreamSourceInfoWire | undefined;
  sourcesInfo(st: Stream): StreamSourceInfoWire[] | undefined;
  nowNs(): number;
}

/** A stream's config as JSON text and its created time, for as long as its config object
 *  is the same (an update replaces it), and the head of a plain STREAM.INFO reply as bytes
 *  (made on first use). */
interface WireCache {
  cfg: StreamConfig;
  config: string;
  created: string;
  infoHead: Buffer | null;
  /** A plain STREAM.INFO reply up to its "ts" (head, state, domain, cluster block), while
   *  what it shows is unchanged (bodyKey): a burst of INFO on a quiet stream costs one
   *  copy and a timestamp per reply. Only for streams without a mirror, sources or a
   *  cluster block. */
  body: Buffer | null;
  bodyKey: (number | string)[];
}

const INFO_HEAD = `{"type":${JSON.stringify(ApiType.StreamInfo)},"total":0,"offset":0,"limit":0,`;

export class StreamInfoText {
  private readonly cache = new WeakMap<Stream, WireCache>();

  constructor(private readonly host: InfoJsonHost) {}

  /** The cached wire config and created time of a stream. */
  private wire(st: Stream): WireCache {
    const c = this.cache.get(st);
    if (c !== undefined && c.cfg === st.cfg) return c;
    const n: WireCache = { cfg: st.cfg, config: JSON.stringify(st.wireConfig()), created: JSON.stringify(rfc3339Ns(st.createdNs)), infoHead: null, body: null, bodyKey: [] };
    this.cache.set(st, n);
    return n;
  }

  /** info(st, opts) as JSON text, after `head` (fields with their trailing comma, or "") and
   *  before `tail` (fields, each after a comma). withCluster false: without the cluster
   *  block (create and update replies). */
  json(st: Stream, head: string, opts?: { deletedDetails?: boolean }, withCluster = true, tail = ""): string {
    const w = this.wire(st);
    return `{${head}"config":${w.config},"created":${w.created},"state":${this.fromState(st, opts, withCluster, tail)}`;
  }

  /** The whole reply to a STREAM.INFO without a body on a stream without alternates: the
   *  bytes of json(st, '"total":0,"offset":0,"limit":0,') with the response type first. */
  infoReply(st: Stream): Buffer {
    const w = this.wire(st);
    let head = w.infoHead;
    if (head === null) head = w.infoHead = Buffer.from(`${INFO_HEAD}"config":${w.config},"created":${w.created},"state":`);
    const h = this.host;
    if (h.clusterBlock(st.name) === undefined && h.mirrorInfo(st) === undefined && h.sourcesInfo(st) === undefined) {
      const body = this.plainBody(st, w, head);
      // rfc3339Ns is digits, '-', ':', 'T', '.' and 'Z': quoted as is, one byte a char.
      const ts = rfc3339Ns(h.nowNs());
      const out = Buffer.allocUnsafe(body.length + ts.length + 9);
      body.copy(out, 0);
      let p = out.write(',"ts":"', body.length, "latin1") + body.length;
      p += out.write(ts, p, "latin1");
      out[p++] = 0x22; // "
      out[p] = 0x7d; // }
      return out;
    }
    const rest = this.fromState(st, undefined, true, "");
    const out = Buffer.allocUnsafe(head.length + Buffer.byteLength(rest));
    head.copy(out, 0);
    out.write(rest, head.length);
    return out;
  }

  /** The cached reply up to "ts" (WireCache.body), made again when what it shows moved. */
  private plainBody(st: Stream, w: WireCache, head: Buffer): Buffer {
    const s = st.store.state();
    const h = this.host;
    const domain = h.domain();
    const server = h.serverName();
    const cc = st.consumerCount();
    const k = w.bodyKey;
    if (
      w.body !== null &&
      k[0] === s.msgs &&
      k[1] === s.bytes &&
      k[2] === s.firstSeq &&
      k[3] === s.lastSeq &&
      k[4] === s.firstTsNs &&
      k[5] === s.lastTsNs &&
      k[6] === s.numSubjects &&
      k[7] === s.numDeleted &&
      k[8] === cc &&
      k[9] === domain &&
      k[10] === server
    ) {
      return w.body;
    }
    let text = JSON.stringify(st.state());
    if (domain !== "") text += `,"domain":${JSON.stringify(domain)}`;
    text += `,"cluster":{"leader":${JSON.stringify(server)}}`;
    const body = Buffer.allocUnsafe(head.length + Buffer.byteLength(text));
    head.copy(body, 0);
    body.write(text, head.length);
    w.body = body;
    w.bodyKey = [s.msgs, s.bytes, s.firstSeq, s.lastSeq, s.firstTsNs, s.lastTsNs, s.numSubjects, s.numDeleted, cc, domain, server];
    return body;
  }

  /** From the state's value to the end. */
  private fromState(st: Stream, opts: { deletedDetails?: boolean } | undefined, withCluster: boolean, tail: string): string {
    const h = this.host;
    let s = JSON.stringify(st.state(opts));
    const domain = h.domain();
    if (domain !== "") s += `,"domain":${JSON.stringify(domain)}`;
    if (withCluster) {
      const block = h.clusterBlock(st.name);
      s += `,"cluster":${block !== undefined ? JSON.stringify(block) : `{"leader":${JSON.stringify(h.serverName())}}`}`;
    }
    const mirror = h.mirrorInfo(st);
    if (mirror) s += `,"mirror":${JSON.stringify(mirror)}`;
    const sources = h.sourcesInfo(st);
    if (sources) s += `,"sources":${JSON.stringify(sources)}`;
    return s + `,"ts":${JSON.stringify(rfc3339Ns(h.nowNs()))}${tail}}`;
  }
}
