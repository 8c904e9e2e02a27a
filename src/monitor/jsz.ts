// /jsz: the JetStream service builds the body; this fills what nats-server always sends
// and answers for a server without JetStream.

import { rfc3339 } from "./format.js";
import { boolParam, intParam, strParam, type Query } from "./query.js";
import type { ServerSnap } from "./snapshot.js";

/** The options handed to JetStreamLike.jsz(); nats-server's JSzOptions in snake_case. */
export function jszOptions(q: Query): Record<string, unknown> {
  const consumers = boolParam(q, "consumers");
  const streams = consumers || boolParam(q, "streams");
  const accounts = streams || boolParam(q, "accounts");
  return {
    account: strParam(q, "acc"),
    accounts,
    streams,
    consumers,
    config: boolParam(q, "config"),
    leader_only: boolParam(q, "leader-only"),
    offset: intParam(q, "offset", 0),
    limit: intParam(q, "limit", 0),
  };
}

function num(v: unknown): number {
  return typeof v === "number" && Number.isFinite(v) ? v : 0;
}

function obj(v: unknown): Record<string, unknown> {
  return v !== null && typeof v === "object" && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
}

/** JetStream config as nats-server reports it: limits in bytes, store_dir ends in /jetstream. */
export function jsConfigOf(s: ServerSnap): Record<string, unknown> {
  const given = s.jsz ? obj(s.jsz["config"]) : {};
  const c = s.jsConfig;
  const always = c.syncIntervalMs === "always";
  const dflt: Record<string, unknown> = {
    max_memory: c.maxMemoryBytes,
    max_storage: c.maxStorageBytes,
    store_dir: c.storeDir === "" ? "" : `${c.storeDir.replace(/\/+$/, "")}/jetstream`,
    sync_interval: always ? 0 : Number(c.syncIntervalMs) * 1_000_000,
    sync_always: always,
  };
  if (c.domain !== "") dflt["domain"] = c.domain;
  return { ...dflt, ...given };
}

export function jsStatsOf(jsz: Record<string, unknown>): Record<string, unknown> {
  const api = obj(jsz["api"]);
  return {
    memory: num(jsz["memory"]),
    storage: num(jsz["storage"]),
    reserved_memory: num(jsz["reserved_memory"]),
    reserved_storage: num(jsz["reserved_storage"]),
    accounts: typeof jsz["accounts"] === "number" ? jsz["accounts"] : 1,
    ha_assets: num(jsz["ha_assets"]),
    api: { ...api, total: num(api["total"]), errors: num(api["errors"]) },
  };
}

export function buildJsz(s: ServerSnap): Record<string, unknown> {
  const head = { server_id: s.serverId, now: rfc3339(s.nowMs) };
  if (s.jsz === null) {
    return {
      ...head,
      disabled: true,
      config: { max_memory: 0, max_storage: 0 },
      memory: 0,
      storage: 0,
      reserved_memory: 0,
      reserved_storage: 0,
      accounts: 0,
      ha_assets: 0,
      api: { total: 0, errors: 0 },
      streams: 0,
      consumers: 0,
      messages: 0,
      bytes: 0,
    };
  }
  const j = s.jsz;
  const stats = jsStatsOf(j);
  return {
    ...head,
    ...j,
    ...head,
    config: jsConfigOf(s),
    ...stats,
    streams: num(j["streams"]),
    consumers: num(j["consumers"]),
    messages: num(j["messages"]),
    bytes: num(j["bytes"]),
  };
}
