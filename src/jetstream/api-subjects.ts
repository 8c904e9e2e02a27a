// The subjects the $JS.API router subscribes (under $JS.API.) and the mapping of
// $JS.<domain>.API. requests onto them (nats-server's JetStream domain mapping table).

const API_PREFIX = "$JS.API.";

export const STREAM_PATTERNS = [
  "INFO",
  "STREAM.CREATE.*",
  "STREAM.UPDATE.*",
  "STREAM.DELETE.*",
  "STREAM.INFO.*",
  "STREAM.NAMES",
  "STREAM.LIST",
  "STREAM.PURGE.*",
  "STREAM.MSG.GET.*",
  "STREAM.MSG.DELETE.*",
  "STREAM.SNAPSHOT.*",
  "STREAM.RESTORE.*",
  "STREAM.LEADER.STEPDOWN.*",
  "STREAM.PEER.REMOVE.*",
  // Not CONSUMER.MSG.NEXT: each consumer subscribes its own (consumer-api.ts serveNext), so
  // a pull for a missing consumer or stream meets no subscriber and a client that asked for
  // no_responders gets a 503, as from nats-server 2.11 on.
  "CONSUMER.*",
  "CONSUMER.CREATE.>",
  "CONSUMER.DURABLE.>",
  "CONSUMER.INFO.>",
  "CONSUMER.NAMES.>",
  "CONSUMER.LIST.>",
  "CONSUMER.DELETE.>",
  "CONSUMER.PAUSE.>",
  "CONSUMER.UNPIN.>",
  "CONSUMER.LEADER.>",
];

/** The API suffixes nats-server maps from $JS.<domain>.API. (jetstream_api.go
 *  generateJSMappingTable): the first token decides. */
const DOMAIN_JS_TOKENS = new Set(["INFO", "STREAM", "CONSUMER", "DIRECT", "META", "SERVER", "ACCOUNT"]);

/** Where a subject under $JS.<domain>.API. (whose length is `at`) goes, or null. */
export function domainMapped(subject: string, at: number): string | null {
  const end = subject.indexOf(".", at);
  const first = end < 0 ? subject.slice(at) : subject.slice(at, end);
  if (first === "$KV" || first === "$OBJ") return end < 0 ? null : subject.slice(at);
  if (!DOMAIN_JS_TOKENS.has(first)) return null;
  if (first === "INFO" && end >= 0) return null;
  return API_PREFIX + subject.slice(at);
}
