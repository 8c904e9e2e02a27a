// A small progress bar on stderr, drawn only when stderr is a terminal so that
// piped output and tests see nothing of it.

export interface Progress {
  tick(n?: number): void;
  set(n: number): void;
  done(): void;
}

const NOOP: Progress = { tick() {}, set() {}, done() {} };

const REDRAW_MS = 100;

export function progressBar(label: string, total: number, enabled = true, unit: "count" | "bytes" = "count"): Progress {
  if (!enabled || process.stderr.isTTY !== true || total <= 0) return NOOP;
  let current = 0;
  let last = 0;
  const started = Date.now();
  const width = 30;
  const draw = (force: boolean): void => {
    const now = Date.now();
    if (!force && now - last < REDRAW_MS) return;
    last = now;
    const ratio = Math.min(1, current / total);
    const filled = Math.round(ratio * width);
    const secs = Math.max(0.001, (now - started) / 1000);
    const rate = unit === "bytes" ? `${(current / secs / 1048576).toFixed(1)} MiB/s` : `${Math.round(current / secs)}/s`;
    const bar = "█".repeat(filled) + "░".repeat(width - filled);
    process.stderr.write(`\r${label} ${bar} ${(ratio * 100).toFixed(0).padStart(3)}% ${current}/${total} ${rate}   `);
  };
  return {
    tick(n = 1) {
      current += n;
      draw(false);
    },
    set(n: number) {
      current = n;
      draw(false);
    },
    done() {
      current = Math.max(current, 0);
      draw(true);
      process.stderr.write("\n");
    },
  };
}
