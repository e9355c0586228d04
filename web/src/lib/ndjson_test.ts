import assert from "node:assert/strict";
import { splitLines } from "./ndjson.ts";

Deno.test("splitLines joins lines split across chunks and skips empty ones", async () => {
  const chunks = ['{"a":', '1}\n\n{"b":2}\n{"c"', ":3}"];
  const stream = new ReadableStream<string>({
    start(c) {
      for (const chunk of chunks) c.enqueue(chunk);
      c.close();
    },
  });
  const lines: string[] = [];
  for await (const line of splitLines(stream)) lines.push(line);
  assert.deepEqual(lines, ['{"a":1}', '{"b":2}', '{"c":3}']);
});
