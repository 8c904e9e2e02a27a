// The replicated consumer under faults (issue 18): a durable pull consumer with explicit acks
// on the simulated replicated stream (streamfaults.ts), run by the production code: the
// consumer API (consumer-api.ts: ensureDurable, restoreReplicatedConsumers, MSG.NEXT), the
// Consumer with its ConsumerLedger on the stream leader, and ConsumerRepl carrying the ledger
// operations as CONSUMERS entries in the stream's Raft log to every replica's copies. The
// sim does what cluster-api.ts does on a leader change (the stream leader that takes
// publishes starts the consumers from its copies; one that stops leading stops them) and
// plays a client: it publishes (with msg ids, retried), pulls from whichever server runs the
// consumer, and acks (+ACK, AckSync, -NAK, +TERM, or nothing: the ack wait expires) with the
// ack subjects of the deliveries, routed to the consumer's server (or lost on the way).
//
// Invariants, checked as they happen:
//  - every replica's copy of the consumer ledgers is the same after the same CONSUMERS entry
//    (the index of the entry applied), and its ack floor never goes back;
//  - nothing whose ack (or term) was confirmed (the AckSync reply came) is delivered again;
//  - nothing delivered and not acked is lost: every stored message up to the committed
//    delivered sequence is pending or was acked/termed by the client;
//  - a delivery carries what was stored at its stream sequence;
//  - a delivery goes out only once its `delivered` operation committed: when the client
//    gets it, the sending server's own copy (which applies committed entries only) has
//    delivered at least that consumer sequence (so a leader that crashes or is cut off
//    after sending, before the commit, cannot have sent it);
//  - a deposed leader that does not know it yet delivers nothing confirmed acked (it cannot
//    commit the delivery);
//  - with `lps`, a last_per_subject consumer made after a prefix of 200 subjects (each once,
//    half of them twice) never delivers a message a later one of its subject superseded
//    before the consumer was made, whichever leader delivers its first phase (unless the
//    later one was removed since: a new leader rebuilds the phase from its store).
// After healing, the client acks everything (AckSync) until every acknowledged publish is
// confirmed acked; the replicas must then hold identical copies.
import { createHash } from "node:crypto";
import { ConsumerRepl } from "../../src/jscluster/consumer-repl.js";
import { Outbox } from "../../src/consumer/outbox.js";
import { Consumer } from "../../src/consumer/consumer.js";
import type { ConsumerApiContext } from "../../src/jetstream/api-context.js";
import { ensureDurable, holdConsumers, restoreReplicatedConsumers } from "../../src/jetstream/consumer-api.js";
import { systemScheduler } from "../../src/runtime/sched.js";
import { defaultOptions } from "../../src/server/options.js";
import { nullLogger } from "../../src/server/log.js";
import type { Node } from "../helpers/streamcluster.js";
import { FaultDriver, GROUP_NAME, type FaultStats } from "./streamfaults.js";

export interface ConsumerSimResult {
  seed: number;
  nodes: number;
  storage: "memory" | "file";
  violation: string | null;
  published: number;
  deliveries: number;
  redeliveries: number;
  acksConfirmed: number;
  naks: number;
  terms: number;
  consumerEntries: number;
  /** Deliveries of confirmed-acked messages by a deposed leader that did not know it yet
   *  (a violation since deliveries wait for their commit; kept for the account). */
  staleRedeliveries: number;
  faults: FaultStats;
}

export interface ConsumerSimOptions {
  seed: number;
  nodes: number;
  storage: "memory" | "file";
  faultMs?: number;
  healMs?: number;
  stepMs?: number;
  membership?: boolean;
  /** A mutation for the checkers' own tests: n2's copies skip every 25th CONSUMERS entry. */
  skipEntries?: boolean;
  /** A mutation for the checkers' own tests: deliveries leave at once, before their
   *  delivered operation commits (as before issue 18's fix). */
  deliverBeforeCommit?: boolean;
  /** The consumer is last_per_subject, made once LPS_SUBJECTS subjects hold one message
   *  each and half of them a second: the superseded first ones must never be delivered,
   *  whichever leader delivers the first phase (issue 14: a new leader resumes the phase). */
  lps?: boolean;
  /** A mutation for the checkers' own tests: a new leader does not resume a replicated
   *  consumer's last_per_subject phase (as before the fix). */
  skipLpsResume?: boolean;
}

class Violation extends Error {}

const CONSUMER = "C";
const ACK_WAIT_MS = 150;
const LPS_SUBJECTS = 200;

// ---- observing every replica's ConsumerRepl.apply (a test seam on the prototype) ----

type ApplyFn = (this: ConsumerRepl, data: Uint8Array, index: number, answer: boolean) => void;
type RestoreFn = (this: ConsumerRepl, b: Buffer) => void;
let observer: { apply(r: ConsumerRepl, index: number): void; restore(r: ConsumerRepl): void; skip?(r: ConsumerRepl, index: number): boolean } | null = null;
const origApply: ApplyFn = ConsumerRepl.prototype.apply;
const origRestore: RestoreFn = ConsumerRepl.prototype.restore;
let patched = false;
/** The deliverBeforeCommit mutation is on. */
let early = false;
type DeliverFn = (this: Outbox, ...a: Parameters<Outbox["deliver"]>) => void;
const origDeliver: DeliverFn = Outbox.prototype.deliver;
/** The skipLpsResume mutation is on. */
let noLpsResume = false;
type ResumeFn = (this: Consumer, ...a: Parameters<Consumer["resumeLastPerSubject"]>) => void;
const origResume: ResumeFn = Consumer.prototype.resumeLastPerSubject;
function patch(): void {
  if (patched) return;
  patched = true;
  Consumer.prototype.resumeLastPerSubject = function (this: Consumer, ...a: Parameters<Consumer["resumeLastPerSubject"]>): void {
    if (!noLpsResume) origResume.apply(this, a);
  };
  Outbox.prototype.deliver = function (this: Outbox, ...a: Parameters<Outbox["deliver"]>): void {
    origDeliver.apply(this, a);
    // Everything held counts as committed: it leaves now.
    if (early) this.committed(Number.MAX_SAFE_INTEGER);
  };
  ConsumerRepl.prototype.apply = function (this: ConsumerRepl, data: Uint8Array, index: number, answer: boolean): void {
    if (observer?.skip?.(this, index) === true) return;
    origApply.call(this, data, index, answer);
    observer?.apply(this, index);
  };
  ConsumerRepl.prototype.restore = function (this: ConsumerRepl, b: Buffer): void {
    origRestore.call(this, b);
    observer?.restore(this);
  };
}

interface Msg {
  id: string;
  data: string;
  sentAt: number;
  attempts: number;
  ackSeq: number;
}

interface NodeJs {
  ctx: ConsumerApiContext;
  consumersUp: boolean;
  /** The Raft term in which this server started its consumers. */
  term: number;
}

function makeCtx(n: Node, f: FaultDriver): ConsumerApiContext {
  const respond = (reply: string, obj: unknown): void => {
    if (reply !== "") n.bus.publish(reply, "", null, Buffer.from(JSON.stringify(obj)));
  };
  return {
    bus: n.bus,
    clock: f.c.clock,
    sched: systemScheduler,
    log: nullLogger,
    opts: { ...defaultOptions().jetstream, enabled: true },
    serverName: n.id,
    serverId: n.id,
    maxPayloadBytes: 1 << 20,
    fs: n.fs,
    getStream: (name) => (n.up && name === "R" ? n.group.stream : undefined),
    streamNames: () => (n.up ? ["R"] : []),
    respond,
    respondError: (reply, type, err) => respond(reply, { type, error: err }),
    canAddConsumer: () => true,
    advisory: () => undefined,
  };
}

/** A replica's copies of the consumer ledgers in a canonical form (sorted). */
function canonical(r: ConsumerRepl): { text: string; floor: number; cfloor: number; delivered: number; pending: Set<number> } {
  const parts: string[] = [];
  let floor = 0;
  let cfloor = 0;
  let delivered = 0;
  let pending = new Set<number>();
  for (const x of r.consumers().sort((a, b) => (a.name < b.name ? -1 : 1))) {
    const s = x.state;
    const pend = [...s.pending].sort((a, b) => a[0] - b[0]).map(([k, v]) => `${k}:${v.cseq}:${v.tsNs}`);
    const rd = [...s.redelivered].sort((a, b) => a[0] - b[0]).map(([k, v]) => `${k}:${v}`);
    parts.push(`${x.name}|${x.config}|${x.createdNs}|d${s.delivered.streamSeq}/${s.delivered.consumerSeq}|f${s.ackFloor.streamSeq}/${s.ackFloor.consumerSeq}|p${pend.join(",")}|r${rd.join(",")}`);
    if (x.name === CONSUMER) {
      floor = s.ackFloor.streamSeq;
      cfloor = s.ackFloor.consumerSeq;
      delivered = s.delivered.streamSeq;
      pending = new Set(s.pending.keys());
    }
  }
  return { text: parts.join("\n"), floor, cfloor, delivered, pending };
}

export async function runConsumerSeed(o: ConsumerSimOptions): Promise<ConsumerSimResult> {
  patch();
  early = o.deliverBeforeCommit === true;
  noLpsResume = o.skipLpsResume === true;
  const stepMs = o.stepMs ?? 5;
  const faultMs = o.faultMs ?? 2000;
  const healMs = o.healMs ?? 2000;
  const js = new Map<string, NodeJs>();
  const inbox: Array<{ subject: string; reply: string; data: string; stale: boolean; committedCseq: number; from: string }> = [];
  const termOf = (n: Node): number => (n.up ? (n.host.node(GROUP_NAME)?.term ?? 0) : 0);
  const subscribeClient = (n: Node): void => {
    n.bus.subscribe("_INBOX.>", (subject, reply, _hdr, data) => {
      // Sent by a leader that another server has deposed (it does not know yet)?
      const mine = termOf(n);
      const stale = f.c.ids.some((id) => {
        const o = f.c.node(id);
        return o !== n && o.up && o.group.isTakingPublishes && termOf(o) > mine;
      });
      // What the sender's copy holds as committed when the message leaves.
      const committedCseq = n.up ? (n.group.consumers.state(CONSUMER)?.delivered.consumerSeq ?? 0) : 0;
      inbox.push({ subject, reply, data: data.toString(), stale, committedCseq, from: n.id });
    });
  };
  const f = new FaultDriver(
    { seed: o.seed, nodes: o.nodes, storage: o.storage, stepMs, membership: o.membership ?? false, faultRate: 0.02 },
    {
      onStart: (id) => {
        const n = f.c.node(id);
        const ctx = makeCtx(n, f);
        js.set(id, { ctx, consumersUp: false, term: 0 });
        holdConsumers(ctx, n.group.stream);
      },
      beforeStop: async (id) => {
        const j = js.get(id);
        const n = f.c.node(id);
        if (j !== undefined) j.consumersUp = false;
        if (n.up) await n.group.stream.stopConsumers(false);
      },
      onReplaced: (_id, n) => subscribeClient(n),
    },
  );
  const c = f.c;
  for (const id of c.ids) subscribeClient(c.node(id));
  const rnd = f.rnd;
  const res: ConsumerSimResult = { seed: o.seed, nodes: o.nodes, storage: o.storage, violation: null, published: 0, deliveries: 0, redeliveries: 0, acksConfirmed: 0, naks: 0, terms: 0, consumerEntries: 0, staleRedeliveries: 0, faults: f.stats };
  const watch = Number(process.env["SIM_SEQ"] ?? 0);
  const tr = (s: string): void => {
    if (watch > 0) console.log(`${f.t} ${s}`);
  };
  const fail = (s: string): never => {
    throw new Violation(`${s} (at ${f.t} ms)\n${f.describe()}`);
  };
  // Violations seen inside the production code's callbacks (the apply observer) are kept
  // here and thrown by the driver loop (a throw there would escape to the event loop).
  let flagged: string | null = null;
  const flag = (s: string): void => {
    if (flagged === null) flagged = `${s} (at ${f.t} ms)\n${f.describe()}`;
  };
  const step = async (): Promise<void> => {
    await f.step();
    if (flagged !== null) throw new Violation(flagged);
  };

  // ---- the replicas' copies, as they apply ----
  const canon = new Map<number, string>();
  const lastFloor = new WeakMap<ConsumerRepl, number>();
  const owner = (r: ConsumerRepl): string => c.ids.find((id) => c.node(id).up && c.node(id).group.consumers === r) ?? "?";
  let lostCheckedThrough = 0;
  const msgs: Msg[] = [];
  const byToken = new Map<string, Msg>();
  const bySeq = new Map<number, Msg>();
  const deleted = new Set<number>();
  /** Sequences the sim removed from the stream (deleted also holds the superseded ones). */
  const removed = new Set<number>();
  /** Stream sequences the client acked or termed (sent to a server; maybe not applied). */
  const clientDone = new Set<number>();
  /** Sequences whose ack/term the client saw confirmed (AckSync reply), and when. */
  const confirmed = new Map<number, number>();
  const received = new Set<number>();
  const lastAckSubject = new Map<number, string>();
  const checkLost = (st: ReturnType<typeof canonical>, who: string, index: number): void => {
    // Below the ack floor: everything was acked or termed by the client (or left the stream).
    for (let s = lostCheckedThrough + 1; s <= st.floor; s++) {
      if (bySeq.has(s) && !deleted.has(s) && !clientDone.has(s)) flag(`lost: ${who} applied entry ${index} with ack floor ${st.floor} past ${s}, which the client never acked`);
    }
    if (st.floor > lostCheckedThrough) lostCheckedThrough = st.floor;
    for (let s = st.floor + 1; s <= st.delivered; s++) {
      if (bySeq.has(s) && !deleted.has(s) && !clientDone.has(s) && !st.pending.has(s)) flag(`lost: ${who} applied entry ${index}: ${s} is delivered (up to ${st.delivered}), not pending, never acked by the client`);
    }
  };
  observer = {
    apply(r, index) {
      res.consumerEntries++;
      const st = canonical(r);
      const h = createHash("sha1").update(st.text).digest("hex");
      const known = canon.get(index);
      const who = owner(r);
      if (watch > 0 && st.delivered >= watch - 2 && st.floor <= watch + 2) tr(`${who} applied consumer entry ${index}: delivered ${st.delivered} floor ${st.floor} pending ${[...st.pending].join(",")}`);
      if (known === undefined) {
        canon.set(index, h);
        checkLost(st, who, index);
      } else if (known !== h) flag(`replica ${who} holds consumer copies after entry ${index} that differ from another replica's:\n${st.text}`);
      const prev = lastFloor.get(r) ?? 0;
      if (st.floor < prev) flag(`ack floor went back on ${who}: ${prev} -> ${st.floor} at entry ${index}`);
      lastFloor.set(r, st.floor);
    },
    skip: o.skipEntries === true ? (r, index) => owner(r) === "n2" && index % 25 === 0 : undefined,
    restore(r) {
      if (watch > 0) tr(`${owner(r)} restored consumers: ${canonical(r).text}`);
      lastFloor.set(r, canonical(r).floor);
    },
  };

  // ---- the consumer's servers (what cluster-api.ts groupLeader does) ----
  const consumerCfg = {
    durable_name: CONSUMER,
    ack_policy: "explicit",
    ack_wait: ACK_WAIT_MS * 1e6,
    max_deliver: -1,
    max_ack_pending: 40,
    num_replicas: o.nodes,
    ...(o.lps === true ? { deliver_policy: "last_per_subject", filter_subject: "r.>" } : { deliver_policy: "all" }),
  };
  /** Stream sequences a last_per_subject consumer must never deliver, each with the later
   *  message of the same subject stored before the consumer was made. */
  const superseded = new Map<number, number>();
  /** Consumers are made (and started on leaders) only once the lps prefix is stored. */
  let consumersReady = o.lps !== true;
  const syncConsumers = async (): Promise<void> => {
    if (!consumersReady) return;
    for (const id of c.ids) {
      const n = c.node(id);
      const j = js.get(id);
      if (!n.up || j === undefined) continue;
      const taking = n.group.isTakingPublishes;
      const st = n.group.stream;
      const term = n.host.node(GROUP_NAME)?.term ?? 0;
      if (taking && j.consumersUp && term !== j.term) {
        // Lost leadership and won it back between two looks: cluster-api.ts hears both
        // changes (stop, then start from the copies); so do we.
        tr(`${id} re-elected in term ${term}: restarts consumers`);
        j.consumersUp = false;
        await st.stopConsumers(false);
      }
      if (taking && !j.consumersUp) {
        j.term = term;
        tr(`${id} starts consumers: ${canonical(n.group.consumers).text}`);
        await restoreReplicatedConsumers(j.ctx, st, () => true);
        ensureDurable(j.ctx, st, CONSUMER, consumerCfg);
        j.consumersUp = true;
      } else if (!taking && j.consumersUp) {
        j.consumersUp = false;
        tr(`${id} stops consumers`);
        await st.stopConsumers(false);
      }
    }
  };
  const consumerHosts = (): string[] => c.ids.filter((id) => c.node(id).up && js.get(id)?.consumersUp === true && c.node(id).group.stream.consumers().some((x) => x.name === CONSUMER));

  // ---- the client ----
  let draining = false;
  let inboxSeq = 0;
  const actions: Array<{ at: number; seq: number; ackSubject: string; kind: "ack" | "acksync" | "nak" | "term" | "termsync" }> = [];
  const collectPubAcks = (): void => {
    for (const id of c.ids) {
      const n = c.node(id);
      if (n.acks.size === 0) continue;
      for (const [tok, list] of n.acks) {
        const m = byToken.get(tok);
        if (m === undefined) continue;
        for (const a of list) {
          if (a.error !== undefined) continue;
          if (m.ackSeq !== 0 && m.ackSeq !== a.seq) fail(`${m.id} acked at ${m.ackSeq} and at ${a.seq}`);
          if (m.ackSeq === 0) {
            const other = bySeq.get(a.seq);
            if (other !== undefined && other !== m) fail(`${m.id} and ${other.id} both acked at ${a.seq}`);
            m.ackSeq = a.seq;
            bySeq.set(a.seq, m);
          }
        }
      }
      n.acks.clear();
    }
  };
  const publish = (m: Msg): void => {
    const takers = c.ids.filter((id) => c.node(id).up && c.node(id).stream.ingesting);
    if (takers.length === 0) return;
    const id = takers[rnd.int(takers.length)]!;
    const tok = `${m.id}_${m.attempts++}`;
    byToken.set(tok, m);
    m.sentAt = f.t;
    c.pub(id, `r.${rnd.int(3)}`, m.data, tok, [["Nats-Msg-Id", m.id]]);
  };
  const pull = (): void => {
    const hosts = consumerHosts();
    if (hosts.length === 0) return;
    const id = hosts[rnd.int(hosts.length)]!;
    c.node(id).bus.publish(`$JS.API.CONSUMER.MSG.NEXT.R.${CONSUMER}`, `_INBOX.d.${++inboxSeq}`, null, Buffer.from(JSON.stringify({ batch: 16, expires: 300e6 })));
  };
  const sendAck = (a: (typeof actions)[number]): void => {
    const hosts = consumerHosts();
    if (hosts.length === 0 || rnd.next() < 0.03) return; // no server has it, or lost on the way
    const n = c.node(hosts[rnd.int(hosts.length)]!);
    const sync = a.kind === "acksync" || a.kind === "termsync";
    const payload = a.kind === "nak" ? "-NAK" : a.kind.startsWith("term") ? "+TERM" : "+ACK";
    if (a.kind !== "nak") clientDone.add(a.seq);
    if (a.seq === watch) tr(`${a.kind} of ${a.seq} sent to ${n.id} (leading ${n.group.isTakingPublishes}, applied ${String(n.group.debugState()["applied"])})`);
    n.bus.publish(a.ackSubject, sync ? `_INBOX.a.${a.seq}.${++inboxSeq}` : "", null, Buffer.from(payload));
  };
  const readInbox = (): void => {
    for (let i = 0; i < inbox.length; i++) {
      const m = inbox[i]!;
      if (m.subject.startsWith("_INBOX.a.")) {
        // An AckSync answered: the ack (or term) committed.
        const seq = Number(m.subject.split(".")[2]);
        if (seq === watch) tr(`ack of ${seq} confirmed (${m.subject})`);
        if (!confirmed.has(seq)) {
          confirmed.set(seq, f.t);
          res.acksConfirmed++;
        }
        continue;
      }
      if (!m.subject.startsWith("_INBOX.d.") || !m.reply.startsWith("$JS.ACK.")) continue; // pull status (408/409) and the like
      const t = m.reply.split(".");
      const dc = Number(t[4]);
      const seq = Number(t[5]);
      const cseq = Number(t[6]);
      res.deliveries++;
      if (cseq > m.committedCseq) fail(`${m.from} delivered stream seq ${seq} (consumer seq ${cseq}, delivery count ${dc}) before its delivered operation committed (its copy has delivered up to consumer seq ${m.committedCseq})`);
      if (seq === watch) tr(`delivery of ${seq} dc ${dc} via ${m.reply} (hosts ${consumerHosts().join(",")})`);
      if (dc > 1) res.redeliveries++;
      const by = superseded.get(seq);
      // Once the later message is removed, a new leader's phase (rebuilt from the store, as
      // nats-server's from its own) takes this one as its subject's newest: allowed.
      if (by !== undefined && !removed.has(by)) fail(`${m.from} delivered stream seq ${seq}, superseded by ${by} (a later message of its subject) before the last_per_subject consumer was made`);
      const when = confirmed.get(seq);
      // A deposed leader that does not know it yet (cut off from the others, not from this
      // client) cannot commit a redelivery, so it sends none.
      if (when !== undefined && m.stale) res.staleRedeliveries++;
      if (when !== undefined) fail(`stream seq ${seq} delivered again (delivery count ${dc}) after its ack was confirmed at ${when} ms`);
      const pm = bySeq.get(seq);
      if (pm !== undefined && pm.data !== m.data) fail(`delivery of ${seq} carries ${m.data}, the PubAck said ${pm.data} is there`);
      received.add(seq);
      lastAckSubject.set(seq, m.reply);
      const x = rnd.next();
      const kind = draining ? "acksync" : x < 0.3 ? "ack" : x < 0.6 ? "acksync" : x < 0.72 ? "nak" : x < 0.74 ? "term" : x < 0.76 ? "termsync" : null;
      if (kind === "nak") res.naks++;
      if (kind === "term" || kind === "termsync") res.terms++;
      if (kind !== null) actions.push({ at: f.t + rnd.int(draining ? 20 : 200), seq, ackSubject: m.reply, kind });
    }
    inbox.length = 0;
  };
  const runActions = (): void => {
    let k = 0;
    for (const a of actions) {
      if (a.at <= f.t) sendAck(a);
      else actions[k++] = a;
    }
    actions.length = k;
  };

  await f.startAll();
  try {
    if (o.lps === true) {
      // The prefix, with no fault yet: every subject once, then a random half again.
      const subjOf = new Map<Msg, string>();
      const pre: Msg[] = [];
      const order: number[] = [];
      for (let k = 0; k < LPS_SUBJECTS; k++) order.push(k);
      for (let k = 0; k < LPS_SUBJECTS; k++) if (rnd.next() < 0.5) order.push(k);
      for (const k of order) {
        const m: Msg = { id: `p${pre.length}`, data: `p${pre.length}`, sentAt: f.t, attempts: 0, ackSeq: 0 };
        pre.push(m);
        subjOf.set(m, `r.p.${k}`);
      }
      const pubPre = (m: Msg): void => {
        const takers = c.ids.filter((id) => c.node(id).up && c.node(id).stream.ingesting);
        if (takers.length === 0) return;
        const tok = `${m.id}_${m.attempts++}`;
        byToken.set(tok, m);
        m.sentAt = f.t;
        c.pub(takers[rnd.int(takers.length)]!, subjOf.get(m)!, m.data, tok, [["Nats-Msg-Id", m.id]]);
      };
      // All at once (retried with their msg ids): which is superseded follows the
      // sequences they were stored at.
      for (const m of pre) {
        msgs.push(m);
        res.published++;
        pubPre(m);
      }
      for (let i = 0; pre.some((m) => m.ackSeq === 0); i++) {
        if (i > 4000) fail(`the last_per_subject prefix was not stored (${pre.filter((m) => m.ackSeq === 0).length} left)`);
        await step();
        collectPubAcks();
        if (f.t % 300 === 0) for (const m of pre) if (m.ackSeq === 0) pubPre(m);
      }
      const lastOf = new Map<string, number>();
      for (const m of pre) lastOf.set(subjOf.get(m)!, Math.max(lastOf.get(subjOf.get(m)!) ?? 0, m.ackSeq));
      for (const m of pre) {
        const last = lastOf.get(subjOf.get(m)!)!;
        if (m.ackSeq !== last) {
          superseded.set(m.ackSeq, last);
          deleted.add(m.ackSeq); // never delivered: not lost, not awaited
        }
      }
      consumersReady = true;
    }
    // The fault and heal phases are timed from here (after the lps prefix, if any).
    const tBase = f.t;
    const end = tBase + faultMs + healMs;
    let healed = false;
    while (f.t < end) {
      if (!healed && f.t >= tBase + faultMs) {
        healed = true;
        await f.heal();
      }
      if (f.t < tBase + faultMs + healMs / 3 && rnd.next() < 0.3 * (stepMs / 5)) {
        const m: Msg = { id: `m${msgs.length}`, data: `d${msgs.length}`, sentAt: f.t, attempts: 0, ackSeq: 0 };
        msgs.push(m);
        res.published++;
        publish(m);
      }
      if (f.t % 100 === 0) for (const m of msgs) if (m.ackSeq === 0 && f.t - m.sentAt > 300) publish(m);
      if (f.t % 40 === 0) pull();
      if (!healed) {
        await f.faultStep();
        if (rnd.next() < 0.002 * stepMs) {
          const l = c.leaders()[0];
          const seqs = [...bySeq.keys()];
          if (l !== undefined && seqs.length > 0) {
            const seq = seqs[rnd.int(seqs.length)]!;
            deleted.add(seq);
            removed.add(seq);
            c.node(l).group.deleteMsg(seq, false).catch(() => undefined);
          }
        }
      }
      await step();
      collectPubAcks();
      readInbox();
      runActions();
      await syncConsumers();
    }
    // Drain: every acknowledged publish consumed and its ack confirmed.
    draining = true;
    const need = (): Msg[] => msgs.filter((m) => m.ackSeq === 0 || (!deleted.has(m.ackSeq) && !confirmed.has(m.ackSeq)));
    for (let i = 0; i < 4000 && need().length > 0; i++) {
      if (f.t % 100 === 0) for (const m of msgs) if (m.ackSeq === 0 && f.t - m.sentAt > 300) publish(m);
      if (f.t % 40 === 0) pull();
      if (f.t % 200 === 0) {
        // Acks of deliveries whose AckSync went unanswered, again.
        for (const m of need()) {
          const subj = lastAckSubject.get(m.ackSeq);
          if (subj !== undefined) actions.push({ at: f.t, seq: m.ackSeq, ackSubject: subj, kind: "acksync" });
        }
      }
      await step();
      collectPubAcks();
      readInbox();
      runActions();
      await syncConsumers();
    }
    const left = need();
    if (left.length > 0) {
      fail(`did not settle: ${left.length} messages not consumed and confirmed acked (e.g. ${left.slice(0, 5).map((m) => `${m.id}@${m.ackSeq}${received.has(m.ackSeq) ? " received" : ""}`).join(", ")})`);
    }
    // Every replica at the same place holds the same copies. A replica that caught up from a
    // peer has its stream at the peer's applied index before the CONSUMERS entries up to it
    // reach it through the log (seed 958): the last consumer entry applied counts too.
    for (let i = 0; i < 400; i++) {
      const at = c.ids.map((id) => {
        const d = c.node(id).group.debugState();
        return `${String(d["applied"])}/${String(d["consumers"])}`;
      });
      if (at.every((a) => a === at[0])) break;
      await step();
    }
    const texts = c.ids.map((id) => canonical(c.node(id).group.consumers).text);
    for (let i = 1; i < texts.length; i++) {
      if (texts[i] !== texts[0]) fail(`after healing, ${c.ids[i]}'s consumer copies differ from ${c.ids[0]}'s:\n${texts[i]}\nvs\n${texts[0]}`);
    }
    if (!texts[0]!.startsWith(`${CONSUMER}|`)) fail(`the replicas do not hold consumer ${CONSUMER}: ${texts[0]}`);
  } catch (e) {
    res.violation = e instanceof Violation ? e.message : ((e as Error).stack ?? String(e));
  } finally {
    observer = null;
    early = false;
    noLpsResume = false;
  }
  await f.stopAll();
  return res;
}
