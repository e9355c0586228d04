import type {
  CreateSessionArgs,
  CreateTokenArgs,
  RegistrationArgs,
  UpdateEndpointArgs,
  UpdateTokenArgs,
} from "../../ops/admin.ts";
import type { CreateEndpointArgs } from "../../ops/endpoints.ts";
import { OpError } from "../../op_error.ts";
import { crashPoint } from "../../../config/crash_point.ts";
import type { PgTx } from "../op.ts";
import { createEndpoint } from "./endpoints.ts";

// Admin writes (spec 8); the twin of server/store/ops/admin.ts.

const SQL_SESSION_PRUNE = "DELETE FROM admin_sessions WHERE expires_at <= $1";
const SQL_SESSION_INSERT =
  "INSERT INTO admin_sessions (token_hash, created_at, expires_at) VALUES ($1, $2, $3)";
const SQL_SESSION_DELETE = "DELETE FROM admin_sessions WHERE token_hash = $1";
const SQL_SESSION_DELETE_OTHERS = "DELETE FROM admin_sessions WHERE token_hash <> $1";
const SQL_UPSERT_SETTING = `INSERT INTO settings (key, value, updated_at) VALUES ($1, $2, $3)
  ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`;
const SQL_TOKEN_NAME_TAKEN = "SELECT 1 AS x FROM api_tokens WHERE name = $1 AND id <> $2";
const SQL_TOKEN_INSERT = `INSERT INTO api_tokens (id, name, token_hash, enabled, created_at)
  VALUES ($1, $2, $3, 1, $4)`;
const SQL_TOKEN_EXISTS = "SELECT 1 AS x FROM api_tokens WHERE id = $1";
const SQL_TOKEN_RENAME = "UPDATE api_tokens SET name = $1 WHERE id = $2";
const SQL_TOKEN_ENABLE = "UPDATE api_tokens SET enabled = $1 WHERE id = $2";
const SQL_TOKEN_DELETE = "DELETE FROM api_tokens WHERE id = $1";
const SQL_TOKEN_TOUCH = `UPDATE api_tokens SET last_used_at = $1
  WHERE id = $2 AND (last_used_at IS NULL OR last_used_at < $1)`;
const SQL_ENDPOINTS_EXISTING = "SELECT id FROM endpoints WHERE id = ANY($1::text[])";
const SQL_ENDPOINT_EXISTS = "SELECT 1 AS x FROM endpoints WHERE id = $1";
const SQL_ENDPOINT_NAME = "UPDATE endpoints SET name = $1 WHERE id = $2";
const SQL_ENDPOINT_REMARK = "UPDATE endpoints SET remark = $1 WHERE id = $2";
const SQL_ENDPOINT_DELAY = "UPDATE endpoints SET default_delay_ms = $1 WHERE id = $2";

/** `admin.session_create`: stores a new admin web session and drops the expired ones. */
export async function createSession(t: PgTx, a: CreateSessionArgs, now: number): Promise<void> {
  await t.q(SQL_SESSION_PRUNE, [now]);
  await t.q(SQL_SESSION_INSERT, [a.tokenHash, now, a.expiresAt]);
}

/** `admin.session_delete`: ends one admin session; true when it existed. */
export async function deleteSession(
  t: PgTx,
  a: { tokenHash: string },
  _now: number,
): Promise<{ deleted: boolean }> {
  return { deleted: (await t.q(SQL_SESSION_DELETE, [a.tokenHash])).count > 0 };
}

/** `admin.password_set` (spec 8): new hash, every other admin session ended, one commit. */
export async function setAdminPassword(
  t: PgTx,
  a: { passwordHash: string; keepSessionHash: string },
  now: number,
): Promise<{ sessionsEnded: number }> {
  await t.q(SQL_UPSERT_SETTING, ["admin_password_hash", a.passwordHash, now]);
  return { sessionsEnded: (await t.q(SQL_SESSION_DELETE_OTHERS, [a.keepSessionHash])).count };
}

/** `admin.token_create`. @throws {OpError} `conflict` when the name is in use. */
export async function createToken(t: PgTx, a: CreateTokenArgs, now: number): Promise<void> {
  if ((await t.q(SQL_TOKEN_NAME_TAKEN, [a.name, a.id])).length > 0) {
    throw new OpError("conflict");
  }
  await t.q(SQL_TOKEN_INSERT, [a.id, a.name, a.tokenHash, now]);
}

/** `admin.token_update`. @throws {OpError} `not_found`, `conflict`. */
export async function updateToken(t: PgTx, a: UpdateTokenArgs, _now: number): Promise<void> {
  if ((await t.q(SQL_TOKEN_EXISTS, [a.id])).length === 0) throw new OpError("not_found");
  if (a.name !== undefined) {
    if ((await t.q(SQL_TOKEN_NAME_TAKEN, [a.name, a.id])).length > 0) {
      throw new OpError("conflict");
    }
    await t.q(SQL_TOKEN_RENAME, [a.name, a.id]);
  }
  if (a.enabled !== undefined) await t.q(SQL_TOKEN_ENABLE, [a.enabled ? 1 : 0, a.id]);
}

/** `admin.token_delete`. @throws {OpError} `not_found`. */
export async function deleteToken(t: PgTx, a: { id: string }, _now: number): Promise<void> {
  if ((await t.q(SQL_TOKEN_DELETE, [a.id])).count === 0) throw new OpError("not_found");
}

/** `admin.token_touch`: records token use. */
export async function touchToken(
  t: PgTx,
  a: { id: string; usedAt: number },
  _now: number,
): Promise<{ changed: boolean }> {
  return { changed: (await t.q(SQL_TOKEN_TOUCH, [a.usedAt, a.id])).count > 0 };
}

/** `admin.endpoint_update`: name, remark, default delay. @throws {OpError} `not_found`. */
export async function updateEndpoint(
  t: PgTx,
  a: UpdateEndpointArgs,
  _now: number,
): Promise<void> {
  if ((await t.q(SQL_ENDPOINT_EXISTS, [a.id])).length === 0) throw new OpError("not_found");
  if (a.name !== undefined) await t.q(SQL_ENDPOINT_NAME, [a.name, a.id]);
  if (a.remark !== undefined) await t.q(SQL_ENDPOINT_REMARK, [a.remark, a.id]);
  if (a.defaultDelayMs !== undefined) await t.q(SQL_ENDPOINT_DELAY, [a.defaultDelayMs, a.id]);
}

/** `admin.endpoint_import` (spec 8): all or nothing. @throws {OpError} `id_taken` with `ids`. */
export async function importEndpoints(
  t: PgTx,
  a: { rows: CreateEndpointArgs[] },
  now: number,
): Promise<{ created: number }> {
  const existing = new Set(
    (await t.q<{ id: string }>(SQL_ENDPOINTS_EXISTING, [a.rows.map((r) => r.id)])).map((r) => r.id),
  );
  const taken = a.rows.filter((r) => existing.has(r.id)).map((r) => r.id);
  if (taken.length > 0) throw new OpError("id_taken", { ids: taken });
  for (const row of a.rows) {
    await createEndpoint(t, row, now);
    crashPoint("import_row");
  }
  return { created: a.rows.length };
}

/** `admin.registration_set` (spec 8 PUT /api/admin/registration). */
export async function setRegistration(t: PgTx, a: RegistrationArgs, now: number): Promise<void> {
  if (a.code !== undefined) await t.q(SQL_UPSERT_SETTING, ["registration_code", a.code, now]);
  if (a.enabled !== undefined) {
    await t.q(SQL_UPSERT_SETTING, ["registration_enabled", a.enabled ? "true" : "false", now]);
  }
}

/** The admin ops. */
export const pgAdminOps = {
  "admin.session_create": createSession,
  "admin.session_delete": deleteSession,
  "admin.password_set": setAdminPassword,
  "admin.token_create": createToken,
  "admin.token_update": updateToken,
  "admin.token_delete": deleteToken,
  "admin.token_touch": touchToken,
  "admin.endpoint_update": updateEndpoint,
  "admin.endpoint_import": importEndpoints,
  "admin.registration_set": setRegistration,
};
