// The linearizability checker (WGL search with memoization, per-key KV register model with
// CAS and unknown outcomes) lives with the simulator: test/sim/linearizable.ts.
export * from "../sim/linearizable.js";
