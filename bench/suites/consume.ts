import type { SuiteDef } from "../lib/types.js";
export const consumeSuite: SuiteDef = { name: "consume", jetstream: true, notes: [], cases: () => [] };
