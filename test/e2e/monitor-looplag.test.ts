// /varz tsnats_event_loop_lag and the /metrics gauges see a stall of the event loop.

import { test } from "node:test";
import assert from "node:assert/strict";
import { startServer } from "../../src/index.js";

async function varzLag(port: number): Promise<Record<string, number>> {
  const r = await fetch(`http://127.0.0.1:${port}/varz`);
  const v = (await r.json()) as Record<string, unknown>;
  return v["tsnats_event_loop_lag"] as Record<string, number>;
}

void test("a 150 ms stall shows in /varz and /metrics", { timeout: 20000 }, async () => {
  const srv = await startServer({ host: "127.0.0.1", port: 0, httpPort: -1, httpHost: "127.0.0.1" });
  try {
    const port = srv.server.monitor!.port;
    await new Promise((r) => setTimeout(r, 100));
    const before = await varzLag(port);
    for (const k of ["window_ms", "p50_ms", "p99_ms", "max_ms", "mean_ms", "max_ms_since_start"]) assert.equal(typeof before[k], "number", k);
    // The server runs in this process: block its loop.
    const t0 = performance.now();
    while (performance.now() - t0 < 150) {
      /* busy */
    }
    // Bounded wait for the meter's next tick to record the stall.
    const deadline = Date.now() + 5000;
    let lag = await varzLag(port);
    while (lag["max_ms"]! < 100 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 20));
      lag = await varzLag(port);
    }
    assert.ok(lag["max_ms"]! >= 100, `max_ms ${lag["max_ms"]}`);
    assert.ok(lag["max_ms_since_start"]! >= lag["max_ms"]!);
    assert.ok(lag["p50_ms"]! <= lag["p99_ms"]! && lag["p99_ms"]! <= lag["max_ms"]!);
    const m = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    const max = /\ntsnats_event_loop_lag_max_seconds\{server_id="[A-Z0-9]+"\} ([\d.e+-]+)\n/.exec(m);
    assert.ok(max, m);
    assert.ok(Number(max[1]) >= 0.1, `metrics max ${max[1]}`);
  } finally {
    await srv.close();
  }
});
