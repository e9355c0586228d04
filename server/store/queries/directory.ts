import type { DatabaseSync } from "node:sqlite";
import { prepareCached } from "../db.ts";

// Presence and directory reads for the main thread (spec 6.5). Whether an endpoint is online
// comes from the caller's `isOnline` (the connection table); the database only keeps the times.

const SQL_PRESENCE = `SELECT e.id, e.online_since, e.offline_since
  FROM endpoints e WHERE e.id IN (SELECT value FROM json_each(?))`;
const SQL_DIRECTORY = `SELECT id, name, online_since, offline_since,
    talk_hash IS NOT NULL AS talk_password_set
  FROM endpoints WHERE id > ? ORDER BY id LIMIT ?`;

/** spec 6.5: `limit` of directory.list is at most 200. */
export const MAX_DIRECTORY_LIMIT = 200;

/** Rows read per step while filtering the directory by `query`. */
const SCAN_CHUNK = 500;

/** One item of `presence.get` (spec 6.5). */
export type PresenceItem =
  | {
    id: string;
    online: boolean;
    /** When it came online (online) or went offline (offline); null if never seen online. */
    since_ms: number | null;
  }
  | { id: string; not_found: true };

/** One item of `directory.list` (spec 6.5). */
export interface DirectoryItem {
  id: string;
  name: string;
  online: boolean;
  online_since_ms: number | null;
  offline_since_ms: number | null;
  talk_password_set: boolean;
}

/** An endpoint's stored presence times (spec 6.5). */
export interface PresenceTimes {
  id: string;
  online_since: number | null;
  offline_since: number | null;
}

/**
 * `presence.get` (spec 6.5): one item per requested id, in request order; unknown ids are
 * `{ id, not_found: true }` items.
 *
 * @example
 * ```ts
 * presenceOf(readDb, ["a", "nobody"], (id) => connections.isOnline(id));
 * // [{ id: "a", online: true, since_ms: 1750000000000 }, { id: "nobody", not_found: true }]
 * ```
 */
export function presenceOf(
  db: DatabaseSync,
  ids: readonly string[],
  isOnline: (id: string) => boolean,
): PresenceItem[] {
  return presenceItems(ids, presenceTimes(db, ids), isOnline);
}

/** The stored online/offline times of those of `ids` that exist (query `presence.times`). */
export function presenceTimes(db: DatabaseSync, ids: readonly string[]): PresenceTimes[] {
  const rows = prepareCached(db, SQL_PRESENCE).all(
    JSON.stringify(ids),
  ) as unknown as PresenceTimes[];
  return rows.map((r) => ({
    id: r.id,
    online_since: r.online_since,
    offline_since: r.offline_since,
  }));
}

/** The `presence.get` items of `ids` from their stored times and the connection table. */
export function presenceItems(
  ids: readonly string[],
  rows: readonly PresenceTimes[],
  isOnline: (id: string) => boolean,
): PresenceItem[] {
  const byId = new Map(rows.map((r) => [r.id, r]));
  return ids.map((id): PresenceItem => {
    const r = byId.get(id);
    if (r === undefined) return { id, not_found: true };
    const online = isOnline(id);
    return { id, online, since_ms: online ? r.online_since : r.offline_since };
  });
}

/**
 * `directory.list` (spec 6.5): endpoints by id after `cursor`. A non-empty `query` keeps those
 * whose id starts with it or whose name contains it, ignoring case (Unicode-aware, so the filter
 * runs here rather than in SQL, whose lower() folds ASCII only).
 */
export function directoryList(
  db: DatabaseSync,
  cursor: string,
  limit: number,
  query: string,
  isOnline: (id: string) => boolean,
): { items: DirectoryItem[]; next_cursor: string } {
  const page = directoryPage(db, cursor, limit, query);
  return { items: withOnline(page.items, isOnline), next_cursor: page.next_cursor };
}

/** A directory line as stored: everything but `online` (query `directory.list`). */
export type DirectoryEntry = Omit<DirectoryItem, "online">;

/** {@link directoryList} without the connection table: `online` is added by the caller. */
export function directoryPage(
  db: DatabaseSync,
  cursor: string,
  limit: number,
  query: string,
): { items: DirectoryEntry[]; next_cursor: string } {
  const size = Math.max(1, Math.min(MAX_DIRECTORY_LIMIT, Math.trunc(limit) || 1));
  const q = query.toLowerCase();
  const matches = (r: DirectoryRow) =>
    q === "" || r.id.toLowerCase().startsWith(q) || r.name.toLowerCase().includes(q);
  // One match more than asked tells whether a next page exists.
  const found: DirectoryRow[] = [];
  let after = cursor;
  const chunk = q === "" ? size + 1 : SCAN_CHUNK;
  while (found.length <= size) {
    const rows = prepareCached(db, SQL_DIRECTORY).all(after, chunk) as unknown as DirectoryRow[];
    for (const r of rows) if (matches(r) && found.length <= size) found.push(r);
    if (rows.length < chunk) break;
    after = rows[rows.length - 1].id;
  }
  const items = found.slice(0, size).map((r) => ({
    id: r.id,
    name: r.name,
    online_since_ms: r.online_since,
    offline_since_ms: r.offline_since,
    talk_password_set: r.talk_password_set === 1,
  }));
  const next = found.length > size ? items[items.length - 1].id : "";
  return { items, next_cursor: next };
}

/** Directory lines with `online` from the connection table, in the order of `directory.list`. */
export function withOnline(
  entries: readonly DirectoryEntry[],
  isOnline: (id: string) => boolean,
): DirectoryItem[] {
  return entries.map((e) => ({
    id: e.id,
    name: e.name,
    online: isOnline(e.id),
    online_since_ms: e.online_since_ms,
    offline_since_ms: e.offline_since_ms,
    talk_password_set: e.talk_password_set,
  }));
}

interface DirectoryRow extends PresenceTimes {
  name: string;
  talk_password_set: number;
}
