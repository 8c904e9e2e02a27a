// What the API router (api.ts) and snapshots (snapshot.ts) need of the JetStream service:
// an interface, so that neither imports service.ts back (service.ts makes them both).

import type { JetStreamDeps } from "../contracts/jetstream.js";
import type { StreamConfig } from "../contracts/wire.js";
import type { Fs } from "../runtime/fs.js";
import type { Sourcing } from "../stream/sourcing.js";
import type { Stream } from "../stream/stream.js";
import type { Pacer } from "./pacer.js";

export interface JetStreamCore {
  readonly deps: JetStreamDeps;
  readonly fs: Fs;
  readonly streams: Map<string, Stream>;
  readonly sourcing: Sourcing;
  readonly apiStats: { total: number; errors: number };
  readonly domain: string;
  streamsDir(): string;
  loadStreamDir(dir: string): Stream;
  writeStreamMeta(dir: string, cfg: StreamConfig, createdNs: number): void;
  createStream(cfg: StreamConfig, pacer?: Pacer): Promise<Stream>;
  updateStream(st: Stream, cfg: StreamConfig, pacer?: Pacer): Promise<void>;
  deleteStream(st: Stream, pacer?: Pacer): Promise<void>;
  reservationError(cfg: StreamConfig, except: string): "JSMemoryResourcesExceededErr" | "JSStorageResourcesExceededErr" | null;
  accountInfo(): object;
  advisory(subject: string, body: Record<string, unknown>): void;
}
