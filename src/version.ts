// The nats-server version tsnats reports. Clients turn features on by this semver
// (nats.js: filter_subjects/metadata ≥2.10, batch direct get and TTL ≥2.11), so it
// moves only when what it implies is implemented.
export const SERVER_VERSION = "2.11.0";
export const TSNATS_VERSION = "0.1.0";
export const PROTO_VERSION = 1;
export const JS_API_LEVEL = 1;
