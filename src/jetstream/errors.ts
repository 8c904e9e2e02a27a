// Moved to src/contracts/errors.ts (issue 15); this re-export keeps old import paths compiling and will be removed.
export * from "../contracts/errors.js";
