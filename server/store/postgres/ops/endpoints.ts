import type { CreateEndpointArgs } from "../../ops/endpoints.ts";
import { OpError } from "../../op_error.ts";
import type { PgTx } from "../op.ts";

// Endpoint writes (spec 5, 6.6, 6.9, 7.5); the twin of server/store/ops/endpoints.ts.

// ON CONFLICT: two servers creating the same id at once both get an answer, one of them id_taken.
const SQL_INSERT = `INSERT INTO endpoints
  (id, name, remark, source, login_hash, talk_hash, talk_version, default_delay_ms, enabled, created_at)
  VALUES ($1, $2, $3, $4, $5, $6, 0, $7, 1, $8) ON CONFLICT (id) DO NOTHING`;
const SQL_SET_SESSION =
  "UPDATE endpoints SET session_hash = $1, session_issued_at = $2, session_used_at = $3 WHERE id = $4";
const SQL_REHASH = "UPDATE endpoints SET login_hash = $1 WHERE id = $2";
const SQL_CLEAR_SESSION =
  "UPDATE endpoints SET session_hash = NULL, session_issued_at = NULL, session_used_at = NULL WHERE id = $1";
const SQL_TOUCH_SESSION =
  "UPDATE endpoints SET session_used_at = $1 WHERE id = $2 AND session_hash = $3";
const SQL_SET_LOGIN =
  "UPDATE endpoints SET login_hash = $1, session_hash = $2, session_issued_at = $3, session_used_at = $4 WHERE id = $5";
const SQL_UPDATE_NAME = "UPDATE endpoints SET name = $1 WHERE id = $2";
const SQL_UPDATE_DELAY = "UPDATE endpoints SET default_delay_ms = $1 WHERE id = $2";

/** `endpoint.create`: `id_taken` when the id exists (spec 6.9, 8). */
export async function createEndpoint(
  t: PgTx,
  a: CreateEndpointArgs,
  now: number,
): Promise<{ id: string }> {
  const r = await t.q(SQL_INSERT, [
    a.id,
    a.name,
    a.remark,
    a.source,
    a.loginHash,
    a.talkHash,
    a.defaultDelayMs,
    now,
  ]);
  if (r.count === 0) throw new OpError("id_taken");
  return { id: a.id };
}

/** `endpoint.set_session`: replaces the session token hash (spec 5). */
export async function setSession(
  t: PgTx,
  a: { id: string; sessionHash: string; loginHash?: string },
  now: number,
): Promise<{ changed: boolean }> {
  if (a.loginHash) await t.q(SQL_REHASH, [a.loginHash, a.id]);
  const r = await t.q(SQL_SET_SESSION, [a.sessionHash, now, now, a.id]);
  return { changed: r.count > 0 };
}

/** `endpoint.clear_session` (spec 5). */
export async function clearSession(
  t: PgTx,
  a: { id: string },
  _now: number,
): Promise<{ changed: boolean }> {
  return { changed: (await t.q(SQL_CLEAR_SESSION, [a.id])).count > 0 };
}

/** `endpoint.touch_session`: records token use (spec 5). */
export async function touchSession(
  t: PgTx,
  a: { id: string; sessionHash: string; usedAt: number },
  _now: number,
): Promise<{ changed: boolean }> {
  return { changed: (await t.q(SQL_TOUCH_SESSION, [a.usedAt, a.id, a.sessionHash])).count > 0 };
}

/** `endpoint.set_login_password`: new hash and a new session token in one commit (spec 6.6). */
export async function setLoginPassword(
  t: PgTx,
  a: { id: string; loginHash: string; sessionHash: string },
  now: number,
): Promise<{ changed: boolean }> {
  const r = await t.q(SQL_SET_LOGIN, [a.loginHash, a.sessionHash, now, now, a.id]);
  return { changed: r.count > 0 };
}

/** `endpoint.update_self`: name and/or default delay (spec 6.6). */
export async function updateSelf(
  t: PgTx,
  a: { id: string; name?: string; defaultDelayMs?: number },
  _now: number,
): Promise<{ changed: boolean }> {
  let changes = 0;
  if (a.name !== undefined) changes += (await t.q(SQL_UPDATE_NAME, [a.name, a.id])).count;
  if (a.defaultDelayMs !== undefined) {
    changes += (await t.q(SQL_UPDATE_DELAY, [a.defaultDelayMs, a.id])).count;
  }
  return { changed: changes > 0 };
}

/** The endpoint ops. */
export const pgEndpointOps = {
  "endpoint.create": createEndpoint,
  "endpoint.set_session": setSession,
  "endpoint.clear_session": clearSession,
  "endpoint.touch_session": touchSession,
  "endpoint.set_login_password": setLoginPassword,
  "endpoint.update_self": updateSelf,
};
