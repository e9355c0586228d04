import assert from "node:assert/strict";
import { test } from "node:test";
import { uuidv7 } from "../../src/uuid.ts";

test("uuidv7 is 36 characters, version 7, RFC variant, with the time in front", () => {
  const at = Date.UTC(2026, 10, 29, 12, 0, 0);
  const id = uuidv7(at);
  assert.match(id, /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  assert.equal(parseInt(id.replace(/-/g, "").slice(0, 12), 16), at);
  const ids = new Set(Array.from({ length: 1000 }, () => uuidv7()));
  assert.equal(ids.size, 1000);
});
