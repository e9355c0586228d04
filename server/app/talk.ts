import type { App } from "./app_context.ts";
import type { TalkVerdict } from "../store/ops/talk.ts";
import { ProtocolError } from "../protocol/mod.ts";

/** The main thread's talk-password decision for one sender -> target pair (spec 6.2, 7.3). */
export interface TalkDecision {
  verdict: TalkVerdict;
  expectedVersion: number;
}

/**
 * Decides the talk-password verdict before a send or group invite, running argon2 only when a
 * password is needed and given. A valid grant wins over a wrong extra password (spec 6.3; `unlock`
 * does not come here: it always checks the password, server/app/handlers/talk.ts). While the
 * pair or the target is locked, a password attempt is `rate_limited` (spec 5 锁定); existing
 * grants keep working.
 */
export async function decideTalk(
  app: App,
  senderId: string,
  targetId: string,
  password: string | null,
): Promise<TalkDecision> {
  const st = await app.store.query("talk.grant_state", { senderId, targetId });
  if (!st.found || senderId === targetId) {
    return { verdict: "no_password", expectedVersion: st.talkVersion };
  }
  if (st.hasValidGrant) return { verdict: "valid_grant", expectedVersion: st.talkVersion };
  if (!st.needsPassword || !password) {
    return { verdict: "no_password", expectedVersion: st.talkVersion };
  }
  // spec 5 锁定; the slot is taken before argon2 so concurrent guesses stay within the rule.
  const attempt = await app.talkLocks.acquire(senderId, targetId);
  if (attempt === null) throw new ProtocolError("rate_limited");
  const ok = st.talkHash !== null && await app.pool.verify(st.talkHash, password);
  if (ok) attempt.release();
  else {
    attempt.fail("wrong_password");
    await attempt.done();
  }
  return { verdict: ok ? "password_ok" : "password_wrong", expectedVersion: st.talkVersion };
}

/** True when an op failed because the talk version moved between decision and commit. */
export function isStale(err: unknown): boolean {
  const data = (err as { data?: Record<string, unknown> } | null)?.data;
  return data?.stale === true;
}
