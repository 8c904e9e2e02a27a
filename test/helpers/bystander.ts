// A bystander connection that measures the server's responsiveness while another client
// floods it: PING every intervalMs (one outstanding at a time), each round trip bounded.

import net from "node:net";

export interface Bystander {
  /** Round trips in ms, in the order sent. */
  readonly rtts: number[];
  /** Resolves when `count` PINGs have been answered; rejects if one takes longer than maxWaitMs. */
  readonly done: Promise<number[]>;
  close(): void;
}

export async function startBystander(port: number, count: number, intervalMs = 5, maxWaitMs = 15000): Promise<Bystander> {
  const s = await new Promise<net.Socket>((res, rej) => {
    const c = net.connect({ port, host: "127.0.0.1" });
    c.once("error", rej);
    c.once("connect", () => res(c));
  });
  s.setNoDelay(true);
  s.on("error", () => {});
  let buf = "";
  let waiting: (() => void) | null = null;
  s.on("data", (d: Buffer) => {
    buf += d.toString("latin1");
    let i;
    while ((i = buf.indexOf("PONG\r\n")) >= 0) {
      buf = buf.slice(i + 6);
      const w = waiting;
      waiting = null;
      w?.();
    }
  });
  const roundTrip = (): Promise<number> =>
    new Promise((resolve, reject) => {
      const t0 = performance.now();
      const timer = setTimeout(() => reject(new Error(`PING unanswered for ${maxWaitMs} ms`)), maxWaitMs);
      waiting = () => {
        clearTimeout(timer);
        resolve(performance.now() - t0);
      };
      s.write("PING\r\n");
    });
  s.write('CONNECT {"verbose":false,"pedantic":false}\r\n');
  await roundTrip();
  const rtts: number[] = [];
  const done = (async () => {
    for (let k = 0; k < count; k++) {
      const t0 = performance.now();
      rtts.push(await roundTrip());
      const left = intervalMs - (performance.now() - t0);
      if (left > 0) await new Promise((r) => setTimeout(r, left));
    }
    return rtts;
  })();
  return { rtts, done, close: () => s.destroy() };
}

export function summary(rtts: number[]): string {
  const s = [...rtts].sort((a, b) => a - b);
  const q = (p: number): string => (s[Math.min(s.length - 1, Math.floor(p * s.length))] ?? 0).toFixed(1);
  return `n=${s.length} p50=${q(0.5)} p99=${q(0.99)} max=${(s[s.length - 1] ?? 0).toFixed(1)} ms`;
}

/** Missed deadlines: for each PING slot (every intervalMs) that passed while a PING was
 *  already more than deadlineMs overdue, one. A single 300 ms stall counts 50 at 5/50 ms, so
 *  one long stall cannot hide among many fast round trips. */
export function missedSlots(rtts: number[], deadlineMs: number, intervalMs = 5): number {
  let n = 0;
  for (const r of rtts) if (r > deadlineMs) n += Math.ceil((r - deadlineMs) / intervalMs);
  return n;
}
