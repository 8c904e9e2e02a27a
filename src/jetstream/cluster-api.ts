// Clustered JetStream on one server (ARCHITECTURE.md "Replicated JetStream"): the meta
// group (src/jscluster/meta-group.ts, handed over as a ClusterMeta) decides which streams
// exist and which servers hold them; this file routes the $JS.API to the server that
// answers, handles the meta-level requests on the meta leader, and opens, updates and
// removes this server's copies as the meta log applies.
//
// Routing (deviation from nats-server, which announces $JS.API interest over routes and lets
// the responsible server answer): the API stays subscribed locally on every server; the
// server a client's request reaches forwards it over the peer channel (FWD frame) to the
// server responsible, which handles it as its own and publishes the reply (which routes back
// to the client like any publish). Meta-level requests go to the meta leader; stream-level
// ones to the stream's leader (R1: its only server; R>1: a member, which forwards once more
// to the group's leader when it is not it). One answer per request.

import { jsErr, JsApiError, type JsErrName } from "../contracts/errors.js";
import { ApiType, type StreamConfig } from "../contracts/wire.js";
import { checkStreamConfig, checkStreamUpdate, configToWire, decodeStreamConfig, sameConfig, setStaticMetadata } from "../stream/config.js";
import { findCrossOverlap, OverlapBudgetExceeded } from "../subjects/overlap.js";
import { subjectsCollide } from "../subjects/subject.js";
import { JS_API_LEVEL } from "../version.js";
import type { ApiRouter } from "./api.js";
import { parseBody, responseType } from "./api-body.js";
import { type ClusterServiceHost, configOf, LocalCopies, PROPOSE_SUBJECT, PROPOSE_TIMEOUT_MS, type LocalCopy } from "./cluster-local.js";
import { shrinkPeers } from "./scale.js";
export type { ClusterServiceHost } from "./cluster-local.js";
import type {
  ClusterApiHooks,
  ClusterChange,
  ClusterForward,
  ClusterMeta,
  ClusterOp,
  ClusterStreamAssignment,
} from "./cluster-types.js";

const API_PREFIX = "$JS.API.";
const NAMES_LIMIT = 1024;
const LIST_LIMIT = 256;
/** FWD subjects of STREAM.LIST's gathering: the meta leader asks a stream's leader for its
 *  info (reply = request id), the answer comes back with the info as payload. */
const INFO_ASK = "$JSC.INFO.ASK";
const INFO_ANSWER = "$JSC.INFO.ANSWER";
/** How long STREAM.LIST waits for the streams' leaders. */
const LIST_GATHER_MS = 2000;
/** A request for a stream this server holds a copy of, whose leader it does not know yet (a
 *  stream just created, an election): it waits this long for one, as a client of nats-server
 *  waits for the leader's answer, before 503. */
const LEADER_WAIT_MS = 2000;

type Body = Record<string, unknown>;

function fail(name: JsErrName, args?: Record<string, string | number>): never {
  throw new JsApiError(jsErr(name, args));
}

function optBool(b: Body | null, k: string): boolean {
  return b?.[k] === true;
}

function optStr(b: Body | null, k: string): string {
  const v = b?.[k];
  return typeof v === "string" ? v : "";
}

function optOffset(b: Body | null): number {
  const v = b?.["offset"];
  return typeof v === "number" && Number.isFinite(v) && v > 0 ? Math.floor(v) : 0;
}

/** Where a request goes: the meta leader, a stream's leader, or this server. */
type Route = { to: "meta" } | { to: "stream"; stream: string } | { to: "local" };

/** The subject tokens after "$JS.API." decide (nats-server's API table). */
export function routeOf(t: string[]): Route {
  const [a, b, c, d] = t;
  if (a === "INFO" && t.length === 1) return { to: "meta" };
  if (a === "SERVER" && b === "REMOVE" && t.length === 2) return { to: "meta" };
  if (a === "STREAM") {
    // PEER.REMOVE: the meta leader changes the assignment (nats-server jsStreamRemovePeerRequest).
    if (b === "CREATE" || b === "UPDATE" || b === "DELETE" || b === "NAMES" || b === "LIST" || b === "PEER") return { to: "meta" };
    if ((b === "INFO" || b === "PURGE") && c !== undefined) return { to: "stream", stream: c };
    if ((b === "MSG" || b === "LEADER") && d !== undefined) return { to: "stream", stream: d };
    return { to: "local" };
  }
  if (a === "CONSUMER") {
    // CONSUMER.<op>.<stream>..., DURABLE.CREATE.<stream>.<c>, MSG.NEXT.<stream>.<c>,
    // LEADER.STEPDOWN.<stream>.<c>.
    const s = b === "DURABLE" || b === "MSG" || b === "LEADER" ? d : c;
    return s !== undefined && s !== "" ? { to: "stream", stream: s } : { to: "local" };
  }
  return { to: "local" };
}

/** STREAM.INFO and STREAM.MSG.GET: answered from the leader's store (Direct Get is not,
 *  and is not linearizable, ADR-31). */
function isLeaderRead(t: string[]): boolean {
  return t[0] === "STREAM" && (t[1] === "INFO" || (t[1] === "MSG" && t[2] === "GET"));
}

function consumerType(op: string): string {
  if (op === "CREATE" || op === "DURABLE") return ApiType.ConsumerCreate;
  if (op === "NAMES") return ApiType.ConsumerNames;
  if (op === "LIST") return ApiType.ConsumerList;
  if (op === "DELETE") return ApiType.ConsumerDelete;
  return ApiType.ConsumerInfo;
}

export class JsCluster implements ClusterApiHooks {
  /** This server's copies of the assigned streams (cluster-local.ts). */
  private readonly local: LocalCopies;
  private readonly copies: Map<string, LocalCopy>;
  /** STREAM.LIST info requests in flight: id -> settle with the info JSON text. */
  private readonly infoAsks = new Map<string, (json: string | null) => void>();
  private nextAsk = 0;

  constructor(
    private readonly svc: ClusterServiceHost,
    private readonly router: ApiRouter,
    readonly meta: ClusterMeta,
  ) {
    router.cluster = this;
    this.local = new LocalCopies(svc, router, meta);
    this.copies = this.local.copies;
    meta.onForward = (from, req) => this.forwarded(from, req);
  }

  stop(): void {
    this.router.cluster = null;
    this.local.stop();
  }

  private get stopped(): boolean {
    return this.local.stopped;
  }

  private get self(): string {
    return this.meta.serverName;
  }

  /** Resolves once the local work queued so far is done (tests). */
  settled(): Promise<void> {
    return this.local.settled();
  }

  // ---------- routing ----------

  /** The server that leads a stream as far as this one knows: R1 its only peer; R>1 the
   *  group's leader when this server is a member and knows it, else a reachable member
   *  (which forwards again). "" when there is none to ask. */
  streamLeader(sa: ClusterStreamAssignment): string {
    const peers = sa.group.peers;
    if (peers.length === 1) return peers[0]!;
    const local = this.copies.get(sa.config.name)?.group;
    if (local !== undefined && local !== null && local.leader !== "") return local.leader;
    if (peers.includes(this.self)) return "";
    const pref = sa.group.preferred;
    if (pref !== undefined && this.meta.isConnected(pref)) return pref;
    return peers.find((p) => this.meta.isConnected(p)) ?? "";
  }

  private respondErr(reply: string, t: string[], name: JsErrName): void {
    this.router.respond(reply, { type: t[0] === "CONSUMER" ? consumerType(t[1] ?? "") : responseType(t), error: jsErr(name) });
  }

  intercept(subject: string, reply: string, hdr: Buffer | null, payload: Buffer): boolean {
    return this.route(subject, reply, hdr, payload, 0);
  }

  /** True when forwarded or answered; false: handle it here. metaCurrent: this server's meta
   *  state was confirmed current for this request. */
  private route(subject: string, reply: string, hdr: Buffer | null, payload: Buffer, hops: number, metaCurrent = false, waited = false): boolean {
    if (this.stopped) return false;
    const t = subject.slice(API_PREFIX.length).split(".");
    const r = routeOf(t);
    if (r.to === "local") return false;
    if (r.to === "stream" && hops === 0 && !metaCurrent && t[0] === "STREAM" && t[1] === "INFO" && this.meta.confirmCurrent !== undefined && this.meta.leaderName !== "") {
      // The server a client asked first brings its meta state up to the meta leader's commit
      // (ReadIndex): a STREAM.INFO sent after STREAM.DELETE (or CREATE) replied then finds the
      // stream gone (there) on every server, not only on the meta leader. Without a meta
      // leader answering, it goes on from the state it has.
      const h = hdr === null ? null : Buffer.from(hdr);
      const p = Buffer.from(payload);
      const go = (): void => {
        if (!this.route(subject, reply, h, p, hops, true)) this.router.enqueueForwarded(subject, reply, h, p, true);
      };
      this.meta.confirmCurrent().then(go, go);
      return true;
    }
    const fwd = (peer: string): boolean => this.meta.forward(peer, { subject, reply, hdr, payload, hops: hops + 1, local: false });
    if (r.to === "meta") {
      const leader = this.meta.started ? this.meta.leaderName : "";
      if (leader === this.self) return false;
      if (leader === "" && hops === 0 && !waited) {
        // An election in progress (or the group just started): wait for a meta leader,
        // bounded, before answering 503 (nats-server does not call itself leaderless in its
        // first seconds either, and a client's create then is not an error).
        this.retryWhen(() => (this.meta.started ? this.meta.leaderName : "") !== "", subject, reply, hdr, payload, hops, false);
        return true;
      }
      if (leader === "" || hops > 0 || !fwd(leader)) this.respondErr(reply, t, "JSClusterNotAvailErr");
      return true;
    }
    const sa = this.meta.state.stream(r.stream);
    if (sa === undefined) {
      if (t[1] === "MSG" && t[0] === "CONSUMER") return true; // a pull: no JSON reply
      this.respondErr(reply, t, this.meta.started ? "JSStreamNotFoundErr" : "JSClusterNotAvailErr");
      return true;
    }
    const leader = this.streamLeader(sa);
    if (leader === "" && hops === 0 && !waited && sa.group.peers.includes(this.self)) {
      // A replica that does not know its leader yet (its copy just opened, an election):
      // wait for one (bounded) rather than answer 503 while the stream has a leader.
      this.retryWhen(() => {
        const cur = this.meta.state.stream(r.stream);
        return cur === undefined || this.streamLeader(cur) !== "";
      }, subject, reply, hdr, payload, hops, true);
      return true;
    }
    if (leader === this.self && isLeaderRead(t)) {
      // A leader that was paused or cut off may not know it was deposed: a read from its
      // store is answered only once a quorum confirms it still leads (ReadIndex).
      const g = this.copies.get(r.stream)?.group;
      if (g?.confirmRead !== undefined) {
        // The buffers are only valid during this call.
        const h = hdr === null ? null : Buffer.from(hdr);
        const p = Buffer.from(payload);
        g.confirmRead().then(
          () => this.router.enqueueForwarded(subject, reply, h, p, true),
          // Not confirmed: the group closed because the stream was deleted meanwhile, or this
          // replica no longer leads.
          () => this.respondErr(reply, t, this.meta.state.stream(r.stream) === undefined ? "JSStreamNotFoundErr" : "JSClusterNotAvailErr"),
        );
        return true;
      }
    }
    if (leader === this.self || hops >= 2) return false;
    if (leader === "" || !fwd(leader)) {
      if (!(t[1] === "MSG" && t[0] === "CONSUMER")) this.respondErr(reply, t, "JSClusterNotAvailErr");
    }
    return true;
  }

  /** Routes the request again once `ready()` holds or LEADER_WAIT_MS passed (polled). If it
   *  is then this server's to answer, it goes to the API queue: as a meta request (local
   *  false: the clustered handler proposes it) or a stream request (local: its copy answers). */
  private retryWhen(ready: () => boolean, subject: string, reply: string, hdr: Buffer | null, payload: Buffer, hops: number, local: boolean): void {
    // The buffers are only valid during the caller's call.
    const h = hdr === null ? null : Buffer.from(hdr);
    const p = Buffer.from(payload);
    const clock = this.svc.deps.clock;
    const end = clock.monoMs() + LEADER_WAIT_MS;
    const check = (): void => {
      if (this.stopped) return;
      if (!ready() && clock.monoMs() < end) {
        clock.setTimer(check, 20);
        return;
      }
      if (!this.route(subject, reply, h, p, hops, true, true)) this.router.enqueueForwarded(subject, reply, h, p, local);
    };
    clock.setTimer(check, 20);
  }

  /** A request another server sent here. */
  private forwarded(_from: string, req: ClusterForward): void {
    if (this.stopped) return;
    if (req.subject === INFO_ASK) {
      const st = this.svc.streams.get(req.payload.toString("utf8"));
      const json = st === undefined ? "" : this.router.listInfoJson(st);
      this.meta.forward(_from, { subject: INFO_ANSWER, reply: req.reply, hdr: null, payload: Buffer.from(json), hops: 1, local: true });
      return;
    }
    if (req.subject === INFO_ANSWER) {
      const settle = this.infoAsks.get(req.reply);
      this.infoAsks.delete(req.reply);
      settle?.(req.payload.length > 0 ? req.payload.toString("utf8") : null);
      return;
    }
    if (req.subject === PROPOSE_SUBJECT) {
      if (!this.meta.isLeader) return;
      try {
        void this.meta.proposeWait(JSON.parse(req.payload.toString("utf8")) as ClusterOp, PROPOSE_TIMEOUT_MS);
      } catch {
        // not JSON: dropped
      }
      return;
    }
    if (!req.subject.startsWith(API_PREFIX)) return;
    if (!req.local && this.route(req.subject, req.reply, req.hdr, req.payload, req.hops)) return;
    this.router.enqueueForwarded(req.subject, req.reply, req.hdr, req.payload, req.local);
  }

  // ---------- meta-level requests (on the meta leader) ----------

  async handle(t: string[], reply: string, _hdr: Buffer | null, payload: Buffer): Promise<Body | { raw: string } | null | undefined> {
    const r = routeOf(t);
    if (r.to === "stream" && t[0] === "STREAM" && t[1] === "LEADER") return this.stepdown(r.stream);
    // A restored stream would be one the meta state does not know.
    if (t[0] === "STREAM" && t[1] === "RESTORE") fail("JSClusterUnSupportFeatureErr");
    if (r.to !== "meta") return undefined;
    if (!this.meta.isLeader) fail("JSClusterNotAvailErr");
    if (t[0] === "INFO") return this.accountInfo();
    if (t[0] === "SERVER") return this.serverRemove(payload);
    if (t[1] === "PEER") return this.peerRemove(t[3] ?? "", payload);
    const name = t[2] ?? "";
    const op = t[1] ?? "";
    if (op === "CREATE") return this.create(name, reply, payload);
    if (op === "UPDATE") return this.update(name, reply, payload);
    if (op === "DELETE") return this.remove(name);
    if (op === "NAMES") return this.names(payload);
    if (op === "LIST") return this.list(payload);
    return undefined;
  }

  private others(except: string): { get(name: string): StreamConfig | undefined } {
    return {
      get: (n) => {
        if (n === except) return undefined;
        const sa = this.meta.state.stream(n);
        return sa === undefined ? undefined : configOf(sa);
      },
    };
  }

  private overlapsOthers(cfg: StreamConfig): boolean {
    const others: string[] = [];
    for (const n of this.meta.state.streamNames()) {
      if (n === cfg.name) continue;
      for (const s of configOf(this.meta.state.stream(n)!).subjects) others.push(s);
    }
    try {
      return findCrossOverlap(cfg.subjects, others) >= 0;
    } catch (e) {
      if (e instanceof OverlapBudgetExceeded) fail("JSStreamInvalidConfigF", { err: "stream subjects are too complex to check for overlaps" });
      throw e;
    }
  }

  private changeError(c: ClusterChange | null): void {
    if (c === null) fail("JSClusterNotAvailErr");
    if (c.kind !== "error") return;
    if (c.code === "stream_exists") fail("JSStreamNameExistErr");
    if (c.code === "stream_not_found") fail("JSStreamNotFoundErr");
    if (c.code === "consumer_not_found") fail("JSConsumerNotFoundErr");
    fail("JSClusterNotAvailErr");
  }

  private async create(name: string, reply: string, payload: Buffer): Promise<Body | null> {
    const body = parseBody(payload, true);
    const raw = decodeStreamConfig(body ?? {});
    if (name !== raw.name) fail("JSStreamMismatchErr");
    if (/[\\/]/.test(name)) fail("JSStreamNameContainsPathSeparatorsErr");
    if (raw.sealed) fail("JSStreamInvalidConfigF", { err: "stream configuration for create can not be sealed" });
    if (raw.mirror_direct && raw.mirror === null) fail("JSStreamInvalidConfigF", { err: "stream has no mirror but does have mirror direct" });
    const cfg = checkStreamConfig(raw, this.others(name), optBool(body, "pedantic"));
    setStaticMetadata(cfg);
    const existing = this.meta.state.stream(name);
    if (existing !== undefined) {
      if (!sameConfig(configOf(existing), cfg)) fail("JSStreamNameExistErr");
      // The same config again: its leader answers with its info, as a create would.
      const leader = this.streamLeader(existing);
      const req: ClusterForward = { subject: `${API_PREFIX}STREAM.CREATE.${name}`, reply, hdr: null, payload, hops: 1, local: true };
      if (leader === this.self) this.router.enqueueForwarded(req.subject, reply, null, payload, true);
      else if (leader === "" || !this.meta.forward(leader, req)) fail("JSClusterNotAvailErr");
      return null;
    }
    if (cfg.num_replicas > 1 && this.meta.openStreamGroup === undefined) fail("JSStreamReplicasNotSupportedErr");
    if (this.overlapsOthers(cfg)) fail("JSStreamSubjectOverlapErr");
    const placed = this.meta.placeStream({
      replicas: Math.max(1, cfg.num_replicas),
      storage: cfg.storage,
      maxBytes: cfg.max_bytes,
      cluster: cfg.placement?.cluster ?? "",
      tags: cfg.placement?.tags ?? [],
    });
    if (!placed.ok) fail("JSClusterNoPeersErrF", { err: placed.error });
    const sa: ClusterStreamAssignment = {
      config: configToWire(cfg, false) as ClusterStreamAssignment["config"],
      group: placed.group,
      created: this.svc.deps.clock.nowNs(),
      reply,
    };
    this.changeError(await this.meta.proposeWait({ op: "assign_stream", sa }, PROPOSE_TIMEOUT_MS));
    // The stream's responder answers once it opened its copy.
    return null;
  }

  private async update(name: string, reply: string, payload: Buffer): Promise<Body | null> {
    const body = parseBody(payload, true);
    const raw = decodeStreamConfig(body ?? {});
    if (name !== raw.name) fail("JSStreamMismatchErr");
    const cur = this.meta.state.stream(name);
    if (cur === undefined) fail("JSStreamNotFoundErr");
    const checked = checkStreamConfig(raw, this.others(name), optBool(body, "pedantic"));
    // checkStreamUpdate refuses replicas > 1 (a single server's rule): checked with 1 here.
    const cfg = checkStreamUpdate({ ...configOf(cur), num_replicas: 1 }, { ...checked, num_replicas: 1 });
    cfg.num_replicas = checked.num_replicas;
    setStaticMetadata(cfg);
    if (this.overlapsOthers(cfg)) fail("JSStreamSubjectOverlapErr");
    // Against the configured replicas, not the group's size (a peer removal may have shrunk it).
    const want = Math.max(1, cfg.num_replicas);
    const group = want !== Math.max(1, Number(cur.config["num_replicas"] ?? 1)) ? await this.scaledGroup(cur, cfg, want) : cur.group;
    const sa: ClusterStreamAssignment = { ...cur, group, config: configToWire(cfg, false) as ClusterStreamAssignment["config"], reply };
    this.changeError(await this.meta.proposeWait({ op: "update_stream", sa }, PROPOSE_TIMEOUT_MS));
    return null;
  }

  /**
   * STREAM.UPDATE of num_replicas (nats-server 2.10+): the stream's members after the change.
   * Up: placement adds servers after the current ones (R1→R>1 is a new Raft group, seeded by
   * the server holding the plain stream; R>1 grows the same group). Down: the stream's leader
   * is kept first (asked of it when this server does not hold a copy), then the others in
   * order; R>1→R1 gets a new group name (a plain copy has no Raft group, and a later scale-up
   * must start a fresh one).
   */
  private async scaledGroup(cur: ClusterStreamAssignment, cfg: StreamConfig, want: number): Promise<ClusterStreamAssignment["group"]> {
    if (want > 1 && this.meta.openStreamGroup === undefined) fail("JSStreamReplicasNotSupportedErr");
    const peers = cur.group.peers;
    const where = { storage: cfg.storage, maxBytes: cfg.max_bytes, cluster: cfg.placement?.cluster ?? cur.group.cluster ?? "", tags: cfg.placement?.tags ?? [] };
    if (want > peers.length) {
      const placed = this.meta.placeStream({ ...where, replicas: want, existing: peers });
      if (!placed.ok) fail("JSClusterNoPeersErrF", { err: placed.error });
      if (placed.group.peers.length < want) fail("JSInsufficientResourcesErr");
      if (peers.length === 1) return { ...placed.group, preferred: peers[0]! };
      return { ...cur.group, peers: placed.group.peers };
    }
    const kept = shrinkPeers(peers, await this.leaderOf(cur), want);
    if (want === 1) {
      const placed = this.meta.placeStream({ ...where, replicas: 1, existing: kept });
      if (!placed.ok) fail("JSInsufficientResourcesErr");
      return { ...placed.group, peers: kept, preferred: kept[0]! };
    }
    const group = { ...cur.group, peers: kept };
    if (group.preferred !== undefined && !kept.includes(group.preferred)) delete group.preferred;
    return group;
  }

  /** The stream's leader as its group says ("" unknown): this server's copy, else asked of a
   *  member (its info's cluster block, bounded). */
  private async leaderOf(sa: ClusterStreamAssignment): Promise<string> {
    const local = this.copies.get(sa.config.name)?.group;
    if (local != null) return local.leader;
    const json = await this.infoOf(sa.config.name);
    if (json === null) return "";
    try {
      const l = (JSON.parse(json) as { cluster?: { leader?: unknown } }).cluster?.leader;
      return typeof l === "string" ? l : "";
    } catch {
      return "";
    }
  }

  private async remove(name: string): Promise<Body> {
    if (this.meta.state.stream(name) === undefined) fail("JSStreamNotFoundErr");
    this.changeError(await this.meta.proposeWait({ op: "remove_stream", stream: name }, PROPOSE_TIMEOUT_MS));
    return { success: true };
  }

  // ---------- membership (on the meta leader) ----------

  /** The stream's assignment without `peer`, a replacement placed when one is available. */
  private remapped(sa: ClusterStreamAssignment, peer: string): ClusterStreamAssignment {
    const cfg = configOf(sa);
    const r = this.meta.remapPeers!({
      peers: sa.group.peers,
      remove: peer,
      storage: cfg.storage,
      maxBytes: cfg.max_bytes,
      cluster: cfg.placement?.cluster ?? sa.group.cluster ?? "",
      tags: cfg.placement?.tags ?? [],
    });
    if (!r.replaced) this.svc.deps.log.warn(`JetStream cluster could not replace peer for stream '$G > ${sa.config.name}'`);
    const group = { ...sa.group, peers: r.peers };
    if (group.preferred === peer) delete group.preferred;
    const out: ClusterStreamAssignment = { ...sa, group };
    delete out.reply;
    return out;
  }

  /** STREAM.PEER.REMOVE: `peer` (a server name or peer id) leaves the stream's group; a
   *  replacement is placed when one is available, else the group shrinks (nats-server
   *  2.9/2.10). Answered once the new assignment applied; the group's leader then changes
   *  the Raft voters one server at a time (StreamGroup.reconcileMembers). */
  private async peerRemove(name: string, payload: Buffer): Promise<Body> {
    if (this.meta.remapPeers === undefined) fail("JSClusterUnSupportFeatureErr");
    const body = parseBody(payload, false);
    if (body === null) fail("JSBadRequestErr");
    const peer = optStr(body, "peer");
    if (peer === "") fail("JSBadRequestErr");
    const sa = this.meta.state.stream(name);
    if (sa === undefined) fail("JSStreamNotFoundErr");
    const member = sa.group.peers.find((p) => p === peer || this.meta.peerId?.(p) === peer);
    if (member === undefined) fail("JSClusterPeerNotMemberErr");
    if (sa.group.peers.length <= 1) fail("JSPeerRemapErr");
    const next = this.remapped(sa, member);
    const c = await this.meta.proposeWait({ op: "update_stream", sa: next }, PROPOSE_TIMEOUT_MS);
    if (c === null || c.kind === "error") fail("JSPeerRemapErr");
    return { success: true };
  }

  /** SERVER.REMOVE ({"peer": server name} or {"peer_id": id}): every stream the server holds
   *  gets a replacement (or shrinks), then the server leaves the meta group's voters.
   *  Answered once that membership change committed. Deviation: accepted from any account
   *  (nats-server: the system account only), as META.LEADER.STEPDOWN here. */
  private async serverRemove(payload: Buffer): Promise<Body> {
    if (this.meta.removeMetaPeer === undefined || this.meta.metaPeers === undefined) fail("JSClusterUnSupportFeatureErr");
    const body = parseBody(payload, false);
    if (body === null) fail("JSBadRequestErr");
    const byId = optStr(body, "peer_id");
    const byName = optStr(body, "peer");
    const found = this.meta.metaPeers().find((p) => (byId !== "" ? this.meta.peerId?.(p) === byId : p === byName));
    if (found === undefined) fail("JSClusterServerNotMemberErr");
    for (const n of this.meta.state.streamNames()) {
      const sa = this.meta.state.stream(n)!;
      if (!sa.group.peers.includes(found)) continue;
      if (sa.group.peers.length === 1) {
        // An R1 stream has nowhere to go: its data is on the server removed (nats-server
        // keeps the assignment too).
        this.svc.deps.log.warn(`JetStream cluster: stream '$G > ${n}' has its only replica on removed server ${found}`);
        continue;
      }
      const c = await this.meta.proposeWait({ op: "update_stream", sa: this.remapped(sa, found) }, PROPOSE_TIMEOUT_MS);
      if (c === null) fail("JSClusterNotAvailErr");
    }
    // Not added back by itself while it keeps running (MetaGroup.admitJoiners).
    if ((await this.meta.proposeWait({ op: "forget_peer", peer: found }, PROPOSE_TIMEOUT_MS)) === null) fail("JSClusterNotAvailErr");
    const err = await this.meta.removeMetaPeer(found, PROPOSE_TIMEOUT_MS);
    if (err === "inflight") fail("JSClusterServerMemberChangeInflightErr");
    if (err !== "") fail("JSRaftGeneralErrF", { err });
    return { success: true };
  }

  private filteredNames(filter: string): string[] {
    const names = this.meta.state.streamNames();
    if (filter === "") return names;
    return names.filter((n) => {
      const cfg = configOf(this.meta.state.stream(n)!);
      if (cfg.subjects.length === 0) return subjectsCollide(filter, n);
      return cfg.subjects.some((s) => subjectsCollide(filter, s));
    });
  }

  private names(payload: Buffer): Body {
    const body = parseBody(payload, false);
    const names = this.filteredNames(optStr(body, "subject"));
    const off = Math.min(optOffset(body), names.length);
    const page = names.slice(off, off + NAMES_LIMIT);
    return { total: names.length, offset: off, limit: NAMES_LIMIT, streams: page.length > 0 ? page : null };
  }

  /** STREAM.LIST from the meta state, each stream's info from its leader (asked over the peer
   *  channel, as nats-server gathers them); streams whose leader did not answer in time are
   *  named in `missing`. */
  private async list(payload: Buffer): Promise<{ raw: string }> {
    const body = parseBody(payload, false);
    const names = this.filteredNames(optStr(body, "subject"));
    const off = Math.min(optOffset(body), names.length);
    const page = names.slice(off, off + LIST_LIMIT);
    const got = await Promise.all(page.map((n) => this.infoOf(n)));
    const infos: string[] = [];
    const missing: string[] = [];
    got.forEach((j, i) => (j === null ? missing.push(page[i]!) : infos.push(j)));
    const miss = missing.length > 0 ? `,"missing":${JSON.stringify(missing)}` : "";
    return { raw: `{"total":${names.length},"offset":${off},"limit":${LIST_LIMIT},"streams":[${infos.join(",")}]${miss}}` };
  }

  /** A stream's info (JSON text) from its leader, or null when it did not answer in time. */
  private infoOf(name: string): Promise<string | null> {
    const sa = this.meta.state.stream(name);
    if (sa === undefined) return Promise.resolve(null);
    const leader = this.streamLeader(sa);
    const local = this.svc.streams.get(name);
    if (leader === this.self && local !== undefined) return Promise.resolve(this.router.listInfoJson(local));
    if (leader === "") return Promise.resolve(null);
    const id = `${this.self}.${++this.nextAsk}`;
    return new Promise((resolve) => {
      const timer = this.svc.deps.clock.setTimer(() => {
        this.infoAsks.delete(id);
        resolve(null);
      }, LIST_GATHER_MS);
      this.infoAsks.set(id, (json) => {
        this.svc.deps.clock.clearTimer(timer);
        resolve(json);
      });
      if (!this.meta.forward(leader, { subject: INFO_ASK, reply: id, hdr: null, payload: Buffer.from(name), hops: 1, local: true })) {
        this.svc.deps.clock.clearTimer(timer);
        this.infoAsks.delete(id);
        resolve(null);
      }
    });
  }

  /** $JS.API.INFO on the meta leader: stream and consumer counts cluster-wide (from the meta
   *  state), usage of this server's copies. */
  private accountInfo(): Body {
    const rest = { ...(this.svc.accountInfo() as Body) };
    delete rest["type"];
    let consumers = 0;
    for (const n of this.meta.state.streamNames()) consumers += this.meta.state.consumerNames(n).length;
    rest["streams"] = this.meta.state.streamCount;
    rest["consumers"] = Math.max(consumers, typeof rest["consumers"] === "number" ? rest["consumers"] : 0);
    rest["api"] = { level: JS_API_LEVEL, total: this.svc.apiStats.total, errors: this.svc.apiStats.errors };
    return rest;
  }

  private async stepdown(name: string): Promise<Body> {
    await this.stepdownStream(name);
    return { success: true };
  }

  async stepdownStream(name: string): Promise<void> {
    const copy = this.copies.get(name);
    if (copy === undefined || !this.svc.streams.has(name)) fail("JSStreamNotFoundErr");
    // An R1 stream has no group: nats-server answers success.
    if (copy.group === null) return;
    await copy.group.stepdown();
  }

  /** /healthz (nats-server healthz, clustered): the meta group has a leader and this server
   *  is current with it; every stream assigned here is open, and each replicated one's local
   *  replica is current (not catching up, caught up with its leader). "" when healthy. */
  healthError(): string {
    const m = this.meta.healthError?.() ?? "";
    if (m !== "") return m;
    for (const n of this.meta.state.streamNames()) {
      const sa = this.meta.state.stream(n)!;
      if (!sa.group.peers.includes(this.self)) continue;
      const copy = this.copies.get(n);
      if (copy === undefined || !this.svc.streams.has(n)) return `JetStream stream '$G > ${n}' is not current: stream not found`;
      const e = copy.group?.healthError?.() ?? "";
      if (e !== "") return `JetStream stream '$G > ${n}' is not current: ${e}`;
    }
    return "";
  }

  /** Lame duck or a clean shutdown (nats-server transferRaftLeaders): every group this
   *  server leads hands leadership to a caught-up peer, and none campaigns any more, so the
   *  others need not wait out an election timeout. Bounded by boundMs. */
  async transferLeaders(boundMs: number): Promise<void> {
    const waits: Array<Promise<void>> = [];
    if (this.meta.handOff !== undefined) waits.push(this.meta.handOff(boundMs));
    for (const c of this.copies.values()) if (c.group?.handOff !== undefined && c.group.isLeader) waits.push(c.group.handOff(boundMs));
    await Promise.all(waits);
  }

  /** Replicated streams this server holds a copy of (/jsz ha_assets). */
  haAssets(): number {
    let n = 0;
    for (const c of this.copies.values()) if (c.group !== null) n++;
    return n;
  }

  /** The stream and the streams that mirror it, with their clusters (nats-server
   *  streamAlternates; one cluster here, so the stream first, then its mirrors by name);
   *  null when nothing mirrors it. */
  alternates(name: string): Array<{ name: string; cluster: string }> | null {
    const own = this.meta.state.stream(name);
    if (own === undefined) return null;
    const cluster = (sa: ClusterStreamAssignment): string => sa.group.cluster ?? this.meta.clusterName;
    const out = [{ name, cluster: cluster(own) }];
    for (const n of this.meta.state.streamNames().sort()) {
      const sa = this.meta.state.stream(n)!;
      const m = sa.config["mirror"] as { name?: string } | undefined;
      if (n !== name && m?.name === name) out.push({ name: n, cluster: cluster(sa) });
    }
    return out.length > 1 ? out : null;
  }

  clusterBlock(name: string): Record<string, unknown> {
    const copy = this.copies.get(name);
    if (copy?.group != null) return { name: this.meta.clusterName, ...copy.group.clusterInfo() };
    return { name: this.meta.clusterName, leader: this.self };
  }

  purge(name: string, opts: { filter?: string; seq?: number; keep?: number }): Promise<number> | undefined {
    const g = this.copies.get(name)?.group;
    if (g == null) return undefined;
    return Promise.resolve(g.purge(opts));
  }

  deleteMsg(name: string, seq: number, erase: boolean): Promise<boolean> | undefined {
    const g = this.copies.get(name)?.group;
    if (g == null) return undefined;
    return Promise.resolve(g.deleteMsg(seq, erase));
  }

  // ---------- consumers of replicated streams ----------

  consumerDone(op: string, tokens: string[]): void {
    if (op !== "CREATE" && op !== "DURABLE" && op !== "DELETE") return;
    const name = op === "DURABLE" ? tokens[1] : tokens[0];
    const copy = name === undefined ? undefined : this.copies.get(name);
    if (copy === undefined || copy.group === null || !copy.consumersUp) return;
    this.local.syncDurables(copy);
  }

}
