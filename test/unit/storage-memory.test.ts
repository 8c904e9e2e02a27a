import { consumerStoreContract, streamStoreContract, type ContractTarget } from "../helpers/storage-contract.js";
import { createMemoryConsumerStore, createMemoryStreamStore, memStoreMsgSize } from "../../src/storage/index.js";

const target: ContractTarget = {
  name: "memory",
  numRuns: 150,
  msgSize: (subject, hdr, data) => memStoreMsgSize(Buffer.byteLength(subject), hdr?.length ?? 0, data.length),
  newEnv: () => ({
    open: async (limits, cbs) => createMemoryStreamStore(limits ?? null, cbs ?? null),
    reopen: null,
    dispose: async () => {},
  }),
  newConsumerEnv: () => ({
    open: async () => createMemoryConsumerStore(),
    reopen: null,
    dispose: async () => {},
  }),
};

streamStoreContract(target);
consumerStoreContract(target);
