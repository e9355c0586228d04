import type { DatabaseSync } from "node:sqlite";
import { OpError } from "../op_error.ts";

// Endpoint writes (spec 5, 6.6, 6.9, 7.5). Each op is a plain function of (db, args, now).

const SQL_INSERT = `INSERT INTO endpoints
  (id, name, remark, source, login_hash, talk_hash, talk_version, default_delay_ms, enabled, created_at)
  VALUES (?, ?, ?, ?, ?, ?, 0, ?, 1, ?)`;
const SQL_EXISTS = "SELECT 1 AS x FROM endpoints WHERE id = ?";
const SQL_SET_SESSION =
  "UPDATE endpoints SET session_hash = ?, session_issued_at = ?, session_used_at = ? WHERE id = ?";
const SQL_REHASH = "UPDATE endpoints SET login_hash = ? WHERE id = ?";
const SQL_CLEAR_SESSION =
  "UPDATE endpoints SET session_hash = NULL, session_issued_at = NULL, session_used_at = NULL WHERE id = ?";
const SQL_TOUCH_SESSION =
  "UPDATE endpoints SET session_used_at = ? WHERE id = ? AND session_hash = ?";
const SQL_SET_LOGIN =
  "UPDATE endpoints SET login_hash = ?, session_hash = ?, session_issued_at = ?, session_used_at = ? WHERE id = ?";
const SQL_UPDATE_NAME = "UPDATE endpoints SET name = ? WHERE id = ?";
const SQL_UPDATE_DELAY = "UPDATE endpoints SET default_delay_ms = ? WHERE id = ?";

/** Fields of a new endpoint; hashes are argon2id PHC strings computed before the op. */
export interface CreateEndpointArgs {
  id: string;
  name: string;
  remark: string;
  source: "admin" | "self";
  loginHash: string;
  talkHash: string | null;
  defaultDelayMs: number;
}

/** Inserts an endpoint; `id_taken` when the id exists (spec 6.9, 8). */
export function createEndpoint(
  db: DatabaseSync,
  a: CreateEndpointArgs,
  now: number,
): { id: string } {
  if (db.prepare(SQL_EXISTS).get(a.id)) throw new OpError("id_taken");
  db.prepare(SQL_INSERT).run(
    a.id,
    a.name,
    a.remark,
    a.source,
    a.loginHash,
    a.talkHash,
    a.defaultDelayMs,
    now,
  );
  return { id: a.id };
}

/** Replaces the session token hash: the old token is dead from this commit on (spec 5). */
export function setSession(
  db: DatabaseSync,
  a: { id: string; sessionHash: string; loginHash?: string },
  now: number,
): { changed: boolean } {
  // spec 12: a hash with outdated argon2 parameters is replaced after a successful check.
  if (a.loginHash) db.prepare(SQL_REHASH).run(a.loginHash, a.id);
  const r = db.prepare(SQL_SET_SESSION).run(a.sessionHash, now, now, a.id);
  return { changed: Number(r.changes) > 0 };
}

/** Clears the session token (self.logout, admin reset/disable/delete; spec 5). */
export function clearSession(
  db: DatabaseSync,
  a: { id: string },
  _now: number,
): { changed: boolean } {
  const r = db.prepare(SQL_CLEAR_SESSION).run(a.id);
  return { changed: Number(r.changes) > 0 };
}

/** Records token use; written at most hourly by the caller (spec 5). */
export function touchSession(
  db: DatabaseSync,
  a: { id: string; sessionHash: string; usedAt: number },
  _now: number,
): { changed: boolean } {
  const r = db.prepare(SQL_TOUCH_SESSION).run(a.usedAt, a.id, a.sessionHash);
  return { changed: Number(r.changes) > 0 };
}

/** self.login_password: new hash and a new session token in one commit (spec 6.6). */
export function setLoginPassword(
  db: DatabaseSync,
  a: { id: string; loginHash: string; sessionHash: string },
  now: number,
): { changed: boolean } {
  const r = db.prepare(SQL_SET_LOGIN).run(a.loginHash, a.sessionHash, now, now, a.id);
  return { changed: Number(r.changes) > 0 };
}

/** self.update: name and/or default delay (spec 6.6). */
export function updateSelf(
  db: DatabaseSync,
  a: { id: string; name?: string; defaultDelayMs?: number },
  _now: number,
): { changed: boolean } {
  let changes = 0;
  if (a.name !== undefined) {
    changes += Number(db.prepare(SQL_UPDATE_NAME).run(a.name, a.id).changes);
  }
  if (a.defaultDelayMs !== undefined) {
    changes += Number(db.prepare(SQL_UPDATE_DELAY).run(a.defaultDelayMs, a.id).changes);
  }
  return { changed: changes > 0 };
}

/** The endpoint ops, merged into the writer's registry. */
export const endpointOps = {
  "endpoint.create": createEndpoint,
  "endpoint.set_session": setSession,
  "endpoint.clear_session": clearSession,
  "endpoint.touch_session": touchSession,
  "endpoint.set_login_password": setLoginPassword,
  "endpoint.update_self": updateSelf,
};
