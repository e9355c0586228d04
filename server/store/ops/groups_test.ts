import assert from "node:assert/strict";
import type { DatabaseSync } from "node:sqlite";
import {
  addEndpoint,
  addGroup,
  codeOf,
  countRows,
  deliveryLines,
  messageLine,
  push,
  receiptLines,
  send,
  T0,
  testDb,
} from "./_testing.ts";
import {
  addToGroup,
  createGroup,
  type CreateGroupArgs,
  dissolveGroup,
  leaveGroup,
  removeFromGroup,
  renameGroup,
  transferGroup,
} from "./groups.ts";
import { upsertGrant } from "./talk.ts";

// spec 6.7 groups and the group rows of the spec 7.6 invalidation table.

function members(db: DatabaseSync, groupId: string): string[] {
  return (db.prepare(
    "SELECT endpoint_id FROM group_members WHERE group_id = ? ORDER BY endpoint_id",
  ).all(groupId) as { endpoint_id: string }[]).map((r) => r.endpoint_id);
}

function owner(db: DatabaseSync, groupId: string): string | undefined {
  const row = db.prepare("SELECT owner_id FROM groups WHERE id = ?").get(groupId) as
    | { owner_id: string }
    | undefined;
  return row?.owner_id;
}

/** o owns nothing yet; b, c, d plain; p has talk password at version 2; off is disabled. */
function people(): DatabaseSync {
  const db = testDb();
  for (const id of ["o", "b", "c", "d"]) addEndpoint(db, id);
  addEndpoint(db, "p", { talkHash: "hp", talkVersion: 2 });
  addEndpoint(db, "q", { talkHash: "hq", talkVersion: 5 });
  addEndpoint(db, "off", { enabled: false });
  return db;
}

function create(db: DatabaseSync, over: Partial<CreateGroupArgs> = {}) {
  return createGroup(db, {
    ownerId: "o",
    groupId: "g",
    name: "一组",
    members: [],
    maxMembers: 100,
    ...over,
  }, T0);
}

Deno.test("group.create adds who it can and lists every failure with its code", () => {
  const db = people();
  upsertGrant(db, "o", "q", "password", 5, T0); // o already holds a valid grant for q
  const r = create(db, {
    members: [
      { id: "b", verdict: "ok" },
      { id: "nobody", verdict: "ok" },
      { id: "off", verdict: "ok" },
      { id: "p", verdict: "talk_password_required" },
      { id: "p", verdict: "ok", talkVersion: 2 }, // a repeated id counts once
      { id: "c", verdict: "talk_password_invalid" }, // no password set: the verdict is moot
      { id: "q", verdict: "talk_password_required" }, // the owner's grant counts
      { id: "o", verdict: "ok" }, // already the owner
      { id: "b", verdict: "ok" }, // joined above
    ],
  });
  assert.deepEqual(r, {
    groupId: "g",
    added: ["b", "c", "q"],
    failed: [
      { id: "nobody", code: "invalid_target" },
      { id: "off", code: "endpoint_disabled" },
      { id: "p", code: "talk_password_required" },
    ],
    members: ["b", "c", "o", "q"],
  });
  assert.deepEqual(members(db, "g"), ["b", "c", "o", "q"]);
  assert.equal(owner(db, "g"), "o");
  assert.equal(codeOf(() => create(db)), "id_taken");
});

Deno.test("group.add checks each member's talk-password verdict against the version now", () => {
  const cases: {
    name: string;
    verdict: "ok" | "talk_password_invalid";
    talkVersion?: number;
    code: string;
    grant: boolean;
  }[] = [
    {
      name: "verified against the current version",
      verdict: "ok",
      talkVersion: 2,
      code: "added",
      grant: true,
    },
    {
      name: "verified against an older version",
      verdict: "ok",
      talkVersion: 1,
      code: "talk_password_invalid",
      grant: false,
    },
    {
      name: "no password seen, one set since",
      verdict: "ok",
      code: "talk_password_required",
      grant: false,
    },
    {
      name: "wrong password",
      verdict: "talk_password_invalid",
      code: "talk_password_invalid",
      grant: false,
    },
  ];
  for (const c of cases) {
    const db = people();
    create(db, { members: [{ id: "b", verdict: "ok" }] });
    // Any member may add (spec 6.7 leaves it open; we chose members, not only the owner).
    const r = addToGroup(db, {
      callerId: "b",
      groupId: "g",
      members: [{ id: "p", verdict: c.verdict, talkVersion: c.talkVersion }],
      maxMembers: 100,
    }, T0);
    const got = r.added.includes("p") ? "added" : r.failed[0]?.code;
    assert.equal(got, c.code, c.name);
    assert.equal(
      countRows(db, "talk_grants", "sender_id = 'b' AND target_id = 'p'"),
      c.grant ? 1 : 0,
      c.name,
    );
  }
});

Deno.test("group.add refuses an unknown group and a caller outside it; the admin skips checks", () => {
  const db = people();
  create(db, { members: [{ id: "b", verdict: "ok" }] });
  const add = {
    groupId: "g",
    members: [{ id: "p", verdict: "talk_password_required" as const }],
    maxMembers: 100,
  };
  assert.equal(
    codeOf(() => addToGroup(db, { ...add, callerId: "o", groupId: "nope" }, T0)),
    "not_found",
  );
  assert.equal(codeOf(() => addToGroup(db, { ...add, callerId: "c" }, T0)), "not_member");
  // spec 8: 加人，后台不要求对话密码 — and writes no grant.
  const r = addToGroup(db, { ...add, callerId: "", admin: true }, T0);
  assert.deepEqual(r.added, ["p"]);
  assert.equal(countRows(db, "talk_grants"), 0);
});

Deno.test("members beyond max_group_members fail with group_full, the owner counted", () => {
  const db = people();
  const r = create(db, {
    maxMembers: 3,
    members: ["b", "c", "d", "nobody"].map((id) => ({ id, verdict: "ok" as const })),
  });
  assert.deepEqual(r.added, ["b", "c"]);
  assert.deepEqual(r.failed, [{ id: "d", code: "group_full" }, {
    id: "nobody",
    code: "group_full",
  }]);
  const more = addToGroup(db, {
    callerId: "o",
    groupId: "g",
    members: [{ id: "d", verdict: "ok" }],
    maxMembers: 3,
  }, T0);
  assert.deepEqual(more.failed, [{ id: "d", code: "group_full" }]);
  assert.equal(members(db, "g").length, 3);
});

Deno.test("owner-only group ops refuse other callers with the spec 6.10 codes", () => {
  const db = people();
  create(db, { members: ["b", "c"].map((id) => ({ id, verdict: "ok" as const })) });
  const cases: [string, () => unknown, string][] = [
    [
      "remove by a member",
      () => removeFromGroup(db, { callerId: "b", groupId: "g", endpointId: "c" }, T0),
      "forbidden",
    ],
    [
      "remove the owner",
      () => removeFromGroup(db, { callerId: "o", groupId: "g", endpointId: "o" }, T0),
      "forbidden",
    ],
    [
      "remove by an outsider",
      () => removeFromGroup(db, { callerId: "d", groupId: "g", endpointId: "c" }, T0),
      "not_member",
    ],
    [
      "remove a non-member",
      () => removeFromGroup(db, { callerId: "o", groupId: "g", endpointId: "d" }, T0),
      "not_member",
    ],
    [
      "remove from no group",
      () => removeFromGroup(db, { callerId: "o", groupId: "x", endpointId: "c" }, T0),
      "not_found",
    ],
    [
      "owner leaves",
      () => leaveGroup(db, { callerId: "o", groupId: "g" }, T0),
      "owner_cannot_leave",
    ],
    ["outsider leaves", () => leaveGroup(db, { callerId: "d", groupId: "g" }, T0), "not_member"],
    [
      "transfer by a member",
      () => transferGroup(db, { callerId: "b", groupId: "g", endpointId: "c" }, T0),
      "forbidden",
    ],
    [
      "transfer to a non-member",
      () => transferGroup(db, { callerId: "o", groupId: "g", endpointId: "d" }, T0),
      "not_member",
    ],
    [
      "rename by a member",
      () => renameGroup(db, { callerId: "b", groupId: "g", name: "x" }, T0),
      "forbidden",
    ],
    [
      "dissolve by a member",
      () => dissolveGroup(db, { callerId: "b", groupId: "g" }, T0),
      "forbidden",
    ],
  ];
  for (const [name, fn, code] of cases) assert.equal(codeOf(fn), code, name);
  assert.deepEqual(members(db, "g"), ["b", "c", "o"], "nothing changed");
});

Deno.test("group.transfer hands ownership over, after which the old owner may leave", () => {
  const db = people();
  create(db, { members: [{ id: "b", verdict: "ok" }] });
  const r = transferGroup(db, { callerId: "o", groupId: "g", endpointId: "b" }, T0);
  assert.deepEqual(r, {
    members: ["b", "o"],
    event: { event: "owner_changed", endpointId: "b" },
    revoked: [],
    receipts: [],
  });
  assert.equal(owner(db, "g"), "b");
  assert.deepEqual(leaveGroup(db, { callerId: "o", groupId: "g" }, T0).event, {
    event: "left",
    endpointId: "o",
  });
  const renamed = renameGroup(db, { callerId: "b", groupId: "g", name: "新名" }, T0);
  assert.deepEqual(renamed.event, { event: "renamed", endpointId: "b" });
  assert.equal(
    (db.prepare("SELECT name FROM groups WHERE id = 'g'").get() as { name: string }).name,
    "新名",
  );
});

/** Group g = o, b, c; one group message from o pending for b (pushed) and c; one direct o -> b. */
function busyGroup(db: DatabaseSync) {
  addGroup(db, "g", ["o", "b", "c"]);
  addGroup(db, "h", ["o", "b"]);
  const toGroup = send(db, "o", { id: "mg", toKind: "group", toId: "g" }).seq!;
  const toOther = send(db, "o", { id: "mh", toKind: "group", toId: "h" }).seq!;
  const direct = send(db, "o", { id: "md", toId: "b" }).seq!;
  push(db, "b", "cb");
  return { toGroup, toOther, direct };
}

Deno.test("leaving or being removed rejects that member's pending group deliveries (left_group)", () => {
  for (const how of ["leave", "remove"] as const) {
    const db = people();
    const { toGroup, toOther, direct } = busyGroup(db);
    const r = how === "leave"
      ? leaveGroup(db, { callerId: "b", groupId: "g" }, T0 + 1)
      : removeFromGroup(db, { callerId: "o", groupId: "g", endpointId: "b" }, T0 + 1);
    assert.deepEqual(r.members, ["b", "c", "o"], how);
    assert.deepEqual(r.event, {
      event: how === "leave" ? "left" : "member_removed",
      endpointId: "b",
    });
    assert.deepEqual(r.revoked, [{
      endpointId: "b",
      connCode: "cb",
      msgId: "mg",
      from: "o",
      reason: "left_group",
    }]);
    assert.deepEqual(r.receipts.map((x) => `${x.msgId}:${x.endpointId}:${x.state}:${x.reason}`), [
      "mg:b:rejected:left_group",
    ]);
    assert.deepEqual(receiptLines(db), ["o>mg:b:rejected:left_group"], how);
    assert.deepEqual(deliveryLines(db, toGroup), ["b:rejected:left_group", "c:pending:"], how);
    // Other groups and direct messages are not touched.
    assert.deepEqual(deliveryLines(db, toOther), ["b:pending:"], how);
    assert.deepEqual(deliveryLines(db, direct), ["b:pending:"], how);
    assert.deepEqual(members(db, "g"), ["c", "o"], how);
  }
});

Deno.test("a left member's rejection finalizes the message when it was the last pending one", () => {
  const db = people();
  addGroup(db, "g", ["o", "b"]);
  const seq = send(db, "o", { id: "m", toKind: "group", toId: "g", receipt: false }).seq!;
  const r = leaveGroup(db, { callerId: "b", groupId: "g" }, T0 + 1);
  assert.deepEqual(r.receipts, [], "receipt: false writes none");
  assert.deepEqual(r.revoked, [], "never pushed, nothing to revoke");
  assert.equal(messageLine(db, seq), "completed:");
  assert.equal(countRows(db, "message_bodies"), 0);
});

Deno.test("group.dissolve voids the group's messages and deletes the group", () => {
  const db = people();
  const { toGroup, toOther } = busyGroup(db);
  const later = send(db, "b", { id: "ms", toKind: "group", toId: "g", sendAt: T0 + 60_000 }).seq!;
  const quiet = send(db, "c", {
    id: "mq",
    toKind: "group",
    toId: "g",
    sendAt: T0 + 60_000,
    receipt: false,
  }).seq!;
  const r = dissolveGroup(db, { callerId: "o", groupId: "g" }, T0 + 1);
  assert.deepEqual(r.members, ["b", "c", "o"]);
  assert.deepEqual(r.event, { event: "dissolved", endpointId: "o" });
  assert.deepEqual(r.revoked, [{
    endpointId: "b",
    connCode: "cb",
    msgId: "mg",
    from: "o",
    reason: "group_dissolved",
  }]);
  assert.deepEqual(deliveryLines(db, toGroup), [
    "b:rejected:group_dissolved",
    "c:rejected:group_dissolved",
  ]);
  assert.equal(messageLine(db, toGroup), "completed:");
  assert.equal(messageLine(db, later), "completed:group_dissolved");
  assert.equal(messageLine(db, quiet), "completed:group_dissolved");
  // spec 6.4: a message-level receipt has an empty endpoint_id; receipt=false gets none.
  assert.deepEqual(receiptLines(db).sort(), [
    "b>ms::rejected:group_dissolved",
    "o>mg:b:rejected:group_dissolved",
    "o>mg:c:rejected:group_dissolved",
  ]);
  assert.deepEqual(r.receipts.length, 3);
  assert.equal(countRows(db, "groups", "id = 'g'"), 0);
  assert.equal(countRows(db, "group_members", "group_id = 'g'"), 0);
  assert.deepEqual(deliveryLines(db, toOther), ["b:pending:"], "group h is untouched");
});

Deno.test("the admin may remove, transfer, rename and dissolve without being a member", () => {
  const db = people();
  create(db, { members: ["b", "c"].map((id) => ({ id, verdict: "ok" as const })) });
  const admin = { callerId: "", groupId: "g", admin: true };
  assert.deepEqual(removeFromGroup(db, { ...admin, endpointId: "c" }, T0).members, ["b", "c", "o"]);
  assert.equal(codeOf(() => removeFromGroup(db, { ...admin, endpointId: "o" }, T0)), "forbidden");
  transferGroup(db, { ...admin, endpointId: "b" }, T0);
  assert.equal(owner(db, "g"), "b");
  assert.deepEqual(renameGroup(db, { ...admin, name: "n" }, T0).event, {
    event: "renamed",
    endpointId: "",
  });
  assert.deepEqual(dissolveGroup(db, admin, T0).event, { event: "dissolved", endpointId: "" });
  assert.equal(countRows(db, "groups"), 0);
});
