import type {
  CheckTalkArgs,
  GrantArgs,
  GrantKind,
  GrantState,
  SetTalkPasswordArgs,
  UnlockArgs,
  UnlockResult,
} from "../../ops/talk.ts";
import { OpError } from "../../op_error.ts";
import type { PgReader, PgTx } from "../op.ts";

// Talk passwords and grants (spec 6.2, 6.6, 7.3 steps 3-5); the twin of server/store/ops/talk.ts.

const SQL_TALK = "SELECT talk_hash, talk_version FROM endpoints WHERE id = $1";
const SQL_GRANT_VERSION =
  "SELECT target_talk_version FROM talk_grants WHERE sender_id = $1 AND target_id = $2";
const SQL_UPSERT_GRANT = `INSERT INTO talk_grants
  (sender_id, target_id, target_talk_version, kind, created_at) VALUES ($1, $2, $3, $4, $5)
  ON CONFLICT (sender_id, target_id) DO UPDATE SET
    target_talk_version = excluded.target_talk_version, kind = excluded.kind,
    created_at = excluded.created_at`;
const SQL_SET_PASSWORD = `UPDATE endpoints SET talk_hash = $1, talk_version = talk_version + 1
  WHERE id = $2 RETURNING talk_version`;
const SQL_DELETE_GRANTS_TO = "DELETE FROM talk_grants WHERE target_id = $1";

/** Whether `senderId` must give `targetId`'s talk password (spec 6.2); a pure read. */
export async function grantState(
  t: PgReader,
  senderId: string,
  targetId: string,
): Promise<GrantState> {
  const target = (await t.q<{ talk_hash: string | null; talk_version: number }>(SQL_TALK, [
    targetId,
  ]))[0];
  if (target === undefined) {
    return {
      found: false,
      needsPassword: false,
      hasValidGrant: false,
      talkHash: null,
      talkVersion: 0,
    };
  }
  const grant = (await t.q<{ target_talk_version: number }>(SQL_GRANT_VERSION, [
    senderId,
    targetId,
  ]))[0];
  const hasValidGrant = grant?.target_talk_version === target.talk_version;
  return {
    found: true,
    needsPassword: target.talk_hash !== null && senderId !== targetId && !hasValidGrant,
    hasValidGrant,
    talkHash: target.talk_hash,
    talkVersion: target.talk_version,
  };
}

async function hasTalkPassword(t: PgTx, id: string): Promise<boolean> {
  const row = (await t.q<{ talk_hash: string | null }>(SQL_TALK, [id]))[0];
  return row !== undefined && row.talk_hash !== null;
}

/** Writes (or refreshes) the grant `senderId` -> `targetId` at `talkVersion`. */
export async function upsertGrant(
  t: PgTx,
  senderId: string,
  targetId: string,
  kind: GrantKind,
  talkVersion: number,
  now: number,
): Promise<void> {
  await t.q(SQL_UPSERT_GRANT, [senderId, targetId, talkVersion, kind, now]);
}

/** `talk.set_password` (spec 6.6, 8). @throws {OpError} `not_found`. */
export async function setTalkPassword(
  t: PgTx,
  args: SetTalkPasswordArgs,
  _now: number,
): Promise<{ talkVersion: number }> {
  const row = (await t.q<{ talk_version: number }>(SQL_SET_PASSWORD, [
    args.talkHash,
    args.endpointId,
  ]))[0];
  if (row === undefined) throw new OpError("not_found");
  await t.q(SQL_DELETE_GRANTS_TO, [args.endpointId]);
  return { talkVersion: row.talk_version };
}

/** `talk.grant`: upserts the grant; `valid` when it is for the target's current version. */
export async function grant(t: PgTx, args: GrantArgs, now: number): Promise<{ valid: boolean }> {
  await upsertGrant(t, args.senderId, args.targetId, args.kind, args.talkVersion, now);
  const st = await grantState(t, args.senderId, args.targetId);
  return { valid: st.found && st.talkVersion === args.talkVersion };
}

/** spec 7.3 steps 3-4 inside `message.submit`; see `checkTalk` of the SQLite ops. */
export async function checkTalk(
  t: PgTx,
  args: CheckTalkArgs,
  now: number,
  target?: { talkHash: string | null },
): Promise<void> {
  if (
    target === undefined ? !(await hasTalkPassword(t, args.targetId)) : target.talkHash === null
  ) {
    return;
  }
  const st = await grantState(t, args.senderId, args.targetId);
  if (!st.needsPassword) return;
  const stale = args.expectedVersion === undefined
    ? args.verdict === "password_ok"
    : args.expectedVersion !== st.talkVersion;
  if (args.verdict === "password_ok" && !stale) {
    await upsertGrant(t, args.senderId, args.targetId, "password", st.talkVersion, now);
    return;
  }
  const code = args.verdict === "password_ok" || args.verdict === "password_wrong"
    ? "talk_password_invalid"
    : "talk_password_required";
  throw new OpError(code, stale ? { stale: true } : undefined);
}

/** spec 7.3 step 5: the recipient of a password holder's direct message gets a reply grant. */
export async function writeReplyGrant(
  t: PgTx,
  senderId: string,
  targetId: string,
  now: number,
): Promise<boolean> {
  if (senderId === targetId || !(await hasTalkPassword(t, senderId))) return false;
  const st = await grantState(t, targetId, senderId);
  if (!st.found || st.talkHash === null || st.hasValidGrant) return false;
  await upsertGrant(t, targetId, senderId, "reply", st.talkVersion, now);
  return true;
}

/** `talk.unlock` (spec 6.6). @throws {OpError} `not_found`, `talk_password_invalid`. */
export async function unlock(t: PgTx, args: UnlockArgs, now: number): Promise<UnlockResult> {
  const st = await grantState(t, args.senderId, args.targetId);
  if (!st.found) throw new OpError("not_found");
  if (!st.needsPassword) return { granted: false, talkVersion: st.talkVersion };
  if (args.verdict !== "password_ok" || args.expectedVersion !== st.talkVersion) {
    throw new OpError("talk_password_invalid", { stale: true });
  }
  await upsertGrant(t, args.senderId, args.targetId, "password", st.talkVersion, now);
  return { granted: true, talkVersion: st.talkVersion };
}

/** The talk-password ops. */
export const pgTalkOps = {
  "talk.set_password": setTalkPassword,
  "talk.grant": grant,
  "talk.unlock": unlock,
};
