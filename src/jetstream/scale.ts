// Scaling a clustered stream's replicas by STREAM.UPDATE (nats-server 2.10+): pure decisions
// the meta leader and each member take from the assignments before and after, so that every
// server decides the same (ARCHITECTURE.md "Replicated JetStream").

/** What a change of the assigned members means for one server's copy. */
export type ScaleStep =
  /** The copy was a plain stream (R1) on this server and becomes a Raft group seeded with its
   *  store's state (and its consumers). */
  | "seed"
  /** The copy was a member of a Raft group and is now the only one: once the group's voters
   *  shrank to it and it leads, it becomes a plain stream keeping its messages and consumers. */
  | "unseed"
  /** A new member of a running group: it joins with an empty log. */
  | "join"
  /** Nothing about this copy's kind changes (a member kept, or not a member). */
  | "none";

export function scaleStep(before: readonly string[], after: readonly string[], self: string): ScaleStep {
  const was = before.includes(self);
  const is = after.includes(self);
  if (!is) return "none";
  if (!was) return "join";
  if (before.length === 1 && after.length > 1) return "seed";
  if (before.length > 1 && after.length === 1) return "unseed";
  return "none";
}

/** The members a shrunk group keeps: the stream's leader first when it is one of them (so
 *  leadership need not move), then the others in their order. */
export function shrinkPeers(peers: readonly string[], leader: string, replicas: number): string[] {
  const order = peers.includes(leader) ? [leader, ...peers.filter((p) => p !== leader)] : [...peers];
  return order.slice(0, Math.max(1, replicas));
}

/** Which member answers the update: the group's leader when it stays a member, else the new
 *  assignment's first member (the one a shrink keeps first). */
export function updateAnswerer(leader: string, after: readonly string[]): string {
  return leader !== "" && after.includes(leader) ? leader : (after[0] ?? "");
}

/** The voters a new member's Raft node starts with: the members before the change (not
 *  itself), so that it never campaigns before the leader's log or snapshot names it a voter.
 *  Empty when it is not joining a running group. */
export function joinVoters(before: readonly string[], self: string): string[] {
  return before.includes(self) ? [] : [...before];
}
