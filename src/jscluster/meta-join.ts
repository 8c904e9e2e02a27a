// New servers joining a running meta group (issue 18, "a new server joining"). A JetStream
// server that starts after the cluster's meta group formed hears its membership in a peer's
// HELLO and starts as a learner (MetaGroup.start); the meta leader admits it, one membership
// change at a time: first as a learner (replicated to, not counted), then as a voter once it
// is within one append window of the commit. Identities are pinned by the host
// (raft/identities.ts).
import type { RaftHost } from "../raft/host.js";
import { ProgressState } from "../raft/progress.js";
import { parseMember, RaftError } from "../raft/types.js";

/** How often the meta leader looks for servers to admit. */
export const JOIN_CHECK_MS = 500;
/** A learner this many entries behind the commit (one append window) is caught up. */
const JOIN_LAG = 256;

/** A membership list item's server name (no learner mark, no identity). */
export function memberName(item: string): string {
  return parseMember(item).name;
}

/**
 * On the leader of `group`: a caught-up learner becomes a voter; else the first of
 * `candidates` that is not a member and is `admissible` (connected, of this cluster, not taken
 * out by SERVER.REMOVE) joins as a learner. At most one change, none while one is pending.
 */
export function admitJoiners(host: RaftHost, group: string, candidates: Iterable<string>, admissible: (p: string) => boolean, log: (msg: string) => void): void {
  const node = host.node(group);
  if (node === undefined || node.confPending || node.failed !== null) return;
  const st = node.status();
  let voters = st.voters;
  let learners = st.learners;
  let what: string;
  const ready = st.learners.find((l) => {
    const pr = st.progress.find((p) => p.id === l);
    return pr !== undefined && pr.state === ProgressState.Replicate && pr.match + JOIN_LAG >= st.commit;
  });
  if (ready !== undefined) {
    voters = [...voters, ready];
    learners = learners.filter((l) => l !== ready);
    what = `${ready} caught up: a voter now`;
  } else {
    const joiner = [...candidates].find((p) => !voters.includes(p) && !learners.includes(p) && admissible(p));
    if (joiner === undefined) return;
    learners = [...learners, joiner];
    what = `${joiner} joins as a learner`;
  }
  try {
    if (host.proposeConfChange(group, voters, learners) > 0) log(what);
  } catch (e) {
    if (!(e instanceof RaftError)) throw e;
  }
}
