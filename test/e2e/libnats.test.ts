// The C client (libnats / nats.c) against tsnats: test/fixtures/libnats/client.c is built
// with `cc ... -lnats` into a temp dir and run. Skipped when the header or library is missing
// (.ci/run installs libnats-dev).

import { test, after } from "node:test";
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { startServer } from "../../src/index.js";

// dist/test/e2e -> repo root
const SOURCE = fileURLToPath(new URL("../../../test/fixtures/libnats/client.c", import.meta.url));
const dir = mkdtempSync(join(tmpdir(), "tsnats-libnats-"));
const exe = join(dir, "client");

after(() => rmSync(dir, { recursive: true, force: true }));

const build = spawnSync("cc", ["-O0", "-o", exe, SOURCE, "-lnats"], { encoding: "utf8" });
const buildError = build.error ? String(build.error) : build.status !== 0 ? build.stderr : "";
const missing = /nats\/nats\.h|cannot find -lnats|ENOENT|not found/i.test(buildError);
if (buildError !== "" && missing) process.stderr.write(`libnats test skipped: ${buildError.split("\n")[0] ?? ""}\n`);

function run(url: string): Promise<{ code: number | null; out: string; err: string }> {
  return new Promise((resolve) => {
    const p = spawn(exe, [url], { stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    p.stdout.on("data", (d: Buffer) => (out += d.toString()));
    p.stderr.on("data", (d: Buffer) => (err += d.toString()));
    // Bound: the program's own waits are 5s each; never hang the suite.
    const t = setTimeout(() => p.kill("SIGKILL"), 30_000);
    p.on("close", (code) => {
      clearTimeout(t);
      resolve({ code, out, err });
    });
  });
}

void test("libnats: connect, pub/sub, request/reply, headers, no responders", { skip: missing ? "libnats-dev (nats/nats.h, -lnats) not installed" : false }, async () => {
  assert.equal(buildError, "", `compiling client.c failed:\n${buildError}`);
  const srv = await startServer({ port: 0 });
  try {
    const r = await run(srv.url);
    assert.equal(r.code, 0, `client failed:\nstdout:\n${r.out}\nstderr:\n${r.err}`);
    assert.deepEqual(r.out.trim().split("\n"), ["ok connect", "ok pubsub", "ok request", "ok headers", "ok noresponders", "ok done"]);
  } finally {
    await srv.close();
  }
});
