import assert from "node:assert/strict";
import { CursorPages } from "./cursor_pages.ts";

Deno.test("CursorPages learns each page's cursor from the page before it", () => {
  const p = new CursorPages();
  assert.equal(p.startOf(1), "");
  assert.equal(p.startOf(2), null);
  assert.equal(p.pageCount(50), 1);
  p.loaded(1, "c2");
  assert.equal(p.startOf(2), "c2");
  assert.equal(p.pageCount(50), 2, "one more page is offered while there is more");
  p.loaded(2, "c3");
  p.loaded(3, "");
  assert.equal(p.pageCount(50), 3);
  assert.equal(p.startOf(4), null);
});

Deno.test("CursorPages uses the total when the list reports one", () => {
  const p = new CursorPages();
  p.loaded(1, "c2", 120);
  assert.equal(p.pageCount(50), 3);
  assert.equal(p.total, 120);
  p.loaded(1, "", 0);
  assert.equal(p.pageCount(50), 1, "an empty list still has one page");
});

Deno.test("CursorPages forgets later pages when an earlier one turns out to be the last", () => {
  const p = new CursorPages();
  p.loaded(1, "c2");
  p.loaded(2, "c3");
  p.loaded(1, "");
  assert.equal(p.knownPages, 1);
  assert.equal(p.startOf(2), null);
  p.reset();
  assert.equal(p.startOf(1), "");
  assert.equal(p.total, null);
});
