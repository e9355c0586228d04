import assert from "node:assert/strict";
import { IMPORT_HEADER, toCsv } from "./csv.ts";

Deno.test("toCsv quotes fields with commas, quotes and line breaks, with a BOM and CRLF", () => {
  const text = toCsv([["id", "login_password"], ["a", 'x,"y"'], ["门口", "line\nbreak"]]);
  assert.equal(text, '\uFEFFid,login_password\r\na,"x,""y"""\r\n门口,"line\nbreak"\r\n');
});

Deno.test("the import template header is the one the server expects", () => {
  assert.equal(
    IMPORT_HEADER.join(","),
    "id,name,login_password,talk_password,default_delay_seconds,remark",
  );
});
