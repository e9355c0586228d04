import assert from "node:assert/strict";
import { charCount, utf8Length } from "./text.ts";

const SAMPLES: Record<string, { text: string; chars: number }> = {
  empty: { text: "", chars: 0 },
  ascii: { text: "hello", chars: 5 },
  latin: { text: "é", chars: 1 },
  chinese: { text: "中文", chars: 2 },
  emoji: { text: "😀", chars: 1 },
  mixed: { text: "a中😀<>&\u2028", chars: 7 },
  loneHigh: { text: "a\ud800", chars: 2 },
  loneLow: { text: "\udc00b", chars: 2 },
  reversedPair: { text: "\udc00\ud800", chars: 2 },
};

Deno.test("utf8Length matches the TextEncoder size, lone surrogates included", () => {
  const encoder = new TextEncoder();
  for (const [name, { text }] of Object.entries(SAMPLES)) {
    assert.equal(utf8Length(text), encoder.encode(text).length, name);
  }
});

Deno.test("charCount counts code points, so an emoji is one character", () => {
  for (const [name, { text, chars }] of Object.entries(SAMPLES)) {
    assert.equal(charCount(text), chars, name);
  }
});
