// An in-process Bus for stream-layer tests: subject matching, queue groups (first member
// wins) and request/reply with captured replies. No sockets.
import type { Bus, InternalHandler, InternalSubscription } from "../../src/server/bus.js";
import { subjectMatches } from "../../src/subjects/subject.js";
import { JetStreamService } from "../../src/jetstream/service.js";
import { SystemClock, type Clock } from "../../src/runtime/clock.js";
import { systemScheduler } from "../../src/runtime/sched.js";
import { NodeFs } from "../../src/runtime/fs.js";
import { nullLogger } from "../../src/server/log.js";
import { defaultOptions, type JetStreamOptions } from "../../src/server/options.js";
import { parseHeaders, encodeHeaders, type ParsedHeaders } from "../../src/protocol/headers.js";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export interface Delivered {
  subject: string;
  reply: string;
  hdr: Buffer | null;
  payload: Buffer;
}

interface Sub {
  subject: string;
  queue: string;
  handler: InternalHandler;
  dead: boolean;
}

export class FakeBus implements Bus {
  private subs: Sub[] = [];
  subscribe(subject: string, handler: InternalHandler, queue?: string): InternalSubscription {
    const s: Sub = { subject, queue: queue ?? "", handler, dead: false };
    this.subs = [...this.subs, s];
    return {
      subject,
      unsubscribe: () => {
        s.dead = true;
        this.subs = this.subs.filter((x) => x !== s);
      },
    };
  }
  private mapPrefix = "";
  private mapFn: ((subject: string) => string | null) | null = null;
  mapSubjects(prefix: string, map: ((subject: string) => string | null) | null): void {
    this.mapPrefix = map === null ? "" : prefix;
    this.mapFn = map;
  }
  publish(subject: string, reply: string, hdr: Buffer | null, payload: Buffer): void {
    // As the server maps what clients publish (the tests publish as clients do).
    if (this.mapFn !== null && this.mapPrefix !== "" && subject.startsWith(this.mapPrefix)) subject = this.mapFn(subject) ?? subject;
    const seenQueues = new Set<string>();
    for (const s of this.subs) {
      if (s.dead || !subjectMatches(s.subject, subject)) continue;
      if (s.queue !== "") {
        if (seenQueues.has(s.queue)) continue;
        seenQueues.add(s.queue);
      }
      s.handler(subject, reply, hdr, payload);
    }
  }
  hasInterest(subject: string): boolean {
    return this.subs.some((s) => subjectMatches(s.subject, subject));
  }

  private inbox = 0;
  /** Publish and collect everything sent to a fresh inbox until `until` says done. */
  async request(subject: string, body: string | Buffer, opts: { hdr?: [string, string][]; until?: (got: Delivered[]) => boolean; timeoutMs?: number } = {}): Promise<Delivered[]> {
    const inbox = `_INBOX.test.${++this.inbox}`;
    const got: Delivered[] = [];
    const until = opts.until ?? ((g: Delivered[]) => g.length >= 1);
    let done!: () => void;
    const p = new Promise<void>((res) => (done = res));
    const sub = this.subscribe(inbox, (s, r, h, d) => {
      got.push({ subject: s, reply: r, hdr: h ? Buffer.from(h) : null, payload: Buffer.from(d) });
      if (until(got)) done();
    });
    const hdr = opts.hdr ? encodeHeaders(opts.hdr) : null;
    this.publish(subject, inbox, hdr, typeof body === "string" ? Buffer.from(body) : body);
    const t = setTimeout(done, opts.timeoutMs ?? 2000);
    await p;
    clearTimeout(t);
    sub.unsubscribe();
    return got;
  }

  async api(subject: string, body: unknown = "", hdr?: [string, string][]): Promise<Record<string, unknown>> {
    const b = typeof body === "string" ? body : JSON.stringify(body);
    const got = await this.request(subject, b, hdr ? { hdr } : {});
    if (got.length === 0) throw new Error(`no reply to ${subject}`);
    return JSON.parse(got[0]!.payload.toString()) as Record<string, unknown>;
  }

  /** Publish expecting a PubAck. */
  async pub(subject: string, data: string, hdr?: [string, string][]): Promise<Record<string, unknown>> {
    return this.api(subject, data, hdr);
  }
}

export function hdrs(d: Delivered): ParsedHeaders {
  return parseHeaders(d.hdr);
}

export interface Harness {
  bus: FakeBus;
  js: JetStreamService;
  storeDir: string;
  restart(): Promise<void>;
  close(): Promise<void>;
}

export async function startJs(opts: Partial<JetStreamOptions> = {}, clock: Clock = new SystemClock(), dir?: string): Promise<Harness> {
  const storeDir = dir ?? mkdtempSync(join(tmpdir(), "tsnats-stream-"));
  const bus = new FakeBus();
  const mk = (): JetStreamService =>
    new JetStreamService({
      bus,
      clock,
      sched: systemScheduler,
      fs: new NodeFs(),
      log: nullLogger,
      opts: { ...defaultOptions().jetstream, enabled: true, storeDir, ...opts },
      serverId: "SERVERID",
      serverName: "test-server",
      maxPayloadBytes: 1024 * 1024,
    });
  const h: Harness = {
    bus,
    js: mk(),
    storeDir,
    async restart() {
      await h.js.stop();
      h.js = mk();
      await h.js.start();
    },
    async close() {
      await h.js.stop();
      if (dir === undefined) rmSync(storeDir, { recursive: true, force: true });
    },
  };
  await h.js.start();
  return h;
}
