// The snapshot a replicated stream's Raft group takes (stream-group.ts): a small binary
// header, then either the stream's state only (version 2: the log position and the store's
// range; a replica whose store is short catches up from a peer, stream-catchup.ts) or the
// whole store (version 1, restored by installStoreSnapshot).

import { encodeStoreSnapshot, StoreSnapshotReader } from "../storage/archive.js";
import type { StreamStore } from "../storage/types.js";

const SNAP_MAGIC = 0x47535354; // "TSSG" little-endian
const SNAP_V_ARCHIVE = 1;
const SNAP_V_STATE = 2;
const SNAP_HDR = 4 + 1 + 8;
const SNAP_STATE_LEN = 5 + 7 * 8;

/** What a state-only snapshot records. */
export interface StateSnapshot {
  appliedIndex: number;
  applySeq: number;
  firstSeq: number;
  lastSeq: number;
  lastTsNs: number;
  msgs: number;
  bytes: number;
}

/** consumers: the stream's consumers' copies (consumer-repl.ts), after the state. */
export function encodeStateSnapshot(s: StateSnapshot, consumers: Buffer = Buffer.alloc(0)): Buffer {
  const b = Buffer.allocUnsafe(SNAP_STATE_LEN + consumers.length);
  consumers.copy(b, SNAP_STATE_LEN);
  b.writeUInt32LE(SNAP_MAGIC, 0);
  b[4] = SNAP_V_STATE;
  b.writeDoubleLE(s.appliedIndex, 5);
  b.writeDoubleLE(s.applySeq, 13);
  b.writeDoubleLE(s.firstSeq, 21);
  b.writeDoubleLE(s.lastSeq, 29);
  b.writeDoubleLE(s.lastTsNs, 37);
  b.writeDoubleLE(s.msgs, 45);
  b.writeDoubleLE(s.bytes, 53);
  return b;
}

/** The whole store, after a header holding applySeq. */
export function encodeArchiveSnapshot(applySeq: number, store: StreamStore): Buffer {
  const parts: Buffer[] = [];
  const hdr = Buffer.allocUnsafe(SNAP_HDR);
  hdr.writeUInt32LE(SNAP_MAGIC, 0);
  hdr[4] = SNAP_V_ARCHIVE;
  hdr.writeDoubleLE(applySeq, 5);
  parts.push(hdr);
  for (const f of encodeStoreSnapshot(new StoreSnapshotReader(store))) parts.push(f);
  return Buffer.concat(parts);
}

export type DecodedSnapshot =
  | { kind: "archive"; applySeq: number; archive: Buffer }
  | { kind: "state"; state: StateSnapshot; consumers: Buffer };

/** Throws (naming the group) on anything that is not one of the two versions. */
export function decodeStreamSnapshot(group: string, b: Buffer): DecodedSnapshot {
  if (b.length < 5 || b.readUInt32LE(0) !== SNAP_MAGIC) throw new Error(`stream group ${group}: not a stream snapshot`);
  if (b[4] === SNAP_V_ARCHIVE && b.length >= SNAP_HDR) return { kind: "archive", applySeq: b.readDoubleLE(5), archive: b.subarray(SNAP_HDR) };
  if (b[4] !== SNAP_V_STATE || b.length < SNAP_STATE_LEN) throw new Error(`stream group ${group}: unknown snapshot version ${b[4]}`);
  return {
    kind: "state",
    state: {
      appliedIndex: b.readDoubleLE(5),
      applySeq: b.readDoubleLE(13),
      firstSeq: b.readDoubleLE(21),
      lastSeq: b.readDoubleLE(29),
      lastTsNs: b.readDoubleLE(37),
      msgs: b.readDoubleLE(45),
      bytes: b.readDoubleLE(53),
    },
    consumers: b.subarray(SNAP_STATE_LEN),
  };
}
