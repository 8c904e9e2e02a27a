// Moved to src/contracts/json.ts (issue 15); this re-export keeps old import paths compiling and will be removed.
export * from "../contracts/json.js";
