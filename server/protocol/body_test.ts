import assert from "node:assert/strict";
import { base64DecodedLength, decodeBodyData, encodeBodyData } from "./body.ts";

Deno.test("utf8 and canonical base64 bodies round-trip through decode and encode", () => {
  const table: { enc: "utf8" | "base64"; data: string; bytes: number[] }[] = [
    { enc: "utf8", data: "", bytes: [] },
    { enc: "utf8", data: "hi中", bytes: [104, 105, 0xe4, 0xb8, 0xad] },
    { enc: "base64", data: "", bytes: [] },
    { enc: "base64", data: "aGk=", bytes: [104, 105] },
    { enc: "base64", data: "AAEC/w==", bytes: [0, 1, 2, 255] },
    { enc: "base64", data: "+/+/", bytes: [0xfb, 0xff, 0xbf] },
  ];
  for (const { enc, data, bytes } of table) {
    const decoded = decodeBodyData(enc, data);
    assert.deepEqual(decoded, new Uint8Array(bytes), data);
    assert.equal(encodeBodyData(enc, new Uint8Array(bytes)), data);
  }
});

Deno.test("non-canonical base64 is rejected", () => {
  const table: Record<string, string> = {
    missingPadding: "aGk",
    extraPadding: "aGk==",
    onlyPadding: "====",
    innerSpace: "aG k=",
    newline: "aGVs\nbG8=",
    urlAlphabet: "-_-_",
    trailingBits: "aGl=",
    badCharacter: "aGk!",
    paddingInMiddle: "aG==aGk=",
  };
  for (const [name, data] of Object.entries(table)) {
    assert.equal(decodeBodyData("base64", data), null, name);
  }
});

Deno.test("base64DecodedLength counts the padding", () => {
  const table: [string, number][] = [["", 0], ["aGk=", 2], ["aA==", 1], ["aGVs", 3], ["==", 0]];
  for (const [data, length] of table) assert.equal(base64DecodedLength(data), length, data);
});

Deno.test("encodeBodyData reads a view at an offset correctly", () => {
  const backing = new Uint8Array([9, 104, 105, 9]);
  assert.equal(encodeBodyData("base64", backing.subarray(1, 3)), "aGk=");
});
