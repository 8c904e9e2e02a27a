import type { Command } from "commander";
export function registerConsumer(_p: Command): void {}
