// The cluster's interest: what our clients (and internal cluster: true subscriptions)
// subscribe to, counted and announced to every peer (RS+/RS-) on the route that carries the
// global account to it, what the peers announced (remoteSl, a Sublist of RemoteSub, each
// held by the route connection it came on), and the forwarding decision for a message
// published here: queue groups picked cluster-wide (nats-server's weighted pick, local
// members first by their count) and one copy per route connection with interest (the one
// the interest came on). Cluster (cluster.ts) owns one and hands it the carriers.

import { Sublist, type SublistResult } from "../subjects/sublist.js";
import { RemoteSub, GLOBAL_ACCOUNT, type Route } from "./route.js";
import type { Subscription } from "../server/subscription.js";
import type { AckReply } from "../protocol/ackreply.js";
import type { Logger } from "../runtime/log.js";
import type { Random } from "../runtime/random.js";
import type { ClientPermissions } from "../server/permissions.js";

export class Interest {
  /** The peers' interest. */
  readonly remoteSl = new Sublist<RemoteSub>();
  /** Our clients' interest, counted: "<subject>" or "<subject> <queue>" -> subscriptions. */
  private readonly local = new Map<string, number>();
  /** The largest outbound backlog among the local queue members the last forward() chose. */
  lastQueueBacklog = 0;
  private epoch = 0;
  private readonly targets: Route[] = [];

  constructor(
    /** Each peer's carrier of the global account, by server id (the Cluster's map). */
    private readonly routes: Map<string, Route>,
    /** Route permissions: import (what we announce) and export (what peers may announce). */
    private readonly perms: ClientPermissions | null,
    private readonly log: Logger,
    private readonly random: Random,
  ) {}

  /** A route closed: its interest goes. */
  dropRoute(r: Route): void {
    for (const rs of r.remoteSubs.values()) this.remoteSl.remove(rs);
    r.remoteSubs.clear();
  }

  /** Everything we announce, to a route that just became a peer's carrier of the global
   *  account (a route pinned to it leaves the account out). */
  sendAllTo(r: Route): void {
    if (this.local.size === 0) return;
    const acc = r.account === "" ? `${GLOBAL_ACCOUNT} ` : "";
    let s = "";
    for (const [key, n] of this.local) {
      const sp = key.indexOf(" ");
      s += sp < 0 ? `RS+ ${acc}${key}\r\n` : `RS+ ${acc}${key} ${n}\r\n`;
    }
    r.queueRaw(Buffer.from(s, "latin1"));
  }

  /** A local subscription (a client's, or an internal one with cluster: true) came or went:
   *  announce the changes of interest to every peer (RS+ when a subject gains its first
   *  subscription, RS- when it loses its last; a queue group's weight on every change). */
  localInterest(sub: Subscription, delta: 1 | -1): void {
    // Interest in a subject we may not import is never announced (nats-server canImport).
    if (this.perms !== null && !this.perms.pubAllowed(sub.subject, 0)) return;
    const q = sub.queue;
    const key = q === "" ? sub.subject : `${sub.subject} ${q}`;
    const was = this.local.get(key) ?? 0;
    const now = was + delta;
    if (now <= 0) {
      if (was <= 0) return;
      this.local.delete(key);
      this.broadcast("RS-", key);
      return;
    }
    this.local.set(key, now);
    if (q !== "") this.broadcast("RS+", `${key} ${now}`);
    else if (was === 0) this.broadcast("RS+", key);
  }

  /** `<op> $G <rest>` to each peer's carrier of the global account (`<op> <rest>` on one
   *  pinned to it). */
  private broadcast(op: string, rest: string): void {
    if (this.routes.size === 0) return;
    let named: Buffer | null = null;
    let implied: Buffer | null = null;
    for (const r of this.routes.values()) {
      if (r.account === "") r.queueRaw((named ??= Buffer.from(`${op} ${GLOBAL_ACCOUNT} ${rest}\r\n`, "latin1")));
      else r.queueRaw((implied ??= Buffer.from(`${op} ${rest}\r\n`, "latin1")));
    }
  }

  remoteSub(r: Route, acc: string, subject: string, queue: string, weight: number): void {
    if (acc !== GLOBAL_ACCOUNT) {
      // nats-server always announces its system account's subscriptions; tsnats has no
      // other account, so there is nothing to route for them.
      return;
    }
    // A peer may only subscribe to what we export (nats-server canExport).
    if (this.perms !== null && !this.perms.canSubscribe(subject, "")) {
      this.log.debug(`${r.label()} - Can not export "${subject}", ignoring remote subscription request`);
      return;
    }
    const key = queue === "" ? subject : `${subject} ${queue}`;
    const old = r.remoteSubs.get(key);
    if (old !== undefined) {
      if (queue !== "") old.weight = Math.max(1, weight);
      return;
    }
    const rs = new RemoteSub(r, subject, queue, queue === "" ? 0 : Math.max(1, weight));
    try {
      this.remoteSl.insert(rs);
    } catch {
      this.log.debug(`${r.label()} - invalid remote subscription ${JSON.stringify(subject)}`);
      return;
    }
    r.remoteSubs.set(key, rs);
  }

  remoteUnsub(r: Route, acc: string, subject: string, queue: string): void {
    if (acc !== GLOBAL_ACCOUNT) return;
    const key = queue === "" ? subject : `${subject} ${queue}`;
    const rs = r.remoteSubs.get(key);
    if (rs === undefined) return;
    r.remoteSubs.delete(key);
    this.remoteSl.remove(rs);
  }

  /** Whether a peer announced a member of queue group `queue` matching subject. */
  hasRemoteQueueInterest(subject: string, queue: string): boolean {
    if (this.remoteSl.size === 0) return false;
    return findGroup(this.remoteSl.match(subject).qsubs, queue) !== null;
  }

  /** Whether any route has interest in subject. */
  hasRemoteInterest(subject: string): boolean {
    if (this.remoteSl.size === 0) return false;
    const r = this.remoteSl.match(subject);
    return r.psubs.length > 0 || r.qsubs.length > 0;
  }


  /**
   * A message published on this server, after its local plain subscribers had it: queue
   * groups cluster-wide (one member: a local one or a route, weighted as nats-server does),
   * then one copy per route with interest. shown: the subject local subscribers see (a
   * JetStream delivery matches its deliver subject; a route gets "<reply>@<shown>", as
   * nats-server sends it). Returns the deliveries made (a route counts once).
   */
  forward(fromCid: number, noEcho: boolean, subject: string, reply: string, hdr: Buffer | null, buf: Buffer, start: number, end: number, shown: string, ack: AckReply | null, qsubs: SublistResult<Subscription>["qsubs"]): number {
    const rr = this.remoteSl.match(subject);
    let delivered = 0;
    this.lastQueueBacklog = 0;
    const epoch = ++this.epoch;
    const targets = this.targets;
    targets.length = 0;
    const rps = rr.psubs;
    for (let i = 0; i < rps.length; i++) {
      const r = rps[i]!.route;
      if (r.pickEpoch !== epoch) {
        r.pickEpoch = epoch;
        r.pickPlain = false;
        r.pickQueues.length = 0;
        targets.push(r);
      }
      r.pickPlain = true;
    }
    const rqs = rr.qsubs;
    for (let g = 0; g < qsubs.length; g++) {
      const members = qsubs[g]!;
      const n = members.length;
      if (n === 0) continue;
      const name = members[0]!.queue;
      const remote = rqs.length > 0 ? findGroup(rqs, name) : null;
      const w = remote === null ? 0 : weightOf(remote);
      // A preferLocal group (the clustered $JS.API) takes its local member first; a route's
      // only if none here can take it.
      const pick = members[0]!.preferLocal ? 0 : this.random.int(n + w);
      if (pick < n || w === 0) {
        if (this.deliverQueueLocal(members, pick < n ? pick : 0, fromCid, noEcho, subject, shown, reply, hdr, buf, start, end, ack)) {
          delivered++;
          continue;
        }
        if (w === 0) continue;
      }
      this.addQueueTarget(pickWeighted(remote!, w, this.random), name, epoch);
    }
    // Groups with no member here.
    for (let g = 0; g < rqs.length; g++) {
      const group = rqs[g]!;
      if (group.length === 0) continue;
      const name = group[0]!.queue;
      if (qsubs.length > 0 && hasGroup(qsubs, name)) continue;
      this.addQueueTarget(pickWeighted(group, weightOf(group), this.random), name, epoch);
    }
    if (targets.length === 0) return delivered;
    let rep = ack !== null ? ack.toString() : reply;
    if (shown !== subject && rep.length > 0) rep = `${rep}@${shown}`;
    for (let i = 0; i < targets.length; i++) {
      const r = targets[i]!;
      r.sendMsg(subject, rep, r.pickQueues.length > 0 ? r.pickQueues : null, hdr, buf, start, end);
      delivered++;
    }
    targets.length = 0;
    return delivered;
  }

  private addQueueTarget(r: Route, name: string, epoch: number): void {
    if (r.pickEpoch !== epoch) {
      r.pickEpoch = epoch;
      r.pickPlain = false;
      r.pickQueues.length = 0;
      this.targets.push(r);
    }
    r.pickQueues.push(name);
  }

  /** One member of a local queue group, from index first on (Server.routeRange's rules). */
  private deliverQueueLocal(members: readonly Subscription[], first: number, fromCid: number, noEcho: boolean, subject: string, shown: string, reply: string, hdr: Buffer | null, buf: Buffer, start: number, end: number, ack: AckReply | null): boolean {
    const n = members.length;
    for (let k = 0; k < n; k++) {
      const sub = members[(first + k) % n]!;
      if (sub.closed || (noEcho && sub.owner.cid === fromCid)) continue;
      if (sub.denyFilter !== null && sub.denyFilter.denies(subject, sub.queue)) continue;
      sub.owner.deliverMsg(sub, shown, reply, hdr, buf, start, end, ack);
      const b = sub.owner.pendingBytes();
      if (b > this.lastQueueBacklog) this.lastQueueBacklog = b;
      return true;
    }
    return false;
  }
}

function findGroup(groups: readonly (readonly RemoteSub[])[], name: string): readonly RemoteSub[] | null {
  for (let i = 0; i < groups.length; i++) {
    const g = groups[i]!;
    if (g.length > 0 && g[0]!.queue === name) return g;
  }
  return null;
}

function hasGroup(groups: readonly (readonly Subscription[])[], name: string): boolean {
  for (let i = 0; i < groups.length; i++) {
    const g = groups[i]!;
    if (g.length > 0 && g[0]!.queue === name) return true;
  }
  return false;
}

function weightOf(group: readonly RemoteSub[]): number {
  let w = 0;
  for (let i = 0; i < group.length; i++) w += group[i]!.weight;
  return w;
}

/** A route of the group, each with the chance of its weight; w = weightOf(group) > 0. */
function pickWeighted(group: readonly RemoteSub[], w: number, random: Random): Route {
  let x = random.int(w);
  for (let i = 0; i < group.length; i++) {
    const s = group[i]!;
    if (x < s.weight) return s.route;
    x -= s.weight;
  }
  return group[group.length - 1]!.route;
}
