import assert from "node:assert/strict";
import { readOpenFilesLimit } from "./open_files_limit.ts";

Deno.test({
  name: "readOpenFilesLimit() gives the soft limit that /proc/self/limits shows",
  ignore: Deno.build.os !== "linux",
  fn() {
    const { soft, problem } = readOpenFilesLimit();
    assert.equal(problem, null);
    // The test runner has --allow-all, so it may read /proc; the server reads getrlimit instead.
    const m = /^Max open files\s+(\d+|unlimited)\s/m.exec(
      Deno.readTextFileSync("/proc/self/limits"),
    );
    assert.ok(m, "/proc/self/limits has Max open files");
    assert.equal(soft, m[1] === "unlimited" ? null : Number(m[1]));
  },
});
