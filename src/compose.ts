// The composition root: the one place that builds a Server and wires the optional parts into
// it (JetStream, cluster routes, the monitor). server/ never imports those layers; it gets
// these factories. Each part's module is loaded the first time its options ask for it (a
// literal import(), visible to the import graph), so a core-only server does not pay for
// loading JetStream, the cluster or the monitor at startup.

import type { Logger } from "./runtime/log.js";
import type { ServerOptions } from "./server/options.js";
import { NodeFs } from "./runtime/fs.js";
import { Server, type ServerEnv, type ServerParts } from "./server/server.js";

export const serverParts: ServerParts = {
  async jetstream(deps) {
    const { JetStreamService } = await import("./jetstream/service.js");
    return new JetStreamService(deps);
  },
  async cluster(server, opts) {
    const { Cluster } = await import("./cluster/cluster.js");
    const cl = new Cluster(server, opts);
    // Clustered JetStream (a server_name is needed: it is the Raft peer id): the meta group.
    const js = server.jetstream as { attachClusterMeta?(m: unknown): void } | null;
    if (js?.attachClusterMeta !== undefined && server.opts.serverName === "" && opts.port !== 0) {
      server.log.warn("JetStream cluster requires server_name to be set: the meta group does not run");
    } else if (js?.attachClusterMeta !== undefined && opts.port !== 0) {
      const { startMetaGroup } = await import("./jscluster/meta-group.js");
      const { RoutePeerTransport } = await import("./cluster/peer-transport.js");
      const { enableStreamGroups } = await import("./jscluster/stream-groups.js");
      startMetaGroup({
        serverName: server.opts.serverName,
        storeDir: server.opts.jetstream.storeDir,
        clusterOpts: opts,
        cluster: cl,
        openChannel: (events) => new RoutePeerTransport(cl, server.sched, events),
        bus: server,
        log: server.log,
        clock: server.clock,
        sched: server.sched,
        random: server.random,
        fs: server.fs ?? new NodeFs(),
        facts: {
          tags: server.opts.serverTags,
          maxStore: server.opts.jetstream.maxFileStoreBytes,
          maxMemory: server.opts.jetstream.maxMemoryStoreBytes,
        },
        attach: (m) => {
          enableStreamGroups(m, server.clock, server.log, server.sched);
          js.attachClusterMeta!(m);
        },
      });
    }
    return cl;
  },
  async monitor(server) {
    const { startMonitor } = await import("./monitor/http.js");
    return startMonitor(server);
  },
};

/** A server with every part wired (what tsnats-server and the embedding API run); env
 *  overrides its seams (a test's clock, scheduler, random). */
export function createServer(opts: ServerOptions, log: Logger, env: Omit<ServerEnv, "parts"> = {}): Server {
  return new Server(opts, log, { ...env, fs: env.fs ?? new NodeFs(), parts: serverParts });
}
