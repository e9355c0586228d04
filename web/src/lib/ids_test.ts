import assert from "node:assert/strict";
import { parseIds } from "./ids.ts";

Deno.test("parseIds splits on spaces, commas and line breaks and drops repeats", () => {
  assert.deepEqual(parseIds(" door-1, door-2\ndoor-1，door.3\t"), ["door-1", "door-2", "door.3"]);
  assert.deepEqual(parseIds(""), []);
});
