import assert from "node:assert/strict";
import { parseCsv } from "./csv.ts";
import { checkImport, type ImportCheck } from "./import_rows.ts";

// spec 8: the import is checked as a whole; every bad row is named with its reason.

const HEADER = "id,name,login_password,talk_password,default_delay_seconds,remark";

function check(lines: string[], existing: string[] = []): ImportCheck {
  const records = parseCsv(new TextEncoder().encode(lines.join("\n")));
  return checkImport(records, { maxScheduleSeconds: 100, exists: (id) => existing.includes(id) });
}

function problems(c: ImportCheck): string[] {
  return c.ok ? [] : c.problems.map((p) => `${p.row}:${p.column}`);
}

Deno.test("valid rows come back with delays in ms; empty id and password mean generate", () => {
  const c = check([HEADER, "a,甲,device-password,tp,7,r", ",,,,,"]);
  assert.ok(c.ok);
  assert.deepEqual(c.rows, [
    {
      row: 2,
      id: "a",
      name: "甲",
      loginPassword: "device-password",
      talkPassword: "tp",
      defaultDelayMs: 7000,
      remark: "r",
    },
    {
      row: 3,
      id: "",
      name: "",
      loginPassword: "",
      talkPassword: "",
      defaultDelayMs: 0,
      remark: "",
    },
  ]);
});

Deno.test("the header may be in any order but must hold exactly the six columns", () => {
  const reordered = check([
    "remark,id,name,login_password,talk_password,default_delay_seconds",
    "r,a,,,,",
  ]);
  assert.ok(reordered.ok);
  assert.equal(reordered.rows[0].id, "a");
  assert.equal(reordered.rows[0].remark, "r");
  assert.deepEqual(problems(check(["id,name", "a,b"])), ["1:"]);
  assert.deepEqual(problems(check([HEADER + ",id", "a"])), ["1:"]);
  assert.deepEqual(problems(check([HEADER + ",x", "a"])), ["1:"]);
});

Deno.test("every bad field of every row is listed: id, duplicate, existing, password, lengths, delay, field count", () => {
  const c = check([
    HEADER,
    "a,,,,,",
    "a,,,,,", // 3 duplicate
    "has space,,,,,", // 4
    "old,,,,,", // 5 exists
    "b,,short,,,", // 6
    "c,,nst_abcdefgh,,,", // 7
    `d,${"x".repeat(65)},,${"t".repeat(129)},101,${"r".repeat(257)}`, // 8: four problems
    "e,,,,-1,", // 9
    "f,,", // 10
  ], ["old"]);
  assert.deepEqual(problems(c), [
    "3:id",
    "4:id",
    "5:id",
    "6:login_password",
    "7:login_password",
    "8:name",
    "8:talk_password",
    "8:default_delay_seconds",
    "8:remark",
    "9:default_delay_seconds",
    "10:",
  ]);
});

Deno.test("no data rows, or more than 1000, is refused", () => {
  assert.deepEqual(problems(check([HEADER])), ["1:"]);
  assert.deepEqual(problems(check([])), ["1:"]);
  const many = [HEADER, ...Array.from({ length: 1001 }, (_, i) => `x${i},,,,,`)];
  assert.deepEqual(problems(check(many)), ["1002:"]);
  const max = [HEADER, ...Array.from({ length: 1000 }, (_, i) => `x${i},,,,,`)];
  assert.ok(check(max).ok);
});
