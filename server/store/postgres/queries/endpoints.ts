import type { LoginRow, SelfRow } from "../../queries/endpoints.ts";
import type { PgReader } from "../op.ts";

// Endpoint reads (spec 5, 6.6); the twin of server/store/queries/endpoints.ts.

const SQL_LOGIN_ROW = `SELECT id, enabled, login_hash, session_hash, session_used_at
  FROM endpoints WHERE id = $1`;
const SQL_SELF_ROW = `SELECT id, name, remark, source, default_delay_ms, enabled, created_at,
  (talk_hash IS NOT NULL)::int AS talk_password_set FROM endpoints WHERE id = $1`;

/** The login facts of an endpoint, or null. */
export async function loginRow(r: PgReader, id: string): Promise<LoginRow | null> {
  return (await r.q<LoginRow>(SQL_LOGIN_ROW, [id]))[0] ?? null;
}

/** An endpoint's own profile, or null. */
export async function selfRow(r: PgReader, id: string): Promise<SelfRow | null> {
  return (await r.q<SelfRow>(SQL_SELF_ROW, [id]))[0] ?? null;
}
