import assert from "node:assert/strict";
import { binaryArgs } from "../ops/_testing.ts";
import {
  contractTest,
  countRows,
  deliveryLines,
  messageLine,
  receiptLines,
  T0,
} from "./_stores.ts";

// Group writes (spec 6.7) and their invalidations (spec 7.6) on both stores.

contractTest("group.create adds who it can and lists every failure with its code", async (s) => {
  for (const id of ["o", "b", "c"]) await s.addEndpoint(id);
  await s.addEndpoint("off", { enabled: false });
  await s.addEndpoint("locked", { talkHash: "h", talkVersion: 3 });
  const r = await s.run("group.create", {
    ownerId: "o",
    groupId: "g",
    name: "G",
    maxMembers: 4,
    members: [
      { id: "b", verdict: "ok" },
      { id: "b", verdict: "ok" },
      { id: "nobody", verdict: "ok" },
      { id: "off", verdict: "ok" },
      { id: "locked", verdict: "ok" },
      { id: "c", verdict: "ok" },
    ],
  });
  assert.deepEqual(r, {
    groupId: "g",
    added: ["b", "c"],
    failed: [
      { id: "nobody", code: "invalid_target" },
      { id: "off", code: "endpoint_disabled" },
      { id: "locked", code: "talk_password_required" },
    ],
    members: ["b", "c", "o"],
  });
  assert.equal(
    await s.codeOf("group.create", {
      ownerId: "o",
      groupId: "g",
      name: "",
      maxMembers: 4,
      members: [],
    }),
    "id_taken",
  );
});

contractTest(
  "members beyond max_group_members fail with group_full, the owner counted",
  async (s) => {
    for (const id of ["o", "b", "c", "d"]) await s.addEndpoint(id);
    await s.addGroup("g", ["o", "b"]);
    const r = await s.run("group.add", {
      callerId: "b",
      groupId: "g",
      maxMembers: 3,
      members: [{ id: "c", verdict: "ok" }, { id: "d", verdict: "ok" }],
    });
    assert.deepEqual(r.added, ["c"]);
    assert.deepEqual(r.failed, [{ id: "d", code: "group_full" }]);
    assert.equal(await countRows(s, "group_members", "group_id = ?", "g"), 3);
  },
);

contractTest("owner-only group ops refuse other callers with the spec 6.10 codes", async (s) => {
  for (const id of ["o", "b", "x"]) await s.addEndpoint(id);
  await s.addGroup("g", ["o", "b"]);
  const cases = [
    [
      "remove by a member",
      s.codeOf("group.remove", { callerId: "b", groupId: "g", endpointId: "o" }),
      "forbidden",
    ],
    [
      "remove the owner",
      s.codeOf("group.remove", { callerId: "o", groupId: "g", endpointId: "o" }),
      "forbidden",
    ],
    [
      "remove a stranger",
      s.codeOf("group.remove", { callerId: "o", groupId: "g", endpointId: "x" }),
      "not_member",
    ],
    [
      "rename by an outsider",
      s.codeOf("group.rename", { callerId: "x", groupId: "g", name: "n" }),
      "not_member",
    ],
    [
      "transfer to an outsider",
      s.codeOf("group.transfer", { callerId: "o", groupId: "g", endpointId: "x" }),
      "not_member",
    ],
    [
      "dissolve unknown",
      s.codeOf("group.dissolve", { callerId: "o", groupId: "nope" }),
      "not_found",
    ],
    [
      "owner leaves",
      s.codeOf("group.leave", { callerId: "o", groupId: "g" }),
      "owner_cannot_leave",
    ],
  ] as const;
  for (const [name, got, want] of cases) assert.equal(await got, want, name);
  assert.equal(await countRows(s, "group_members", "group_id = ?", "g"), 2);
});

contractTest("transfer hands ownership over; rename names the caller", async (s) => {
  for (const id of ["o", "b"]) await s.addEndpoint(id);
  await s.addGroup("g", ["o", "b"]);
  const t = await s.run("group.transfer", { callerId: "o", groupId: "g", endpointId: "b" });
  assert.deepEqual(t.event, { event: "owner_changed", endpointId: "b" });
  const r = await s.run("group.rename", { callerId: "b", groupId: "g", name: "new" });
  assert.deepEqual([r.event, r.members], [{ event: "renamed", endpointId: "b" }, ["b", "o"]]);
  const left = await s.run("group.leave", { callerId: "o", groupId: "g" });
  assert.deepEqual(left.members, ["b", "o"]);
  assert.deepEqual(await s.rows("SELECT name, owner_id FROM groups"), [{
    name: "new",
    owner_id: "b",
  }]);
});

contractTest("leaving rejects that member's pending group deliveries (left_group)", async (s) => {
  for (const id of ["a", "b", "c"]) await s.addEndpoint(id);
  await s.addGroup("g", ["a", "b", "c"]);
  for (const id of ["b", "c"]) await s.run("context.connected", { endpointId: id, connCode: id });
  const m = await s.run("message.submit", binaryArgs("gm", { toKind: "group", toId: "g" }));
  await s.run("delivery.claim", { endpointId: "b", connCode: "b", limit: 5 });
  const r = await s.run("group.leave", { callerId: "b", groupId: "g" });
  assert.deepEqual(r.revoked, [
    { endpointId: "b", connCode: "b", msgId: "gm", from: "a", reason: "left_group" },
  ]);
  assert.deepEqual(r.receipts.map((x) => `${x.endpointId}:${x.state}:${x.reason}`), [
    "b:rejected:left_group",
  ]);
  assert.deepEqual(await deliveryLines(s, m.seq!), ["b:rejected:left_group", "c:pending:"]);
  assert.equal(await messageLine(s, m.seq!), "dispatched:");
});

contractTest(
  "dissolve voids pending and scheduled group messages and deletes the group",
  async (s) => {
    for (const id of ["a", "b"]) await s.addEndpoint(id);
    await s.addGroup("g", ["a", "b"]);
    await s.run("context.connected", { endpointId: "b" });
    const now = await s.run("message.submit", binaryArgs("d1", { toKind: "group", toId: "g" }));
    const later = await s.run(
      "message.submit",
      binaryArgs("d2", { toKind: "group", toId: "g", sendAt: T0 + 60_000 }),
    );
    const r = await s.run("group.dissolve", { callerId: "a", groupId: "g" });
    assert.deepEqual(r.members, ["a", "b"]);
    assert.deepEqual(r.event, { event: "dissolved", endpointId: "a" });
    assert.equal(await messageLine(s, now.seq!), "completed:");
    assert.equal(await messageLine(s, later.seq!), "completed:group_dissolved");
    assert.deepEqual(await receiptLines(s), [
      "a>d1:b:rejected:group_dissolved",
      "a>d2::rejected:group_dissolved",
    ]);
    assert.equal(await countRows(s, "groups"), 0);
    assert.equal(await countRows(s, "group_members"), 0);
  },
);

contractTest(
  "the admin may add without talk passwords and dissolve without membership",
  async (s) => {
    for (const id of ["o", "x"]) await s.addEndpoint(id);
    await s.addEndpoint("locked", { talkHash: "h" });
    await s.addGroup("g", ["o"]);
    const r = await s.run("group.add", {
      callerId: "",
      groupId: "g",
      admin: true,
      maxMembers: 10,
      members: [{ id: "locked", verdict: "talk_password_required" }],
    });
    assert.deepEqual(r.added, ["locked"]);
    const d = await s.run("group.dissolve", { callerId: "", groupId: "g", admin: true });
    assert.deepEqual(d.event, { event: "dissolved", endpointId: "" });
  },
);
