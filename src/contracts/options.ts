// The JetStream part of the server options: what the JetStream layer is configured with.

export interface JetStreamOptions {
  enabled: boolean;
  storeDir: string;
  maxMemoryStoreBytes: number; // -1 = unlimited
  maxFileStoreBytes: number; // -1 = unlimited
  // "always" (the default): a PubAck leaves only after fsync. A number: fsync every N ms
  // (nats-server's behaviour; acknowledged data may be lost on power failure).
  syncIntervalMs: number | "always";
  domain: string;
  /** Encryption at rest: "" (off), "chachapoly" or "aes". */
  cipher: "" | "chachapoly" | "aes";
  /** The key (any string; stretched to 256 bits). "" = off. */
  key: string;
  /** The previous key, for rotation: files under it are re-keyed to `key` at start. */
  prevKey: string;
  /** unique_tag: a tag prefix of which a stream's replicas must all have different values
   *  (e.g. "az:"), lower-cased; "" = none. Used by placement in a cluster. */
  uniqueTag?: string;
  /** request_queue_limit: JetStream API requests queued before they are dropped (nats-server
   *  JSDefaultRequestQueueLimit, 10,000, when unset or not positive). */
  requestQueueLimit?: number;
  /** info_queue_limit: the same for the info requests' own queue (INFO, STREAM.INFO/NAMES/
   *  LIST, CONSUMER.INFO/NAMES/LIST); request_queue_limit when unset or not positive. */
  infoQueueLimit?: number;
}
