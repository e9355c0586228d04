import assert from "node:assert/strict";
import { binaryArgs } from "../ops/_testing.ts";
import { contractTest, countRows } from "./_stores.ts";

// Talk passwords and grants (spec 6.2, 6.6, 7.3 steps 3-5) on both stores.

contractTest("a talk password is required, then a verified one writes a grant", async (s) => {
  await s.addEndpoint("a");
  await s.addEndpoint("b", { talkHash: "hb", talkVersion: 2, offlineSince: null });
  assert.equal(await s.codeOf("message.submit", binaryArgs("t1")), "talk_password_required");
  assert.equal(
    await s.codeOf(
      "message.submit",
      binaryArgs("t2", { talk: { verdict: "password_wrong", expectedVersion: 2 } }),
    ),
    "talk_password_invalid",
  );
  assert.equal(await countRows(s, "talk_grants"), 0);
  const ok = await s.run(
    "message.submit",
    binaryArgs("t3", { talk: { verdict: "password_ok", expectedVersion: 2 } }),
  );
  assert.equal(ok.duplicate, false);
  assert.deepEqual(
    await s.rows("SELECT sender_id, target_id, target_talk_version, kind FROM talk_grants"),
    [{ sender_id: "a", target_id: "b", target_talk_version: 2, kind: "password" }],
  );
  // With the grant, no password is needed.
  assert.equal(await s.codeOf("message.submit", binaryArgs("t4")), "ok");
});

contractTest("a password verified against an older version is stale", async (s) => {
  await s.addEndpoint("a");
  await s.addEndpoint("b", { talkHash: "hb", talkVersion: 5 });
  try {
    await s.run(
      "message.submit",
      binaryArgs("s1", { talk: { verdict: "password_ok", expectedVersion: 4 } }),
    );
    assert.fail("a stale password must be refused");
  } catch (err) {
    assert.equal((err as { code?: string }).code, "talk_password_invalid");
    assert.deepEqual((err as { data?: unknown }).data, { stale: true });
  }
});

contractTest("set_password bumps the version and voids every grant to the endpoint", async (s) => {
  await s.addEndpoint("a");
  await s.addEndpoint("b", { talkHash: "hb", talkVersion: 1 });
  assert.deepEqual(
    await s.run("talk.grant", { senderId: "a", targetId: "b", kind: "password", talkVersion: 1 }),
    { valid: true },
  );
  assert.deepEqual(await s.run("talk.set_password", { endpointId: "b", talkHash: "new" }), {
    talkVersion: 2,
  });
  assert.equal(await countRows(s, "talk_grants"), 0);
  assert.equal(
    await s.codeOf("talk.set_password", { endpointId: "nobody", talkHash: null }),
    "not_found",
  );
});

contractTest("unlock writes a grant for the current version only", async (s) => {
  await s.addEndpoint("a");
  await s.addEndpoint("b", { talkHash: "hb", talkVersion: 7 });
  await s.addEndpoint("open");
  const unlock = { senderId: "a", targetId: "b", verdict: "password_ok" as const };
  assert.equal(
    await s.codeOf("talk.unlock", { ...unlock, expectedVersion: 6 }),
    "talk_password_invalid",
  );
  assert.deepEqual(await s.run("talk.unlock", { ...unlock, expectedVersion: 7 }), {
    granted: true,
    talkVersion: 7,
  });
  assert.deepEqual(await s.run("talk.unlock", { ...unlock, expectedVersion: 7 }), {
    granted: false,
    talkVersion: 7,
  });
  assert.deepEqual(
    await s.run("talk.unlock", {
      senderId: "a",
      targetId: "open",
      verdict: "no_password_set",
      expectedVersion: 0,
    }),
    { granted: false, talkVersion: 0 },
  );
  assert.equal(
    await s.codeOf("talk.unlock", { ...unlock, targetId: "nobody", expectedVersion: 0 }),
    "not_found",
  );
});

contractTest("a password holder's direct message gives the recipient a reply grant", async (s) => {
  await s.addEndpoint("a", { talkHash: "ha", talkVersion: 3 });
  await s.addEndpoint("b");
  await s.run("message.submit", binaryArgs("hi"));
  assert.deepEqual(
    await s.rows("SELECT sender_id, target_id, target_talk_version, kind FROM talk_grants"),
    [{ sender_id: "b", target_id: "a", target_talk_version: 3, kind: "reply" }],
  );
});
