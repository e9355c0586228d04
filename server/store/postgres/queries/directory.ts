import {
  type DirectoryEntry,
  MAX_DIRECTORY_LIMIT,
  type PresenceTimes,
} from "../../queries/directory.ts";
import type { PgReader } from "../op.ts";

// Presence and directory reads (spec 6.5); the twin of server/store/queries/directory.ts.

const SQL_PRESENCE = `SELECT id, online_since, offline_since FROM endpoints
  WHERE id = ANY($1::text[])`;
const SQL_DIRECTORY = `SELECT id, name, online_since, offline_since,
    (talk_hash IS NOT NULL)::int AS talk_password_set
  FROM endpoints WHERE id > $1 ORDER BY id LIMIT $2`;

/** Rows read per step while filtering the directory by `query`. */
const SCAN_CHUNK = 500;

interface DirectoryRow extends PresenceTimes {
  name: string;
  talk_password_set: number;
}

/** The stored online/offline times of those of `ids` that exist. */
export async function presenceTimes(
  r: PgReader,
  ids: readonly string[],
): Promise<PresenceTimes[]> {
  const rows = await r.q<PresenceTimes>(SQL_PRESENCE, [[...ids]]);
  return rows.map((x) => ({
    id: x.id,
    online_since: x.online_since,
    offline_since: x.offline_since,
  }));
}

/** `directory.list` without `online`; the filter runs here, Unicode-aware, as in SQLite's. */
export async function directoryPage(
  r: PgReader,
  cursor: string,
  limit: number,
  query: string,
): Promise<{ items: DirectoryEntry[]; next_cursor: string }> {
  const size = Math.max(1, Math.min(MAX_DIRECTORY_LIMIT, Math.trunc(limit) || 1));
  const q = query.toLowerCase();
  const matches = (x: DirectoryRow) =>
    q === "" || x.id.toLowerCase().startsWith(q) || x.name.toLowerCase().includes(q);
  const found: DirectoryRow[] = [];
  let after = cursor;
  const chunk = q === "" ? size + 1 : SCAN_CHUNK;
  while (found.length <= size) {
    const rows = await r.q<DirectoryRow>(SQL_DIRECTORY, [after, chunk]);
    for (const x of rows) if (matches(x) && found.length <= size) found.push(x);
    if (rows.length < chunk) break;
    after = rows[rows.length - 1].id;
  }
  const items = found.slice(0, size).map((x) => ({
    id: x.id,
    name: x.name,
    online_since_ms: x.online_since,
    offline_since_ms: x.offline_since,
    talk_password_set: x.talk_password_set === 1,
  }));
  return { items, next_cursor: found.length > size ? items[items.length - 1].id : "" };
}
