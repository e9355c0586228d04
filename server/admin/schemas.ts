/**
 * The response shapes of the admin API, each declared once (issue 32 "one schema per shape"): a
 * TypeBox schema is both the JSON Schema that server/admin/openapi.ts publishes (and the admin
 * tests validate every answer against) and, through `Static`, the type that server/admin/views.ts
 * must return. The console's types are generated from the published document
 * (web/src/api/schema.gen.ts), so all three come from here.
 *
 * The builders (server/http/json_schema.ts) keep the published JSON exactly as the hand-written
 * document had it, so docs/openapi.json did not change.
 */
import { type Static, Type } from "@sinclair/typebox";
import { DELIVERY_STATES } from "../store/ops/receipts.ts";
import {
  bool,
  closed,
  int,
  nonNegInt,
  oneOf,
  ref,
  str,
  timeMs,
  timeOrNull,
} from "../http/json_schema.ts";

/** The message states of spec 7.1, as the API names them. */
export const MESSAGE_STATES = ["scheduled", "dispatched", "completed"] as const;

export const TokenSchema = closed({
  id: str,
  name: str,
  enabled: bool,
  created_at: timeMs,
  last_used_at: timeOrNull,
});

export const EndpointSchema = closed({
  id: str,
  name: str,
  remark: str,
  source: oneOf(["admin", "self"] as const),
  enabled: bool,
  online: bool,
  online_since: timeOrNull,
  offline_since: timeOrNull,
  created_at: timeMs,
  default_delay_ms: nonNegInt,
  talk_password_set: bool,
  session_active: bool,
});

export const GroupSchema = closed({
  id: str,
  name: str,
  owner_id: str,
  members: nonNegInt,
  created_at: timeMs,
});

export const DeliveryCountsSchema = closed({
  pending: nonNegInt,
  accepted: nonNegInt,
  recalled: nonNegInt,
  expired: nonNegInt,
  dropped: nonNegInt,
  rejected: nonNegInt,
});

export const MessageRecordSchema = closed({
  seq: int,
  id: str,
  sender_id: str,
  dest_kind: oneOf(["endpoint", "group"] as const),
  dest_id: str,
  content_type: str,
  state: oneOf(MESSAGE_STATES),
  reason: str,
  send_at: timeMs,
  created_at: timeMs,
  keep: bool,
  ttl_seconds: nonNegInt,
  receipt: bool,
  counts: ref<Static<typeof DeliveryCountsSchema>>("DeliveryCounts"),
});

export const RecipientRecordSchema = closed({
  endpoint_id: str,
  state: oneOf(DELIVERY_STATES),
  reason: str,
  send_at: timeMs,
  expire_at: timeOrNull,
  pushed_at: timeOrNull,
  attempts: nonNegInt,
  updated_at: timeMs,
});

export const AuditRecordSchema = closed({
  id: int,
  at: timeMs,
  actor: Type.String({
    description: "`admin`, `token:<name>`, `cli` (the command line) or `system` (security events)",
  }),
  action: str,
  target: Type.String({ description: "the object id, or empty" }),
  result: Type.String({ description: "`ok` or an error code (security events: see docs)" }),
  ip: Type.String({ description: "the client address, or empty" }),
});

export const WebhookSchema = closed({
  endpoint_id: str,
  url: str,
  enabled: bool,
  secret_hint: Type.String({
    description: "The secret's prefix and last 4 characters; the whole secret is shown only " +
      "when it is made",
  }),
  created_at: timeMs,
  updated_at: timeMs,
});

export const WebhookAttemptSchema = closed({
  at: timeMs,
  kind: oneOf(["msg", "receipt", "revoked", "test"] as const),
  event_id: str,
  ok: bool,
  status: Type.Integer({ minimum: 0, description: "HTTP status, or 0 without an answer" }),
  error: Type.String({
    description: "Empty on success; else `http_<status>`, `timeout`, `connect_timeout`, " +
      "`refused`, `reset`, `dns`, `tls`, `address_refused` or `error`",
  }),
  ms: nonNegInt,
});

export type TokenView = Static<typeof TokenSchema>;
export type EndpointView = Static<typeof EndpointSchema>;
export type GroupView = Static<typeof GroupSchema>;
export type MessageRecordView = Static<typeof MessageRecordSchema>;
export type RecipientRecordView = Static<typeof RecipientRecordSchema>;
export type AuditRecordView = Static<typeof AuditRecordSchema>;
export type WebhookView = Static<typeof WebhookSchema>;
export type WebhookAttemptView = Static<typeof WebhookAttemptSchema>;
