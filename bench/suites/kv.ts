import type { SuiteDef } from "../lib/types.js";
export const kvSuite: SuiteDef = { name: "kv", jetstream: true, notes: [], cases: () => [] };
