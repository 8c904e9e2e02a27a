// CONSUMER.INFO (and the list and create responses): the consumer's config on the wire and
// its progress from the ledger, in nats-server's field order.

import { rfc3339Ns } from "../stream/time.js";
import { consumerConfigToWire, isPush } from "./config.js";
import type { ConsumerCore } from "./core.js";

/** numWaiting: open pull requests after a sweep (0 for push consumers). */
export function consumerInfo(c: ConsumerCore, type: string, numWaiting: number): Record<string, unknown> {
  const s = c.ledger.state;
  const cfg = c.cfg;
  const nowNs = c.env.clock.nowNs();
  const delivered: Record<string, unknown> = { consumer_seq: s.delivered.consumerSeq, stream_seq: s.delivered.streamSeq };
  if (c.lastActiveNs > 0) delivered["last_active"] = rfc3339Ns(c.lastActiveNs);
  const ackFloor: Record<string, unknown> = { consumer_seq: s.ackFloor.consumerSeq, stream_seq: s.ackFloor.streamSeq };
  if (c.ackActiveNs > 0) ackFloor["last_active"] = rfc3339Ns(c.ackActiveNs);
  const out: Record<string, unknown> = {
    type,
    stream_name: c.stream.name,
    name: c.name,
    created: rfc3339Ns(c.createdNs),
    config: consumerConfigToWire(cfg, true),
    delivered,
    ack_floor: ackFloor,
    num_ack_pending: c.ledger.numAckPending,
    num_redelivered: c.ledger.numRedelivered,
    num_waiting: numWaiting,
    num_pending: c.computeNumPending(),
    cluster: c.stream.consumerRepl?.clusterInfo(c.repl !== null) ?? { leader: c.env.serverName },
  };
  if (isPush(cfg) && c.deliverInterest()) out["push_bound"] = true;
  if (c.isPaused()) {
    out["paused"] = true;
    out["pause_remaining"] = cfg.pause_until_ns - nowNs;
  }
  out["ts"] = rfc3339Ns(nowNs);
  const pgs = c.pins.info(cfg.priority_groups, rfc3339Ns);
  if (pgs !== null) out["priority_groups"] = pgs;
  return out;
}
