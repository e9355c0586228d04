import assert from "node:assert/strict";
import { Logger } from "./log.ts";
import { LogThrottle } from "./throttle.ts";

function memoryLog() {
  const lines: Record<string, unknown>[] = [];
  return { log: new Logger("debug", {}, (l) => lines.push(JSON.parse(l))), lines };
}

Deno.test("LogThrottle writes the first lines of a key, counts the rest and reports the count when the window ends", async () => {
  const { log, lines } = memoryLog();
  const t = new LogThrottle(log, { windowMs: 50, burst: 2 });
  for (let i = 0; i < 1236; i++) t.line("info", "auth failure", "k", { n: i }, { kind: "x" });
  t.line("info", "other", "k2");
  assert.deepEqual(lines.map((l) => [l.msg, l.n]), [
    ["auth failure", 0],
    ["auth failure", 1],
    ["other", undefined],
  ]);
  await new Promise((r) => setTimeout(r, 120));
  const summary = lines.at(-1)!;
  assert.equal(summary.msg, "auth failure … and 1,234 more in the last 0 s");
  assert.deepEqual([summary.kind, summary.suppressed, summary.n], ["x", 1234, undefined]);
  // A new window starts with a line again.
  t.line("info", "auth failure", "k", { n: 9 });
  assert.equal(lines.at(-1)!.n, 9);
  t.close();
});
