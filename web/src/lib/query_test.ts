import assert from "node:assert/strict";
import { cleanQuery, pageValues, queryPage, querySize, queryText, sameQuery } from "./query.ts";

Deno.test("cleanQuery drops empty values and page 1", () => {
  assert.deepEqual(cleanQuery({ q: "door", source: "", enabled: undefined, page: 1 }), {
    q: "door",
  });
  assert.deepEqual(cleanQuery({ state: "scheduled,dispatched", page: 3, x: null }), {
    state: "scheduled,dispatched",
    page: "3",
  });
});

Deno.test("queryPage accepts whole numbers from 1 only", () => {
  assert.deepEqual(queryPage({ page: "4" }), 4);
  for (const bad of ["0", "-2", "1.5", "x", ""]) assert.deepEqual(queryPage({ page: bad }), 1);
  assert.deepEqual(queryPage({ page: ["2", "3"] }), 1);
  assert.deepEqual(queryPage({}), 1);
});

Deno.test("queryText and sameQuery", () => {
  assert.deepEqual(queryText({ q: "a" }, "q"), "a");
  assert.deepEqual(queryText({ q: null }, "q"), "");
  assert.deepEqual(sameQuery({ q: "a", page: "2" }, { page: "2", q: "a" }), true);
  assert.deepEqual(sameQuery({ q: "a" }, { q: "a", page: "2" }), false);
});

Deno.test("querySize and pageValues keep only offered, non-default sizes", () => {
  assert.equal(querySize({ size: "20" }), 20);
  assert.equal(querySize({ size: "7" }), 50);
  assert.equal(querySize({}), 50);
  assert.deepEqual(cleanQuery(pageValues(2, 20)), { page: "2", size: "20" });
  assert.deepEqual(cleanQuery(pageValues(1, 50)), {});
});
