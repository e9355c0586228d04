import assert from "node:assert/strict";
import { uuidv7 } from "./uuid.ts";

Deno.test("uuidv7() has version 7, the RFC variant and the time in its first 48 bits", () => {
  const now = Date.UTC(2026, 11, 1, 12, 0, 0);
  const id = uuidv7(now);
  assert.match(id, /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  assert.equal(parseInt(id.replace(/-/g, "").slice(0, 12), 16), now);
  assert.notEqual(uuidv7(now), id, "the random part differs");
});
