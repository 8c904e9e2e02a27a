import type { Command } from "commander";
export function registerKv(_p: Command): void {}
