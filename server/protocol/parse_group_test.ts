import assert from "node:assert/strict";
import {
  assertFails,
  assertParses,
  BAD_OTHER,
  encodeWire,
  fixturesOf,
  GOOD_OTHER,
  TEST_LIMITS,
  wireOf,
} from "./fixtures.ts";
import type { RequestType } from "./frames.ts";
import { parseRequest } from "./parse.ts";

// spec 6.7
const TYPES: RequestType[] = [
  "group.create",
  "group.add",
  "group.remove",
  "group.leave",
  "group.transfer",
  "group.rename",
  "group.dissolve",
  "group.list",
  "group.get",
];

Deno.test("good group requests parse, an empty group id meaning server-chosen", () => {
  const fixtures = fixturesOf(GOOD_OTHER, TYPES);
  assert.ok(fixtures.length >= TYPES.length);
  for (const [name, fixture] of fixtures) assertParses(name, fixture);
});

Deno.test("bad group requests fail, too many members with group_full", () => {
  const fixtures = fixturesOf(BAD_OTHER, TYPES);
  assert.ok(fixtures.length >= TYPES.length);
  for (const [name, fixture] of fixtures) assertFails(name, fixture);
});

Deno.test("the member limit follows the configured max_group_members", () => {
  const limits = { ...TEST_LIMITS, max_group_members: 2 };
  const wire = (n: number) =>
    encodeWire(wireOf("group.add", {
      group_id: "g1",
      members: Array.from({ length: n }, (_, i) => ({ id: `e${i}` })),
    }));
  assert.ok(parseRequest(wire(2), limits).ok);
  const result = parseRequest(wire(3), limits);
  assert.ok(!result.ok && result.error.code === "group_full");
});
