/** The JSON shapes of the admin API (docs/admin-api.md). Times are Unix milliseconds. */

/** One page of a cursor-paginated list. */
export interface Page<T> {
  items: T[];
  next_cursor: string;
  total?: number;
}

export interface Me {
  username: string;
  auth: "session" | "token";
  expires_at?: number;
}

export interface Overview {
  version: string;
  server_time: number;
  endpoints: number;
  endpoints_enabled: number;
  online: number;
  connections: { ws: number; tcp: number };
  groups: number;
  pending_deliveries: number;
  scheduled_messages: number;
}

/** The gauges of the metrics history (docs/admin-api.md `GET /api/admin/metrics/history`). */
export interface HistoryGauges {
  connections: { ws: number; tcp: number };
  online: number;
  pending_deliveries: number;
  scheduled_messages: number;
  writer_queue: number;
}

/** One sample: gauges at `t`, and what happened in the window before it. */
export interface HistorySample extends HistoryGauges {
  t: number;
  window_ms: number;
  submitted_per_s: number;
  delivered_per_s: number;
  outcomes: { accepted: number; expired: number; dropped: number; rejected: number };
  rejected_by_reason: Record<string, number>;
  commits: number;
  commit_ms_avg: number | null;
  commit_ms_max: number | null;
  latency_ms_p50: number | null;
  latency_ms_p99: number | null;
}

export interface MetricsHistory {
  interval_ms: number;
  span_ms: number;
  now: HistoryGauges & { t: number };
  samples: HistorySample[];
}

export interface Settings {
  listen: string;
  admin_listen: string;
  /** The address really bound (a configured port 0 becomes the chosen one); "" when unknown. */
  listen_bound: string;
  admin_listen_bound: string;
  tls: { enabled: boolean; cert_file: string; key_file: string; allow_plaintext: boolean };
  trusted_proxies: string[];
  data_dir: string;
  limits: Record<string, number>;
  session_idle_days: number;
  record_retention_days: number;
  idempotency_hours: number;
  receipt_retention_days: number;
  sqlite_synchronous: string;
  metrics: { token_set: boolean };
  log: { level: string };
  /** The per-account lock of the admin password (issue 28); times in ms, null when none. */
  admin_lockout: { locked_until: number | null; last_locked_at: number | null };
}

export interface ApiToken {
  id: string;
  name: string;
  enabled: boolean;
  created_at: number;
  last_used_at: number | null;
}

export interface Endpoint {
  id: string;
  name: string;
  remark: string;
  source: "admin" | "self";
  enabled: boolean;
  online: boolean;
  online_since: number | null;
  offline_since: number | null;
  created_at: number;
  default_delay_ms: number;
  talk_password_set: boolean;
  session_active: boolean;
}

export interface EndpointDetail {
  item: Endpoint;
  groups: number;
  login_paused_until: number | null;
}

/** The body of `POST /api/admin/endpoints`. */
export interface EndpointCreate {
  id: string;
  name: string;
  remark: string;
  login_password: string;
  talk_password: string;
  default_delay_ms: number;
}

export interface EndpointPatch {
  name?: string;
  remark?: string;
  default_delay_ms?: number;
  enabled?: boolean;
}

export type BatchAction = "disable" | "enable" | "delete";

export interface ErrorInfo {
  code: string;
  message: string;
}

export interface BatchResult {
  items: { id: string; ok: boolean; error?: ErrorInfo }[];
}

/** One created row of a CSV import; `login_password` only when it was generated. */
export interface ImportedRow {
  row: number;
  id: string;
  login_password?: string;
}

export interface ImportResult {
  created: number;
  items: ImportedRow[];
}

/** One bad row of a refused CSV import (`error.data.rows`). */
export interface ImportRowError {
  row: number;
  column: string;
  message: string;
}

export interface Registration {
  enabled: boolean;
  code: string;
  updated_at: number | null;
}

export interface Group {
  id: string;
  name: string;
  owner_id: string;
  members: number;
  created_at: number;
}

export interface GroupMember {
  id: string;
  name: string;
  online: boolean;
  joined_at: number;
}

/** A member that could not join, with its error code. */
export interface FailedMember {
  id: string;
  code: string;
}

export type MessageState = "scheduled" | "dispatched" | "completed";
export type DeliveryState =
  | "pending"
  | "accepted"
  | "recalled"
  | "expired"
  | "dropped"
  | "rejected";

export interface MessageRecord {
  seq: number;
  id: string;
  sender_id: string;
  dest_kind: "endpoint" | "group";
  dest_id: string;
  content_type: string;
  state: MessageState;
  reason: string;
  send_at: number;
  created_at: number;
  keep: boolean;
  ttl_seconds: number;
  receipt: boolean;
  counts: Record<DeliveryState, number>;
}

export interface Recipient {
  endpoint_id: string;
  state: DeliveryState;
  reason: string;
  send_at: number;
  expire_at: number | null;
  pushed_at: number | null;
  attempts: number;
  updated_at: number;
}
