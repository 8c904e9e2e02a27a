import type { Command } from "commander";
export function registerAccount(_p: Command): void {}
export function registerServer(_p: Command): void {}
