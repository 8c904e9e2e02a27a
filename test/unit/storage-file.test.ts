// The contract suite against the file store, on real disk (tmp dir) and on the simulated disk.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { consumerStoreContract, fileTarget, streamStoreContract } from "../helpers/storage-contract.js";
import { NodeFs } from "../../src/runtime/fs.js";
import { SimFs } from "../helpers/simfs.js";

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
