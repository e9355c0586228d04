import assert from "node:assert/strict";
import { addEndpoint, addGroup, codeOf, testDb } from "../ops/_testing.ts";
import { getGroup, groupMemberIds, listMyGroups } from "./groups.ts";

// spec 6.7 group.list and group.get: main-thread reads, paged by id.

function fixture() {
  const db = testDb();
  for (const id of ["a", "b", "c", "d", "e"]) addEndpoint(db, id, { name: `name-${id}` });
  addGroup(db, "g3", ["a", "b"]);
  addGroup(db, "g1", ["b", "a", "c"]);
  addGroup(db, "g2", ["c", "d"]);
  addGroup(db, "g4", ["a", "b", "c", "d", "e"]);
  return db;
}

Deno.test("group.list pages the caller's groups by id with owner and member count", () => {
  const db = fixture();
  const pages: { cursor: string; limit: number; ids: string[]; next: string }[] = [
    { cursor: "", limit: 2, ids: ["g1", "g3"], next: "g3" },
    { cursor: "g3", limit: 2, ids: ["g4"], next: "" },
    { cursor: "", limit: 500, ids: ["g1", "g3", "g4"], next: "" },
  ];
  for (const p of pages) {
    const r = listMyGroups(db, "a", p.cursor, p.limit);
    assert.deepEqual(r.items.map((g) => g.id), p.ids, p.cursor);
    assert.equal(r.next_cursor, p.next, p.cursor);
  }
  assert.deepEqual(listMyGroups(db, "a", "", 1).items, [
    { id: "g1", name: "g1", owner_id: "b", member_count: 3 },
  ]);
  assert.deepEqual(listMyGroups(db, "nobody", "", 10), { items: [], next_cursor: "" });
});

Deno.test("group.get pages members with names and live presence from the connection table", () => {
  const db = fixture();
  const online = new Set(["b", "e"]);
  const first = getGroup(db, "c", "g4", "", 2, (id) => online.has(id));
  assert.deepEqual(first, {
    id: "g4",
    name: "g4",
    owner_id: "a",
    member_count: 5,
    members: [
      { id: "a", name: "name-a", online: false },
      { id: "b", name: "name-b", online: true },
    ],
    next_cursor: "b",
  });
  const rest = getGroup(db, "c", "g4", first.next_cursor, 200, (id) => online.has(id));
  assert.deepEqual(rest.members.map((m) => `${m.id}:${m.online}`), [
    "c:false",
    "d:false",
    "e:true",
  ]);
  assert.equal(rest.next_cursor, "");
});

Deno.test("group.get refuses an unknown group and a caller who is not a member", () => {
  const db = fixture();
  const cases: [string, string, string][] = [
    ["unknown group", "nope", "not_found"],
    ["not a member", "g2", "not_member"],
    ["a member", "g1", "ok"],
  ];
  for (const [name, groupId, code] of cases) {
    assert.equal(codeOf(() => getGroup(db, "a", groupId, "", 10, () => false)), code, name);
  }
});

Deno.test("groupMemberIds lists every member by id, none for an unknown group", () => {
  const db = fixture();
  assert.deepEqual(groupMemberIds(db, "g1"), ["a", "b", "c"]);
  assert.deepEqual(groupMemberIds(db, "nope"), []);
});
