import type { DatabaseSync } from "node:sqlite";
import { prepareCached } from "../db.ts";

// Endpoint reads on the read connection (spec 7.2): login and self.get.

const SQL_LOGIN_ROW = `SELECT id, enabled, login_hash, session_hash, session_used_at
  FROM endpoints WHERE id = ?`;
const SQL_SELF_ROW = `SELECT id, name, remark, source, default_delay_ms, enabled, created_at,
  talk_hash IS NOT NULL AS talk_password_set FROM endpoints WHERE id = ?`;

/** What login needs to know about an endpoint (spec 5). */
export interface LoginRow {
  id: string;
  enabled: number;
  login_hash: string;
  session_hash: string | null;
  session_used_at: number | null;
}

/** Reads the login facts of an endpoint, or null when it does not exist. Throws on a DB error. */
export function loginRow(db: DatabaseSync, id: string): LoginRow | null {
  return (prepareCached(db, SQL_LOGIN_ROW).get(id) as LoginRow | undefined) ?? null;
}

/** An endpoint's own profile as `self.get` returns it (spec 6.6). */
export interface SelfRow {
  id: string;
  name: string;
  remark: string;
  source: string;
  default_delay_ms: number;
  enabled: number;
  created_at: number;
  talk_password_set: number;
}

/** Reads an endpoint's profile, or null when it does not exist. */
export function selfRow(db: DatabaseSync, id: string): SelfRow | null {
  return (prepareCached(db, SQL_SELF_ROW).get(id) as SelfRow | undefined) ?? null;
}
