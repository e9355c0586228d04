import assert from "node:assert/strict";
import { compilePath } from "./path_match.ts";

Deno.test("an exact path matches only itself", () => {
  const p = compilePath("/healthz");
  assert.deepEqual(p.match("/healthz"), {});
  assert.equal(p.match("/healthz/"), null);
  assert.equal(p.match("/healthzz"), null);
  assert.equal(p.match("/"), null);
  assert.deepEqual(compilePath("/").match("/"), {});
  assert.equal(compilePath("/").match("/x"), null);
});

Deno.test(":name segments capture one decoded, non-empty segment each", () => {
  const p = compilePath("/api/admin/groups/:id/members/:endpointId");
  assert.deepEqual(p.match("/api/admin/groups/g1/members/e%20x"), { id: "g1", endpointId: "e x" });
  assert.equal(p.match("/api/admin/groups//members/e1"), null);
  assert.equal(p.match("/api/admin/groups/g1/members"), null);
  assert.equal(p.match("/api/admin/groups/g1/members/e1/x"), null);
  assert.equal(p.match("/api/admin/groups/%E0%A4/members/e1"), null, "malformed escape");
});

Deno.test("a trailing /* matches the prefix and everything below it", () => {
  const p = compilePath("/assets/*");
  assert.deepEqual(p.match("/assets"), { "*": "" });
  assert.deepEqual(p.match("/assets/"), { "*": "" });
  assert.deepEqual(p.match("/assets/js/app%20x.js"), { "*": "js/app x.js" });
  assert.equal(p.match("/assetsx"), null);
  assert.equal(p.match("/other/x"), null);
  assert.deepEqual(compilePath("/*").match("/a/b"), { "*": "a/b" });
  assert.deepEqual(compilePath("/u/:id/*").match("/u/7/a"), { id: "7", "*": "a" });
});

Deno.test("compilePath refuses malformed patterns", () => {
  for (const bad of ["healthz", "/a*/b", "/a/*/b", "/a/:"]) {
    assert.throws(() => compilePath(bad), /Compile route path/, bad);
  }
});
