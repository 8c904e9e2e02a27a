// The storage identities a RaftHost knows (identity.ts): its own and each connected peer's,
// as the peer introduced itself. An answer that counts (votes, append acknowledgements) is
// taken only from the member its group pins; on groups led here, a member whose server came
// back with another identity (its disk was wiped) is replaced by the new one.
import type { RaftNode } from "./node.js";
import { withIdentity } from "./identity.js";
import { MsgType, RaftError, Role } from "./types.js";

export class HostIdentities {
  /** Each connected peer's storage identity, as its introduction said. */
  private readonly peers = new Map<string, string>();

  constructor(
    private readonly self: string,
    private readonly identity: string,
    private readonly stats: { notAdmitted: number; reidentified: number },
    private readonly log?: (msg: string) => void,
  ) {}

  /** id null or "": the peer went away; its frames are not admitted to groups that pin an
   *  identity to it until it introduces itself again. */
  setPeer(peer: string, id: string | null): void {
    if (id === null || id === "") this.peers.delete(peer);
    else this.peers.set(peer, id);
  }

  /** The storage identity of server `name` as known here, or undefined. */
  of(name: string): string | undefined {
    if (name === this.self) return this.identity === "" ? undefined : this.identity;
    return this.peers.get(name);
  }

  /** A membership list of these servers, each pinned to its known identity. */
  members(names: readonly string[]): string[] {
    return names.map((n) => withIdentity(n, this.of(n)));
  }

  /** A message of the node's group from peer is taken unless it is an answer that counts
   *  (a vote, an append or heartbeat answer: what elections, commit, check-quorum and
   *  ReadIndex tally) from a peer that is not the member the group knows: a pinned identity
   *  other than the one its server introduced itself with. Requests and a leader's appends
   *  pass: granting a vote to an up-to-date log, or following a leader, is safe whoever sends
   *  it, and a member whose own log is behind on a re-identification must still be able to
   *  follow the new incarnation's leadership to learn of it. */
  admits(node: RaftNode, from: string, type: MsgType): boolean {
    if (type !== MsgType.VoteResp && type !== MsgType.PreVoteResp && type !== MsgType.AppResp && type !== MsgType.HeartbeatResp) return true;
    const pinned = node.ids.get(from);
    if (pinned === undefined || this.peers.get(from) === pinned) return true;
    this.stats.notAdmitted++;
    return false;
  }

  /** On groups led here: a member whose server introduced itself with another identity is
   *  replaced by the new one in one membership change (the old one can never vote again, so
   *  this is a single change); the new one counts from that entry on and catches up as any
   *  member that was behind. One change per group at a time. */
  reidentify(groups: Iterable<{ name: string; node: RaftNode }>, touch: (g: { name: string; node: RaftNode }) => void): void {
    for (const g of groups) {
      const n = g.node;
      if (n.role !== Role.Leader || n.failed !== null || n.confPending) continue;
      for (const m of [...n.voters, ...n.learners]) {
        const pinned = n.ids.get(m);
        const now = this.peers.get(m);
        if (m === this.self || pinned === undefined || now === undefined || now === pinned) continue;
        try {
          if (n.proposeConfChange(n.voters, n.learners, new Map([[m, now]])) > 0) {
            this.stats.reidentified++;
            this.log?.(`raft group ${g.name}: ${m} came back with a new storage identity (a wiped disk): the new one replaces the old member and catches up`);
            touch(g);
          }
        } catch (e) {
          if (!(e instanceof RaftError)) throw e;
        }
        break;
      }
    }
  }
}
