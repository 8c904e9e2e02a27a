// Interactive questions, asked only when stdin is a terminal and --defaults was not given,
// the way natscli (survey) asks for values that were not passed as flags.
import * as readline from "node:readline";
import { CliError } from "./output.js";

let rl: readline.Interface | undefined;
const lines: string[] = [];
const waiters: Array<(line: string | undefined) => void> = [];
let closed = false;

/** Prompts are allowed only on a terminal; --defaults turns them off. */
export function interactive(acceptDefaults: boolean): boolean {
  return !acceptDefaults && process.stdin.isTTY === true;
}

function reader(): readline.Interface {
  if (rl !== undefined) return rl;
  // Lines are queued so that answers typed (or written by a test) ahead of the
  // question are not lost between two prompts.
  rl = readline.createInterface({ input: process.stdin, output: process.stderr, terminal: false });
  rl.on("line", (line) => {
    const w = waiters.shift();
    if (w !== undefined) w(line);
    else lines.push(line);
  });
  rl.on("close", () => {
    closed = true;
    for (const w of waiters.splice(0)) w(undefined);
  });
  return rl;
}

async function readLine(question: string): Promise<string> {
  reader();
  process.stderr.write(question);
  const queued = lines.shift();
  if (queued !== undefined) return queued;
  if (closed) throw new CliError("input closed while waiting for an answer");
  const line = await new Promise<string | undefined>((resolve) => waiters.push(resolve));
  if (line === undefined) throw new CliError("input closed while waiting for an answer");
  return line;
}

export function closePrompts(): void {
  if (rl !== undefined) {
    rl.close();
    rl = undefined;
  }
}

export interface AskOpts {
  defaultValue?: string;
  required?: boolean;
  help?: string;
}

/** Free text; an empty answer takes the default. */
export async function askInput(message: string, opts: AskOpts = {}): Promise<string> {
  for (;;) {
    const dflt = opts.defaultValue !== undefined && opts.defaultValue !== "" ? ` (${opts.defaultValue})` : "";
    const answer = (await readLine(`? ${message}${dflt} `)).trim();
    const value = answer === "" ? (opts.defaultValue ?? "") : answer;
    if (value === "" && opts.required === true) {
      process.stderr.write("X Sorry, your reply was invalid: Value is required\n");
      continue;
    }
    return value;
  }
}

/** One of a fixed list, chosen by its name (any case) or its number. */
export async function askSelect(message: string, options: string[], defaultValue?: string): Promise<string> {
  const listing = options.map((o, i) => `  ${i + 1}) ${o}${o === defaultValue ? " (default)" : ""}`).join("\n");
  for (;;) {
    const answer = (await readLine(`? ${message}:\n${listing}\n> `)).trim();
    if (answer === "" && defaultValue !== undefined) return defaultValue;
    const n = Number(answer);
    if (Number.isInteger(n) && n >= 1 && n <= options.length) return options[n - 1] ?? "";
    const hit = options.find((o) => o.toLowerCase() === answer.toLowerCase());
    if (hit !== undefined) return hit;
    process.stderr.write(`X Sorry, your reply was invalid: choose one of ${options.join(", ")}\n`);
  }
}

export async function askConfirm(message: string, defaultValue: boolean): Promise<boolean> {
  for (;;) {
    const answer = (await readLine(`? ${message} (${defaultValue ? "Y/n" : "y/N"}) `)).trim().toLowerCase();
    if (answer === "") return defaultValue;
    if (answer === "y" || answer === "yes") return true;
    if (answer === "n" || answer === "no") return false;
    process.stderr.write("X Sorry, your reply was invalid: answer y or n\n");
  }
}

/**
 * A value that must be known: asked for on a terminal, otherwise an error that names
 * the flag or argument to pass instead.
 */
export async function requireValue(
  value: string | undefined,
  message: string,
  how: string,
  acceptDefaults: boolean,
): Promise<string> {
  if (value !== undefined && value !== "") return value;
  if (!interactive(acceptDefaults)) throw new CliError(`${message} is required, pass it as ${how}`);
  return askInput(message, { required: true });
}

/**
 * A destructive action: --force skips the question; without a terminal natscli refuses
 * rather than guess, and so do we.
 */
export async function confirmOrForce(message: string, force: boolean | undefined): Promise<boolean> {
  if (force === true) return true;
  if (process.stdin.isTTY !== true) throw new CliError(`${message}: pass --force to confirm without a terminal`);
  return askConfirm(message, false);
}
