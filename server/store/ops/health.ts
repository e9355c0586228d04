import type { DatabaseSync } from "node:sqlite";
import { prepareCached } from "../db.ts";

/** The `settings` key the readiness probe writes (spec 4.3 `/readyz`); never shown or read back. */
export const HEALTH_PROBE_KEY = "health_probe";

const SQL_PROBE = `INSERT INTO settings (key, value, updated_at) VALUES (?, ?, ?)
  ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`;

/** Args of `health.probe`. */
export interface ProbeArgs {
  /** A fresh value, so the reader can tell this write from an older one. */
  token: string;
  /**
   * Bytes of padding written after the token (`token:xxxx…`), so the write needs as much new
   * space as a real batch would (issue 28: a one-row UPSERT still fit on a full disk).
   */
  padBytes?: number;
}

/**
 * `health.probe` (spec 4.3, 7.8): one real row write, so that readiness fails exactly when a
 * write cannot commit (full disk, I/O error, corrupt file). Rewrites a single settings row.
 */
export function probe(db: DatabaseSync, args: ProbeArgs, now: number): void {
  const value = args.padBytes ? `${args.token}:${"x".repeat(args.padBytes)}` : args.token;
  prepareCached(db, SQL_PROBE).run(HEALTH_PROBE_KEY, value, now);
}

/** The health ops, merged into the writer's registry in `mod.ts`. */
export const healthOps = {
  "health.probe": probe,
};
