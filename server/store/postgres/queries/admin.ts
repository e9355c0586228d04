import {
  type EndpointFilter,
  type EndpointRow,
  likeEscape,
  type OverviewCounts,
  type RegistrationSettings,
  type TokenCursor,
  type TokenRow,
  whereClause,
} from "../../queries/admin.ts";
import type { PgReader } from "../op.ts";

// Admin reads (spec 8); the twin of server/store/queries/admin.ts. Fragments are written with
// `?` and numbered by {@link numbered} once the statement is assembled.

const SQL_SESSION = "SELECT expires_at FROM admin_sessions WHERE token_hash = $1";
const TOKEN_COLUMNS = "SELECT id, name, enabled, created_at, last_used_at FROM api_tokens";
const SQL_TOKEN_BY_HASH = `${TOKEN_COLUMNS} WHERE token_hash = $1`;
const SQL_TOKEN_BY_ID = `${TOKEN_COLUMNS} WHERE id = $1`;
const SQL_TOKENS_FIRST = `${TOKEN_COLUMNS} ORDER BY created_at DESC, id DESC LIMIT $1`;
const SQL_TOKENS_AFTER = `${TOKEN_COLUMNS} WHERE created_at < $1 OR (created_at = $1 AND id < $2)
  ORDER BY created_at DESC, id DESC LIMIT $3`;
const SQL_ENDPOINT_COLUMNS = `SELECT id, name, remark, source, enabled, online_since,
  offline_since, created_at, default_delay_ms, (talk_hash IS NOT NULL)::int AS talk_password_set,
  (session_hash IS NOT NULL)::int AS session_active FROM endpoints`;
const SQL_ENDPOINT_BY_ID = `${SQL_ENDPOINT_COLUMNS} WHERE id = $1`;
const SQL_ENDPOINT_COUNT = "SELECT count(*) AS n FROM endpoints";
const SQL_ENDPOINT_EXISTS = "SELECT 1 AS x FROM endpoints WHERE id = $1";
const SQL_ENDPOINTS_EXISTING = "SELECT id FROM endpoints WHERE id = ANY($1::text[]) ORDER BY id";
const SQL_ENDPOINT_GROUPS = "SELECT count(*) AS n FROM group_members WHERE endpoint_id = $1";
const SQL_WHERE_AFTER = "id > ?";
const SQL_WHERE_SOURCE = "source = ?";
const SQL_WHERE_ENABLED = "enabled = ?";
// ILIKE on "C"-collated columns folds ASCII only, as SQLite's LIKE does.
const SQL_WHERE_QUERY =
  "(id ILIKE ? ESCAPE '\\' OR name ILIKE ? ESCAPE '\\' OR remark ILIKE ? ESCAPE '\\')";
const SQL_OVERVIEW = `SELECT
  (SELECT count(*) FROM endpoints) AS endpoints,
  (SELECT count(*) FROM endpoints WHERE enabled = 1) AS endpoints_enabled,
  (SELECT count(*) FROM groups) AS groups,
  (SELECT count(*) FROM deliveries WHERE state = 'pending') AS pending_deliveries,
  (SELECT count(*) FROM messages WHERE state = 'scheduled') AS scheduled_messages`;
const SQL_REGISTRATION = `SELECT key, value, updated_at FROM settings
  WHERE key IN ('registration_enabled', 'registration_code')`;

/** Replaces each `?` of `sql` by `$1`, `$2`, … in order. */
export function numbered(sql: string): string {
  let n = 0;
  return sql.replace(/\?/g, () => `$${++n}`);
}

/** When the admin session with this cookie hash ends, or null. */
export async function adminSessionExpiry(r: PgReader, tokenHash: string): Promise<number | null> {
  return (await r.q<{ expires_at: number }>(SQL_SESSION, [tokenHash]))[0]?.expires_at ?? null;
}

/** The token with this SHA-256, or null. */
export async function apiTokenByHash(r: PgReader, tokenHash: string): Promise<TokenRow | null> {
  return (await r.q<TokenRow>(SQL_TOKEN_BY_HASH, [tokenHash]))[0] ?? null;
}

/** The token with this id, or null. */
export async function apiTokenById(r: PgReader, id: string): Promise<TokenRow | null> {
  return (await r.q<TokenRow>(SQL_TOKEN_BY_ID, [id]))[0] ?? null;
}

/** One page of tokens, newest first. */
export async function listApiTokens(
  r: PgReader,
  after: TokenCursor | null,
  limit: number,
): Promise<TokenRow[]> {
  const rows = after === null
    ? await r.q<TokenRow>(SQL_TOKENS_FIRST, [limit])
    : await r.q<TokenRow>(SQL_TOKENS_AFTER, [after.createdAt, after.id, limit]);
  return [...rows];
}

function endpointWhere(f: EndpointFilter): { parts: string[]; params: unknown[] } {
  const parts: string[] = [];
  const params: unknown[] = [];
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

/** One page of endpoints ordered by id after `afterId`. */
export async function listEndpoints(
  r: PgReader,
  f: EndpointFilter,
  afterId: string,
  limit: number,
): Promise<EndpointRow[]> {
  const { parts, params } = endpointWhere(f);
  if (afterId !== "") {
    parts.push(SQL_WHERE_AFTER);
    params.push(afterId);
  }
  const sql = numbered(`${SQL_ENDPOINT_COLUMNS}${whereClause(parts)} ORDER BY id LIMIT ?`);
  return [...(await r.q<EndpointRow>(sql, [...params, limit]))];
}

/** How many endpoints match `f`. */
export async function countEndpoints(r: PgReader, f: EndpointFilter): Promise<number> {
  const { parts, params } = endpointWhere(f);
  const sql = numbered(`${SQL_ENDPOINT_COUNT}${whereClause(parts)}`);
  return (await r.q<{ n: number }>(sql, params))[0].n;
}

/** One endpoint, or null. */
export async function endpointById(r: PgReader, id: string): Promise<EndpointRow | null> {
  return (await r.q<EndpointRow>(SQL_ENDPOINT_BY_ID, [id]))[0] ?? null;
}

/** Whether an endpoint with this id exists. */
export async function endpointExists(r: PgReader, id: string): Promise<boolean> {
  return (await r.q(SQL_ENDPOINT_EXISTS, [id])).length > 0;
}

/** Those of `ids` that are endpoints now, ordered by id (the CSV import's check). */
export async function existingEndpoints(r: PgReader, ids: readonly string[]): Promise<string[]> {
  if (ids.length === 0) return [];
  return (await r.q<{ id: string }>(SQL_ENDPOINTS_EXISTING, [[...ids]])).map((x) => x.id);
}

/** How many groups the endpoint is a member of. */
export async function endpointGroupCount(r: PgReader, id: string): Promise<number> {
  return (await r.q<{ n: number }>(SQL_ENDPOINT_GROUPS, [id]))[0].n;
}

/** The overview counts in one statement. */
export async function overviewCounts(r: PgReader): Promise<OverviewCounts> {
  return { ...(await r.q<OverviewCounts>(SQL_OVERVIEW))[0] };
}

/** The registration switch, code and their last change. */
export async function registrationSettings(r: PgReader): Promise<RegistrationSettings> {
  const rows = await r.q<{ key: string; value: string; updated_at: number }>(SQL_REGISTRATION);
  const out: RegistrationSettings = { enabled: false, code: "", updated_at: null };
  for (const x of rows) {
    if (x.key === "registration_enabled") out.enabled = x.value === "true";
    else out.code = x.value;
    out.updated_at = Math.max(out.updated_at ?? 0, x.updated_at);
  }
  return out;
}
