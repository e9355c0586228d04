/**
 * The OpenAPI 3.1 description of the admin API, the health checks, `/metrics` and the client
 * registration (issue 16). This module is the one source: `GET /api/admin/openapi.json` serves
 * it, `docs/openapi.json` is a copy that a test keeps equal (`deno task openapi` rewrites it), and
 * the admin API tests validate every response they receive against it.
 *
 * Error answers are derived from the catalogue (server/protocol/errors.ts): an operation lists
 * the codes it can answer, and each code lands under its catalogue HTTP status.
 */
import { ERROR_CODES, type ErrorCode, errorInfo } from "../protocol/mod.ts";
import { VERSION } from "../version.ts";
import { DELIVERY_STATES } from "../store/ops/receipts.ts";
import { HistoryViewSchema } from "../metrics/history_schema.ts";
import {
  INBOX_EVENT_SCHEMA,
  InboxBodySummarySchema,
  InboxFrameSchema,
  InboxHelloSchema,
  InboxLostSchema,
  InboxStateSchema,
} from "./inbox_schema.ts";
import {
  AuditRecordSchema,
  DeliveryCountsSchema,
  EndpointSchema,
  GroupSchema,
  MESSAGE_STATES,
  MessageRecordSchema,
  RecipientRecordSchema,
  TokenSchema,
  WebhookAttemptSchema,
  WebhookSchema,
} from "./schemas.ts";
import { DEFAULT_CONFIG } from "../config/config.ts";

/** A JSON Schema (2020-12, the OpenAPI 3.1 dialect) as a plain object. */
export type Schema = Record<string, unknown>;

const JSON_TYPE = "application/json";
const NDJSON_TYPE = "application/x-ndjson";

/** A reference to a component schema. */
function ref(name: string): Schema {
  return { $ref: `#/components/schemas/${name}` };
}

/** A closed object: every listed property is required unless named in `optional`. */
function obj(properties: Record<string, Schema>, optional: readonly string[] = []): Schema {
  return {
    type: "object",
    properties,
    required: Object.keys(properties).filter((k) => !optional.includes(k)),
    additionalProperties: false,
  };
}

const str: Schema = { type: "string" };
/** An id (spec 6.1): 1–64 of A–Z a–z 0–9 _ . -, not only dots (isValidId). */
const idStr: Schema = { type: "string", pattern: "^(?!\\.+$)[A-Za-z0-9_.-]{1,64}$" };
/** A name or an id the handler only bounds in length (1–64 characters). */
const name64: Schema = { type: "string", minLength: 1, maxLength: 64 };
/** A PATCH-like body: at least one of its optional fields (requireSome). */
/** An endpoint's default delay: at most `limits.max_schedule_seconds` (default 365 days). */
const delayMs: Schema = {
  type: "integer",
  minimum: 0,
  maximum: DEFAULT_CONFIG.limits.max_schedule_seconds * 1000,
};
const someOf = (schema: Schema): Schema => ({ ...schema, minProperties: 1 });
const int: Schema = { type: "integer" };
const nonNegInt: Schema = { type: "integer", minimum: 0 };
const bool: Schema = { type: "boolean" };
const timeMs: Schema = { type: "integer", description: "Unix milliseconds" };
const timeOrNull: Schema = { type: ["integer", "null"], description: "Unix milliseconds or null" };
const empty: Schema = obj({});
const arr = (items: Schema): Schema => ({ type: "array", items });

/** `{"ok":true,"data":…}`. */
function okOf(data: Schema): Schema {
  return obj({ ok: { const: true }, data });
}

/** A cursor page; `total` when the route counts its rows. */
function page(item: Schema, total = false): Schema {
  const p: Record<string, Schema> = { items: arr(item), next_cursor: str };
  if (total) p.total = nonNegInt;
  return obj(p);
}

/** The reusable shapes (docs/admin-api.md, server/admin/views.ts). */
const SCHEMAS: Record<string, Schema> = {
  ErrorCode: { type: "string", enum: [...ERROR_CODES] },
  Error: obj({
    ok: { const: false },
    error: obj({ code: ref("ErrorCode"), message: str, data: { type: "object" } }, ["data"]),
  }),
  Token: TokenSchema,
  Endpoint: EndpointSchema,
  Group: GroupSchema,
  MemberFailure: obj({ id: str, code: ref("ErrorCode") }),
  DeliveryCounts: DeliveryCountsSchema,
  MessageRecord: MessageRecordSchema,
  RecipientRecord: RecipientRecordSchema,
  Registration: obj({ enabled: bool, code: str, updated_at: timeOrNull }),
  Target: obj({ kind: { enum: ["endpoint", "group"] }, id: idStr }),
  SendRequest: {
    ...obj({
      id: { ...idStr, description: "1–64 of A–Z a–z 0–9 _ . -; omitted = a new UUIDv7" },
      to: ref("Target"),
      body: obj({
        enc: { enum: ["utf8", "base64"] },
        content_type: { type: "string", maxLength: 128 },
        data: str,
      }, ["content_type"]),
      meta: { type: "object", additionalProperties: true },
      delay_ms: nonNegInt,
      send_at_ms: nonNegInt,
      offline: obj({ keep: bool, ttl_seconds: nonNegInt }, ["keep", "ttl_seconds"]),
      receipt: bool,
      talk_password: str,
    }, ["id", "meta", "delay_ms", "send_at_ms", "offline", "receipt", "talk_password"]),
    description: "The fields of the MQTT `send` frame without `v`, `type` and `rid` " +
      "(docs/protocol.md). At most one of `delay_ms` and `send_at_ms`.",
  },
  SendResult: obj({ id: str, send_at_ms: timeMs, state: { enum: [...MESSAGE_STATES] } }),
  MessageStatus: obj({
    id: str,
    state: { enum: [...MESSAGE_STATES] },
    reason: str,
    send_at_ms: timeMs,
    counts: ref("DeliveryCounts"),
    items: arr(obj({ endpoint_id: str, state: { enum: [...DELIVERY_STATES] }, reason: str })),
    next_cursor: str,
  }),
  RecallResult: obj({
    result: { enum: ["recalled", "partial", "failed"] },
    recalled: nonNegInt,
    accepted: nonNegInt,
    other: nonNegInt,
  }),
  ImportResult: obj({
    created: nonNegInt,
    items: arr(obj({ row: int, id: str, login_password: str }, ["login_password"])),
  }),
  AuditRecord: AuditRecordSchema,
  Webhook: WebhookSchema,
  WebhookAttempt: WebhookAttemptSchema,
  MetricsHistory: HistoryViewSchema,
  InboxHello: InboxHelloSchema,
  InboxFrame: InboxFrameSchema,
  InboxState: InboxStateSchema,
  InboxLost: InboxLostSchema,
  InboxBodySummary: InboxBodySummarySchema,
  ImportRowProblems: obj({ rows: arr(obj({ row: int, column: str, message: str })) }),
};

/** Who may call a route (docs/admin-api.md "Authentication"). */
type Guard = "open" | "admin" | "session" | "none";

/** One row of an operation's error list: the codes, and the status when not the catalogue's. */
type ErrorRow = ErrorCode | [number, ErrorCode];

interface OpSpec {
  summary: string;
  guard: Guard;
  tag: string;
  description?: string;
  query?: Record<string, { schema: Schema; description: string }>;
  body?: Schema;
  /** Content types other than JSON for the request body. */
  bodyContent?: Record<string, Schema>;
  ok: Schema;
  /** Extra content types of the 200 answer, beside JSON. */
  okContent?: Record<string, Schema>;
  /** Codes beyond the ones every route of its guard can answer. */
  errors?: ErrorRow[];
  /** The 200 answer is not JSON (metrics). */
  okRaw?: Record<string, Schema>;
  /** Extra responses, by status. */
  extra?: Record<string, unknown>;
}

/** The page query of a list whose cursor is a row number (messages, audit). */
const SEQ_PAGE_QUERY = {
  cursor: {
    schema: { type: "string", pattern: "^[0-9]{0,16}$" },
    description: "`next_cursor` of the previous page; empty = first",
  },
  limit: {
    schema: { type: "integer", minimum: 1, maximum: 200 },
    description: "1–200, default 50",
  },
};

const PAGE_QUERY = {
  cursor: { schema: str, description: "`next_cursor` of the previous page; empty = first" },
  limit: {
    schema: { type: "integer", minimum: 1, maximum: 200 },
    description: "1–200, default 50",
  },
};

/** The errors every route of a guard can answer, before its own. */
function guardErrors(guard: Guard, hasBody: boolean, method: string): ErrorRow[] {
  const rows: ErrorRow[] = ["busy", [500, "busy"]];
  // spec 4.3: a listener that does not serve the route's scope answers 404.
  if (guard !== "none") rows.push("not_found");
  if (guard === "admin" || guard === "session") rows.push("unauthorized", "rate_limited");
  if (guard !== "none" && method !== "get") rows.push("forbidden");
  if (guard === "session") rows.push("forbidden");
  if (hasBody) rows.push("bad_request", [413, "bad_request"]);
  return rows;
}

/** Groups error rows by HTTP status into responses whose `code` is limited to those codes. */
function errorResponses(rows: ErrorRow[]): Record<string, unknown> {
  const byStatus = new Map<number, Set<ErrorCode>>();
  for (const row of rows) {
    const [status, code] = typeof row === "string" ? [errorInfo(row).status, row] : row;
    if (!byStatus.has(status)) byStatus.set(status, new Set());
    byStatus.get(status)!.add(code);
  }
  const out: Record<string, unknown> = {};
  for (const [status, codes] of [...byStatus].sort((a, b) => a[0] - b[0])) {
    const list = [...codes].sort((a, b) => ERROR_CODES.indexOf(a) - ERROR_CODES.indexOf(b));
    out[String(status)] = {
      description: `Error: ${list.map((c) => `\`${c}\``).join(", ")}`,
      content: {
        [JSON_TYPE]: {
          schema: {
            allOf: [ref("Error")],
            type: "object",
            properties: { error: { type: "object", properties: { code: { enum: list } } } },
          },
        },
      },
    };
  }
  return out;
}

const SECURITY: Record<Guard, unknown[] | undefined> = {
  open: [],
  none: [],
  admin: [{ sessionCookie: [] }, { apiToken: [] }],
  session: [{ sessionCookie: [] }],
};

function operation(method: string, path: string, spec: OpSpec): Record<string, unknown> {
  const params: unknown[] = [];
  for (const m of path.matchAll(/\{(\w+)\}/g)) {
    // A message id is checked like every id (spec 6.1); other path ids are looked up (404).
    const schema = m[1] === "msgId" ? idStr : str;
    params.push({ name: m[1], in: "path", required: true, schema });
  }
  for (const [name, q] of Object.entries(spec.query ?? {})) {
    params.push({
      name,
      in: "query",
      required: false,
      schema: q.schema,
      description: q.description,
    });
  }
  const hasBody = spec.body !== undefined || spec.bodyContent !== undefined;
  const errors = [...guardErrors(spec.guard, hasBody, method), ...(spec.errors ?? [])];
  if (params.length > 0) errors.push("bad_request");
  const okContent: Record<string, unknown> = spec.okRaw !== undefined
    ? Object.fromEntries(Object.entries(spec.okRaw).map(([t, s]) => [t, { schema: s }]))
    : { [JSON_TYPE]: { schema: okOf(spec.ok) } };
  for (const [t, s] of Object.entries(spec.okContent ?? {})) okContent[t] = { schema: s };
  const op: Record<string, unknown> = {
    operationId: `${method}${
      path.replace(/[^A-Za-z0-9]+(.)?/g, (_, c) => (c ?? "").toUpperCase())
    }`,
    summary: spec.summary,
    tags: [spec.tag],
  };
  if (spec.description !== undefined) op.description = spec.description;
  if (params.length > 0) op.parameters = params;
  if (hasBody) {
    const content: Record<string, unknown> = {};
    if (spec.body !== undefined) content[JSON_TYPE] = { schema: spec.body };
    for (const [t, s] of Object.entries(spec.bodyContent ?? {})) content[t] = { schema: s };
    // Required when the body must carry a field; an empty body then gets 400 `bad_request`.
    const body = spec.body as
      | { $ref?: string; required?: unknown[]; minProperties?: number }
      | undefined;
    const needed = spec.bodyContent !== undefined || body?.$ref !== undefined ||
      (body?.required?.length ?? 0) > 0 || (body?.minProperties ?? 0) > 0;
    op.requestBody = { required: needed, content };
  }
  op.responses = {
    "200": { description: "Success", content: okContent },
    ...errorResponses(errors),
    ...spec.extra,
  };
  const security = SECURITY[spec.guard];
  if (security !== undefined) op.security = security;
  if (spec.guard === "session" || spec.guard === "admin" || spec.guard === "open") {
    op["x-nixmsg-guard"] = spec.guard;
  }
  return op;
}

const A = "/api/admin";
const ID_Q = (description: string) => ({ schema: str, description });
const TEXT_Q = (max: number, description: string) => ({
  schema: { type: "string", maxLength: max },
  description,
});
const BOOL_Q = (description: string) => ({ schema: { enum: ["true", "false"] }, description });
const TIME_Q = (description: string) => ({
  schema: { type: "string", pattern: "^[0-9]{0,16}$" },
  description: `${description}; empty = no bound`,
});

/** Every operation: `[method, path, spec]`, paths in OpenAPI `{name}` form. */
const OPERATIONS: [string, string, OpSpec][] = [
  // Session
  ["post", `${A}/login`, {
    tag: "session",
    guard: "open",
    summary: "Log in with the admin password; sets the session cookie",
    body: obj({ username: str, password: str }),
    ok: obj({ username: { const: "admin" }, expires_at: timeMs }),
    errors: ["unauthorized", "rate_limited"],
  }],
  ["post", `${A}/logout`, {
    tag: "session",
    guard: "open",
    summary: "End the cookie's session and clear the cookie",
    body: empty,
    ok: empty,
  }],
  ["get", `${A}/me`, {
    tag: "session",
    guard: "admin",
    summary: "Who is calling",
    ok: {
      oneOf: [
        obj({ username: { const: "admin" }, auth: { const: "session" }, expires_at: timeMs }),
        obj({
          username: { const: "admin" },
          auth: { const: "token" },
          token: obj({ id: str, name: str }),
        }),
      ],
    },
  }],
  ["post", `${A}/password`, {
    tag: "session",
    guard: "session",
    summary: "Change the admin password; other sessions end",
    body: obj({ old_password: str, new_password: { type: "string", minLength: 12 } }),
    ok: empty,
  }],
  ["get", `${A}/metrics/history`, {
    tag: "settings",
    guard: "admin",
    summary: "The last hour of the server's own figures, one sample every 10 s (live overview)",
    query: {
      since: { schema: nonNegInt, description: "Unix ms: only samples newer than this" },
    },
    ok: ref("MetricsHistory"),
  }],
  ["get", `${A}/overview`, {
    tag: "settings",
    guard: "admin",
    summary: "Counts and version",
    ok: obj({
      version: str,
      server_time: timeMs,
      endpoints: nonNegInt,
      endpoints_enabled: nonNegInt,
      groups: nonNegInt,
      pending_deliveries: nonNegInt,
      scheduled_messages: nonNegInt,
      online: nonNegInt,
      connections: obj({ ws: nonNegInt, tcp: nonNegInt }),
    }),
  }],
  ["get", `${A}/nodes`, {
    tag: "settings",
    guard: "admin",
    summary: "The nodes' leases in the store (issue 30); empty for a single node",
    ok: obj({
      server_time: timeMs,
      this_node: str,
      // The node that answers, from its own memory: shown by the console when `nodes` is empty.
      local: obj({
        id: str,
        address: str,
        version: str,
        started_at: timeMs,
        connections: nonNegInt,
      }),
      nodes: arr(obj({
        id: str,
        address: str,
        version: str,
        started_at: timeMs,
        renewed_at: timeMs,
        lease_until: timeMs,
        alive: bool,
        connections: nonNegInt,
      })),
    }),
  }],
  ["get", `${A}/settings`, {
    tag: "settings",
    guard: "admin",
    summary: "The running configuration without secrets",
    ok: obj({
      listen: str,
      admin_listen: str,
      listen_bound: str,
      admin_listen_bound: str,
      tls: obj({ enabled: bool, cert_file: str, key_file: str, allow_plaintext: bool }),
      trusted_proxies: arr(str),
      data_dir: str,
      // Every limits key, from the one declaration of the defaults.
      limits: obj(Object.fromEntries(
        Object.keys(DEFAULT_CONFIG.limits).map((k) => [k, { type: "number" }]),
      )),
      session_idle_days: { type: "number" },
      record_retention_days: { type: "number" },
      idempotency_hours: { type: "number" },
      receipt_retention_days: { type: "number" },
      audit_retention_days: { type: "number" },
      sqlite_synchronous: str,
      metrics: obj({ token_set: bool }),
      log: obj({ level: str }),
      // issue 28: the per-account lock of the admin password.
      admin_lockout: obj({ locked_until: timeOrNull, last_locked_at: timeOrNull }),
    }),
  }],
  // Tokens
  ["get", `${A}/tokens`, {
    tag: "tokens",
    guard: "session",
    summary: "List API tokens, newest first",
    query: {
      ...PAGE_QUERY,
      cursor: {
        schema: { type: "string", pattern: "^$|^[0-9]{1,16}\\..+$" },
        description: "`next_cursor` of the previous page (`<created_at>.<id>`); empty = first",
      },
    },
    ok: page(ref("Token")),
  }],
  ["post", `${A}/tokens`, {
    tag: "tokens",
    guard: "session",
    summary: "Create an API token; the token is in this answer only",
    body: obj({ name: { type: "string", minLength: 1, maxLength: 64 } }),
    ok: obj({ token: { type: "string", pattern: "^nxm_" }, item: ref("Token") }),
    errors: ["conflict"],
  }],
  ["patch", `${A}/tokens/{id}`, {
    tag: "tokens",
    guard: "session",
    summary: "Rename, enable or disable a token",
    body: someOf(obj({ name: name64, enabled: bool }, ["name", "enabled"])),
    ok: obj({ item: ref("Token") }),
    errors: ["not_found", "conflict"],
  }],
  ["delete", `${A}/tokens/{id}`, {
    tag: "tokens",
    guard: "session",
    summary: "Delete a token",
    ok: empty,
    errors: ["not_found"],
  }],
  // Endpoints
  ["get", `${A}/endpoints`, {
    tag: "endpoints",
    guard: "admin",
    summary: "List endpoints by id",
    query: {
      q: ID_Q("id starts with, or name or remark contains"),
      source: { schema: { enum: ["admin", "self"] }, description: "who created it" },
      enabled: BOOL_Q("enabled or disabled only"),
      ...PAGE_QUERY,
    },
    ok: page(ref("Endpoint"), true),
  }],
  ["post", `${A}/endpoints`, {
    tag: "endpoints",
    guard: "admin",
    summary: "Create one endpoint; a generated password is in this answer only",
    body: obj({
      id: str,
      name: str,
      remark: str,
      login_password: {
        anyOf: [{ type: "string", maxLength: 0 }, { type: "string", minLength: 8, maxLength: 128 }],
        description: "8–128 characters, not starting with `nst_`; empty = generated",
        not: { type: "string", pattern: "^nst_" },
      },
      talk_password: { type: "string", maxLength: 128 },
      default_delay_ms: delayMs,
    }, ["id", "name", "remark", "login_password", "talk_password", "default_delay_ms"]),
    ok: obj({ item: ref("Endpoint"), login_password: str }, ["login_password"]),
    errors: ["id_taken"],
  }],
  ["post", `${A}/endpoints/import`, {
    tag: "endpoints",
    guard: "admin",
    summary: "Create up to 1000 endpoints from CSV, all or nothing",
    description: "With `Accept: application/x-ndjson` the answer is one JSON object a line: " +
      "`progress` lines, then one `result` line.",
    bodyContent: { "text/csv": { type: "string", minLength: 1 } },
    ok: ref("ImportResult"),
    okContent: {
      [NDJSON_TYPE]: {
        description: "One line",
        oneOf: [
          obj({ type: { const: "progress" }, done: nonNegInt, total: nonNegInt }),
          obj({ type: { const: "result" }, ok: { const: true }, data: ref("ImportResult") }),
          obj({
            type: { const: "result" },
            ok: { const: false },
            error: obj({
              code: ref("ErrorCode"),
              message: str,
              data: ref("ImportRowProblems"),
            }, ["data"]),
          }),
        ],
      },
    },
    errors: ["id_taken"],
  }],
  ["post", `${A}/endpoints/batch`, {
    tag: "endpoints",
    guard: "admin",
    summary: "Disable, enable or delete many endpoints",
    body: obj({
      action: { enum: ["disable", "enable", "delete"] },
      ids: { type: "array", items: idStr, minItems: 1, maxItems: 1000, uniqueItems: true },
    }),
    ok: obj({
      items: arr({
        oneOf: [
          obj({ id: str, ok: { const: true } }),
          obj({
            id: str,
            ok: { const: false },
            error: obj({ code: ref("ErrorCode"), message: str }),
          }),
        ],
      }),
    }),
  }],
  ["get", `${A}/endpoints/{id}`, {
    tag: "endpoints",
    guard: "admin",
    summary: "One endpoint",
    ok: obj({ item: ref("Endpoint"), groups: nonNegInt, login_paused_until: timeOrNull }),
    errors: ["not_found"],
  }],
  ["patch", `${A}/endpoints/{id}`, {
    tag: "endpoints",
    guard: "admin",
    summary: "Change name, remark, default delay, enabled",
    body: someOf(obj(
      { name: str, remark: str, default_delay_ms: delayMs, enabled: bool },
      ["name", "remark", "default_delay_ms", "enabled"],
    )),
    ok: obj({ item: ref("Endpoint") }),
    errors: ["not_found"],
  }],
  ["delete", `${A}/endpoints/{id}`, {
    tag: "endpoints",
    guard: "admin",
    summary: "Delete an endpoint",
    ok: empty,
    errors: ["not_found"],
  }],
  ["post", `${A}/endpoints/{id}/kick`, {
    tag: "endpoints",
    guard: "admin",
    summary: "Disconnect the endpoint (it may reconnect)",
    ok: obj({ kicked: bool }),
    errors: ["not_found"],
  }],
  ["post", `${A}/endpoints/{id}/reset-login-password`, {
    tag: "endpoints",
    guard: "admin",
    summary: "New random login password, in this answer only",
    body: empty,
    ok: obj({ login_password: str }),
    errors: ["not_found"],
  }],
  ["post", `${A}/endpoints/{id}/unlock`, {
    tag: "endpoints",
    guard: "admin",
    summary: "Clear the endpoint's login lockouts",
    body: empty,
    ok: empty,
    errors: ["not_found"],
  }],
  ["get", `${A}/endpoints/{id}/inbox`, {
    tag: "messages",
    guard: "admin",
    summary: "Live inbox: a Server-Sent Events stream of the frames pushed to this endpoint",
    description: "Read-only: it never acks or consumes. Events `hello` {stream, endpoint_id, " +
      "online}, `frame` {n, at, qos, type, frame, body, bytes} with every `body` and `meta` " +
      "withheld (`body` is a summary {enc, content_type, length} or null), `state` {n, at, " +
      "online}, `lost` {count}. See docs/admin-api.md.",
    okRaw: { "text/event-stream": INBOX_EVENT_SCHEMA },
    ok: empty,
    errors: ["not_found", "busy"],
  }],
  ["get", `${A}/endpoints/{id}/inbox/{stream}/{n}`, {
    tag: "messages",
    guard: "admin",
    summary: "Open one message body seen by a live inbox stream (plain text, audited)",
    okRaw: { "text/plain": str },
    ok: empty,
    errors: ["not_found"],
  }],
  ["post", `${A}/endpoints/{id}/messages`, {
    tag: "messages",
    guard: "admin",
    summary: "Send a message on behalf of the endpoint",
    description: "The body is the MQTT `send` frame's fields; the answer is its `resp.data`. " +
      "Same rules as MQTT: idempotency by (sender, id), talk passwords, quotas, the sender's " +
      "rate bucket. Without `id` the server makes a UUIDv7, so a repeat without an id is a new " +
      "message. Receipts go to the sender's MQTT connection, or to its webhook while it has none.",
    body: ref("SendRequest"),
    ok: ref("SendResult"),
    errors: [
      "not_found",
      "endpoint_disabled",
      "invalid_target",
      "conflict",
      "body_too_large",
      "meta_too_large",
      "frame_too_large",
      "talk_password_required",
      "talk_password_invalid",
      "rate_limited",
      "not_member",
      "quota_exceeded",
    ],
  }],
  ["get", `${A}/endpoints/{id}/messages/{msgId}`, {
    tag: "messages",
    guard: "admin",
    summary: "Status of a message the endpoint sent (the `status` frame's data)",
    query: {
      cursor: PAGE_QUERY.cursor,
      limit: { schema: PAGE_QUERY.limit.schema, description: "1–200, default 100" },
    },
    ok: ref("MessageStatus"),
    errors: ["not_found", "endpoint_disabled"],
  }],
  ["post", `${A}/endpoints/{id}/messages/{msgId}/recall`, {
    tag: "messages",
    guard: "admin",
    summary: "Recall a message the endpoint sent (the `recall` frame's data)",
    ok: ref("RecallResult"),
    errors: ["not_found", "endpoint_disabled"],
  }],
  ["get", `${A}/endpoints/{id}/webhook`, {
    tag: "endpoints",
    guard: "admin",
    summary:
      "The endpoint's webhook (null while it has none) and its last attempts on this node (never the secret)",
    ok: obj({
      item: { anyOf: [ref("Webhook"), { type: "null" }] },
      recent: arr(ref("WebhookAttempt")),
    }),
    errors: ["not_found"],
  }],
  ["put", `${A}/endpoints/{id}/webhook`, {
    tag: "endpoints",
    guard: "admin",
    summary: "Create or change the endpoint's webhook; a new secret is in this answer only",
    description: "`url`: http:// or https://, checked against the SSRF rule (config " +
      "`webhooks.allow`) with DNS now and again on every connect. `enabled` defaults to true. " +
      "`secret` is present when the webhook was created or `rotate_secret` was true. " +
      'See docs/protocol.md "Webhooks".',
    body: obj({
      url: { type: "string", minLength: 8, maxLength: 2048, pattern: "^https?://\\S+$" },
      enabled: bool,
      rotate_secret: bool,
    }, ["enabled", "rotate_secret"]),
    ok: obj({ item: ref("Webhook"), secret: str }, ["secret"]),
    errors: ["not_found"],
  }],
  ["delete", `${A}/endpoints/{id}/webhook`, {
    tag: "endpoints",
    guard: "admin",
    summary: "Delete the endpoint's webhook; its events wait for an MQTT session again",
    ok: empty,
    errors: ["not_found"],
  }],
  ["post", `${A}/endpoints/{id}/webhook/test`, {
    tag: "endpoints",
    guard: "admin",
    summary: "POST one signed `test` event to the webhook now and tell how it went",
    ok: obj({ attempt: ref("WebhookAttempt") }),
    errors: ["not_found"],
  }],
  ["put", `${A}/endpoints/{id}/talk-password`, {
    tag: "endpoints",
    guard: "admin",
    summary: 'Set or clear ("") the talk password; earlier grants stop working',
    body: obj({ talk_password: { type: "string", maxLength: 128 } }),
    ok: obj({ item: ref("Endpoint") }),
    errors: ["not_found"],
  }],
  // Registration
  ["get", `${A}/registration`, {
    tag: "registration",
    guard: "admin",
    summary: "Registration switch and code",
    ok: ref("Registration"),
  }],
  ["put", `${A}/registration`, {
    tag: "registration",
    guard: "admin",
    summary: "Change the registration switch or code",
    body: {
      ...someOf(obj(
        { enabled: bool, code: { type: "string", minLength: 8, maxLength: 64 }, generate: bool },
        ["enabled", "code", "generate"],
      )),
      // `generate: true` makes the code: giving one as well is refused.
      not: {
        properties: { code: { type: "string" }, generate: { const: true } },
        required: ["code", "generate"],
      },
    },
    ok: ref("Registration"),
  }],
  // Groups
  ["get", `${A}/groups`, {
    tag: "groups",
    guard: "admin",
    summary: "List groups by id",
    query: {
      q: ID_Q("id starts with or name contains"),
      member: ID_Q("groups this endpoint is in"),
      ...PAGE_QUERY,
    },
    ok: page(ref("Group"), true),
  }],
  ["post", `${A}/groups`, {
    tag: "groups",
    guard: "admin",
    summary: "Create a group; members that cannot join are listed in `failed`",
    body: obj(
      {
        id: { type: "string", pattern: "^$|^(?!\\.+$)[A-Za-z0-9_.-]{1,64}$" },
        name: name64,
        owner_id: name64,
        members: { ...arr(idStr), uniqueItems: true },
      },
      ["id", "members"],
    ),
    ok: obj({ item: ref("Group"), failed: arr(ref("MemberFailure")) }),
    errors: ["id_taken", "not_found", "endpoint_disabled"],
  }],
  ["get", `${A}/groups/{id}`, {
    tag: "groups",
    guard: "admin",
    summary: "One group with a page of its members",
    query: PAGE_QUERY,
    ok: obj({
      item: ref("Group"),
      items: arr(obj({ id: str, name: str, online: bool, joined_at: timeMs })),
      next_cursor: str,
    }),
    errors: ["not_found"],
  }],
  ["patch", `${A}/groups/{id}`, {
    tag: "groups",
    guard: "admin",
    summary: "Rename a group",
    body: obj({ name: { type: "string", minLength: 1, maxLength: 64 } }),
    ok: obj({ item: ref("Group") }),
    errors: ["not_found"],
  }],
  ["delete", `${A}/groups/{id}`, {
    tag: "groups",
    guard: "admin",
    summary: "Dissolve a group",
    ok: empty,
    errors: ["not_found"],
  }],
  ["post", `${A}/groups/{id}/members`, {
    tag: "groups",
    guard: "admin",
    summary: "Add members (no talk password needed)",
    body: obj({
      members: { type: "array", items: idStr, minItems: 1, maxItems: 1000, uniqueItems: true },
    }),
    ok: obj({ added: arr(str), failed: arr(ref("MemberFailure")) }),
    errors: ["not_found", "group_full"],
  }],
  ["delete", `${A}/groups/{id}/members/{endpointId}`, {
    tag: "groups",
    guard: "admin",
    summary: "Remove a member (not the owner)",
    ok: empty,
    errors: ["not_found", "not_member"],
  }],
  ["post", `${A}/groups/{id}/transfer`, {
    tag: "groups",
    guard: "admin",
    summary: "Make another member the owner",
    body: obj({ endpoint_id: name64 }),
    ok: obj({ item: ref("Group") }),
    errors: ["not_found", "not_member"],
  }],
  // Message records
  ["get", `${A}/messages`, {
    tag: "records",
    guard: "admin",
    summary: "List message records, newest first (never the body)",
    query: {
      sender: ID_Q("exact sender id"),
      dest: ID_Q("exact destination id"),
      dest_kind: { schema: { enum: ["endpoint", "group"] }, description: "destination kind" },
      recipient: ID_Q("messages with a delivery to this endpoint"),
      id: ID_Q("exact message id"),
      state: {
        schema: {
          type: "string",
          pattern: "^$|^(scheduled|dispatched|completed)(,(scheduled|dispatched|completed))*$",
        },
        description: "one state or several separated by commas",
      },
      from: TIME_Q("created_at ≥ this (Unix ms)"),
      to: TIME_Q("created_at < this (Unix ms)"),
      ...SEQ_PAGE_QUERY,
    },
    ok: page(ref("MessageRecord")),
  }],
  ["get", `${A}/messages/{seq}`, {
    tag: "records",
    guard: "admin",
    summary: "One message record with a page of per-recipient results",
    query: PAGE_QUERY,
    ok: obj({ item: ref("MessageRecord"), items: arr(ref("RecipientRecord")), next_cursor: str }),
    errors: ["not_found"],
  }],
  // Audit log
  ["get", `${A}/audit`, {
    tag: "records",
    guard: "admin",
    summary: "List the audit log (操作日志), newest first",
    query: {
      from: TIME_Q("at ≥ this (Unix ms)"),
      to: TIME_Q("at < this (Unix ms)"),
      actor: TEXT_Q(128, "exact actor: `admin`, `token:<name>`, `cli`, `system`"),
      action: TEXT_Q(64, "exact action, or a family: `endpoint` matches every `endpoint.*`"),
      target: TEXT_Q(256, "exact object id"),
      result: TEXT_Q(64, "exact result: `ok` or an error code"),
      ...SEQ_PAGE_QUERY,
    },
    ok: page(ref("AuditRecord")),
  }],
  ["get", `${A}/openapi.json`, {
    tag: "meta",
    guard: "none",
    summary: "This document",
    errors: ["not_found"],
    okRaw: {
      [JSON_TYPE]: {
        type: "object",
        properties: { openapi: { const: "3.1.0" }, paths: { type: "object" } },
        required: ["openapi", "paths"],
      },
    },
    ok: empty,
  }],
  // Outside /api/admin
  ["get", "/healthz", {
    tag: "health",
    guard: "none",
    summary: "200 while the process runs (every listener)",
    okRaw: { [JSON_TYPE]: obj({ ok: { const: true } }) },
    ok: empty,
  }],
  ["get", "/readyz", {
    tag: "health",
    guard: "none",
    summary: "200 while the database can be used, else 503 `busy` (every listener)",
    okRaw: { [JSON_TYPE]: obj({ ok: { const: true } }) },
    ok: empty,
  }],
  ["get", "/metrics", {
    tag: "health",
    guard: "none",
    summary: "Prometheus metrics",
    description: "With `admin_listen` set: served there without authentication. On a shared " +
      "port: needs `Authorization: Bearer <metrics.token>`; no token configured = 404.",
    okRaw: { "text/plain": str },
    ok: empty,
    errors: ["not_found", "unauthorized"],
  }],
  ["post", "/api/client/register", {
    tag: "registration",
    guard: "none",
    summary: "Self-registration of a new endpoint (spec 6.9; served on `listen` only, CORS open)",
    body: obj({
      registration_code: str,
      id: str,
      login_password: str,
      name: str,
      talk_password: str,
    }, ["id", "login_password", "name", "talk_password"]),
    ok: obj({ id: str, login_password: str }, ["login_password"]),
    errors: [
      "not_found",
      "registration_closed",
      "registration_code_invalid",
      "id_taken",
      "rate_limited",
    ],
  }],
  ["options", "/api/client/register", {
    tag: "registration",
    guard: "none",
    summary: "CORS preflight of the registration",
    errors: ["not_found"],
    okRaw: {},
    ok: empty,
    extra: { "204": { description: "CORS headers, no body" } },
  }],
];

/** Builds the document. Pure: the same value on every call. */
export function openApiDocument(): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const [method, path, spec] of OPERATIONS) {
    const op = operation(method, path, spec);
    if (method === "options") {
      const responses = op.responses as Record<string, unknown>;
      delete responses["200"];
    }
    (paths[path] ??= {})[method] = op;
  }
  return {
    openapi: "3.1.0",
    info: {
      title: "NixMsg admin API",
      version: VERSION,
      license: { name: "NixMsg Proprietary License", identifier: "LicenseRef-NixMsg-Proprietary" },
      description: "The HTTP API of the NixMsg console and of back ends (docs/admin-api.md). " +
        'Every JSON answer is `{"ok":true,"data":…}` or `{"ok":false,"error":{"code",' +
        '"message"}}`. Times are Unix milliseconds. A cookie-authenticated request other than ' +
        "GET or HEAD must carry `X-Nixmsg-Request: 1`.",
    },
    jsonSchemaDialect: "https://spec.openapis.org/oas/3.1/dialect/base",
    // Relative: the document describes the server that serves it (`listen` or `admin_listen`).
    servers: [{ url: "/", description: "The server that serves this document" }],
    components: {
      schemas: SCHEMAS,
      securitySchemes: {
        sessionCookie: { type: "apiKey", in: "cookie", name: "nixmsg_admin" },
        apiToken: { type: "http", scheme: "bearer", description: "An API token, `nxm_…`" },
      },
    },
    paths,
  };
}

/** The document as served and as stored in docs/openapi.json: 2-space JSON plus a newline. */
export function openApiText(): string {
  return JSON.stringify(openApiDocument(), null, 2) + "\n";
}
