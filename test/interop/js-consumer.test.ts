// Consumers against nats-server 2.9.10 and tsnats: the same $JS.API.CONSUMER requests,
// the same raw pull requests ($JS.API.CONSUMER.MSG.NEXT with a core subscription on the
// reply inbox), the same acks; replies compared after normalising times and generated names.
//
// tsnats follows nats-server 2.10-2.12, so fields newer than 2.9 are allowed on our side
// (every field 2.9.10 sends must match). In our replies and not in 2.9.10's, hence not
// compared (the first test checks that nothing else appears): config.metadata
// (_nats.req.level/_nats.ver/_nats.level, 2.11), config.name of durables (2.10), cluster on a
// single server (2.10), ts (2.10); possible but unused here: config.filter_subjects (2.10),
// pause_until/paused/pause_remaining and priority_* (2.11).
//
// Behaviour where tsnats follows a later release, asserted both ways (2.9.10's answer and
// ours): an ack floor at start - 1 before the first ack (2.14), opt_start_seq past the last
// message kept (2.11), no 409 for a heartbeat request beyond max_waiting (2.11.9), filters
// outside the stream's subjects allowed and invalid ones 10052 (2.10), create actions (2.10),
// pedantic mode (2.11), negative ack_wait/backoff refused and max_deliver defaulted before
// the backoff check (2.10/2.11). Values that differ between servers by design: created, ts, cluster, name of
// generated ephemerals, and the error descriptions (err_code and code are compared).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { createInbox, type NatsConnection, type Msg, type Subscription } from "@nats-io/transport-node";
import { until } from "../helpers/until.js";
import { covers as coversWith, haveNatsServer as haveNats, normTimes as norm, startJsPair, type JsPair } from "../helpers/interop-js.js";

let pair: JsPair | null = null;
let ncRef: NatsConnection;
let ncOurs: NatsConnection;

before(async () => {
  if (!haveNats) return;
  pair = await startJsPair("tsnats-interop-con-");
  ({ ncRef, ncOurs } = pair);
});

after(async () => {
  await pair?.close();
});

// Server-specific, or newer than 2.9.10 where 2.9.10 sends something else.
const SKIP = new Set(["created", "ts", "cluster", "leader", "server_id"]);
// Fields we send and 2.9.10 does not; collected to check the list in the header comment.
const extras = new Set<string>();

/** Every field of `refv` must appear in `got` with the same value; errors by code and err_code. */
function covers(got: unknown, refv: unknown, path: string, skip: Set<string>): void {
  coversWith(got, refv, path, {
    skip,
    strictErrors: true,
    onExtra: (at, k) => {
      if (at.includes(".CONSUMER.")) extras.add(`${at.split("|")[1] ?? ""}.${k}`.replace(/\[\d+\]/g, "[]"));
    },
  });
}

async function jreq(nc: NatsConnection, subject: string, body: unknown): Promise<Record<string, unknown>> {
  const r = await jreqOrNull(nc, subject, body);
  assert.ok(r !== null, `${subject}: no reply from ${nc === ncRef ? "nats-server" : "tsnats"}`);
  return r;
}

/** null when the server does not answer (no handler for that many tokens, say). */
async function jreqOrNull(nc: NatsConnection, subject: string, body: unknown): Promise<Record<string, unknown> | null> {
  const data = typeof body === "string" ? body : JSON.stringify(body);
  let m: Msg;
  try {
    m = await nc.request(subject, data, { timeout: 1000 });
  } catch (e) {
    if ((e as Error).name === "TimeoutError" || /timeout/i.test((e as Error).message)) return null;
    throw e;
  }
  if (m.headers?.code === 503) return { no_responders: true };
  return JSON.parse(m.string()) as Record<string, unknown>;
}

/** The same API request to both; the replies compared; both returned (normalised).
 *  `newer` names fields (paths below the reply) where tsnats follows a later nats-server
 *  than 2.9.10 on purpose: 2.9.10's value and ours are both asserted. */
async function same(
  subject: string,
  body: unknown = "",
  skip: Set<string> = SKIP,
  newer: Record<string, [ref: unknown, ours: unknown]> = {},
): Promise<[Record<string, unknown>, Record<string, unknown>]> {
  const ra = await jreqOrNull(ncRef, subject, body);
  const rb = await jreqOrNull(ncOurs, subject, body);
  if (ra === null) {
    assert.equal(rb, null, `${subject}: nats-server did not answer, tsnats did: ${JSON.stringify(rb)}`);
    return [{}, {}];
  }
  assert.ok(rb !== null, `${subject}: tsnats did not answer (nats-server: ${JSON.stringify(ra)})`);
  const a = norm(ra) as Record<string, unknown>;
  const b = norm(rb) as Record<string, unknown>;
  for (const [path, [rv, ov]] of Object.entries(newer)) {
    assert.deepEqual(dig(a, path), rv, `${subject}${path}: nats-server 2.9.10 (known difference)`);
    assert.deepEqual(dig(b, path), ov, `${subject}${path}: tsnats (known difference)`);
    setPath(a, path, ov);
  }
  startFloor(a, b, subject);
  covers(b, a, `${subject}|`, skip);
  return [a, b];
}

/** A consumer that starts past the stream's first message and has delivered nothing: 2.14
 *  (commit "Reset consumer to new starting sequence") and tsnats put its ack floor at the
 *  start - 1, where 2.9-2.12 report 0 until the first ack. */
function startFloor(a: Record<string, unknown>, b: Record<string, unknown>, subject: string): void {
  const ra = a["ack_floor"] as Record<string, unknown> | undefined;
  const rd = a["delivered"] as Record<string, unknown> | undefined;
  const ob = b["ack_floor"] as Record<string, unknown> | undefined;
  const od = b["delivered"] as Record<string, unknown> | undefined;
  if (ra === undefined || rd === undefined || ob === undefined || od === undefined) return;
  if (rd["consumer_seq"] !== 0 || ra["stream_seq"] !== 0 || ob["stream_seq"] === 0) return;
  assert.equal(ob["stream_seq"], od["stream_seq"], `${subject}: ack floor at the start (known difference)`);
  ra["stream_seq"] = ob["stream_seq"];
}

function dig(v: unknown, path: string): unknown {
  let x = v;
  for (const k of path.split(".").filter((p) => p !== "")) x = (x as Record<string, unknown> | undefined)?.[k];
  return x;
}

function setPath(v: Record<string, unknown>, path: string, value: unknown): void {
  const ks = path.split(".").filter((p) => p !== "");
  let x = v;
  for (const k of ks.slice(0, -1)) x = x[k] as Record<string, unknown>;
  x[ks[ks.length - 1]!] = value;
}

/** A request where 2.9.10 and tsnats (following a later nats-server, named in `why`)
 *  answer differently: 2.9.10's err_code (0 = success) and ours are both asserted. */
async function differs(subject: string, body: unknown, why: string, refCode: number, oursCode: number): Promise<void> {
  const code = (r: Record<string, unknown>): number => ((r["error"] as { err_code?: number } | undefined)?.err_code ?? 0);
  const a = await jreq(ncRef, subject, body);
  const b = await jreq(ncOurs, subject, body);
  assert.equal(code(a), refCode, `${subject}: nats-server 2.9.10 ${JSON.stringify(a).slice(0, 300)} (${why})`);
  assert.equal(code(b), oursCode, `${subject}: tsnats ${JSON.stringify(b).slice(0, 300)} (${why})`);
}

async function both(fn: (nc: NatsConnection) => Promise<void>): Promise<void> {
  await fn(ncRef);
  await fn(ncOurs);
}

async function publish(nc: NatsConnection, subject: string, payload: string | Uint8Array): Promise<void> {
  const m = await nc.request(subject, payload, { timeout: 2000 });
  const pa = JSON.parse(m.string()) as { seq?: number; error?: unknown };
  assert.ok(typeof pa.seq === "number", `publish ${subject}: ${m.string()}`);
}

// ---------- raw pull requests ----------

/** What one reply to a pull request looks like, comparable between servers. */
interface Seen {
  kind: "msg" | "status";
  /** msg: subject; status: "<code> <description>". */
  what: string;
  /** msg: payload; status: the Nats-Pending-* headers, "" when absent. */
  detail: string;
  /** msg: the ack reply subject with the timestamp replaced. */
  reply: string;
}

function seen(m: Msg): Seen {
  const h = m.headers;
  if (h !== undefined && h.code !== 0 && m.data.length === 0) {
    const pm = h.get("Nats-Pending-Messages");
    const pb = h.get("Nats-Pending-Bytes");
    const detail = pm === "" && pb === "" ? "" : `pending ${pm} msgs ${pb} bytes`;
    // A 400's description carries the JSON parser's message, which differs between Go and JS.
    const d = h.code === 400 && h.description.startsWith("Bad Request - ") ? "Bad Request - <why>" : h.description;
    return { kind: "status", what: `${h.code} ${d.toLowerCase()}`, detail, reply: "" };
  }
  const r = (m.reply ?? "").split(".");
  if (r.length >= 9) r[7] = "<ts>";
  return { kind: "msg", what: m.subject, detail: m.string(), reply: r.join(".") };
}

class Puller {
  readonly got: Seen[] = [];
  /** The ack reply subjects of the messages, as sent. */
  readonly replies: string[] = [];
  private readonly sub: Subscription;
  readonly inbox: string;
  private waiter: (() => void) | null = null;
  constructor(private readonly nc: NatsConnection) {
    this.inbox = createInbox();
    this.sub = nc.subscribe(this.inbox, {
      callback: (_e, m) => {
        this.got.push(seen(m));
        if (m.reply) this.replies.push(m.reply);
        this.waiter?.();
      },
    });
  }
  async ready(): Promise<this> {
    await this.nc.flush();
    return this;
  }
  pull(stream: string, consumer: string, body: unknown): void {
    this.nc.publish(`$JS.API.CONSUMER.MSG.NEXT.${stream}.${consumer}`, typeof body === "string" ? body : JSON.stringify(body), {
      reply: this.inbox,
    });
  }
  /** Wait until pred holds for what arrived (bounded). */
  async until(pred: (g: Seen[]) => boolean, what: string, boundMs = 5000): Promise<Seen[]> {
    const deadline = Date.now() + boundMs;
    while (!pred(this.got)) {
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`${what}: timed out; got ${JSON.stringify(this.got)}`);
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, Math.min(left, 100));
        this.waiter = () => {
          clearTimeout(t);
          resolve();
        };
      });
      this.waiter = null;
    }
    return this.got;
  }
  close(): void {
    this.sub.unsubscribe();
  }
}

const statuses = (g: Seen[]): number => g.filter((s) => s.kind === "status").length;
const msgs = (g: Seen[]): number => g.filter((s) => s.kind === "msg").length;

/** The same pull scenario on both servers; the sequences of replies compared. */
async function samePull(
  label: string,
  scenario: (nc: NatsConnection, p: Puller) => Promise<void>,
  done: (g: Seen[]) => boolean,
  settle?: (nc: NatsConnection) => Promise<void>,
  /** A known difference: what tsnats sends instead of 2.9.10's sequence. */
  newer?: { ref: (g: Seen[]) => Seen[]; oursDone: (g: Seen[]) => boolean },
): Promise<Seen[]> {
  const run = async (nc: NatsConnection): Promise<Seen[]> => {
    const p = await new Puller(nc).ready();
    try {
      await scenario(nc, p);
      await p.until(nc === ncOurs && newer ? newer.oursDone : done, `${label} (${nc === ncRef ? "nats-server" : "tsnats"})`);
      // Anything arriving right behind the last expected reply belongs to the sequence too.
      await nc.flush();
      if (settle) await settle(nc);
      return [...p.got];
    } finally {
      p.close();
    }
  };
  const a0 = await run(ncRef);
  const a = newer ? newer.ref(a0) : a0;
  const b = await run(ncOurs);
  if (process.env["SHOW_PULLS"]) console.log(label, JSON.stringify(a));
  assert.deepEqual(b, a, `${label}: tsnats ${JSON.stringify(b)}\n  nats-server ${JSON.stringify(a)}`);
  return a;
}

/** Ack with a confirmation (the ack reply comes back once the server applied it). */
async function ackSync(nc: NatsConnection, reply: string, kind = "+ACK"): Promise<void> {
  await nc.request(reply, kind, { timeout: 2000 });
}

const t = haveNats ? test : test.skip;

void t("consumer create / info / names / list / delete replies match, defaults filled in", async () => {
  await same("$JS.API.STREAM.CREATE.C", { name: "C", subjects: ["c.>"], storage: "file" });
  for (let i = 1; i <= 6; i++) await both((nc) => publish(nc, `c.${i % 3}`, `m${i}`));

  // Durable pull, every default.
  await same("$JS.API.CONSUMER.DURABLE.CREATE.C.D1", { stream_name: "C", config: { durable_name: "D1", ack_policy: "explicit" } });
  // The same again: idempotent.
  await same("$JS.API.CONSUMER.DURABLE.CREATE.C.D1", { stream_name: "C", config: { durable_name: "D1", ack_policy: "explicit" } });
  // Named create with a filter in the subject.
  await same("$JS.API.CONSUMER.CREATE.C.F1.c.1", {
    stream_name: "C",
    config: { durable_name: "F1", ack_policy: "explicit", filter_subject: "c.1", max_deliver: 5, ack_wait: 2_000_000_000 },
  });
  // Every non-default option 2.9 knows.
  await same("$JS.API.CONSUMER.CREATE.C.ALL", {
    stream_name: "C",
    config: {
      durable_name: "ALL",
      description: "everything",
      deliver_policy: "by_start_sequence",
      opt_start_seq: 3,
      ack_policy: "all",
      ack_wait: 5_000_000_000,
      max_deliver: 4,
      backoff: [1_000_000_000, 2_000_000_000],
      filter_subject: "c.>",
      replay_policy: "instant",
      sample_freq: "50%",
      max_waiting: 7,
      max_ack_pending: 99,
      headers_only: true,
      max_batch: 10,
      max_expires: 9_000_000_000,
      max_bytes: 4096,
      inactive_threshold: 60_000_000_000,
      mem_storage: true,
    },
  });
  // Push with heartbeats and flow control, a queue group.
  await same("$JS.API.CONSUMER.CREATE.C.P1", {
    stream_name: "C",
    config: {
      durable_name: "P1",
      deliver_subject: "push.p1",
      deliver_group: "g",
      ack_policy: "explicit",
      idle_heartbeat: 5_000_000_000,
      flow_control: true,
      rate_limit_bps: 1_000_000,
      replay_policy: "original",
    },
  });
  // 2.11+ keep an opt_start_seq beyond the last message (2.9 clamps it to last + 1).
  const later: Record<string, Record<string, [unknown, unknown]>> = { DS2: { ".delivered.stream_seq": [6, 99] } };
  // Deliver policies: initial delivered / ack_floor / num_pending.
  for (const [name, cfg] of [
    ["DL", { deliver_policy: "last" }],
    ["DN", { deliver_policy: "new" }],
    ["DS", { deliver_policy: "by_start_sequence", opt_start_seq: 4 }],
    ["DS2", { deliver_policy: "by_start_sequence", opt_start_seq: 100 }],
    ["DLP", { deliver_policy: "last_per_subject", filter_subject: "c.*" }],
    ["DLF", { deliver_policy: "last", filter_subject: "c.1" }],
    ["AN", { ack_policy: "none", filter_subject: "c.2" }],
  ] as const) {
    await same(`$JS.API.CONSUMER.CREATE.C.${name}`, { stream_name: "C", config: { durable_name: name, ...cfg } }, SKIP, later[name]);
  }
  // Ephemerals: legacy create without a name; the generated name differs by design.
  const skipName = new Set([...SKIP, "name"]);
  await same("$JS.API.CONSUMER.CREATE.C", { stream_name: "C", config: { deliver_subject: "eph.push", ack_policy: "none" } }, skipName);
  await same("$JS.API.CONSUMER.CREATE.C", { stream_name: "C", config: { ack_policy: "explicit", inactive_threshold: 30_000_000_000 } }, skipName);

  for (const name of ["D1", "F1", "ALL", "P1", "DL", "DN", "DS", "DS2", "DLP", "DLF", "AN"]) {
    await same(`$JS.API.CONSUMER.INFO.C.${name}`, "", SKIP, later[name]);
  }
  await same("$JS.API.CONSUMER.INFO.C.NOPE");
  await same("$JS.API.CONSUMER.INFO.NOPE.D1");

  // NAMES / LIST: the ephemeral names differ, so compare counts and the durable names.
  const [na, nb] = await same("$JS.API.CONSUMER.NAMES.C", "", new Set([...SKIP, "consumers"]));
  const durables = (v: Record<string, unknown>): string[] => (v["consumers"] as string[]).filter((n) => /^[A-Z]/.test(n) && n.length < 5).sort();
  assert.deepEqual(durables(nb), durables(na));
  assert.equal((nb["consumers"] as string[]).length, (na["consumers"] as string[]).length);
  const [la, lb] = await same("$JS.API.CONSUMER.LIST.C", "", new Set([...SKIP, "consumers"]));
  assert.equal((lb["consumers"] as unknown[]).length, (la["consumers"] as unknown[]).length);
  await same("$JS.API.CONSUMER.NAMES.NOPE");
  await same("$JS.API.CONSUMER.LIST.NOPE");

  await same("$JS.API.CONSUMER.DELETE.C.DN");
  await same("$JS.API.CONSUMER.DELETE.C.DN");
  await same("$JS.API.CONSUMER.DELETE.NOPE.DN");
  await same("$JS.API.CONSUMER.INFO.C.DN");

  // The fields we send beyond 2.9.10 are the ones the header comment names.
  const allowed = /^\.(config\.(metadata|name|filter_subjects|priority_\w+|pause_until)|cluster|ts|paused|pause_remaining)$/;
  console.log("fields beyond 2.9.10:", [...extras].sort().join(" "));
  for (const e of extras) assert.match(e, allowed, `field ${e} is not in 2.9.10's replies and not on the list of newer fields`);
});

void t("consumer info after deliveries, acks, naks and redeliveries matches", async () => {
  await same("$JS.API.STREAM.CREATE.I", { name: "I", subjects: ["i.>"], storage: "file" });
  for (let i = 1; i <= 10; i++) await both((nc) => publish(nc, `i.${i % 2 === 0 ? "even" : "odd"}`, `payload-${i}`));
  await same("$JS.API.CONSUMER.DURABLE.CREATE.I.W", { stream_name: "I", config: { durable_name: "W", ack_policy: "explicit", ack_wait: 30_000_000_000 } });

  // Five delivered, with the ack reply subjects compared token by token.
  const replies = new Map<NatsConnection, string[]>();
  await samePull(
    "batch 5 of 10",
    async (nc, p) => {
      p.pull("I", "W", { batch: 5, expires: 2_000_000_000 });
      await p.until((g) => msgs(g) === 5, "five messages");
      replies.set(nc, [...p.replies]);
    },
    (g) => msgs(g) === 5,
  );
  await same("$JS.API.CONSUMER.INFO.I.W");

  // Acks 1, 2 and 4 (ack floor moves to 2), a NAK of 3 (redelivered next), 5 left pending.
  const ackReply = async (nc: NatsConnection, sseq: number, kind: string): Promise<void> => {
    const r = replies.get(nc)!.find((x) => x.split(".")[5] === String(sseq));
    assert.ok(r !== undefined, `reply for ${sseq}`);
    await ackSync(nc, r, kind);
  };
  for (const [seq, kind] of [
    [1, "+ACK"],
    [2, "+ACK"],
    [4, "+ACK"],
  ] as const) {
    await both((nc) => ackReply(nc, seq, kind));
  }
  await same("$JS.API.CONSUMER.INFO.I.W");
  await both(async (nc) => {
    const r = replies.get(nc)!.find((x) => x.split(".")[5] === "3")!;
    nc.publish(r, "-NAK");
    await nc.flush();
  });
  // The NAKed message comes first on the next pull, with delivery count 2.
  await samePull(
    "after NAK",
    async (_nc, p) => p.pull("I", "W", { batch: 2, expires: 2_000_000_000 }),
    (g) => msgs(g) === 2,
  );
  await same("$JS.API.CONSUMER.INFO.I.W");
  // A +WPI and a +TERM: the floor and counts as nats-server keeps them.
  await both((nc) => ackReply(nc, 5, "+WPI"));
  await both((nc) => ackReply(nc, 3, "+TERM"));
  await same("$JS.API.CONSUMER.INFO.I.W");
  // Ack everything delivered so far via ack_policy all on a second consumer.
  await same("$JS.API.CONSUMER.DURABLE.CREATE.I.A", { stream_name: "I", config: { durable_name: "A", ack_policy: "all", filter_subject: "i.odd" } });
  const allReplies = new Map<NatsConnection, string[]>();
  await samePull(
    "ack all consumer",
    async (nc, p) => {
      p.pull("I", "A", { batch: 4, expires: 2_000_000_000 });
      await p.until((g) => msgs(g) === 4, "four");
      allReplies.set(nc, [...p.replies]);
    },
    (g) => msgs(g) === 4,
  );
  await both((nc) => ackSync(nc, allReplies.get(nc)![2]!));
  await same("$JS.API.CONSUMER.INFO.I.A");

  // num_waiting: two open requests on a consumer with nothing to deliver.
  await same("$JS.API.CONSUMER.DURABLE.CREATE.I.E", { stream_name: "I", config: { durable_name: "E", ack_policy: "explicit", filter_subject: "i.none" } });
  const holders: Puller[] = [];
  await both(async (nc) => {
    const p = await new Puller(nc).ready();
    holders.push(p);
    p.pull("I", "E", { batch: 1, expires: 30_000_000_000 });
    p.pull("I", "E", { batch: 3, expires: 30_000_000_000 });
    await nc.flush();
  });
  // Both servers hold the two requests, and each has settled where a consumer that matches
  // nothing stands (nats-server moves it past the stream's end when its delivery loop first
  // runs, after the request is counted): poll until both report it, then compare.
  await until("both servers settled consumer E", async () => {
    const [a, b] = [await jreqOrNull(ncRef, "$JS.API.CONSUMER.INFO.I.E", ""), await jreqOrNull(ncOurs, "$JS.API.CONSUMER.INFO.I.E", "")];
    const seq = (r: Record<string, unknown> | null): unknown => (r?.["delivered"] as Record<string, unknown> | undefined)?.["stream_seq"];
    return a?.["num_waiting"] === 2 && b?.["num_waiting"] === 2 && seq(a) === seq(b);
  }, 5000);
  await same("$JS.API.CONSUMER.INFO.I.E");
  for (const p of holders) p.close();

  // Push consumer: push_bound once someone listens on the deliver subject.
  await same("$JS.API.CONSUMER.DURABLE.CREATE.I.PB", { stream_name: "I", config: { durable_name: "PB", deliver_subject: "pb.deliver", ack_policy: "explicit" } });
  await same("$JS.API.CONSUMER.INFO.I.PB");
  const subs: Subscription[] = [];
  const counts = new Map<NatsConnection, number>();
  await both(async (nc) => {
    counts.set(nc, 0);
    subs.push(
      nc.subscribe("pb.deliver", {
        callback: () => {
          counts.set(nc, counts.get(nc)! + 1);
        },
      }),
    );
    await nc.flush();
  });
  for (const nc of [ncRef, ncOurs]) {
    const deadline = Date.now() + 5000;
    while (counts.get(nc)! < 10 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    assert.equal(counts.get(nc), 10);
  }
  await same("$JS.API.CONSUMER.INFO.I.PB");
  for (const s of subs) s.unsubscribe();
});

void t("pull request status sequences match", async () => {
  await same("$JS.API.STREAM.CREATE.P", { name: "P", subjects: ["p.>"], storage: "memory" });
  const big = "x".repeat(200);
  for (let i = 1; i <= 3; i++) await both((nc) => publish(nc, "p.big", big));
  for (let i = 1; i <= 2; i++) await both((nc) => publish(nc, "p.small", `s${i}`));
  const mk = async (name: string, cfg: Record<string, unknown>): Promise<void> => {
    await same(`$JS.API.CONSUMER.DURABLE.CREATE.P.${name}`, { stream_name: "P", config: { durable_name: name, ack_policy: "explicit", ...cfg } });
  };
  await mk("EMPTY", { filter_subject: "p.none" });
  await mk("SMALL", { filter_subject: "p.small" });
  await mk("BIG", { filter_subject: "p.big" });
  await mk("MW", { filter_subject: "p.none", max_waiting: 2 });
  await mk("MB", { filter_subject: "p.none", max_batch: 5, max_expires: 1_000_000_000, max_bytes: 1000 });

  // no_wait on empty -> 404 No Messages.
  await samePull("no_wait empty", async (_nc, p) => p.pull("P", "EMPTY", { batch: 1, no_wait: true }), (g) => statuses(g) === 1);
  await samePull("no_wait batch 10 empty", async (_nc, p) => p.pull("P", "EMPTY", { batch: 10, no_wait: true }), (g) => statuses(g) === 1);
  // expires on empty -> 408 Request Timeout with the pending counts.
  await samePull("expires empty", async (_nc, p) => p.pull("P", "EMPTY", { batch: 4, expires: 200_000_000 }), (g) => statuses(g) === 1);
  await samePull(
    "expires + max_bytes empty",
    async (_nc, p) => p.pull("P", "EMPTY", { batch: 4, max_bytes: 1000, expires: 200_000_000 }),
    (g) => statuses(g) === 1,
  );
  // Two messages of a wanted five, then the request expires.
  await samePull("partial then 408", async (_nc, p) => p.pull("P", "SMALL", { batch: 5, expires: 300_000_000 }), (g) => statuses(g) === 1);
  // Nothing left now (both pending): no_wait -> 404.
  await samePull("no_wait after all delivered", async (_nc, p) => p.pull("P", "SMALL", { no_wait: true, batch: 2 }), (g) => statuses(g) === 1);

  // max_bytes smaller than one message -> 409 Message Size Exceeds MaxBytes.
  await samePull("max_bytes too small", async (_nc, p) => p.pull("P", "BIG", { batch: 3, max_bytes: 50, expires: 1_000_000_000 }), (g) => statuses(g) === 1);
  // One fits, the second would not: one message then 409 with what is left of the request.
  await samePull(
    "max_bytes after one",
    async (_nc, p) => p.pull("P", "BIG", { batch: 3, max_bytes: 400, expires: 1_000_000_000 }),
    (g) => statuses(g) === 1,
  );

  // Exceeding max_waiting -> 409 Exceeded MaxWaiting for the third open request.
  await samePull(
    "max_waiting",
    async (_nc, p) => {
      p.pull("P", "MW", { batch: 1, expires: 400_000_000 });
      p.pull("P", "MW", { batch: 1, expires: 400_000_000 });
      p.pull("P", "MW", { batch: 1, expires: 400_000_000 });
    },
    (g) => statuses(g) === 3,
  );
  // Beyond max_waiting, a request with idle_heartbeat gets no 409 (nats-server 2.11.9+: the client
  // waits for missing heartbeats instead of re-requesting in a hot loop). The no_wait
  // request is the barrier; the two waiting ones then expire.
  await samePull(
    "max_waiting with heartbeat",
    async (_nc, p) => {
      p.pull("P", "MW", { batch: 1, expires: 400_000_000 });
      p.pull("P", "MW", { batch: 1, expires: 400_000_000 });
      p.pull("P", "MW", { batch: 1, expires: 400_000_000, idle_heartbeat: 100_000_000 });
      p.pull("P", "MW", { batch: 1, no_wait: true });
    },
    (g) => statuses(g) === 4,
    undefined,
    {
      // 2.11.9+: no 409 for it. 2.9.10 sends "409 Exceeded MaxWaiting" first.
      ref: (g) => {
        assert.equal(g[0]?.what, "409 exceeded maxwaiting");
        return g.slice(1);
      },
      oursDone: (g) => statuses(g) === 3,
    },
  );
  // Limits of the request vs the consumer.
  await samePull("max_batch", async (_nc, p) => p.pull("P", "MB", { batch: 6, expires: 100_000_000 }), (g) => statuses(g) === 1);
  await samePull("max_expires", async (_nc, p) => p.pull("P", "MB", { batch: 1, expires: 2_000_000_000 }), (g) => statuses(g) === 1);
  await samePull("max_bytes limit", async (_nc, p) => p.pull("P", "MB", { batch: 1, max_bytes: 2000, expires: 100_000_000 }), (g) => statuses(g) === 1);
  // Malformed request bodies.
  await samePull("bad json", async (_nc, p) => p.pull("P", "EMPTY", "{nope"), (g) => statuses(g) === 1);
  // Push consumers refuse pulls.
  await same("$JS.API.CONSUMER.DURABLE.CREATE.P.PUSH", { stream_name: "P", config: { durable_name: "PUSH", deliver_subject: "deliver.p.x" } });
  await samePull("pull on push", async (_nc, p) => p.pull("P", "PUSH", { batch: 1 }), (g) => statuses(g) === 1);

  // A pull for a consumer that does not exist: no subscriber has its subject. nats-server
  // 2.9.10 stays silent (its $JS.API.> service import counts as a delivery); 2.11+, which
  // tsnats follows, answers a no_responders client with a 503. Only the 404 of the no_wait
  // request behind it (the barrier) is shared; the 503 is the known difference.
  await samePull(
    "unknown consumer",
    async (_nc, p) => {
      p.pull("P", "NOPE", { batch: 1, no_wait: true });
      p.pull("P", "EMPTY", { batch: 1, no_wait: true });
    },
    (g) => g.some((x) => x.what.startsWith("404")),
    undefined,
    {
      ref: (g) => {
        assert.equal(g.some((x) => x.what.startsWith("503")), false);
        return [{ kind: "status", what: "503 ", detail: "", reply: "" }, ...g];
      },
      oursDone: (g) => g.some((x) => x.what.startsWith("404")),
    },
  );

  // Consumer deleted while a request waits -> 409 Consumer Deleted.
  await mk("GONE", { filter_subject: "p.none" });
  await samePull(
    "consumer deleted",
    async (nc, p) => {
      p.pull("P", "GONE", { batch: 2, expires: 10_000_000_000 });
      await nc.flush();
      // The request is registered once INFO reports it.
      const deadline = Date.now() + 3000;
      for (;;) {
        const info = await jreq(nc, "$JS.API.CONSUMER.INFO.P.GONE", "");
        if (info["num_waiting"] === 1) break;
        assert.ok(Date.now() < deadline, `num_waiting: ${JSON.stringify(info)}`);
      }
      await jreq(nc, "$JS.API.CONSUMER.DELETE.P.GONE", "");
    },
    (g) => statuses(g) === 1,
  );

  // Idle heartbeats on a waiting request, then its 408. The number of heartbeats depends on
  // timing, so compare the distinct statuses in order.
  const hb = async (nc: NatsConnection): Promise<string[]> => {
    const p = await new Puller(nc).ready();
    try {
      p.pull("P", "EMPTY", { batch: 1, expires: 1_200_000_000, idle_heartbeat: 200_000_000 });
      await p.until((g) => g.some((s) => s.what.startsWith("408")), "heartbeat request");
      const out: string[] = [];
      for (const s of p.got) {
        const x = `${s.what} ${s.detail}`;
        if (out[out.length - 1] !== x) out.push(x);
      }
      return out;
    } finally {
      p.close();
    }
  };
  const ha = await hb(ncRef);
  const hbOurs = await hb(ncOurs);
  assert.deepEqual(hbOurs, ha);
  assert.equal(ha[0], "100 idle heartbeat ");

  // A request whose heartbeat is too large for its expires.
  await samePull(
    "heartbeat too large",
    async (_nc, p) => p.pull("P", "EMPTY", { batch: 1, expires: 300_000_000, idle_heartbeat: 200_000_000 }),
    (g) => statuses(g) === 1,
  );
});

void t("invalid consumer configs get nats-server's error codes", async () => {
  await same("$JS.API.STREAM.CREATE.V", { name: "V", subjects: ["v.>"] });
  await same("$JS.API.STREAM.CREATE.WQ", { name: "WQ", subjects: ["wq.>"], retention: "workqueue" });
  const bad: [string, unknown][] = [
    ["$JS.API.CONSUMER.CREATE.V.X1", { stream_name: "V", config: { durable_name: "X1", deliver_subject: "d.x1", max_waiting: 10 } }],
    ["$JS.API.CONSUMER.CREATE.V.X2", { stream_name: "V", config: { durable_name: "X2", ack_policy: "sometimes" } }],
    ["$JS.API.CONSUMER.CREATE.V.X3", { stream_name: "V", config: { durable_name: "X3", opt_start_seq: 5 } }],
    ["$JS.API.CONSUMER.CREATE.V.X4", { stream_name: "V", config: { durable_name: "X4", deliver_policy: "by_start_sequence" } }],
    ["$JS.API.CONSUMER.CREATE.V.X5", { stream_name: "V", config: { durable_name: "X5", deliver_policy: "by_start_time" } }],
    ["$JS.API.CONSUMER.DURABLE.CREATE.V.a.b", { stream_name: "V", config: { durable_name: "a.b" } }],
    ["$JS.API.CONSUMER.CREATE.V", { stream_name: "V", config: { durable_name: "x.y" } }],
    ["$JS.API.CONSUMER.CREATE.V.X8", { stream_name: "V", config: { durable_name: "X8", ack_policy: "explicit", max_deliver: 2, backoff: [1e9, 2e9, 3e9] } }],
    ["$JS.API.CONSUMER.CREATE.V.NAME", { stream_name: "V", config: { durable_name: "OTHER" } }],
    ["$JS.API.CONSUMER.CREATE.V.NAME", { stream_name: "V", config: { name: "OTHER" } }],
    ["$JS.API.CONSUMER.DURABLE.CREATE.V.NAME", { stream_name: "V", config: { durable_name: "OTHER" } }],
    ["$JS.API.CONSUMER.DURABLE.CREATE.V.NAME", { stream_name: "V", config: {} }],
    ["$JS.API.CONSUMER.CREATE.V.F.v.a", { stream_name: "V", config: { name: "F", filter_subject: "v.b" } }],
    ["$JS.API.CONSUMER.CREATE.V.X10", { stream_name: "OTHER", config: { durable_name: "X10" } }],
    ["$JS.API.CONSUMER.CREATE.V.X11", { stream_name: "V" }],
    ["$JS.API.CONSUMER.CREATE.V.X12", "{not json"],
    ["$JS.API.CONSUMER.CREATE.V.X31", ""],
    ["$JS.API.CONSUMER.CREATE.V.X32", "null"],
    ["$JS.API.CONSUMER.CREATE.V.X33", "[1]"],
    ["$JS.API.CONSUMER.CREATE.V.X34", { stream_name: "V", config: { durable_name: "X34", max_deliver: "3" } }],
    ["$JS.API.CONSUMER.CREATE.V.X37", { stream_name: "V", config: { durable_name: "X37", replay_policy: "fast" } }],
    ["$JS.API.CONSUMER.CREATE.V.X38", { stream_name: "V", config: { durable_name: "X38", deliver_policy: "sometimes" } }],
    ["$JS.API.CONSUMER.CREATE.V.X39", { stream_name: "V", config: { durable_name: "X39", deliver_subject: "d.x39", deliver_group: "q", ack_policy: "explicit", max_waiting: 1 } }],
    ["$JS.API.CONSUMER.CREATE.V.X41", { stream_name: "V", config: { durable_name: "X41", max_batch: -1 } }],
    ["$JS.API.CONSUMER.CREATE.NOPE.X13", { stream_name: "NOPE", config: { durable_name: "X13" } }],
    ["$JS.API.CONSUMER.CREATE.V", { stream_name: "V", config: { durable_name: "X14" } }],
    ["$JS.API.CONSUMER.CREATE.V.X15", { stream_name: "V", config: { durable_name: "X15", deliver_subject: "v.loop" } }],
    ["$JS.API.CONSUMER.CREATE.V.X16", { stream_name: "V", config: { durable_name: "X16", deliver_subject: "d.*" } }],
    ["$JS.API.CONSUMER.CREATE.V.X17", { stream_name: "V", config: { durable_name: "X17", idle_heartbeat: 1_000_000_000 } }],
    ["$JS.API.CONSUMER.CREATE.V.X18", { stream_name: "V", config: { durable_name: "X18", flow_control: true } }],
    ["$JS.API.CONSUMER.CREATE.V.X19", { stream_name: "V", config: { durable_name: "X19", deliver_subject: "d.x19", flow_control: true } }],
    ["$JS.API.CONSUMER.CREATE.V.X20", { stream_name: "V", config: { durable_name: "X20", deliver_subject: "d.x20", max_ack_pending: 10 } }],
    ["$JS.API.CONSUMER.CREATE.V.X21", { stream_name: "V", config: { durable_name: "X21", rate_limit_bps: 100 } }],
    ["$JS.API.CONSUMER.CREATE.V.X22", { stream_name: "V", config: { durable_name: "X22", max_waiting: -1 } }],
    ["$JS.API.CONSUMER.CREATE.V.X24", { stream_name: "V", config: { durable_name: "X24", max_expires: 10 } }],
    ["$JS.API.CONSUMER.CREATE.V.X25", { stream_name: "V", config: { durable_name: "X25", deliver_subject: "d.x25", idle_heartbeat: 1000 } }],
    ["$JS.API.CONSUMER.CREATE.V.X26", { stream_name: "V", config: { durable_name: "X26", deliver_policy: "last_per_subject" } }],
    ["$JS.API.CONSUMER.CREATE.V.X27", { stream_name: "V", config: { durable_name: "X27", sample_freq: "abc" } }],
    ["$JS.API.CONSUMER.CREATE.V.X28", { stream_name: "V", config: { durable_name: "X28", num_replicas: 3 } }],
    ["$JS.API.CONSUMER.CREATE.V.X29", { stream_name: "V", config: { durable_name: "X29", deliver_policy: "new", opt_start_seq: 2 } }],
    ["$JS.API.CONSUMER.CREATE.V.X30", { stream_name: "V", config: { durable_name: "X30", description: "d".repeat(5000) } }],
    ["$JS.API.CONSUMER.CREATE.V", { stream_name: "V", config: { direct: true } }],
    ["$JS.API.CONSUMER.CREATE.V", { stream_name: "V", config: { name: "x.y" } }],
    ["$JS.API.CONSUMER.CREATE.V", { stream_name: "V", config: { name: "x*" } }],
    ["$JS.API.CONSUMER.CREATE.V", { stream_name: "V", config: { name: "x>" } }],
    ["$JS.API.CONSUMER.CREATE.V", { stream_name: "V", config: { name: "x y" } }],
    ["$JS.API.CONSUMER.DURABLE.CREATE.V", { stream_name: "V", config: { durable_name: "V" } }],
    // Work queue stream: ack none on pull, not deliver all, a second unfiltered consumer,
    // overlapping filters.
    ["$JS.API.CONSUMER.CREATE.WQ.Q1", { stream_name: "WQ", config: { durable_name: "Q1", ack_policy: "none" } }],
    ["$JS.API.CONSUMER.CREATE.WQ.Q2", { stream_name: "WQ", config: { durable_name: "Q2", ack_policy: "all" } }],
    ["$JS.API.CONSUMER.CREATE.WQ.Q3", { stream_name: "WQ", config: { durable_name: "Q3", ack_policy: "explicit", deliver_policy: "new" } }],
  ];
  const failures: string[] = [];
  for (const [subj, body] of bad) {
    try {
      await same(subj, body);
    } catch (e) {
      failures.push(`${subj} ${JSON.stringify(body).slice(0, 80)}: ${(e as Error).message.split("\n")[0]!}`);
    }
  }
  assert.deepEqual(failures, []);

  // Where tsnats follows a later nats-server than 2.9.10.
  await differs("$JS.API.CONSUMER.CREATE.V.N1", { stream_name: "V", config: { durable_name: "N1", filter_subject: "other.>" } },
    "2.10 dropped the filter-subset check (10093)", 10093, 0);
  await differs("$JS.API.CONSUMER.CREATE.V.N2", { stream_name: "V", pedantic: true, config: { durable_name: "N2", ack_policy: "explicit", ack_wait: 5_000_000_000, backoff: [1_000_000_000] } },
    "pedantic mode is 2.11 (10157); 2.9 checks max_deliver against backoff first", 10116, 10157);
  await differs("$JS.API.CONSUMER.CREATE.V.N3", { stream_name: "V", config: { durable_name: "N3", ack_policy: "explicit", max_deliver: 5, backoff: [-1] } },
    "negative backoff refused since 2.11 (10184)", 0, 10184);
  await differs("$JS.API.CONSUMER.CREATE.V.N4", { stream_name: "V", config: { durable_name: "N4", ack_policy: "explicit", ack_wait: -1 } },
    "negative ack_wait refused since 2.11 (10183)", 0, 10183);
  await differs("$JS.API.CONSUMER.CREATE.V.N6", { stream_name: "V", action: "bogus", config: { durable_name: "N6" } },
    "create/update actions are 2.10; 2.9 ignores the field", 0, 10025);
  await differs("$JS.API.CONSUMER.CREATE.V.N7", { stream_name: "V", action: "update", config: { durable_name: "N7" } },
    "action update of a missing consumer: 10149 since 2.10", 0, 10149);
  await differs("$JS.API.CONSUMER.CREATE.V.N8", { stream_name: "V", config: { durable_name: "N8", filter_subject: "v.*.>.x" } },
    "an invalid filter is a stream config error (10052) since 2.10", 10093, 10052);
  // backoff [0] with max_deliver unset: 2.9 refuses (max_deliver 0 < 1 backoff); 2.11+ take it.
  await differs("$JS.API.CONSUMER.CREATE.V.N5", { stream_name: "V", config: { durable_name: "N5", ack_policy: "explicit", backoff: [1_000_000_000] } },
    "2.10+ default max_deliver to -1 before checking it against backoff", 10116, 0);

  // Work queue overlap: one consumer on wq.a.*, then wq.a.b overlaps, wq.> overlaps,
  // unfiltered is refused, a disjoint wq.b is fine.
  await same("$JS.API.CONSUMER.CREATE.WQ.W1", { stream_name: "WQ", config: { durable_name: "W1", ack_policy: "explicit", filter_subject: "wq.a.*" } });
  await same("$JS.API.CONSUMER.CREATE.WQ.W2", { stream_name: "WQ", config: { durable_name: "W2", ack_policy: "explicit", filter_subject: "wq.a.b" } });
  await same("$JS.API.CONSUMER.CREATE.WQ.W3", { stream_name: "WQ", config: { durable_name: "W3", ack_policy: "explicit", filter_subject: "wq.>" } });
  await same("$JS.API.CONSUMER.CREATE.WQ.W4", { stream_name: "WQ", config: { durable_name: "W4", ack_policy: "explicit" } });
  await same("$JS.API.CONSUMER.CREATE.WQ.W5", { stream_name: "WQ", config: { durable_name: "W5", ack_policy: "explicit", filter_subject: "wq.b" } });

  // Updates that nats-server refuses.
  await same("$JS.API.CONSUMER.CREATE.V.U", { stream_name: "V", config: { durable_name: "U", ack_policy: "explicit" } });
  await same("$JS.API.CONSUMER.CREATE.V.U", { stream_name: "V", config: { durable_name: "U", ack_policy: "all" } });
  await same("$JS.API.CONSUMER.CREATE.V.U", { stream_name: "V", config: { durable_name: "U", ack_policy: "explicit", deliver_subject: "d.u" } });
  await same("$JS.API.CONSUMER.CREATE.V.U", { stream_name: "V", config: { durable_name: "U", ack_policy: "explicit", deliver_policy: "new" } });
  await same("$JS.API.CONSUMER.CREATE.V.U", { stream_name: "V", config: { durable_name: "U", ack_policy: "explicit", max_waiting: 3 } });
  // Allowed update.
  await same("$JS.API.CONSUMER.CREATE.V.U", { stream_name: "V", config: { durable_name: "U", ack_policy: "explicit", description: "new", max_ack_pending: 5 } });
});
