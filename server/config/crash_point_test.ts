import assert from "node:assert/strict";
import { parseCrashAt } from "./crash_point.ts";

Deno.test("parseCrashAt() reads a name and an optional positive count", () => {
  assert.deepEqual(parseCrashAt("after_mark"), { name: "after_mark", n: 1 });
  assert.deepEqual(parseCrashAt("after_publish:100"), { name: "after_publish", n: 100 });
  assert.equal(parseCrashAt(undefined), null);
  assert.equal(parseCrashAt(""), null);
  assert.equal(parseCrashAt("after_mark:0"), null);
  assert.equal(parseCrashAt("After Mark"), null);
});
