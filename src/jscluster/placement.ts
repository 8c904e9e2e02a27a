// Where a replicated stream's replicas go (nats-server selectPeerGroup, 2.10+): the servers of
// the target cluster that are online, JetStream-enabled, match the placement tags (a tag
// prefixed with "!" excludes), carry no `!jetstream` exclusion tag, are unique by the
// unique-tag prefix when one is configured, and have room for max_bytes; sorted by free
// storage (most first), ties by fewest streams, and for replicated streams stably by fewest
// HA assets. The caller (the meta leader) proposes the result; nothing here is replicated
// state, so the shuffle before sorting may use any Random.

import { createHash } from "node:crypto";
import type { Random } from "../runtime/random.js";

/** What the meta leader knows of a server (its JetStream stats, by heartbeat). */
export interface PeerInfo {
  /** The Raft peer id (stable across restarts). */
  id: string;
  name: string;
  cluster: string;
  tags: readonly string[];
  /** Never heard from, or not heard from lately. */
  offline: boolean;
  /** Configured limits and current use in bytes (-1 = unlimited limit). */
  maxStore: number;
  maxMemory: number;
  usedStore: number;
  usedMemory: number;
}

export interface PlacementRequest {
  replicas: number;
  /** The cluster to place in; "" = the requester's cluster (the caller fills it in). */
  cluster: string;
  tags: readonly string[];
  storage: "file" | "memory";
  /** The stream's max_bytes; <= 0 = none. */
  maxBytes: number;
  /** Peers kept from a previous placement (scale up): they come first. */
  existing?: readonly string[];
  /** Peers never to pick (a peer being removed). */
  ignore?: readonly string[];
  uniqueTagPrefix?: string;
}

/** Current assignments, counted per peer. */
export interface PeerLoad {
  streams: Map<string, number>;
  ha: Map<string, number>;
}

export type PlacementResult = { ok: true; peers: string[] } | { ok: false; error: string };

/** The tag that keeps a server out of placement (nats-server jsExcludePlacement). */
export const EXCLUDE_PLACEMENT_TAG = "!jetstream";

export function selectPeers(req: PlacementRequest, peers: readonly PeerInfo[], load: PeerLoad, rnd: Random): PlacementResult {
  const r = req.replicas;
  const existing = req.existing ?? [];
  if (existing.length >= r) return { ok: true, peers: existing.slice(0, r) };
  const ignore = new Set(req.ignore ?? []);
  const have = new Set(existing);
  const wanted = req.tags.map((t) => (t.startsWith("!") ? { tag: t.slice(1), exclude: true } : { tag: t, exclude: false }));
  let unique = req.uniqueTagPrefix ?? "";
  if (unique !== "" && wanted.some((t) => t.tag.startsWith(unique))) unique = "";
  const uniqueOwners = new Map<string, string>();
  if (unique !== "") {
    for (const p of peers) if (have.has(p.id)) for (const t of p.tags) if (t.startsWith(unique)) uniqueOwners.set(t, p.id);
  }
  const why = { offline: false, excludeTag: false, noStorage: false, uniqueTag: false, noMatch: new Set<string>(), excluded: new Set<string>() };
  const order = peers.slice();
  for (let i = order.length - 1; i > 0; i--) {
    const j = rnd.int(i + 1);
    const t = order[i]!;
    order[i] = order[j]!;
    order[j] = t;
  }
  interface Cand {
    id: string;
    avail: number;
    off: boolean;
    ha: number;
    ns: number;
  }
  const cands: Cand[] = [];
  let online = 0;
  for (const p of order) {
    if (p.cluster !== req.cluster) continue;
    if (ignore.has(p.id) || have.has(p.id)) continue;
    if (p.tags.includes(EXCLUDE_PLACEMENT_TAG)) {
      why.excludeTag = true;
      continue;
    }
    let matched = true;
    for (const t of wanted) {
      // Tags are case-insensitive (nats-server's TagList: lower case in the config, and
      // compared in lower case).
      const has = p.tags.includes(t.tag) || p.tags.includes(t.tag.toLowerCase());
      if (t.exclude && has) {
        why.excluded.add(t.tag);
        matched = false;
        break;
      }
      if (!t.exclude && !has) {
        why.noMatch.add(t.tag);
        matched = false;
        break;
      }
    }
    if (!matched) continue;
    const limit = req.storage === "memory" ? p.maxMemory : p.maxStore;
    const used = req.storage === "memory" ? p.usedMemory : p.usedStore;
    const avail = limit < 0 ? Number.MAX_SAFE_INTEGER : Math.max(0, limit - used);
    if (req.maxBytes > 0 && req.maxBytes > avail) {
      why.noStorage = true;
      continue;
    }
    if (unique !== "") {
      const tag = p.tags.find((t) => t.startsWith(unique));
      if (tag === undefined || uniqueOwners.has(tag)) {
        why.uniqueTag = true;
        continue;
      }
      uniqueOwners.set(tag, p.id);
    }
    cands.push({ id: p.id, avail, off: p.offline, ha: load.ha.get(p.id) ?? 0, ns: load.streams.get(p.id) ?? 0 });
    if (!p.offline) online++;
  }
  const need = r - existing.length;
  const quorum = Math.floor(r / 2) + 1;
  if (cands.length < need || online + existing.length < quorum) {
    if (cands.length >= need) why.offline = true;
    if (peers.some((p) => p.offline && p.cluster === req.cluster)) why.offline = true;
    return { ok: false, error: placementError(why, peers.length === 0) };
  }
  cands.sort((a, b) => (a.off !== b.off ? (a.off ? 1 : -1) : a.avail === b.avail ? a.ns - b.ns : b.avail - a.avail));
  // Array.prototype.sort is stable: for replicated streams, HA balance decides first.
  if (r > 1) cands.sort((a, b) => (a.off !== b.off ? (a.off ? 1 : -1) : a.ha - b.ha));
  return { ok: true, peers: [...existing, ...cands.slice(0, need).map((c) => c.id)] };
}

function placementError(
  why: { offline: boolean; excludeTag: boolean; noStorage: boolean; uniqueTag: boolean; noMatch: Set<string>; excluded: Set<string> },
  noCluster: boolean,
): string {
  let s = "no suitable peers for placement";
  if (why.offline) s += ", peer offline";
  if (why.excludeTag) s += ", exclude tag set";
  if (why.noStorage) s += ", insufficient storage";
  if (why.uniqueTag) s += ", server tag not unique";
  if (noCluster) s += ", jetstream not enabled in cluster";
  if (why.noMatch.size > 0) s += `, tags not matched [${[...why.noMatch].map((t) => `'${t}'`).join(", ")}]`;
  if (why.excluded.size > 0) s += `, tags excluded [${[...why.excluded].map((t) => `'${t}'`).join(", ")}]`;
  return s;
}

/** Raft group names as nats-server makes them: S-R3F-<8 chars> for a file R3 stream,
 *  C-R1M-… for a memory consumer. The suffix comes from the caller's Random. */
export function groupName(kind: "S" | "C", replicas: number, storage: "file" | "memory", rnd: Random): string {
  const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  let suffix = "";
  for (let i = 0; i < 8; i++) suffix += alphabet[rnd.int(alphabet.length)];
  return `${kind}-R${replicas}${storage === "file" ? "F" : "M"}-${suffix}`;
}

/** A peer id from a server name and the storage directory's identity (made once, at first
 *  boot): 8 characters, as nats-server's peer hashes, never reused by a wiped server. */
export function peerId(serverName: string, storageUuid: string): string {
  // FNV-1a 64-bit over both, in base 36, cut to 8 characters.
  let h = 0xcbf29ce484222325n;
  const s = `${serverName}\u0000${storageUuid}`;
  for (let i = 0; i < s.length; i++) {
    h ^= BigInt(s.charCodeAt(i));
    h = (h * 0x100000001b3n) & 0xffffffffffffffffn;
  }
  return h.toString(36).padStart(13, "0").slice(-8);
}

const HASH_DIGITS = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/** The 8-character peer id nats-server shows for a server name (its getHash: the first bytes
 *  of SHA-256 of the name, each mod 62 in [0-9A-Za-z]), so /jsz agrees with nats-server's. */
export function serverHash(name: string): string {
  const b = createHash("sha256").update(name).digest();
  let s = "";
  for (let i = 0; i < 8; i++) s += HASH_DIGITS[b[i]! % 62];
  return s;
}

/** The number of servers the configured routes name, this one included. */
export function expectedClusterSize(routes: readonly string[], ownPort: number): number {
  const others = new Set<string>();
  for (const r of routes) {
    let u: URL;
    try {
      u = new URL(r);
    } catch {
      continue;
    }
    const host = u.hostname === "localhost" || u.hostname === "0.0.0.0" || u.hostname === "[::1]" ? "127.0.0.1" : u.hostname;
    const port = Number(u.port);
    if (ownPort > 0 && port === ownPort && (host === "127.0.0.1" || host === "::1")) continue;
    others.add(`${host}:${port}`);
  }
  return others.size + 1;
}
