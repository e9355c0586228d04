import assert from "node:assert/strict";
import { isChunkLoadError } from "./chunk_error.ts";

Deno.test("isChunkLoadError knows the browsers' failed dynamic imports", () => {
  const chrome = new TypeError(
    "Failed to fetch dynamically imported module: http://127.0.0.1/assets/GroupsPage-x.js",
  );
  assert.equal(isChunkLoadError(chrome), true);
  assert.equal(isChunkLoadError(new TypeError("Importing a module script failed.")), true);
  assert.equal(isChunkLoadError(new Error("Unable to preload CSS for /assets/a.css")), true);
  assert.equal(isChunkLoadError(new Error("Cannot read properties of null")), false);
});
