// A stream's state and info in nats-server's wire shape (and field order).

import type { StreamStore } from "../storage/types.js";
import type { StreamInfoWire, StreamStateWire } from "../contracts/wire.js";
import { rfc3339Ns } from "./time.js";

export interface StateOpts {
  deletedDetails?: boolean;
  subjectsFilter?: string;
}

export function streamState(store: StreamStore, consumerCount: number, opts?: StateOpts): StreamStateWire {
  const st = store.state();
  // Fields in nats-server's order, consumer_count last: added in that order (no delete,
  // which turns the object into a dictionary that JSON.stringify walks slowly).
  const out: Omit<StreamStateWire, "consumer_count"> & { consumer_count?: number } = {
    messages: st.msgs,
    bytes: st.bytes,
    first_seq: st.firstSeq,
    first_ts: rfc3339Ns(st.firstTsNs),
    last_seq: st.lastSeq,
    last_ts: rfc3339Ns(st.lastTsNs),
  };
  if (st.numSubjects > 0) out.num_subjects = st.numSubjects;
  if (opts?.subjectsFilter) {
    const m = store.subjectsState(opts.subjectsFilter);
    if (m.size > 0) {
      const subjects: Record<string, number> = {};
      for (const [k, v] of m) subjects[k] = v.msgs;
      out.subjects = subjects;
    }
  }
  if (st.numDeleted > 0) {
    out.num_deleted = st.numDeleted;
    if (opts?.deletedDetails) out.deleted = store.deletedSeqs();
  }
  out.consumer_count = consumerCount;
  return out as StreamStateWire;
}

export function streamInfo(
  config: Record<string, unknown>,
  createdNs: number,
  state: StreamStateWire,
  leader: string,
  nowNs: number,
  extra?: Partial<StreamInfoWire>,
): StreamInfoWire {
  const o: StreamInfoWire = {
    config,
    created: rfc3339Ns(createdNs),
    state,
    cluster: { leader },
    ts: rfc3339Ns(nowNs),
  };
  if (extra?.mirror) o.mirror = extra.mirror;
  if (extra?.sources) o.sources = extra.sources;
  // nats-server puts ts last.
  const ts = o.ts;
  delete (o as { ts?: string }).ts;
  o.ts = ts;
  return o;
}
