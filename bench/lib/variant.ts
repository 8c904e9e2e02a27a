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
  return configVariantCase(name, SYNC_INTERVAL_LABEL, `jetstream {\n  sync_interval: "${SYNC_INTERVAL}"\n}\n`, metrics, run);
}

export const ENCRYPTED_NOTE =
  'Rows marked "tsnats (encrypted <cipher>)": the tsnats column comes from a tsnats started with jetstream { key, cipher } ' +
  "(encryption at rest), the nats-server column from the same unencrypted nats-server as every other row.";

/** The case `name` again, with tsnats replaced by a tsnats with encryption at rest. */
export function encryptedCase(
  name: string,
  cipher: "chachapoly" | "aes",
  metrics: MetricDef[],
  run: (ctx: CaseContext) => Promise<Record<string, number>>,
): CaseDef {
  return configVariantCase(name, `tsnats (encrypted ${cipher})`, `jetstream {\n  key: "bench-key-not-secret"\n  cipher: ${cipher}\n}\n`, metrics, run);
}

/** The case `name` again, with tsnats replaced by a tsnats started with this config file. */
function configVariantCase(
  name: string,
  label: string,
  config: string,
  metrics: MetricDef[],
  run: (ctx: CaseContext) => Promise<Record<string, number>>,
): CaseDef {
  return {
    name: `${name} — ${label}`,
    metrics,
    async run(ctx: CaseContext): Promise<Record<string, number>> {
      if (ctx.server.name !== "tsnats") return run(ctx);
      const proc = await ServerProc.start({ name: "tsnats", jetstream: true, config });
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
