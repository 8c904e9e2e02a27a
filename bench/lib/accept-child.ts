// The accept-rate generator as a process of its own (forked per measurement by acceptRate in
// suites/hostile.ts): a warm-up burst of n/4, `earlier` bursts of n, then, when the parent
// says "go" (it reads the server's CPU time first), the measured burst of n sockets opened at
// once, each INFO, CONNECT, PING, PONG; it answers {"ms": time until the last PONG}.
//
// Its own process, fresh for each server: the generator is a Node program doing per
// connection about as much JavaScript as the server, and one shared by both measurements was
// compiled and warm by the time it measured the second server (nats-server, which ran
// second: 6,163 against 4,041 conns/s in one run, 4,144-4,435 against 3,986-4,138 with each
// server measured by a bench process of its own).

import { connectRaw } from "./hostile.js";

const [portArg, nArg, earlierArg] = process.argv.slice(2);
const port = Number(portArg);
const n = Number(nArg);
const earlier = Number(earlierArg);
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

async function burst(count: number): Promise<number> {
  const t0 = performance.now();
  const socks = await Promise.all(Array.from({ length: count }, () => connectRaw(port, null)));
  const ms = performance.now() - t0;
  for (const s of socks) s.destroy();
  return ms;
}

try {
  await burst(Math.ceil(n / 4));
  await sleep(500);
  for (let i = 0; i < earlier; i++) {
    await burst(n);
    await sleep(500);
  }
  process.send!("ready");
  await new Promise<void>((r) => process.once("message", () => r()));
  const ms = await burst(n);
  process.send!(JSON.stringify({ ms }));
  await sleep(500);
  process.exit(0);
} catch (e) {
  process.send!(JSON.stringify({ error: String(e) }));
  process.exit(1);
}
