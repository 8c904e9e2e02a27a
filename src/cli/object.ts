import type { Command } from "commander";
export function registerObject(_p: Command): void {}
