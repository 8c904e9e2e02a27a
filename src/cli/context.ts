// Saved connection contexts (`tsnats context add/select/ls/info/rm`), kept as JSON files
// the way natscli keeps them: one <name>.json per context plus a file naming the selected one.
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import type { Command } from "commander";
import Table from "cli-table3";
import { CliError, Columns, out, printJSON } from "./output.js";
import { confirmOrForce } from "./prompt.js";

export interface SavedContext {
  description: string;
  url: string;
  user: string;
  password: string;
  token: string;
  creds: string;
}

const NAME_RE = /^[a-zA-Z0-9_.-]+$/;

/** TSNATS_CONFIG_DIR wins (tests use a temp dir), then $XDG_CONFIG_HOME/tsnats, then ~/.config/tsnats. */
export function configDir(): string {
  const override = process.env["TSNATS_CONFIG_DIR"];
  if (override !== undefined && override !== "") return override;
  const xdg = process.env["XDG_CONFIG_HOME"];
  const base = xdg !== undefined && xdg !== "" ? xdg : path.join(os.homedir(), ".config");
  return path.join(base, "tsnats");
}

function contextDir(): string {
  return path.join(configDir(), "context");
}

function selectedFile(): string {
  return path.join(configDir(), "context.txt");
}

function checkName(name: string): void {
  if (!NAME_RE.test(name)) throw new CliError(`invalid context name "${name}"`);
}

export function loadContext(name: string): SavedContext {
  checkName(name);
  const file = path.join(contextDir(), name + ".json");
  let raw: string;
  try {
    raw = fs.readFileSync(file, "utf8");
  } catch {
    throw new CliError(`unknown context "${name}"`);
  }
  const parsed = JSON.parse(raw) as Partial<SavedContext>;
  return {
    description: parsed.description ?? "",
    url: parsed.url ?? "",
    user: parsed.user ?? "",
    password: parsed.password ?? "",
    token: parsed.token ?? "",
    creds: parsed.creds ?? "",
  };
}

export function selectedContext(): string {
  try {
    return fs.readFileSync(selectedFile(), "utf8").trim();
  } catch {
    return "";
  }
}

function saveContext(name: string, ctx: SavedContext): void {
  checkName(name);
  fs.mkdirSync(contextDir(), { recursive: true, mode: 0o700 });
  fs.writeFileSync(path.join(contextDir(), name + ".json"), JSON.stringify(ctx, null, 2) + "\n", { mode: 0o600 });
}

function selectContext(name: string): void {
  fs.mkdirSync(configDir(), { recursive: true, mode: 0o700 });
  fs.writeFileSync(selectedFile(), name + "\n");
}

function listContexts(): string[] {
  try {
    return fs
      .readdirSync(contextDir())
      .filter((f) => f.endsWith(".json"))
      .map((f) => f.slice(0, -5))
      .sort();
  } catch {
    return [];
  }
}

function redact(s: string): string {
  return s === "" ? "" : "*********";
}

function showContext(name: string, ctx: SavedContext, json: boolean): void {
  if (json) {
    printJSON(ctx);
    return;
  }
  const cols = new Columns(`NATS Configuration Context "${name}"`);
  cols.rowIfNotEmpty("Description", ctx.description);
  cols.row("Server URLs", ctx.url === "" ? "nats://127.0.0.1:4222" : ctx.url);
  cols.rowIfNotEmpty("Username", ctx.user);
  cols.rowIfNotEmpty("Password", redact(ctx.password));
  cols.rowIfNotEmpty("Token", redact(ctx.token));
  cols.rowIfNotEmpty("Credentials", ctx.creds);
  cols.row("Path", path.join(contextDir(), name + ".json"));
  cols.print();
}

interface GlobalConn {
  server?: string;
  user?: string;
  password?: string;
  token?: string;
  creds?: string;
}

export function registerContext(program: Command): void {
  const ctx = program.command("context").alias("ctx").description("Manage tsnats configuration contexts");

  ctx
    .command("add <name>")
    .alias("create")
    .alias("save")
    .description("Update or create a context from the connection flags (--server, --user, ...)")
    .option("--description <text>", "Set a friendly description for this context")
    .option("--select", "Select the saved context as the default one")
    .action((name: string, opts: { description?: string; select?: boolean }, cmd: Command) => {
      const g = cmd.optsWithGlobals<GlobalConn>();
      let existing: SavedContext | undefined;
      try {
        existing = loadContext(name);
      } catch {
        existing = undefined;
      }
      const saved: SavedContext = {
        description: opts.description ?? existing?.description ?? "",
        url: g.server ?? existing?.url ?? "",
        user: g.user ?? existing?.user ?? "",
        password: g.password ?? existing?.password ?? "",
        token: g.token ?? existing?.token ?? "",
        creds: g.creds ?? existing?.creds ?? "",
      };
      saveContext(name, saved);
      if (opts.select === true) selectContext(name);
      showContext(name, saved, false);
    });

  ctx
    .command("select <name>")
    .alias("switch")
    .alias("set")
    .description("Select the default context")
    .action((name: string) => {
      loadContext(name);
      selectContext(name);
      out(`Selected context "${name}"`);
    });

  ctx
    .command("unselect")
    .description("Ensures that no context is the default context")
    .action(() => {
      fs.rmSync(selectedFile(), { force: true });
    });

  ctx
    .command("ls")
    .alias("list")
    .description("List known contexts")
    .option("-j, --json", "Show the list in JSON format")
    .option("--names", "List just the names of known contexts")
    .action((opts: { json?: boolean; names?: boolean }) => {
      const names = listContexts();
      if (opts.json === true) return printJSON(names);
      if (opts.names === true) return names.forEach((n) => out(n));
      if (names.length === 0) return out("No contexts defined");
      const sel = selectedContext();
      const table = new Table({ head: ["Name", "Description"] });
      for (const n of names) {
        let d = "";
        try {
          d = loadContext(n).description;
        } catch {
          d = "(unreadable)";
        }
        table.push([n === sel ? n + "*" : n, d]);
      }
      out("Known Contexts");
      out(table.toString());
    });

  ctx
    .command("info [name]")
    .alias("show")
    .description("Display information on the current or named context")
    .option("-j, --json", "Show the context in JSON format")
    .action((name: string | undefined, opts: { json?: boolean }) => {
      const n = name ?? selectedContext();
      if (n === "") throw new CliError("no context is selected");
      showContext(n, loadContext(n), opts.json === true);
    });

  ctx
    .command("rm <name>")
    .alias("remove")
    .description("Remove a context")
    .option("-f, --force", "Force remove without prompting")
    .action(async (name: string, opts: { force?: boolean }) => {
      loadContext(name);
      if (!(await confirmOrForce(`Really delete context "${name}"`, opts.force))) return;
      fs.rmSync(path.join(contextDir(), name + ".json"), { force: true });
      if (selectedContext() === name) fs.rmSync(selectedFile(), { force: true });
    });
}
