import type { DatabaseSync, SQLInputValue } from "node:sqlite";
import { prepareCached } from "../db.ts";

// Admin reads on the main thread's read connection (spec 7.2, 8): sessions, API tokens,
// endpoints, overview counts and registration settings. Message and group lists are in
// admin_records.ts. Nothing here selects a hash column into a result the API could render.

const SQL_SESSION = "SELECT expires_at FROM admin_sessions WHERE token_hash = ?";
const SQL_TOKEN_BY_HASH =
  "SELECT id, name, enabled, created_at, last_used_at FROM api_tokens WHERE token_hash = ?";
const SQL_TOKEN_BY_ID =
  "SELECT id, name, enabled, created_at, last_used_at FROM api_tokens WHERE id = ?";
const SQL_TOKENS_FIRST = `SELECT id, name, enabled, created_at, last_used_at FROM api_tokens
  ORDER BY created_at DESC, id DESC LIMIT ?`;
const SQL_TOKENS_AFTER = `SELECT id, name, enabled, created_at, last_used_at FROM api_tokens
  WHERE created_at < ? OR (created_at = ? AND id < ?)
  ORDER BY created_at DESC, id DESC LIMIT ?`;
const SQL_ENDPOINT_COLUMNS = `SELECT id, name, remark, source, enabled, online_since,
  offline_since, created_at, default_delay_ms, talk_hash IS NOT NULL AS talk_password_set,
  session_hash IS NOT NULL AS session_active FROM endpoints`;
const SQL_ENDPOINT_BY_ID = `${SQL_ENDPOINT_COLUMNS} WHERE id = ?`;
const SQL_ENDPOINT_COUNT = "SELECT count(*) AS n FROM endpoints";
const SQL_ENDPOINT_EXISTS = "SELECT 1 AS x FROM endpoints WHERE id = ?";
const SQL_ENDPOINTS_EXISTING =
  "SELECT id FROM endpoints WHERE id IN (SELECT value FROM json_each(?)) ORDER BY id";
const SQL_ENDPOINT_GROUPS = "SELECT count(*) AS n FROM group_members WHERE endpoint_id = ?";
// Filter fragments of the endpoint list; the WHERE clause is built only from these.
const SQL_WHERE_AFTER = "id > ?";
const SQL_WHERE_SOURCE = "source = ?";
const SQL_WHERE_ENABLED = "enabled = ?";
const SQL_WHERE_QUERY =
  "(id LIKE ? ESCAPE '\\' OR name LIKE ? ESCAPE '\\' OR remark LIKE ? ESCAPE '\\')";
const SQL_OVERVIEW = `SELECT
  (SELECT count(*) FROM endpoints) AS endpoints,
  (SELECT count(*) FROM endpoints WHERE enabled = 1) AS endpoints_enabled,
  (SELECT count(*) FROM groups) AS groups,
  (SELECT count(*) FROM deliveries WHERE state = 'pending') AS pending_deliveries,
  (SELECT count(*) FROM messages WHERE state = 'scheduled') AS scheduled_messages`;
const SQL_REGISTRATION = `SELECT key, value, updated_at FROM settings
  WHERE key IN ('registration_enabled', 'registration_code')`;

/** Escapes `%`, `_` and `\` for a LIKE pattern with `ESCAPE '\'`. */
export function likeEscape(text: string): string {
  return text.replace(/[\\%_]/g, (c) => `\\${c}`);
}

/** Builds ` WHERE a AND b` from fragments, or "" when there are none. */
export function whereClause(parts: readonly string[]): string {
  return parts.length === 0 ? "" : ` WHERE ${parts.join(" AND ")}`;
}

/** When the admin session with this cookie hash ends, or null when there is no such session. */
export function adminSessionExpiry(db: DatabaseSync, tokenHash: string): number | null {
  const row = prepareCached(db, SQL_SESSION).get(tokenHash) as { expires_at: number } | undefined;
  return row?.expires_at ?? null;
}

/** An API token row, without its hash. */
export interface TokenRow {
  id: string;
  name: string;
  enabled: number;
  created_at: number;
  last_used_at: number | null;
}

/** The token with this SHA-256, enabled or not; null when none. */
export function apiTokenByHash(db: DatabaseSync, tokenHash: string): TokenRow | null {
  return (prepareCached(db, SQL_TOKEN_BY_HASH).get(tokenHash) as TokenRow | undefined) ?? null;
}

/** The token with this id; null when none. */
export function apiTokenById(db: DatabaseSync, id: string): TokenRow | null {
  return (prepareCached(db, SQL_TOKEN_BY_ID).get(id) as TokenRow | undefined) ?? null;
}

/** Where a token page starts: after this (created_at, id), newest first. */
export interface TokenCursor {
  createdAt: number;
  id: string;
}

/** One page of tokens, newest first; asks for `limit` rows. */
export function listApiTokens(
  db: DatabaseSync,
  after: TokenCursor | null,
  limit: number,
): TokenRow[] {
  if (after === null) {
    return prepareCached(db, SQL_TOKENS_FIRST).all(limit) as unknown as TokenRow[];
  }
  return prepareCached(db, SQL_TOKENS_AFTER)
    .all(after.createdAt, after.createdAt, after.id, limit) as unknown as TokenRow[];
}

/** An endpoint as the admin API shows it, without any hash. */
export interface EndpointRow {
  id: string;
  name: string;
  remark: string;
  /** `admin` or `self` (schema v1: "admin | self"; written only by the ops). */
  source: "admin" | "self";
  enabled: number;
  online_since: number | null;
  offline_since: number | null;
  created_at: number;
  default_delay_ms: number;
  talk_password_set: number;
  session_active: number;
}

/** Filters of the endpoint list (spec 8: `source`, plus `q` and `enabled`). */
export interface EndpointFilter {
  /** Id prefix, or name or remark substring; case-insensitive for ASCII. */
  q?: string;
  source?: "admin" | "self";
  enabled?: boolean;
}

function endpointWhere(f: EndpointFilter): { parts: string[]; params: SQLInputValue[] } {
  const parts: string[] = [];
  const params: SQLInputValue[] = [];
  if (f.q !== undefined && f.q !== "") {
    const q = likeEscape(f.q);
    parts.push(SQL_WHERE_QUERY);
    params.push(`${q}%`, `%${q}%`, `%${q}%`);
  }
  if (f.source !== undefined) {
    parts.push(SQL_WHERE_SOURCE);
    params.push(f.source);
  }
  if (f.enabled !== undefined) {
    parts.push(SQL_WHERE_ENABLED);
    params.push(f.enabled ? 1 : 0);
  }
  return { parts, params };
}

/** One page of endpoints ordered by id, starting after `afterId` (""): `limit` rows at most. */
export function listEndpoints(
  db: DatabaseSync,
  f: EndpointFilter,
  afterId: string,
  limit: number,
): EndpointRow[] {
  const { parts, params } = endpointWhere(f);
  if (afterId !== "") {
    parts.push(SQL_WHERE_AFTER);
    params.push(afterId);
  }
  const sql = `${SQL_ENDPOINT_COLUMNS}${whereClause(parts)} ORDER BY id LIMIT ?`;
  return prepareCached(db, sql).all(...params, limit) as unknown as EndpointRow[];
}

/** How many endpoints match `f`. */
export function countEndpoints(db: DatabaseSync, f: EndpointFilter): number {
  const { parts, params } = endpointWhere(f);
  const row = prepareCached(db, `${SQL_ENDPOINT_COUNT}${whereClause(parts)}`).get(...params) as {
    n: number;
  };
  return row.n;
}

/** One endpoint, or null. */
export function endpointById(db: DatabaseSync, id: string): EndpointRow | null {
  return (prepareCached(db, SQL_ENDPOINT_BY_ID).get(id) as EndpointRow | undefined) ?? null;
}

/** Whether an endpoint with this id exists. */
export function endpointExists(db: DatabaseSync, id: string): boolean {
  return prepareCached(db, SQL_ENDPOINT_EXISTS).get(id) !== undefined;
}

/** Those of `ids` that are endpoints now, ordered by id (the CSV import's check). */
export function existingEndpoints(db: DatabaseSync, ids: readonly string[]): string[] {
  if (ids.length === 0) return [];
  return (prepareCached(db, SQL_ENDPOINTS_EXISTING).all(JSON.stringify(ids)) as { id: string }[])
    .map((r) => r.id);
}

/** How many groups the endpoint is a member of. */
export function endpointGroupCount(db: DatabaseSync, id: string): number {
  return (prepareCached(db, SQL_ENDPOINT_GROUPS).get(id) as { n: number }).n;
}

/** The stored counts of `GET /api/admin/overview` and `/metrics` (spec 4.3, 8). */
export interface OverviewCounts {
  endpoints: number;
  endpoints_enabled: number;
  groups: number;
  pending_deliveries: number;
  scheduled_messages: number;
}

/** Reads the overview counts in one statement. */
export function overviewCounts(db: DatabaseSync): OverviewCounts {
  return { ...(prepareCached(db, SQL_OVERVIEW).get() as unknown as OverviewCounts) };
}

/** The registration settings (spec 8 GET /api/admin/registration). */
export interface RegistrationSettings {
  enabled: boolean;
  /** "" when none is set. */
  code: string;
  /** The later change of the two settings; null when neither was ever set. */
  updated_at: number | null;
}

/** Reads the registration switch, code and their last change. */
export function registrationSettings(db: DatabaseSync): RegistrationSettings {
  const rows = prepareCached(db, SQL_REGISTRATION).all() as {
    key: string;
    value: string;
    updated_at: number;
  }[];
  const out: RegistrationSettings = { enabled: false, code: "", updated_at: null };
  for (const r of rows) {
    if (r.key === "registration_enabled") out.enabled = r.value === "true";
    else out.code = r.value;
    out.updated_at = Math.max(out.updated_at ?? 0, r.updated_at);
  }
  return out;
}
