// Route pooling and pinned accounts (nats-server 2.10 route.go): a peer server is reached by
// up to pool_size route connections ("slots"), each account's traffic (its interest and the
// messages for it) bound to one slot by a hash of its name, plus one dedicated ("pinned")
// route per account listed in `cluster { accounts }`, on which the account is implied and
// left out of the protocol. A peer that does not announce `route_pool_size` (nats-server 2.9),
// or either side with pooling off, gets the 2.9 protocol: one route for everything ("no
// pool"). Peer holds one server's connections; Cluster and Registry decide who goes where.

import type { Route, RouteInfo } from "./route.js";

/** The slot of an account's traffic (nats-server computeRoutePoolIdx): FNV-1a 32 of the
 *  name modulo the pool size, so every server agrees given the same size. */
export function poolIndex(poolSize: number, account: string): number {
  if (poolSize <= 1) return 0;
  let h = 0x811c9dc5;
  const b = Buffer.from(account, "utf8");
  for (let i = 0; i < b.length; i++) {
    h ^= b[i]!;
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h % poolSize;
}

/** One peer server and every registered route connection to it. */
export class Peer {
  /** The route INFO of the first connection registered (client URLs, tsnats_peer...). */
  info: RouteInfo;
  name: string;
  /** It speaks the 2.9 protocol (or pooling is off on either side): one route, slot 0. */
  readonly noPool: boolean;
  /** Pool slots (one when noPool), null while a slot has no connection. */
  conns: (Route | null)[];
  /** Dedicated routes by account. */
  readonly pinned = new Map<string, Route>();
  /** The peer said it is in lame duck mode (its client URLs are no longer announced). */
  lameDuck = false;

  constructor(
    readonly id: string,
    info: RouteInfo,
    noPool: boolean,
    slots: number,
  ) {
    this.info = info;
    this.name = info.server_name ?? "";
    this.noPool = noPool;
    this.conns = new Array<Route | null>(noPool ? 1 : Math.max(1, slots)).fill(null);
  }

  /** Registered connections, pooled and pinned. */
  get size(): number {
    let n = this.pinned.size;
    for (const c of this.conns) if (c !== null) n++;
    return n;
  }

  /** Pooled connections registered (pinned ones not counted). */
  get pooled(): number {
    let n = 0;
    for (const c of this.conns) if (c !== null) n++;
    return n;
  }

  /** Grow the slots to n (a peer with a larger pool than ours). */
  growTo(n: number): void {
    while (this.conns.length < n) this.conns.push(null);
  }

  /** The connection that carries `account`'s interest and messages to this peer: its pinned
   *  route when we pin it (`pinnedHere`), else its pool slot (`slot`, from our pool size), or
   *  the one route of a no-pool peer; null while that connection is not up. */
  carrier(account: string, pinnedHere: boolean, slot: number): Route | null {
    if (this.noPool) return this.conns[0] ?? null;
    if (pinnedHere) return this.pinned.get(account) ?? null;
    return this.conns[slot] ?? null;
  }

  /** Any pooled connection (the account is named in each operation on those). */
  anyPooled(): Route | null {
    for (const c of this.conns) if (c !== null) return c;
    return null;
  }

  /** Whether r is registered here (in a slot or as a pinned route). */
  holds(r: Route): boolean {
    if (r.account !== "") return this.pinned.get(r.account) === r;
    return r.poolIdx >= 0 && r.poolIdx < this.conns.length && this.conns[r.poolIdx] === r;
  }

  /** Remove r; true when it was registered here. */
  remove(r: Route): boolean {
    if (!this.holds(r)) return false;
    if (r.account !== "") this.pinned.delete(r.account);
    else this.conns[r.poolIdx] = null;
    return true;
  }

  /** Every registered connection, slots first. */
  all(): Route[] {
    const out: Route[] = [];
    for (const c of this.conns) if (c !== null) out.push(c);
    for (const c of this.pinned.values()) out.push(c);
    return out;
  }
}
