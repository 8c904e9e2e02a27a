// Jepsen's total-queue and set-full checks for a stream used as a queue: every message that
// was acknowledged must be read (lost = acked - read), nothing may be read that was never
// published (unexpected), duplicates are counted, and publishes whose outcome was unknown may
// or may not appear (recovered). Losses are split per writer into prefix, middle and postfix
// (jepsen-io/nats queue.clj): a loss in the middle of what a writer got acked, with later
// acked messages read, points at a hole, not at a lost tail.

export interface QueueHistory {
  /** Every publish attempted: value -> writer and order within the writer, with outcome. */
  attempts: ReadonlyArray<{ value: string; writer: number; n: number; outcome: "ok" | "fail" | "unknown" }>;
  /** Every value a reader got (in read order, possibly from several readers). */
  reads: readonly string[];
}

export interface QueueResult {
  ok: boolean;
  attempted: number;
  acked: number;
  read: number;
  lost: string[];
  unexpected: string[];
  duplicated: Map<string, number>;
  /** Unknown-outcome publishes that were read. */
  recovered: number;
  /** Lost values per writer position: before the writer's first read value, between read
   *  values, after its last read value. */
  lostPrefix: number;
  lostMiddle: number;
  lostPostfix: number;
}

export function checkQueue(h: QueueHistory): QueueResult {
  const attempts = new Map<string, QueueHistory["attempts"][number]>();
  for (const a of h.attempts) attempts.set(a.value, a);
  const counts = new Map<string, number>();
  const unexpected: string[] = [];
  for (const v of h.reads) {
    counts.set(v, (counts.get(v) ?? 0) + 1);
    if (!attempts.has(v) && counts.get(v) === 1) unexpected.push(v);
  }
  const duplicated = new Map<string, number>();
  for (const [v, c] of counts) if (c > 1) duplicated.set(v, c);
  const lost: string[] = [];
  let acked = 0;
  let recovered = 0;
  const byWriter = new Map<number, Array<{ n: number; read: boolean; acked: boolean }>>();
  for (const a of h.attempts) {
    const read = counts.has(a.value);
    if (a.outcome === "ok") {
      acked++;
      if (!read) lost.push(a.value);
    } else if (a.outcome === "unknown" && read) recovered++;
    let l = byWriter.get(a.writer);
    if (l === undefined) byWriter.set(a.writer, (l = []));
    l.push({ n: a.n, read, acked: a.outcome === "ok" });
  }
  let lostPrefix = 0;
  let lostMiddle = 0;
  let lostPostfix = 0;
  for (const l of byWriter.values()) {
    l.sort((x, y) => x.n - y.n);
    const first = l.findIndex((x) => x.read);
    let last = -1;
    for (let i = l.length - 1; i >= 0; i--) if (l[i]!.read) {
      last = i;
      break;
    }
    l.forEach((x, i) => {
      if (!x.acked || x.read) return;
      if (first < 0 || i < first) lostPrefix++;
      else if (i > last) lostPostfix++;
      else lostMiddle++;
    });
  }
  return {
    ok: lost.length === 0 && unexpected.length === 0,
    attempted: h.attempts.length,
    acked,
    read: counts.size,
    lost,
    unexpected,
    duplicated,
    recovered,
    lostPrefix,
    lostMiddle,
    lostPostfix,
  };
}
