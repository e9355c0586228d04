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

Deno.test({
  name: "readOpenFilesLimit() says why, instead of throwing, when FFI is not allowed",
  ignore: Deno.build.os !== "linux",
  async fn() {
    const script = `import { readOpenFilesLimit } from ${
      JSON.stringify(new URL("./open_files_limit.ts", import.meta.url).href)
    };\nconsole.log(JSON.stringify(readOpenFilesLimit()));\n`;
    // permissions: not the shipped command: the shipped set less FFI, to see what the server
    // logs (at warn, `Cannot read the open-files limit`) when getrlimit cannot be reached.
    const child = new Deno.Command(Deno.execPath(), {
      args: ["run", "--no-prompt", "--allow-read", "--deny-ffi", "-"],
      stdin: "piped",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    const writer = child.stdin.getWriter();
    await writer.write(new TextEncoder().encode(script));
    await writer.close();
    const out = await child.output();
    const dec = new TextDecoder();
    assert.equal(out.code, 0, dec.decode(out.stderr));
    const found = JSON.parse(dec.decode(out.stdout));
    assert.equal(found.soft, null);
    assert.match(found.problem, /^cannot load libc\.so\.6: .*ffi/);
  },
});
