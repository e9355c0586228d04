import assert from "node:assert/strict";
import { parseArgs, UsageError } from "./args.ts";

Deno.test("parseArgs() separates words, flags and valued options", () => {
  const a = parseArgs(["admin", "init", "--help", "--out", "x.db", "--level=debug"]);
  assert.deepEqual(a.positional, ["admin", "init"]);
  assert.ok(a.flags.has("help"));
  assert.equal(a.options.get("out"), "x.db");
  assert.equal(a.options.get("level"), "debug");
});

Deno.test("parseArgs() rejects --out without a value", () => {
  assert.throws(() => parseArgs(["backup", "--out"]), UsageError);
  assert.throws(() => parseArgs(["backup", "--out", "--help"]), UsageError);
});

Deno.test("parseArgs() treats -h as --help", () => {
  assert.ok(parseArgs(["serve", "-h"]).flags.has("help"));
});
