import assert from "node:assert/strict";
import { addEndpoint, T0, testDb } from "../ops/_testing.ts";
import { directoryList, presenceOf } from "./directory.ts";

// spec 6.5 presence.get and directory.list: online truth from the connection table.

Deno.test("presence.get answers in request order with not_found items for unknown ids", () => {
  const db = testDb();
  addEndpoint(db, "on", { onlineSince: T0 + 5, offlineSince: T0 });
  addEndpoint(db, "off", { onlineSince: T0, offlineSince: T0 + 9 });
  addEndpoint(db, "never", { offlineSince: null });
  const online = new Set(["on"]);
  assert.deepEqual(presenceOf(db, ["off", "nobody", "on", "never"], (id) => online.has(id)), [
    { id: "off", online: false, since_ms: T0 + 9 },
    { id: "nobody", not_found: true },
    { id: "on", online: true, since_ms: T0 + 5 },
    { id: "never", online: false, since_ms: null },
  ]);
  assert.deepEqual(presenceOf(db, [], () => true), []);
});

Deno.test("directory.list matches an id prefix or a name substring, ignoring case", () => {
  const db = testDb();
  const rows: [string, string][] = [
    ["door-1", "Front Door"],
    ["Door-2", "后门"],
    ["lamp", "门口灯"],
    ["oven", "ÄRGER"],
    ["x-door", "X"],
  ];
  for (const [id, name] of rows) addEndpoint(db, id, { name });
  const cases: [string, string[]][] = [
    ["", ["Door-2", "door-1", "lamp", "oven", "x-door"]],
    ["door", ["Door-2", "door-1"]],
    ["DOOR-1", ["door-1"]],
    ["front", ["door-1"]],
    ["门", ["Door-2", "lamp"]],
    ["ärg", ["oven"]],
    ["-door", []],
    ["zzz", []],
  ];
  for (const [query, ids] of cases) {
    const r = directoryList(db, "", 200, query, () => false);
    assert.deepEqual(r.items.map((i) => i.id), ids, query);
    assert.equal(r.next_cursor, "", query);
  }
});

Deno.test("directory.list pages by id and reports presence, times and talk_password_set", () => {
  const db = testDb();
  // 1200 endpoints so a filtered scan crosses several chunks.
  for (let i = 0; i < 1200; i++) {
    const id = `e${String(i).padStart(4, "0")}`;
    addEndpoint(db, id, { name: i % 2 === 0 ? "even" : "odd", talkHash: i === 2 ? "h" : null });
  }
  const first = directoryList(db, "", 2, "", (id) => id === "e0001");
  assert.deepEqual(first, {
    items: [
      {
        id: "e0000",
        name: "even",
        online: false,
        online_since_ms: null,
        offline_since_ms: T0,
        talk_password_set: false,
      },
      {
        id: "e0001",
        name: "odd",
        online: true,
        online_since_ms: null,
        offline_since_ms: T0,
        talk_password_set: false,
      },
    ],
    next_cursor: "e0001",
  });
  const second = directoryList(db, first.next_cursor, 1, "", () => false);
  assert.deepEqual(second.items.map((i) => [i.id, i.talk_password_set]), [["e0002", true]]);
  // Filtered pages: the odd names, 200 at a time, walk the whole table once.
  const seen: string[] = [];
  let cursor = "";
  let pages = 0;
  do {
    const r = directoryList(db, cursor, 500, "ODD", () => false);
    assert.ok(r.items.length <= 200, "limit is capped at 200");
    seen.push(...r.items.map((i) => i.id));
    cursor = r.next_cursor;
    pages++;
  } while (cursor !== "");
  assert.equal(pages, 3);
  assert.equal(seen.length, 600);
  assert.ok(seen.every((id) => Number(id.slice(1)) % 2 === 1));
});
