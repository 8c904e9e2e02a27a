// This server's storage identity (raft/identity.ts): made at the first start on a disk and
// kept beside the Raft WAL, so it lives and dies with the Raft state. A wiped disk makes a new
// one, and the other members then see a new member under the old name.
import { join } from "node:path";
import { newIdentity } from "../raft/identity.js";
import { writeFileAtomicSync, type Fs } from "../runtime/fs.js";
import type { Random } from "../runtime/random.js";

const IDENTITY_FILE = "identity";

export function loadIdentity(fs: Fs, dir: string, random: Random): string {
  const saved = fs.readFile(join(dir, IDENTITY_FILE));
  if (saved !== null) {
    const id = saved.toString("utf8").trim();
    if (/^[0-9a-z]{8,64}$/.test(id)) return id;
    throw new Error(`${join(dir, IDENTITY_FILE)} does not hold a storage identity`);
  }
  const id = newIdentity((n) => random.int(n));
  writeFileAtomicSync(fs, dir, IDENTITY_FILE, Buffer.from(id + "\n"));
  return id;
}
