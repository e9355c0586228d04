import assert from "node:assert/strict";
import { CsvError, parseCsv } from "./csv.ts";

// spec 8: the import reads UTF-8 CSV with an optional BOM (RFC 4180 quoting).

const enc = (s: string) => new TextEncoder().encode(s);
const rows = (s: string) => parseCsv(enc(s)).map((r) => [r.row, ...r.fields]);

Deno.test("parseCsv splits CRLF and LF records and drops a BOM", () => {
  assert.deepEqual(rows("\uFEFFa,b\r\nc,d\ne,f"), [[1, "a", "b"], [2, "c", "d"], [3, "e", "f"]]);
});

Deno.test("parseCsv keeps commas, quotes and line breaks inside quoted fields", () => {
  assert.deepEqual(rows('"a,1","say ""hi""","two\r\nlines"\r\nx,,""\r\n'), [
    [1, "a,1", 'say "hi"', "two\r\nlines"],
    [2, "x", "", ""],
  ]);
});

Deno.test("parseCsv skips empty lines but counts them, as a spreadsheet numbers rows", () => {
  assert.deepEqual(rows("h\r\n\r\na\r\n\r\n"), [[1, "h"], [3, "a"]]);
  assert.deepEqual(rows(""), []);
  assert.deepEqual(rows(",\n"), [[1, "", ""]], "a line of empty fields is a record");
});

Deno.test("parseCsv refuses bad quoting and invalid UTF-8 with the row it stopped at", () => {
  const rowOf = (bytes: Uint8Array) => {
    try {
      parseCsv(bytes);
    } catch (err) {
      if (err instanceof CsvError) return err.row;
      throw err;
    }
    return 0;
  };
  assert.equal(rowOf(enc('a\nb"c\n')), 2);
  assert.equal(rowOf(enc('a\n"b"c\n')), 2);
  assert.equal(rowOf(enc('a\nb\n"open')), 3);
  assert.equal(rowOf(new Uint8Array([0x61, 0xff, 0x0a])), 1);
});
