import type { Command } from "commander";
export function registerBench(_p: Command): void {}
