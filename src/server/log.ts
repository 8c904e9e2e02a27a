// Moved to src/runtime/log.ts (issue 15); this re-export keeps old import paths compiling and will be removed.
export * from "../runtime/log.js";
