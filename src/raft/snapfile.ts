// A group's latest snapshot in its own file, replaced crash-safely (temp file, fsync, rename,
// fsync the directory) and checked with CRC32C on load:
//   "TSRS" | u32 LE crc32c(rest) | u64 index | u64 term | u16 voters | (u8 len, id)* | data
import type { Fs } from "../runtime/fs.js";
import { writeFileAtomicSync } from "../runtime/fs.js";
import { crc32c } from "./crc32c.js";
import type { Snapshot } from "./types.js";

const MAGIC = 0x53525354; // "TSRS" little-endian
const utf8 = new TextEncoder();
const utf8d = new TextDecoder();

export function snapFileName(group: string): string {
  return `snap-${Buffer.from(group).toString("hex")}.bin`;
}

export function encodeSnapshot(s: Snapshot): Buffer {
  const ids = s.voters.map((v) => utf8.encode(v));
  let n = 8 + 16 + 2 + s.data.length;
  for (const id of ids) n += 1 + id.length;
  const b = Buffer.allocUnsafe(n);
  b.writeUInt32LE(MAGIC, 0);
  let p = 8;
  b.writeUInt32LE(s.index % 0x100000000, p);
  b.writeUInt32LE(Math.floor(s.index / 0x100000000), p + 4);
  b.writeUInt32LE(s.term % 0x100000000, p + 8);
  b.writeUInt32LE(Math.floor(s.term / 0x100000000), p + 12);
  b.writeUInt16LE(ids.length, p + 16);
  p += 18;
  for (const id of ids) {
    b[p] = id.length;
    b.set(id, p + 1);
    p += 1 + id.length;
  }
  b.set(s.data, p);
  b.writeUInt32LE(crc32c(b, 8, b.length), 4);
  return b;
}

/** The snapshot in b, or an Error saying why it is unusable. */
export function decodeSnapshot(b: Buffer): Snapshot | Error {
  if (b.length < 26 || b.readUInt32LE(0) !== MAGIC) return new Error("not a snapshot file");
  if (crc32c(b, 8, b.length) !== b.readUInt32LE(4)) return new Error("snapshot checksum mismatch");
  let p = 8;
  const index = b.readUInt32LE(p) + b.readUInt32LE(p + 4) * 0x100000000;
  const term = b.readUInt32LE(p + 8) + b.readUInt32LE(p + 12) * 0x100000000;
  const nv = b.readUInt16LE(p + 16);
  p += 18;
  const voters: string[] = [];
  for (let i = 0; i < nv; i++) {
    const l = b[p]!;
    voters.push(utf8d.decode(b.subarray(p + 1, p + 1 + l)));
    p += 1 + l;
  }
  return { index, term, voters, data: Uint8Array.from(b.subarray(p)) };
}

export function saveSnapshotFile(fs: Fs, dir: string, group: string, s: Snapshot): void {
  writeFileAtomicSync(fs, dir, snapFileName(group), encodeSnapshot(s));
}

/** null if there is none; an Error if it is there but unreadable (the group must fail). */
export function loadSnapshotFile(fs: Fs, dir: string, group: string): Snapshot | null | Error {
  const b = fs.readFile(`${dir}/${snapFileName(group)}`);
  if (b === null) return null;
  return decodeSnapshot(b);
}

/** Move an unreadable snapshot file aside (kept for inspection, never loaded again). */
export function quarantineSnapshotFile(fs: Fs, dir: string, group: string): void {
  const name = snapFileName(group);
  if (fs.stat(`${dir}/${name}`) === null) return;
  fs.rename(`${dir}/${name}`, `${dir}/${name}.corrupt`);
  fs.fsyncDirSync(dir);
}

/** Remove a group's snapshot file, if there is one. */
export function deleteSnapshotFile(fs: Fs, dir: string, group: string): void {
  const path = `${dir}/${snapFileName(group)}`;
  if (fs.stat(path) === null) return;
  fs.unlink(path);
}

/** The catch-up mark of a group: present while its app's state is being rebuilt from a peer
 *  (a replicated stream's store filled by a catch-up, stream-catchup.ts), so that after a
 *  crash in the middle the half-filled state is not taken for one the snapshot describes. */
function catchupMarkName(group: string): string {
  return `${snapFileName(group)}.catchup`;
}

/** Sets the mark, durably (the file and its directory are synced before this returns). */
export function saveCatchupMark(fs: Fs, dir: string, group: string): void {
  writeFileAtomicSync(fs, dir, catchupMarkName(group), Buffer.alloc(0));
}

export function hasCatchupMark(fs: Fs, dir: string, group: string): boolean {
  return fs.stat(`${dir}/${catchupMarkName(group)}`) !== null;
}

/** Clears the mark, durably. */
export function clearCatchupMark(fs: Fs, dir: string, group: string): void {
  const path = `${dir}/${catchupMarkName(group)}`;
  if (fs.stat(path) === null) return;
  fs.unlink(path);
  fs.fsyncDirSync(dir);
}
