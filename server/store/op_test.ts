import assert from "node:assert/strict";
import { fromWireError, OpError, toWireError } from "./op.ts";

Deno.test("an OpError crosses the wire with its code, data and message", () => {
  const wire = structuredClone(toWireError(new OpError("conflict", { seq: 7 }, "Taken")));
  assert.deepEqual(wire, { code: "conflict", message: "Taken", data: { seq: 7 } });
  const back = fromWireError(wire, "message.submit");
  assert.ok(back instanceof OpError);
  assert.equal(back.code, "conflict");
  assert.equal(back.message, "Taken");
  assert.deepEqual(back.data, { seq: 7 });
});

Deno.test("any other error becomes busy with the original message as cause", () => {
  const wire = toWireError(new RangeError("Disk is full"));
  assert.deepEqual(wire, { message: "Disk is full" });
  const back = fromWireError(wire, "settings.set");
  assert.equal(back.code, "busy");
  assert.equal(back.message, "Op settings.set failed");
  assert.equal(back.cause, "Disk is full");
  assert.equal(fromWireError(toWireError("thrown string"), "x").cause, "thrown string");
});
