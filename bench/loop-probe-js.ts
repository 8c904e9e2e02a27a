// JetStream bystander probe: a stream of N messages, then one client's API work while a
// bystander PINGs every 5 ms. Usage:
//   node dist/bench/loop-probe-js.js <tsnats|nats-server> <file|memory> [N]
import net from "node:net";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startNatsServerChild, startTsnatsChild } from "../test/helpers/core-child.js";
import { bystander } from "./loop-probe.js";

// Counts are kept as data arrives (scanning only the new bytes): re-splitting megabytes of
// replies on every read stalled this process's own loop and with it the bystander.
const NEEDLES = ["MSG _R.1", "PONG"];

class Conn {
  private text = "";
  private counts = new Map<string, number>();
  private waiters: (() => void)[] = [];
  constructor(readonly s: net.Socket) {
    s.on("data", (d: Buffer) => {
      const oldLen = this.text.length;
      const from = Math.max(0, oldLen - 16);
      this.text += d.toString("latin1");
      for (const nd of NEEDLES) {
        let i = this.text.indexOf(nd, from);
        let k = 0;
        while (i >= 0) {
          k++;
          i = this.text.indexOf(nd, i + nd.length);
        }
        // A needle straddling the old tail was counted already: recount the overlap.
        let dup = 0;
        let j = this.text.indexOf(nd, from);
        while (j >= 0 && j + nd.length <= oldLen) {
          dup++;
          j = this.text.indexOf(nd, j + nd.length);
        }
        this.counts.set(nd, (this.counts.get(nd) ?? 0) + k - dup);
      }
      if (this.text.length > 1 << 20) this.text = this.text.slice(-4096);
      const w = this.waiters;
      this.waiters = [];
      for (const f of w) f();
    });
    s.on("error", () => {});
  }
  static async open(port: number): Promise<Conn> {
    const s = await new Promise<net.Socket>((res, rej) => {
      const c = net.connect({ port, host: "127.0.0.1" });
      c.once("error", rej);
      c.once("connect", () => res(c));
    });
    const c = new Conn(s);
    s.write('CONNECT {"verbose":false,"pedantic":false,"headers":true}\r\nSUB _R.> 1\r\n');
    return c;
  }
  count(needle: string): number {
    return this.counts.get(needle) ?? 0;
  }
  async until(pred: () => boolean, ms = 600000): Promise<void> {
    const end = Date.now() + ms;
    while (!pred()) {
      if (Date.now() > end) throw new Error("timeout: " + this.text.slice(-300));
      await new Promise<void>((r) => {
        this.waiters.push(r);
        setTimeout(r, 50);
      });
    }
  }
  clear(): void {
    this.text = "";
    this.counts.clear();
  }
  req(subject: string, body: string, reply = "_R.1"): void {
    this.s.write(`PUB ${subject} ${reply} ${Buffer.byteLength(body)}\r\n${body}\r\n`);
  }
  get last(): string {
    return this.text.slice(-400);
  }
}

async function main(): Promise<void> {
  const [kind = "tsnats", storage = "file", nArg = "1000000"] = process.argv.slice(2);
  const n = Number(nArg);
  const dir = mkdtempSync(join(tmpdir(), "loopjs-"));
  const args = ["-p", "-1", "-a", "127.0.0.1", "-js", "-sd", dir];
  const srv = kind === "nats-server" ? await startNatsServerChild(args) : await startTsnatsChild(args);
  try {
    const c = await Conn.open(srv.port);
    c.req("$JS.API.STREAM.CREATE.S", JSON.stringify({ name: "S", subjects: ["s.>"], storage }));
    await c.until(() => c.count("MSG _R.1") >= 1);
    // Fill: plain PUBs, 1000 subjects, in batches, then wait for the stream to hold them.
    const payload = "0123456789abcdef";
    const batch = 10000;
    for (let i = 0; i < n; i += batch) {
      const parts: string[] = [];
      for (let k = i; k < Math.min(n, i + batch); k++) parts.push(`PUB s.${k % 1000} 16\r\n${payload}\r\n`);
      parts.push("PING\r\n");
      const have = c.count("PONG");
      c.s.write(parts.join(""));
      await c.until(() => c.count("PONG") > have);
    }
    for (;;) {
      c.clear();
      c.req("$JS.API.STREAM.INFO.S", "");
      await c.until(() => c.count("MSG _R.1") >= 1 && c.last.includes("}"));
      const m = /"messages":(\d+)/.exec(c.last);
      if (m && Number(m[1]) >= n) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    const cases: [string, () => void, () => boolean][] = [
      [
        "consumer create (filter s.7, 1M stream)",
        () => c.req("$JS.API.CONSUMER.CREATE.S.C1", JSON.stringify({ stream_name: "S", config: { name: "C1", filter_subject: "s.7", ack_policy: "explicit" } })),
        () => c.count("MSG _R.1") >= 1,
      ],
      [
        "consumer create (filter s.*, deliver last_per_subject)",
        () => c.req("$JS.API.CONSUMER.CREATE.S.C2", JSON.stringify({ stream_name: "S", config: { name: "C2", filter_subject: "s.*", deliver_policy: "last_per_subject", ack_policy: "explicit" } })),
        () => c.count("MSG _R.1") >= 1,
      ],
      [
        "stream info subjects_filter >",
        () => c.req("$JS.API.STREAM.INFO.S", JSON.stringify({ subjects_filter: ">" })),
        () => c.count("MSG _R.1") >= 1,
      ],
      [
        "5000 STREAM.INFO in one write",
        () => {
          const parts: string[] = [];
          for (let i = 0; i < 5000; i++) parts.push(`PUB $JS.API.STREAM.INFO.S _R.1 0\r\n\r\n`);
          c.s.write(parts.join(""));
        },
        () => c.count("MSG _R.1") >= 5000,
      ],
      ["purge filter s.3", () => c.req("$JS.API.STREAM.PURGE.S", JSON.stringify({ filter: "s.3" })), () => c.count("MSG _R.1") >= 1],
      ["purge all", () => c.req("$JS.API.STREAM.PURGE.S", ""), () => c.count("MSG _R.1") >= 1],
    ];
    for (const [name, go, done] of cases) {
      c.clear();
      let resolve!: () => void;
      const finished = new Promise<void>((r) => (resolve = r));
      const probe = bystander(srv.port, 5, finished);
      await new Promise((r) => setTimeout(r, 100));
      const t0 = performance.now();
      go();
      await c.until(done);
      const ms = performance.now() - t0;
      await new Promise((r) => setTimeout(r, 50));
      resolve();
      const st = await probe;
      console.log(JSON.stringify({ kind, storage, n, case: name, op_ms: Math.round(ms), p50: +st.p50.toFixed(1), p99: +st.p99.toFixed(1), max: +st.max.toFixed(1), over50: st.over50 }));
      if (name.startsWith("consumer") && !c.last.includes('"config"')) console.log("  reply:", c.last.slice(-200));
    }
    c.s.destroy();
  } finally {
    await srv.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

void main();
