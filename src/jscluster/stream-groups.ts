// Replicated streams on the meta group's RaftHost: gives a MetaGroup its openStreamGroup
// (a separate file, so that meta-group.ts does not import the stream group).

import type { MetaGroup } from "./meta-group.js";
import { StreamGroup } from "./stream-group.js";

/** sched: publishes taken in one job are proposed as one Raft entry (StreamGroupOptions.sched). */
export function enableStreamGroups(m: MetaGroup, clock: StreamGroupDeps["clock"], log: StreamGroupDeps["log"], sched?: StreamGroupDeps["sched"]): void {
  m.openStreamGroup = (o) => {
    return StreamGroup.open({
      group: o.group.name,
      peers: o.group.peers,
      ...(o.group.ids !== undefined ? { ids: o.group.ids } : {}),
      self: m.serverName,
      clusterName: m.clusterName,
      host: m.raftHost,
      open: o.open,
      clock,
      log,
      ...(sched !== undefined ? { sched } : {}),
      ...(o.onLeaderChange !== undefined ? { onLeaderChange: o.onLeaderChange } : {}),
      ...(o.seed !== undefined ? { seed: o.seed } : {}),
      ...(o.joinVoters !== undefined ? { joinVoters: o.joinVoters } : {}),
      ...(o.resync !== undefined ? { resync: o.resync } : {}),
    });
  };
}

type StreamGroupDeps = Parameters<typeof StreamGroup.open>[0];
