import type { Handler, HandlerTable } from "../mqtt_app.ts";
import { ProtocolError } from "../../protocol/mod.ts";
import { isStale } from "../talk.ts";

/** spec 6.6 self.talk_password: set ("" clears); always bumps the version, voiding grants. */
const selfTalkPassword: Handler<"self.talk_password"> = async ({ app, conn }, frame) => {
  const talkHash = frame.talk_password === "" ? null : await app.pool.hash(frame.talk_password);
  const r = await app.store.run("talk.set_password", { endpointId: conn.endpointId, talkHash });
  await app.talkLocks.clearTarget(conn.endpointId); // spec 5: the per-target count resets
  return { talk_password_set: talkHash !== null, talk_version: r.talkVersion };
};

/**
 * spec 6.6 unlock: a correct password writes a `password` grant; a target without a talk
 * password (or the caller itself) succeeds at once. Unlike a send (spec 6.3, where a valid grant
 * makes the server ignore an extra wrong password), unlock is the password check itself: a wrong
 * password is `talk_password_invalid` and counts toward the lockout (spec 5) even while the caller
 * holds a grant, which stays valid.
 */
const unlock: Handler<"unlock"> = async ({ app, conn }, frame) => {
  const sender = conn.endpointId;
  const target = frame.endpoint_id;
  for (let attempt = 0; attempt < 2; attempt++) {
    const st = await app.store.query("talk.grant_state", { senderId: sender, targetId: target });
    if (!st.found) throw new ProtocolError("not_found");
    if (st.talkHash === null || sender === target) return {};
    const check = await app.talkLocks.acquire(sender, target);
    if (check === null) throw new ProtocolError("rate_limited");
    const ok = st.talkHash !== null && await app.pool.verify(st.talkHash, frame.talk_password);
    if (!ok) {
      check.fail("wrong_password");
      await check.done(); // issue 30: counted for every node before the answer goes out
      throw new ProtocolError("talk_password_invalid");
    }
    check.release();
    try {
      await app.store.run("talk.unlock", {
        senderId: sender,
        targetId: target,
        verdict: "password_ok",
        expectedVersion: st.talkVersion,
      });
      return {};
    } catch (err) {
      if (!isStale(err) || attempt === 1) throw err; // the password changed meanwhile: re-check
    }
  }
  throw new ProtocolError("busy");
};

/** The talk-password frames of spec 6.6. */
export const talkHandlers: HandlerTable = {
  "self.talk_password": selfTalkPassword,
  unlock,
};
