import type { DatabaseSync } from "node:sqlite";
import { prepareCached } from "../db.ts";
import { OpError } from "../op_error.ts";
import { crashPoint } from "../../config/crash_point.ts";
import { createEndpoint, type CreateEndpointArgs } from "./endpoints.ts";

// Admin writes (spec 8): web sessions, API tokens, the admin's endpoint edits, the CSV import and
// the registration settings. Secrets arrive already hashed: sessions and tokens as SHA-256 hex,
// passwords as argon2id PHC strings computed in the pool on the main thread.

const SQL_SESSION_PRUNE = "DELETE FROM admin_sessions WHERE expires_at <= ?";
const SQL_SESSION_INSERT =
  "INSERT INTO admin_sessions (token_hash, created_at, expires_at) VALUES (?, ?, ?)";
const SQL_SESSION_DELETE = "DELETE FROM admin_sessions WHERE token_hash = ?";
const SQL_SESSION_DELETE_OTHERS = "DELETE FROM admin_sessions WHERE token_hash <> ?";
const SQL_UPSERT_SETTING = `INSERT INTO settings (key, value, updated_at) VALUES (?, ?, ?)
  ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`;
const SQL_TOKEN_NAME_TAKEN = "SELECT 1 AS x FROM api_tokens WHERE name = ? AND id <> ?";
const SQL_TOKEN_INSERT = `INSERT INTO api_tokens (id, name, token_hash, enabled, created_at)
  VALUES (?, ?, ?, 1, ?)`;
const SQL_TOKEN_EXISTS = "SELECT 1 AS x FROM api_tokens WHERE id = ?";
const SQL_TOKEN_RENAME = "UPDATE api_tokens SET name = ? WHERE id = ?";
const SQL_TOKEN_ENABLE = "UPDATE api_tokens SET enabled = ? WHERE id = ?";
const SQL_TOKEN_DELETE = "DELETE FROM api_tokens WHERE id = ?";
const SQL_TOKEN_TOUCH = `UPDATE api_tokens SET last_used_at = ?
  WHERE id = ? AND (last_used_at IS NULL OR last_used_at < ?)`;
const SQL_ENDPOINT_EXISTS = "SELECT 1 AS x FROM endpoints WHERE id = ?";
const SQL_ENDPOINT_NAME = "UPDATE endpoints SET name = ? WHERE id = ?";
const SQL_ENDPOINT_REMARK = "UPDATE endpoints SET remark = ? WHERE id = ?";
const SQL_ENDPOINT_DELAY = "UPDATE endpoints SET default_delay_ms = ? WHERE id = ?";

/** Args of `admin.session_create`. */
export interface CreateSessionArgs {
  /** SHA-256 hex of the cookie value; the value itself is never stored (spec 8). */
  tokenHash: string;
  expiresAt: number;
}

/** Stores a new admin web session and drops the expired ones. */
export function createSession(db: DatabaseSync, a: CreateSessionArgs, now: number): void {
  prepareCached(db, SQL_SESSION_PRUNE).run(now);
  prepareCached(db, SQL_SESSION_INSERT).run(a.tokenHash, now, a.expiresAt);
}

/** Ends one admin session (logout); true when it existed. */
export function deleteSession(
  db: DatabaseSync,
  a: { tokenHash: string },
  _now: number,
): { deleted: boolean } {
  const r = prepareCached(db, SQL_SESSION_DELETE).run(a.tokenHash);
  return { deleted: Number(r.changes) > 0 };
}

/**
 * `POST /api/admin/password` (spec 8): stores the new admin password hash and ends every admin
 * session except the caller's, in one commit.
 */
export function setAdminPassword(
  db: DatabaseSync,
  a: { passwordHash: string; keepSessionHash: string },
  now: number,
): { sessionsEnded: number } {
  prepareCached(db, SQL_UPSERT_SETTING).run("admin_password_hash", a.passwordHash, now);
  const r = prepareCached(db, SQL_SESSION_DELETE_OTHERS).run(a.keepSessionHash);
  return { sessionsEnded: Number(r.changes) };
}

/** Args of `admin.token_create`. */
export interface CreateTokenArgs {
  id: string;
  name: string;
  /** SHA-256 hex of the `nxm_` token (spec 8: no argon2 for a high-entropy token). */
  tokenHash: string;
}

/** Stores a new API token. @throws {OpError} `conflict` when the name is in use. */
export function createToken(db: DatabaseSync, a: CreateTokenArgs, now: number): void {
  if (prepareCached(db, SQL_TOKEN_NAME_TAKEN).get(a.name, a.id)) throw new OpError("conflict");
  prepareCached(db, SQL_TOKEN_INSERT).run(a.id, a.name, a.tokenHash, now);
}

/** Args of `admin.token_update`; absent fields stay. */
export interface UpdateTokenArgs {
  id: string;
  name?: string;
  enabled?: boolean;
}

/** Renames, enables or disables a token. @throws {OpError} `not_found`, `conflict`. */
export function updateToken(db: DatabaseSync, a: UpdateTokenArgs, _now: number): void {
  if (!prepareCached(db, SQL_TOKEN_EXISTS).get(a.id)) throw new OpError("not_found");
  if (a.name !== undefined) {
    if (prepareCached(db, SQL_TOKEN_NAME_TAKEN).get(a.name, a.id)) throw new OpError("conflict");
    prepareCached(db, SQL_TOKEN_RENAME).run(a.name, a.id);
  }
  if (a.enabled !== undefined) prepareCached(db, SQL_TOKEN_ENABLE).run(a.enabled ? 1 : 0, a.id);
}

/** Deletes a token. @throws {OpError} `not_found`. */
export function deleteToken(db: DatabaseSync, a: { id: string }, _now: number): void {
  const r = prepareCached(db, SQL_TOKEN_DELETE).run(a.id);
  if (Number(r.changes) === 0) throw new OpError("not_found");
}

/** Records token use; the caller writes at most once a minute per token (spec 8). */
export function touchToken(
  db: DatabaseSync,
  a: { id: string; usedAt: number },
  _now: number,
): { changed: boolean } {
  const r = prepareCached(db, SQL_TOKEN_TOUCH).run(a.usedAt, a.id, a.usedAt);
  return { changed: Number(r.changes) > 0 };
}

/** Args of `admin.endpoint_update`; absent fields stay. */
export interface UpdateEndpointArgs {
  id: string;
  name?: string;
  remark?: string;
  defaultDelayMs?: number;
}

/**
 * The admin's plain edits of an endpoint (spec 8 PATCH): name, remark, default delay. Enabling
 * and disabling are separate ops because they invalidate (spec 7.6).
 *
 * @throws {OpError} `not_found`.
 */
export function updateEndpoint(db: DatabaseSync, a: UpdateEndpointArgs, _now: number): void {
  if (!prepareCached(db, SQL_ENDPOINT_EXISTS).get(a.id)) throw new OpError("not_found");
  if (a.name !== undefined) prepareCached(db, SQL_ENDPOINT_NAME).run(a.name, a.id);
  if (a.remark !== undefined) prepareCached(db, SQL_ENDPOINT_REMARK).run(a.remark, a.id);
  if (a.defaultDelayMs !== undefined) {
    prepareCached(db, SQL_ENDPOINT_DELAY).run(a.defaultDelayMs, a.id);
  }
}

/**
 * The CSV import (spec 8): every row in this one op, so in one transaction. Any id that exists
 * fails the whole op and nothing is created.
 *
 * @throws {OpError} `id_taken` with `data.ids` listing the ids that exist.
 */
export function importEndpoints(
  db: DatabaseSync,
  a: { rows: CreateEndpointArgs[] },
  now: number,
): { created: number } {
  const taken = a.rows.filter((r) => prepareCached(db, SQL_ENDPOINT_EXISTS).get(r.id))
    .map((r) => r.id);
  if (taken.length > 0) throw new OpError("id_taken", { ids: taken });
  for (const row of a.rows) {
    createEndpoint(db, row, now);
    crashPoint("import_row");
  }
  return { created: a.rows.length };
}

/** Args of `admin.registration_set`; absent fields stay. */
export interface RegistrationArgs {
  enabled?: boolean;
  code?: string;
}

/** Writes the registration switch and code together (spec 8 PUT /api/admin/registration). */
export function setRegistration(db: DatabaseSync, a: RegistrationArgs, now: number): void {
  const upsert = prepareCached(db, SQL_UPSERT_SETTING);
  if (a.code !== undefined) upsert.run("registration_code", a.code, now);
  if (a.enabled !== undefined) {
    upsert.run("registration_enabled", a.enabled ? "true" : "false", now);
  }
}

/** The admin ops, merged into the writer's registry in `mod.ts`. */
export const adminOps = {
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
