// Rows that run a case against tsnats started with a JetStream sync_interval (fsync on a
// timer, PubAcks right after the write: nats-server's default trade-off), beside the durable
// default rows (fsync before every PubAck). The nats-server column of such a row is the same
// case against the suite's nats-server, so the ratio compares like with like.

import { OwnServerContext } from "./context.js";
import { ServerProc } from "./servers.js";
import type { CaseContext, CaseDef, MetricDef } from "./types.js";

export const SYNC_INTERVAL = "2m";
export const SYNC_INTERVAL_LABEL = `tsnats (sync_interval ${SYNC_INTERVAL})`;

export const SYNC_INTERVAL_NOTE =
  `Rows marked "${SYNC_INTERVAL_LABEL}": the tsnats column comes from a second tsnats started with ` +
  `jetstream { sync_interval: ${SYNC_INTERVAL} } (fsync every ${SYNC_INTERVAL}, PubAck after the write, as nats-server's ` +
  "default), the nats-server column from the same nats-server as every other row. Unmarked tsnats rows fsync before each PubAck (group commit).";

/** The case `name` again, with tsnats replaced by a tsnats running with sync_interval. */
export function syncIntervalCase(
  name: string,
  metrics: MetricDef[],
  run: (ctx: CaseContext) => Promise<Record<string, number>>,
): CaseDef {
  return {
    name: `${name} — ${SYNC_INTERVAL_LABEL}`,
    metrics,
    async run(ctx: CaseContext): Promise<Record<string, number>> {
      if (ctx.server.name !== "tsnats") return run(ctx);
      const proc = await ServerProc.start({
        name: "tsnats",
        jetstream: true,
        config: `jetstream {\n  sync_interval: "${SYNC_INTERVAL}"\n}\n`,
      });
      const own = new OwnServerContext(proc, ctx.opts, ctx);
      try {
        return await run(own);
      } finally {
        own.closeAll();
        await proc.stop();
      }
    },
  };
}
