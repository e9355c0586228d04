import assert from "node:assert/strict";
import { tabTitle } from "./title.ts";

Deno.test("tabTitle puts the page first", () => {
  assert.equal(tabTitle("端 door-1"), "端 door-1 - NixMsg 管理后台");
  assert.equal(tabTitle(""), "NixMsg 管理后台");
});
