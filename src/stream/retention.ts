// Interest and work-queue retention: a message leaves once no consumer needs it.

import type { ConsumerHook } from "../contracts/jetstream.js";
import type { StreamStore } from "../storage/types.js";

export type Retention = "limits" | "interest" | "workqueue";

/** True when some consumer's filter matches subj. */
export function hasInterest(consumers: Map<string, ConsumerHook>, subj: string): boolean {
  for (const c of consumers.values()) if (c.filterMatches(subj)) return true;
  return false;
}

/** A consumer acknowledged seq: remove it when the retention policy says nobody needs it now. */
export function retainOnAck(store: StreamStore, retention: Retention, consumers: Map<string, ConsumerHook>, seq: number, subject: string): void {
  if (retention === "limits") return;
  if (retention === "workqueue") {
    store.removeMsg(seq);
    return;
  }
  for (const c of consumers.values()) {
    if (c.filterMatches(subject) && c.needsMessage(seq, subject)) return;
  }
  store.removeMsg(seq);
}

/** Interest retention: drop every message no remaining consumer needs. */
export function removeUnneeded(store: StreamStore, consumers: Map<string, ConsumerHook>): void {
  const st = store.state();
  let seq = st.firstSeq;
  while (seq > 0 && seq <= st.lastSeq) {
    const m = store.loadNextMsg(">", seq);
    if (m === null) break;
    let needed = false;
    for (const c of consumers.values()) {
      if (c.filterMatches(m.subject) && c.needsMessage(m.seq, m.subject)) {
        needed = true;
        break;
      }
    }
    if (!needed) store.removeMsg(m.seq);
    seq = m.seq + 1;
  }
}
