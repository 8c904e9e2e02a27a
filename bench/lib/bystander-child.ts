// The bystander as its own process (spawned by RemoteBystander): connects to the port given
// (with credentials when given), says "ready" once its handshake is done, then keeps one
// PING in flight (a new one gapMs after each PONG) until a line on stdin, and answers with
// its round trips as one JSON line: {"p50": ms, "p99": ms, "pings": n}.
//
// Its own process, so that what it measures is the server: a bystander sharing the load
// generator's event loop also measured the generator, which reads megabytes of replies
// (5,000 STREAM.INFO replies are 25 MB) on the same loop.

import { Bystander, connectRaw } from "./hostile.js";

const [portArg, user, pass] = process.argv.slice(2);
const creds = user !== undefined && pass !== undefined && user !== "" ? { user, pass } : null;
const c = await connectRaw(Number(portArg), creds);
const b = new Bystander(c);
process.stdout.write("ready\n");
process.stdin.once("data", () => {
  void b.stop().then(
    (r) => {
      process.stdout.write(`${JSON.stringify(r)}\n`);
      c.destroy();
      process.exit(0);
    },
    (e: unknown) => {
      process.stdout.write(`${JSON.stringify({ error: String(e) })}\n`);
      process.exit(1);
    },
  );
});
