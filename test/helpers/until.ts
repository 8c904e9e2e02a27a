// The one bounded poll the tests share: wait for a condition, fail with what was awaited.
import assert from "node:assert/strict";

/** Polls `fn` until it returns true, at most `boundMs`. */
export async function until(what: string, fn: () => boolean | Promise<boolean>, boundMs = 10_000): Promise<void> {
  const end = Date.now() + boundMs;
  for (;;) {
    if (await fn()) return;
    if (Date.now() > end) assert.fail(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
