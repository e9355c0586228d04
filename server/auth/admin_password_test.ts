import assert from "node:assert/strict";
import { adminPasswordProblem } from "./admin_password.ts";

Deno.test("adminPasswordProblem() counts code points, not UTF-16 units", () => {
  assert.match(adminPasswordProblem("😀".repeat(6)) ?? "", /at least 12/);
  assert.match(adminPasswordProblem("short-pw") ?? "", /at least 12/);
  assert.equal(adminPasswordProblem("😀".repeat(12)), null);
  assert.equal(adminPasswordProblem("a".repeat(12)), null);
  assert.equal(adminPasswordProblem("a".repeat(128)), null);
  assert.match(adminPasswordProblem("😀".repeat(129)) ?? "", /at most 128/);
});
