// The contract suite against the file store, on real disk (tmp dir) and on the simulated disk.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { consumerStoreContract, streamStoreContract, type ContractTarget } from "../helpers/storage-contract.js";
import { fileStoreMsgSize, openFileConsumerStore, openFileStreamStore } from "../../src/storage/index.js";
import type { Fs } from "../../src/runtime/fs.js";
import { NodeFs } from "../../src/runtime/fs.js";
import { ManualClock } from "../../src/runtime/clock.js";
import { SimFs } from "../helpers/simfs.js";
import type { StoreCallbacks, StoreLimits } from "../../src/storage/types.js";

function fileTarget(name: string, mkFs: () => { fs: Fs; dir: string; cleanup(): void }, numRuns: number): ContractTarget {
  return {
    name,
    numRuns,
    msgSize: (subject, hdr, data) => fileStoreMsgSize(Buffer.byteLength(subject), hdr?.length ?? 0, data.length),
    newEnv: () => {
      const { fs, dir, cleanup } = mkFs();
      const clock = new ManualClock();
      // tiny blocks so rolls, block deletion and compaction happen in small tests
      const open = async (limits?: StoreLimits, callbacks?: StoreCallbacks) =>
        (await openFileStreamStore({ dir, fs, clock, limits: limits ?? null, callbacks: callbacks ?? null, blockSizeBytes: 512 })).store;
      return {
        open,
        reopen: async (s, limits, callbacks) => {
          await s.close();
          return open(limits, callbacks);
        },
        dispose: async () => cleanup(),
      };
    },
    newConsumerEnv: () => {
      const { fs, dir, cleanup } = mkFs();
      const open = () => openFileConsumerStore({ dir, fs });
      return {
        open,
        reopen: async (c) => {
          await c.close();
          return open();
        },
        dispose: async () => cleanup(),
      };
    },
  };
}

const realDisk = fileTarget(
  "file (real disk)",
  () => {
    const root = mkdtempSync(join(tmpdir(), "tsnats-store-"));
    return { fs: new NodeFs(), dir: join(root, "s"), cleanup: () => rmSync(root, { recursive: true, force: true }) };
  },
  40,
);
const simDisk = fileTarget(
  "file (simfs)",
  () => ({ fs: new SimFs(), dir: "/store/s", cleanup: () => {} }),
  150,
);

streamStoreContract(realDisk);
consumerStoreContract(realDisk);
streamStoreContract(simDisk);
consumerStoreContract(simDisk);
