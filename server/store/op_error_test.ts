import assert from "node:assert/strict";
import { OpError } from "./op_error.ts";

Deno.test("OpError carries its code, data, message and cause", () => {
  const bare = new OpError("id_taken");
  assert.equal(bare.code, "id_taken");
  assert.equal(bare.message, "id_taken");
  assert.equal(bare.data, undefined);
  assert.equal(bare.name, "OpError");

  const full = new OpError("busy", { state: "x" }, "Write failed", { cause: "disk full" });
  assert.ok(full instanceof Error);
  assert.deepEqual(full.data, { state: "x" });
  assert.equal(full.message, "Write failed");
  assert.equal(full.cause, "disk full");
});
