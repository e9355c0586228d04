/**
 * The JSON shapes of the admin API (docs/admin-api.md). Times are Unix milliseconds. The shapes
 * that the OpenAPI document declares as components are its generated types (schema.gen.ts,
 * `deno task openapi`); the rest are still written here.
 */
import type { components } from "./schema.gen.ts";

type Schemas = components["schemas"];

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

/** The live overview's history (`GET /api/admin/metrics/history`), oldest sample first. */
export type MetricsHistory = Schemas["MetricsHistory"];
/** One sample: gauges at `t`, and what happened in the window before it. */
export type HistorySample = MetricsHistory["samples"][number];
/** The gauges of the metrics history. */
export type HistoryGauges = Omit<MetricsHistory["now"], "t">;

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
  audit_retention_days: number;
  sqlite_synchronous: string;
  metrics: { token_set: boolean };
  log: { level: string };
  /** The per-account lock of the admin password (issue 28); times in ms, null when none. */
  admin_lockout: { locked_until: number | null; last_locked_at: number | null };
}

export type ApiToken = Schemas["Token"];

export type Endpoint = Schemas["Endpoint"];

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
export type ImportedRow = ImportResult["items"][number];

export type ImportResult = Schemas["ImportResult"];

/** One bad row of a refused CSV import (`error.data.rows`). */
export interface ImportRowError {
  row: number;
  column: string;
  message: string;
}

export type Registration = Schemas["Registration"];

export type Group = Schemas["Group"];

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

export type MessageState = Schemas["MessageRecord"]["state"];
export type DeliveryState = Schemas["RecipientRecord"]["state"];

/** One row of the audit log (操作日志). */
export type AuditRecord = Schemas["AuditRecord"];

export type MessageRecord = Schemas["MessageRecord"];

export type Recipient = Schemas["RecipientRecord"];

/** An endpoint's webhook (issue 34); the secret is shown only when it is made. */
export type Webhook = Schemas["Webhook"];

/** One webhook attempt on this node. */
export type WebhookAttempt = Schemas["WebhookAttempt"];
