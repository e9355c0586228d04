import assert from "node:assert/strict";
import type { DatabaseSync } from "node:sqlite";
import { OpError } from "../op_error.ts";
import { addEndpoint, codeOf, T0, testDb } from "./_testing.ts";
import {
  checkTalk,
  type CheckTalkArgs,
  grant,
  grantState,
  setTalkPassword,
  unlock,
  type UnlockArgs,
  upsertGrant,
  writeReplyGrant,
} from "./talk.ts";

// spec 6.2, 6.6, 7.3 steps 3-5: talk passwords, grants and their versions.

/** a (no password) and b (password "hb" at version 3). */
function twoEndpoints(): DatabaseSync {
  const db = testDb();
  addEndpoint(db, "a");
  addEndpoint(db, "b", { talkHash: "hb", talkVersion: 3 });
  return db;
}

function grantRow(db: DatabaseSync, sender: string, target: string): string {
  const row = db.prepare(
    "SELECT kind, target_talk_version AS v FROM talk_grants WHERE sender_id = ? AND target_id = ?",
  ).get(sender, target) as { kind: string; v: number } | undefined;
  return row === undefined ? "none" : `${row.kind}@${row.v}`;
}

function staleOf(fn: () => unknown): boolean | undefined {
  try {
    fn();
  } catch (err) {
    if (err instanceof OpError) return err.data?.stale === true;
    throw err;
  }
  return undefined;
}

Deno.test("grantState tells whether the sender must give the target's talk password", () => {
  const cases: {
    name: string;
    sender: string;
    target: string;
    grantVersion?: number;
    want: { found: boolean; needsPassword: boolean; hasValidGrant: boolean; talkVersion: number };
  }[] = [
    {
      name: "target without a password",
      sender: "b",
      target: "a",
      want: { found: true, needsPassword: false, hasValidGrant: false, talkVersion: 0 },
    },
    {
      name: "password and no grant",
      sender: "a",
      target: "b",
      want: { found: true, needsPassword: true, hasValidGrant: false, talkVersion: 3 },
    },
    {
      name: "grant for the current version",
      sender: "a",
      target: "b",
      grantVersion: 3,
      want: { found: true, needsPassword: false, hasValidGrant: true, talkVersion: 3 },
    },
    {
      name: "grant for an older version",
      sender: "a",
      target: "b",
      grantVersion: 2,
      want: { found: true, needsPassword: true, hasValidGrant: false, talkVersion: 3 },
    },
    {
      name: "sending to oneself",
      sender: "b",
      target: "b",
      want: { found: true, needsPassword: false, hasValidGrant: false, talkVersion: 3 },
    },
    {
      name: "unknown target",
      sender: "a",
      target: "nobody",
      want: { found: false, needsPassword: false, hasValidGrant: false, talkVersion: 0 },
    },
  ];
  for (const c of cases) {
    const db = twoEndpoints();
    if (c.grantVersion !== undefined) {
      upsertGrant(db, c.sender, c.target, "password", c.grantVersion, T0);
    }
    const st = grantState(db, c.sender, c.target);
    const { talkHash: _hash, ...rest } = st;
    assert.deepEqual(rest, c.want, c.name);
  }
});

Deno.test("talk.set_password always bumps the version, which voids every earlier grant", () => {
  const db = twoEndpoints();
  upsertGrant(db, "a", "b", "password", 3, T0);
  const steps: { hash: string | null; version: number; hashAfter: string | null }[] = [
    { hash: "new", version: 4, hashAfter: "new" },
    { hash: null, version: 5, hashAfter: null },
    { hash: "again", version: 6, hashAfter: "again" },
  ];
  for (const s of steps) {
    const r = setTalkPassword(db, { endpointId: "b", talkHash: s.hash }, T0);
    assert.deepEqual(r, { talkVersion: s.version });
    const st = grantState(db, "a", "b");
    assert.equal(st.talkHash, s.hashAfter);
    assert.equal(st.hasValidGrant, false, "the old grant no longer counts");
    assert.equal(st.needsPassword, s.hashAfter !== null);
  }
  assert.equal(grantRow(db, "a", "b"), "none", "void grants are deleted");
  assert.equal(
    codeOf(() => setTalkPassword(db, { endpointId: "x", talkHash: null }, T0)),
    "not_found",
  );
});

Deno.test("talk.grant upserts one grant per pair and reports whether it is current", () => {
  const db = twoEndpoints();
  assert.deepEqual(
    grant(db, { senderId: "a", targetId: "b", kind: "password", talkVersion: 2 }, T0),
    {
      valid: false,
    },
  );
  assert.equal(grantRow(db, "a", "b"), "password@2");
  assert.deepEqual(grant(db, { senderId: "a", targetId: "b", kind: "reply", talkVersion: 3 }, T0), {
    valid: true,
  });
  assert.equal(grantRow(db, "a", "b"), "reply@3");
  assert.equal(grantState(db, "a", "b").needsPassword, false);
});

Deno.test("checkTalk lets a send through or refuses it with the spec 6.2 code", () => {
  const cases: {
    name: string;
    args: Partial<CheckTalkArgs>;
    grantVersion?: number;
    code: string;
    stale?: boolean;
    grantAfter: string;
  }[] = [
    {
      name: "target without a password",
      args: { targetId: "a", senderId: "b", verdict: "no_password" },
      code: "ok",
      grantAfter: "none",
    },
    {
      name: "sending to oneself",
      args: { senderId: "b", verdict: "no_password" },
      code: "ok",
      grantAfter: "none",
    },
    {
      name: "a valid grant ignores a wrong password",
      args: { verdict: "password_wrong" },
      grantVersion: 3,
      code: "ok",
      grantAfter: "password@3",
    },
    {
      name: "a correct password writes a grant",
      args: { verdict: "password_ok" },
      code: "ok",
      grantAfter: "password@3",
    },
    {
      name: "a correct password refreshes an old grant",
      args: { verdict: "password_ok" },
      grantVersion: 1,
      code: "ok",
      grantAfter: "password@3",
    },
    {
      name: "a wrong password",
      args: { verdict: "password_wrong" },
      code: "talk_password_invalid",
      stale: false,
      grantAfter: "none",
    },
    {
      name: "no password given",
      args: { verdict: "no_password" },
      code: "talk_password_required",
      stale: false,
      grantAfter: "none",
    },
    {
      name: "an old grant needs the password again",
      args: { verdict: "no_password" },
      grantVersion: 2,
      code: "talk_password_required",
      stale: false,
      grantAfter: "password@2",
    },
    {
      name: "a password verified against an older version",
      args: { verdict: "password_ok", expectedVersion: 2 },
      code: "talk_password_invalid",
      stale: true,
      grantAfter: "none",
    },
    {
      name: "a verified password without a version",
      args: { verdict: "password_ok", expectedVersion: undefined },
      code: "talk_password_invalid",
      stale: true,
      grantAfter: "none",
    },
    {
      name: "no password and no version",
      args: { verdict: "no_password", expectedVersion: undefined },
      code: "talk_password_required",
      stale: false,
      grantAfter: "none",
    },
    {
      name: "a grant that went stale after the read",
      args: { verdict: "valid_grant", expectedVersion: 2 },
      grantVersion: 2,
      code: "talk_password_required",
      stale: true,
      grantAfter: "password@2",
    },
  ];
  for (const c of cases) {
    const db = twoEndpoints();
    const args: CheckTalkArgs = {
      senderId: "a",
      targetId: "b",
      verdict: "no_password",
      expectedVersion: 3,
      ...c.args,
    };
    if (c.grantVersion !== undefined) upsertGrant(db, "a", "b", "password", c.grantVersion, T0);
    assert.equal(codeOf(() => checkTalk(db, args, T0)), c.code, c.name);
    if (c.stale !== undefined) {
      assert.equal(staleOf(() => checkTalk(db, args, T0)), c.stale, c.name);
    }
    assert.equal(grantRow(db, args.senderId, args.targetId), c.grantAfter, c.name);
  }
});

Deno.test("a reply grant lets the recipient answer a password-protected sender without it", () => {
  const db = twoEndpoints();
  // spec 7.3 step 5: b (with a password) writes to a; a may answer without b's password.
  assert.equal(writeReplyGrant(db, "b", "a", T0), true);
  assert.equal(grantRow(db, "a", "b"), "reply@3");
  const answer: CheckTalkArgs = {
    senderId: "a",
    targetId: "b",
    verdict: "no_password",
    expectedVersion: 3,
  };
  assert.equal(codeOf(() => checkTalk(db, answer, T0)), "ok");
  // A second message finds the grant valid and writes nothing.
  assert.equal(writeReplyGrant(db, "b", "a", T0), false);
  // A sender without a password, or a message to oneself, grants nothing.
  assert.equal(writeReplyGrant(db, "a", "b", T0), false);
  assert.equal(writeReplyGrant(db, "b", "b", T0), false);
  assert.equal(grantRow(db, "b", "a"), "none");
  assert.equal(grantRow(db, "b", "b"), "none");
  // spec 6.6: b changes its password; the reply grant is void.
  setTalkPassword(db, { endpointId: "b", talkHash: "hb2" }, T0);
  assert.equal(
    codeOf(() => checkTalk(db, { ...answer, expectedVersion: 4 }, T0)),
    "talk_password_required",
  );
});

Deno.test("talk.unlock grants on a verified password and passes a target without one", () => {
  const cases: {
    name: string;
    args: Partial<UnlockArgs>;
    want: { granted: boolean; talkVersion: number } | string;
    grantAfter: string;
  }[] = [
    {
      name: "correct password",
      args: {},
      want: { granted: true, talkVersion: 3 },
      grantAfter: "password@3",
    },
    {
      name: "target without a password",
      args: { targetId: "a", senderId: "b", verdict: "no_password_set" },
      want: { granted: false, talkVersion: 0 },
      grantAfter: "none",
    },
    {
      name: "unlocking oneself",
      args: { senderId: "b" },
      want: { granted: false, talkVersion: 3 },
      grantAfter: "none",
    },
    {
      name: "password changed since the check",
      args: { expectedVersion: 2 },
      want: "talk_password_invalid",
      grantAfter: "none",
    },
    {
      name: "password set since the check",
      args: { verdict: "no_password_set" },
      want: "talk_password_invalid",
      grantAfter: "none",
    },
    { name: "unknown target", args: { targetId: "nobody" }, want: "not_found", grantAfter: "none" },
  ];
  for (const c of cases) {
    const db = twoEndpoints();
    const args: UnlockArgs = {
      senderId: "a",
      targetId: "b",
      verdict: "password_ok",
      expectedVersion: 3,
      ...c.args,
    };
    if (typeof c.want === "string") {
      assert.equal(codeOf(() => unlock(db, args, T0)), c.want, c.name);
    } else {
      assert.deepEqual(unlock(db, args, T0), c.want, c.name);
    }
    assert.equal(grantRow(db, args.senderId, args.targetId), c.grantAfter, c.name);
  }
});
