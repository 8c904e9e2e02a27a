// Wire JSON shapes of the JetStream API, with nats-server's field names (snake_case).
// Durations are int64 nanoseconds; times are RFC 3339 strings with nanoseconds.

export type RetentionPolicy = "limits" | "interest" | "workqueue";
export type DiscardPolicy = "old" | "new";
export type StorageKind = "file" | "memory";
export type Compression = "none" | "s2";

export interface SubjectTransformConfig {
  src: string;
  dest: string;
}

export interface RePublish {
  src: string;
  dest: string;
  headers_only: boolean;
}

export interface ExternalStream {
  api: string;
  deliver: string;
}

export interface StreamSourceConfig {
  name: string;
  opt_start_seq: number;
  opt_start_time: string; // "" = unset
  filter_subject: string;
  subject_transforms: SubjectTransformConfig[];
  external: ExternalStream | null;
}

export interface StreamConsumerLimits {
  inactive_threshold: number; // ns
  max_ack_pending: number;
}

export interface Placement {
  cluster: string;
  tags: string[];
}

/** A fully defaulted stream configuration (what a stream runs with). */
export interface StreamConfig {
  name: string;
  description: string;
  subjects: string[];
  retention: RetentionPolicy;
  max_consumers: number;
  max_msgs: number;
  max_bytes: number;
  max_age: number; // ns
  max_msgs_per_subject: number;
  max_msg_size: number;
  discard: DiscardPolicy;
  storage: StorageKind;
  num_replicas: number;
  no_ack: boolean;
  duplicate_window: number; // ns
  placement: Placement | null;
  mirror: StreamSourceConfig | null;
  sources: StreamSourceConfig[];
  compression: Compression;
  first_seq: number;
  subject_transform: SubjectTransformConfig | null;
  republish: RePublish | null;
  allow_direct: boolean;
  mirror_direct: boolean;
  discard_new_per_subject: boolean;
  sealed: boolean;
  deny_delete: boolean;
  deny_purge: boolean;
  allow_rollup_hdrs: boolean;
  consumer_limits: StreamConsumerLimits;
  allow_msg_ttl: boolean;
  subject_delete_marker_ttl: number; // ns
  metadata: Record<string, string> | null;
}

export interface StreamStateWire {
  messages: number;
  bytes: number;
  first_seq: number;
  first_ts: string;
  last_seq: number;
  last_ts: string;
  num_subjects?: number;
  subjects?: Record<string, number>;
  num_deleted?: number;
  deleted?: number[];
  consumer_count: number;
}

export interface ApiErrorWire {
  code: number;
  err_code: number;
  description: string;
}

export interface StreamSourceInfoWire {
  name: string;
  external?: ExternalStream;
  lag: number;
  active: number; // ns since last activity, -1 = never
  error?: ApiErrorWire;
  filter_subject?: string;
  subject_transforms?: SubjectTransformConfig[];
}

export interface StreamInfoWire {
  config: Record<string, unknown>;
  created: string;
  state: StreamStateWire;
  domain?: string;
  cluster: { leader: string };
  mirror?: StreamSourceInfoWire;
  sources?: StreamSourceInfoWire[];
  ts: string;
}

export interface PubAckWire {
  stream: string;
  seq: number;
  duplicate?: boolean;
  domain?: string;
}

/** Request of STREAM.MSG.GET and DIRECT.GET. */
export interface MsgGetRequest {
  seq?: number;
  last_by_subj?: string;
  next_by_subj?: string;
  batch?: number;
  max_bytes?: number;
  start_time?: string;
  multi_last?: string[];
  up_to_seq?: number;
  up_to_time?: string;
  no_hdr?: boolean;
}

export interface StoredMsgWire {
  subject: string;
  seq: number;
  hdrs?: string; // base64
  data?: string; // base64
  time: string;
}

export const ApiType = {
  AccountInfo: "io.nats.jetstream.api.v1.account_info_response",
  StreamCreate: "io.nats.jetstream.api.v1.stream_create_response",
  StreamUpdate: "io.nats.jetstream.api.v1.stream_update_response",
  StreamInfo: "io.nats.jetstream.api.v1.stream_info_response",
  StreamDelete: "io.nats.jetstream.api.v1.stream_delete_response",
  StreamNames: "io.nats.jetstream.api.v1.stream_names_response",
  StreamList: "io.nats.jetstream.api.v1.stream_list_response",
  StreamPurge: "io.nats.jetstream.api.v1.stream_purge_response",
  StreamMsgGet: "io.nats.jetstream.api.v1.stream_msg_get_response",
  StreamMsgDelete: "io.nats.jetstream.api.v1.stream_msg_delete_response",
  StreamSnapshot: "io.nats.jetstream.api.v1.stream_snapshot_response",
  StreamRestore: "io.nats.jetstream.api.v1.stream_restore_response",
  StreamLeaderStepdown: "io.nats.jetstream.api.v1.stream_leader_stepdown_response",
  StreamRemovePeer: "io.nats.jetstream.api.v1.stream_remove_peer_response",
  ConsumerLeaderStepdown: "io.nats.jetstream.api.v1.consumer_leader_stepdown_response",
  MetaServerRemove: "io.nats.jetstream.api.v1.meta_server_remove_response",
  ConsumerCreate: "io.nats.jetstream.api.v1.consumer_create_response",
  ConsumerInfo: "io.nats.jetstream.api.v1.consumer_info_response",
  ConsumerDelete: "io.nats.jetstream.api.v1.consumer_delete_response",
  ConsumerNames: "io.nats.jetstream.api.v1.consumer_names_response",
  ConsumerList: "io.nats.jetstream.api.v1.consumer_list_response",
  ApiError: "io.nats.jetstream.api.v1.error_response",
  StreamAction: "io.nats.jetstream.advisory.v1.stream_action",
  ApiAudit: "io.nats.jetstream.advisory.v1.api_audit",
} as const;
