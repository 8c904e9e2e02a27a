// Member identities (CLUSTERING.md §3.7): a member of a group is a server name plus the
// identity of that server's storage, made once when its Raft directory is first created.
// A server whose disk was wiped comes back under its name with a new identity: to the group
// it is a new member, not the old one with amnesia. The old identity is dead for good (its
// disk is gone), so its votes and acknowledgements are never counted again, and the new one
// counts only from the membership entry that names it (RaftNode.proposeConfChange). Until
// then it is replicated to but does not vote or campaign.
//
// Addresses stay server names (the transport routes by them); the identity travels in the
// membership lists (ConfChange data, Snapshot.voters) as a suffix: "name" + ID_MARK + id. A
// member without a suffix has no identity pinned (groups made before identities, tests) and
// is taken as it comes. Values only: no I/O.

/** Separates a member's name from its storage identity in a membership list. */
export const ID_MARK = "\u0002";

/** Split a membership list item into its name and identity ("" for none). */
export function splitIdentity(item: string): { name: string; id: string } {
  const i = item.indexOf(ID_MARK);
  return i < 0 ? { name: item, id: "" } : { name: item.slice(0, i), id: item.slice(i + ID_MARK.length) };
}

/** A membership list item of name with identity id ("" for none). */
export function withIdentity(name: string, id: string | undefined): string {
  return id === undefined || id === "" ? name : name + ID_MARK + id;
}

/** The identities of ids' members that stay in `members`, with `changes` applied (an
 *  identity of "" or undefined unpins). */
export function nextIdentities(
  ids: ReadonlyMap<string, string>,
  members: readonly string[],
  changes?: ReadonlyMap<string, string | undefined>,
): Map<string, string> {
  const out = new Map<string, string>();
  for (const m of members) {
    const c = changes?.has(m) === true ? changes.get(m) : ids.get(m);
    if (c !== undefined && c !== "") out.set(m, c);
  }
  return out;
}

/** Members of both maps whose identity differs (pinned in `a` and changed or gone in `b`). */
export function reidentified(a: ReadonlyMap<string, string>, b: ReadonlyMap<string, string>, kept: readonly string[]): string[] {
  return kept.filter((m) => a.has(m) && a.get(m) !== b.get(m));
}

export function sameIdentities(a: ReadonlyMap<string, string>, b: ReadonlyMap<string, string>): boolean {
  if (a.size !== b.size) return false;
  for (const [k, v] of a) if (b.get(k) !== v) return false;
  return true;
}

/** A fresh storage identity: 12 characters of [0-9a-z] from the given source of integers. */
export function newIdentity(int: (n: number) => number): string {
  const digits = "0123456789abcdefghijklmnopqrstuvwxyz";
  let s = "";
  for (let i = 0; i < 12; i++) s += digits[int(digits.length)];
  return s;
}
