import type { DatabaseSync } from "node:sqlite";
import { prepareCached } from "../db.ts";
import { OpError } from "../op_error.ts";

// Talk passwords and grants (spec 6.2, 6.6, 7.3 steps 3-5). Argon2 runs on the main thread, so
// these ops get verdicts, never passwords. A grant is valid while its target_talk_version equals
// the target's talk_version; changing the password bumps the version and voids every grant.

const SQL_TALK = "SELECT talk_hash, talk_version FROM endpoints WHERE id = ?";
const SQL_GRANT_VERSION =
  "SELECT target_talk_version FROM talk_grants WHERE sender_id = ? AND target_id = ?";
const SQL_UPSERT_GRANT = `INSERT INTO talk_grants
  (sender_id, target_id, target_talk_version, kind, created_at) VALUES (?, ?, ?, ?, ?)
  ON CONFLICT (sender_id, target_id) DO UPDATE SET
    target_talk_version = excluded.target_talk_version, kind = excluded.kind,
    created_at = excluded.created_at`;
const SQL_SET_PASSWORD = `UPDATE endpoints SET talk_hash = ?, talk_version = talk_version + 1
  WHERE id = ? RETURNING talk_version`;
const SQL_DELETE_GRANTS_TO = "DELETE FROM talk_grants WHERE target_id = ?";

/** How a grant was earned (spec 7.7 talk_grants.kind). */
export type GrantKind = "password" | "reply";

/** What the main thread decided before a send, after argon2 if it had to run it (spec 6.2). */
export type TalkVerdict = "valid_grant" | "password_ok" | "password_wrong" | "no_password";

/** The talk-password facts of one sender -> target pair; see {@link grantState}. */
export interface GrantState {
  /** False when the target endpoint does not exist (then nothing else applies). */
  found: boolean;
  /** The target has a password, is someone else, and the sender holds no valid grant. */
  needsPassword: boolean;
  /** The sender holds a grant for the target's current talk version. */
  hasValidGrant: boolean;
  /** The target's argon2 hash, to verify a supplied password against; null when none is set. */
  talkHash: string | null;
  /** The target's current talk version: pass it back as `expectedVersion`. */
  talkVersion: number;
}

/**
 * Reads whether `senderId` must give `targetId`'s talk password (spec 6.2). Pure read: the main
 * thread calls it on the read connection to decide whether to run argon2, the ops call it again
 * on the write connection to decide for real.
 *
 * @example
 * ```ts
 * const st = grantState(readDb, "a", "b");
 * if (st.needsPassword && pw !== "") verdict = (await verify(st.talkHash!, pw)) ? "password_ok" : "password_wrong";
 * ```
 */
export function grantState(db: DatabaseSync, senderId: string, targetId: string): GrantState {
  const target = prepareCached(db, SQL_TALK).get(targetId) as
    | { talk_hash: string | null; talk_version: number }
    | undefined;
  if (target === undefined) {
    return {
      found: false,
      needsPassword: false,
      hasValidGrant: false,
      talkHash: null,
      talkVersion: 0,
    };
  }
  const grant = prepareCached(db, SQL_GRANT_VERSION).get(senderId, targetId) as
    | { target_talk_version: number }
    | undefined;
  const hasValidGrant = grant?.target_talk_version === target.talk_version;
  return {
    found: true,
    needsPassword: target.talk_hash !== null && senderId !== targetId && !hasValidGrant,
    hasValidGrant,
    talkHash: target.talk_hash,
    talkVersion: target.talk_version,
  };
}

/** True when endpoint `id` exists and has a talk password. */
function hasTalkPassword(db: DatabaseSync, id: string): boolean {
  const row = prepareCached(db, SQL_TALK).get(id) as { talk_hash: string | null } | undefined;
  return row !== undefined && row.talk_hash !== null;
}

/** Writes (or refreshes) the grant `senderId` -> `targetId` at `talkVersion`. */
export function upsertGrant(
  db: DatabaseSync,
  senderId: string,
  targetId: string,
  kind: GrantKind,
  talkVersion: number,
  now: number,
): void {
  prepareCached(db, SQL_UPSERT_GRANT).run(senderId, targetId, talkVersion, kind, now);
}

/** Args of `talk.set_password`. */
export interface SetTalkPasswordArgs {
  endpointId: string;
  /** The argon2 hash of the new password; null clears it (spec 6.6 "" clears). */
  talkHash: string | null;
}

/**
 * `talk.set_password` (spec 6.6, 8): sets or clears the talk password and always bumps
 * talk_version, so every grant to this endpoint is void. The void grants are deleted too; they
 * could never match again. Scheduled and pending messages are not touched (spec 7.6).
 *
 * @throws {OpError} `not_found` when the endpoint does not exist.
 */
export function setTalkPassword(
  db: DatabaseSync,
  args: SetTalkPasswordArgs,
  _now: number,
): { talkVersion: number } {
  const row = prepareCached(db, SQL_SET_PASSWORD).get(args.talkHash, args.endpointId) as
    | { talk_version: number }
    | undefined;
  if (row === undefined) throw new OpError("not_found");
  prepareCached(db, SQL_DELETE_GRANTS_TO).run(args.endpointId);
  return { talkVersion: row.talk_version };
}

/** Args of `talk.grant`. */
export interface GrantArgs {
  senderId: string;
  targetId: string;
  kind: GrantKind;
  /** The target's talk version the grant is for. */
  talkVersion: number;
}

/**
 * `talk.grant`: upserts the grant `senderId` -> `targetId` with `target_talk_version =
 * talkVersion`. `valid` tells whether that is the target's current version.
 */
export function grant(db: DatabaseSync, args: GrantArgs, now: number): { valid: boolean } {
  upsertGrant(db, args.senderId, args.targetId, args.kind, args.talkVersion, now);
  const st = grantState(db, args.senderId, args.targetId);
  return { valid: st.found && st.talkVersion === args.talkVersion };
}

/** Args of {@link checkTalk}. */
export interface CheckTalkArgs {
  senderId: string;
  targetId: string;
  verdict: TalkVerdict;
  /**
   * The target's talk_version the main thread saw when it reached `verdict`. Required for
   * `password_ok` to write a grant; otherwise absent means a failure is never called stale.
   */
  expectedVersion?: number;
}

/**
 * spec 7.3 steps 3-4, for a direct message inside `message.submit`: passes when the target has
 * no talk password, is the sender, or the sender holds a valid grant (a wrong extra password is
 * then ignored, spec 6.2); a password verified against the still-current version writes a
 * `password` grant. Call after the target is validated.
 *
 * A failure whose verdict was reached against another talk version carries `data.stale = true`:
 * the password changed in between, so the main thread may re-read and retry once.
 *
 * @throws {OpError} `talk_password_invalid`, `talk_password_required`.
 */
export function checkTalk(
  db: DatabaseSync,
  args: CheckTalkArgs,
  now: number,
  target?: { talkHash: string | null },
): void {
  // Most targets have no talk password: then no grant is needed or read (issue 19). `target`:
  // the target's row as the caller read it in this transaction.
  if (target === undefined ? !hasTalkPassword(db, args.targetId) : target.talkHash === null) {
    return;
  }
  const st = grantState(db, args.senderId, args.targetId);
  if (!st.needsPassword) return;
  const stale = args.expectedVersion === undefined
    ? args.verdict === "password_ok"
    : args.expectedVersion !== st.talkVersion;
  if (args.verdict === "password_ok" && !stale) {
    upsertGrant(db, args.senderId, args.targetId, "password", st.talkVersion, now);
    return;
  }
  const code = args.verdict === "password_ok" || args.verdict === "password_wrong"
    ? "talk_password_invalid"
    : "talk_password_required";
  throw new OpError(code, stale ? { stale: true } : undefined);
}

/**
 * spec 7.3 step 5: when the sender has a talk password and sends a direct message to someone
 * else, the recipient gets a `reply` grant at the sender's current version, so it can answer
 * without the password. Group sends never call this. Returns whether a grant was written.
 */
export function writeReplyGrant(
  db: DatabaseSync,
  senderId: string,
  targetId: string,
  now: number,
): boolean {
  if (senderId === targetId || !hasTalkPassword(db, senderId)) return false;
  const st = grantState(db, targetId, senderId);
  if (!st.found || st.talkHash === null || st.hasValidGrant) return false;
  upsertGrant(db, targetId, senderId, "reply", st.talkVersion, now);
  return true;
}

/** Args of `talk.unlock`. */
export interface UnlockArgs {
  senderId: string;
  targetId: string;
  /** `no_password_set` when the main thread saw no talk hash; a wrong password never gets here. */
  verdict: "password_ok" | "no_password_set";
  expectedVersion: number;
}

/** Result of `talk.unlock`. */
export interface UnlockResult {
  /** True when this op wrote a grant (false: no password set, the caller itself, or a grant). */
  granted: boolean;
  talkVersion: number;
}

/**
 * `talk.unlock` (spec 6.6): a correct password writes a `password` grant while the target's
 * version still equals `expectedVersion`; a target without a password succeeds at once, and a
 * valid grant already held is kept (the main thread checked the password in either case).
 *
 * @throws {OpError} `not_found` for an unknown target; `talk_password_invalid` with
 * `data.stale = true` when the password changed after the main thread's check.
 */
export function unlock(db: DatabaseSync, args: UnlockArgs, now: number): UnlockResult {
  const st = grantState(db, args.senderId, args.targetId);
  if (!st.found) throw new OpError("not_found");
  if (!st.needsPassword) return { granted: false, talkVersion: st.talkVersion };
  if (args.verdict !== "password_ok" || args.expectedVersion !== st.talkVersion) {
    throw new OpError("talk_password_invalid", { stale: true });
  }
  upsertGrant(db, args.senderId, args.targetId, "password", st.talkVersion, now);
  return { granted: true, talkVersion: st.talkVersion };
}

/** The talk-password ops, for the writer's registry in `mod.ts`. */
export const talkOps = {
  "talk.set_password": setTalkPassword,
  "talk.grant": grant,
  "talk.unlock": unlock,
};
